/**
 * Ledger benchmarks (issue 4), on the built package (dist/). Each exported function builds its own runtime in a temp dir,
 * measures, cleans up and returns result rows (the BenchResult shape of bench/harness.ts):
 *
 *   benchIdempotentReplay()  ops/s of a first execution (fresh idempotency key: consent-free
 *                            write, audit row, signed receipt, key claim) vs a replay of a stored key
 *   benchAuditVerify()       `audit verify` rows/s over a generated 1M-row chain (target ≥ 100k)
 *   benchTrail()             audit.trail p95 at 10k vs 1M rows, same filters (target ratio ≤ 1.5)
 *   benchAuditExport()       `audit export` and `audit verify --export` rows/s over a generated
 *                            100k-row month, vs `audit verify` of the same rows in the database
 *   benchLedger()            all three
 *
 * `generateAuditChain` writes correctly chained rows straight into the table (big transactions,
 * hashes from the ledger's own hashAuditRow, a signed checkpoint every 10k rows), so a 1M-row log
 * takes seconds instead of a million dispatches. It is a bench fixture, not part of the tests, and
 * the one seeder of the suite's audit logs (bench/trail-filters.ts passes its own mix of rows).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sign as nodeSign } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import canonicalize from 'canonicalize';
import pino from 'pino';
import type { Runtime } from '../src/runtime/runtime.ts';
import type { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { AuditRow } from '../src/runtime/ledger/write/audit.ts';
import { fromDist, type BenchResult, type Solid } from './harness.ts';

const {
  createRuntime,
  SqliteStore: Store,
  systemVerbs,
  defineVerb,
  dispatchWithKey,
} = await fromDist<Solid>('index.js');
const { checkpointMaterial } = await fromDist<typeof import('../src/runtime/ledger/keys/checkpoints.ts')>(
  'runtime/ledger/keys/checkpoints.js',
);
const { AUDIT_COLUMNS, GENESIS_HASH, hashAuditRow } = await fromDist<
  typeof import('../src/runtime/ledger/write/audit.ts')
>('runtime/ledger/write/audit.js');
const { verifyDatabaseFile } = await fromDist<typeof import('../src/runtime/ledger/verify/verify-file.ts')>(
  'runtime/ledger/verify/verify-file.js',
);
const { writeAuditExport } = await fromDist<typeof import('../src/runtime/ledger/verify/export.ts')>(
  'runtime/ledger/verify/export.js',
);
const { verifyAuditExport } = await fromDist<typeof import('../src/runtime/ledger/verify/export-check.ts')>(
  'runtime/ledger/verify/export-check.js',
);
const { archiveAuditLog, checkArchives } = await fromDist<
  typeof import('../src/runtime/ledger/retention/archive.ts')
>('runtime/ledger/retention/archive.js');
const { storedContinuity } = await fromDist<
  typeof import('../src/runtime/ledger/verify/continuity-check.ts')
>('runtime/ledger/verify/continuity-check.js');

/** The ledger modules' results: bench/harness.ts BenchResult. */
export type LedgerBenchResult = BenchResult;

export interface Fixture {
  rt: Runtime;
  store: SqliteStore;
  dir: string;
  path: string;
  ownerKey: string;
  close(): Promise<void>;
}

/**
 * A runtime of the built package with the system verbs, a sandbox (company 1), the bench tenant
 * (company 2, enterprise) and its owner API key (agent_type 'bench'), no periodic checkpoints.
 */
export async function fixture(): Promise<Fixture> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-ledger-'));
  const path = join(dir, 'bench.db');
  const store = new Store({ path });
  const rt = await createRuntime({
    store,
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
    checkpointEvery: 1_000_000_000,
  });
  rt.register(...systemVerbs);
  await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
  await rt.createTenant({ company_id: 2, name: 'Bench Co', tier: 'enterprise' });
  const ownerKey = await rt.createApiKey({ company_id: 2, user_id: 1, role: 'owner', agent_type: 'bench' });
  return {
    rt,
    store,
    dir,
    path,
    ownerKey,
    async close() {
      await rt.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const VERBS = [
  'crm_contact_update',
  'charge_invoice',
  'deals.create',
  'customer.full_context',
  'infra_resize',
  'kb.search',
  'email.send',
  'payments.refund',
];
const STATUSES = [
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'denied',
  'failed',
  'replayed',
];
const REASONS: Record<string, string | null> = {
  completed: null,
  denied: 'role_denied',
  failed: 'invoice_already_paid',
  replayed: null,
};

/**
 * The fields of the k-th generated row (k = its seq) that a mix chooses; the rest are fixed. The
 * default mix: eight verbs, all receipts of WRITE_REVERSIBLE writes by agent_type 'bench', 70 %
 * completed, an entity on every row.
 */
export type AuditMix = (
  k: number,
) => Pick<
  AuditRow,
  | 'action_type'
  | 'status'
  | 'reason'
  | 'agent_type'
  | 'shape'
  | 'consent_class'
  | 'entity_type'
  | 'entity_id'
  | 'is_reversible'
  | 'request_data'
>;

const defaultMix: AuditMix = (k) => {
  const status = STATUSES[k % STATUSES.length]!;
  return {
    action_type: VERBS[k % VERBS.length]!,
    status: status as AuditRow['status'],
    reason: REASONS[status] ?? null,
    agent_type: 'bench',
    shape: 'receipt',
    consent_class: 'WRITE_REVERSIBLE',
    entity_type: k % 2 === 0 ? 'contact' : 'deal',
    entity_id: String(k % 5000),
    is_reversible: status === 'completed' ? 1 : 0,
    request_data: { contact_id: k % 5000, note: `row ${k}` },
  };
};

/**
 * Append `rows` correctly chained audit rows for `companyId` directly into the database of `rt`
 * (after whatever the chain already holds), moving the tenant head and signing a checkpoint every
 * `checkpointEvery` rows and at the end. Row times advance `stepMs` (default 50) ms per seq from
 * `startMs`; `mix` chooses each row's verb, status, agent and entity (default `defaultMix`).
 * Returns the tenant's last seq.
 */
export async function generateAuditChain(
  rt: Runtime,
  store: SqliteStore,
  companyId: number,
  rows: number,
  options: {
    startMs?: number;
    stepMs?: number;
    checkpointEvery?: number;
    batch?: number;
    mix?: AuditMix;
  } = {},
): Promise<number> {
  const mix = options.mix ?? defaultMix;
  const stepMs = options.stepMs ?? 50;
  const db = store.rawDatabase;
  const key = await rt.keys.signingKey(companyId);
  const head = db
    .prepare('SELECT audit_seq, audit_hash FROM tenant_heads WHERE company_id = ?')
    .get(companyId) as { audit_seq: number; audit_hash: string };
  let seq = head.audit_seq;
  let prev = head.audit_hash ?? GENESIS_HASH;
  let auditId = Number(
    (db.prepare('SELECT COALESCE(MAX(audit_id), 0) AS m FROM audit_log').get() as { m: number }).m,
  );
  const insert = db.prepare(
    `INSERT INTO audit_log (${AUDIT_COLUMNS.join(', ')}) VALUES (${AUDIT_COLUMNS.map(() => '?').join(', ')})`,
  );
  const cpInsert = db.prepare(
    'INSERT INTO audit_checkpoints (company_id, seq, head_hash, created_at, kid, signature) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const every = options.checkpointEvery ?? 10_000;
  const startMs = options.startMs ?? Date.parse('2026-01-01T00:00:00.000Z');
  const batch = options.batch ?? 50_000;
  const checkpoint = (at: string) => {
    const signature = nodeSign(
      'sha256',
      checkpointMaterial({ company_id: companyId, seq, head_hash: prev, created_at: at }),
      { key: key.keyObject, dsaEncoding: 'ieee-p1363' },
    ).toString('base64url');
    cpInsert.run(companyId, seq, prev, at, key.kid, signature);
  };
  // Bulk load: drop the secondary indexes, insert, rebuild them once (much faster than
  // maintaining eight indexes row by row).
  const indexes = db
    .prepare(
      `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_log' AND sql IS NOT NULL`,
    )
    .all() as Array<{ name: string; sql: string }>;
  for (const ix of indexes) db.exec(`DROP INDEX ${ix.name}`);
  let done = 0;
  while (done < rows) {
    const n = Math.min(batch, rows - done);
    db.transaction(() => {
      for (let i = 0; i < n; i++) {
        seq++;
        auditId++;
        const k = seq;
        const created_at = new Date(startMs + k * stepMs).toISOString();
        const base: Omit<AuditRow, 'row_hash'> = {
          audit_id: auditId,
          company_id: companyId,
          seq,
          created_at,
          user_id: 1 + (k % 50),
          role: k % 3 === 0 ? 'admin' : 'employee',
          key_id: null,
          category: 'bench',
          ...mix(k),
          rollback_handle: null,
          idempotency_key: null,
          transaction_id: null,
          parent_id: null,
          requires_approval: 0,
          approved_by: null,
          approved_at: null,
          latency_ms: (k % 1000) / 7,
          prev_hash: prev,
        };
        base.latency_ms = Math.round(base.latency_ms! * 1000) / 1000;
        const row_hash = hashAuditRow(base);
        const values = AUDIT_COLUMNS.map((c) =>
          c === 'row_hash'
            ? row_hash
            : c === 'request_data'
              ? canonicalize(base.request_data)
              : ((base as unknown as Record<string, unknown>)[c] ?? null),
        );
        insert.run(...values);
        prev = row_hash;
        if (seq % every === 0) checkpoint(created_at);
      }
      db.prepare('UPDATE tenant_heads SET audit_seq = ?, audit_hash = ? WHERE company_id = ?').run(
        seq,
        prev,
        companyId,
      );
    })();
    done += n;
  }
  if (seq % every !== 0) checkpoint(new Date(startMs + seq * stepMs).toISOString());
  for (const ix of indexes) db.exec(ix.sql);
  return seq;
}

function p95(samples: number[]): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.95 * s.length) - 1)]!;
}

/** Idempotent replay vs first execution, through dispatch (one caller, sequential). */
export async function benchIdempotentReplay(options: { ms?: number } = {}): Promise<LedgerBenchResult[]> {
  const f = await fixture();
  try {
    await f.store.migrate('bench-ledger', [
      {
        version: 1,
        name: 'bumps',
        sqlite: 'CREATE TABLE bumps (company_id INTEGER PRIMARY KEY, n INTEGER NOT NULL)',
      },
    ]);
    f.rt.register(
      defineVerb({
        name: 'bench.bump',
        description: 'Count one (no consent gate: measures the write path, not the human).',
        shape: 'receipt',
        category: 'bench',
        input: { type: 'object', properties: {}, additionalProperties: false },
        delegateConsent: async () => ({ consentClass: null, roleFloor: 'employee', summary: 'bump' }),
        async handler(ctx) {
          await ctx.db.run(
            'INSERT INTO bumps (company_id, n) VALUES (?, 1) ON CONFLICT (company_id) DO UPDATE SET n = bumps.n + 1',
            [ctx.principal.company_id],
          );
          return { bumped: true };
        },
      }),
    );
    // A transport's caller: the owner key is authenticated on every call (dispatchWithKey).
    const caller = { surface: 'http' as const };
    const call = (options: { idempotency_key: string }) =>
      dispatchWithKey(f.rt, caller, f.ownerKey, 'bench.bump', {}, options);
    const ms = options.ms ?? 2000;
    let i = 0;
    const first = await timed(ms, async () => {
      const env = await call({ idempotency_key: `first-${i++}` });
      if (!env.ok) throw new Error(`bench.bump failed: ${env.error?.reason}`);
    });
    const stored = await call({ idempotency_key: 'replayed-key' });
    if (!stored.ok) throw new Error('bench.bump failed');
    const replay = await timed(ms, async () => {
      const env = await call({ idempotency_key: 'replayed-key' });
      if (env.replayed !== true) throw new Error('expected a replay');
    });
    return [
      {
        id: 'ledger.idempotency.first',
        what: 'write with a fresh idempotency key: execute, audit row, signed receipt, key claim (ops/s)',
        value: Math.round(first),
        unit: 'ops/s',
      },
      {
        id: 'ledger.idempotency.replay',
        what: 'same key again: stored receipt returned, nothing executed (ops/s)',
        value: Math.round(replay),
        baseline: Math.round(first),
        ratio: Math.round((replay / first) * 100) / 100,
        unit: 'ops/s',
        notes: 'ratio = replay / first execution',
      },
    ];
  } finally {
    await f.close();
  }
}

async function timed(ms: number, fn: () => Promise<void>): Promise<number> {
  const warm = performance.now() + Math.min(300, ms / 5);
  while (performance.now() < warm) await fn();
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    await fn();
    n++;
  }
  return (n * 1000) / (performance.now() - start);
}

/** `audit verify` throughput on a generated chain (default 1M rows). */
export async function benchAuditVerify(options: { rows?: number } = {}): Promise<LedgerBenchResult[]> {
  const rows = options.rows ?? 1_000_000;
  const f = await fixture();
  try {
    const g0 = performance.now();
    await generateAuditChain(f.rt, f.store, 2, rows);
    const generateS = (performance.now() - g0) / 1000;
    await f.rt.close();
    const cpu0 = process.cpuUsage();
    const report = await verifyDatabaseFile(f.path);
    const cpu = process.cpuUsage(cpu0);
    const cpuS = (cpu.user + cpu.system) / 1e6;
    if (!report.ok)
      throw new Error(
        `generated chain did not verify: ${JSON.stringify(report.tenants.flatMap((t) => t.findings).slice(0, 3))}`,
      );
    return [
      {
        id: 'ledger.verify',
        what: `solid audit verify over ${rows.toLocaleString('en-US')} rows (offline, SQLite file; hash + link + checkpoint signatures)`,
        value: report.rows_per_second,
        unit: 'rows/s',
        target: '≥ 100000 rows/s',
        met: report.rows_per_second >= 100_000,
        notes: `${(report.elapsed_ms / 1000).toFixed(2)} s wall for ${report.rows_checked} rows (${Math.round(report.rows_checked / cpuS)} rows per CPU-second, all threads; ${availableParallelism()} CPUs, load ${loadavg()[0]!.toFixed(1)}); generating the chain took ${generateS.toFixed(1)} s`,
      },
    ];
  } finally {
    await f.close();
  }
}

/**
 * `solid audit export` (NDJSON, signed manifest) and its offline check over a generated chain of
 * `rows` rows (default 100 000), as rows/s, each against `audit verify` of the same rows in the
 * database (the baseline: what the export adds is reading, writing and digesting the file).
 */
export async function benchAuditExport(options: { rows?: number } = {}): Promise<LedgerBenchResult[]> {
  const rows = options.rows ?? 100_000;
  const f = await fixture();
  try {
    const startMs = Date.parse('2026-01-01T00:00:00.000Z');
    await generateAuditChain(f.rt, f.store, 2, rows, { startMs });
    f.store.rawDatabase.pragma('wal_checkpoint(TRUNCATE)');
    const out = join(f.dir, 'export.ndjson');
    const e0 = performance.now();
    const result = await writeAuditExport(f.rt.store, f.rt.keys, {
      companyId: 2,
      from: new Date(startMs),
      to: new Date(startMs + rows * 50 + 1000),
      format: 'ndjson',
      out,
      now: new Date(),
    });
    const exportS = (performance.now() - e0) / 1000;
    if (!result.ok || result.manifest.rows.count !== rows)
      throw new Error(`the export did not hold the ${rows} rows: ${JSON.stringify(result).slice(0, 300)}`);
    const checked = await verifyAuditExport(out, { trust: { keys: result.manifest.keys } });
    if (!checked.ok)
      throw new Error(`the export did not verify: ${JSON.stringify(checked.findings.slice(0, 3))}`);
    await f.rt.close();
    const db = await verifyDatabaseFile(f.path, { tenant: 2 });
    const exportRate = Math.round(rows / exportS);
    const note = `${rows.toLocaleString('en-US')} rows; ${availableParallelism()} CPUs, load ${loadavg()[0]!.toFixed(1)}; baseline: audit verify of the same rows in the database, ${db.rows_per_second.toLocaleString('en-US')} rows/s`;
    return [
      {
        id: 'ledger.export',
        what: `solid audit export of ${rows.toLocaleString('en-US')} rows to NDJSON with a signed manifest (read in pages, each row re-hashed and linked, written, digested) vs audit verify of the same rows`,
        value: exportRate,
        unit: 'rows/s',
        baseline: db.rows_per_second,
        ratio: Math.round((exportRate / db.rows_per_second) * 100) / 100,
        notes: `${exportS.toFixed(2)} s; ${note}`,
      },
      {
        id: 'ledger.export_verify',
        what: `solid audit verify --export of the same file offline (digest, every row re-hashed and linked, checkpoint and manifest signatures) vs audit verify of the rows in the database`,
        value: checked.rows_per_second,
        unit: 'rows/s',
        baseline: db.rows_per_second,
        ratio: Math.round((checked.rows_per_second / db.rows_per_second) * 100) / 100,
        notes: `${(checked.elapsed_ms / 1000).toFixed(2)} s; ${note}`,
      },
    ];
  } finally {
    await f.close();
  }
}

/** The trail queries measured (the same at both sizes). */
export const TRAIL_QUERIES: ReadonlyArray<{ name: string; args: Record<string, unknown> }> = [
  { name: 'newest page', args: {} },
  { name: 'verb', args: { verb: 'charge_invoice' } },
  { name: 'status denied', args: { status: 'denied' } },
  { name: 'verb + status', args: { verb: 'email.send', status: 'failed' } },
  { name: 'actor', args: { actor: 7 } },
  { name: 'entity', args: { entity_type: 'contact', entity_id: '42' } },
  { name: 'reason', args: { reason: 'role_denied' } },
  { name: 'one hour, middle of the log', args: { from: 'MID', to: 'MID+1h' } },
  { name: 'verb in one hour', args: { verb: 'deals.create', from: 'MID', to: 'MID+1h' } },
];

/** A fixture whose chain holds `rows` generated rows, settled (WAL checkpointed) before any sample. */
async function trailFixture(rows: number): Promise<{
  f: Fixture;
  mid: Date;
  caller: { surface: 'http' };
}> {
  const f = await fixture();
  const startMs = Date.parse('2026-01-01T00:00:00.000Z');
  await generateAuditChain(f.rt, f.store, 2, rows, { startMs });
  f.store.rawDatabase.pragma('wal_checkpoint(TRUNCATE)');
  return {
    f,
    mid: new Date(startMs + Math.floor(rows / 2) * 50),
    // A transport's caller: the owner key is authenticated on every call (dispatchWithKey).
    caller: { surface: 'http' },
  };
}

/**
 * p95 of every filter set at both sizes. Both chains are generated first; then, after a pause for
 * the bulk load's disk writeback, each sample queries the small and the large log alternately, so
 * load and writeback hit both sizes alike (measuring one size after the other charged the 1M run
 * with the writeback of its own generation).
 */
async function trailP95Pair(
  smallRows: number,
  largeRows: number,
  samplesPerQuery: number,
): Promise<Array<{ p95: number; perQuery: Record<string, number> }>> {
  const sizes = [await trailFixture(smallRows), await trailFixture(largeRows)];
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const all: number[][] = [[], []];
    const perQuery: Array<Record<string, number>> = [{}, {}];
    for (const q of TRAIL_QUERIES) {
      const samples: number[][] = [[], []];
      for (let i = 0; i < samplesPerQuery + 10; i++) {
        for (let k = 0; k < 2; k++) {
          const { f, mid, caller } = sizes[(i + k) % 2]!;
          const which = (i + k) % 2;
          const args: Record<string, unknown> = { ...q.args, limit: 50 };
          if (args.from === 'MID') args.from = mid.toISOString();
          if (args.to === 'MID+1h') args.to = new Date(mid.getTime() + 3600_000).toISOString();
          const t = performance.now();
          const env = await dispatchWithKey(f.rt, caller, f.ownerKey, 'audit.trail', args);
          const dt = performance.now() - t;
          if (!env.ok) throw new Error(`audit.trail ${q.name}: ${env.error?.reason}`);
          if (i >= 10) samples[which]!.push(dt);
        }
      }
      for (let k = 0; k < 2; k++) {
        perQuery[k]![q.name] = Math.round(p95(samples[k]!) * 1000) / 1000;
        all[k]!.push(...samples[k]!);
      }
    }
    return [0, 1].map((k) => ({ p95: p95(all[k]!), perQuery: perQuery[k]! }));
  } finally {
    for (const s of sizes) await s.f.close();
  }
}

/** audit.trail p95 latency at 10k and at 1M rows, same filters, through dispatch. */
export async function benchTrail(
  options: { small?: number; large?: number; samplesPerQuery?: number } = {},
): Promise<LedgerBenchResult[]> {
  const small = options.small ?? 10_000;
  const large = options.large ?? 1_000_000;
  const samples = options.samplesPerQuery ?? 200;
  const [a, b] = (await trailP95Pair(small, large, samples)) as [
    { p95: number; perQuery: Record<string, number> },
    { p95: number; perQuery: Record<string, number> },
  ];
  const ratio = Math.round((b.p95 / a.p95) * 100) / 100;
  return [
    {
      id: 'ledger.trail.p95',
      what: `audit.trail p95 latency (ms) at ${large.toLocaleString('en-US')} rows vs ${small.toLocaleString('en-US')} rows, ${TRAIL_QUERIES.length} filter sets, 50 per page`,
      value: Math.round(b.p95 * 1000) / 1000,
      baseline: Math.round(a.p95 * 1000) / 1000,
      ratio,
      unit: 'ms',
      target: 'ratio ≤ 1.5',
      met: ratio <= 1.5,
      notes: `p95 per filter set (ms), ${large} rows: ${JSON.stringify(b.perQuery)}; ${small} rows: ${JSON.stringify(a.perQuery)}`,
    },
  ];
}

/** Every ledger benchmark. */
export async function benchLedger(): Promise<LedgerBenchResult[]> {
  return [...(await benchIdempotentReplay()), ...(await benchAuditVerify()), ...(await benchTrail())];
}

// Run directly: node --import tsx bench/ledger.ts [idempotency|verify|trail]
if (import.meta.url === `file://${process.argv[1]}`) {
  const which = process.argv[2];
  const run =
    which === 'idempotency'
      ? benchIdempotentReplay
      : which === 'verify'
        ? benchAuditVerify
        : which === 'trail'
          ? benchTrail
          : benchLedger;
  for (const r of await run()) console.log(JSON.stringify(r));
}

/**
 * Retention on a generated chain of `rows` rows (default 1 000 000): `archiveAuditLog` of the
 * oldest 90 % (export to NDJSON, read back and verified, continuity record signed, rows deleted
 * through the narrowed trigger) as rows/s, then `audit verify` across the boundary — the database
 * alone (from the boundary on) and with `--archive` (the whole history) — each against `audit
 * verify` of the whole chain before the cut (same file, same run).
 */
export async function benchAuditRetention(options: { rows?: number } = {}): Promise<LedgerBenchResult[]> {
  const rows = options.rows ?? 1_000_000;
  const f = await fixture();
  try {
    const startMs = Date.parse('2026-01-01T00:00:00.000Z');
    await generateAuditChain(f.rt, f.store, 2, rows, { startMs });
    f.store.rawDatabase.pragma('wal_checkpoint(TRUNCATE)');
    const before = await verifyDatabaseFile(f.path, { tenant: 2 });
    if (!before.ok) throw new Error('the generated chain did not verify');
    const cut = Math.floor(rows * 0.9);
    const dir = join(f.dir, 'archive');
    const a0 = performance.now();
    const archived = await archiveAuditLog(f.rt.store, f.rt.keys, {
      companyId: 2,
      before: new Date(startMs + cut * 50 + 25),
      dir,
      now: new Date(startMs + rows * 50 + 1000),
    });
    const archiveS = (performance.now() - a0) / 1000;
    if (!archived.ok || archived.archived !== cut)
      throw new Error(`the archive did not hold ${cut} rows: ${JSON.stringify(archived).slice(0, 300)}`);
    await f.rt.checkpoints.checkpointAll();
    await f.rt.close();
    const after = await verifyDatabaseFile(f.path, { tenant: 2 });
    if (!after.ok || after.tenants[0]?.archived?.through_seq !== cut)
      throw new Error(
        `the kept chain did not verify: ${JSON.stringify(after.tenants[0]?.findings.slice(0, 3))}`,
      );
    const w0 = performance.now();
    const whole = await verifyDatabaseFile(f.path, { tenant: 2 });
    const db = new Store({ path: f.path });
    try {
      await checkArchives(whole, await db.read((q) => storedContinuity(q, 2)), dir, undefined);
    } finally {
      await db.close();
    }
    const wholeS = (performance.now() - w0) / 1000;
    if (!whole.ok)
      throw new Error(
        `the whole history did not verify: ${JSON.stringify(whole.tenants[0]?.findings.slice(0, 3))}`,
      );
    const archiveRate = Math.round(cut / archiveS);
    const wholeRate = Math.round(whole.rows_checked / wholeS);
    const base = before.rows_per_second;
    const note = `${rows.toLocaleString('en-US')} rows generated, the oldest ${cut.toLocaleString('en-US')} archived; ${availableParallelism()} CPUs, load ${loadavg()[0]!.toFixed(1)}; baseline: audit verify of the whole chain before the cut, ${base.toLocaleString('en-US')} rows/s`;
    return [
      {
        id: 'ledger.retention_archive',
        what: `solid audit archive of ${cut.toLocaleString('en-US')} rows of a ${rows.toLocaleString('en-US')}-row log (NDJSON export walked and written, read back and verified, continuity record signed, rows deleted) vs audit verify of the chain`,
        value: archiveRate,
        unit: 'rows/s',
        baseline: base,
        ratio: Math.round((archiveRate / base) * 100) / 100,
        notes: `${archiveS.toFixed(1)} s; ${note}`,
      },
      {
        id: 'ledger.retention_verify_kept',
        what: 'audit verify after the cut, the database alone: the signed continuity record, then the kept rows from the boundary on',
        value: after.rows_per_second,
        unit: 'rows/s',
        baseline: base,
        ratio: Math.round((after.rows_per_second / base) * 100) / 100,
        notes: `${(after.elapsed_ms / 1000).toFixed(2)} s for ${after.rows_checked.toLocaleString('en-US')} kept rows; passed, saying rows 1–${cut} are archived; ${note}`,
      },
      {
        id: 'ledger.retention_verify_whole',
        what: 'audit verify --archive after the cut: the archive file re-hashed against its signed record, then the kept rows — the whole history',
        value: wholeRate,
        unit: 'rows/s',
        baseline: base,
        ratio: Math.round((wholeRate / base) * 100) / 100,
        notes: `${wholeS.toFixed(2)} s for ${whole.rows_checked.toLocaleString('en-US')} rows; ${note}`,
      },
    ];
  } finally {
    await f.close();
  }
}
