/**
 * Browser sessions (spec/transports.md §webmcp-session, §webmcp-csrf): login with an API key sets
 * an HttpOnly SameSite=Strict cookie bound to the key's principal; who-am-I; logout; revocation,
 * expiry and re-login end a session; CSRF and Origin are enforced on state-changing requests.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { installEnvelopeErrors } from '../../../src/transports/http/error-handler.ts';
import { installJsonBodyParser } from '../../../src/transports/http/json-body.ts';
import { createWebmcpPlugin } from '../../../src/transports/webmcp/index.ts';
import { parseCookies, serializeCookie } from '../../../src/identity/cookies.ts';
import { INJECT_ORIGIN, injectLogin, webmcpFixture } from './fixture.ts';

function setCookies(res: { headers: Record<string, unknown> }): string[] {
  return ([] as string[]).concat((res.headers['set-cookie'] as string | string[] | undefined) ?? []);
}

function cookieNamed(res: { headers: Record<string, unknown> }, name: string): string {
  const found = setCookies(res).find((c) => c.startsWith(`${name}=`));
  assert.ok(found, `no Set-Cookie for ${name}`);
  return found;
}

describe('POST /api/v1/session (login)', () => {
  it('exchanges an API key for an HttpOnly, SameSite=Strict session cookie bound to its principal, plus a CSRF token', async (t) => {
    const f = await webmcpFixture(t);
    const res = await f.app.inject({
      method: 'POST',
      url: '/api/v1/session',
      headers: { origin: INJECT_ORIGIN },
      payload: { api_key: f.keys.admin },
    });
    assert.equal(res.statusCode, 200);
    const body = res.json() as { ok: boolean; verb: string; result: Record<string, unknown> };
    assert.equal(body.ok, true);
    assert.equal(body.result.company_id, f.companyId);
    assert.equal(body.result.user_id, 2);
    assert.equal(body.result.role, 'admin');
    assert.equal(body.result.tier, 'professional');
    assert.equal(body.result.tenant_name, 'Main Co');
    assert.equal(typeof body.result.csrf_token, 'string');
    assert.equal(JSON.stringify(body).includes(f.keys.admin), false, 'the API key is never echoed');

    const session = cookieNamed(res, 'solid_session');
    assert.match(session, /^solid_session=ss1_[A-Za-z0-9_-]{43}; /);
    assert.match(session, /; HttpOnly/);
    assert.match(session, /; SameSite=Strict/);
    assert.match(session, /; Path=\//);
    assert.doesNotMatch(session, /; Secure/, 'plain http gets no Secure flag');
    const csrf = cookieNamed(res, 'solid_csrf');
    assert.equal(csrf.split(';')[0], `solid_csrf=${String(body.result.csrf_token)}`);
    assert.doesNotMatch(csrf, /HttpOnly/, 'the page script reads the CSRF mirror cookie');

    // Only the hash of the token is stored.
    const token = session.split(';')[0]!.slice('solid_session='.length);
    const rows = await f.rt.store.read((q) => q.all<Record<string, unknown>>('SELECT * FROM web_sessions'));
    assert.equal(rows.length, 1);
    assert.equal(JSON.stringify(rows).includes(token), false);
    assert.equal(rows[0]!.company_id, f.companyId);
  });

  it('answers 401 auth_invalid for a wrong key and audits the attempt', async (t) => {
    const f = await webmcpFixture(t);
    const res = await f.app.inject({
      method: 'POST',
      url: '/api/v1/session',
      payload: { api_key: `${f.keys.owner.slice(0, -3)}xyz` },
    });
    assert.equal(res.statusCode, 401);
    const body = res.json() as { ok: boolean; error: { reason: string }; audit_id?: number };
    assert.equal(body.ok, false);
    assert.equal(body.error.reason, 'auth_invalid');
    assert.equal(typeof body.audit_id, 'number');
    assert.equal(
      setCookies(res).some((c) => /^solid_session=ss1_/.test(c)),
      false,
      'no session is handed out',
    );
    const row = await f.rt.store.read((q) =>
      q.get<Record<string, unknown>>('SELECT action_type, status, reason FROM audit_log WHERE audit_id = ?', [
        body.audit_id,
      ]),
    );
    assert.deepEqual(row, { action_type: 'session.login', status: 'denied', reason: 'auth_invalid' });
  });

  it('refuses malformed, non-JSON and cross-origin login requests', async (t) => {
    const f = await webmcpFixture(t);
    const noKey = await f.app.inject({
      method: 'POST',
      url: '/api/v1/session',
      payload: { key: f.keys.owner },
    });
    assert.equal(noKey.statusCode, 400);
    assert.equal((noKey.json() as { error: { reason: string } }).error.reason, 'invalid_request');
    const broken = await f.app.inject({
      method: 'POST',
      url: '/api/v1/session',
      headers: { 'content-type': 'application/json' },
      payload: '{"api_key": ',
    });
    assert.equal(broken.statusCode, 400);
    assert.equal((broken.json() as { error: { reason: string } }).error.reason, 'invalid_request');
    const form = await f.app.inject({
      method: 'POST',
      url: '/api/v1/session',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `api_key=${f.keys.owner}`,
    });
    assert.equal(form.statusCode, 415);
    assert.equal((form.json() as { error: { reason: string } }).error.reason, 'unsupported_media_type');
    const foreign = await f.app.inject({
      method: 'POST',
      url: '/api/v1/session',
      headers: { origin: 'https://evil.example' },
      payload: { api_key: f.keys.owner },
    });
    assert.equal(foreign.statusCode, 403);
    assert.equal((foreign.json() as { error: { reason: string } }).error.reason, 'origin_denied');
    assert.equal(
      await f.rt.store
        .read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM web_sessions'))
        .then((r) => Number(r!.n)),
      0,
    );
  });

  it('marks the cookies Secure when the request came over https', async (t) => {
    const f = await webmcpFixture(t);
    // A server that trusts X-Forwarded-Proto, so inject can present an https request.
    const app = Fastify({ trustProxy: true, logger: false });
    installJsonBodyParser(app);
    installEnvelopeErrors(app);
    await app.register(createWebmcpPlugin(), { rt: f.rt });
    await app.ready();
    t.after(() => app.close());
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/session',
      headers: { 'x-forwarded-proto': 'https' },
      payload: { api_key: f.keys.owner },
    });
    assert.equal(res.statusCode, 200);
    assert.match(cookieNamed(res, 'solid_session'), /; Secure/);
    assert.match(cookieNamed(res, 'solid_csrf'), /; Secure/);
  });

  it('hands out a fresh token on every login and ends the previous session of that browser', async (t) => {
    const f = await webmcpFixture(t);
    const first = await injectLogin(f.app, f.keys.owner);
    const res = await f.app.inject({
      method: 'POST',
      url: '/api/v1/session',
      headers: { cookie: first.cookie, origin: INJECT_ORIGIN },
      payload: { api_key: f.keys.employee },
    });
    assert.equal(res.statusCode, 200);
    assert.notEqual(cookieNamed(res, 'solid_session').split(';')[0], first.cookie.split('; ')[0]);
    const old = await f.app.inject({
      method: 'GET',
      url: '/api/v1/session',
      headers: { cookie: first.cookie },
    });
    assert.equal(old.statusCode, 401);
  });
});

describe('GET /api/v1/session (who am I)', () => {
  it('answers the session principal and the same CSRF token, or 401 session_invalid', async (t) => {
    const f = await webmcpFixture(t);
    const none = await f.app.inject({ method: 'GET', url: '/api/v1/session' });
    assert.equal(none.statusCode, 401);
    assert.equal((none.json() as { error: { reason: string } }).error.reason, 'session_invalid');
    const forged = await f.app.inject({
      method: 'GET',
      url: '/api/v1/session',
      headers: { cookie: `solid_session=ss1_${'A'.repeat(43)}` },
    });
    assert.equal(forged.statusCode, 401);
    assert.match(cookieNamed(forged, 'solid_session'), /Max-Age=0/, 'a dead cookie is cleared');

    const s = await injectLogin(f.app, f.keys.read_only);
    const me = await f.app.inject({ method: 'GET', url: '/api/v1/session', headers: { cookie: s.cookie } });
    assert.equal(me.statusCode, 200);
    const result = (me.json() as { result: Record<string, unknown> }).result;
    assert.equal(result.role, 'read_only');
    assert.equal(result.user_id, 4);
    assert.equal(result.csrf_token, s.csrf);
  });

  it('ends the session when its API key is revoked', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.employee);
    const keyId = f.rt.tenants.keyIdOf(f.keys.employee)!;
    await f.rt.store.write((tx) => f.rt.tenants.revokeKey(tx, f.companyId, keyId, new Date()));
    const me = await f.app.inject({ method: 'GET', url: '/api/v1/session', headers: { cookie: s.cookie } });
    assert.equal(me.statusCode, 401);
    const call = await f.app.inject({
      method: 'POST',
      url: '/api/v1/webmcp/execute/webtest__quote',
      headers: s.headers,
      payload: { input: { sku: 'mug', quantity: 1 }, surface: 'dashboard' },
    });
    assert.equal(call.statusCode, 401);
    assert.equal((call.json() as { error: { reason: string } }).error.reason, 'session_invalid');
  });

  it('ends the session at its absolute expiry', async (t) => {
    const f = await webmcpFixture(t, { sessionTtlSeconds: 60 });
    const s = await injectLogin(f.app, f.keys.owner);
    f.clock.ms += 59_000;
    assert.equal(
      (await f.app.inject({ method: 'GET', url: '/api/v1/session', headers: { cookie: s.cookie } }))
        .statusCode,
      200,
    );
    f.clock.ms += 2_000;
    assert.equal(
      (await f.app.inject({ method: 'GET', url: '/api/v1/session', headers: { cookie: s.cookie } }))
        .statusCode,
      401,
    );
  });
});

describe('DELETE /api/v1/session (logout)', () => {
  it('needs the CSRF token and a same-origin Origin, then deletes the session and clears the cookies', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.owner);
    const noCsrf = await f.app.inject({
      method: 'DELETE',
      url: '/api/v1/session',
      headers: { cookie: s.cookie, origin: INJECT_ORIGIN },
    });
    assert.equal(noCsrf.statusCode, 403);
    assert.equal((noCsrf.json() as { error: { reason: string } }).error.reason, 'csrf_failed');
    const crossSite = await f.app.inject({
      method: 'DELETE',
      url: '/api/v1/session',
      headers: { ...s.headers, origin: 'http://localhost:8080' },
    });
    assert.equal(crossSite.statusCode, 403);
    assert.equal((crossSite.json() as { error: { reason: string } }).error.reason, 'origin_denied');
    assert.equal(
      (await f.app.inject({ method: 'GET', url: '/api/v1/session', headers: { cookie: s.cookie } }))
        .statusCode,
      200,
      'refused logouts change nothing',
    );

    const out = await f.app.inject({ method: 'DELETE', url: '/api/v1/session', headers: s.headers });
    assert.equal(out.statusCode, 200);
    assert.deepEqual((out.json() as { result: unknown }).result, { logged_out: true });
    assert.match(cookieNamed(out, 'solid_session'), /^solid_session=; .*Max-Age=0/);
    assert.match(cookieNamed(out, 'solid_csrf'), /^solid_csrf=; .*Max-Age=0/);
    // The server-side row is gone: the old cookie no longer works anywhere.
    assert.equal(
      (await f.app.inject({ method: 'GET', url: '/api/v1/session', headers: { cookie: s.cookie } }))
        .statusCode,
      401,
    );
    const again = await f.app.inject({
      method: 'POST',
      url: '/api/v1/webmcp/execute/webtest__quote',
      headers: s.headers,
      payload: { input: { sku: 'mug', quantity: 1 }, surface: 'dashboard' },
    });
    assert.equal(again.statusCode, 401);
  });

  it('answers logged_out false without a live session', async (t) => {
    const f = await webmcpFixture(t);
    const res = await f.app.inject({ method: 'DELETE', url: '/api/v1/session' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual((res.json() as { result: unknown }).result, { logged_out: false });
  });
});

describe('cookies', () => {
  it('parses a Cookie header and serializes Set-Cookie values', () => {
    assert.deepEqual(parseCookies('a=1; solid_session=ss1_x; b="q%20r"; a=2; junk'), {
      a: '1',
      solid_session: 'ss1_x',
      b: 'q r',
    });
    assert.deepEqual(parseCookies(undefined), {});
    assert.equal(
      serializeCookie('n', 'v', { maxAgeSeconds: 60, httpOnly: true, secure: true }),
      'n=v; Path=/; Max-Age=60; SameSite=Strict; HttpOnly; Secure',
    );
    assert.equal(
      serializeCookie('n', '', { maxAgeSeconds: 0, httpOnly: false, secure: false }),
      'n=; Path=/; Max-Age=0; SameSite=Strict; Expires=Thu, 01 Jan 1970 00:00:00 GMT',
    );
    assert.throws(
      () => serializeCookie('n', 'a;b', { maxAgeSeconds: 1, httpOnly: false, secure: false }),
      TypeError,
    );
  });
});
