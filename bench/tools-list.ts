/**
 * MCP tool budget (issue 21 item 1): the bytes an MCP client puts into the model's context with
 * every request — the JSON-RPC answers to tools/list, every page, as they cross the transport —
 * for `solid serve --demo`'s catalogue (system verbs, the demo pack, the conformance pack), with
 * the SDK's own Client listing through an in-memory linked pair. Deterministic: one run.
 *
 *   mcp.tools_list_bytes          every verb on the mcp surface (the default)
 *   mcp.tools_list_bytes_toolset  one toolset (category) only: --toolsets crm
 *   mcp.tools_list_bytes_dynamic  dynamic mode: the meta tools instead of the verbs
 *   mcp.tools_list_bytes_openai_strict / _gemini  the served schema profiles
 *                                 (--mcp-schema-profile; diagnostic: no budget of their own)
 *   mcp.tools_list_bytes_2026     the default catalogue listed by an MCP 2026-07-28 client (SDK v2,
 *                                 stateless HTTP handler; the same 150,000-byte budget)
 *
 * Target: ≤ 150,000 bytes for the full catalogue (issue 21). The baseline column is the bytes of
 * the same catalogue projected the way it was before (success|error-envelope anyOf output
 * schemas with every description), computed in the same run, for the ratio.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { openLocal } from '../src/transports/cli/local.ts';
import { createMcpServer, type McpServerOptions } from '../src/transports/mcp/mcp-server.ts';
import { toPortableSchema } from '../src/transports/mcp/portable-schema.ts';
import { envelopeSchema } from '../src/spec/validators.ts';
import type { Runtime } from '../src/runtime/runtime.ts';
import type { BenchResult } from './harness.ts';
import { createModernServer } from '../src/transports/mcp/modern.ts';
import { ToolCatalog } from '../src/transports/mcp/tool-catalog.ts';
import { createMcpHandler } from '@modelcontextprotocol/server';
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

/** The byte count of the former projection of one tool's outputSchema (for the baseline). */
function formerOutputBytes(rt: Runtime): number {
  const env = toPortableSchema(envelopeSchema, 'output').schema;
  let total = 0;
  for (const v of rt.registry.all()) {
    if (!v.surfaces.includes('mcp_stdio')) continue;
    total += JSON.stringify({
      type: 'object',
      anyOf: [toPortableSchema(v.outputSchema, 'output').schema, env],
    }).length;
  }
  return total;
}

export async function benchToolsList(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-tools-'));
  const local = await openLocal({ db: join(dir, 'demo.db'), create: true, packs: ['demo', 'conformance'] });
  try {
    const rt = local.rt;
    const full = await toolsListBytes(rt);
    const former = formerOutputBytes(rt);
    const one = await toolsListBytes(rt, { toolsets: ONE_TOOLSET });
    const dynamic = await toolsListBytes(rt, { dynamic: true });
    const strict = await toolsListBytes(rt, { schemaProfile: 'openai-strict' });
    const gemini = await toolsListBytes(rt, { schemaProfile: 'gemini' });
    const modern = await toolsListBytes2026(rt);
    return [
      {
        id: 'mcp.tools_list_bytes',
        what: 'bytes of every tools/list answer (all pages, JSON-RPC) for `solid serve --demo`’s catalogue, default settings',
        value: full.bytes,
        unit: 'bytes',
        target: '≤ 150,000 bytes',
        met: full.bytes <= 150_000,
        notes: `${full.tools} tools; the former output schemas alone (success | error envelope, with descriptions) were ${former} bytes`,
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
        target: '≤ 150,000 bytes',
        met: modern.bytes <= 150_000,
        notes: `${modern.tools} tools; each 2026-07-28 page also carries resultType, ttlMs, cacheScope and serverInfo`,
      },
    ];
  } finally {
    await local.rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
