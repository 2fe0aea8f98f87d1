/**
 * The human sign-in routes over HTTP (inject): enrolment from a one-time link with the TOTP
 * fallback, sign-in with a code (once per step), refusals audited and rate limited, an API key
 * never invites or signs in, passkeys refused on an IP origin, and the approval page's API: a
 * signed-in human approves a pending charge by its phrase and the agent's confirm with the nonce
 * executes. Passkey ceremonies themselves run in Chromium (test/browser/humans.test.ts).
 * Spec: spec/consent.md §human-sign-in, §approval-page.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import type { FastifyInstance } from 'fastify';
import { INJECT_ORIGIN, webmcpFixture } from '../transports/webmcp/fixture.ts';
import { disableUser, inviteUser } from '../../src/identity/invite.ts';
import { signInHumanForTest } from '../../src/testing.ts';
import { SIGNIN_FAILURE_LIMIT } from '../../src/identity/signin-throttle.ts';
import type { Envelope } from '../../src/spec/types.ts';

const headers = { origin: INJECT_ORIGIN };

async function post(app: FastifyInstance, url: string, payload: unknown, extra: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'POST',
    url,
    headers: { ...headers, ...extra },
    payload: payload as object,
  });
  return { status: res.statusCode, body: res.json() as Envelope, res };
}

function codeAt(secret: string, ms: number): string {
  return TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: ms });
}

function cookieHeader(setCookie: string | string[] | undefined): string {
  return ([] as string[])
    .concat(setCookie ?? [])
    .map((c) => c.split(';')[0]!)
    .join('; ');
}

describe('enrolment and sign-in routes', () => {
  it('enrols with TOTP from a link, signs in with a later code, refuses replays and reused links', async (t) => {
    const f = await webmcpFixture(t);
    const { user, link } = await inviteUser(
      f.rt.store,
      { company_id: f.companyId, name: 'Jane Ruiz', role: 'owner' },
      undefined,
      f.rt.clock(),
    );
    const info = await post(f.app, '/api/v1/enrol/info', { token: link.token });
    assert.equal(info.status, 200);
    assert.equal(info.body.result!.user_name, 'Jane Ruiz');
    assert.equal(info.body.result!.passkeys_available, true, 'localhost is a valid relying party');

    const started = await post(f.app, '/api/v1/enrol/totp/start', { token: link.token });
    assert.equal(started.status, 200);
    const secret = String(started.body.result!.secret);
    assert.match(String(started.body.result!.uri), /^otpauth:\/\/totp\/.*secret=/);

    const wrong = await post(f.app, '/api/v1/enrol/totp/verify', {
      token: link.token,
      code: '000000' === codeAt(secret, f.clock.ms) ? '111111' : '000000',
    });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error!.reason, 'signin_failed');

    const enrolled = await post(f.app, '/api/v1/enrol/totp/verify', {
      token: link.token,
      code: codeAt(secret, f.clock.ms),
    });
    assert.equal(enrolled.status, 200, JSON.stringify(enrolled.body));
    assert.equal(enrolled.body.result!.actor, 'human');
    assert.equal(enrolled.body.result!.user_name, 'Jane Ruiz');
    const who = await f.app.inject({
      method: 'GET',
      url: '/api/v1/session',
      headers: { cookie: cookieHeader(enrolled.res.headers['set-cookie']) },
    });
    assert.equal((who.json() as Envelope).result!.actor, 'human');

    const reused = await post(f.app, '/api/v1/enrol/totp/start', { token: link.token });
    assert.equal(reused.status, 401);
    assert.equal(reused.body.error!.reason, 'enrolment_invalid');

    const replay = await post(f.app, '/api/v1/signin/totp', {
      company_id: f.companyId,
      user_id: user.user_id,
      code: codeAt(secret, f.clock.ms),
    });
    assert.equal(replay.body.error!.reason, 'signin_failed', 'the enrolment code does not sign in again');
    f.clock.ms += 30_000;
    const signed = await post(f.app, '/api/v1/signin/totp', {
      company_id: f.companyId,
      user_id: user.user_id,
      code: codeAt(secret, f.clock.ms),
    });
    assert.equal(signed.status, 200, JSON.stringify(signed.body));

    await f.rt.auditBuffer.flush();
    const rows = await f.rt.store.read((q) =>
      q.all<{ action_type: string; status: string; request_data: string }>(
        "SELECT action_type, status, request_data FROM audit_log WHERE action_type IN ('users.enrol', 'session.signin') ORDER BY audit_id",
      ),
    );
    assert.deepEqual(
      rows.map((r) => [r.action_type, r.status]),
      [
        ['users.enrol', 'completed'],
        ['session.signin', 'completed'],
        ['session.signin', 'completed'],
      ],
    );
    const everything = JSON.stringify(await f.rt.store.read((q) => q.all('SELECT * FROM audit_log')));
    assert.ok(!everything.includes(secret) && !everything.includes(link.token), 'no secret in the audit log');
    const failures = JSON.stringify(
      await f.rt.store.read((q) => q.all("SELECT reason FROM audit_log WHERE reason = 'signin_failed'")),
    );
    assert.ok(failures.includes('signin_failed'), 'failed sign-ins are audited');
  });

  it('rate limits repeated failures for one user and address', async (t) => {
    const f = await webmcpFixture(t);
    await signInHumanForTest(f.rt, { company_id: f.companyId, user_id: 1, role: 'owner' });
    let last;
    for (let i = 0; i <= SIGNIN_FAILURE_LIMIT; i++)
      last = await post(f.app, '/api/v1/signin/totp', {
        company_id: f.companyId,
        user_id: 1,
        code: '000000',
      });
    assert.equal(last!.status, 429);
    assert.equal(last!.body.error!.reason, 'rate_limited');
    assert.ok(Number(last!.res.headers['retry-after']) > 0);
  });

  it('an API key never invites a human nor signs in; a human owner invites, an admin cannot', async (t) => {
    const f = await webmcpFixture(t);
    const withKey = await post(
      f.app,
      '/api/v1/users/invite',
      { name: 'Mallory', role: 'owner' },
      { authorization: `Bearer ${f.keys.owner}` },
    );
    assert.equal(withKey.status, 401);
    assert.equal(withKey.body.error!.reason, 'session_invalid');
    const keyAsCode = await post(f.app, '/api/v1/signin/totp', {
      company_id: f.companyId,
      user_id: 1,
      code: f.keys.owner,
    });
    assert.equal(keyAsCode.body.error!.reason, 'signin_failed');

    const owner = await signInHumanForTest(f.rt, {
      company_id: f.companyId,
      user_id: 1,
      role: 'owner',
      name: 'Olga',
    });
    const invited = await post(
      f.app,
      '/api/v1/users/invite',
      { name: 'Sam', role: 'employee' },
      { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken },
    );
    assert.equal(invited.status, 200, JSON.stringify(invited.body));
    assert.match(String(invited.body.result!.enrolment_url), /\/enrol\/enr1_/);

    const admin = await signInHumanForTest(f.rt, { company_id: f.companyId, user_id: 2, role: 'admin' });
    const refused = await post(
      f.app,
      '/api/v1/users/invite',
      { name: 'Eve', role: 'owner' },
      { cookie: admin.cookie, 'x-csrf-token': admin.csrfToken },
    );
    assert.equal(refused.status, 403);
  });

  it('disabling a user ends their sessions and refuses their next sign-in', async (t) => {
    const f = await webmcpFixture(t);
    const human = await signInHumanForTest(f.rt, { company_id: f.companyId, user_id: 2, role: 'admin' });
    const before = await f.app.inject({
      method: 'GET',
      url: '/api/v1/session',
      headers: { cookie: human.cookie },
    });
    assert.equal(before.statusCode, 200);
    assert.equal(await disableUser(f.rt.store, f.companyId, 2, undefined, f.rt.clock()), true);
    const after = await f.app.inject({
      method: 'GET',
      url: '/api/v1/session',
      headers: { cookie: human.cookie },
    });
    assert.equal(after.statusCode, 401);
    f.clock.ms += 30_000;
    await assert.rejects(
      signInHumanForTest(f.rt, { company_id: f.companyId, user_id: 2, role: 'admin' }),
      /signin_failed/,
    );
  });

  it('passkeys are refused on a page reached by an IP address', async (t) => {
    const f = await webmcpFixture(t);
    const res = await f.app.inject({
      method: 'POST',
      url: '/api/v1/signin/passkey/options',
      headers: { origin: 'http://127.0.0.1', host: '127.0.0.1' },
      payload: {},
    });
    assert.equal((res.json() as Envelope).error!.reason, 'passkey_unavailable');
    const ok = await post(f.app, '/api/v1/signin/passkey/options', {});
    assert.equal(ok.status, 200);
    const options = ok.body.result!.options as { rpId: string; userVerification: string; challenge: string };
    assert.equal(options.rpId, 'localhost');
    assert.equal(options.userVerification, 'required');
    const stored = JSON.stringify(await f.rt.store.read((q) => q.all('SELECT * FROM webauthn_challenges')));
    assert.ok(!stored.includes(options.challenge), 'challenges are stored hashed');
  });
});

describe('the approval page', () => {
  it('is the dashboard page under the strict CSP; a signed-in human approves, the agent confirms with the nonce', async (t) => {
    const f = await webmcpFixture(t);
    f.rt.options.publicUrl = 'http://localhost:4400';
    const agent = { principal: f.principal('admin'), surface: 'http' as const };
    const args = { invoice_id: 4304, amount_cents: 5000 };
    const pending = await f.rt.dispatch(agent, 'webtest.charge', args);
    const c = pending.consent!;
    assert.equal(c.approval_url, `http://localhost:4400/approvals/${c.approval_id}`);

    const page = await f.app.inject({ method: 'GET', url: `/approvals/${c.approval_id}` });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-security-policy']), /script-src 'self'/);
    assert.match(page.body, /dashboard\.js/);

    const human = await signInHumanForTest(f.rt, {
      company_id: f.companyId,
      user_id: 1,
      role: 'owner',
      name: 'Jane Ruiz',
    });
    const h = { cookie: human.cookie, 'x-csrf-token': human.csrfToken };
    const listed = await post(
      f.app,
      '/api/v1/approval-page/dispatch/approvals.list',
      { input: { approval_id: c.approval_id } },
      h,
    );
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    const other = await post(f.app, '/api/v1/approval-page/dispatch/webtest.charge', { input: args }, h);
    assert.equal(other.body.error!.reason, 'invalid_request', 'the page calls the approvals verbs only');
    const approved = await post(
      f.app,
      '/api/v1/approval-page/dispatch/approvals.approve',
      { input: { approval_id: c.approval_id, typed_phrase: 'CHARGE $50.00 to invoice #4304' } },
      h,
    );
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    const done = await f.rt.dispatch(agent, 'webtest.charge', args, { confirm: true, nonce: c.nonce });
    assert.equal(done.ok, true, JSON.stringify(done.error));
    assert.equal((await f.effects()).filter((e) => e.kind === 'charge').length, 1);
    await f.rt.auditBuffer.flush();
    const row = await f.rt.store.read((q) =>
      q.get<{ agent_type: string; user_id: number }>(
        "SELECT agent_type, user_id FROM audit_log WHERE action_type = 'approvals.approve' ORDER BY audit_id DESC LIMIT 1",
      ),
    );
    assert.equal(row!.agent_type, 'approval_page');

    const noSession = await post(
      f.app,
      '/api/v1/approval-page/dispatch/approvals.approve',
      { input: { approval_id: c.approval_id, typed_phrase: 'x' } },
      { authorization: `Bearer ${f.keys.owner}` },
    );
    assert.equal(
      noSession.body.error!.reason,
      'session_invalid',
      'an API key never reaches the approval page',
    );
  });
});
