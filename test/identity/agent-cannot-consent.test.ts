/**
 * Issue 35 rows 1 and 2, end to end against a real server with every HTTP mount (the demo
 * business, `phrase_channel: human`): an agent holding the owner's API key, and a scripted MCP
 * client (the SDK `Client` declaring form elicitation and answering it itself, over `/mcp` and
 * over the in-process server code `solid mcp` runs on stdio), try every path they have to get a
 * typed-phrase verb (`gdpr_delete_contact`) executed. None may, until a person signs in and
 * approves on the approval page; then the agent's confirm with its nonce runs (so the refusals
 * are not vacuous). spec/consent.md §phrase-channel, §approval-page.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Envelope } from '../../src/spec/types.ts';
import { signInHumanForTest } from '../../src/testing.ts';
import { createMcpServer } from '../../src/transports/mcp/mcp-server.ts';
import { errorEnvelopeOf } from '../../src/transports/mcp/envelope-map.ts';
import { META } from '../../src/transports/mcp/meta-keys.ts';
import { remoteFixture, type RemoteFixture } from '../remote-client/support.ts';

/** The contact to erase (one of the owner's tenant) and the call's arguments. */
let ARGS: { contact_id: number };
/** Guessable from the arguments: an agent needs no form to know it. */
let PHRASE: string;

/** Sets `phrase_channel: human` on the owner's tenant and picks the contact; returns the tenant. */
async function humanOnly(f: RemoteFixture): Promise<number> {
  const p = await f.server.rt.tenants.authenticate(f.keys.owner);
  const c = await f.server.rt.store.read((q) =>
    q.get<{ id: number }>('SELECT id FROM contacts WHERE company_id = ? ORDER BY id LIMIT 1', [p.company_id]),
  );
  ARGS = { contact_id: Number(c!.id) };
  PHRASE = `DELETE CONTACT ${ARGS.contact_id} PERMANENTLY`;
  await f.server.rt.store.write((tx) =>
    tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
      JSON.stringify({ phrase_channel: 'human' }),
      p.company_id,
    ]),
  );
  f.server.rt.tenants.invalidate();
  return p.company_id;
}

async function erasures(f: RemoteFixture): Promise<number> {
  await f.server.rt.auditBuffer.flush();
  const row = await f.server.rt.store.read((q) =>
    q.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM audit_log WHERE action_type = 'gdpr_delete_contact' AND status = 'completed'`,
    ),
  );
  return Number(row?.n ?? 0);
}

async function post(
  f: RemoteFixture,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; env: Envelope; res: Response }> {
  const res = await fetch(`${f.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, env: (await res.json()) as Envelope, res };
}

/** A scripted MCP client: declares form elicitation and accepts every form with the phrase. */
function scriptedClient(forms: unknown[]): Client {
  const client = new Client(
    { name: 'scripted-agent', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    forms.push(req.params);
    return { action: 'accept', content: { typed_phrase: PHRASE, confirm: true } };
  });
  return client;
}

/** Every way the scripted client can push the call through, then the nonce of its pending answer. */
async function tryAsScriptedClient(client: Client): Promise<{ nonce?: string; approvalId?: string }> {
  const first = (await client.callTool({ name: 'gdpr_delete_contact', arguments: ARGS })) as CallToolResult;
  assert.equal(first.isError, true, `executed on the first call: ${JSON.stringify(first)}`);
  const pending = errorEnvelopeOf(first);
  const nonce = pending?.consent?.nonce;
  if (nonce !== undefined) {
    const again = (await client.callTool({
      name: 'gdpr_delete_contact',
      arguments: ARGS,
      _meta: { [META.confirm]: true, [META.nonce]: nonce, 'solid-verbs/typed_phrase': PHRASE },
    })) as CallToolResult;
    assert.equal(again.isError, true, `executed on confirm: ${JSON.stringify(again)}`);
  }
  const approvalId = pending?.consent?.approval_id;
  return { nonce, approvalId: approvalId === undefined ? undefined : String(approvalId) };
}

test(
  'row 1: an agent holding the owner API key cannot get a typed-phrase verb executed without a human sign-in',
  { timeout: 120_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const companyId = await humanOnly(f);
    const bearer = { authorization: `Bearer ${f.keys.owner}` };
    const dispatch = (body: unknown) => post(f, '/api/v1/agent/dispatch/gdpr_delete_contact', body, bearer);

    const pre = await dispatch({ args: ARGS });
    assert.equal(pre.status, 202, JSON.stringify(pre.env));
    const nonce = String(pre.env.consent!.nonce);
    const approvalId = String(pre.env.consent!.approval_id);
    assert.ok(!JSON.stringify(pre.env).includes(PHRASE), 'the agent is not shown the phrase');

    // 1. The phrase sent over the agent API with the key.
    const direct = await dispatch({ args: ARGS, confirm: true, nonce, typed_phrase: PHRASE });
    assert.equal(direct.env.error?.reason, 'phrase_channel_human');
    // 2. approvals.approve over the agent API.
    const approveByKey = await post(
      f,
      '/api/v1/agent/dispatch/approvals.approve',
      { args: { approval_id: approvalId, typed_phrase: PHRASE } },
      bearer,
    );
    assert.equal(approveByKey.env.ok, false, JSON.stringify(approveByKey.env));
    // 3. A browser session from the key, then the dashboard, the approval page and WebMCP with it.
    const login = await post(f, '/api/v1/session', { api_key: f.keys.owner }, { origin: f.baseUrl });
    if (login.status === 200) {
      const cookie = login.res.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const session = { cookie, origin: f.baseUrl, 'x-csrf-token': String(login.env.result!.csrf_token) };
      assert.notEqual(login.env.result!.actor, 'human', 'a key never opens a human session');
      const attempts = [
        await post(
          f,
          '/api/v1/dashboard/dispatch/approvals.approve',
          { args: { approval_id: approvalId, typed_phrase: PHRASE } },
          session,
        ),
        await post(
          f,
          '/api/v1/approval-page/dispatch/approvals.approve',
          { input: { approval_id: approvalId, typed_phrase: PHRASE } },
          session,
        ),
        await post(
          f,
          '/api/v1/dashboard/dispatch/gdpr_delete_contact',
          { args: ARGS, confirm: true, nonce, typed_phrase: PHRASE },
          session,
        ),
        await post(
          f,
          '/api/v1/webmcp/execute/gdpr_delete_contact',
          { input: ARGS, surface: 'dashboard', confirm: true, nonce, typed_phrase: PHRASE },
          session,
        ),
        // 4. Switching the tenant back to agent-typed phrases.
        await post(
          f,
          '/api/v1/dashboard/dispatch/tenant.phrase_channel_set',
          { args: { phrase_channel: 'any' } },
          session,
        ),
      ];
      for (const a of attempts) assert.equal(a.env.ok, false, JSON.stringify(a.env));
      // 5. Minting a human: inviting a new owner with the key's session.
      const invite = await post(f, '/api/v1/users/invite', { name: 'Mallory', role: 'owner' }, session);
      assert.equal(invite.env.error?.reason, 'human_required', JSON.stringify(invite.env));
    } else assert.equal(login.env.error?.reason, 'session_requires_human');
    // 4b. The same switch over the agent API, preflight then confirm with the key.
    const setting = await post(
      f,
      '/api/v1/agent/dispatch/tenant.phrase_channel_set',
      { args: { phrase_channel: 'any' } },
      bearer,
    );
    if (setting.env.consent?.nonce !== undefined) {
      const confirmSetting = await post(
        f,
        '/api/v1/agent/dispatch/tenant.phrase_channel_set',
        { args: { phrase_channel: 'any' }, confirm: true, nonce: setting.env.consent.nonce },
        bearer,
      );
      assert.equal(confirmSetting.env.ok, false, JSON.stringify(confirmSetting.env));
    } else assert.equal(setting.env.ok, false, JSON.stringify(setting.env));

    // 5. The nonce alone, as if someone had approved.
    const confirm = await dispatch({ args: ARGS, confirm: true, nonce });
    assert.equal(confirm.env.ok, false, JSON.stringify(confirm.env));
    assert.equal(await erasures(f), 0, 'nothing was erased');
    const tenant = await f.server.rt.tenants.get(companyId);
    assert.equal(tenant?.settings.phrase_channel, 'human', 'the setting is unchanged');

    // The control: a person signs in and approves on the approval page; the agent's confirm runs.
    const p = await f.server.rt.tenants.authenticate(f.keys.owner);
    const human = await signInHumanForTest(f.server.rt, {
      company_id: p.company_id,
      user_id: p.user_id,
      role: 'owner',
      name: 'Olive Owner',
    });
    const approved = await post(
      f,
      '/api/v1/approval-page/dispatch/approvals.approve',
      { input: { approval_id: approvalId, typed_phrase: PHRASE } },
      { cookie: human.cookie, origin: f.baseUrl, 'x-csrf-token': human.csrfToken },
    );
    assert.equal(approved.env.ok, true, JSON.stringify(approved.env));
    const done = await dispatch({ args: ARGS, confirm: true, nonce });
    assert.equal(done.env.ok, true, JSON.stringify(done.env));
    assert.equal(await erasures(f), 1);
  },
);

test(
  'row 2: a scripted MCP client answering its own form elicitation executes no typed-phrase verb (/mcp and the stdio server)',
  { timeout: 120_000 },
  async (t) => {
    const f = await remoteFixture(t);
    await humanOnly(f);

    // Over /mcp (Streamable HTTP) with the owner's key.
    const formsHttp: unknown[] = [];
    const overHttp = scriptedClient(formsHttp);
    const transport = new StreamableHTTPClientTransport(new URL(`${f.baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${f.keys.owner}` } },
    });
    await overHttp.connect(transport);
    t.after(() => overHttp.close());
    const fromHttp = await tryAsScriptedClient(overHttp);

    // The server code `solid mcp` runs on stdio, in process.
    const server = createMcpServer(f.server.rt, { credentials: () => ({ apiKey: f.keys.owner }) });
    const formsStdio: unknown[] = [];
    const overStdio = scriptedClient(formsStdio);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(a), overStdio.connect(b)]);
    t.after(async () => {
      await overStdio.close();
      await server.close();
    });
    await tryAsScriptedClient(overStdio);

    assert.equal(await erasures(f), 0, 'nothing was erased');
    for (const form of [...formsHttp, ...formsStdio])
      assert.ok(
        !JSON.stringify(form).includes(PHRASE),
        `a form shows no typed phrase: ${JSON.stringify(form)}`,
      );

    // The same client's confirm runs once a person approved (nothing else was missing).
    assert.ok(fromHttp.nonce !== undefined && fromHttp.approvalId !== undefined, 'a pending answer');
    const p = await f.server.rt.tenants.authenticate(f.keys.owner);
    const human = await signInHumanForTest(f.server.rt, {
      company_id: p.company_id,
      user_id: p.user_id,
      role: 'owner',
    });
    const approved = await post(
      f,
      '/api/v1/approval-page/dispatch/approvals.approve',
      { input: { approval_id: fromHttp.approvalId, typed_phrase: PHRASE } },
      { cookie: human.cookie, origin: f.baseUrl, 'x-csrf-token': human.csrfToken },
    );
    assert.equal(approved.env.ok, true, JSON.stringify(approved.env));
    const done = (await overHttp.callTool({
      name: 'gdpr_delete_contact',
      arguments: ARGS,
      _meta: { [META.confirm]: true, [META.nonce]: fromHttp.nonce },
    })) as CallToolResult;
    assert.equal(done.isError, undefined, JSON.stringify(done));
    assert.equal(await erasures(f), 1);
  },
);
