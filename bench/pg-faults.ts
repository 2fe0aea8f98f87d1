/**
 * PostgreSQL faults benchmark (issue 30 rows 1 and 2: the deadline figures): a healthy node's
 * answers while another node is frozen holding the tenant's head lock, and while the database
 * server is stalled. Real processes on a throwaway cluster this module starts itself (initdb +
 * pg_ctl, as the `postgres` user when run as root; skipped with the reason when no PostgreSQL
 * server binaries are found — set SOLID_TEST_PG_BIN, or see .ci/postgres.sh).
 *
 * The demo business is seeded into the cluster, with an owner API key and its daily cap of
 * reversible writes raised. Two `solid serve --database-url` processes of the built package
 * (dist/, `npm run build`; the sources through tsx when there is no build, said in the notes),
 * default limits, serve it: node A and node B. The load on B is `concurrency` closed-loop clients,
 * half confirmed writes (`crm.add_note`: preflight 202, then confirm with the nonce, each request
 * with the API key) and half reads (`crm_contacts_search`), all for the demo tenant.
 *
 * - `faults.pg_frozen_node_p99` / `_max`: A takes writes for the same tenant (4 clients); A is
 *   frozen with SIGSTOP at an instant when it holds the tenant's head row `FOR UPDATE` inside an
 *   open transaction (seen from pg_stat_activity/pg_locks: idle in transaction with a RowShareLock
 *   on tenant_heads, for ≥ 300 ms; else it is resumed and tried again), and stays frozen
 *   `frozenMs`. The figure: p99 (and max) in ms of the answers to B's requests that were in flight
 *   at any time during the freeze. The database
 *   cuts A's session off at `idle_in_transaction_session_timeout`; B's writes meanwhile wait at most
 *   `lock_timeout` and are answered 503 `store_unavailable` with Retry-After.
 * - `faults.pg_stall_p99` / `_max`: every PostgreSQL server process SIGSTOPped (no reset, no
 *   error: a server that stops answering) for `stallMs` while B is under the same load; p99 (and
 *   max) in ms of the answers to B's requests in flight at any time during the stall.
 *
 * Baseline: the requests sent and answered inside the calm phases (phases calm, frozen, calm,
 * stall). Ratio:
 * value ÷ the request deadline (10 s, `--request-timeout-ms`'s default); the target is value ≤ the
 * deadline. The notes count answers by status, answers that were not envelopes (or never came
 * within the client's 30 s guard, counted as 30 s), and 503 answers without Retry-After.
 *
 * Run alone: node --import tsx bench/pg-faults.ts [--quick]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { findPgBin, percentile, pgFaultsSkipReason, type BenchResult } from './harness.ts';
import { raiseCaps } from './serve-rss.ts';
import { built } from './built.ts';
import { startCluster, type Cluster } from './pg-cluster.ts';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const BIN = join(ROOT, 'bin', 'solid.js');
const BUILT = existsSync(join(ROOT, 'dist', 'transports', 'cli', 'main.js'));
/** The client's guard on one request; an answer that does not come is counted at this latency. */
const GUARD_MS = 30_000;

export interface PgFaultsBenchOptions {
  /** Milliseconds of each calm phase (default 8000). */
  calmMs?: number;
  /** How long node A stays frozen, ms (default 20000, as in the trial). */
  frozenMs?: number;
  /** How long the PostgreSQL server stays stopped, ms (default 15000). */
  stallMs?: number;
  /** Concurrent HTTP clients on the healthy node (default 8: 4 writing, 4 reading). */
  concurrency?: number;
}

interface Node {
  child: ChildProcess;
  base: string;
}

async function startNode(url: string, env: Record<string, string>): Promise<Node> {
  // serve's rate limits stay on (counting every call) but never refuse the bench's one key.
  const noRefusal = ['--rate-limit-key', '1000000000', '--rate-limit-address', '1000000000'];
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--database-url', url, ...noRefusal], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      SOLID_API_KEY: '',
      SOLID_LOG_LEVEL: 'error',
      SOLID_RUN: BUILT ? 'dist' : 'src',
      ...env,
    },
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const base = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /solid serve: ready on (http:\/\/\S+)/.exec(out);
      if (m) ok(m[1]!);
    });
    child.once('exit', (code) => fail(new Error(`solid serve exited (${code}) before ready:\n${err}`)));
  });
  return { child, base };
}

async function stopNode(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(t);
}

interface Answer {
  status: number;
  ms: number;
  envelope: boolean;
  retryAfter: boolean;
  body: Record<string, unknown>;
}

async function post(base: string, key: string, verb: string, body: unknown): Promise<Answer> {
  const t0 = performance.now();
  try {
    const res = await fetch(`${base}/api/v1/agent/dispatch/${verb}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(GUARD_MS),
    });
    const parsed = (await res.json().catch(() => null)) as Record<string, unknown> | null;
    const err = parsed?.error as { reason?: unknown; hint?: unknown } | undefined;
    const envelope =
      parsed !== null &&
      typeof parsed.ok === 'boolean' &&
      (parsed.ok === true ||
        res.status === 202 ||
        (typeof err?.reason === 'string' && typeof err.hint === 'string'));
    return {
      status: res.status,
      ms: performance.now() - t0,
      envelope,
      retryAfter: res.headers.get('retry-after') !== null,
      body: parsed ?? {},
    };
  } catch {
    return { status: 0, ms: GUARD_MS, envelope: false, retryAfter: false, body: {} };
  }
}

interface Tally {
  lat: number[];
  /** The write requests (preflights and confirmations) among them. */
  writes?: Tally;
  statuses: Map<number, number>;
  notEnvelope: number;
  noRetryAfter: number;
}

const tally = (writes = true): Tally => ({
  lat: [],
  statuses: new Map(),
  notEnvelope: 0,
  noRetryAfter: 0,
  ...(writes ? { writes: tally(false) } : {}),
});

function count(t: Tally | undefined, a: Answer): void {
  if (t === undefined) return;
  t.lat.push(a.ms);
  t.statuses.set(a.status, (t.statuses.get(a.status) ?? 0) + 1);
  if (!a.envelope) t.notEnvelope++;
  if (a.status === 503 && !a.retryAfter) t.noRetryAfter++;
}

let seq = 0;

/** One request of the load: when it was sent and answered (performance.now() ms), and its answer. */
interface Logged {
  t0: number;
  t1: number;
  write: boolean;
  a: Answer;
}

/**
 * Closed-loop clients on `base` until `stop()`: even-numbered clients confirmed writes, odd ones
 * reads (or every client writes with `writesOnly`). Every request is appended to `log` (when
 * given); the phases are cut from it afterwards by time.
 */
function drive(
  base: string,
  key: string,
  contactId: number,
  clients: number,
  log: Logged[] | undefined,
  writesOnly = false,
): { stop(): Promise<void> } {
  let running = true;
  const call = async (verb: string, body: unknown, write: boolean): Promise<Answer> => {
    const t0 = performance.now();
    const a = await post(base, key, verb, body);
    log?.push({ t0, t1: performance.now(), write, a });
    return a;
  };
  const workers = Array.from({ length: clients }, async (_, w) => {
    while (running) {
      if (writesOnly || w % 2 === 0) {
        const args = { contact_id: contactId, body: `bench-pg-faults-${++seq}` };
        const pre = await call('crm.add_note', { args }, true);
        if (pre.status === 202) {
          const nonce = (pre.body.consent as { nonce: string }).nonce;
          await call('crm.add_note', { args, confirm: true, nonce }, true);
        } else if (pre.status !== 200) await new Promise((r) => setTimeout(r, 100));
      } else {
        const a = await call('crm_contacts_search', { args: { query: 'a' } }, false);
        if (a.status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}

/**
 * The tally of the logged requests that overlap `[from, to]` (a fault window: any request in
 * flight while the fault lasted), or with `within`, that were sent and answered inside one of the
 * windows (calm phases).
 */
function cut(log: Logged[], windows: Array<[number, number]>, within = false): Tally {
  const t = tally();
  for (const x of log) {
    const hit = windows.some(([from, to]) =>
      within ? x.t0 >= from && x.t1 <= to : x.t0 <= to && x.t1 >= from,
    );
    if (!hit) continue;
    count(t, x.a);
    if (x.write) count(t.writes, x.a);
  }
  return merge(t);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Freeze `node` at an instant when one of its sessions holds tenant_heads FOR UPDATE, idle in its transaction. */
async function freezeHoldingLock(
  node: Node,
  url: string,
): Promise<{ attempt: number; query: string; stoppedAt: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for (let attempt = 1; attempt <= 60; attempt++) {
      node.child.kill('SIGSTOP');
      const stoppedAt = performance.now();
      await sleep(300);
      const { rows } = await c.query(
        `SELECT a.query, a.pid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
          WHERE a.state = 'idle in transaction' AND a.state_change < now() - interval '250 milliseconds'
            AND l.granted AND l.mode = 'RowShareLock'
            AND l.relation IN (SELECT oid FROM pg_class WHERE relname = 'tenant_heads')`,
      );
      if (rows.length > 0) {
        return { attempt, query: String((rows[0] as { query: string }).query), stoppedAt };
      }
      node.child.kill('SIGCONT');
      await sleep(50 + Math.random() * 150);
    }
  } finally {
    await c.end();
  }
  throw new Error('node A was never caught holding the tenant lock in 60 tries');
}

/** Sessions waiting on a lock now. */
async function lockWaiters(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'`,
    );
    return (rows[0] as { n: number }).n;
  } finally {
    await c.end();
  }
}

const statusText = (m: Map<number, number>) =>
  [...m.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([s, n]) => `${n}×${s}`)
    .join(', ');

function merge(...ts: Tally[]): Tally {
  const out = tally(false);
  for (const t of ts) {
    out.lat.push(...t.lat);
    for (const [s, n] of t.statuses) out.statuses.set(s, (out.statuses.get(s) ?? 0) + n);
    out.notEnvelope += t.notEnvelope;
    out.noRetryAfter += t.noRetryAfter;
  }
  out.lat.sort((a, b) => a - b);
  const writes = ts.flatMap((t) => (t.writes === undefined ? [] : [t.writes]));
  if (writes.length > 0) out.writes = merge(...writes);
  return out;
}

/** Run the PostgreSQL faults benchmark; returns the figures listed in the header. */
export async function benchPgFaults(options: PgFaultsBenchOptions = {}): Promise<BenchResult[]> {
  const pgBin = findPgBin();
  if (pgBin === undefined) throw new Error(pgFaultsSkipReason());
  const calmMs = options.calmMs ?? 8000;
  const frozenMs = options.frozenMs ?? 20_000;
  const stallMs = options.stallMs ?? 15_000;
  const concurrency = options.concurrency ?? 8;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-pgfaults-'));
  const nodes: Node[] = [];
  let cluster: Cluster | undefined;
  const keyfile = join(dir, 'keys', 'postgres.keys.json');
  const savedKeyfile = process.env.SOLID_KEYFILE;
  try {
    cluster = await startCluster({ pgBin });
    const { openLocal } =
      await built<typeof import('../src/transports/cli/local.ts')>('transports/cli/local.js');
    const { DEMO_TENANTS } = await built<typeof import('../src/business/pack.ts')>('business/pack.js');
    const { DEFAULT_REQUEST_TIMEOUT_MS } = await built<typeof import('../src/transports/http/deadline.ts')>(
      'transports/http/deadline.js',
    );
    // Seed the demo business (its pack recorded in the database), an owner key, the cap raised.
    process.env.SOLID_KEYFILE = keyfile;
    const local = await openLocal({ db: cluster.url, create: true, packs: ['demo'], logLevel: 'error' });
    let key: string;
    let contactId: number;
    try {
      const pack = local.packs.find((p) => p.name === 'demo');
      if (pack?.seed === undefined) throw new Error('the demo pack is not available');
      const facts = (await pack.seed(local.rt, {})) as { fixtures?: { customer_id?: number } };
      contactId = facts.fixtures!.customer_id!;
      key = await local.rt.createApiKey({
        company_id: DEMO_TENANTS.main.company_id,
        user_id: 1,
        role: 'owner',
        agent_type: 'bench',
      });
    } finally {
      await local.close();
    }
    await raiseCaps(cluster.url, DEMO_TENANTS.main.company_id, { WRITE_REVERSIBLE: 1_000_000 });
    const env = { SOLID_KEYFILE: keyfile };
    const a = await startNode(cluster.url, env);
    nodes.push(a);
    const b = await startNode(cluster.url, env);
    nodes.push(b);

    const log: Logged[] = [];
    const onB = drive(b.base, key, contactId, concurrency, log);
    const onA = drive(a.base, key, contactId, 4, undefined, true);
    await sleep(2000); // warm-up, not counted

    const calm1: [number, number] = [performance.now(), 0];
    await sleep(calmMs);
    calm1[1] = performance.now();

    // (a) node A frozen holding the tenant's head lock: B's requests in flight meanwhile.
    const caught = await freezeHoldingLock(a, cluster.url);
    await sleep(1000);
    const waiting = await lockWaiters(cluster.url);
    await sleep(Math.max(0, frozenMs / 2 - (performance.now() - caught.stoppedAt)));
    const ready = await fetch(`${b.base}/readyz`, { signal: AbortSignal.timeout(GUARD_MS) })
      .then((r) => r.status)
      .catch(() => 0);
    await sleep(Math.max(0, frozenMs - (performance.now() - caught.stoppedAt)));
    a.child.kill('SIGCONT');
    const frozenWindow: [number, number] = [caught.stoppedAt, performance.now()];
    await onA.stop();
    await sleep(1000);

    const calm2: [number, number] = [performance.now(), 0];
    await sleep(calmMs);
    calm2[1] = performance.now();

    // (b) the PostgreSQL server stalled: B's requests in flight meanwhile.
    cluster.stall();
    const stallStarted = performance.now();
    await sleep(stallMs / 2);
    const r0 = performance.now();
    const stallReady = await fetch(`${b.base}/readyz`, { signal: AbortSignal.timeout(GUARD_MS) })
      .then((r) => r.status)
      .catch(() => 0);
    const stallReadyMs = performance.now() - r0;
    await sleep(Math.max(0, stallMs - (performance.now() - stallStarted)));
    cluster.resume();
    const stallWindow: [number, number] = [stallStarted, performance.now()];
    const stalledFor = stallWindow[1] - stallWindow[0];
    await onB.stop();

    const calm = cut(log, [calm1, calm2], true);
    const frozen = cut(log, [frozenWindow]);
    const stall = cut(log, [stallWindow]);
    const where = BUILT
      ? 'the built server (dist/)'
      : 'the sources through tsx (no dist/: npm run build first for the shipped figure)';
    const describe = (t: Tally) =>
      `${t.lat.length} answers (${statusText(t.statuses)}), ${t.notEnvelope} not an envelope or not answered within ${GUARD_MS / 1000} s, ${t.noRetryAfter} 503 without Retry-After, max ${Math.round(t.lat.at(-1) ?? 0)} ms` +
      (t.writes === undefined || t.writes.lat.length === 0
        ? ''
        : `; its ${t.writes.lat.length} write requests (${statusText(t.writes.statuses)}): p99 ${Math.round(percentile(t.writes.lat, 99))} ms`);
    const figure = (
      id: string,
      what: string,
      t: Tally,
      pick: (t: Tally) => number,
      notes: string,
    ): BenchResult => ({
      id,
      what,
      value: pick(t),
      baseline: pick(calm),
      ratio: pick(t) / DEFAULT_REQUEST_TIMEOUT_MS,
      unit: 'ms',
      notes: `ratio = value ÷ the request deadline (${DEFAULT_REQUEST_TIMEOUT_MS} ms); ${notes}; calm: ${describe(calm)}; ${where}`,
    });
    const p99 = (t: Tally) => percentile(t.lat, 99);
    const max = (t: Tally) => t.lat.at(-1) ?? 0;
    const frozenNotes = `during the freeze: ${describe(frozen)}; node A caught idle in its transaction holding tenant_heads at try ${caught.attempt} (its last statement: ${caught.query.replace(/\s+/g, ' ').slice(0, 60)}); 1 s into the freeze ${waiting} sessions waited on a lock; B's /readyz mid-freeze ${ready}; ${concurrency} clients on B (half confirmed writes, half reads), 4 writing on A`;
    const stallNotes = `during the stall: ${describe(stall)}; the server stopped ${Math.round(stalledFor)} ms; B's /readyz mid-stall ${stallReady} in ${Math.round(stallReadyMs)} ms; ${concurrency} clients on B (half confirmed writes, half reads)`;
    return [
      figure(
        'faults.pg_frozen_node_p99',
        `p99 (ms) of a healthy node's answers (solid serve, PostgreSQL, API key, reads and preflight+confirm writes) while another node is frozen (SIGSTOP) ${frozenMs / 1000} s holding the tenant's head lock, vs the same load with nothing wrong`,
        frozen,
        p99,
        frozenNotes,
      ),
      figure(
        'faults.pg_frozen_node_max',
        `the slowest of those answers (ms) while the other node is frozen, vs the slowest calm answer`,
        frozen,
        max,
        frozenNotes,
      ),
      figure(
        'faults.pg_stall_p99',
        `p99 (ms) of a node's answers (same load) while every PostgreSQL server process is stopped (SIGSTOP, no reset) for ${stallMs / 1000} s, vs the same load with nothing wrong`,
        stall,
        p99,
        stallNotes,
      ),
      figure(
        'faults.pg_stall_max',
        `the slowest of those answers (ms) while the database is stalled, vs the slowest calm answer`,
        stall,
        max,
        stallNotes,
      ),
    ];
  } finally {
    if (savedKeyfile === undefined) delete process.env.SOLID_KEYFILE;
    else process.env.SOLID_KEYFILE = savedKeyfile;
    cluster?.resume();
    for (const n of nodes) await stopNode(n.child).catch(() => {});
    cluster?.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const quick = process.argv.includes('--quick');
  const skip = pgFaultsSkipReason();
  if (skip !== undefined) {
    console.log(`skipped: ${skip}`);
  } else {
    console.log(
      JSON.stringify(
        await benchPgFaults(quick ? { calmMs: 3000, frozenMs: 10_000, stallMs: 10_000 } : {}),
        null,
        2,
      ),
    );
  }
}
