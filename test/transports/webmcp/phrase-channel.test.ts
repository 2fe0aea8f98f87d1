/**
 * The browser channels under the tenant setting `phrase_channel: human` (spec/consent.md
 * §channels): the dashboard route with a person's session (signed in by a human ceremony) counts;
 * WebMCP page tool calls are the in-page agent acting for that person, the agent HTTP API with the
 * key, and a session opened with an API key do not; a key alone never reaches the session routes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Envelope } from '../../../src/spec/types.ts';
import { injectHumanLogin, injectLogin, webmcpFixture, type WebmcpFixture } from './fixture.ts';

const INPUT = { invoice_id: 77, amount_cents: 1999 };
const PHRASE = 'CHARGE $19.99 to invoice #77';

async function humanOnly(f: WebmcpFixture): Promise<void> {
  await f.rt.store.write((tx) =>
    tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
      JSON.stringify({ phrase_channel: 'human' }),
      f.companyId,
    ]),
  );
  f.rt.tenants.invalidate();
}

async function post(
  f: WebmcpFixture,
  url: string,
  headers: Record<string, string>,
  payload: unknown,
): Promise<{ status: number; env: Envelope }> {
  const res = await f.app.inject({
    method: 'POST',
    url,
    headers,
    payload: payload as Record<string, unknown>,
  });
  return { status: res.statusCode, env: res.json() as Envelope };
}

test("agent: a WebMCP page tool call on a person's session is the in-page agent: no phrase shown, a phrase refused", async (t) => {
  const f = await webmcpFixture(t);
  await humanOnly(f);
  const page = await injectHumanLogin(f, 'admin');
  const pending = await post(f, '/api/v1/webmcp/execute/webtest__charge', page.headers, {
    input: INPUT,
    surface: 'dashboard',
  });
  assert.equal(pending.status, 202);
  assert.equal(pending.env.consent!.typed_phrase, undefined, 'the in-page agent does not see the phrase');
  assert.equal(pending.env.consent!.phrase_channel, 'human');
  const nonce = pending.env.consent!.nonce;

  const typed = await post(f, '/api/v1/webmcp/execute/webtest__charge', page.headers, {
    input: INPUT,
    surface: 'dashboard',
    confirm: true,
    nonce,
    typed_phrase: PHRASE,
  });
  assert.equal(typed.status, 403, JSON.stringify(typed.env));
  assert.equal(typed.env.error!.reason, 'phrase_channel_human');

  // The model holds the key: the agent dispatch API does not count its phrase, whatever it claims.
  const byKey = await post(
    f,
    '/api/v1/agent/dispatch/webtest.charge',
    { authorization: `Bearer ${f.keys.admin}`, 'solid-phrase-channel': 'human', origin: 'http://localhost' },
    { args: INPUT, confirm: true, nonce, typed_phrase: PHRASE },
  );
  assert.equal(byKey.status, 403, JSON.stringify(byKey.env));
  assert.equal(byKey.env.error!.reason, 'phrase_channel_human');
  assert.deepEqual(await f.effects(), []);
});

test('human: dashboard approval counts; a key alone, a missing Origin or CSRF token does not reach it', async (t) => {
  const f = await webmcpFixture(t);
  await humanOnly(f);
  const agentPending = await post(
    f,
    '/api/v1/agent/dispatch/webtest.charge',
    { authorization: `Bearer ${f.keys.admin}` },
    { args: INPUT },
  );
  assert.equal(agentPending.status, 202);
  assert.equal(agentPending.env.consent!.typed_phrase, undefined, 'the agent API does not show the phrase');
  const approvalId = String(agentPending.env.consent!.approval_id);
  const approve = { input: { approval_id: approvalId, typed_phrase: PHRASE } };
  const url = '/api/v1/dashboard/dispatch/approvals.approve';

  const keyOnly = await post(f, url, { authorization: `Bearer ${f.keys.owner}` }, approve);
  assert.equal(keyOnly.env.error!.reason, 'session_invalid');
  // A session opened with the owner's API key is the agent's: it does not approve.
  const keySession = await injectLogin(f.app, f.keys.owner);
  const byKeySession = await post(f, url, keySession.headers, approve);
  assert.equal(byKeySession.env.error!.reason, 'human_required', JSON.stringify(byKeySession.env));
  const owner = await injectHumanLogin(f, 'owner');
  const noOrigin = await post(f, url, { cookie: owner.cookie, 'x-csrf-token': owner.csrf }, approve);
  assert.equal(noOrigin.env.error!.reason, 'origin_denied');
  const noCsrf = await post(f, url, { cookie: owner.cookie, origin: owner.headers.origin! }, approve);
  assert.equal(noCsrf.env.error!.reason, 'csrf_failed');
  const apiApprove = await post(
    f,
    '/api/v1/agent/dispatch/approvals.approve',
    { authorization: `Bearer ${f.keys.owner}` },
    { args: { approval_id: approvalId, typed_phrase: PHRASE } },
  );
  assert.equal(apiApprove.env.error!.reason, 'human_required');

  const approved = await post(f, url, owner.headers, approve);
  assert.equal(approved.status, 200, JSON.stringify(approved.env));
  const done = await post(
    f,
    '/api/v1/agent/dispatch/webtest.charge',
    { authorization: `Bearer ${f.keys.admin}` },
    { args: INPUT, confirm: true, nonce: agentPending.env.consent!.nonce },
  );
  assert.equal(done.status, 200, JSON.stringify(done.env));
  assert.equal((await f.effects()).length, 1);
});
