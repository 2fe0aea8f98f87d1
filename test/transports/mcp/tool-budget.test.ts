/**
 * The MCP tool budget (spec/transports.md §mcp-tool-budget): every tools/list page a client
 * receives for `solid serve --demo`'s catalogue fits in 150,000 bytes of JSON-RPC, because MCP
 * clients put every definition into the model's context on each request. A verb added with a
 * long description or a big schema fails here, not in an agent's context window.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { openLocal } from '../../../src/transports/cli/local.ts';
import { createMcpServer } from '../../../src/transports/mcp/mcp-server.ts';
import { createModernServer } from '../../../src/transports/mcp/modern.ts';
import { ToolCatalog } from '../../../src/transports/mcp/tool-catalog.ts';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const BUDGET_BYTES = 150_000;

test('tools/list of the demo catalogue stays within the 150,000-byte budget', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'solid-tool-budget-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const local = await openLocal({ db: join(dir, 'demo.db'), create: true, packs: ['demo', 'conformance'] });
  t.after(() => local.close());
  const server = createMcpServer(local.rt, {});
  const client = new Client({ name: 'budget', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  let bytes = 0;
  const send = serverSide.send.bind(serverSide);
  serverSide.send = async (message: JSONRPCMessage, opts) => {
    if ((message as { result?: { tools?: unknown } }).result?.tools !== undefined)
      bytes += Buffer.byteLength(JSON.stringify(message), 'utf8');
    return send(message, opts);
  };
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  t.after(() => client.close());
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    names.push(...page.tools.map((tool) => tool.name));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  assert.ok(names.length > 100, `the demo catalogue is listed (${names.length} tools)`);
  assert.ok(
    bytes <= BUDGET_BYTES,
    `tools/list is ${bytes} bytes for ${names.length} tools (budget ${BUDGET_BYTES})`,
  );
});

// 2026-07-28 results carry resultType, ttlMs, cacheScope and _meta serverInfo: ~167 bytes more per
// page than 2025-11-25; the catalogue pays for them (the served date-time schemas dropped the
// pattern that repeated their format, which the server still checks).
test('tools/list over MCP 2026-07-28 stays within the same budget', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'solid-tool-budget-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const local = await openLocal({ db: join(dir, 'demo.db'), create: true, packs: ['demo', 'conformance'] });
  t.after(() => local.close());
  const catalog = new ToolCatalog(local.rt);
  t.after(() => catalog.dispose());
  const handler = createMcpHandler(
    () => createModernServer(local.rt, { catalog, credentials: () => ({ principal: null }) }),
    { legacy: 'reject' },
  );
  t.after(() => handler.close());
  let bytes = 0;
  const client = new ModernClient(
    { name: 'budget', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL('http://budget.local/mcp'), {
      fetch: async (url, init) => {
        const res = await handler.fetch(new Request(url, init));
        const text = await res.clone().text();
        if (text.includes('"tools":[')) bytes += Buffer.byteLength(text, 'utf8');
        return res;
      },
    }),
  );
  t.after(() => client.close());
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    names.push(...page.tools.map((tool) => tool.name));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  assert.ok(names.length > 100, `the demo catalogue is listed (${names.length} tools)`);
  assert.ok(
    bytes <= BUDGET_BYTES,
    `tools/list is ${bytes} bytes for ${names.length} tools (budget ${BUDGET_BYTES})`,
  );
});
