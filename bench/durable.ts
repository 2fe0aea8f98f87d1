/**
 * Durable-mode benchmark (issue 11): write dispatches per second on SQLite with
 * `durability: 'full'` (synchronous=FULL: an fsync on every COMMIT), 16 concurrent callers,
 *
 *   - grouped:   group commit (the default of durable mode): concurrent dispatches share one
 *                COMMIT, each answered only after it returned;
 *   - ungrouped: the same store with `groupCommit: false`: one transaction and one fsync per write.
 *
 * Each op is an ungated write verb (one INSERT by the handler, audit row, idempotency claim with a
 * caller key, signed receipt). Both stores are fresh files in the same directory; the two variants
 * run alternately (`runs` pairs, medians). Target: grouped ≥ 4 × ungrouped. Also reported: the
 * mean group size (writes per COMMIT), the cost of one fsync on this disk measured between the
 * pairs (the ratio grouping can reach depends on it: a dispatch's own CPU is not shared), one
 * caller in durable mode, 16 callers in normal mode (synchronous=NORMAL) for scale, and normal
 * mode with group commit opted in against its default.
 *
 * Run alone: node --import tsx bench/durable.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import Database from 'better-sqlite3';
import { performance } from 'node:perf_hooks';
import type { Runtime } from '../src/runtime/runtime.ts';
import type { Principal } from '../src/spec/types.ts';
import { median, percentile, type BenchResult, fromDist } from './harness.ts';

const { createRuntime } = await fromDist<typeof import('../src/runtime/runtime.ts')>('runtime/runtime.js');
const { defineVerb } = await fromDist<typeof import('../src/runtime/verb.ts')>('runtime/verb.js');
const { SqliteStore } = await fromDist<typeof import('../src/store/sqlite/sqlite-store.ts')>(
  'store/sqlite/sqlite-store.js',
);

export interface DurableBenchOptions {
  /** Milliseconds per measured run (default 3000). */
  ms?: number;
  /** Alternating grouped/ungrouped pairs (default 3). */
  runs?: number;
  /** Concurrent callers (default 16). */
  concurrency?: number;
}

type SqliteStore = InstanceType<typeof SqliteStore>;

interface Setup {
  rt: Runtime;
  store: SqliteStore;
  principal: Principal;
}

async function setup(path: string, durability: 'full' | 'normal', groupCommit: boolean): Promise<Setup> {
  const store = new SqliteStore({ path, durability, groupCommit });
  const rt = await createRuntime({
    store,
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
    maintenanceIntervalMs: 0,
  });
  await store.migrate('bench-durable', [
    {
      version: 1,
      name: 'notes',
      sqlite:
        'CREATE TABLE bench_notes (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, body TEXT NOT NULL)',
    },
  ]);
  await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
  await rt.createTenant({ company_id: 2, name: 'Bench', tier: 'enterprise' });
  const principal = await rt.tenants.authenticate(
    await rt.createApiKey({ company_id: 2, user_id: 1, role: 'owner', agent_type: 'bench' }),
  );
  rt.register(
    defineVerb<{ body: string }>({
      name: 'bench.note_add',
      description: 'Add a note (no consent gate: measures the write path).',
      shape: 'receipt',
      category: 'bench',
      input: {
        type: 'object',
        properties: { body: { type: 'string' } },
        required: ['body'],
        additionalProperties: false,
      },
      delegateConsent: async () => ({ consentClass: null, roleFloor: 'employee', summary: 'Add a note.' }),
      async handler(ctx, a) {
        const r = await ctx.db.run('INSERT INTO bench_notes (company_id, body) VALUES (?, ?)', [
          ctx.principal.company_id,
          a.body,
        ]);
        return { note_id: r.lastInsertId };
      },
    }),
  );
  return { rt, store, principal };
}

let keySeq = 0;
function writer(s: Setup): () => Promise<void> {
  const caller = { principal: s.principal, surface: 'http' as const };
  return async () => {
    const n = ++keySeq;
    const env = await s.rt.dispatch(
      caller,
      'bench.note_add',
      { body: `note ${n}` },
      { idempotency_key: `durable-${n}` },
    );
    if (!env.ok) throw new Error(`bench.note_add failed: ${JSON.stringify(env.error)}`);
  };
}

/**
 * Measure a runtime: ops/s with `concurrency` callers, the writes per COMMIT during the run, and
 * the p99 latency (ms) of one dispatch.
 */
async function measure(
  s: Setup,
  concurrency: number,
  ms: number,
): Promise<{ ops: number; perCommit: number; p99: number }> {
  const before = s.store.commitStats;
  const one = writer(s);
  const lat: number[] = [];
  let n = 0;
  const start = performance.now();
  const end = start + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        await one();
        lat.push(performance.now() - t0);
        n++;
      }
    }),
  );
  const ops = (n * 1000) / (performance.now() - start);
  const after = s.store.commitStats;
  lat.sort((a, b) => a - b);
  return {
    ops,
    perCommit: (after.writes - before.writes) / Math.max(1, after.commits - before.commits),
    p99: percentile(lat, 99),
  };
}

/**
 * What one fsync costs on this disk right now: µs per one-row commit with synchronous=FULL minus
 * the same with NORMAL (WAL), on a scratch file in `dir`.
 */
function fsyncMicros(dir: string, n = 300): number {
  const per = (mode: 'FULL' | 'NORMAL') => {
    const db = new Database(join(dir, `fsync-${mode}.db`));
    try {
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${mode}`);
      db.exec('CREATE TABLE IF NOT EXISTS t (x)');
      const ins = db.prepare('INSERT INTO t VALUES (?)');
      for (let i = 0; i < 20; i++) ins.run(i);
      const t0 = performance.now();
      for (let i = 0; i < n; i++) ins.run(i);
      return ((performance.now() - t0) * 1000) / n;
    } finally {
      db.close();
    }
  };
  return Math.max(0, per('FULL') - per('NORMAL'));
}

/** Run the durable-mode benchmark; returns durable.group_commit, durable.one_caller, durable.normal_16, durable.normal_group_commit. */
export async function benchDurable(options: DurableBenchOptions = {}): Promise<BenchResult[]> {
  const ms = options.ms ?? 3000;
  const runs = options.runs ?? 3;
  const concurrency = options.concurrency ?? 16;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-durable-'));
  const open: Setup[] = [];
  try {
    const grouped = await setup(join(dir, 'grouped.db'), 'full', true);
    open.push(grouped);
    const ungrouped = await setup(join(dir, 'ungrouped.db'), 'full', false);
    open.push(ungrouped);
    // warm-up (JIT, statement caches, signing keys)
    await measure(grouped, concurrency, 300);
    await measure(ungrouped, concurrency, 300);
    const normal = await setup(join(dir, 'normal.db'), 'normal', false);
    open.push(normal);
    await measure(normal, concurrency, 300);
    const normalGrouped = await setup(join(dir, 'normal-grouped.db'), 'normal', true);
    open.push(normalGrouped);
    await measure(normalGrouped, concurrency, 300);
    const ng: number[] = [];
    const fullVsNormal: number[] = [];
    const p99n: number[] = [];
    const p99ng: number[] = [];
    const fsyncs: number[] = [];
    const g: number[] = [];
    const u: number[] = [];
    const n: number[] = [];
    const r: number[] = [];
    const sizes: number[] = [];
    for (let i = 0; i < runs; i++) {
      const ui = await measure(ungrouped, concurrency, ms);
      const gi = await measure(grouped, concurrency, ms);
      const ni = await measure(normal, concurrency, ms);
      const ngi = await measure(normalGrouped, concurrency, ms);
      ng.push(ngi.ops / ni.ops);
      fullVsNormal.push(gi.ops / ni.ops);
      p99n.push(ni.p99);
      p99ng.push(ngi.p99);
      u.push(ui.ops);
      g.push(gi.ops);
      n.push(ni.ops);
      r.push(gi.ops / ui.ops);
      sizes.push(gi.perCommit);
      fsyncs.push(fsyncMicros(dir));
    }
    const one = await measure(grouped, 1, ms);
    const ratio = median(r);
    const fsync = median(fsyncs);
    // The same dispatches with one commit each but no fsync (normal mode): what an infinitely fast
    // disk would give the ungrouped durable mode.
    const bound = median(n) / median(u);
    return [
      {
        id: 'durable.group_commit',
        what: `write dispatches/s in durable mode (synchronous=FULL), ${concurrency} concurrent callers: group commit vs one fsync per dispatch (groupCommit: false)`,
        value: median(g),
        baseline: median(u),
        ratio,
        unit: 'ops/s',
        notes: `median of ${runs} alternating pairs, ${ms} ms each; mean ${median(sizes).toFixed(1)} writes per COMMIT with grouping; each op = ungated write, audit row, idempotency claim, signed receipt; the same dispatches with one commit each and no fsync at all (normal mode) run at ${Math.round(median(n))}/s, so a free fsync would give ×${bound.toFixed(2)}: fsync waits are ${Math.round(100 * (1 - 1 / bound))} % of an ungrouped durable dispatch (${Math.round(1e6 / median(u))} µs); a one-row commit's fsync cost ${Math.round(fsync)} µs on this disk during the run (FULL minus NORMAL; ${fsyncs.map((x) => Math.round(x)).join(', ')})`,
      },
      {
        id: 'durable.full_vs_normal',
        what: `durable mode (synchronous=FULL) with group commit vs normal mode's one transaction per write (groupCommit: false), ${concurrency} callers`,
        value: median(g),
        baseline: median(n),
        ratio: median(fullVsNormal),
        unit: 'ops/s',
        notes: `median of the per-round ratios (${fullVsNormal.map((x) => x.toFixed(2)).join(', ')}): what turning fsync on costs once writers share commits`,
      },
      {
        id: 'durable.normal_group_commit_p99',
        what: `p99 latency (ms) of one write dispatch in normal mode with group commit vs without, ${concurrency} callers`,
        value: median(p99ng),
        baseline: median(p99n),
        ratio: median(p99ng) / median(p99n),
        unit: 'ms',
        notes: `per round with / without: ${p99ng.map((x, i) => `${x.toFixed(1)}/${p99n[i]!.toFixed(1)}`).join(', ')} ms`,
      },
      {
        id: 'durable.one_caller',
        what: 'write dispatches/s in durable mode, one caller (nothing to group: one fsync per dispatch)',
        value: one.ops,
        unit: 'ops/s',
        notes: `${one.perCommit.toFixed(1)} writes per COMMIT`,
      },
      {
        id: 'durable.normal_16',
        what: `write dispatches/s in normal mode (WAL, synchronous=NORMAL), ${concurrency} callers, for scale`,
        value: median(n),
        baseline: median(g),
        ratio: median(n) / median(g),
        unit: 'ops/s',
        notes: `ratio = normal mode (one commit per dispatch, no fsync) / durable mode with group commit; measured in the same ${runs} rounds`,
      },
      {
        id: 'durable.normal_group_commit',
        what: `normal mode with group commit opted in (SqliteStore groupCommit: true) vs normal mode's default one transaction per write, ${concurrency} callers`,
        value: median(ng),
        unit: '×',
        notes: `median of the per-round ratios (${ng.map((x) => x.toFixed(2)).join(', ')})`,
      },
    ];
  } finally {
    for (const s of open) await s.rt.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await benchDurable(), null, 2));
}
