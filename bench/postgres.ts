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
 * each node a separate process driving the built package's `dispatchWithKey` (dist/, every call
 * with the tenant's API key, resolved by the runtime as every transport does) with `concurrency` callers for
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
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import pino from 'pino';
import type { Runtime } from '../src/runtime/runtime.ts';
import type { Migration, Store } from '../src/store/store.ts';
import { built } from './built.ts';

type IndexModule = typeof import('../src/index.ts');
type PgModule = typeof import('../src/store/postgres/postgres-store.ts');

/** One measured figure (the same fields as the other bench modules' rows). */
export interface BenchResult {
  id: string;
  what: string;
  value: number;
  baseline?: number;
  ratio?: number;
  unit: string;
  target?: string;
  met?: boolean;
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

/** The bench verb, defined with the built package's defineVerb. */
const benchCredit = (defineVerb: IndexModule['defineVerb']) =>
  defineVerb<{ account: string; amount_cents: number }>({
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

async function openStore(t: Target): Promise<Store> {
  if (t.engine === 'sqlite') return new (await built<IndexModule>('index.js')).SqliteStore({ path: t.where });
  const { PostgresStore } = await built<PgModule>('store/postgres/postgres-store.js');
  return new PostgresStore({ connectionString: t.where, schema: t.schema, poolMax: 10 });
}

async function openRuntime(t: Target): Promise<Runtime> {
  const { createRuntime, loadSecrets, systemVerbs, defineVerb } = await built<IndexModule>('index.js');
  const store = await openStore(t);
  const rt = await createRuntime({
    store,
    secrets: loadSecrets({ env: t.secrets }).secrets,
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
    checkpointIntervalMs: 3_600_000,
  });
  rt.register(...systemVerbs, benchCredit(defineVerb));
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
  const { dispatchWithKey } = await built<IndexModule>('index.js');
  // Every call with the API key, resolved by the runtime as every transport does.
  const call = (args: object, options?: { confirm: true; nonce: string | undefined }) =>
    dispatchWithKey(rt, { surface: 'internal' }, cfg.key, 'bench.credit', args, options);
  await new Promise((r) => setTimeout(r, Math.max(0, cfg.startAt - Date.now())));
  const end = cfg.startAt + cfg.ms;
  let count = 0;
  let failed = 0;
  let seq = 0;
  await Promise.all(
    Array.from({ length: cfg.concurrency }, async () => {
      while (Date.now() < end) {
        const args = { account: `n${cfg.node}-${seq % 50}`, amount_cents: 1 + (seq++ % 1000) };
        const pending = await call(args);
        const env = await call(args, { confirm: true, nonce: pending.consent?.nonce });
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

/**
 * pg.one_tenant_two_nodes (issue 36): one tenant's confirmed writes through 2 `solid serve` nodes
 * ÷ through 1 node, on a throwaway PostgreSQL cluster (bench/pg-cluster.ts; skipped with the
 * reason without server binaries). The nodes are real `solid serve --database-url` processes of
 * the built package with bench/peer-pack.mjs; each write is what a client sends: POST
 * bench.set_phone with the API key (202 and a nonce), then the same with confirm + nonce (200).
 * `concurrency` closed-loop clients per node, each on its own contact (no row contention: only the
 * tenant's chain serialises them). ABBA rounds; the diagnostic `pg.tenant_each_two_nodes` gives
 * each node its own tenant (÷ the same 1-node figure). While the 2-node load runs, the cluster's
 * active backends are sampled from pg_stat_activity: the wait events say where the time goes.
 */
export interface PgNodesOptions {
  /** Milliseconds per side and round (default 5000). */
  ms?: number;
  /** ABBA rounds (default 5). */
  rounds?: number;
  /** Clients per node (default 8). */
  concurrency?: number;
}

/** Run pg.one_tenant_two_nodes and its diagnostic; throws the skip reason without PostgreSQL binaries. */
export async function benchPgNodes(options: PgNodesOptions = {}): Promise<BenchResult[]> {
  const { startCluster, clusterSkipReason } = await import('./pg-cluster.ts');
  const why = clusterSkipReason();
  if (why !== undefined) throw new Error(why);
  const { abba, abbaNote } = await import('./harness.ts');
  const { PEER_PACK } = await import('./peers.ts');
  const { startServe, stopServe } = await import('./serve-rss.ts');
  const ms = options.ms ?? 5000;
  const rounds = options.rounds ?? 5;
  const concurrency = options.concurrency ?? 8;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-pgnodes-'));
  let cluster: Awaited<ReturnType<typeof startCluster>> | undefined;
  const keyfile = join(dir, 'keys', 'postgres.keys.json');
  const saved = process.env.SOLID_KEYFILE;
  const nodes: Array<Awaited<ReturnType<typeof startServe>>> = [];
  try {
    cluster = await startCluster();
    const url = cluster.url;
    process.env.SOLID_KEYFILE = keyfile;
    const { openLocal } =
      await built<typeof import('../src/transports/cli/local.ts')>('transports/cli/local.js');
    const pack = (await import(pathToFileURL(PEER_PACK).href)) as {
      TABLE: string;
      contactRows(): unknown[][];
    };
    const keys: string[] = [];
    const local = await openLocal({
      db: cluster.url,
      create: true,
      packFiles: [PEER_PACK],
      logLevel: 'error',
    });
    try {
      await local.rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' }).catch(() => {});
      for (const company of [2, 3]) {
        await local.rt.createTenant({
          company_id: company,
          name: `Bench ${company}`,
          tier: 'enterprise',
          settings: { caps: { WRITE_REVERSIBLE: 1_000_000_000 } },
        });
        keys.push(
          await local.rt.createApiKey({
            company_id: company,
            user_id: 1,
            role: 'owner',
            agent_type: 'bench',
          }),
        );
        await local.rt.store.write(async (tx) => {
          for (const [id, , name, email, phone] of pack.contactRows())
            await tx.run(
              `INSERT INTO ${pack.TABLE} (id, company_id, name, email, phone) VALUES (?, ?, ?, ?, ?)`,
              [company * 1000 + Number(id), company, name, email, phone],
            );
        });
      }
    } finally {
      await local.close();
    }
    const flags = [
      '--pack',
      PEER_PACK,
      '--rate-limit-key',
      '1000000000',
      '--rate-limit-address',
      '1000000000',
    ];
    const env = { SOLID_RUN: 'dist', SOLID_KEYFILE: keyfile };
    nodes.push(await startServe(cluster.url, flags, env), await startServe(cluster.url, flags, env));
    const failures = { n: 0, last: '' };
    /** Confirmed writes/s of `clients` closed-loop clients on each [base, key, company] for ms. */
    const drive = async (targets: Array<[string, string, number]>): Promise<number> => {
      let done = 0;
      const end = Date.now() + ms;
      await Promise.all(
        targets.flatMap(([base, key, company], n) =>
          Array.from({ length: concurrency }, async (_, c) => {
            const url = `${base}/api/v1/agent/dispatch/bench.set_phone`;
            const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
            let k = 0;
            while (Date.now() < end) {
              const args = { id: company * 1000 + ((n * concurrency + c) % 200) + 1, phone: `+1${k++}` };
              const pre = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ args }) });
              const body = (await pre.json()) as { consent?: { nonce?: string } };
              const nonce = body.consent?.nonce;
              if (pre.status !== 202 || nonce === undefined) {
                failures.n++;
                failures.last = `preflight ${pre.status} ${JSON.stringify(body).slice(0, 200)}`;
                continue;
              }
              const res = await fetch(url, {
                method: 'POST',
                headers,
                body: JSON.stringify({ args, confirm: true, nonce }),
              });
              const text = await res.text();
              if (res.status === 200) done++;
              else {
                failures.n++;
                failures.last = `confirm ${res.status} ${text.slice(0, 200)}`;
              }
            }
          }),
        ),
      );
      return (done * 1000) / ms;
    };
    // Where the 2-node time goes: wait events of the active backends, sampled every 50 ms.
    const waits = new Map<string, number>();
    const sampled = async (fn: () => Promise<number>): Promise<number> => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      let on = true;
      const loop = (async () => {
        while (on) {
          const r = await c.query(
            "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS w, count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend' GROUP BY 1",
          );
          for (const row of r.rows as Array<{ w: string; n: number }>)
            waits.set(row.w, (waits.get(row.w) ?? 0) + row.n);
          await new Promise((r2) => setTimeout(r2, 50));
        }
      })();
      try {
        return await fn();
      } finally {
        on = false;
        await loop;
        await c.end();
      }
    };
    const [a, b] = [nodes[0]!.base, nodes[1]!.base];
    await drive([[a, keys[0]!, 2]]); // warm-up of both nodes, not counted
    await drive([[b, keys[0]!, 2]]);
    const one = await abba(
      () =>
        sampled(() =>
          drive([
            [a, keys[0]!, 2],
            [b, keys[0]!, 2],
          ]),
        ),
      () => drive([[a, keys[0]!, 2]]),
      rounds,
    );
    const each = await abba(
      () =>
        drive([
          [a, keys[0]!, 2],
          [b, keys[1]!, 3],
        ]),
      () => drive([[a, keys[0]!, 2]]),
      rounds,
    );
    const total = [...waits.values()].reduce((x, y) => x + y, 0);
    const waitNote = [...waits.entries()]
      .sort((x, y) => y[1] - x[1])
      .slice(0, 5)
      .map(([w, n]) => `${w} ${Math.round((n / Math.max(1, total)) * 100)} %`)
      .join(', ');
    const common = `${availableParallelism()} cores (load average ${loadavg()[0]!.toFixed(1)} at the end; the cluster, both nodes and the clients share them); ${concurrency} clients per node, ${ms} ms per side and round; each write = preflight (202) + confirm (200) over HTTP with the API key; fsync off${failures.n > 0 ? `; ${failures.n} failed requests, last: ${failures.last}` : ''}`;
    return [
      {
        id: 'pg.one_tenant_two_nodes',
        what: "one tenant's confirmed writes/s (preflight + confirm over HTTP, API key) through 2 `solid serve` nodes (dist) ÷ through 1 node, PostgreSQL",
        value: one.value,
        baseline: one.baseline,
        ratio: one.ratio,
        unit: 'writes/s',
        target: 'ratio ≥ 1.6',
        met: one.ratio >= 1.6,
        notes: `${abbaNote(one)}; ${common}; active backends' wait events during the 2-node runs (samples, 'CPU' = not waiting): ${waitNote}`,
      } as BenchResult,
      {
        id: 'pg.tenant_each_two_nodes',
        what: 'diagnostic: confirmed writes/s through 2 `solid serve` nodes, a tenant each ÷ one tenant through 1 node, PostgreSQL',
        value: each.value,
        baseline: each.baseline,
        ratio: each.ratio,
        unit: 'writes/s',
        notes: `${abbaNote(each)}; ${common}`,
      },
    ];
  } finally {
    for (const n of nodes) await stopServe(n.child);
    cluster?.destroy();
    if (saved === undefined) delete process.env.SOLID_KEYFILE;
    else process.env.SOLID_KEYFILE = saved;
    rmSync(dir, { recursive: true, force: true });
  }
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
