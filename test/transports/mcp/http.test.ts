/**
 * MCP over Streamable HTTP (`/mcp`, a plugin on createHttpServer) with the SDK's
 * StreamableHTTPClientTransport on a real socket (127.0.0.1:0): list and call, parity, auth
 * (Bearer key, keyless sandbox reads, 401 + WWW-Authenticate), stateful sessions (DELETE, LRU
 * bound, idle expiry, bound to the credential), GET 405, Origin/Host checks, elicitation on a
 * session. Spec: spec/transports.md §mcp-http.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  LATEST_PROTOCOL_VERSION,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { createHttpServer, type HttpPlugin } from '../../../src/transports/http/server.ts';
import { HTTP_MOUNTS } from '../../../src/transports/server/http-mounts.ts';
import {
  createMcpHttpPlugin,
  mcpHttpPlugin,
  type McpHttpOptions,
} from '../../../src/transports/mcp/http-plugin.ts';
import type { Envelope } from '../../../src/spec/types.ts';
import { createMcpRuntime, phraseShown, type McpHarness } from './harness.ts';
import { errorEnvelopeOf } from '../../../src/transports/mcp/envelope-map.ts';
import { resultOf } from '../../support/mcp.ts';

interface Served {
  h: McpHarness;
  url: URL;
  port: number;
  app: ReturnType<typeof createHttpServer>;
}

async function serve(
  t: TestContext,
  options: McpHttpOptions = {},
  extra: HttpPlugin[] = [],
): Promise<Served> {
  const h = await createMcpRuntime(t);
  const app = createHttpServer(h.rt, { logger: false, plugins: [...extra, createMcpHttpPlugin(options)] });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  const port = (app.server.address() as AddressInfo).port;
  return { h, url: new URL(`http://127.0.0.1:${port}/mcp`), port, app };
}

type Answer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, string> };

async function connect(
  t: TestContext,
  s: Served,
  key: string | null,
  elicit?: (phrase: string) => Answer | Promise<Answer>,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(
    s.url,
    key === null ? {} : { requestInit: { headers: { Authorization: `Bearer ${key}` } } },
  );
  const client = new Client(
    { name: 'http-test', version: '1.0.0' },
    { capabilities: elicit ? { elicitation: { form: {} } } : {} },
  );
  if (elicit) client.setRequestHandler(ElicitRequestSchema, async (req) => elicit(phraseShown(req)));
  await client.connect(transport);
  t.after(() => client.close().catch(() => {}));
  return { client, transport };
}

/** A raw HTTP request (node:http, so Host and Origin can be set freely). */
function raw(
  port: number,
  method: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path: '/mcp',
        headers: {
          accept: 'application/json, text/event-stream',
          ...(data
            ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)) }
            : {}),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  },
};
const LIST = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };

test('over HTTP: tools/list is the mcp_stdio parity set and tools/call runs verbs for the key holder', async (t) => {
  const s = await serve(t);
  const { client, transport } = await connect(t, s, s.h.keys.owner);
  assert.equal(typeof transport.sessionId, 'string', 'a stateful session');
  const names = (await client.listTools()).tools.map((x) => x.name).sort();
  const expected = s.h.rt.registry
    .all()
    .filter((v) => v.surfaces.includes('mcp_stdio'))
    .map((v) => v.toolName)
    .sort();
  assert.deepEqual(names, expected);
  assert.deepEqual(
    client.getServerCapabilities()?.tools,
    { listChanged: false },
    'no standalone stream, so no list_changed promise',
  );
  const r = (await client.callTool({
    name: 'test__echo',
    arguments: { text: 'over http' },
  })) as CallToolResult;
  assert.equal((resultOf(r) as { data: { text: string } }).data.text, 'over http');
  const pending = (await client.callTool({
    name: 'test.note_add',
    arguments: { text: 'n' },
  })) as CallToolResult;
  assert.equal(
    errorEnvelopeOf(pending)!.error!.reason,
    'dispatch_pending',
    'the owner may write (consent first)',
  );
});

test('over HTTP without a key: reads run on the sandbox, writes answer auth_required (same as stdio)', async (t) => {
  const s = await serve(t);
  const { client } = await connect(t, s, null);
  const read = (await client.callTool({ name: 'test__echo', arguments: { text: 'x' } })) as CallToolResult;
  assert.equal(read.isError, undefined);
  const write = (await client.callTool({
    name: 'test__note_add',
    arguments: { text: 'x' },
  })) as CallToolResult;
  assert.equal(write.isError, true);
  assert.equal(errorEnvelopeOf(write)!.error!.reason, 'auth_required');
});

test('an invalid key is 401 with WWW-Authenticate (audited as auth_invalid); requireKey refuses keyless requests', async (t) => {
  const s = await serve(t);
  const res = await raw(s.port, 'POST', { authorization: 'Bearer sk_solid_000000000000_nope' }, INIT);
  assert.equal(res.status, 401);
  assert.match(String(res.headers['www-authenticate']), /^Bearer .*error="invalid_token"/);
  const body = JSON.parse(res.text) as {
    error: { code: number; message: string; data: { envelope: Envelope } };
  };
  assert.equal(body.error.data.envelope.error!.reason, 'auth_invalid');
  await s.h.rt.auditBuffer.flush();
  const rows = await s.h.rt.store.read((q) =>
    q.all<{ reason: string }>("SELECT reason FROM audit_log WHERE action_type = 'mcp'"),
  );
  assert.deepEqual(
    rows.map((r) => r.reason),
    ['auth_invalid'],
  );
  await assert.rejects(connect(t, s, 'sk_solid_000000000000_nope'));
  const strict = await serve(t, { requireKey: true });
  const keyless = await raw(strict.port, 'POST', {}, INIT);
  assert.equal(keyless.status, 401);
  assert.match(String(keyless.headers['www-authenticate']), /^Bearer/);
});

test('GET answers 405 (no standalone stream); a non-initialize POST without a session is 400', async (t) => {
  const s = await serve(t);
  const get = await raw(s.port, 'GET', { accept: 'text/event-stream' });
  assert.equal(get.status, 405);
  assert.match(String(get.headers.allow), /POST/);
  const noSession = await raw(s.port, 'POST', {}, LIST);
  assert.equal(noSession.status, 400);
});

test('DELETE ends the session; the id is then unknown (404)', async (t) => {
  const s = await serve(t);
  const { client, transport } = await connect(t, s, s.h.keys.owner);
  await client.listTools();
  const sid = transport.sessionId!;
  await transport.terminateSession();
  const after = await raw(
    s.port,
    'POST',
    {
      authorization: `Bearer ${s.h.keys.owner}`,
      'mcp-session-id': sid,
      'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
    },
    LIST,
  );
  assert.equal(after.status, 404);
});

test('a session belongs to the credential that opened it', async (t) => {
  const s = await serve(t);
  const { client, transport } = await connect(t, s, s.h.keys.owner);
  await client.listTools();
  const headers = { 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };
  assert.equal(
    (await raw(s.port, 'POST', { ...headers, authorization: `Bearer ${s.h.keys.employee}` }, LIST)).status,
    404,
  );
  assert.equal((await raw(s.port, 'POST', headers, LIST)).status, 404, 'nor keyless');
  assert.equal(
    (await raw(s.port, 'POST', { ...headers, authorization: `Bearer ${s.h.keys.owner}` }, LIST)).status,
    200,
  );
});

test('sessions are bounded: past maxSessions the least recently used one is evicted', async (t) => {
  const s = await serve(t, { maxSessions: 2 });
  const a = await connect(t, s, s.h.keys.owner);
  const b = await connect(t, s, s.h.keys.owner);
  await a.client.listTools(); // a is now the most recently used
  const c = await connect(t, s, s.h.keys.owner); // evicts b
  await a.client.listTools();
  await c.client.listTools();
  await assert.rejects(b.client.listTools(), /404|Session not found/);
});

test('an idle session expires (injected clock)', async (t) => {
  let now = 1_000_000;
  const s = await serve(t, { idleMs: 60_000, now: () => now });
  const { client } = await connect(t, s, s.h.keys.owner);
  await client.listTools();
  now += 59_000;
  await client.listTools();
  now += 60_001;
  await assert.rejects(client.listTools(), /404|Session not found/);
});

test('Origin and Host checks: foreign origins and rebinding hosts are 403; loopback and listed origins pass', async (t) => {
  const s = await serve(t, { allowedOrigins: ['https://app.example'] });
  assert.equal((await raw(s.port, 'POST', { origin: 'http://evil.example' }, INIT)).status, 403);
  assert.equal(
    (await raw(s.port, 'POST', { host: `evil.example:${s.port}` }, INIT)).status,
    403,
    'DNS rebinding: a foreign Host on a loopback socket',
  );
  assert.equal((await raw(s.port, 'POST', { origin: 'null' }, INIT)).status, 403);
  assert.equal((await raw(s.port, 'GET', { origin: 'http://evil.example' })).status, 403);
  for (const origin of ['http://localhost:5173', `http://127.0.0.1:${s.port}`, 'https://app.example']) {
    const ok = await raw(s.port, 'POST', { origin }, INIT);
    assert.equal(ok.status, 200, `${origin}: ${ok.text}`);
  }
  assert.equal((await raw(s.port, 'POST', { host: `localhost:${s.port}` }, INIT)).status, 200);
});

test('over HTTP, a typed-phrase verb is approved by the human through elicitation on the session', async (t) => {
  const dashboard: HttpPlugin = async (app) => {
    app.get('/', async () => 'dashboard');
  };
  const s = await serve(t, {}, [dashboard]);
  const { client } = await connect(t, s, s.h.keys.owner, (phrase) => ({
    action: 'accept',
    content: { typed_phrase: phrase },
  }));
  const r = (await client.callTool({
    name: 'test__charge',
    arguments: { invoice_id: 12, amount_cents: 12345 },
  })) as CallToolResult;
  assert.equal(r.isError, undefined, JSON.stringify(r));
  assert.equal(s.h.runs.charge, 1);
  const { client: noElicit } = await connect(t, s, s.h.keys.owner);
  const pending = (await noElicit.callTool({
    name: 'test__charge',
    arguments: { invoice_id: 13, amount_cents: 1 },
  })) as CallToolResult;
  const env = errorEnvelopeOf(pending)!;
  assert.equal(env.error!.reason, 'dispatch_pending');
  assert.match(env.error!.hint!, /solid approvals approve apv_/);
  assert.ok(
    env.error!.hint!.includes(`http://127.0.0.1:${s.port}/approvals/${env.consent!.approval_id}`),
    'the mounted dashboard is named',
  );
  assert.equal(s.h.runs.charge, 1);
});

test('closing the server ends open sessions, even one waiting for a human to answer a form', async (t) => {
  const s = await serve(t, { elicitationTimeoutMs: 20_000 }); // bounds a regression to a 20 s wait
  let asked!: () => void;
  const waiting = new Promise<void>((r) => (asked = r));
  const { client } = await connect(t, s, s.h.keys.owner, () => {
    asked();
    return new Promise<Answer>(() => {}); // the human never answers
  });
  const call = client.callTool({ name: 'test__charge', arguments: { invoice_id: 1, amount_cents: 100 } });
  call.catch(() => {});
  await waiting;
  const closed = await Promise.race([
    s.app.close().then(() => 'closed'),
    new Promise((r) => setTimeout(() => r('still open after 5 s'), 5000)),
  ]);
  assert.equal(closed, 'closed');
  await assert.rejects(call);
  assert.equal(s.h.runs.charge, 0);
});

test('solid serve mounts the plugin at /mcp (http-mounts)', async (t) => {
  assert.equal(typeof HTTP_MOUNTS.mcp, 'function');
  assert.equal(await HTTP_MOUNTS.mcp!(), mcpHttpPlugin);
  const h = await createMcpRuntime(t);
  const app = createHttpServer(h.rt, { logger: false, plugins: [await HTTP_MOUNTS.mcp!()] });
  t.after(() => app.close());
  await app.ready();
  assert.ok(app.hasRoute({ method: 'POST', url: '/mcp' }));
});

test('over HTTP: createMcpHttpPlugin({ toolsets, dynamic }) lists the meta tools, and call_verb refuses a verb outside the toolsets', async (t) => {
  const s = await serve(t, { toolsets: 'test', dynamic: true });
  const { client } = await connect(t, s, s.h.keys.owner);
  const tools = (await client.listTools()).tools.map((x) => x.name).sort();
  assert.deepEqual(tools, ['call_verb', 'describe_verb', 'search_verbs']);
  const read = (await client.callTool({
    name: 'call_verb',
    arguments: { name: 'test.echo', arguments: { text: 'hi', note: null } },
  })) as CallToolResult;
  assert.equal(read.isError, undefined, JSON.stringify(read));
  const outside = (await client.callTool({
    name: 'call_verb',
    arguments: { name: 'audit.trail', arguments: {} },
  })) as CallToolResult;
  assert.equal(errorEnvelopeOf(outside)?.error?.reason, 'surface_denied');
});

test('a JSON-RPC batch is refused (-32600) in a session that negotiated MCP 2025-06-18 or later, whatever the request header says; a 2025-03-26 session may still batch', async (t) => {
  const s = await serve(t);
  const batch = [LIST, { ...LIST, id: 3 }];
  const open = async (version: string): Promise<string> => {
    const res = await raw(
      s.port,
      'POST',
      { authorization: `Bearer ${s.h.keys.owner}` },
      {
        ...INIT,
        params: { ...INIT.params, protocolVersion: version },
      },
    );
    assert.equal(res.status, 200, res.text);
    return res.headers['mcp-session-id'] as string;
  };
  for (const negotiated of ['2025-06-18', LATEST_PROTOCOL_VERSION]) {
    const sid = await open(negotiated);
    const headers = { authorization: `Bearer ${s.h.keys.owner}`, 'mcp-session-id': sid };
    for (const header of [negotiated, '2025-03-26', undefined]) {
      const res = await raw(
        s.port,
        'POST',
        header === undefined ? headers : { ...headers, 'mcp-protocol-version': header },
        batch,
      );
      assert.equal(res.status, 400, `${negotiated} session, header ${header}`);
      const body = JSON.parse(res.text) as { error: { code: number; message: string } };
      assert.equal(body.error.code, -32600);
      assert.match(body.error.message, /batch/i);
    }
  }
  const old = await open('2025-03-26');
  const res = await raw(
    s.port,
    'POST',
    {
      authorization: `Bearer ${s.h.keys.owner}`,
      'mcp-session-id': old,
      'mcp-protocol-version': '2025-03-26',
    },
    batch,
  );
  assert.equal(res.status, 200, res.text);
  // Without a session, a batch (even one holding initialize) is named as what it is.
  const first = await raw(s.port, 'POST', { authorization: `Bearer ${s.h.keys.owner}` }, [INIT]);
  assert.equal(first.status, 400);
  assert.match((JSON.parse(first.text) as { error: { message: string } }).error.message, /not a batch/);
});

test('a refusal of a caller the server can name is audited and carries the envelope: malformed JSON, a non-JSON-RPC body, an unknown session (issue 30 row 8)', async (t) => {
  const s = await serve(t);
  const post = (headers: Record<string, string>, body: string) =>
    fetch(s.url, {
      method: 'POST',
      headers: {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        ...headers,
      },
      body,
    });
  type RpcErr = { id: unknown; error: { code: number; data?: { envelope?: Envelope } } };
  const auditRow = (id: number) =>
    s.h.rt.store.read((q) =>
      q.get<{ company_id: number; reason: string; status: string }>(
        'SELECT company_id, reason, status FROM audit_log WHERE audit_id = ?',
        [id],
      ),
    );
  const owner = { authorization: `Bearer ${s.h.keys.owner}` };
  // Malformed JSON with a valid key: -32700, the envelope, an audit row in the key's tenant.
  const bad = await post(owner, '{"jsonrpc":"2.0","id":5,');
  assert.equal(bad.status, 400);
  const badBody = (await bad.json()) as RpcErr;
  assert.equal(badBody.error.code, -32700);
  const env = badBody.error.data?.envelope;
  assert.equal(env?.error?.reason, 'invalid_request');
  assert.equal(typeof env?.error?.hint, 'string');
  assert.equal(typeof env?.audit_id, 'number', 'audited');
  const row = await auditRow(env!.audit_id!);
  assert.equal(row?.company_id, s.h.companyId);
  assert.equal(row?.reason, 'invalid_request');
  // Valid JSON that is no JSON-RPC message, in a session: -32600, audited, its id echoed.
  const init = await raw(s.port, 'POST', owner, INIT);
  const sid = init.headers['mcp-session-id'] as string;
  const notRpc = await post({ ...owner, 'mcp-session-id': sid }, '{"id":9,"hello":"world"}');
  assert.equal(notRpc.status, 400);
  const notRpcBody = (await notRpc.json()) as RpcErr;
  assert.equal(notRpcBody.error.code, -32600);
  assert.equal(notRpcBody.id, 9);
  assert.equal(typeof notRpcBody.error.data?.envelope?.audit_id, 'number');
  // An unknown session: 404 with the envelope, audited.
  const gone = await post({ ...owner, 'mcp-session-id': 'nope' }, JSON.stringify(LIST));
  assert.equal(gone.status, 404);
  const goneEnv = ((await gone.json()) as RpcErr).error.data?.envelope;
  assert.equal(goneEnv?.error?.reason, 'not_found');
  assert.equal(typeof goneEnv?.audit_id, 'number');
  // Keyless: the envelope, but nobody to name, so no row.
  const anon = (await (await post({}, '{"x":')).json()) as RpcErr;
  assert.equal(anon.error.data?.envelope?.error?.reason, 'invalid_request');
  assert.equal(anon.error.data?.envelope?.audit_id, undefined);
  // A bad key with a bad body: the audited auth_invalid (401).
  const wrong = await post({ authorization: 'Bearer sk_solid_nope_nope' }, '{"x":');
  assert.equal(wrong.status, 401);
  assert.equal(((await wrong.json()) as RpcErr).error.data?.envelope?.error?.reason, 'auth_invalid');
});
