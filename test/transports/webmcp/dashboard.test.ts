/**
 * The dashboard over HTTP (spec/transports.md §webmcp-dashboard, §webmcp-module): the page with a strict
 * CSP and no inline script, the bundled /webmcp.js and /dashboard.js with ETags, the catalogue,
 * and the session-bound dispatch route the dashboard's own buttons use (approvals, revert).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Envelope } from '../../../src/spec/types.ts';
import {
  INJECT_ORIGIN,
  injectHumanLogin,
  injectLogin,
  webmcpFixture,
  type InjectSession,
  type WebmcpFixture,
} from './fixture.ts';

async function dash(
  f: WebmcpFixture,
  s: InjectSession,
  verb: string,
  body: Record<string, unknown>,
): Promise<{ status: number; env: Envelope }> {
  const res = await f.app.inject({
    method: 'POST',
    url: `/api/v1/dashboard/dispatch/${verb}`,
    headers: s.headers,
    payload: body,
  });
  return { status: res.statusCode, env: res.json() as Envelope };
}

describe('dashboard page and browser modules', () => {
  it('serves the page with a strict Content-Security-Policy and no inline script or style', async (t) => {
    const f = await webmcpFixture(t);
    const res = await f.app.inject({ method: 'GET', url: '/' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /style-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(res.headers['x-frame-options'], 'DENY');
    const html = res.body;
    assert.equal(/<script(?![^>]*\bsrc=)[^>]*>/i.test(html), false, 'every script has a src');
    assert.equal(/<style/i.test(html), false);
    assert.equal(/\sstyle=/i.test(html), false);
    assert.equal(/\son[a-z]+=/i.test(html), false, 'no inline event handlers');
    assert.match(html, /<script type="module" src="\/dashboard.js"><\/script>/);
    // A person signs in (passkey, or a TOTP code): there is no API-key field (spec/consent.md §human-sign-in).
    assert.match(html, /<button id="passkey-signin" type="button">Sign in with a passkey<\/button>/);
    assert.match(html, /<label for="totp-code">Code from your app<\/label>/);
    assert.doesNotMatch(html, /API key<\/label>/);
    assert.match(html, /<html lang="en">/);
  });

  it('bundles /webmcp.js (polyfill included) and /dashboard.js as ES modules with ETags', async (t) => {
    const f = await webmcpFixture(t);
    const mod = await f.app.inject({ method: 'GET', url: '/webmcp.js' });
    assert.equal(mod.statusCode, 200);
    assert.match(String(mod.headers['content-type']), /^text\/javascript/);
    assert.match(mod.body, /registerTool/);
    assert.match(mod.body, /__isWebMCPPolyfill/, 'the polyfill is bundled in');
    assert.match(mod.body, /\/api\/v1\/webmcp\/manifest/);
    assert.match(mod.body, /export\s*\{/, 'an ES module');
    assert.equal(/\brequire\(/.test(mod.body), false);
    const etag = String(mod.headers.etag);
    const cached = await f.app.inject({
      method: 'GET',
      url: '/webmcp.js',
      headers: { 'if-none-match': etag },
    });
    assert.equal(cached.statusCode, 304);
    const page = await f.app.inject({ method: 'GET', url: '/dashboard.js' });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /\/webmcp\.js/, 'the dashboard loads the module from the server');
    assert.match(page.body, /\/api\/v1\/dashboard\/dispatch\//);
    const css = await f.app.inject({ method: 'GET', url: '/dashboard.css' });
    assert.equal(css.statusCode, 200);
    assert.match(String(css.headers['content-type']), /^text\/css/);
  });

  it('can leave the dashboard out and still serve /webmcp.js', async (t) => {
    const f = await webmcpFixture(t, { dashboard: false });
    assert.equal((await f.app.inject({ method: 'GET', url: '/' })).statusCode, 404);
    assert.equal((await f.app.inject({ method: 'GET', url: '/api/v1/dashboard/catalog' })).statusCode, 404);
    assert.equal((await f.app.inject({ method: 'GET', url: '/webmcp.js' })).statusCode, 200);
  });
});

describe('GET /api/v1/dashboard/catalog', () => {
  it('lists every registered verb with its category, shape, consent class and floors', async (t) => {
    const f = await webmcpFixture(t);
    const res = await f.app.inject({ method: 'GET', url: '/api/v1/dashboard/catalog' });
    assert.equal(res.statusCode, 200);
    const body = res.json() as { verbs: Array<Record<string, unknown>>; total: number };
    assert.equal(body.total, f.rt.registry.size);
    assert.deepEqual(
      body.verbs.map((v) => v.name),
      f.rt.registry.all().map((v) => v.name),
    );
    const charge = body.verbs.find((v) => v.name === 'webtest.charge')!;
    assert.deepEqual(
      {
        category: charge.category,
        shape: charge.shape,
        consent_class: charge.consent_class,
        role_floor: charge.role_floor,
        tool_name: charge.tool_name,
      },
      {
        category: 'webtest',
        shape: 'receipt',
        consent_class: 'WRITE_FINANCIAL',
        role_floor: 'admin',
        tool_name: 'webtest__charge',
      },
    );
    assert.equal(body.verbs.find((v) => v.name === 'webtest.note_add')!.revertible, true);
    assert.deepEqual(body.verbs.find((v) => v.name === 'webtest.http_only')!.surfaces, ['http', 'cli']);
  });
});

describe('POST /api/v1/dashboard/dispatch/{verb}', () => {
  it('needs a session, the CSRF token and a same-origin Origin', async (t) => {
    const f = await webmcpFixture(t);
    const body = { input: {} };
    const none = await f.app.inject({
      method: 'POST',
      url: '/api/v1/dashboard/dispatch/audit.trail',
      headers: { origin: INJECT_ORIGIN },
      payload: body,
    });
    assert.equal(none.statusCode, 401);
    assert.equal((none.json() as Envelope).error!.reason, 'session_invalid');
    const s = await injectLogin(f.app, f.keys.owner);
    const noCsrf = await f.app.inject({
      method: 'POST',
      url: '/api/v1/dashboard/dispatch/audit.trail',
      headers: { cookie: s.cookie, origin: INJECT_ORIGIN },
      payload: body,
    });
    assert.equal(noCsrf.statusCode, 403);
    assert.equal((noCsrf.json() as Envelope).error!.reason, 'csrf_failed');
    const foreign = await f.app.inject({
      method: 'POST',
      url: '/api/v1/dashboard/dispatch/audit.trail',
      headers: { ...s.headers, origin: 'https://evil.example' },
      payload: body,
    });
    assert.equal(foreign.statusCode, 403);
    assert.equal((foreign.json() as Envelope).error!.reason, 'origin_denied');
    const bad = await f.app.inject({
      method: 'POST',
      url: '/api/v1/dashboard/dispatch/audit.trail',
      headers: s.headers,
      payload: { input: {}, surface: 'dashboard' },
    });
    assert.equal(bad.statusCode, 400, 'the dashboard route takes no surface');
    const ok = await dash(f, s, 'audit.trail', body);
    assert.equal(ok.status, 200);
    assert.ok(Array.isArray(ok.env.result!.entries));
  });

  it('takes the arguments under "input" or, as the agent API names them, "args" (not both)', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.owner);
    const viaInput = await dash(f, s, 'audit.trail', { input: { limit: 1 } });
    const viaArgs = await dash(f, s, 'audit.trail', { args: { limit: 1 } });
    assert.equal(viaInput.status, 200);
    assert.equal(viaArgs.status, 200, JSON.stringify(viaArgs.env));
    assert.equal((viaArgs.env.result!.entries as unknown[]).length, 1);
    const badArgs = await dash(f, s, 'audit.trail', { args: { limit: 'x' } });
    assert.equal(badArgs.env.error!.reason, 'invalid_input', 'args are validated as input is');
    const both = await dash(f, s, 'audit.trail', { input: {}, args: {} });
    assert.equal(both.status, 400);
    assert.equal(both.env.error!.reason, 'invalid_request');
    assert.match(both.env.error!.message, /either "input" or "args"/);
  });

  it('a malformed or prototype-poisoned body from a signed-in dashboard is answered 400 and audited in the user’s tenant as the dashboard', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.owner);
    for (const [payload, what] of [
      ['{"input": {', 'not JSON'],
      ['{"input": {}, "__proto__": {"x": 1}}', 'prototype key'],
      ['{"input": {}, "input": {}}', 'repeated key'],
    ] as const) {
      const res = await f.app.inject({
        method: 'POST',
        url: '/api/v1/dashboard/dispatch/audit.trail',
        headers: { ...s.headers, 'content-type': 'application/json' },
        payload,
      });
      assert.equal(res.statusCode, 400, what);
      const env = res.json() as Envelope;
      assert.equal(env.error!.reason, 'invalid_request', what);
      assert.equal(typeof env.audit_id, 'number', `${what}: audited`);
      const row = await f.rt.store.read((q) =>
        q.get<{ status: string; role: string; agent_type: string }>(
          'SELECT status, role, agent_type FROM audit_log WHERE audit_id = ?',
          [env.audit_id],
        ),
      );
      assert.deepEqual({ ...row }, { status: 'denied', role: 'owner', agent_type: 'dashboard' }, what);
    }
    // Origin and CSRF are judged before the body: a foreign or token-less request is refused as
    // such even with a broken body, and audited as the dashboard too.
    for (const [headers, reason] of [
      [{ ...s.headers, origin: 'https://evil.example' }, 'origin_denied'],
      [{ cookie: s.cookie, origin: INJECT_ORIGIN }, 'csrf_failed'],
    ] as const) {
      const res = await f.app.inject({
        method: 'POST',
        url: '/api/v1/dashboard/dispatch/audit.trail',
        headers: { ...headers, 'content-type': 'application/json' },
        payload: '{bad',
      });
      assert.equal(res.statusCode, 403, reason);
      const env = res.json() as Envelope;
      assert.equal(env.error!.reason, reason);
      const row = await f.rt.store.read((q) =>
        q.get<{ agent_type: string }>('SELECT agent_type FROM audit_log WHERE audit_id = ?', [env.audit_id]),
      );
      assert.equal(row?.agent_type, 'dashboard', reason);
    }
    const refused = await dash(f, s, 'audit.trail', { input: { limit: 'x' } });
    assert.equal(refused.env.error!.reason, 'invalid_input');
    await f.rt.auditBuffer.flush(); // a failed read's row is buffered like a read's (spec/audit.md §read-rows)
    const row = await f.rt.store.read((q) =>
      q.get<{ agent_type: string }>(
        `SELECT agent_type FROM audit_log WHERE reason = 'invalid_input' ORDER BY audit_id DESC LIMIT 1`,
      ),
    );
    assert.equal(row!.agent_type, 'dashboard', 'denials and successes name the same agent');
  });

  it('lets an admin approve a pending typed-phrase dispatch out of band; the agent then confirms with its nonce alone', async (t) => {
    const f = await webmcpFixture(t);
    const agent = await injectLogin(f.app, f.keys.admin);
    const input = { invoice_id: 77, amount_cents: 1999 };
    const pendingRes = await f.app.inject({
      method: 'POST',
      url: '/api/v1/webmcp/execute/webtest__charge',
      headers: agent.headers,
      payload: { input, surface: 'dashboard' },
    });
    const pending = pendingRes.json() as Envelope;
    const approvalId = pending.consent!.approval_id!;
    assert.match(approvalId, /^apv_/);

    const owner = await injectHumanLogin(f, 'owner');
    const list = await dash(f, owner, 'approvals.list', { input: {} });
    assert.equal(list.status, 200);
    const queued = (list.env.result!.approvals as Array<Record<string, unknown>>).find(
      (a) => a.approval_id === approvalId,
    )!;
    assert.equal(queued.typed_phrase, 'CHARGE $19.99 to invoice #77');
    assert.equal(queued.can_decide, true);

    const wrong = await dash(f, owner, 'approvals.approve', {
      input: { approval_id: approvalId, typed_phrase: 'CHARGE $19.99 to invoice 77' },
    });
    assert.equal(wrong.status, 403);
    assert.equal(wrong.env.error!.reason, 'phrase_mismatch');
    const approved = await dash(f, owner, 'approvals.approve', {
      input: { approval_id: approvalId, typed_phrase: 'CHARGE $19.99 to invoice #77' },
    });
    assert.equal(approved.status, 200, JSON.stringify(approved.env));
    assert.equal(approved.env.result!.status, 'approved');

    // approvals.approve is human-only: not callable as a WebMCP tool.
    const asTool = await f.app.inject({
      method: 'POST',
      url: '/api/v1/webmcp/execute/approvals__approve',
      headers: owner.headers,
      payload: { input: { approval_id: approvalId, typed_phrase: 'x' }, surface: 'dashboard' },
    });
    assert.equal((asTool.json() as Envelope).error!.reason, 'surface_denied');

    const confirmed = await f.app.inject({
      method: 'POST',
      url: '/api/v1/webmcp/execute/webtest__charge',
      headers: agent.headers,
      payload: { input, surface: 'dashboard', confirm: true, nonce: pending.consent!.nonce },
    });
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    assert.deepEqual(
      (await f.effects()).map((e) => e.detail),
      ['77:1999'],
    );
    const row = await f.rt.store.read((q) =>
      q.get<Record<string, unknown>>(
        `SELECT approved_by, agent_type FROM audit_log WHERE action_type = 'webtest.charge' AND status = 'completed'`,
      ),
    );
    assert.deepEqual(row, { approved_by: 1, agent_type: 'webmcp:dashboard' });
  });

  it('reverts a receipt through the consent gate of the undone action', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.employee);
    const input = { text: 'to be undone' };
    const pending = await dash(f, s, 'webtest.note_add', { input });
    const done = await dash(f, s, 'webtest.note_add', {
      input,
      confirm: true,
      nonce: pending.env.consent!.nonce,
    });
    assert.equal(done.status, 200);
    assert.equal((await f.effects()).length, 1);

    const revertPending = await dash(f, s, 'audit.revert', { input: { audit_id: done.env.audit_id } });
    assert.equal(
      revertPending.status,
      202,
      'the revert of a WRITE_REVERSIBLE action asks for a confirmation',
    );
    assert.equal(revertPending.env.consent!.gate, 'confirmation');
    const reverted = await dash(f, s, 'audit.revert', {
      input: { audit_id: done.env.audit_id },
      confirm: true,
      nonce: revertPending.env.consent!.nonce,
    });
    assert.equal(reverted.status, 200, JSON.stringify(reverted.env));
    assert.equal(reverted.env.result!.reverted, true);
    assert.deepEqual(await f.effects(), []);
    const row = await f.rt.store.read((q) =>
      q.get<Record<string, unknown>>(
        `SELECT agent_type, parent_id FROM audit_log WHERE action_type = 'audit.revert' AND status = 'completed'`,
      ),
    );
    assert.deepEqual(row, { agent_type: 'dashboard', parent_id: done.env.audit_id });
  });
});

describe('/openapi.json', () => {
  it('documents the session, WebMCP and dashboard JSON routes and hides the static files', async (t) => {
    const f = await webmcpFixture(t);
    const doc = (await f.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>>;
    };
    assert.equal(doc.paths['/api/v1/session']?.post?.operationId, 'session_login');
    assert.equal(doc.paths['/api/v1/session']?.delete?.operationId, 'session_logout');
    assert.equal(doc.paths['/api/v1/webmcp/manifest']?.get?.operationId, 'webmcp_manifest');
    assert.equal(doc.paths['/api/v1/webmcp/execute/{tool_name}']?.post?.operationId, 'webmcp_execute');
    assert.equal(doc.paths['/api/v1/dashboard/dispatch/{verb}']?.post?.operationId, 'dashboard_dispatch');
    for (const hidden of ['/', '/webmcp.js', '/dashboard.js', '/dashboard.css'])
      assert.equal(doc.paths[hidden], undefined, hidden);
  });
});
