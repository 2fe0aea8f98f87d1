/**
 * Issue 32 row 9: a WebMCP call names its verb by tool name (`webtest__note_add`); every refusal of
 * it is recorded under the verb's name, so audit.trail filtered by the verb finds them all —
 * refusals decided by the transport (CSRF), by the pipeline before the verb is resolved (a
 * tenant-blocked name), and after it (role). Spec: spec/audit.md, spec/transports.md §webmcp.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { INJECT_ORIGIN, injectHumanLogin, injectLogin, webmcpFixture } from './fixture.ts';
import { dispatchAs } from '../../support/keyed.ts';

it('WebMCP refusals of a tool are found by audit.trail filtered by the verb name', async (t) => {
  const f = await webmcpFixture(t);
  const call = (headers: Record<string, string>) =>
    f.app.inject({
      method: 'POST',
      url: '/api/v1/webmcp/execute/webtest__note_add',
      headers,
      payload: { input: { text: 'x' }, surface: 'dashboard' },
    });
  const reasonOf = (res: { json(): unknown }) => (res.json() as { error?: { reason: string } }).error?.reason;
  // 1. The transport's own refusal: a forged CSRF token on a valid session.
  const s = await injectLogin(f.app, f.keys.admin);
  assert.equal(
    reasonOf(await call({ cookie: s.cookie, origin: INJECT_ORIGIN, 'x-csrf-token': 'forged' })),
    'csrf_failed',
  );
  // 2. The pipeline's, after the verb is resolved: a read_only user may not add a note.
  const ro = await injectHumanLogin(f, 'read_only');
  assert.equal(reasonOf(await call(ro.headers)), 'role_denied');
  // 3. The pipeline's, before the verb is resolved: the tenant blocked the name.
  await f.rt.store.write((tx) =>
    tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
      JSON.stringify({ blocklist: ['webtest.note_add'] }),
      f.companyId,
    ]),
  );
  f.rt.tenants.invalidate();
  assert.equal(reasonOf(await call(s.headers)), 'blocked_verb');

  const rows = await f.rt.store.read((q) =>
    q.all<{ action_type: string; reason: string }>(
      "SELECT action_type, reason FROM audit_log WHERE company_id = ? AND status = 'denied' ORDER BY seq",
      [f.companyId],
    ),
  );
  assert.deepEqual(
    rows.map((r) => [r.action_type, r.reason]),
    [
      ['webtest.note_add', 'csrf_failed'],
      ['webtest.note_add', 'role_denied'],
      ['webtest.note_add', 'blocked_verb'],
    ],
  );
  const trail = await dispatchAs(f.rt, { apiKey: f.keys.admin, surface: 'http' }, 'audit.trail', {
    verb: 'webtest.note_add',
    status: 'denied',
  });
  assert.equal(trail.ok, true, JSON.stringify(trail.error));
  const found = (trail.result as { entries: Array<{ reason: string }> }).entries.map((e) => e.reason);
  assert.deepEqual(found.sort(), ['blocked_verb', 'csrf_failed', 'role_denied']);
});
