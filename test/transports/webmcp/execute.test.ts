/**
 * POST /api/v1/webmcp/execute/{tool_name} (spec/transports.md §webmcp-execute, §webmcp-csrf):
 * session + CSRF + Origin, the dispatch envelope with the HTTP status mapping, the consent round
 * trips (confirmation and typed phrase), page-surface and transport-surface denials, the keyless
 * public surface, and malformed or oversized bodies.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Envelope } from '../../../src/spec/types.ts';
import {
  INJECT_ORIGIN,
  injectLogin,
  webmcpFixture,
  type InjectSession,
  type WebmcpFixture,
} from './fixture.ts';
import { alterMiddle, spareBitTwin } from '../../support/base64url.ts';

function exec(f: WebmcpFixture, tool: string, payload: unknown, headers: Record<string, string> = {}) {
  return f.app.inject({
    method: 'POST',
    url: `/api/v1/webmcp/execute/${tool}`,
    headers,
    payload: payload as Record<string, unknown>,
  });
}

async function call(
  f: WebmcpFixture,
  s: InjectSession,
  tool: string,
  body: Record<string, unknown>,
): Promise<{ status: number; env: Envelope }> {
  const res = await exec(f, tool, body, s.headers);
  return { status: res.statusCode, env: res.json() as Envelope };
}

describe('POST /api/v1/webmcp/execute: authentication, CSRF and Origin', () => {
  it('answers 401 session_invalid without a session on a non-public surface', async (t) => {
    const f = await webmcpFixture(t);
    for (const surface of ['dashboard', 'portal', 'developer', 'tenant-site']) {
      const res = await exec(
        f,
        'webtest__quote',
        { input: { sku: 'mug', quantity: 1 }, surface },
        { origin: INJECT_ORIGIN },
      );
      assert.equal(res.statusCode, 401, surface);
      const env = res.json() as Envelope;
      assert.equal(env.ok, false);
      assert.equal(env.verb, 'webtest__quote');
      assert.equal(env.error!.reason, 'session_invalid');
    }
  });

  it('answers 403 csrf_failed for a missing, wrong or other-session token, and nothing runs', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.owner);
    const other = await injectLogin(f.app, f.keys.admin);
    const body = { input: { text: 'should not exist' }, surface: 'dashboard' };
    const cases: Array<Record<string, string>> = [
      { cookie: s.cookie, origin: INJECT_ORIGIN },
      { cookie: s.cookie, origin: INJECT_ORIGIN, 'x-csrf-token': 'not-the-token' },
      { cookie: s.cookie, origin: INJECT_ORIGIN, 'x-csrf-token': other.csrf },
      { cookie: s.cookie, origin: INJECT_ORIGIN, 'x-csrf-token': alterMiddle(s.csrf) },
      // decodes to the same bytes as the real token: only the exact spelling is accepted
      { cookie: s.cookie, origin: INJECT_ORIGIN, 'x-csrf-token': spareBitTwin(s.csrf) },
    ];
    for (const headers of cases) {
      const res = await exec(f, 'webtest__note_add', body, headers);
      assert.equal(res.statusCode, 403, JSON.stringify(headers));
      assert.equal((res.json() as Envelope).error!.reason, 'csrf_failed');
    }
    const trail = await f.rt.store.read((q) =>
      q.all<{ status: string; reason: string }>(
        'SELECT status, reason FROM audit_log WHERE action_type = ?',
        ['webtest.note_add'],
      ),
    );
    // Each refusal is recorded under the verb's name (not the tool name); nothing else ran.
    assert.deepEqual(
      trail.map((r) => `${r.status} ${r.reason}`),
      cases.map(() => 'denied csrf_failed'),
      'refused before dispatch: no pending row, no nonce',
    );
  });

  it('answers 403 origin_denied for a cross-origin, missing or cross-site request carrying the session cookie', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.owner);
    const body = { input: { sku: 'mug', quantity: 1 }, surface: 'dashboard' };
    const { origin: _origin, ...noOrigin } = s.headers;
    for (const headers of [
      { ...s.headers, origin: 'https://evil.example' },
      { ...s.headers, origin: 'http://localhost:3000' },
      noOrigin,
      { ...s.headers, origin: 'null' },
      { ...s.headers, 'sec-fetch-site': 'cross-site' },
    ]) {
      const res = await exec(f, 'webtest__quote', body, headers);
      assert.equal(res.statusCode, 403, JSON.stringify(headers));
      assert.equal((res.json() as Envelope).error!.reason, 'origin_denied');
    }
    assert.equal(
      (await exec(f, 'webtest__quote', body, s.headers)).statusCode,
      200,
      'the same call from the page itself runs',
    );
  });

  it('a malformed body from a signed-in page is answered 400 invalid_request and audited in the user’s tenant; without a session it is answered only', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.owner);
    const res = await exec(
      f,
      'webtest__note_add',
      { input: { text: 'x' }, surface: 'dashboard', extra: 1 },
      s.headers,
    );
    assert.equal(res.statusCode, 400);
    const env = res.json() as Envelope;
    assert.equal(env.error!.reason, 'invalid_request');
    assert.equal(typeof env.audit_id, 'number');
    const row = await f.rt.store.read((q) =>
      q.get<{ status: string; reason: string; role: string }>(
        'SELECT status, reason, role FROM audit_log WHERE audit_id = ?',
        [env.audit_id],
      ),
    );
    assert.deepEqual({ ...row }, { status: 'denied', reason: 'invalid_request', role: 'owner' });
    const anonymous = await exec(
      f,
      'webtest__note_add',
      { input: {}, surface: 'public', extra: 1 },
      { origin: INJECT_ORIGIN },
    );
    assert.equal(anonymous.statusCode, 400);
    assert.equal((anonymous.json() as Envelope).audit_id, undefined);
  });

  it('accepts an extra origin allowed in the options', async (t) => {
    const f = await webmcpFixture(t, { allowedOrigins: ['https://app.example.com'] });
    const s = await injectLogin(f.app, f.keys.owner);
    const res = await exec(
      f,
      'webtest__quote',
      { input: { sku: 'tee', quantity: 1 }, surface: 'dashboard' },
      { ...s.headers, origin: 'https://app.example.com' },
    );
    assert.equal(res.statusCode, 200);
  });
});

describe('POST /api/v1/webmcp/execute: dispatch', () => {
  it('runs a READ verb as the session principal and answers 200 with the envelope', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.read_only);
    const { status, env } = await call(f, s, 'webtest__quote', {
      input: { sku: 'tee', quantity: 3 },
      surface: 'portal',
    });
    assert.equal(status, 200);
    assert.deepEqual(env, {
      ok: true,
      verb: 'webtest.quote',
      result: { entity_id: 'tee', entity_type: 'sku', data: { quantity: 3, total_cents: 6000 } },
    });
    await f.rt.auditBuffer.flush();
    const row = await f.rt.store.read((q) =>
      q.get<Record<string, unknown>>(
        'SELECT company_id, user_id, role, agent_type, status FROM audit_log WHERE action_type = ?',
        ['webtest.quote'],
      ),
    );
    assert.deepEqual(row, {
      company_id: f.companyId,
      user_id: 4,
      role: 'read_only',
      agent_type: 'webmcp:portal',
      status: 'completed',
    });
  });

  it('round-trips a WRITE_REVERSIBLE verb: 202 pending with a nonce, then 200 receipt on confirm', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.employee);
    const input = { text: 'call back Ada' };
    const pending = await call(f, s, 'webtest__note_add', { input, surface: 'dashboard' });
    assert.equal(pending.status, 202);
    assert.equal(pending.env.error!.reason, 'dispatch_pending');
    assert.equal(pending.env.consent!.gate, 'confirmation');
    assert.equal(pending.env.consent!.class, 'WRITE_REVERSIBLE');
    assert.equal(pending.env.consent!.summary, 'Add the note "call back Ada".');
    assert.deepEqual(await f.effects(), [], 'nothing ran before the confirmation');

    const changed = await call(f, s, 'webtest__note_add', {
      input: { text: 'something else' },
      surface: 'dashboard',
      confirm: true,
      nonce: pending.env.consent!.nonce,
    });
    assert.equal(changed.status, 403);
    assert.equal(changed.env.error!.reason, 'nonce_invalid', 'the nonce is bound to the arguments');

    const done = await call(f, s, 'webtest__note_add', {
      input,
      surface: 'dashboard',
      confirm: true,
      nonce: pending.env.consent!.nonce,
    });
    assert.equal(done.status, 200);
    assert.equal(done.env.ok, true);
    assert.equal(done.env.result!.text, 'call back Ada');
    assert.equal(typeof done.env.audit_id, 'number');
    assert.equal(typeof done.env.rollback_handle, 'string');
    assert.deepEqual(
      (await f.effects()).map((e) => e.detail),
      ['call back Ada'],
    );

    const replay = await call(f, s, 'webtest__note_add', {
      input,
      surface: 'dashboard',
      confirm: true,
      nonce: pending.env.consent!.nonce,
    });
    assert.equal(replay.status, 403);
    assert.equal(replay.env.error!.reason, 'nonce_replayed');
    assert.equal((await f.effects()).length, 1);
  });

  it('round-trips a typed-phrase verb: the exact phrase runs it, a wrong one is refused', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.admin);
    const input = { invoice_id: 4242, amount_cents: 5000 };
    const pending = await call(f, s, 'webtest__charge', { input, surface: 'dashboard' });
    assert.equal(pending.status, 202);
    assert.equal(pending.env.consent!.gate, 'typed_phrase');
    assert.equal(pending.env.consent!.typed_phrase, 'CHARGE $50.00 to invoice #4242');
    const nonce = pending.env.consent!.nonce;

    const wrong = await call(f, s, 'webtest__charge', {
      input,
      surface: 'dashboard',
      confirm: true,
      nonce,
      typed_phrase: 'charge $50.00 to invoice #4242',
    });
    assert.equal(wrong.status, 403);
    assert.equal(wrong.env.error!.reason, 'phrase_mismatch');
    assert.deepEqual(await f.effects(), []);

    const done = await call(f, s, 'webtest__charge', {
      input,
      surface: 'dashboard',
      confirm: true,
      nonce,
      typed_phrase: 'CHARGE $50.00 to invoice #4242',
    });
    assert.equal(done.status, 200);
    assert.equal(done.env.result!.charged_cents, 5000);
    assert.deepEqual(
      (await f.effects()).map((e) => e.detail),
      ['4242:5000'],
    );
  });

  it('accepts the idempotency key from the body or the Idempotency-Key header', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.owner);
    const input = { text: 'once' };
    const pending = await call(f, s, 'webtest__note_add', { input, surface: 'dashboard' });
    const first = await exec(
      f,
      'webtest__note_add',
      { input, surface: 'dashboard', confirm: true, nonce: pending.env.consent!.nonce },
      { ...s.headers, 'idempotency-key': 'note-once-1' },
    );
    assert.equal(first.statusCode, 200);
    assert.equal((first.json() as Envelope).idempotency_key, 'note-once-1');
    const again = await call(f, s, 'webtest__note_add', {
      input,
      surface: 'dashboard',
      idempotency_key: 'note-once-1',
    });
    assert.equal(again.status, 200);
    assert.equal(again.env.replayed, true);
    assert.equal((await f.effects()).length, 1);
  });

  it('answers 403 surface_denied for a verb not on the page surface or not on webmcp at all, and audits it', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.owner);
    const page = await call(f, s, 'webtest__charge', {
      input: { invoice_id: 1, amount_cents: 100 },
      surface: 'portal',
    });
    assert.equal(page.status, 403);
    assert.equal(page.env.error!.reason, 'surface_denied');
    assert.match(page.env.error!.message, /WebMCP portal surface/);
    assert.equal(typeof page.env.audit_id, 'number');
    const transport = await call(f, s, 'webtest__http_only', { input: {}, surface: 'dashboard' });
    assert.equal(transport.status, 403);
    assert.equal(transport.env.error!.reason, 'surface_denied');
    const rows = await f.rt.store.read((q) =>
      q.all<Record<string, unknown>>(
        `SELECT action_type, status, reason FROM audit_log WHERE reason = 'surface_denied' ORDER BY audit_id`,
      ),
    );
    assert.deepEqual(rows, [
      { action_type: 'webtest.charge', status: 'denied', reason: 'surface_denied' },
      { action_type: 'webtest.http_only', status: 'denied', reason: 'surface_denied' },
    ]);
    assert.deepEqual(await f.effects(), []);
  });

  it('passes the other pipeline refusals through with their status: role, input, unknown verb', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.read_only);
    const role = await call(f, s, 'webtest__note_add', { input: { text: 'x' }, surface: 'dashboard' });
    assert.equal(role.status, 403);
    assert.equal(role.env.error!.reason, 'role_denied');
    const input = await call(f, s, 'webtest__quote', {
      input: { sku: 'hat', quantity: 1 },
      surface: 'dashboard',
    });
    assert.equal(input.status, 400);
    assert.equal(input.env.error!.reason, 'invalid_input');
    assert.equal(input.env.error!.path, '/sku');
    const identity = await call(f, s, 'webtest__quote', {
      input: { sku: 'mug', quantity: 1, company_id: 3 },
      surface: 'dashboard',
    });
    assert.equal(identity.status, 400);
    assert.equal(identity.env.error!.reason, 'identity_override');
    const unknown = await call(f, s, 'webtest__qoute', { input: {}, surface: 'dashboard' });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.env.error!.reason, 'unknown_verb');
    assert.match(unknown.env.error!.hint ?? '', /webtest\.quote/);
  });

  it('runs reads on the public surface without a session (sandbox tenant) but no writes', async (t) => {
    const f = await webmcpFixture(t);
    const read = await exec(f, 'webtest__quote', { input: { sku: 'mug', quantity: 2 }, surface: 'public' });
    assert.equal(read.statusCode, 200);
    assert.equal((read.json() as Envelope).result!.data !== undefined, true);
    await f.rt.auditBuffer.flush();
    const row = await f.rt.store.read((q) =>
      q.get<Record<string, unknown>>('SELECT company_id, agent_type FROM audit_log WHERE action_type = ?', [
        'webtest.quote',
      ]),
    );
    assert.deepEqual(row, { company_id: f.sandboxId, agent_type: 'sandbox' });
    const write = await exec(f, 'webtest__note_add', { input: { text: 'anonymous' }, surface: 'public' });
    assert.equal(write.statusCode, 401);
    assert.equal((write.json() as Envelope).error!.reason, 'auth_required');
    const foreign = await exec(
      f,
      'webtest__quote',
      { input: { sku: 'mug', quantity: 2 }, surface: 'public' },
      { origin: 'https://evil.example' },
    );
    assert.equal(foreign.statusCode, 403);
    assert.equal((foreign.json() as Envelope).error!.reason, 'origin_denied');
    assert.deepEqual(await f.effects(), []);
  });
});

describe('POST /api/v1/webmcp/execute: malformed and oversized bodies', () => {
  it('answers 400 invalid_request for a body that is not a call object', async (t) => {
    const f = await webmcpFixture(t);
    const s = await injectLogin(f.app, f.keys.owner);
    const bad: Array<[string, string]> = [
      ['{"input": {"sku": "mug"', 'not JSON'],
      ['[1, 2]', 'an array'],
      ['"text"', 'a string'],
      ['{"input": {}}', 'no surface'],
      ['{"input": {}, "surface": "admin"}', 'unknown surface'],
      ['{"args": {}, "surface": "dashboard"}', 'args instead of input'],
      ['{"input": {}, "surface": "dashboard", "confirm": "yes"}', 'confirm not boolean'],
      ['{"input": {}, "surface": "dashboard", "nonce": 12}', 'nonce not string'],
      ['{"input": {}, "surface": "dashboard", "__proto__": {"x": 1}}', 'prototype poisoning'],
    ];
    for (const [payload, what] of bad) {
      const res = await f.app.inject({
        method: 'POST',
        url: '/api/v1/webmcp/execute/webtest__quote',
        headers: { ...s.headers, 'content-type': 'application/json' },
        payload,
      });
      assert.equal(res.statusCode, 400, what);
      const env = res.json() as Envelope;
      assert.equal(env.ok, false, what);
      assert.equal(env.error!.reason, 'invalid_request', what);
    }
  });

  it('answers 415 for a non-JSON body and 413 payload_too_large above the execute limit', async (t) => {
    const f = await webmcpFixture(t, { executeBodyLimitBytes: 4096 });
    const s = await injectLogin(f.app, f.keys.owner);
    const text = await f.app.inject({
      method: 'POST',
      url: '/api/v1/webmcp/execute/webtest__quote',
      headers: { ...s.headers, 'content-type': 'text/plain' },
      payload: 'sku=mug',
    });
    assert.equal(text.statusCode, 415);
    assert.equal((text.json() as Envelope).error!.reason, 'unsupported_media_type');
    const big = await exec(
      f,
      'webtest__note_add',
      { input: { text: 'x'.repeat(5000) }, surface: 'dashboard' },
      s.headers,
    );
    assert.equal(big.statusCode, 413);
    const env = big.json() as Envelope;
    assert.equal(env.error!.reason, 'payload_too_large');
    assert.equal(env.verb, 'webtest__note_add');
    const fits = await exec(
      f,
      'webtest__quote',
      { input: { sku: 'mug', quantity: 1 }, surface: 'dashboard' },
      s.headers,
    );
    assert.equal(fits.statusCode, 200);
  });
});
