/**
 * X-MCP-Toolsets and X-MCP-Readonly on /mcp narrow what a request lists and may call, never widen
 * (on top of --toolsets and a limited key), in 2025-11-25 sessions; a limited key's tools/list
 * shows only what it reaches. Spec: spec/transports.md §mcp-narrowing, spec/consent.md §api-keys.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernHttpTransport,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import { createMcpHttpPlugin, type McpHttpOptions } from '../../../src/transports/mcp/http-plugin.ts';
import { errorEnvelopeOf } from '../../../src/transports/mcp/envelope-map.ts';
import { createMcpRuntime, type McpHarness } from './harness.ts';
import { resultOf } from '../../support/mcp.ts';

async function serve(t: TestContext, options: McpHttpOptions = {}): Promise<{ h: McpHarness; url: URL }> {
  const h = await createMcpRuntime(t);
  const app = createHttpServer(h.rt, { logger: false, plugins: [createMcpHttpPlugin(options)] });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  const port = (app.server.address() as AddressInfo).port;
  return { h, url: new URL(`http://127.0.0.1:${port}/mcp`) };
}

async function connect(t: TestContext, url: URL, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'narrowing-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  t.after(() => client.close().catch(() => {}));
  return client;
}

async function names(client: Client): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    out.push(...page.tools.map((x) => x.name));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return out.sort();
}

async function reasonOf(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<string | undefined> {
  try {
    const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
    return r.isError === true ? errorEnvelopeOf(r)?.error?.reason : 'ok';
  } catch (err) {
    // An unlisted tool: JSON-RPC -32602 carrying the envelope.
    return (err as { data?: { envelope?: { error?: { reason?: string } } } }).data?.envelope?.error?.reason;
  }
}

test('X-MCP-Readonly: tools/list has no write tool, a write is scope_denied and audited', async (t) => {
  const { h, url } = await serve(t);
  const client = await connect(t, url, { Authorization: `Bearer ${h.keys.owner}`, 'X-MCP-Readonly': '1' });
  const listed = await names(client);
  assert.ok(listed.includes('test_echo') || listed.some((n) => n.includes('echo')), listed.join(','));
  for (const n of listed) {
    const v = h.rt.registry.get(n);
    assert.equal(v?.isWrite, false, `${n} is a read`);
  }
  const before = h.runs.note;
  assert.equal(await reasonOf(client, 'test.note_add', { text: 'x' }), 'scope_denied');
  assert.equal(h.runs.note, before, 'nothing ran');
  const row = await h.rt.store.read((q) =>
    q.get<{ status: string }>(
      "SELECT status FROM audit_log WHERE action_type = 'test.note_add' ORDER BY audit_id DESC LIMIT 1",
    ),
  );
  assert.equal(row?.status, 'denied');
});

test('X-MCP-Toolsets narrows --toolsets and never widens it; an unknown name is a 400', async (t) => {
  const { h, url } = await serve(t, { toolsets: 'test' });
  const auth = { Authorization: `Bearer ${h.keys.owner}` };
  // The server serves "test"; the request asks for "audit" only: the intersection is the core verbs.
  const narrowed = await connect(t, url, { ...auth, 'X-MCP-Toolsets': 'audit' });
  const listed = await names(narrowed);
  assert.deepEqual(
    listed.map((n) => h.rt.registry.get(n)?.name),
    ['audit.revert', 'verbs.list'],
  );
  assert.equal(await reasonOf(narrowed, 'audit.trail', {}), 'surface_denied');
  const trail = await narrowed
    .callTool({ name: 'audit.trail', arguments: {} })
    .catch((err: { data?: { envelope?: { error?: { hint?: string } } } }) => err.data?.envelope);
  assert.match(JSON.stringify(trail), /X-MCP-Toolsets/, 'the refusal points at the header, not --toolsets');
  assert.equal(await reasonOf(narrowed, 'test.echo', { text: 'hi', note: null }), 'surface_denied');
  // A revert through it reaches no verb outside the narrowed toolsets.
  const full = await connect(t, url, auth);
  // The confirmation gate: the same call again is the confirmation (plain retry).
  await full.callTool({ name: 'test.note_add', arguments: { text: 'n' } });
  const note = (await full.callTool({ name: 'test.note_add', arguments: { text: 'n' } })) as CallToolResult;
  const auditId = (resultOf(note) as { audit_id?: number } | undefined)?.audit_id;
  assert.ok(auditId !== undefined, JSON.stringify(note));
  assert.equal(await reasonOf(narrowed, 'audit.revert', { audit_id: auditId }), 'scope_denied');
  await assert.rejects(connect(t, url, { ...auth, 'X-MCP-Toolsets': 'nope' }));
});

test('a limited key: tools/list shows only what it reaches, and a call outside is scope_denied', async (t) => {
  const { h, url } = await serve(t);
  const key = await h.rt.createApiKey({
    company_id: h.companyId,
    user_id: 1,
    role: 'owner',
    agent_type: 'limited',
    scope: { verbs: ['test.echo'], read_only: true },
  });
  const client = await connect(t, url, { Authorization: `Bearer ${key}` });
  const listed = (await names(client)).map((n) => h.rt.registry.get(n)?.name);
  assert.deepEqual(listed, ['test.echo', 'verbs.list']);
  assert.equal(await reasonOf(client, 'test.echo', { text: 'hi', note: null }), 'ok');
  assert.equal(await reasonOf(client, 'audit.trail', {}), 'scope_denied');
});

test('MCP 2026-07-28 requests (no session) are narrowed the same way, per request', async (t) => {
  const { h, url } = await serve(t);
  const client = new ModernClient(
    { name: 'modern-narrowed', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new ModernHttpTransport(url, {
      requestInit: {
        headers: {
          Authorization: `Bearer ${h.keys.owner}`,
          'X-MCP-Readonly': 'true',
          'X-MCP-Toolsets': 'test',
        },
      },
    }),
  );
  t.after(() => client.close().catch(() => {}));
  assert.equal(client.getProtocolEra(), 'modern');
  const listed = (await client.listTools()).tools.map((x) => h.rt.registry.get(x.name)?.name).sort();
  assert.ok(listed.includes('test.echo') && listed.includes('verbs.list'), listed.join(','));
  assert.ok(!listed.includes('test.note_add') && !listed.includes('audit.trail'), listed.join(','));
  const before = h.runs.note;
  const r = (await client.callTool({ name: 'test.note_add', arguments: { text: 'x' } })) as CallToolResult;
  assert.equal(errorEnvelopeOf(r)?.error?.reason, 'scope_denied');
  assert.equal(h.runs.note, before);
});
