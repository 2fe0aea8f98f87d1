/**
 * Agents act; humans consent — for the platform credential (spec/platform.md §credential). A
 * platform's backend program holds it: it must never approve, type a phrase, change a tenant's
 * consent settings, open a human session, act inside a tenant's verbs, give an owner's powers to
 * an agent key, or mint a person once the tenant's own people have enrolled. Each path is tried
 * here, and each refusal is checked against a path that works (so none is vacuous).
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { Secret, TOTP } from 'otpauth';
import type { Envelope } from '../../src/spec/types.ts';
import { installNotesPack } from '../support/notes-pack.ts';
import { readPlatformLog } from '../../src/platform/platform-log.ts';
import { parseJson } from '../../src/store/store.ts';
import { platformFixture } from './support.ts';
import { dispatchAs } from '../support/keyed.ts';

const HEADERS = { origin: 'http://localhost', host: 'localhost' };

it('a platform credential never approves, types a phrase, changes consent settings or acts in a tenant', async (t) => {
  const f = await platformFixture(t);
  await installNotesPack(f.h);
  const pk = f.key;
  await f.call('platform.tenants.create', { external_id: 'acct_c', name: 'C', tier: 'starter' });
  const made = await f.call('platform.api_keys.create', { external_id: 'acct_c', role: 'admin' });
  const adminKey = String(made.env.secret?.api_key);

  // A typed-phrase action an agent of the tenant asked for: pending, with its phrase and nonce.
  const pending = await dispatchAs(f.h.rt, { apiKey: adminKey, surface: 'cli' }, 'notes_charge', {
    amount_cents: 500,
  });
  assert.equal(pending.error?.reason, 'dispatch_pending');
  const { nonce } = pending.consent!;
  // The phrase is never shown to an agent here (phrase_channel human); anyone can compute it.
  const typed_phrase = 'CHARGE 500 CENTS';

  // Typing the phrase with the platform credential: refused before anything runs.
  const typed = await dispatchAs(
    f.h.rt,
    { apiKey: pk, surface: 'cli' },
    'notes_charge',
    { amount_cents: 500 },
    {
      confirm: true,
      nonce,
      typed_phrase,
    },
  );
  assert.equal(typed.error?.reason, 'platform_credential_required');
  assert.ok(typed.error?.hint);
  // The agent key the platform made cannot approve either (an agent's credential).
  const byAgent = await dispatchAs(f.h.rt, { apiKey: adminKey, surface: 'http' }, 'approvals.approve', {
    approval_id: pending.consent!.approval_id!,
    typed_phrase,
  });
  assert.equal(byAgent.error?.reason, 'human_required');
  // Approving: refused.
  const approved = await dispatchAs(f.h.rt, { apiKey: pk, surface: 'http' }, 'approvals.approve', {
    approval_id: pending.consent!.approval_id ?? 'apv_x',
    typed_phrase,
  });
  assert.equal(approved.error?.reason, 'platform_credential_required');
  // Changing a consent setting through the tenant's verbs: refused.
  const channel = await dispatchAs(f.h.rt, { apiKey: pk, surface: 'cli' }, 'tenant.phrase_channel_set', {
    phrase_channel: 'any',
  });
  assert.equal(channel.error?.reason, 'platform_credential_required');
  // Any tenant verb, even a read, over HTTP: 403.
  const http = await f.app.inject({
    method: 'POST',
    url: '/api/v1/agent/dispatch/verbs.list',
    headers: { authorization: `Bearer ${pk}`, 'content-type': 'application/json' },
    payload: '{}',
  });
  assert.equal(http.statusCode, 403);
  assert.equal((http.json() as Envelope).error?.reason, 'platform_credential_required');
  // The charge never ran; the tenant's own agent with the same nonce still could (not vacuous).
  await f.h.rt.auditBuffer.flush();
  const charged = await f.h.rt.store.read((q) =>
    q.get<{ n: number }>(
      "SELECT COUNT(*) AS n FROM audit_log WHERE action_type = 'notes_charge' AND status = 'completed'",
    ),
  );
  assert.equal(Number(charged!.n), 0);
  // A person of the tenant approves on a human channel; then the agent's confirm runs (not vacuous).
  const companyId = (made.env.result as { data: { key: { company_id: number } } }).data.key.company_id;
  const person = { ...f.h.human('owner'), company_id: companyId, tier: 'starter' as const };
  const ok = await f.h.rt.dispatch({ principal: person, surface: 'http' }, 'approvals.approve', {
    approval_id: pending.consent!.approval_id!,
    typed_phrase,
  });
  assert.equal(ok.ok, true, JSON.stringify(ok.error));
  const own = await dispatchAs(
    f.h.rt,
    { apiKey: adminKey, surface: 'cli' },
    'notes_charge',
    { amount_cents: 500 },
    {
      confirm: true,
      nonce,
    },
  );
  assert.equal(own.ok, true, JSON.stringify(own.error));

  // Consent settings through provisioning: no verb takes them.
  for (const [verb, args] of [
    ['platform.tenants.update', { external_id: 'acct_c', settings: { phrase_channel: 'any' } }],
    ['platform.tenants.update', { external_id: 'acct_c', phrase_channel: 'any' }],
    [
      'platform.tenants.create',
      { external_id: 'acct_c2', name: 'C2', tier: 'starter', settings: { caps: {} } },
    ],
  ] as const) {
    const r = await f.call(verb, args);
    assert.equal(r.env.error?.reason, 'invalid_input', verb);
    assert.match(r.env.error!.hint!, /consent settings/);
  }
  const settings = await f.h.rt.store.read((q) =>
    q.get<{ settings: unknown }>("SELECT settings FROM tenants WHERE external_id = 'acct_c'"),
  );
  assert.deepEqual(parseJson(settings!.settings), {});
});

it('a platform credential opens no human session and gives no agent key an owner or a human name', async (t) => {
  const f = await platformFixture(t);
  const session = await f.app.inject({
    method: 'POST',
    url: '/api/v1/session',
    headers: { ...HEADERS, 'content-type': 'application/json' },
    payload: JSON.stringify({ api_key: f.key }),
  });
  assert.equal((session.json() as Envelope).ok, false);
  const cookies = [session.headers['set-cookie'] ?? []].flat();
  assert.ok(!cookies.some((c) => /^solid_session=[^;]/.test(c)), 'no session cookie');

  await f.call('platform.tenants.create', { external_id: 'acct_k', name: 'K', tier: 'starter' });
  const owner = await f.call('platform.api_keys.create', { external_id: 'acct_k', role: 'owner' });
  assert.equal(owner.env.error?.reason, 'role_denied');
  const human = await f.call('platform.api_keys.create', {
    external_id: 'acct_k',
    role: 'admin',
    agent_type: 'human:dashboard',
  });
  assert.equal(human.env.error?.reason, 'invalid_input');
  assert.equal(human.env.error?.path, '/agent_type');
});

it('mints people only during the bootstrap: once someone of the tenant enrolled, human_required', async (t) => {
  const f = await platformFixture(t);
  await f.call('platform.tenants.create', { external_id: 'acct_b', name: 'B', tier: 'starter' });
  const inv = await f.call('platform.users.invite', { external_id: 'acct_b', name: 'Owner', role: 'owner' });
  assert.equal(inv.env.ok, true, 'allowed while no one has enrolled');
  const ownerId = (inv.env.result as { data: { user: { user_id: number } } }).data.user.user_id;
  // A second link for the same person is allowed too, before they enrol (a lost e-mail).
  const again = await f.call('platform.users.link', { external_id: 'acct_b', user_id: ownerId });
  assert.equal(again.env.ok, true);
  // The customer enrols with their authenticator app.
  const token = String(again.env.secret?.enrolment_url).split('/enrol/')[1]!;
  const started = await f.app.inject({
    method: 'POST',
    url: '/api/v1/enrol/totp/start',
    headers: HEADERS,
    payload: { token },
  });
  const secret = String((started.json() as Envelope).result!.secret);
  const code = TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: f.h.rt.clock().getTime() });
  const done = await f.app.inject({
    method: 'POST',
    url: '/api/v1/enrol/totp/verify',
    headers: HEADERS,
    payload: { token, code },
  });
  assert.equal((done.json() as Envelope).ok, true);

  // Now a link for the owner would be a way in as them, and a new admin a new approver.
  const link = await f.call('platform.users.link', { external_id: 'acct_b', user_id: ownerId });
  assert.equal(link.status, 403);
  assert.equal(link.env.error?.reason, 'human_required');
  assert.equal(link.env.secret, undefined);
  const admin = await f.call('platform.users.invite', {
    external_id: 'acct_b',
    name: 'Mallory',
    role: 'admin',
  });
  assert.equal(admin.env.error?.reason, 'human_required');
  assert.ok(admin.env.error?.hint);
  const log = await f.h.rt.store.read((q) => readPlatformLog(q));
  assert.deepEqual(
    log.filter((r) => r.status === 'denied').map((r) => [r.action, r.reason]),
    [
      ['platform.users.link', 'human_required'],
      ['platform.users.invite', 'human_required'],
    ],
  );
});
