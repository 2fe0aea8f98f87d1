/**
 * Refusals the browser transport decides itself (CSRF, Origin, missing session) are audited like
 * every other denial: under the session's tenant when the session is known, else the sandbox.
 * Spec: spec/audit.md, spec/transports.md §webmcp.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { INJECT_ORIGIN, injectLogin, webmcpFixture } from './fixture.ts';

async function lastRow(f: Awaited<ReturnType<typeof webmcpFixture>>, companyId: number) {
  return f.rt.store.read((q) =>
    q.get<Record<string, unknown>>('SELECT * FROM audit_log WHERE company_id = ? ORDER BY seq DESC LIMIT 1', [
      companyId,
    ]),
  );
}

it('a wrong CSRF token with a valid session is refused and audited under that tenant, naming the user', async (t) => {
  const f = await webmcpFixture(t);
  const s = await injectLogin(f.app, f.keys.admin);
  const res = await f.app.inject({
    method: 'POST',
    url: '/api/v1/webmcp/execute/webtest.quote',
    headers: { cookie: s.cookie, origin: INJECT_ORIGIN, 'x-csrf-token': 'forged' },
    payload: { input: { sku: 'mug', quantity: 1 }, surface: 'dashboard' },
  });
  assert.equal(res.statusCode, 403);
  const env = res.json() as { error: { reason: string }; audit_id: number };
  assert.equal(env.error.reason, 'csrf_failed');
  assert.equal(typeof env.audit_id, 'number');
  const row = await lastRow(f, f.companyId);
  assert.equal(Number(row!.audit_id), env.audit_id);
  assert.equal(row!.status, 'denied');
  assert.equal(row!.reason, 'csrf_failed');
  assert.equal(row!.role, 'admin');
});

it('a cross-site Origin and a missing session are audited too', async (t) => {
  const f = await webmcpFixture(t);
  const s = await injectLogin(f.app, f.keys.owner);
  const cross = await f.app.inject({
    method: 'DELETE',
    url: '/api/v1/session',
    headers: { ...s.headers, origin: 'http://evil.example' },
  });
  assert.equal((cross.json() as { error: { reason: string } }).error.reason, 'origin_denied');
  assert.equal((await lastRow(f, f.companyId))!.reason, 'origin_denied');
  const none = await f.app.inject({
    method: 'POST',
    url: '/api/v1/webmcp/execute/webtest.note_add',
    headers: { origin: INJECT_ORIGIN },
    payload: { input: { text: 'x' }, surface: 'dashboard' },
  });
  assert.equal(none.statusCode, 401);
  const env = none.json() as { error: { reason: string }; audit_id?: number };
  assert.equal(env.error.reason, 'session_invalid');
  assert.equal(typeof env.audit_id, 'number');
  assert.equal((await lastRow(f, f.sandboxId))!.reason, 'session_invalid');
});
