/**
 * Verification of a SQLite database file's audit log, offline (spec/audit.md §verify): the file is
 * read through store/sqlite/audit-file.ts; long logs are walked in seq ranges by worker threads
 * running chain-walk.ts and stitched into the same report one sequential walk would give.
 */
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { StoreError } from '../../../store/store.ts';
import {
  openReadOnly,
  readableAuditPath,
  sqliteQueryable,
  type AuditFile,
  type ReadableAuditPath,
} from '../../../store/sqlite/audit-file.ts';
import { walkSqliteOrExact, type SegmentWalker, type SegmentResult, type SegmentTask } from './chain-walk.ts';
import type { PublicJwk } from '../keys/tenant-keys.ts';
import {
  SAME_STORE_WARNING,
  assemble,
  checkUnsignedTails,
  checkCheckpoints,
  databaseKeys,
  headMap,
  keyMap,
  storeUnavailable,
  tenantWalker,
  type AuditVerifyReport,
  type ChainHead,
  type CheckpointRecord,
  type TrustFile,
  type VerifyOptions,
} from './verify.ts';
import { checkContinuity, storedContinuity } from './continuity-check.ts';
import { checkStoredReceipts } from './receipt-check.ts';
import type { ContinuityRecord } from '../keys/continuity.ts';

/** readableAuditPath with its StoreError as the store_unavailable envelope reason. */
function auditSource(path: string): ReadableAuditPath {
  try {
    return readableAuditPath(path);
  } catch (err) {
    throw err instanceof StoreError ? storeUnavailable(err.message) : err;
  }
}

export interface VerifyDatabaseOptions extends VerifyOptions {
  /** Trusted keys (and anchors). Without it the database's own keys are used, with a warning. */
  trust?: TrustFile;
  /** Called once with the number of rows to walk (progress bars). */
  onStart?: (rows: number) => void;
  /** Walk with worker threads when the log holds at least this many rows. Default 100 000. */
  parallelMinRows?: number;
  /** Worker threads for a parallel walk. Default: the available parallelism (at most 8). */
  workers?: number;
  /** seq numbers per chunk of a parallel walk. Default: rows / (4 × workers), at least 20 000. */
  chunkRows?: number;
}

/** The append-only triggers of audit_log (runtime migration 1) this file no longer has. */
function missingAppendOnlyTriggers(db: AuditFile): string[] {
  const present = new Set(
    (
      db
        .prepare(`SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit_log'`)
        .all() as Array<{ name: string }>
    ).map((r) => r.name),
  );
  return ['audit_log_no_update', 'audit_log_no_delete'].filter((n) => !present.has(n));
}

/**
 * Verify the audit log of a SQLite database file directly (offline: no runtime, no secrets).
 * Long logs are walked in seq-range chunks by worker threads and stitched (same findings as one
 * sequential walk); if workers cannot start, one thread walks it (a warning says so).
 * Missing append-only triggers are a warning (someone dropped them to edit rows).
 * Reasons (thrown): store_unavailable. Findings are in the report. Spec: spec/audit.md §verify.
 */
export async function verifyDatabaseFile(
  original: string,
  options: VerifyDatabaseOptions = {},
): Promise<AuditVerifyReport> {
  const t0 = performance.now();
  const source = auditSource(original);
  const path = source.path; // the workers open the same file
  // readableAuditPath has opened and probed `path` already: open it, no second probe.
  const open = () => openReadOnly(path);
  let db: AuditFile;
  try {
    db = open();
  } catch (err) {
    source.release();
    throw storeUnavailable(`Cannot read an audit log at ${original}: ${(err as Error).message}`);
  }
  let closed = false;
  try {
    const t = options.tenant;
    const where = t === undefined ? '' : ' WHERE company_id = ?';
    const params = t === undefined ? [] : [t];
    const count = Number(
      (db.prepare(`SELECT COUNT(*) AS n FROM audit_log${where}`).get(...params) as { n: number }).n,
    );
    options.onStart?.(count);
    const checkpoints = db
      .prepare(`SELECT company_id, seq, head_hash, created_at, kid, signature FROM audit_checkpoints${where}`)
      .all(...params) as CheckpointRecord[];
    const heads = db
      .prepare(`SELECT company_id, audit_seq, audit_hash FROM tenant_heads${where}`)
      .all(...params) as ChainHead[];
    const warnings: string[] = [];
    const missing = missingAppendOnlyTriggers(db);
    if (missing.length > 0)
      warnings.push(
        `The append-only trigger${missing.length === 1 ? '' : 's'} ${missing.join(' and ')} of audit_log ${missing.length === 1 ? 'is' : 'are'} missing: the runtime creates them and never drops them, so someone with write access to this file removed ${missing.length === 1 ? 'it' : 'them'} (to edit or delete rows).`,
      );
    let keys: PublicJwk[];
    if (options.trust !== undefined) {
      keys = options.trust.keys;
      checkpoints.push(
        ...(options.trust.checkpoints ?? []).filter((c) => t === undefined || Number(c.company_id) === t),
      );
    } else {
      keys = await databaseKeys(sqliteQueryable(db), t);
      warnings.push(SAME_STORE_WARNING);
    }
    const continuityRecords = await storedContinuity(sqliteQueryable(db), t);
    const workers = Math.max(1, Math.min(options.workers ?? availableParallelism(), 8));
    let report: AuditVerifyReport | undefined;
    // The parallel walk splits each tenant's integer seq range; a row whose seq or company_id is
    // stored as text lies outside every range, so then the one-thread walk (which meets it) runs.
    const handPut = () =>
      db
        .prepare(
          `SELECT 1 FROM audit_log WHERE typeof(seq) <> 'integer' OR typeof(company_id) <> 'integer' LIMIT 1`,
        )
        .get() !== undefined;
    if (count >= (options.parallelMinRows ?? 100_000) && workers > 1 && !handPut()) {
      const ranges = db
        .prepare(
          `SELECT company_id, MIN(seq) AS lo, MAX(seq) AS hi FROM audit_log${where} GROUP BY company_id`,
        )
        .all(...params) as Array<{ company_id: number; lo: number; hi: number }>;
      db.close();
      closed = true;
      try {
        report = await parallelWalk(
          path,
          ranges,
          checkpoints,
          keys,
          heads,
          options,
          workers,
          t0,
          continuityRecords,
        );
      } catch (err) {
        warnings.push(
          `The parallel walk could not run (${(err as Error).message}); the log was walked on one thread.`,
        );
      }
    }
    if (report === undefined) {
      const rdb = closed ? open() : db;
      try {
        const maxFindings = options.maxFindings ?? 1000;
        const every = options.progressEvery ?? 16384;
        const checked = checkCheckpoints(checkpoints, keyMap(keys), t);
        const continuity = checkContinuity(continuityRecords, keyMap(keys), t);
        let walkers = new Map<number, SegmentWalker>();
        let total = 0;
        walkSqliteOrExact(
          rdb,
          () => {
            walkers = new Map();
            total = 0;
            return (companyId) => tenantWalker(walkers, companyId, checked, maxFindings, continuity);
          },
          `${where} ORDER BY company_id, seq`,
          params,
          () => {
            if (++total % every === 0) options.onProgress?.(total);
          },
        );
        options.onProgress?.(total);
        const segments = new Map<number, SegmentResult[]>();
        for (const [id, w] of walkers) segments.set(id, [w.r]);
        report = assemble(t0, total, segments, checked, headMap(heads, t), maxFindings, continuity);
        report.warnings.push(...continuity.warnings);
      } finally {
        if (closed) rdb.close();
      }
    }
    {
      const tdb = closed ? open() : db;
      try {
        await checkUnsignedTails(report, sqliteQueryable(tdb), options);
        await checkStoredReceipts(report, sqliteQueryable(tdb), options);
      } finally {
        if (closed) tdb.close();
      }
    }
    if (source.snapshot) {
      report.warnings.push(
        source.hadWal
          ? `${original} is on read-only media; a private copy of it and its -wal file was verified (and deleted).`
          : `${original} is on read-only media; a private copy of it was verified (and deleted). No -wal file was next to it: if the original database had one, rows committed since its last checkpoint are not in this copy — copy the -wal file too.`,
      );
    }
    report.warnings.push(...warnings);
    return report;
  } finally {
    if (!closed) db.close();
    source.release();
  }
}

/**
 * Worker bootstrap (CommonJS, eval). The worker runs chain-walk.ts bundled to plain JavaScript:
 * the built package ships that bundle (`dist/runtime/ledger/verify/chain-walk.cjs`, made by `npm run
 * build`); run from the TypeScript sources it is bundled once per process with esbuild (a
 * development dependency). A worker then starts in tens of milliseconds instead of booting a
 * TypeScript loader of its own. better-sqlite3 (native) is required from the package, never bundled.
 */
const WORKER_BOOT = `
const { parentPort, workerData } = require('node:worker_threads');
try {
  const req = require('node:module').createRequire(workerData.base);
  const mod = { exports: {} };
  new Function('require', 'module', 'exports', workerData.code)(req, mod, mod.exports);
  mod.exports.serveSegmentWalks(parentPort, workerData.path, workerData.maxFindings);
} catch (e) {
  parentPort.postMessage({ fatal: String((e && e.stack) || e) });
}
`;

/** The prebuilt worker script beside the built verify.js (absent when running from sources). */
export const PREBUILT_WALKER = fileURLToPath(new URL('./chain-walk.cjs', import.meta.url));

/**
 * esbuild options that bundle chain-walk.ts for the worker (serve-time from sources, and the build).
 * Typed here, not as esbuild's BuildOptions: the shipped .d.ts must not need esbuild installed.
 */
export interface WalkerBundleOptions {
  entryPoints: string[];
  bundle: true;
  platform: 'node';
  format: 'cjs';
  target: string;
  external: string[];
  logLevel: 'silent';
}

/** The options of {@link WalkerBundleOptions}. */
export function walkerBundleOptions(): WalkerBundleOptions {
  return {
    entryPoints: [fileURLToPath(new URL('./chain-walk.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['better-sqlite3'],
    logLevel: 'silent',
  };
}

let workerCode: Promise<string> | undefined;

/** chain-walk and what it imports as one CommonJS script: the prebuilt file, or bundled (cached per process). */
function bundledWalker(): Promise<string> {
  workerCode ??= (async () => {
    if (existsSync(PREBUILT_WALKER)) return readFileSync(PREBUILT_WALKER, 'utf8');
    const esbuild = await import('esbuild');
    const out = await esbuild.build({ ...walkerBundleOptions(), write: false });
    return out.outputFiles[0]!.text;
  })();
  workerCode.catch(() => {
    workerCode = undefined;
  });
  return workerCode;
}

async function parallelWalk(
  path: string,
  ranges: Array<{ company_id: number; lo: number; hi: number }>,
  checkpoints: CheckpointRecord[],
  keys: readonly PublicJwk[],
  heads: ChainHead[],
  options: VerifyDatabaseOptions,
  workers: number,
  t0: number,
  continuityRecords: readonly ContinuityRecord[],
): Promise<AuditVerifyReport> {
  const maxFindings = options.maxFindings ?? 1000;
  const checked = checkCheckpoints(checkpoints, keyMap(keys), options.tenant);
  const continuity = checkContinuity(continuityRecords, keyMap(keys), options.tenant);
  const span = ranges.reduce((n, r) => n + (Number(r.hi) - Math.min(1, Number(r.lo)) + 1), 0);
  const chunk = Math.max(1, options.chunkRows ?? Math.max(20_000, Math.ceil(span / (workers * 4))));
  const tasks: SegmentTask[] = [];
  for (const r of ranges) {
    const companyId = Number(r.company_id);
    const cps = checked.byTenant.get(companyId) ?? [];
    for (let from = Math.min(1, Number(r.lo)); from <= Number(r.hi); from += chunk) {
      const to = Math.min(Number(r.hi), from + chunk - 1);
      tasks.push({
        id: tasks.length,
        company_id: companyId,
        from,
        to,
        checkpoints: cps.filter((c) => c.seq >= from && c.seq <= to),
      });
    }
  }
  const code = await bundledWalker();
  const results: SegmentResult[] = [];
  let done = 0;
  let next = 0;
  const pool: Worker[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      let live = Math.min(workers, tasks.length);
      if (live === 0) return resolve();
      for (let i = 0; i < live; i++) {
        const w = new Worker(WORKER_BOOT, {
          eval: true,
          workerData: { code, base: fileURLToPath(import.meta.url), path, maxFindings },
        });
        pool.push(w);
        const feed = () => {
          if (next < tasks.length) w.postMessage(tasks[next++]);
          else {
            w.postMessage(null);
            if (--live === 0) resolve();
          }
        };
        w.on('message', (m: { ready?: boolean; fatal?: string; id?: number; result?: SegmentResult }) => {
          if (m.fatal !== undefined) return reject(new Error(`worker failed: ${m.fatal.split('\n')[0]}`));
          if (m.result !== undefined) {
            results.push(m.result);
            done += m.result.rows;
            options.onProgress?.(done);
          }
          feed();
        });
        w.on('error', reject);
      }
    });
  } finally {
    for (const w of pool) void w.terminate();
  }
  const segments = new Map<number, SegmentResult[]>();
  for (const r of results) {
    let list = segments.get(r.company_id);
    if (list === undefined) segments.set(r.company_id, (list = []));
    list.push(r);
  }
  const report = assemble(
    t0,
    done,
    segments,
    checked,
    headMap(heads, options.tenant),
    maxFindings,
    continuity,
  );
  report.warnings.push(...continuity.warnings);
  return report;
}
