/**
 * PostgreSQL benchmark (issue 10): write-dispatch throughput — confirmed WRITE_REVERSIBLE calls,
 * each a pending round (one audit row) plus the confirmed execute (nonce burn, cap count, handler
 * insert, audit row, event, idempotency claim, signed receipt) — on
 *
 *   - the embedded engine (SQLite file, durability normal) in one node process,
 *   - PostgreSQL with one node process,
 *   - PostgreSQL with two node processes on the same database and tenant,
 *   - PostgreSQL with two node processes, each writing to its own tenant,
 *
 * each node a separate process driving `rt.dispatch` in-process with `concurrency` callers for
 * `ms` milliseconds, all nodes starting at the same instant. The figure is confirmed writes/s
 * summed over the nodes. The machine's core count is reported with the results: on 2 cores the
 * PostgreSQL server competes with the nodes for CPU, so a second node mostly shows that nothing
 * serializes across nodes except the tenant's chain lock. synchronous_commit is on (the engine's
 * default); the test cluster of .ci/postgres.sh runs with fsync off, so disk flushes are not measured.
 *
 *   SOLID_TEST_DATABASE_URL=postgres://… node --import tsx bench/postgres.ts
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import pino from 'pino';
import { createRuntime, type Runtime } from '../src/runtime/runtime.ts';
import { loadSecrets } from '../src/runtime/secrets.ts';
import { defineVerb } from '../src/runtime/verb.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { Migration, Store } from '../src/store/store.ts';
import { systemVerbs } from '../src/verbs/index.ts';

/** One measured figure (the same fields as the other bench modules' rows). */
export interface BenchResult {
  id: string;
  what: string;
  value: number;
  baseline?: number;
  ratio?: number;
  unit: string;
  notes?: string;
}

const SELF = fileURLToPath(import.meta.url);
const ROOT = resolve(SELF, '../..');

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'bench credits',
    sqlite:
      'CREATE TABLE bench_credits (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, account TEXT NOT NULL, amount_cents INTEGER NOT NULL)',
    postgres:
      'CREATE TABLE bench_credits (id BIGSERIAL PRIMARY KEY, company_id BIGINT NOT NULL, account TEXT NOT NULL, amount_cents BIGINT NOT NULL)',
  },
];

const benchCredit = defineVerb<{ account: string; amount_cents: number }>({
  name: 'bench.credit',
  description: 'Credit an account (benchmark).',
  shape: 'receipt',
  category: 'test',
  consent: 'WRITE_REVERSIBLE',
  input: {
    type: 'object',
    properties: { account: { type: 'string' }, amount_cents: { type: 'integer', minimum: 1 } },
    required: ['account', 'amount_cents'],
    additionalProperties: false,
  },
  async handler(ctx, a) {
    const row = await ctx.db.get<{ id: number }>(
      'INSERT INTO bench_credits (company_id, account, amount_cents) VALUES (?, ?, ?) RETURNING id',
      [ctx.principal.company_id, a.account, a.amount_cents],
    );
    ctx.emit({
      type: 'account.credited',
      entity_type: 'account',
      entity_id: a.account,
      payload: { amount_cents: a.amount_cents },
    });
    return { credit_id: row!.id };
  },
});

interface Target {
  engine: 'sqlite' | 'postgres';
  /** SQLite file path, or PostgreSQL URL. */
  where: string;
  schema?: string;
  secrets: Record<string, string>;
}

function openStore(t: Target): Store {
  return t.engine === 'sqlite'
    ? new SqliteStore({ path: t.where })
    : new PostgresStore({ connectionString: t.where, schema: t.schema, poolMax: 10 });
}

async function openRuntime(t: Target): Promise<Runtime> {
  const store = openStore(t);
  const rt = await createRuntime({
    store,
    secrets: loadSecrets({ env: t.secrets }).secrets,
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
    checkpointIntervalMs: 3_600_000,
  });
  rt.register(...systemVerbs, benchCredit);
  await store.migrate('bench', MIGRATIONS);
  return rt;
}

/** Create `tenants` tenants (2, 3, …) with an owner key each on a fresh target; returns the keys. */
async function prepare(t: Target, tenants: number): Promise<string[]> {
  const rt = await openRuntime(t);
  try {
    await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
    const keys: string[] = [];
    for (let i = 0; i < tenants; i++) {
      await rt.createTenant({
        company_id: 2 + i,
        name: `Bench Co ${i}`,
        tier: 'enterprise',
        settings: { caps: { WRITE_REVERSIBLE: 1_000_000_000 } },
      });
      keys.push(await rt.createApiKey({ company_id: 2 + i, user_id: 1, role: 'owner', agent_type: 'bench' }));
    }
    return keys;
  } finally {
    await rt.close();
  }
}

/** Worker mode: one node. Waits for `startAt`, runs `concurrency` callers until `startAt + ms`, prints `{count}`. */
async function worker(): Promise<void> {
  const cfg = JSON.parse(process.env.SOLID_BENCH_WORKER!) as {
    target: Target;
    key: string;
    startAt: number;
    ms: number;
    concurrency: number;
    node: number;
  };
  const rt = await openRuntime(cfg.target);
  const principal = await rt.tenants.authenticate(cfg.key);
  await new Promise((r) => setTimeout(r, Math.max(0, cfg.startAt - Date.now())));
  const end = cfg.startAt + cfg.ms;
  let count = 0;
  let failed = 0;
  let seq = 0;
  await Promise.all(
    Array.from({ length: cfg.concurrency }, async () => {
      while (Date.now() < end) {
        const args = { account: `n${cfg.node}-${seq % 50}`, amount_cents: 1 + (seq++ % 1000) };
        const pending = await rt.dispatch({ principal, surface: 'internal' }, 'bench.credit', args);
        const env = await rt.dispatch({ principal, surface: 'internal' }, 'bench.credit', args, {
          confirm: true,
          nonce: pending.consent?.nonce,
        });
        if (env.ok) count++;
        else failed++;
      }
    }),
  );
  const elapsed = Date.now() - cfg.startAt;
  await rt.close();
  process.stdout.write(JSON.stringify({ count, failed, elapsed }) + '\n');
}

function runWorker(
  env: Record<string, unknown>,
): Promise<{ count: number; failed: number; elapsed: number }> {
  return new Promise((resolveRun, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', SELF], {
      cwd: ROOT,
      env: { ...process.env, SOLID_BENCH_WORKER: JSON.stringify(env) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    p.on('exit', (code) => {
      if (code !== 0) reject(new Error(`bench worker exited with ${code}`));
      else
        resolveRun(
          JSON.parse(out.trim().split('\n').pop()!) as { count: number; failed: number; elapsed: number },
        );
    });
  });
}

/** `tenantPerNode`: node i writes to its own tenant (no shared chain lock); else all nodes write to one tenant. */
async function measure(
  target: Target,
  nodes: number,
  ms: number,
  concurrency: number,
  tenantPerNode = false,
): Promise<{ perSecond: number; failed: number }> {
  const keys = await prepare(target, tenantPerNode ? nodes : 1);
  const startAt = Date.now() + 4000;
  const results = await Promise.all(
    Array.from({ length: nodes }, (_, node) =>
      runWorker({ target, key: keys[tenantPerNode ? node : 0], startAt, ms, concurrency, node }),
    ),
  );
  const count = results.reduce((s, r) => s + r.count, 0);
  const elapsed = Math.max(...results.map((r) => r.elapsed));
  return { perSecond: (count * 1000) / elapsed, failed: results.reduce((s, r) => s + r.failed, 0) };
}

export interface PostgresBenchOptions {
  /** PostgreSQL URL (default SOLID_TEST_DATABASE_URL). */
  url?: string;
  /** Measured milliseconds per scenario (default 8000). */
  ms?: number;
  /** Concurrent callers per node (default 8). */
  concurrency?: number;
}

/**
 * Confirmed write dispatches per second: embedded SQLite (1 node) vs PostgreSQL (1 node, 2 nodes).
 * Each scenario runs on a fresh database/schema, removed afterwards. Ratios are against the
 * embedded engine. Throws when no PostgreSQL URL is given.
 */
export async function benchPostgres(options: PostgresBenchOptions = {}): Promise<BenchResult[]> {
  const url = options.url ?? process.env.SOLID_TEST_DATABASE_URL;
  if (url === undefined)
    throw new Error('benchPostgres needs a PostgreSQL URL (SOLID_TEST_DATABASE_URL; see .ci/postgres.sh)');
  const ms = options.ms ?? 8000;
  const concurrency = options.concurrency ?? 8;
  const secrets = {
    SOLID_NONCE_SECRET: randomBytes(32).toString('hex'),
    SOLID_MASTER_KEY: randomBytes(32).toString('hex'),
  };
  const cores = availableParallelism();

  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-pg-'));
  let sqlite: { perSecond: number; failed: number };
  try {
    sqlite = await measure({ engine: 'sqlite', where: join(dir, 'bench.db'), secrets }, 1, ms, concurrency);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const pgRuns: Array<{ perSecond: number; failed: number }> = [];
  for (const [nodes, perNode] of [
    [1, false],
    [2, false],
    [2, true],
  ] as const) {
    const schema = `bench_${randomBytes(4).toString('hex')}`;
    try {
      pgRuns.push(
        await measure({ engine: 'postgres', where: url, schema, secrets }, nodes, ms, concurrency, perNode),
      );
    } finally {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    }
  }
  const notes = `${cores} cores (load average ${loadavg()[0]!.toFixed(1)} at the end); ${concurrency} callers per node; ${ms} ms; each op = pending + confirmed execute`;
  return [
    {
      id: 'postgres.write.embedded',
      what: 'confirmed write dispatches/s, embedded SQLite, 1 node',
      value: sqlite.perSecond,
      unit: 'ops/s',
      notes: `${notes}; failed ${sqlite.failed}`,
    },
    {
      id: 'postgres.write.1node',
      what: 'confirmed write dispatches/s, PostgreSQL, 1 node',
      value: pgRuns[0]!.perSecond,
      baseline: sqlite.perSecond,
      ratio: pgRuns[0]!.perSecond / sqlite.perSecond,
      unit: 'ops/s',
      notes: `${notes}; failed ${pgRuns[0]!.failed}`,
    },
    {
      id: 'postgres.write.2nodes',
      what: 'confirmed write dispatches/s, PostgreSQL, 2 nodes (sum), one tenant',
      value: pgRuns[1]!.perSecond,
      baseline: sqlite.perSecond,
      ratio: pgRuns[1]!.perSecond / sqlite.perSecond,
      unit: 'ops/s',
      notes: `${notes}; failed ${pgRuns[1]!.failed}`,
    },
    {
      id: 'postgres.write.2nodes.2tenants',
      what: 'confirmed write dispatches/s, PostgreSQL, 2 nodes (sum), a tenant per node',
      value: pgRuns[2]!.perSecond,
      baseline: sqlite.perSecond,
      ratio: pgRuns[2]!.perSecond / sqlite.perSecond,
      unit: 'ops/s',
      notes: `${notes}; failed ${pgRuns[2]!.failed}`,
    },
  ];
}

if (process.argv[1] === SELF) {
  if (process.env.SOLID_BENCH_WORKER !== undefined) {
    await worker();
  } else {
    const results = await benchPostgres();
    for (const r of results)
      console.log(
        `${r.id.padEnd(32)} ${r.value.toFixed(0).padStart(6)} ${r.unit}${r.ratio !== undefined ? `  (×${r.ratio.toFixed(2)} of embedded)` : ''}  ${r.notes ?? ''}`,
      );
  }
}
