/**
 * MCP 2026-07-28 beside 2025-11-25 on one server: the SDK v2 client (`@modelcontextprotocol/client`,
 * pinned to 2026-07-28: server/discover, per-request _meta, no session) and the 1.32 client
 * (initialize, Mcp-Session-Id) against the same `/mcp` and the same stdio server: discover, the
 * same tools, reads, errors as envelopes, and a typed-phrase write that answers input_required
 * with the approval page's URL and completes once a signed-in human approved there.
 * Spec: spec/transports.md §mcp-2026.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Client as ModernClient,
  ProtocolError,
  StreamableHTTPClientTransport as ModernHttpTransport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdioTransport } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import { createMcpHttpPlugin } from '../../../src/transports/mcp/http-plugin.ts';
import { SERVER_INSTRUCTIONS } from '../../../src/transports/mcp/mcp-server.ts';
import { errorEnvelopeOf } from '../../../src/transports/mcp/envelope-map.ts';
import { signInHumanForTest } from '../../../src/testing.ts';
import type { Envelope } from '../../../src/spec/types.ts';
import { INJECT_ORIGIN, listenLoopback, webmcpFixture, type WebmcpFixture } from '../webmcp/fixture.ts';
import { resultOf } from '../../support/mcp.ts';

const MODERN = '2026-07-28';
const FIXTURE = fileURLToPath(new URL('./fixtures/stdio-server.ts', import.meta.url));
const TSX = fileURLToPath(new URL('../../../node_modules/tsx/dist/loader.mjs', import.meta.url));

interface ElicitParams {
  mode?: string;
  url?: string;
  message?: string;
}
type UrlHandler = (params: ElicitParams) => Promise<{ action: 'accept' | 'decline' | 'cancel' }>;

interface Served {
  f: WebmcpFixture;
  origin: string;
  url: URL;
}

async function serve(t: TestContext): Promise<Served> {
  const f = await webmcpFixture(t);
  const app = createHttpServer(f.rt, {
    logger: false,
    plugins: [createMcpHttpPlugin({ approvalWaitMs: 2_000 })],
  });
  const origin = await listenLoopback(app);
  t.after(() => app.close());
  f.rt.options.publicUrl = origin;
  return { f, origin, url: new URL(`${origin}/mcp`) };
}

async function modernClient(
  t: TestContext,
  s: Served,
  onUrl?: UrlHandler,
  fetchImpl?: typeof fetch,
): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'modern', version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: MODERN } },
      capabilities: onUrl ? { elicitation: { url: {} } } : {},
    },
  );
  if (onUrl) client.setRequestHandler('elicitation/create', (req) => onUrl(req.params as ElicitParams));
  await client.connect(
    new ModernHttpTransport(s.url, {
      requestInit: { headers: { Authorization: `Bearer ${s.f.keys.admin}` } },
      ...(fetchImpl !== undefined ? { fetch: fetchImpl } : {}),
    }),
  );
  t.after(() => client.close().catch(() => {}));
  return client;
}

async function legacyClient(t: TestContext, s: Served): Promise<{ client: Client; sessionId?: string }> {
  const transport = new StreamableHTTPClientTransport(s.url, {
    requestInit: { headers: { Authorization: `Bearer ${s.f.keys.admin}` } },
  });
  const client = new Client({ name: 'legacy', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close().catch(() => {}));
  return { client, sessionId: transport.sessionId };
}

function envelopeOf(r: unknown): Envelope {
  return errorEnvelopeOf(r as CallToolResult) as Envelope;
}

/** The signed-in human approves the approval named by `url` on the approval page. */
async function approveAt(s: Served, url: string, phrase: string): Promise<void> {
  const human = await signInHumanForTest(s.f.rt, {
    company_id: s.f.companyId,
    user_id: 1,
    role: 'owner',
    name: 'Jane',
  });
  const id = /\/approvals\/(apv_[A-Za-z0-9_-]+)$/.exec(url)![1]!;
  const res = await s.f.app.inject({
    method: 'POST',
    url: '/api/v1/approval-page/dispatch/approvals.approve',
    headers: { origin: INJECT_ORIGIN, cookie: human.cookie, 'x-csrf-token': human.csrfToken },
    payload: { input: { approval_id: id, typed_phrase: phrase } },
  });
  assert.equal(res.statusCode, 200, res.body);
}

test('HTTP: a 2026-07-28 client and a 2025-11-25 client on one /mcp see the same server', async (t) => {
  const s = await serve(t);
  const modern = await modernClient(t, s);
  const legacy = await legacyClient(t, s);
  assert.equal(modern.getProtocolEra(), 'modern');
  assert.ok(legacy.sessionId, 'the 2025-11-25 client keeps its session');

  // server/discover, as a client without the SDK sends it: both revisions, tools, instructions.
  const raw = await fetch(s.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${s.f.keys.admin}`,
      'mcp-protocol-version': MODERN,
      'mcp-method': 'server/discover',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'server/discover',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
  assert.equal(raw.status, 200);
  assert.equal(raw.headers.get('mcp-session-id'), null, 'no session for 2026-07-28');
  const discover = (await raw.json()) as {
    result: {
      supportedVersions: string[];
      capabilities: { tools?: unknown };
      instructions?: string;
      _meta?: Record<string, { name?: string }>;
    };
  };
  assert.ok(discover.result.supportedVersions.includes(MODERN));
  assert.ok(discover.result.supportedVersions.includes('2025-11-25'));
  assert.ok(discover.result.capabilities.tools !== undefined);
  assert.equal(discover.result.instructions, SERVER_INSTRUCTIONS);
  assert.equal(discover.result._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'solid-verbs');

  // The same tools, with the same schemas.
  const [a, b] = await Promise.all([modern.listTools(), legacy.client.listTools()]);
  assert.deepEqual(
    a.tools.map((x) => [x.name, x.inputSchema]),
    b.tools.map((x) => [x.name, x.inputSchema]),
  );
  assert.ok(a.tools.some((x) => x.name === 'webtest__charge'));

  // A read answers the same structured result.
  const args = { name: 'webtest__quote', arguments: { sku: 'mug', quantity: 2 } };
  const [ra, rb] = await Promise.all([modern.callTool(args), legacy.client.callTool(args)]);
  assert.notEqual(ra.isError, true, JSON.stringify(ra));
  assert.deepEqual(resultOf(ra), resultOf(rb));

  // Bad arguments: the same envelope (invalid_input), as an isError result.
  const bad = { name: 'webtest__quote', arguments: { sku: 'nope', quantity: 2 } };
  const [ba, bb] = await Promise.all([modern.callTool(bad), legacy.client.callTool(bad)]);
  assert.equal(ba.isError, true);
  assert.equal(envelopeOf(ba).error?.reason, 'invalid_input');
  assert.equal(envelopeOf(ba).error?.reason, envelopeOf(bb).error?.reason);

  // An unknown tool: JSON-RPC -32602 carrying the (audited) envelope.
  const unknown = await modern.callTool({ name: 'no__such_tool', arguments: {} }).then(
    () => assert.fail('an unknown tool must be refused'),
    (e: unknown) => e,
  );
  assert.ok(unknown instanceof ProtocolError);
  assert.equal(unknown.code, -32602);
  const env = (unknown.data as { envelope: Envelope }).envelope;
  assert.equal(env.error?.reason, 'unknown_verb');
});

test('HTTP: a protocol refusal of a 2026-07-28 request is an audited envelope', async (t) => {
  const s = await serve(t);
  const res = await fetch(s.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${s.f.keys.admin}`,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/list',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
  assert.equal(res.status, 400);
  const body = (await res.json()) as {
    id: unknown;
    error: { code: number; data: { envelope: Envelope } };
  };
  assert.equal(body.id, 7);
  const env = body.error.data.envelope;
  assert.equal(env.error?.reason, 'invalid_request');
  assert.match(env.error!.message, /MCP-Protocol-Version/);
  assert.ok(env.error?.hint);
  assert.ok(env.audit_id !== undefined, 'the refusal of a named caller is audited');
});

test('HTTP: a typed-phrase write answers input_required with the approval page; it runs once a human approved there', async (t) => {
  const s = await serve(t);
  const asked: ElicitParams[] = [];
  const client = await modernClient(t, s, async (params) => {
    asked.push(params);
    // The person opens the page and types the phrase there, not in this client.
    await approveAt(s, params.url!, 'CHARGE $12.00 to invoice #77');
    return { action: 'accept' };
  });
  const res = await client.callTool({
    name: 'webtest__charge',
    arguments: { invoice_id: 77, amount_cents: 1200 },
  });
  assert.notEqual(res.isError, true, JSON.stringify(res));
  assert.equal(asked.length, 1);
  assert.equal(asked[0]!.mode, 'url');
  assert.match(asked[0]!.url!, new RegExp(`^${s.origin}/approvals/apv_`));
  assert.ok(!asked[0]!.message!.includes('CHARGE $12.00'), 'the phrase never passes through the client');
  assert.equal((await s.f.effects()).filter((e) => e.kind === 'charge').length, 1);
});

test('HTTP: no human decided, or no URL elicitation: the pending envelope names the page; nothing runs', async (t) => {
  const s = await serve(t);
  const asked: ElicitParams[] = [];
  const accepting = await modernClient(t, s, async (params) => {
    asked.push(params);
    return { action: 'accept' };
  });
  const res = await accepting.callTool({
    name: 'webtest__charge',
    arguments: { invoice_id: 78, amount_cents: 1200 },
  });
  assert.equal(res.isError, true);
  const env = envelopeOf(res);
  assert.equal(env.error?.reason, 'dispatch_pending');
  assert.equal(asked.length, 1);
  assert.equal(env.consent?.approval_url, asked[0]!.url, 'the same approval, not a second one');
  assert.ok(env.error?.hint?.includes(env.consent!.approval_url!));

  const plain = await modernClient(t, s);
  const res2 = await plain.callTool({
    name: 'webtest__charge',
    arguments: { invoice_id: 79, amount_cents: 1200 },
  });
  assert.equal(res2.isError, true);
  assert.equal(envelopeOf(res2).error?.reason, 'dispatch_pending');
  assert.match(envelopeOf(res2).consent?.approval_url ?? '', /\/approvals\/apv_/);
  assert.equal((await s.f.effects()).filter((e) => e.kind === 'charge').length, 0);
});

test('HTTP: 2026-07-28 requests carry no session, so alternating servers on one database answer one client', async (t) => {
  const s = await serve(t);
  // A second server (its own plugin, catalog and SDK handler) on the same runtime and database.
  const app2 = createHttpServer(s.f.rt, {
    logger: false,
    plugins: [createMcpHttpPlugin({ approvalWaitMs: 2_000 })],
  });
  const origin2 = await listenLoopback(app2);
  t.after(() => app2.close());
  let n = 0;
  const hosts: string[] = [];
  const alternating: typeof fetch = (input, init) => {
    const target = new URL(input instanceof Request ? input.url : String(input));
    const next = new URL(n++ % 2 === 0 ? s.origin : origin2);
    target.host = next.host;
    hosts.push(target.host);
    return fetch(target, init);
  };
  const client = await modernClient(
    t,
    s,
    async (params) => {
      await approveAt(s, params.url!, 'CHARGE $3.00 to invoice #80');
      return { action: 'accept' };
    },
    alternating,
  );
  const list = await client.listTools();
  assert.ok(list.tools.length > 0);
  const res = await client.callTool({
    name: 'webtest__charge',
    arguments: { invoice_id: 80, amount_cents: 300 },
  });
  assert.notEqual(res.isError, true, JSON.stringify(res));
  assert.ok(new Set(hosts).size === 2, `both servers answered (${hosts.join(', ')})`);
  assert.equal((await s.f.effects()).filter((e) => e.kind === 'charge').length, 1);
});

test('stdio: the first message picks the era; both clients list the same tools and read', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'solid-mcp-2026-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = {
    ...getDefaultEnvironment(),
    MCP_TEST_KEY_FILE: join(dir, 'key'),
    MCP_TEST_PUBLIC_URL: 'http://localhost:4400',
  };
  const args = ['--import', TSX, FIXTURE];
  const asked: ElicitParams[] = [];
  const modern = new ModernClient(
    { name: 'modern-stdio', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: MODERN } }, capabilities: { elicitation: { url: {} } } },
  );
  modern.setRequestHandler('elicitation/create', async (req) => {
    asked.push(req.params as ElicitParams);
    return { action: 'accept' };
  });
  await modern.connect(new ModernStdioTransport({ command: process.execPath, args, env, stderr: 'ignore' }));
  t.after(() => modern.close().catch(() => {}));
  const legacy = new Client({ name: 'legacy-stdio', version: '1.0.0' });
  await legacy.connect(new StdioClientTransport({ command: process.execPath, args, env, stderr: 'ignore' }));
  t.after(() => legacy.close().catch(() => {}));
  assert.equal(modern.getProtocolEra(), 'modern');
  assert.equal(modern.getServerVersion()?.name, 'solid-verbs');
  assert.ok(readFileSync(join(dir, 'key'), 'utf8').startsWith('sk_'));

  const [a, b] = await Promise.all([modern.listTools(), legacy.listTools()]);
  assert.deepEqual(
    a.tools.map((x) => x.name),
    b.tools.map((x) => x.name),
  );
  const read = { name: 'test__echo', arguments: { text: 'hi', note: null } };
  const [ra, rb] = await Promise.all([modern.callTool(read), legacy.callTool(read)]);
  assert.notEqual(ra.isError, true, JSON.stringify(ra));
  assert.deepEqual(resultOf(ra), resultOf(rb));

  // A typed-phrase write: input_required with the approval page, then (nobody approved) pending.
  const res = await modern.callTool({
    name: 'test__charge',
    arguments: { invoice_id: 3, amount_cents: 500 },
  });
  assert.equal(res.isError, true);
  assert.equal(envelopeOf(res).error?.reason, 'dispatch_pending');
  assert.equal(asked.length, 1);
  assert.equal(asked[0]!.mode, 'url');
  assert.equal(asked[0]!.url, envelopeOf(res).consent?.approval_url);
});

test('the era check names the same _meta key as the SDK v2 (it is read without loading the SDK)', async () => {
  const { PROTOCOL_VERSION_META_KEY } = await import('@modelcontextprotocol/server');
  const { MODERN_PROTOCOL_VERSION_META_KEY } = await import('../../../src/transports/mcp/modern-era.ts');
  assert.equal(MODERN_PROTOCOL_VERSION_META_KEY, PROTOCOL_VERSION_META_KEY);
});
