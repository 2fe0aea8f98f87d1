/**
 * MCP benchmark (issue 36 item 1): our MCP server as users run it — the built package (dist/),
 * the caller's API key resolved by the server as for every MCP client — against the official
 * SDK's own `McpServer` running the same work. Never our adapter on both sides.
 *
 * - `mcp.read_vs_sdk`: tools/call of a read verb (bench/peer-pack.mjs bench.search: 20 of 200
 *   contacts) through dist's `createMcpServer` (credentials: the API key, resolved by the server)
 *   ÷ an SDK `McpServer` registering one tool that runs the same SQL on better-sqlite3 (its own
 *   connection to the same file). SDK Client, InMemoryTransport, sequential calls, ABBA rounds.
 *   Target ≥ 0.9.
 * - `mcp.adapter_in_memory` (diagnostic): the adapter alone — createMcpServer ÷ an SDK `Server`
 *   whose handler calls dist's dispatchWithKey itself with the same key (the pipeline on both
 *   sides).
 * - `mcp.write_vs_sdk_careful`: a confirmed write over Streamable HTTP — `solid serve` (dist, API
 *   key, the call answered pending, then the call again with the confirm + nonce `_meta`, as an MCP
 *   client does it) ÷ an SDK McpServer on node:http running the careful transaction (UPDATE +
 *   SHA-256-chained audit INSERT + idempotency row + ES256-signed receipt; bench/peer-server.mjs)
 *   in one call. Server CPU µs per write of both processes in the notes. Target ≥ 0.5.
 *
 * Where a target is missed, the notes name the top layers of a --cpu-prof of solid's side
 * (in-memory: this process while it runs our side alone; HTTP: the solid serve process).
 *
 *   npm run build && npm run bench -- --only mcp [--quick]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Session } from 'node:inspector/promises';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { abba, abbaNote, opsPerSecond, type BenchResult } from './harness.ts';
import { built } from './built.ts';
import {
  PEER_PACK,
  layersNote,
  measurePeer,
  preparePeerDb,
  profileSolid,
  topLayers,
  type LayerTime,
} from './peers.ts';

type LocalModule = typeof import('../src/transports/cli/local.ts');
type McpModule = typeof import('../src/transports/mcp/index.ts');
type IndexModule = typeof import('../src/index.ts');

export interface McpBenchOptions {
  /** Milliseconds per side and round (default 2000). */
  ms?: number;
  /** ABBA rounds (default 5). */
  rounds?: number;
  /** Older name of `rounds` (at least 2 are run). */
  runs?: number;
  /** Concurrent callers on the HTTP session (default 8). */
  concurrency?: number;
}

/** Run `fn` under this process's CPU profiler; the top layers of what it sampled. */
async function profiled(dir: string, fn: () => Promise<unknown>): Promise<LayerTime[]> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(join(dir, 'inmemory.cpuprofile'), JSON.stringify(profile));
    session.disconnect();
  }
  return topLayers(dir).filter((l) => !l.layer.startsWith('tsx') && l.layer !== 'esbuild');
}

/** Run the MCP benchmark: "mcp.read_vs_sdk", "mcp.adapter_in_memory", "mcp.write_vs_sdk_careful". */
export async function benchMcp(options: McpBenchOptions = {}): Promise<BenchResult[]> {
  const ms = options.ms ?? 2000;
  const rounds = options.rounds ?? (options.runs !== undefined ? Math.max(2, options.runs) : 5);
  const concurrency = options.concurrency ?? 8;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-mcp-'));
  const closers: Array<() => Promise<unknown>> = [];
  try {
    const db = join(dir, 'bench.db');
    const key = await preparePeerDb(db);
    const { openLocal } = await built<LocalModule>('transports/cli/local.js');
    const { createMcpServer } = await built<McpModule>('transports/mcp/index.js');
    const { dispatchWithKey } = await built<IndexModule>('index.js');
    const pack = (await import(pathToFileURL(PEER_PACK).href)) as { SEARCH_SQL: string; COMPANY_ID: number };
    const local = await openLocal({ db, packFiles: [PEER_PACK], logLevel: 'error' });
    closers.push(() => local.close());
    const rt = local.rt;

    // The SDK side: McpServer, one tool, the same SQL on its own better-sqlite3 connection.
    const sqlite = new Database(db, { readonly: true });
    closers.push(async () => sqlite.close());
    const search = sqlite.prepare(pack.SEARCH_SQL);
    const sdk = new McpServer({ name: 'sdk', version: '1.0.0' });
    sdk.registerTool(
      'bench__search',
      { description: 'Search contacts by name.', inputSchema: { q: z.string() } },
      async ({ q }) => {
        const rows = search.all(pack.COMPANY_ID, `%${q}%`);
        const result = { entity_id: pack.COMPANY_ID, data: { matches: rows.length, contacts: rows } };
        return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
      },
    );
    const connect = async (server: { connect(t: InMemoryTransport): Promise<void> }) => {
      const client = new Client({ name: 'bench', version: '1.0.0' });
      const [a, b] = InMemoryTransport.createLinkedPair();
      await Promise.all([server.connect(a), client.connect(b)]);
      closers.unshift(() => client.close());
      return client;
    };
    const ours = await connect(createMcpServer(rt, { credentials: () => ({ apiKey: key }) }));
    const tool = (await ours.listTools()).tools.find((t) => t.name === 'bench__search');
    if (tool === undefined) throw new Error('our MCP server lists no bench__search');
    const sdkClient = await connect(sdk);
    // The adapter diagnostic: an SDK Server whose handler runs the pipeline with the same key.
    const raw = new Server({ name: 'raw', version: '1.0.0' }, { capabilities: { tools: {} } });
    raw.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [tool] }));
    raw.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => {
      const q = String((req.params.arguments as { q?: string } | undefined)?.q ?? '');
      const env = await dispatchWithKey(rt, { surface: 'mcp_stdio' }, key, 'bench.search', { q });
      return { content: [{ type: 'text', text: JSON.stringify(env.result) }], structuredContent: env.result };
    });
    const adapterClient = await connect(raw);
    await adapterClient.listTools();
    const call = (client: Client) => async () => {
      const r = (await client.callTool({
        name: 'bench__search',
        arguments: { q: 'smith' },
      })) as CallToolResult;
      if (r.isError) throw new Error(`bench call failed: ${JSON.stringify(r.content)}`);
    };
    const read = await abba(
      () => opsPerSecond(call(ours), ms),
      () => opsPerSecond(call(sdkClient), ms),
      rounds,
    );
    const adapter = await abba(
      () => opsPerSecond(call(ours), ms),
      () => opsPerSecond(call(adapterClient), ms),
      rounds,
    );
    const profDir = mkdtempSync(join(dir, 'prof-'));
    const readLayers = read.ratio < 0.9 ? await profiled(profDir, () => opsPerSecond(call(ours), ms, 0)) : [];

    // The confirmed write over Streamable HTTP: solid serve vs the SDK McpServer on node:http.
    const w = await measurePeer('sdk-node', db, key, dir, { ms, rounds, concurrency }, ['write']);
    const writeLayers =
      w.write.ratio < 0.5
        ? (await profileSolid(db, key, dir, { ms: ms * 2, concurrency }, ['write'])).write
        : [];
    const us = (x: number) => `${Math.round(x)} µs`;
    return [
      {
        id: 'mcp.read_vs_sdk',
        what: "tools/call of a read verb (contact search, 20 of 200 rows): our MCP server (dist createMcpServer, the client's API key resolved by the server) ÷ the SDK's own McpServer registering one tool that runs the same SQL on better-sqlite3; SDK Client, InMemoryTransport, sequential",
        value: read.value,
        baseline: read.baseline,
        ratio: read.ratio,
        unit: 'calls/s',
        target: 'ratio ≥ 0.9',
        met: read.ratio >= 0.9,
        notes: `${abbaNote(read)}, ${ms} ms each${readLayers.length ? `; our side's profile (this process, the client included): ${layersNote(readLayers)}` : ''}`,
      },
      {
        id: 'mcp.adapter_in_memory',
        what: 'diagnostic, the MCP adapter alone: tools/call through dist createMcpServer ÷ an SDK Server whose handler calls dist dispatchWithKey with the same key (same verb, same query); InMemoryTransport, sequential',
        value: adapter.value,
        baseline: adapter.baseline,
        ratio: adapter.ratio,
        unit: 'calls/s',
        notes: `${abbaNote(adapter)}, ${ms} ms each`,
      },
      {
        id: 'mcp.write_vs_sdk_careful',
        what: `a confirmed write over Streamable HTTP: \`solid serve\` (dist, API key; tools/call answered pending, then the call again with confirm + nonce _meta) ÷ the SDK's McpServer on node:http running the careful transaction (UPDATE + SHA-256-chained audit INSERT + idempotency row + ES256-signed receipt) in one tools/call; ${concurrency} callers on one session each, loopback`,
        value: w.write.value,
        baseline: w.write.baseline,
        ratio: w.write.ratio,
        unit: 'writes/s',
        target: 'ratio ≥ 0.5',
        met: w.write.ratio >= 0.5,
        notes: `${abbaNote(w.write)}, ${ms} ms each; server CPU per write: solid serve ${us(w.cpu.solidWrite)} (two calls), SDK ${us(w.cpu.peerWrite)}; both SQLite WAL, synchronous=FULL${writeLayers.length ? `; solid serve's profile: ${layersNote(writeLayers)}` : ''}`,
      },
    ];
  } finally {
    for (const c of closers) await c().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const quick = process.argv.includes('--quick');
  console.log(JSON.stringify(await benchMcp(quick ? { ms: 500, rounds: 2 } : {}), null, 2));
}
