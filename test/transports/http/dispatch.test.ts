/**
 * POST /api/v1/agent/dispatch/{verb}: the envelope with the status of its reason, auth over HTTP,
 * the consent round trip, idempotency headers, caps and store failures.
 * Spec: spec/transports.md §http-routes, §http-status, §http-auth, §http-idempotency.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHttpHarness, envelopeOf } from './harness.ts';
import { validateEnvelope } from '../../../src/spec/validators.ts';
import { upstreamValidator } from '../../support/upstream.ts';

function assertEnvelope(env: unknown): void {
  const ours = validateEnvelope(env);
  assert.ok(ours.valid, ours.errors.join('; '));
  const up = upstreamValidator('envelope');
  if (up) assert.ok(up(env), JSON.stringify(up.errors));
}

test('a read verb runs keyless on the sandbox tenant and with a key on the key’s tenant (200)', async (t) => {
  const x = await createHttpHarness(t);
  const keyless = await x.dispatch('notes.count', { args: {} });
  assert.equal(keyless.statusCode, 200);
  const env = envelopeOf(keyless);
  assertEnvelope(env);
  assert.equal(env.ok, true);
  assert.equal((env.result as { data: { company_id: number } }).data.company_id, x.h.sandboxId);
  assert.equal(keyless.headers['cache-control'], 'no-store');
  const keyed = envelopeOf(await x.dispatch('notes.count', { args: {} }, { key: x.h.keys.read_only }));
  assert.equal((keyed.result as { data: { company_id: number } }).data.company_id, x.h.companyId);
  const noBody = await x.inject({ method: 'POST', url: '/api/v1/agent/dispatch/notes.count' });
  assert.equal(noBody.statusCode, 200, 'the body is optional');
});

test('a write without a key answers 401 auth_required with WWW-Authenticate: Bearer', async (t) => {
  const x = await createHttpHarness(t);
  const res = await x.dispatch('notes_add', { args: { text: 'hi' } });
  assert.equal(res.statusCode, 401);
  assert.equal(res.headers['www-authenticate'], 'Bearer');
  const env = envelopeOf(res);
  assert.equal(env.error!.reason, 'auth_required');
  assertEnvelope(env);
});

test('a bad key answers 401 auth_invalid, audited, for reads and writes alike', async (t) => {
  const x = await createHttpHarness(t);
  for (const authorization of [
    'Bearer sk_solid_nope_nope',
    'Basic dXNlcjpwYXNz',
    'Bearer ',
    `Bearer ${x.h.keys.owner}x`,
  ]) {
    const res = await x.inject({
      method: 'POST',
      url: '/api/v1/agent/dispatch/notes.count',
      payload: { args: {} },
      headers: { authorization },
    });
    assert.equal(res.statusCode, 401, authorization);
    assert.match(res.headers['www-authenticate'] as string, /^Bearer error="invalid_token"/);
    const env = envelopeOf(res);
    assert.equal(env.error!.reason, 'auth_invalid');
    assert.equal(typeof env.audit_id, 'number', 'the failed attempt is audited');
    assert.ok(!res.body.includes(x.h.keys.owner), 'the presented key is never echoed');
  }
  const row = await x.h.rt.store.read((q) =>
    q.get<{ status: string; reason: string }>(
      'SELECT status, reason FROM audit_log WHERE reason = ? ORDER BY seq DESC LIMIT 1',
      ['auth_invalid'],
    ),
  );
  assert.deepEqual({ ...row }, { status: 'denied', reason: 'auth_invalid' });
});

test('denials answer 403: role floor, tier floor, surface, wrong typed phrase', async (t) => {
  const x = await createHttpHarness(t);
  const role = await x.dispatch('notes_add', { args: { text: 'x' } }, { key: x.h.keys.read_only });
  assert.equal(role.statusCode, 403);
  assert.equal(envelopeOf(role).error!.reason, 'role_denied');
  const tier = await x.dispatch('notes.enterprise_report', { args: {} }, { key: x.h.keys.owner });
  assert.equal(tier.statusCode, 403);
  assert.equal(envelopeOf(tier).error!.reason, 'tier_denied');
  const surface = await x.dispatch('notes.cli_only', { args: {} }, { key: x.h.keys.owner });
  assert.equal(surface.statusCode, 403);
  assert.equal(envelopeOf(surface).error!.reason, 'surface_denied');
  const pending = envelopeOf(
    await x.dispatch('notes_charge', { args: { amount_cents: 500 } }, { key: x.h.keys.owner }),
  );
  assert.equal(pending.consent!.typed_phrase, 'CHARGE 500 CENTS');
  const wrong = await x.dispatch(
    'notes_charge',
    {
      args: { amount_cents: 500 },
      confirm: true,
      nonce: pending.consent!.nonce,
      typed_phrase: 'CHARGE 5000 CENTS',
    },
    { key: x.h.keys.owner },
  );
  assert.equal(wrong.statusCode, 403);
  assert.equal(envelopeOf(wrong).error!.reason, 'phrase_mismatch');
  const blocked = await x.dispatch('customer_delete', { args: {} }, { key: x.h.keys.owner });
  assert.equal(blocked.statusCode, 403);
  assert.equal(envelopeOf(blocked).error!.reason, 'blocked_verb');
  for (const r of [role, tier, surface, wrong, blocked]) assertEnvelope(envelopeOf(r));
});

test('invalid args answer 400 invalid_input with the JSON Pointer; an unknown verb 404 with closest names', async (t) => {
  const x = await createHttpHarness(t);
  const bad = await x.dispatch('notes_add', { args: { text: 42 } }, { key: x.h.keys.owner });
  assert.equal(bad.statusCode, 400);
  assert.equal(envelopeOf(bad).error!.reason, 'invalid_input');
  assert.equal(envelopeOf(bad).error!.path, '/text');
  const override = await x.dispatch('notes.count', { args: { company_id: 3 } }, { key: x.h.keys.owner });
  assert.equal(override.statusCode, 400);
  assert.equal(envelopeOf(override).error!.reason, 'identity_override');
  const unknown = await x.dispatch('notes.cuont', { args: {} });
  assert.equal(unknown.statusCode, 404);
  const env = envelopeOf(unknown);
  assert.equal(env.error!.reason, 'unknown_verb');
  assert.ok((env.error!.details!.closest as string[]).includes('notes.count'));
  const noNonce = await x.dispatch(
    'notes_add',
    { args: { text: 'x' }, confirm: true },
    { key: x.h.keys.owner },
  );
  assert.equal(noNonce.statusCode, 400);
  assert.equal(envelopeOf(noNonce).error!.reason, 'nonce_required');
});

test('WRITE_REVERSIBLE round trip: 202 dispatch_pending with a nonce, confirm, 200 signed receipt; the nonce works once', async (t) => {
  const x = await createHttpHarness(t);
  const args = { text: 'call the customer back' };
  const first = await x.dispatch('notes_add', { args }, { key: x.h.keys.employee });
  assert.equal(first.statusCode, 202);
  const pending = envelopeOf(first);
  assertEnvelope(pending);
  assert.equal(pending.ok, false);
  assert.equal(pending.error!.reason, 'dispatch_pending');
  assert.equal(pending.consent!.class, 'WRITE_REVERSIBLE');
  assert.equal(pending.consent!.gate, 'confirmation');
  assert.equal(typeof pending.consent!.nonce, 'string');
  const count = async () =>
    Number((await x.h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM notes')))!.n);
  assert.equal(await count(), 0, 'nothing is written before consent');
  const confirmed = await x.dispatch(
    'notes_add',
    { args, confirm: true, nonce: pending.consent!.nonce },
    { key: x.h.keys.employee },
  );
  assert.equal(confirmed.statusCode, 200);
  const receipt = envelopeOf(confirmed);
  assertEnvelope(receipt);
  assert.equal(receipt.ok, true);
  assert.equal(typeof receipt.audit_id, 'number');
  assert.equal(typeof receipt.rollback_handle, 'string');
  const result = receipt.result as { status: string; note_id: number; attestation: { jws: string } };
  assert.equal(result.status, 'completed');
  assert.equal(typeof result.attestation.jws, 'string');
  assert.equal(await count(), 1);
  const replayNonce = await x.dispatch(
    'notes_add',
    { args, confirm: true, nonce: pending.consent!.nonce },
    { key: x.h.keys.employee },
  );
  assert.equal(replayNonce.statusCode, 403);
  assert.equal(envelopeOf(replayNonce).error!.reason, 'nonce_replayed');
  assert.equal(await count(), 1);
});

test('WRITE_FINANCIAL: pending shows the typed phrase; the exact phrase completes it', async (t) => {
  const x = await createHttpHarness(t);
  const args = { amount_cents: 5000 };
  const pending = await x.dispatch('notes_charge', { args }, { key: x.h.keys.owner });
  assert.equal(pending.statusCode, 202);
  const c = envelopeOf(pending).consent!;
  assert.equal(c.gate, 'typed_phrase');
  const done = await x.dispatch(
    'notes_charge',
    { args, confirm: true, nonce: c.nonce, typed_phrase: c.typed_phrase },
    { key: x.h.keys.owner },
  );
  assert.equal(done.statusCode, 200, done.body);
  assert.equal((envelopeOf(done).result as { charged_cents: number }).charged_cents, 5000);
});

async function confirmed(
  x: Awaited<ReturnType<typeof createHttpHarness>>,
  args: Record<string, unknown>,
  idem: string,
  key: string,
) {
  const first = await x.dispatch('notes_add', { args }, { key });
  const pending = envelopeOf(first);
  // A used-up daily cap refuses the preflight itself: that answer is the call's.
  if (pending.error?.reason !== 'dispatch_pending') return first;
  return x.dispatch(
    'notes_add',
    { args, confirm: true, nonce: pending.consent!.nonce },
    { key, headers: { 'idempotency-key': idem } },
  );
}

test('Idempotency-Key: a repeat answers the stored receipt with Idempotent-Replayed: true; other args 422', async (t) => {
  const x = await createHttpHarness(t);
  const args = { text: 'once' };
  const first = await confirmed(x, args, '"order-42"', x.h.keys.owner);
  assert.equal(first.statusCode, 200, first.body);
  assert.equal(first.headers['idempotent-replayed'], undefined);
  assert.equal(envelopeOf(first).idempotency_key, 'order-42', 'the sf-string is unquoted');
  const again = await confirmed(x, args, 'order-42', x.h.keys.owner);
  assert.equal(again.statusCode, 200);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  const replay = envelopeOf(again);
  assert.equal(replay.replayed, true);
  assert.equal(replay.audit_id, envelopeOf(first).audit_id);
  const n = await x.h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM notes'));
  assert.equal(Number(n!.n), 1, 'the replay executed nothing');
  const other = await confirmed(x, { text: 'twice' }, '"order-42"', x.h.keys.owner);
  assert.equal(other.statusCode, 422);
  assert.equal(envelopeOf(other).error!.reason, 'idempotency_key_reused');
});

test('Idempotency-Key: a duplicate while the first still runs answers 409 idempotency_key_in_use', async (t) => {
  const x = await createHttpHarness(t);
  const args = { text: 'slow', hold: true };
  const key = x.h.keys.owner;
  const p1 = envelopeOf(await x.dispatch('notes_add', { args }, { key }));
  const p2 = envelopeOf(await x.dispatch('notes_add', { args }, { key }));
  // The duplicate's refusal is audited, and that audit row queues behind the running write, so
  // its answer arrives once the first finishes: observe the refusal itself, then release.
  const inflight = x.h.rt.inflight;
  const acquire = inflight.acquire.bind(inflight);
  let refused!: () => void;
  const wasRefused = new Promise<void>((r) => (refused = r));
  inflight.acquire = (scope: string) => {
    const got = acquire(scope);
    if (!got) refused();
    return got;
  };
  const running = x.dispatch(
    'notes_add',
    { args, confirm: true, nonce: p1.consent!.nonce },
    { key, headers: { 'idempotency-key': 'slow-1' } },
  );
  await x.entered;
  const dupAnswer = x.dispatch(
    'notes_add',
    { args, confirm: true, nonce: p2.consent!.nonce },
    { key, headers: { 'idempotency-key': 'slow-1' } },
  );
  await wasRefused;
  x.release();
  const dup = await dupAnswer;
  assert.equal(dup.statusCode, 409);
  assert.equal(envelopeOf(dup).error!.reason, 'idempotency_key_in_use');
  assert.equal((await running).statusCode, 200);
});

test('a malformed Idempotency-Key answers 400 (bad sf-string: invalid_request; too long: idempotency_key_invalid)', async (t) => {
  const x = await createHttpHarness(t);
  const quoted = await x.dispatch(
    'notes_add',
    { args: { text: 'a' } },
    { key: x.h.keys.owner, headers: { 'idempotency-key': '"unterminated' } },
  );
  assert.equal(quoted.statusCode, 400);
  assert.equal(envelopeOf(quoted).error!.reason, 'invalid_request');
  const long = await x.dispatch(
    'notes_add',
    { args: { text: 'a' } },
    { key: x.h.keys.owner, headers: { 'idempotency-key': 'k'.repeat(300) } },
  );
  assert.equal(long.statusCode, 400);
  assert.equal(envelopeOf(long).error!.reason, 'idempotency_key_invalid');
});

test('daily cap: 429 daily_cap_exceeded with Retry-After in seconds until the reset', async (t) => {
  const x = await createHttpHarness(t);
  const tenant = await x.h.rt.createTenant({
    name: 'Capped',
    tier: 'professional',
    settings: { caps: { WRITE_REVERSIBLE: 1 } },
  });
  const key = await x.h.rt.createApiKey({ company_id: tenant.company_id, user_id: 1, role: 'owner' });
  const ok = await confirmed(x, { text: 'one' }, 'cap-1', key);
  assert.equal(ok.statusCode, 200, ok.body);
  const capped = await confirmed(x, { text: 'two' }, 'cap-2', key);
  assert.equal(capped.statusCode, 429);
  const env = envelopeOf(capped);
  assert.equal(env.error!.reason, 'daily_cap_exceeded');
  const resetMs = Date.parse(env.error!.details!.resets_at as string);
  const retryAfter = Number(capped.headers['retry-after']);
  assert.ok(
    Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 86_400,
    String(capped.headers['retry-after']),
  );
  assert.ok(Math.abs(Date.now() + retryAfter * 1000 - resetMs) < 5_000, 'Retry-After points at resets_at');
});

test('a handler that loses the database answers 503 store_unavailable; an unexpected throw 500 without the cause', async (t) => {
  const x = await createHttpHarness(t);
  const down = await x.dispatch('notes.store_down', { args: {} });
  assert.equal(down.statusCode, 503);
  assert.equal(envelopeOf(down).error!.reason, 'store_unavailable');
  assert.ok(!down.body.includes('disk I/O'), 'the driver message stays in the log');
  const crash = await x.dispatch('notes.crash', { args: {} });
  assert.equal(crash.statusCode, 500);
  assert.equal(envelopeOf(crash).error!.reason, 'internal_error');
  assert.ok(!crash.body.includes('/etc/passwd') && !crash.body.includes('stack'), crash.body);
  assertEnvelope(envelopeOf(crash));
});

test('the body is checked for its own members only: unknown members and wrong types answer 400 invalid_request', async (t) => {
  const x = await createHttpHarness(t);
  const flat = await x.dispatch('notes.count', { min_length: 3 });
  assert.equal(flat.statusCode, 400);
  const env = envelopeOf(flat);
  assert.equal(env.error!.reason, 'invalid_request');
  assert.deepEqual(env.error!.details!.unknown_members, ['min_length']);
  assert.match(env.error!.hint!, /args/);
  const confirm = await x.dispatch('notes.count', { confirm: 'yes' });
  assert.equal(confirm.statusCode, 400);
  assert.equal(envelopeOf(confirm).error!.reason, 'invalid_request');
  const array = await x.inject({
    method: 'POST',
    url: '/api/v1/agent/dispatch/notes.count',
    payload: '[1,2]',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(array.statusCode, 400);
  assert.equal(envelopeOf(array).error!.reason, 'invalid_request');
  const argsNotObject = await x.dispatch('notes.count', { args: [1] });
  assert.equal(argsNotObject.statusCode, 400);
  assert.equal(
    envelopeOf(argsNotObject).error!.reason,
    'invalid_input',
    'args themselves are the runtime’s to validate',
  );
});

test('a malformed dispatch body is an audited attempt: a denied row in the caller’s tenant names the verb; with a bad key it is the audited auth_invalid', async (t) => {
  const x = await createHttpHarness(t);
  const res = await x.dispatch('notes.count', { min_length: 3 }, { key: x.h.keys.employee });
  assert.equal(res.statusCode, 400);
  const env = envelopeOf(res);
  assert.equal(env.error!.reason, 'invalid_request');
  assert.equal(typeof env.audit_id, 'number');
  const row = await x.h.rt.store.read((q) =>
    q.get<{ company_id: number; action_type: string; status: string; reason: string; role: string }>(
      'SELECT company_id, action_type, status, reason, role FROM audit_log WHERE audit_id = ?',
      [env.audit_id],
    ),
  );
  assert.deepEqual(
    { ...row, company_id: Number(row!.company_id) },
    {
      company_id: x.h.companyId,
      action_type: 'notes.count',
      status: 'denied',
      reason: 'invalid_request',
      role: 'employee',
    },
  );
  const badKey = await x.dispatch(
    'notes.count',
    { min_length: 3 },
    { key: 'sk_solid_000000000000_notasecretnotasecret' },
  );
  assert.equal(badKey.statusCode, 401);
  assert.equal(envelopeOf(badKey).error!.reason, 'auth_invalid');
  assert.equal(typeof envelopeOf(badKey).audit_id, 'number');
});

test('a keyless read says the sandbox answered: tenant { id, sandbox } on every outcome, and a not_found hint naming the sandbox and how to pass a key', async (t) => {
  const x = await createHttpHarness(t);
  const ok = envelopeOf(await x.dispatch('notes.count', { args: {} }));
  assert.deepEqual(ok.tenant, { id: x.h.sandboxId, sandbox: true });
  assertEnvelope(ok);
  const args = { args: { entity_type: 'note', entity_id: 987654 } };
  const res = await x.dispatch('audit.explain', args);
  assert.equal(res.statusCode, 404);
  const missing = envelopeOf(res);
  assertEnvelope(missing);
  assert.equal(missing.error!.reason, 'not_found');
  assert.deepEqual(missing.tenant, { id: x.h.sandboxId, sandbox: true });
  const hint = missing.error!.hint!;
  assert.match(hint, /Check entity_type/, 'the verb’s own hint is kept');
  assert.match(hint, new RegExp(`no API key.*sandbox tenant \\(company ${x.h.sandboxId}\\)`));
  assert.match(hint, /Authorization: Bearer/);
  assert.match(hint, /SOLID_API_KEY/);
  assert.match(hint, /solid api-keys create/);
  const write = envelopeOf(await x.dispatch('notes_add', { args: { text: 'hi' } }));
  assert.deepEqual(write.tenant, { id: x.h.sandboxId, sandbox: true });
  assert.match(write.error!.hint!, /solid serve --demo/, 'auth_required names where demo keys come from');
  assert.match(write.error!.hint!, /solid api-keys create/);
  // With a key the key names the tenant: no marker, and the hint is the verb's own.
  const keyed = envelopeOf(await x.dispatch('audit.explain', args, { key: x.h.keys.read_only }));
  assert.equal(keyed.error!.reason, 'not_found');
  assert.equal(keyed.tenant, undefined);
  assert.doesNotMatch(keyed.error!.hint!, /sandbox/);
  assert.equal(
    envelopeOf(await x.dispatch('notes.count', { args: {} }, { key: x.h.keys.read_only })).tenant,
    undefined,
  );
});
