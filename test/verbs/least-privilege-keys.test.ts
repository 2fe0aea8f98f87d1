/**
 * Least-privilege API keys: a verb/toolset allow-list, read-only and an expiry, decided by the
 * pipeline's scope step for the verb and for every verb a delegated call reaches (audit.revert,
 * transaction steps, macro steps); every refusal audited; a key never creates a wider key.
 * Spec: spec/consent.md §api-keys, spec/reasons.md (scope_denied, key_expired).
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { counterRuntime, consented, counter } from '../support/counter-verbs.ts';
import type { TestRuntime } from '../support/runtime.ts';
import type { CredentialScope, Envelope, Role } from '../../src/spec/types.ts';
import { toolsetSelection } from '../../src/runtime/toolsets.ts';
import { createHttpServer } from '../../src/transports/http/server.ts';
import { agentPrincipal } from '../../src/identity/principal.ts';
import { dispatchAs } from '../support/keyed.ts';

/** A key of the main tenant's owner user (user 1), limited by `scope`. */
function limitedKey(h: TestRuntime, scope: CredentialScope, role: Role = 'owner'): Promise<string> {
  return h.rt.createApiKey({ company_id: h.companyId, user_id: 1, role, agent_type: 'limited', scope });
}

/** The audit row an envelope names (status, reason, action). */
async function rowOf(h: TestRuntime, env: Envelope): Promise<Record<string, unknown> | undefined> {
  assert.ok(env.audit_id !== undefined, `a refusal names its audit row: ${JSON.stringify(env)}`);
  return h.rt.store.read((q) =>
    q.get<Record<string, unknown>>(
      'SELECT company_id, action_type, status FROM audit_log WHERE audit_id = ?',
      [env.audit_id],
    ),
  );
}

function refusedWith(env: Envelope, reason: string): void {
  assert.equal(env.ok, false, JSON.stringify(env));
  assert.equal(env.error?.reason, reason, JSON.stringify(env.error));
  assert.ok(env.error?.message && env.error.hint, 'message and hint');
}

test('a toolset allow-list: the key calls its toolset, is refused (and audited) outside it', async (t) => {
  const h = await counterRuntime(t);
  const key = await limitedKey(h, { toolsets: ['test'] });
  const add = await consented(h, key, 'counter.add', { name: 'a', by: 2 });
  assert.equal(add.ok, true, JSON.stringify(add.error));
  const charge = await consented(h, key, 'counter.charge', { name: 'a', cents: 5 });
  refusedWith(charge, 'scope_denied');
  assert.deepEqual(await counter(h, 'a'), { value: 2, changes: 1 }, 'the charge never ran');
  const row = await rowOf(h, charge);
  assert.equal(row?.company_id, h.companyId);
  assert.equal(row?.action_type, 'counter.charge');
  assert.equal(row?.status, 'denied');
  // Discovery stays reachable, and lists what the key reaches.
  const list = await dispatchAs(h.rt, { surface: 'cli', apiKey: key }, 'verbs.list', {});
  const listed = (list.result as { verbs: Array<{ name: string }> }).verbs.map((v) => v.name).sort();
  assert.deepEqual(listed, ['audit.revert', 'counter.add', 'counter.email', 'counter.get', 'verbs.list']);
});

test('a verb allow-list: only the named verbs run', async (t) => {
  const h = await counterRuntime(t);
  const key = await limitedKey(h, { verbs: ['counter.get'] });
  assert.equal(
    (await dispatchAs(h.rt, { surface: 'cli', apiKey: key }, 'counter.get', { name: 'x' })).ok,
    true,
  );
  const add = await consented(h, key, 'counter.add', { name: 'x', by: 1 });
  refusedWith(add, 'scope_denied');
  assert.equal((await rowOf(h, add))?.status, 'denied');
  assert.deepEqual(await counter(h, 'x'), { value: 0, changes: 0 });
});

test('a read-only key reads and is refused every write, audited, before any consent is asked', async (t) => {
  const h = await counterRuntime(t);
  const key = await limitedKey(h, { read_only: true });
  assert.equal(
    (await dispatchAs(h.rt, { surface: 'cli', apiKey: key }, 'counter.get', { name: 'r' })).ok,
    true,
  );
  const first = await dispatchAs(h.rt, { surface: 'cli', apiKey: key }, 'counter.add', { name: 'r', by: 1 });
  refusedWith(first, 'scope_denied');
  assert.equal(first.consent, undefined, 'no nonce for a write the key can never make');
  assert.equal(first.error?.details?.read_only, true);
  assert.equal((await rowOf(h, first))?.status, 'denied');
});

test('an expired key is refused at authentication (key_expired) and the refusal is in its tenant’s log', async (t) => {
  let now = new Date('2026-12-07T12:00:00Z');
  const h = await counterRuntime(t, { clock: () => now });
  const key = await limitedKey(h, { expires_at: '2026-12-08T12:00:00.000Z' });
  assert.equal(
    (await dispatchAs(h.rt, { surface: 'cli', apiKey: key }, 'counter.get', { name: 'e' })).ok,
    true,
  );
  now = new Date('2026-12-08T12:00:00Z');
  const env = await dispatchAs(h.rt, { surface: 'cli', apiKey: key }, 'counter.get', { name: 'e' });
  refusedWith(env, 'key_expired');
  const owners = await h.rt.store.read((q) =>
    q.all<{ action_type: string; status: string }>(
      "SELECT action_type, status FROM audit_log WHERE company_id = ? AND action_type = 'api_key.expired'",
      [h.companyId],
    ),
  );
  assert.deepEqual(
    owners.map((r) => ({ ...r })),
    [{ action_type: 'api_key.expired', status: 'denied' }],
  );
  // Over HTTP: 401 with the RFC 6750 invalid_token challenge.
  const app = createHttpServer(h.rt);
  t.after(() => app.close());
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/agent/dispatch/counter.get',
    payload: { args: { name: 'e' } },
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(res.statusCode, 401);
  assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
  assert.equal((res.json() as Envelope).error?.reason, 'key_expired');
});

test('audit.revert reaches only what the key reaches; a revert of a verb it could not call is refused', async (t) => {
  const h = await counterRuntime(t);
  const charge = await consented(h, h.keys.owner, 'counter.charge', { name: 'v', cents: 7 });
  assert.equal(charge.ok, true, JSON.stringify(charge.error));
  const add = await consented(h, h.keys.owner, 'counter.add', { name: 'v', by: 1 });
  const key = await limitedKey(h, { toolsets: ['test'] });
  const denied = await consented(h, key, 'audit.revert', { audit_id: charge.audit_id });
  refusedWith(denied, 'scope_denied');
  assert.equal(denied.error?.details?.verb, 'counter.charge');
  assert.equal((await rowOf(h, denied))?.status, 'denied');
  assert.deepEqual(await counter(h, 'v'), { value: 8, changes: 2 }, 'nothing was undone');
  const ok = await consented(h, key, 'audit.revert', { audit_id: add.audit_id });
  assert.equal(ok.ok, true, JSON.stringify(ok.error));
  assert.deepEqual(await counter(h, 'v'), { value: 7, changes: 3 });
  // Deny wins: once the owner undid the charge, the limited key still hears scope_denied, not already_reverted.
  assert.equal((await consented(h, h.keys.owner, 'audit.revert', { audit_id: charge.audit_id })).ok, true);
  refusedWith(await consented(h, key, 'audit.revert', { audit_id: charge.audit_id }), 'scope_denied');
});

test('audit.revert through a server or session exposing some toolsets stays inside them', async (t) => {
  const h = await counterRuntime(t);
  const charge = await consented(h, h.keys.owner, 'counter.charge', { name: 's', cents: 3 });
  const caller = {
    surface: 'mcp_stdio' as const,
    apiKey: h.keys.owner,
    toolsets: toolsetSelection(['test']),
  };
  const env = await dispatchAs(h.rt, caller, 'audit.revert', { audit_id: charge.audit_id });
  refusedWith(env, 'scope_denied');
  assert.deepEqual(env.error?.details?.enabled, ['test']);
  const ro = await dispatchAs(
    h.rt,
    { surface: 'mcp_stdio', apiKey: h.keys.owner, readOnly: true },
    'counter.add',
    {
      name: 's',
      by: 1,
    },
  );
  refusedWith(ro, 'scope_denied');
});

test('a transaction step outside the allow-list is refused at append and at commit', async (t) => {
  const h = await counterRuntime(t);
  const key = await limitedKey(h, { toolsets: ['test', 'system'] });
  const start = await consented(h, key, 'transaction.start', {});
  assert.equal(start.ok, true, JSON.stringify(start.error));
  const id = (start.result as { transaction_id: string }).transaction_id;
  const step = await consented(h, key, 'transaction.append', {
    transaction_id: id,
    verb: 'counter.charge',
    args: { name: 't', cents: 2 },
  });
  refusedWith(step, 'scope_denied');
  assert.equal(step.error?.details?.via, 'transaction.append');
  // A step appended by the user's unlimited key is not committed by the limited one.
  const full = await consented(h, h.keys.owner, 'transaction.append', {
    transaction_id: id,
    verb: 'counter.charge',
    args: { name: 't', cents: 2 },
  });
  assert.equal(full.ok, true, JSON.stringify(full.error));
  const commit = await consented(h, key, 'transaction.commit', { transaction_id: id });
  refusedWith(commit, 'scope_denied');
  assert.deepEqual(await counter(h, 't'), { value: 0, changes: 0 });
});

test('a macro with a step outside the allow-list is refused before any step runs', async (t) => {
  const h = await counterRuntime(t);
  const saved = await consented(h, h.keys.owner, 'macros.save', {
    name: 'add-then-charge',
    steps: [
      { verb: 'counter.add', args: { name: 'm', by: 1 } },
      { verb: 'counter.charge', args: { name: 'm', cents: 1 } },
    ],
  });
  assert.equal(saved.ok, true, JSON.stringify(saved.error));
  const macroId = (saved.result as { macro_id: string }).macro_id;
  const key = await limitedKey(h, { toolsets: ['test', 'macros'] });
  const run = await consented(h, key, 'macros.run', { macro_id: macroId });
  refusedWith(run, 'scope_denied');
  assert.equal(run.error?.details?.verb, 'counter.charge');
  assert.deepEqual(await counter(h, 'm'), { value: 0, changes: 0 }, 'not even the first step ran');
});

test('api_keys.create: limits are stored and listed; a key never creates a wider key', async (t) => {
  const now = new Date('2026-12-07T12:00:00Z');
  const h = await counterRuntime(t, { clock: () => now });
  const made = await consented(h, h.keys.owner, 'api_keys.create', {
    name: 'crm bot',
    role: 'employee',
    toolsets: ['test'],
    read_only: true,
    expires_in_seconds: 30 * 86400,
  });
  assert.equal(made.ok, true, JSON.stringify(made.error));
  const list = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.owner }, 'api_keys.list', {});
  const shown = (list.result as { data: { keys: Array<Record<string, unknown>> } }).data.keys.find(
    (k) => k.name === 'crm bot',
  );
  assert.deepEqual(shown?.scope, { toolsets: ['test'], read_only: true });
  assert.equal(shown?.expires_at, '2027-01-06T12:00:00.000Z');

  const limited = await limitedKey(h, {
    toolsets: ['test', 'consent'],
    expires_at: '2026-12-17T12:00:00.000Z',
  });
  const wider = await consented(h, limited, 'api_keys.create', {
    name: 'w',
    role: 'owner',
    toolsets: ['payments'],
  });
  refusedWith(wider, 'scope_denied');
  const later = await consented(h, limited, 'api_keys.create', {
    name: 'l',
    role: 'owner',
    expires_in_seconds: 30 * 86400,
  });
  refusedWith(later, 'scope_denied');
  assert.equal(later.error?.path, '/expires_in_seconds');
  // Unset limits are inherited: the new key is no wider than its maker.
  const child = await consented(h, limited, 'api_keys.create', { name: 'child', role: 'employee' });
  assert.equal(child.ok, true, JSON.stringify(child.error));
  const r = child.result as { scope: CredentialScope; expires_at: string };
  assert.deepEqual(r.scope, { toolsets: ['consent', 'test'] });
  assert.equal(r.expires_at, '2026-12-17T12:00:00.000Z');
  const unknown = await consented(h, h.keys.owner, 'api_keys.create', {
    name: 'u',
    role: 'owner',
    verbs: ['nope'],
  });
  refusedWith(unknown, 'invalid_input');
  assert.equal(unknown.error?.path, '/verbs/0');
});

test("an OAuth grant's token never mints an API key (it would outlive the grant)", async (t) => {
  const h = await counterRuntime(t);
  const owner = await h.rt.tenants.authenticate(h.keys.owner);
  const grant = agentPrincipal({
    company_id: owner.company_id,
    user_id: owner.user_id,
    role: 'owner',
    tier: owner.tier,
    agent_type: 'oauth:Some Connector',
    key_id: 'grant:gr_test',
  });
  const count = async () =>
    (
      await h.rt.store.read((q) =>
        q.get<{ n: number }>('SELECT COUNT(*) AS n FROM api_keys WHERE company_id = ?', [h.companyId]),
      )
    )?.n;
  const before = await count();
  const caller = { surface: 'http' as const, principal: grant };
  const first = await dispatchAs(h.rt, caller, 'api_keys.create', { name: 'minted', role: 'owner' });
  const env =
    first.error?.reason === 'dispatch_pending'
      ? await dispatchAs(
          h.rt,
          caller,
          'api_keys.create',
          { name: 'minted', role: 'owner' },
          { confirm: true, nonce: first.consent!.nonce },
        )
      : first;
  refusedWith(env, 'scope_denied');
  assert.equal(await count(), before, 'no key was made');
  assert.equal((await rowOf(h, env))?.status, 'denied');
});
