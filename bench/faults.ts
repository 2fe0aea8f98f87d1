/**
 * Faults benchmark (issue 30 rows 4, 6 and the deadline figures): the built server (dist/, `npm
 * run build`; the sources through tsx when there is no build, said in the notes) as `solid serve`
 * processes on copies of one seeded demo database, driven over HTTP from this process.
 *
 * - `faults.durability_default`: confirmed write dispatches/s (`crm.add_note`, preflight +
 *   confirm, the demo tenant's daily cap raised, `concurrency` clients) of `solid serve` in its default durability (full:
 *   synchronous=FULL, a receipt is durable) ÷ the same with `--durability normal`, two servers
 *   measured in ABBA order (`runs` rounds of A B B A), medians of the per-pair ratios. Also the
 *   p99 (ms) of a confirmation in each mode.
 * - `faults.refused_body_keyed` / `faults.refused_body_keyless`: the time (ms) until the refusal
 *   of one worst-case body (a `crm.add_note` call whose `args` hold 50,000 keys, ≈ 540 KB) with a
 *   valid API key and without one, sequential requests, median; the baseline is a bare Fastify
 *   process that parses the same body and answers 400, measured alternately in the same run.
 *   Target (issue 30 row 6): ≤ 20 ms.
 * - `faults.stall_p99`: p99 (ms) of a healthy node's answers (a mix of reads and confirmed writes,
 *   `concurrency` clients) while another process holds SQLite's write lock (`BEGIN IMMEDIATE`,
 *   held `stallMs`: a stalled writer; the PostgreSQL variants are in test/postgres/deadlines.test.ts),
 *   against the same load without it (ABBA), with how the answers split by status. Target: at most
 *   the request deadline (10 s, the default of `--request-timeout-ms`).
 *
 * Run alone: node --import tsx bench/faults.ts [--quick]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, percentile, type BenchResult, fromDist } from './harness.ts';
import { raiseCaps, seedDemoFacts, startServe, stopServe } from './serve-rss.ts';

const { DEMO_TENANTS } = await fromDist<typeof import('../src/business/pack.ts')>('business/pack.js');
const { DEFAULT_REQUEST_TIMEOUT_MS } = await fromDist<typeof import('../src/transports/http/deadline.ts')>(
  'transports/http/deadline.js',
);

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const BUILT = existsSync(join(ROOT, 'dist', 'transports', 'cli', 'main.js'));
const RUN = { SOLID_RUN: BUILT ? 'dist' : 'src' };
/** serve's rate limits stay on (counting every call) but never refuse the bench's one key. */
const NO_REFUSAL = ['--rate-limit-key', '1000000000', '--rate-limit-address', '1000000000'];

export interface FaultsBenchOptions {
  /** Milliseconds per measured durability phase (default 3000). */
  ms?: number;
  /** ABBA rounds (default 2). */
  runs?: number;
  /** Concurrent HTTP clients (default 8). */
  concurrency?: number;
  /** Refused worst-case bodies sent per measurement (default 10). */
  bodies?: number;
  /** How long the lock holder holds SQLite's write lock, ms (default 8000). */
  stallMs?: number;
}

interface Served {
  child: ChildProcess;
  base: string;
}

interface Client {
  base: string;
  key: string;
  contactId: number;
}

async function post(
  c: Client,
  verb: string,
  body: unknown,
  key: string | undefined = c.key,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  const res = await fetch(`${c.base}/api/v1/agent/dispatch/${verb}`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

let seq = 0;
/** One confirmed write (preflight + confirm); resolves with the last status and the ms of both. */
async function confirmedWrite(c: Client): Promise<{ status: number; ms: number }> {
  const args = { contact_id: c.contactId, body: `bench-faults-${++seq}` };
  const t0 = performance.now();
  const pre = await post(c, 'crm.add_note', { args });
  if (pre.status !== 202) return { status: pre.status, ms: performance.now() - t0 };
  const nonce = (pre.body.consent as { nonce: string }).nonce;
  const done = await post(c, 'crm.add_note', { args, confirm: true, nonce });
  return { status: done.status, ms: performance.now() - t0 };
}

/** `concurrency` clients calling `op` for `ms`; every answer's status and latency (ms). */
async function load(
  concurrency: number,
  ms: number,
  op: (i: number) => Promise<{ status: number; ms: number }>,
): Promise<{ lat: number[]; statuses: Map<number, number>; seconds: number }> {
  const lat: number[] = [];
  const statuses = new Map<number, number>();
  const start = performance.now();
  const end = start + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        const a = await op(w + i);
        lat.push(a.ms);
        statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      }
    }),
  );
  lat.sort((a, b) => a - b);
  return { lat, statuses, seconds: (performance.now() - start) / 1000 };
}

/** `{"args":{"contact_id":…,"body":"…","k00000":0,…}}`: `keys` extra keys (≈ 11 bytes each). */
function worstBody(contactId: number, keys: number): string {
  const parts = [`"contact_id":${contactId}`, '"body":"worst case"'];
  for (let i = 0; i < keys; i++) parts.push(`"k${String(i).padStart(5, '0')}":0`);
  return `{"args":{${parts.join(',')}}}`;
}

/** A bare Fastify process (this checkout's fastify) that parses a JSON body and answers 400. */
async function startBare(): Promise<Served> {
  const code = `
    import Fastify from 'fastify';
    const app = Fastify({ bodyLimit: 1048576 });
    app.post('/api/v1/agent/dispatch/:verb', async (req, reply) =>
      reply.code(400).send({ ok: false, error: { reason: 'invalid_input', message: 'refused', hint: 'bare' } }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    console.log('ready ' + app.server.address().port);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /ready (\d+)/.exec(out);
      if (m) ok(Number(m[1]));
    });
    child.once('exit', (c) => fail(new Error(`the bare server exited (${c})`)));
  });
  return { child, base: `http://127.0.0.1:${port}` };
}

/** Hold SQLite's write lock on `db` from another process for `ms`; resolves once it holds it. */
async function holdWriteLock(db: string, ms: number): Promise<{ released: Promise<void> }> {
  const code = `
    import Database from 'better-sqlite3';
    const db = new Database(process.argv[1]);
    db.exec('BEGIN IMMEDIATE');
    console.log('locked');
    setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, Number(process.argv[2]));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code, db, String(ms)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const released = new Promise<void>((r) => child.once('exit', () => r()));
  await new Promise<void>((ok, fail) => {
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('locked')) ok();
    });
    child.once('exit', (c) => fail(new Error(`the lock holder exited (${c}) before locking`)));
  });
  return { released }; // not the bare promise: an async function's caller would await it
}

const statusText = (m: Map<number, number>) =>
  [...m.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([s, n]) => `${n}×${s}`)
    .join(', ');

/** Run the faults benchmark; returns the figures listed in the header. */
export async function benchFaults(options: FaultsBenchOptions = {}): Promise<BenchResult[]> {
  const ms = options.ms ?? 3000;
  const runs = options.runs ?? 2;
  const concurrency = options.concurrency ?? 8;
  const bodies = options.bodies ?? 10;
  const stallMs = options.stallMs ?? 8000;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-faults-'));
  const open: ChildProcess[] = [];
  try {
    const seeded = join(dir, 'seed');
    const { key, customerId } = await seedDemoFacts(join(seeded, 'solid.db'));
    // The demo tenant's daily cap of 100 reversible writes would refuse the load (429).
    await raiseCaps(join(seeded, 'solid.db'), DEMO_TENANTS.main.company_id, { WRITE_REVERSIBLE: 1_000_000 });
    cpSync(seeded, join(dir, 'full'), { recursive: true });
    cpSync(seeded, join(dir, 'normal'), { recursive: true });
    const fullDb = join(dir, 'full', 'solid.db');
    const full = await startServe(fullDb, NO_REFUSAL, RUN);
    open.push(full.child);
    const normal = await startServe(
      join(dir, 'normal', 'solid.db'),
      ['--durability', 'normal', ...NO_REFUSAL],
      RUN,
    );
    open.push(normal.child);
    const cFull: Client = { base: full.base, key, contactId: customerId };
    const cNormal: Client = { ...cFull, base: normal.base };

    // 1. Default durability vs --durability normal, ABBA.
    const writes = (c: Client, t: number) => load(concurrency, t, () => confirmedWrite(c));
    await writes(cFull, 500);
    await writes(cNormal, 500);
    const ratios: number[] = [];
    const opsFull: number[] = [];
    const opsNormal: number[] = [];
    const p99Full: number[] = [];
    const p99Normal: number[] = [];
    for (let r = 0; r < runs; r++) {
      const order = [cFull, cNormal, cNormal, cFull];
      const got = new Map<Client, number[]>([
        [cFull, []],
        [cNormal, []],
      ]);
      for (const c of order) {
        const m = await writes(c, ms);
        const ok = m.statuses.get(200) ?? 0;
        got.get(c)!.push(ok / m.seconds);
        (c === cFull ? p99Full : p99Normal).push(percentile(m.lat, 99));
      }
      const f = median(got.get(cFull)!);
      const n = median(got.get(cNormal)!);
      opsFull.push(f);
      opsNormal.push(n);
      ratios.push(f / n);
    }
    await stopServe(normal.child);

    // 2. A refused worst-case body: solid serve vs a bare Fastify parse, alternately.
    const body = worstBody(cFull.contactId, 50_000);
    const bare = await startBare();
    open.push(bare.child);
    const cBare: Client = { ...cFull, base: bare.base };
    const refusal = async (c: Client, withKey: boolean) => {
      const t0 = performance.now();
      const a = await post(c, 'crm.add_note', body, withKey ? c.key : undefined);
      if (a.status < 400) throw new Error(`the worst-case body was not refused: ${a.status}`);
      return {
        ms: performance.now() - t0,
        status: a.status,
        reason: (a.body.error as { reason?: string })?.reason,
      };
    };
    const refusedFigures: BenchResult[] = [];
    for (const withKey of [true, false]) {
      await refusal(cFull, withKey);
      await refusal(cBare, withKey);
      const sys: number[] = [];
      const base: number[] = [];
      let reason: string | undefined;
      let status = 0;
      for (let i = 0; i < bodies; i++) {
        base.push((await refusal(cBare, withKey)).ms);
        const s = await refusal(cFull, withKey);
        sys.push(s.ms);
        reason = s.reason;
        status = s.status;
      }
      const v = median(sys);
      const b = median(base);
      refusedFigures.push({
        id: withKey ? 'faults.refused_body_keyed' : 'faults.refused_body_keyless',
        what: `ms until solid serve refuses one ${Math.round(body.length / 1000)} KB body with 50,000 keys in args (crm.add_note, ${withKey ? 'a valid API key' : 'no API key'}) vs a bare Fastify parse + 400`,
        value: v,
        baseline: b,
        ratio: v / b,
        unit: 'ms',
        notes: `median of ${bodies} sequential requests each; answered ${status} ${reason ?? ''}; slowest ${Math.max(...sys).toFixed(1)} ms`,
      });
    }
    await stopServe(bare.child);

    // 3. A healthy node's answers while another process holds SQLite's write lock (ABBA).
    let readLat: number[] = [];
    const mixed = (i: number) =>
      i % 2 === 0
        ? confirmedWrite(cFull)
        : (async () => {
            const t0 = performance.now();
            const a = await post(cFull, 'crm_contacts_search', { args: { query: 'a' } });
            readLat.push(performance.now() - t0);
            return { status: a.status, ms: performance.now() - t0 };
          })();
    const calmReads: number[] = [];
    const stalledReads: number[] = [];
    const calm: Array<Awaited<ReturnType<typeof load>>> = [];
    const stalled: Array<Awaited<ReturnType<typeof load>>> = [];
    for (const phase of ['calm', 'stall', 'stall', 'calm'] as const) {
      readLat = phase === 'calm' ? calmReads : stalledReads;
      if (phase === 'calm') calm.push(await load(concurrency / 2, stallMs, mixed));
      else {
        const { released } = await holdWriteLock(fullDb, stallMs);
        stalled.push(await load(concurrency / 2, stallMs, mixed));
        await released;
      }
    }
    const merge = (xs: typeof calm) => {
      const lat = xs.flatMap((x) => x.lat).sort((a, b) => a - b);
      const statuses = new Map<number, number>();
      for (const x of xs) for (const [s, n] of x.statuses) statuses.set(s, (statuses.get(s) ?? 0) + n);
      return { lat, statuses };
    };
    const c = merge(calm);
    const s = merge(stalled);
    await stopServe(full.child);

    const where = BUILT
      ? 'the built server (dist/)'
      : 'the sources through tsx (no dist/: npm run build first for the shipped figure)';
    return [
      {
        id: 'faults.durability_default',
        what: `confirmed write dispatches/s over HTTP (crm.add_note, ${concurrency} clients) of solid serve's default durability (full) vs --durability normal`,
        value: median(opsFull),
        baseline: median(opsNormal),
        ratio: median(ratios),
        unit: 'ops/s',
        notes: `${runs} ABBA rounds of ${ms} ms phases, per-round ratios ${ratios.map((x) => x.toFixed(2)).join(', ')}; p99 of a confirmed write (two requests) ${median(p99Full).toFixed(1)} ms (full) vs ${median(p99Normal).toFixed(1)} ms (normal); ${where}`,
      },
      ...refusedFigures,
      {
        id: 'faults.stall_p99',
        what: `p99 (ms) of a healthy node's answers (reads and confirmed writes, ${concurrency / 2} clients) while another process holds SQLite's write lock for ${stallMs} ms, vs the same load without it`,
        value: percentile(s.lat, 99),
        baseline: percentile(c.lat, 99),
        ratio: percentile(s.lat, 99) / DEFAULT_REQUEST_TIMEOUT_MS,
        unit: 'ms',
        notes: `ratio = p99 ÷ the request deadline (${DEFAULT_REQUEST_TIMEOUT_MS} ms); stalled: ${s.lat.length} answers (${statusText(s.statuses)}), max ${Math.round(s.lat.at(-1) ?? 0)} ms; calm: ${c.lat.length} (${statusText(c.statuses)}); phases calm, stall, stall, calm; a write waits for the lock (asynchronously) up to 5 s, then 503; ${where}`,
      },
      {
        id: 'faults.stall_read_p99',
        what: `p99 (ms) of the same node's reads (crm_contacts_search) while another process holds SQLite's write lock, vs its reads without it`,
        value: percentile(
          stalledReads.sort((a, b) => a - b),
          99,
        ),
        baseline: percentile(
          calmReads.sort((a, b) => a - b),
          99,
        ),
        ratio:
          percentile(
            stalledReads.sort((a, b) => a - b),
            99,
          ) /
          percentile(
            calmReads.sort((a, b) => a - b),
            99,
          ),
        unit: 'ms',
        notes: `${stalledReads.length} reads stalled, ${calmReads.length} calm (the closed-loop clients spend the stall mostly waiting on writes); the event loop stays free while a write waits for the lock; ${where}`,
      },
    ];
  } finally {
    for (const child of open) await stopServe(child).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const quick = process.argv.includes('--quick');
  console.log(
    JSON.stringify(await benchFaults(quick ? { ms: 1000, runs: 1, bodies: 3, stallMs: 6000 } : {}), null, 2),
  );
}
