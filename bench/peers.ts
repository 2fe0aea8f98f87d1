/**
 * "What users pick instead" (issue 36 item 1): `solid serve` (the built package, dist/) against
 * the MCP servers a SaaS team writes today without solid-verbs, on the same read and the same
 * write over Streamable HTTP, each server a separate plain-node process on its own copy of the
 * same SQLite file (bench/peer-server.mjs):
 *
 *   sdk_express / sdk_fastify / sdk_node   the official SDK's McpServer on Express, Fastify, node:http
 *   fastmcp                                 fastmcp's FastMCP with its httpStream transport
 *
 * The read: `bench__search {q}` (bench/peer-pack.mjs's bench.search: the same SQL on both sides).
 * The write: on solid serve a confirmed write as an MCP client does it — tools/call of
 * bench.set_phone (the pending answer with its nonce), then the same call with the confirm and
 * nonce `_meta` — against the peer's one tools/call running the careful transaction (UPDATE +
 * SHA-256-chained audit INSERT + idempotency row + ES256-signed receipt, one transaction). Every
 * client sends the API key (`Authorization: Bearer`); solid serve resolves it as it does for every
 * caller; the peers compare a token's SHA-256.
 *
 * The SDK's own Client drives both sides (one stateful session each, `concurrency` callers), in
 * ABBA rounds (harness.ts `abba`, ≥ 5 rounds for a published figure): the figure is solid ÷ peer,
 * min/median/max of the per-round ratios in the notes, with the server processes' CPU per op
 * (/proc/<pid>/stat utime + stime) on both sides. `profileDir`: run solid serve under --cpu-prof
 * and name its top layers (`topLayers`).
 *
 *   npm run build && npm run bench -- --only peers [--quick]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { abba, abbaNote, opsPerSecondConcurrent, type AbbaFigure, type BenchResult } from './harness.ts';
import { startServe, stopServe } from './serve-rss.ts';
import { built, requireDist } from './built.ts';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
/** The pack solid serve loads (`--pack`) and the peers share the SQL of. */
export const PEER_PACK = join(ROOT, 'bench', 'peer-pack.mjs');
const PEER_SERVER = join(ROOT, 'bench', 'peer-server.mjs');

/** The peers: an SDK McpServer on three HTTP stacks, and fastmcp. */
export const PEER_KINDS = ['sdk-express', 'sdk-fastify', 'sdk-node', 'fastmcp'] as const;
export type PeerKind = (typeof PEER_KINDS)[number] | 'fastify-bare';

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as import('node:net').AddressInfo).port;
      s.close(() => ok(port));
    });
  });
}

/**
 * A fresh database with the peer pack (dist's openLocal, as `solid init --pack` does), the bench
 * tenant (company 2, its daily cap of reversible writes raised as its operator would), its 200
 * contacts and an owner API key. Returns the key.
 */
export async function preparePeerDb(db: string): Promise<string> {
  requireDist();
  const { openLocal } =
    await built<typeof import('../src/transports/cli/local.ts')>('transports/cli/local.js');
  const pack = (await import(pathToFileURL(PEER_PACK).href)) as {
    COMPANY_ID: number;
    TABLE: string;
    contactRows(): unknown[][];
  };
  const local = await openLocal({ db, create: true, packFiles: [PEER_PACK], logLevel: 'error' });
  try {
    await local.rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' }).catch(() => {});
    await local.rt.createTenant({
      company_id: pack.COMPANY_ID,
      name: 'Bench',
      tier: 'enterprise',
      settings: { caps: { WRITE_REVERSIBLE: 1_000_000_000 } },
    });
    const key = await local.rt.createApiKey({
      company_id: pack.COMPANY_ID,
      user_id: 1,
      role: 'owner',
      agent_type: 'bench',
    });
    await local.rt.store.write(async (tx) => {
      for (const row of pack.contactRows())
        await tx.run(
          `INSERT INTO ${pack.TABLE} (id, company_id, name, email, phone) VALUES (?, ?, ?, ?, ?)`,
          row,
        );
    });
    return key;
  } finally {
    await local.close();
  }
}

/** A copy of a prepared database (and its key file) at `to`. */
export function copyDb(from: string, to: string): void {
  cpSync(from, to);
  if (existsSync(`${from}.keys.json`)) cpSync(`${from}.keys.json`, `${to}.keys.json`);
}

/** A server process under measurement: its pid, its MCP (or base) URL, stop(). */
export interface Served {
  pid: number;
  url: string;
  stop(): Promise<void>;
}

/**
 * `solid serve` of the built package on `db` with the peer pack, rate limits counting but never
 * refusing the bench's key. `cpuProfDir`: under `--cpu-prof` (written there at exit).
 */
export async function startSolid(db: string, cpuProfDir?: string): Promise<Served> {
  requireDist();
  const { child, base } = await startServe(
    db,
    ['--pack', PEER_PACK, '--rate-limit-key', '1000000000', '--rate-limit-address', '1000000000'],
    { SOLID_RUN: 'dist' },
    cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`],
  );
  return { pid: child.pid!, url: `${base}/mcp`, stop: () => stopServe(child) };
}

/** A peer server (bench/peer-server.mjs) of `kind` on `db`, answering the bearer `token`. */
export async function startPeer(
  kind: PeerKind,
  db: string,
  token: string,
  extra: Record<string, unknown> = {},
): Promise<Served> {
  const port = kind === 'fastmcp' ? await freePort() : 0;
  const child: ChildProcess = spawn(process.execPath, [PEER_SERVER], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      SOLID_PEER: JSON.stringify({ kind, db, token, port, ...extra }),
    },
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^ready (\S+)/m.exec(out);
      if (m) ok(m[1]!);
    });
    child.once('exit', (code) =>
      fail(new Error(`peer ${kind} exited (${code}) before ready:\n${out}\n${err}`)),
    );
  });
  return { pid: child.pid!, url, stop: () => stopServe(child) };
}

/** CPU time (user + system) a process has used, ms, from /proc/<pid>/stat (clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat(5): 11 and 12 after the name's ')'.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** An SDK Client on a Streamable HTTP URL with the API key, one session, tools listed once. */
export async function connectMcp(url: string, key: string): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  await client.listTools();
  return client;
}

/** One read: tools/call bench__search; throws on an error result. */
export const readOp = (client: Client) => async (): Promise<void> => {
  const r = (await client.callTool({ name: 'bench__search', arguments: { q: 'smith' } })) as CallToolResult;
  if (r.isError) throw new Error(`bench read failed: ${JSON.stringify(r.content)}`);
};

const META = 'dev.solid-verbs/';

/**
 * One confirmed write on solid serve as an MCP client does it: the call (answered pending with a
 * nonce in the envelope text block), then the same call with `_meta` confirm + nonce.
 */
export const solidWriteOp = (client: Client) => {
  let n = 0;
  return async (): Promise<void> => {
    const k = n++;
    const args = { id: (k % 200) + 1, phone: `+1${k}` };
    const pending = (await client.callTool({ name: 'bench__set_phone', arguments: args })) as CallToolResult;
    const text = (pending.content as Array<{ text?: string }> | undefined)?.[1]?.text;
    const env = text === undefined ? undefined : (JSON.parse(text) as { consent?: { nonce?: string } });
    const nonce = env?.consent?.nonce;
    if (nonce === undefined) throw new Error(`bench preflight gave no nonce: ${JSON.stringify(pending)}`);
    const done = (await client.callTool({
      name: 'bench__set_phone',
      arguments: args,
      _meta: { [`${META}confirm`]: true, [`${META}nonce`]: nonce },
    })) as CallToolResult;
    if (done.isError) throw new Error(`bench confirm failed: ${JSON.stringify(done.content)}`);
  };
};

/** One careful write on a peer: one tools/call bench__set_phone. */
export const peerWriteOp = (client: Client) => {
  let n = 0;
  return async (): Promise<void> => {
    const k = n++;
    const r = (await client.callTool({
      name: 'bench__set_phone',
      arguments: { id: (k % 200) + 1, phone: `+2${k}` },
    })) as CallToolResult;
    if (r.isError) throw new Error(`bench careful write failed: ${JSON.stringify(r.content)}`);
  };
};

/** ops/s of `op` with `concurrency` callers for `ms`, adding the server's CPU ms and ops to `acc`. */
export async function measured(
  pid: number,
  op: () => Promise<void>,
  concurrency: number,
  ms: number,
  acc: { cpu: number; ops: number },
): Promise<number> {
  // A short warm-up outside the count (JIT, prepared statements).
  await opsPerSecondConcurrent(op, concurrency, Math.min(300, ms / 4));
  const c0 = cpuMs(pid);
  const rate = await opsPerSecondConcurrent(op, concurrency, ms);
  acc.cpu += cpuMs(pid) - c0;
  acc.ops += (rate * ms) / 1000;
  return rate;
}

/** Server CPU µs per op of an accumulator. */
export const usPerOp = (acc: { cpu: number; ops: number }) =>
  acc.ops > 0 ? (acc.cpu * 1000) / acc.ops : NaN;

/** A self-time share of a CPU profile by layer: a dist/ directory, a package, node internals, GC. */
export interface LayerTime {
  layer: string;
  share: number;
}

function layerOfUrl(url: string, fn: string): string | undefined {
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(idle)') return 'idle';
  if (fn === '(program)' || fn === '(root)') return '(program)';
  if (url === '') return undefined;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + 14).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const d = url.indexOf('/dist/');
  if (d >= 0) {
    const parts = url.slice(d + 6).split('/');
    return `dist/${parts.slice(0, Math.min(parts.length - 1, 2)).join('/') || parts[0]}`;
  }
  if (url.startsWith('node:internal/crypto') || url === 'node:crypto') return 'node:crypto';
  if (url.startsWith('node:internal/modules')) return 'node module loading';
  // node:internal/webstreams/…, node:internal/streams/…, node:_http_server…: by their area.
  if (url.startsWith('node:internal/')) return `node:${url.slice(14).split('/')[0]!.replace(/\.js$/, '')}`;
  if (url.startsWith('node:_http')) return 'node:http';
  if (url.startsWith('node:')) return 'node internals';
  return 'other';
}

/**
 * The top `n` layers by self time of the .cpuprofile files in `dir` (idle left out): a frame
 * without a url (a native) counts for its caller's layer. `lastMs`: only the samples of the
 * profile's last `lastMs` milliseconds (a load that ran just before the process exited).
 */
export function topLayers(dir: string, n = 8, lastMs?: number): LayerTime[] {
  const totals = new Map<string, number>();
  let busy = 0;
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.cpuprofile'))) {
    const p = JSON.parse(readFileSync(join(dir, f), 'utf8')) as {
      nodes: Array<{ id: number; callFrame: { url: string; functionName: string }; children?: number[] }>;
      samples: number[];
      timeDeltas: number[];
      endTime: number;
      startTime: number;
    };
    const byId = new Map(p.nodes.map((x) => [x.id, x]));
    const parent = new Map<number, number>();
    for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
    const cache = new Map<number, string>();
    const layer = (id: number): string => {
      const hit = cache.get(id);
      if (hit !== undefined) return hit;
      const node = byId.get(id)!;
      let l = layerOfUrl(node.callFrame.url, node.callFrame.functionName);
      if (l === undefined) {
        const up = parent.get(id);
        l = up === undefined ? 'other' : layer(up);
        if (l === '(program)') l = 'native';
      }
      cache.set(id, l);
      return l;
    };
    // Only the samples of the last `lastMs` (the load, not the start-up) when asked.
    const from = lastMs === undefined ? -Infinity : p.endTime - lastMs * 1000;
    let t = p.startTime;
    for (const [i, s] of p.samples.entries()) {
      t += p.timeDeltas[i] ?? 0;
      if (t < from) continue;
      const l = layer(s);
      if (l === 'idle') continue;
      busy++;
      totals.set(l, (totals.get(l) ?? 0) + 1);
    }
  }
  return [...totals.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([layer, c]) => ({ layer, share: c / Math.max(1, busy) }));
}

/** "dist/runtime/ledger 23 %, better-sqlite3 12 %, …" */
export function layersNote(layers: LayerTime[]): string {
  return layers.map((l) => `${l.layer} ${Math.round(l.share * 100)} %`).join(', ');
}

export interface PeersOptions {
  /** Milliseconds per side and round (default 2000). */
  ms?: number;
  /** ABBA rounds (default 5). */
  rounds?: number;
  /** Concurrent callers on one session (default 8). */
  concurrency?: number;
  /** Peers to compare (default all of PEER_KINDS). */
  kinds?: readonly PeerKind[];
  /** Profile solid serve's side (--cpu-prof) once after the rounds and name its top layers. */
  profile?: boolean;
}

/** The figures of one peer: read and write, solid ÷ peer, with the server CPU per op. */
export interface PeerFigures {
  kind: PeerKind;
  read: AbbaFigure;
  write: AbbaFigure;
  cpu: { solidRead: number; peerRead: number; solidWrite: number; peerWrite: number };
  error?: string;
}

/**
 * Measure solid serve against one peer on copies of `seed`, read then write, in ABBA rounds.
 * Both servers run for the whole measurement; each side's clients are connected once.
 */
export async function measurePeer(
  kind: PeerKind,
  seed: string,
  key: string,
  dir: string,
  o: { ms: number; rounds: number; concurrency: number },
  parts: ReadonlyArray<'read' | 'write'> = ['read', 'write'],
): Promise<PeerFigures> {
  const solidDb = join(dir, `solid-${kind}.db`);
  const peerDb = join(dir, `peer-${kind}.db`);
  copyDb(seed, solidDb);
  copyDb(seed, peerDb);
  const solid = await startSolid(solidDb);
  const peer = await startPeer(kind, peerDb, key);
  const clients: Client[] = [];
  try {
    const sc = await connectMcp(solid.url, key);
    const pc = await connectMcp(peer.url, key);
    clients.push(sc, pc);
    const acc = {
      solidRead: { cpu: 0, ops: 0 },
      peerRead: { cpu: 0, ops: 0 },
      solidWrite: { cpu: 0, ops: 0 },
      peerWrite: { cpu: 0, ops: 0 },
    };
    const none: AbbaFigure = { value: NaN, baseline: NaN, ratio: NaN, min: NaN, max: NaN, ratios: [] };
    const read = parts.includes('read')
      ? await abba(
          () => measured(solid.pid, readOp(sc), o.concurrency, o.ms, acc.solidRead),
          () => measured(peer.pid, readOp(pc), o.concurrency, o.ms, acc.peerRead),
          o.rounds,
        )
      : none;
    const sw = solidWriteOp(sc);
    const pw = peerWriteOp(pc);
    const write = parts.includes('write')
      ? await abba(
          () => measured(solid.pid, sw, o.concurrency, o.ms, acc.solidWrite),
          () => measured(peer.pid, pw, o.concurrency, o.ms, acc.peerWrite),
          o.rounds,
        )
      : none;
    return {
      kind,
      read,
      write,
      cpu: {
        solidRead: usPerOp(acc.solidRead),
        peerRead: usPerOp(acc.peerRead),
        solidWrite: usPerOp(acc.solidWrite),
        peerWrite: usPerOp(acc.peerWrite),
      },
    };
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await solid.stop();
    await peer.stop();
  }
}

/**
 * Profile solid serve's side: the same read and confirmed write for `ms` each under --cpu-prof;
 * returns the top layers of each.
 */
export async function profileSolid(
  seed: string,
  key: string,
  dir: string,
  o: { ms: number; concurrency: number },
  parts: ReadonlyArray<'read' | 'write'> = ['read', 'write'],
): Promise<{ read: LayerTime[]; write: LayerTime[] }> {
  const out: { read: LayerTime[]; write: LayerTime[] } = { read: [], write: [] };
  for (const which of parts) {
    const db = join(dir, `prof-${which}.db`);
    copyDb(seed, db);
    const profDir = mkdtempSync(join(dir, `prof-${which}-`));
    const solid = await startSolid(db, profDir);
    const client = await connectMcp(solid.url, key);
    try {
      await opsPerSecondConcurrent(
        which === 'read' ? readOp(client) : solidWriteOp(client),
        o.concurrency,
        o.ms,
      );
    } finally {
      await client.close().catch(() => {});
      await solid.stop();
    }
    // The load's window (the process's start-up left out; its shutdown is short).
    out[which] = topLayers(profDir, 8, o.ms + 300);
  }
  return out;
}

const idOf = (kind: PeerKind) => kind.replace('-', '_');

/** The peers module: `peers.read.<kind>` and `peers.write.<kind>` for each peer, solid ÷ peer. */
export async function benchPeers(options: PeersOptions = {}): Promise<BenchResult[]> {
  const o = { ms: options.ms ?? 2000, rounds: options.rounds ?? 5, concurrency: options.concurrency ?? 8 };
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-peers-'));
  try {
    const seed = join(dir, 'seed.db');
    const key = await preparePeerDb(seed);
    const out: BenchResult[] = [];
    let profile: { read: LayerTime[]; write: LayerTime[] } | undefined;
    if (options.profile !== false)
      profile = await profileSolid(seed, key, dir, { ms: o.ms * 2, concurrency: o.concurrency });
    for (const kind of options.kinds ?? PEER_KINDS) {
      let f: PeerFigures;
      try {
        f = await measurePeer(kind, seed, key, dir, o);
      } catch (err) {
        const why = `could not run: ${(err as Error).message.split('\n')[0]}`;
        for (const what of ['read', 'write'])
          out.push({
            id: `peers.${what}.${idOf(kind)}`,
            what: `${what} vs ${kind}`,
            value: NaN,
            unit: 'calls/s',
            notes: why,
          });
        continue;
      }
      const us = (x: number) => `${Math.round(x)} µs`;
      const fastmcpNote =
        kind === 'fastmcp'
          ? '; fastmcp answers text content only (no structuredContent), on its own httpStream (mcp-proxy) transport'
          : '';
      out.push(
        {
          id: `peers.read.${idOf(kind)}`,
          what: `MCP tools/call of a read (contact search, 20 of 200 rows) over Streamable HTTP: solid serve (dist, API key, /mcp) ÷ ${kind} running the same SQL; ${o.concurrency} callers on one session each, loopback`,
          value: f.read.value,
          baseline: f.read.baseline,
          ratio: f.read.ratio,
          unit: 'calls/s',
          target: 'ratio ≥ 0.9',
          met: f.read.ratio >= 0.9,
          notes: `${abbaNote(f.read)}; server CPU per call: solid ${us(f.cpu.solidRead)}, ${kind} ${us(f.cpu.peerRead)}${fastmcpNote}${profile ? `; solid serve's profile (read): ${layersNote(profile.read)}` : ''}`,
        },
        {
          id: `peers.write.${idOf(kind)}`,
          what: `a confirmed write over Streamable HTTP: solid serve (dist, API key, tools/call answered pending + the call again with confirm and nonce _meta) ÷ ${kind} running the careful transaction (UPDATE + SHA-256-chained audit INSERT + idempotency row + ES256-signed receipt) in one tools/call; ${o.concurrency} callers on one session each`,
          value: f.write.value,
          baseline: f.write.baseline,
          ratio: f.write.ratio,
          unit: 'writes/s',
          target: 'ratio ≥ 0.5',
          met: f.write.ratio >= 0.5,
          notes: `${abbaNote(f.write)}; server CPU per write: solid ${us(f.cpu.solidWrite)} (two calls), ${kind} ${us(f.cpu.peerWrite)}; both SQLite WAL with synchronous=FULL${fastmcpNote}${profile ? `; solid serve's profile (write): ${layersNote(profile.write)}` : ''}`,
        },
      );
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const quick = process.argv.includes('--quick');
  console.log(JSON.stringify(await benchPeers(quick ? { ms: 500, rounds: 2 } : {}), null, 2));
}
