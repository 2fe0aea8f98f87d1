/**
 * MCP benchmark (issue 7): `tools/call` of a read verb through our MCP server (the cached tool
 * projection, the whole dispatch pipeline with its buffered read audit row, the envelope →
 * CallToolResult mapping; over HTTP also the Fastify plugin with its Origin/Host guard, bearer
 * authentication on every request and session bookkeeping) against a raw SDK `Server` whose
 * tools/call handler does the same handler work (the verb's own SQL through the same store) and
 * answers the same CallToolResult, with the same tool definition (so the SDK client validates
 * both outputs against the same outputSchema).
 *
 * Both are driven by the SDK's own Client in the same run, in alternating pairs (median of 3 by
 * default, so drift hits both):
 *   - in-memory: InMemoryTransport linked pairs, sequential calls;
 *   - Streamable HTTP on loopback: one stateful session each, `concurrency` callers; the raw
 *     server is the SDK's StreamableHTTPServerTransport on a bare node:http server.
 * Returns calls/s of both and their ratio (target ≥ 0.8).
 */
import { createServer, type Server as NodeHttpServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { createRuntime } from '../src/runtime/runtime.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { createHttpServer } from '../src/transports/http/server.ts';
import { createMcpServer } from '../src/transports/mcp/mcp-server.ts';
import { createMcpHttpPlugin } from '../src/transports/mcp/http-plugin.ts';
import { ToolCatalog } from '../src/transports/mcp/tool-catalog.ts';
import { opsPerSecond, opsPerSecondConcurrent, paired, ratioResult, type BenchResult } from './harness.ts';
import { searchWork, seedContactsBench } from './contacts.ts';
import { dispatchWithKey } from '../src/identity/api-key-auth.ts';

export interface McpBenchOptions {
  /** Milliseconds per measured run (default 2000). */
  ms?: number;
  /** Alternating raw/ours pairs; the figures are medians (default 3). */
  runs?: number;
  /** Concurrent callers on the HTTP session (default 10). */
  concurrency?: number;
}

/** Run the MCP benchmark; returns "mcp.call_in_memory", "mcp.adapter_in_memory" and "mcp.call_http". */
export async function benchMcp(options: McpBenchOptions = {}): Promise<BenchResult[]> {
  const ms = options.ms ?? 2000;
  const runs = options.runs ?? 3;
  const concurrency = options.concurrency ?? 10;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-mcp-'));
  const store = new SqliteStore({ path: join(dir, 'bench.db') });
  const rt = await createRuntime({ store, logger: pino({ level: 'silent' }), sandboxCompanyId: 1 });
  const closers: Array<() => Promise<unknown>> = [];
  try {
    const key = await seedContactsBench(rt);
    const catalog = new ToolCatalog(rt);
    const tool = catalog.lookup('bench.search')!.tool;

    /**
     * A raw SDK Server with the same tool definition and the same result shape. `viaDispatch`:
     * its handler calls rt.dispatch (isolates our MCP adapter); otherwise it does the verb's own
     * work directly (the whole cost of solid-verbs on MCP).
     */
    const rawServer = (viaDispatch = false) => {
      const s = new Server({ name: 'raw', version: '1.0.0' }, { capabilities: { tools: {} } });
      s.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [tool] }));
      s.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => {
        const q = String((req.params.arguments as { q?: string } | undefined)?.q ?? '');
        const result = viaDispatch
          ? (await dispatchWithKey(rt, { surface: 'mcp_stdio' }, key, 'bench.search', { q })).result!
          : await store.read((r) => searchWork(r, 2, q));
        return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
      });
      return s;
    };
    const call = (client: Client) => async () => {
      const r = (await client.callTool({
        name: 'bench__search',
        arguments: { q: 'smith' },
      })) as CallToolResult;
      if (r.isError) throw new Error(`bench call failed: ${JSON.stringify(r.content)}`);
    };

    // In-memory pairs.
    const connectPair = async (server: Server) => {
      const client = new Client({ name: 'bench', version: '1.0.0' });
      const [a, b] = InMemoryTransport.createLinkedPair();
      await Promise.all([server.connect(a), client.connect(b)]);
      await client.listTools();
      closers.push(() => client.close());
      return client;
    };
    const oursMem = await connectPair(createMcpServer(rt, { catalog, credentials: () => ({ apiKey: key }) }));
    const rawMem = await connectPair(rawServer());
    const adapterMem = await connectPair(rawServer(true));
    const mem = await paired(
      () => opsPerSecond(call(oursMem), ms),
      () => opsPerSecond(call(rawMem), ms),
      runs,
    );
    const adapter = await paired(
      () => opsPerSecond(call(oursMem), ms),
      () => opsPerSecond(call(adapterMem), ms),
      runs,
    );

    // Streamable HTTP on loopback.
    const app = createHttpServer(rt, { logger: false, plugins: [createMcpHttpPlugin()] });
    await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    const rawHttp: NodeHttpServer = await startRawHttp(() => rawServer());
    closers.push(() => new Promise((r) => rawHttp.close(r)));
    const connectHttp = async (url: string) => {
      const client = new Client({ name: 'bench', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        }),
      );
      await client.listTools();
      closers.unshift(() => client.close());
      return client;
    };
    const oursHttp = await connectHttp(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`);
    const rawHttpClient = await connectHttp(
      `http://127.0.0.1:${(rawHttp.address() as AddressInfo).port}/mcp`,
    );
    const http = await paired(
      () => opsPerSecondConcurrent(call(oursHttp), concurrency, ms),
      () => opsPerSecondConcurrent(call(rawHttpClient), concurrency, ms),
      runs,
    );

    return [
      ratioResult(
        'mcp.call_in_memory',
        'tools/call of a read verb (contact search) through createMcpServer vs a raw SDK Server doing the same query; SDK Client, InMemoryTransport, sequential',
        mem,
        'calls/s',
        0.8,
        `median of ${runs} alternating pairs, ${ms} ms each`,
      ),
      ratioResult(
        'mcp.adapter_in_memory',
        'the MCP adapter alone: tools/call through createMcpServer vs a raw SDK Server whose handler calls rt.dispatch itself (same verb, same query); InMemoryTransport, sequential',
        adapter,
        'calls/s',
        0.8,
        `median of ${runs} alternating pairs, ${ms} ms each`,
      ),
      ratioResult(
        'mcp.call_http',
        `tools/call over Streamable HTTP: /mcp (Fastify plugin, bearer key, sessions) vs the SDK transport on bare node:http with a raw SDK Server; ${concurrency} concurrent callers on one session, loopback`,
        http,
        'calls/s',
        0.8,
        `median of ${runs} alternating pairs, ${ms} ms each`,
      ),
    ];
  } finally {
    for (const c of closers) await c().catch(() => {});
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The SDK's Streamable HTTP transport on a bare node:http server, one stateful session per initialize. */
async function startRawHttp(makeServer: () => Server): Promise<NodeHttpServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const server = createServer((req, res) => {
    void (async () => {
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (transport === undefined) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, transport!),
        });
        await makeServer().connect(transport);
      }
      await transport.handleRequest(req, res);
    })().catch(() => {
      res.statusCode = 500;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchMcp(), null, 2));
}
