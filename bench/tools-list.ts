/**
 * MCP tool budget (issue 21 item 1): the bytes an MCP client puts into the model's context with
 * every request — the JSON-RPC answers to tools/list, every page, as they cross the transport —
 * for `solid serve --demo`'s catalogue (system verbs, the demo, conformance and integrations packs), with
 * the SDK's own Client listing through an in-memory linked pair. Deterministic: one run.
 *
 *   mcp.tools_list_bytes          every verb on the mcp surface (the default)
 *   mcp.tools_list_bytes_toolset  one toolset (category) only: --toolsets crm
 *   mcp.tools_list_bytes_dynamic  dynamic mode: the meta tools instead of the verbs
 *   mcp.tools_list_bytes_openai_strict / _gemini  the served schema profiles
 *                                 (--mcp-schema-profile; diagnostic: no budget of their own)
 *   mcp.tools_list_bytes_2026     the default catalogue listed by an MCP 2026-07-28 client (SDK v2,
 *                                 stateless HTTP handler; the same 110,000-byte budget)
 *   mcp.answer_bytes_vs_http      bytes of a tools/call answer (the JSON-RPC message the client
 *                                 receives) ÷ bytes of the HTTP envelope (the response body of
 *                                 POST /api/v1/agent/dispatch/{verb}) for the same read, on the
 *                                 seeded demo; the ratio is the worst of the sampled reads
 *
 * Targets (issue 36): ≤ 110,000 bytes for the full catalogue (the GitHub MCP server lists 117
 * tools in 137,331 B), and an answer ≤ 1.3× the HTTP envelope. The notes give bytes per tool,
 * the headroom a new pack has.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { openLocal } from '../src/transports/cli/local.ts';
import { createMcpServer, type McpServerOptions } from '../src/transports/mcp/mcp-server.ts';
import type { Runtime } from '../src/runtime/runtime.ts';
import type { BenchResult } from './harness.ts';
import { createModernServer } from '../src/transports/mcp/modern.ts';
import { ToolCatalog } from '../src/transports/mcp/tool-catalog.ts';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { createHttpServer } from '../src/transports/http/server.ts';
import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

/** The representative toolset: the demo's largest business category of everyday CRM work. */
const ONE_TOOLSET = 'crm';

/** Bytes of every tools/list answer (all pages) a client receives, and how many tools. */
export async function toolsListBytes(
  rt: Runtime,
  options: McpServerOptions = {},
): Promise<{ bytes: number; tools: number }> {
  const server = createMcpServer(rt, options);
  const client = new Client({ name: 'bench', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  let bytes = 0;
  const send = serverSide.send.bind(serverSide);
  serverSide.send = async (message: JSONRPCMessage, opts) => {
    const r = (message as { result?: { tools?: unknown } }).result;
    if (r?.tools !== undefined) bytes += Buffer.byteLength(JSON.stringify(message), 'utf8');
    return send(message, opts);
  };
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  let tools = 0;
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools += page.tools.length;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  await client.close();
  return { bytes, tools };
}

/**
 * Bytes of every tools/list answer (all pages, as HTTP bodies) an MCP 2026-07-28 client (the SDK
 * v2 client pinned to that revision) receives from the stateless handler `/mcp` serves it with.
 */
export async function toolsListBytes2026(rt: Runtime): Promise<{ bytes: number; tools: number }> {
  const catalog = new ToolCatalog(rt);
  const handler = createMcpHandler(
    () => createModernServer(rt, { catalog, credentials: () => ({ principal: null }) }),
    {
      legacy: 'reject',
    },
  );
  let bytes = 0;
  const client = new ModernClient(
    { name: 'bench', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  try {
    await client.connect(
      new StreamableHTTPClientTransport(new URL('http://bench.local/mcp'), {
        fetch: async (url, init) => {
          const res = await handler.fetch(new Request(url, init));
          const text = await res.clone().text();
          if (text.includes('"tools":[')) bytes += Buffer.byteLength(text, 'utf8');
          return res;
        },
      }),
    );
    let tools = 0;
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      tools += page.tools.length;
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return { bytes, tools };
  } finally {
    await client.close();
    await handler.close();
    catalog.dispose();
  }
}

/** Reads of the demo answered keyless (the sandbox tenant) over both transports. */
const ANSWER_CALLS: ReadonlyArray<[string, Record<string, unknown>]> = [
  ['crm_contacts_search', { query: 'a', limit: 5 }],
  ['invoices.search', { limit: 5 }],
  ['deals.search', { limit: 5 }],
  ['subscription.status', {}],
  ['kb.search', { query: 'water' }],
];

/**
 * Bytes of the MCP answer (the JSON-RPC message an in-memory SDK client receives) and of the HTTP
 * envelope (the response body of POST /api/v1/agent/dispatch/{verb}) for each of `calls`, keyless.
 */
export async function answerBytes(
  rt: Runtime,
  calls: ReadonlyArray<[string, Record<string, unknown>]> = ANSWER_CALLS,
): Promise<Array<{ verb: string; mcp: number; http: number; ok: boolean }>> {
  const app = createHttpServer(rt);
  await app.ready();
  const server = createMcpServer(rt);
  const client = new Client({ name: 'bench', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  let last = 0;
  const send = serverSide.send.bind(serverSide);
  serverSide.send = async (message: JSONRPCMessage, opts) => {
    if ((message as { result?: { content?: unknown } }).result?.content !== undefined)
      last = Buffer.byteLength(JSON.stringify(message), 'utf8');
    return send(message, opts);
  };
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  const out: Array<{ verb: string; mcp: number; http: number; ok: boolean }> = [];
  try {
    for (const [verb, args] of calls) {
      const res = await app.inject({
        method: 'POST',
        url: `/api/v1/agent/dispatch/${verb}`,
        payload: { args },
      });
      const r = await client.callTool({ name: rt.registry.get(verb)!.toolName, arguments: args });
      out.push({
        verb,
        mcp: last,
        http: Buffer.byteLength(res.body, 'utf8'),
        ok: r.isError !== true && (JSON.parse(res.body) as { ok: boolean }).ok,
      });
    }
  } finally {
    await client.close();
    await app.close();
  }
  return out;
}

export async function benchToolsList(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-tools-'));
  const local = await openLocal({
    db: join(dir, 'demo.db'),
    create: true,
    packs: ['demo', 'conformance', 'integrations'],
  });
  try {
    const rt = local.rt;
    const full = await toolsListBytes(rt);
    const one = await toolsListBytes(rt, { toolsets: ONE_TOOLSET });
    const dynamic = await toolsListBytes(rt, { dynamic: true });
    const strict = await toolsListBytes(rt, { schemaProfile: 'openai-strict' });
    const gemini = await toolsListBytes(rt, { schemaProfile: 'gemini' });
    const modern = await toolsListBytes2026(rt);
    await local.packs.find((p) => p.name === 'demo')?.seed?.(rt, {});
    const answers = await answerBytes(rt);
    const worst = Math.max(...answers.map((a) => a.mcp / a.http));
    const perTool = Math.round(full.bytes / full.tools);
    return [
      {
        id: 'mcp.tools_list_bytes',
        what: 'bytes of every tools/list answer (all pages, JSON-RPC) for `solid serve --demo`’s catalogue, default settings',
        value: full.bytes,
        unit: 'bytes',
        target: '≤ 110,000 bytes',
        met: full.bytes <= 110_000,
        notes: `${full.tools} tools, ${perTool} B per tool: room for ${Math.floor((110_000 - full.bytes) / perTool)} more like them; tools carry no outputSchema`,
      },
      {
        id: 'mcp.tools_list_bytes_toolset',
        what: `the same with one toolset: --toolsets ${ONE_TOOLSET} (its verbs plus the core verbs verbs.list, audit.revert)`,
        value: one.bytes,
        unit: 'bytes',
        baseline: full.bytes,
        ratio: one.bytes / full.bytes,
        notes: `${one.tools} tools`,
      },
      {
        id: 'mcp.tools_list_bytes_dynamic',
        what: 'the same in dynamic mode (--dynamic-toolsets): search_verbs, describe_verb, call_verb instead of the verbs',
        value: dynamic.bytes,
        unit: 'bytes',
        baseline: full.bytes,
        ratio: dynamic.bytes / full.bytes,
        notes: `${dynamic.tools} tools`,
      },
      {
        id: 'mcp.tools_list_bytes_openai_strict',
        what: 'the same with input schemas in the openai-strict profile (--mcp-schema-profile openai-strict): every property required, null branches, constraints OpenAI lacks in words',
        value: strict.bytes,
        unit: 'bytes',
        baseline: full.bytes,
        ratio: strict.bytes / full.bytes,
        notes: `${strict.tools} tools`,
      },
      {
        id: 'mcp.tools_list_bytes_gemini',
        what: 'the same with input schemas in the gemini profile (--mcp-schema-profile gemini): OpenAPI 3.0 subset, value constraints also in words',
        value: gemini.bytes,
        unit: 'bytes',
        baseline: full.bytes,
        ratio: gemini.bytes / full.bytes,
        notes: `${gemini.tools} tools`,
      },
      {
        id: 'mcp.tools_list_bytes_2026',
        what: 'the default catalogue listed by an MCP 2026-07-28 client (SDK v2 client, stateless handler): every tools/list page as an HTTP body',
        value: modern.bytes,
        unit: 'bytes',
        baseline: full.bytes,
        ratio: modern.bytes / full.bytes,
        target: '≤ 110,000 bytes',
        met: modern.bytes <= 110_000,
        notes: `${modern.tools} tools; each 2026-07-28 page also carries resultType, ttlMs, cacheScope and serverInfo`,
      },
      {
        id: 'mcp.answer_bytes_vs_http',
        what: 'bytes of a tools/call answer (JSON-RPC message) ÷ the HTTP envelope (POST /api/v1/agent/dispatch body) for the same keyless read on the seeded demo; value and baseline are sums, the ratio the worst call',
        value: answers.reduce((n, a) => n + a.mcp, 0),
        unit: 'bytes',
        baseline: answers.reduce((n, a) => n + a.http, 0),
        ratio: worst,
        target: 'ratio ≤ 1.3',
        met: worst <= 1.3 && answers.every((a) => a.ok),
        notes: answers
          .map(
            (a) =>
              `${a.verb}${a.ok ? '' : ' (not ok)'} ${a.mcp}/${a.http} B = ${(a.mcp / a.http).toFixed(2)}`,
          )
          .join('; '),
      },
    ];
  } finally {
    await local.rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
