/**
 * Offline verification of the tamper-evident audit log (spec/audit.md §verify).
 *
 * `verifyAuditChain` walks each tenant's rows in seq order and recomputes every link:
 *   modified       the row's content does not hash to its row_hash
 *   chain_break    prev_hash is not the previous row's row_hash (or a duplicate seq, or the
 *                  head's hash differs from the last row's)
 *   gap            seq numbers are missing (deleted rows)
 *   truncated      the chain head, or a signed checkpoint, lies beyond the last row
 *   bad_signature  a checkpoint's ES256 signature is invalid, or the hash it signed is not the
 *                  row_hash at its seq (the history below it was rewritten)
 *   unknown_key    a checkpoint is signed by a key the verifier does not trust
 * It needs no secret: only rows, checkpoints and public keys. Keys exported earlier (`solid audit
 * export-keys`) are the trust anchor; keys read from the same database only prove consistency with
 * that database. Sources: a SQLite file read directly (`verifyDatabaseFile`, worker threads on long
 * logs) or any Store (`verifyStoreChain`, e.g. PostgreSQL). A whole chain re-hashed by someone without the signing key is caught by the
 * checkpoints (or by a saved receipt/anchor), never by the hashes alone.
 *
 * Speed: rows stream through an iterator; a row's canonical form is built directly from the stored
 * values (request_data is stored as its RFC 8785 text), one SHA-256 per row.
 */
import { createPublicKey, verify as nodeVerify, type KeyObject } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { AUDIT_COLUMNS, GENESIS_HASH } from './audit.ts';
import {
  I_COMPANY,
  SegmentWalker,
  storedInteger,
  storedRowHash,
  walkSqliteOrExact,
  type AuditFinding,
  type CheckedCheckpoint,
  type SegmentResult,
  type SegmentTask,
  type StoredAuditRow,
} from './chain-walk.ts';

export {
  VERIFY_COLUMNS,
  storedRowHash,
  serveSegmentWalks,
  type AuditFinding,
  type AuditFindingKind,
  type CheckedCheckpoint,
  type SegmentResult,
  type StoredAuditRow,
} from './chain-walk.ts';
import type { Queryable, Store } from '../../store/store.ts';
import { parseJson } from '../../store/store.ts';
import type { PublicJwk } from './tenant-keys.ts';
import { checkpointMaterial } from './checkpoints.ts';
import { VerbError } from '../errors.ts';

export interface TenantVerifyReport {
  company_id: number;
  ok: boolean;
  rows_checked: number;
  /** seq and row_hash of the last row walked (0 / genesis when none). */
  last_seq: number;
  last_hash: string;
  checkpoints_checked: number;
  /** Highest seq covered by a valid checkpoint signature, or null. */
  last_signed_seq: number | null;
  /** Rows after the last valid checkpoint: intact as a chain, but not yet signed. */
  unsigned_rows: number;
  /** Number of findings (the list may be capped by maxFindings). */
  finding_count: number;
  findings: AuditFinding[];
}

export interface AuditVerifyReport {
  ok: boolean;
  rows_checked: number;
  tenants: TenantVerifyReport[];
  elapsed_ms: number;
  rows_per_second: number;
  warnings: string[];
}

/** A stored checkpoint (audit_checkpoints row) or an exported anchor of the same form. */
export interface CheckpointRecord {
  company_id: number;
  seq: number;
  head_hash: string;
  created_at: string;
  kid: string;
  signature: string;
}

/** A tenant's chain head as the store records it (tenant_heads). */
export interface ChainHead {
  company_id: number;
  audit_seq: number;
  audit_hash: string;
}

export interface VerifyOptions {
  /** Only this tenant. */
  tenant?: number;
  /** Called every `progressEvery` rows with the number of rows walked so far. */
  onProgress?: (rows: number) => void;
  progressEvery?: number;
  /** Findings kept per tenant (all are counted). Default 1000. */
  maxFindings?: number;
}

function keyMap(
  publicKeys: readonly PublicJwk[] | ReadonlyMap<string, KeyObject>,
): ReadonlyMap<string, KeyObject> {
  if (!Array.isArray(publicKeys)) return publicKeys as ReadonlyMap<string, KeyObject>;
  const m = new Map<string, KeyObject>();
  for (const jwk of publicKeys as readonly PublicJwk[]) {
    try {
      m.set(
        jwk.kid,
        createPublicKey({ key: jwk as unknown as import('node:crypto').JsonWebKey, format: 'jwk' }),
      );
    } catch {
      /* an unusable key is simply not trusted */
    }
  }
  return m;
}

/** Check checkpoint signatures (they do not depend on the rows): per tenant, sorted by seq. */
function checkCheckpoints(
  checkpoints: Iterable<CheckpointRecord>,
  keys: ReadonlyMap<string, KeyObject>,
  only: number | undefined,
): { byTenant: Map<number, CheckedCheckpoint[]>; findings: AuditFinding[] } {
  const byTenant = new Map<number, CheckedCheckpoint[]>();
  const findings: AuditFinding[] = [];
  const seen = new Set<string>();
  for (const cp of checkpoints) {
    const companyId = Number(cp.company_id);
    if (only !== undefined && companyId !== only) continue;
    const seq = Number(cp.seq);
    const dedupe = `${companyId}|${seq}|${cp.signature}`;
    if (seen.has(dedupe)) continue;
    seen.add(dedupe);
    let valid = false;
    const key = keys.get(cp.kid);
    if (key === undefined) {
      findings.push({
        kind: 'unknown_key',
        company_id: companyId,
        seq,
        kid: cp.kid,
        message: `The checkpoint at seq ${seq} is signed by key ${cp.kid}, which is not among the trusted keys.`,
      });
    } else {
      try {
        const sig = Buffer.from(cp.signature, 'base64url');
        valid =
          sig.length === 64 &&
          sig.toString('base64url') === cp.signature &&
          nodeVerify(
            'sha256',
            checkpointMaterial({
              company_id: companyId,
              seq,
              head_hash: cp.head_hash,
              created_at: cp.created_at,
            }),
            { key, dsaEncoding: 'ieee-p1363' },
            sig,
          );
      } catch {
        valid = false;
      }
      if (!valid)
        findings.push({
          kind: 'bad_signature',
          company_id: companyId,
          seq,
          kid: cp.kid,
          message: `The signature of the checkpoint at seq ${seq} does not verify with key ${cp.kid}: the checkpoint was forged or altered.`,
        });
    }
    let list = byTenant.get(companyId);
    if (list === undefined) byTenant.set(companyId, (list = []));
    list.push({ seq, head_hash: cp.head_hash, kid: cp.kid, valid });
  }
  for (const list of byTenant.values()) list.sort((a, b) => a.seq - b.seq);
  return { byTenant, findings };
}

/**
 * One tenant's report from its segments (in seq order, contiguous ranges): stitch the boundaries
 * (gaps, links), then the tail (head and checkpoints beyond the last row).
 */
function tenantReport(
  companyId: number,
  segments: readonly SegmentResult[],
  checkpoints: readonly CheckedCheckpoint[],
  checkpointFindings: readonly AuditFinding[],
  head: ChainHead | undefined,
  maxFindings: number,
): TenantVerifyReport {
  const findings: AuditFinding[] = [...checkpointFindings];
  let count = checkpointFindings.length;
  const add = (f: AuditFinding) => {
    count++;
    findings.push(f);
  };
  let last = 0;
  let lastHash = GENESIS_HASH;
  let rows = 0;
  let signed: number | null = null;
  for (const seg of segments) {
    count += seg.finding_count;
    findings.push(...seg.findings);
    if (seg.rows === 0) continue;
    rows += seg.rows;
    const firstSeq = seg.first_seq!;
    if (firstSeq > last + 1) {
      const missing = firstSeq - last - 1;
      add({
        kind: 'gap',
        company_id: companyId,
        seq: last + 1,
        missing,
        message:
          missing === 1
            ? `Row seq ${last + 1} is missing (deleted).`
            : `Rows seq ${last + 1}–${firstSeq - 1} are missing (${missing} deleted).`,
      });
    } else if (firstSeq === last + 1 && !seg.first_modified && seg.first_prev_hash !== lastHash) {
      add({
        kind: 'chain_break',
        company_id: companyId,
        seq: firstSeq,
        message: `Row seq ${firstSeq} does not link to row seq ${firstSeq - 1}: prev_hash differs from that row's hash (a row was replaced or re-hashed).`,
      });
    }
    last = seg.last_seq!;
    lastHash = seg.last_hash!;
    if (seg.last_signed_seq !== null && (signed === null || seg.last_signed_seq > signed))
      signed = seg.last_signed_seq;
  }
  let checked = 0;
  for (const cp of checkpoints) {
    checked++;
    if (cp.seq > last)
      add({
        kind: 'truncated',
        company_id: companyId,
        seq: cp.seq,
        kid: cp.kid,
        message: `A checkpoint signed seq ${cp.seq}, but the log ends at seq ${last}: rows ${last + 1}–${cp.seq} were removed.`,
      });
  }
  if (head !== undefined) {
    if (head.audit_seq > last) {
      add({
        kind: 'truncated',
        company_id: companyId,
        seq: head.audit_seq,
        message: `The chain head records seq ${head.audit_seq}, but the log ends at seq ${last}: the tail was removed.`,
      });
    } else if (head.audit_seq === last && last > 0 && head.audit_hash !== lastHash) {
      add({
        kind: 'chain_break',
        company_id: companyId,
        seq: last,
        message: `The chain head's hash differs from the hash of the last row (seq ${last}).`,
      });
    }
  }
  findings.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
  return {
    company_id: companyId,
    ok: count === 0,
    rows_checked: rows,
    last_seq: last,
    last_hash: lastHash,
    checkpoints_checked: checked,
    last_signed_seq: signed,
    unsigned_rows: last - (signed ?? 0),
    finding_count: count,
    findings: findings.slice(0, maxFindings),
  };
}

function assemble(
  t0: number,
  rows: number,
  segmentsByTenant: Map<number, SegmentResult[]>,
  checked: { byTenant: Map<number, CheckedCheckpoint[]>; findings: AuditFinding[] },
  heads: Map<number, ChainHead>,
  maxFindings: number,
): AuditVerifyReport {
  const ids = new Set<number>([...segmentsByTenant.keys(), ...checked.byTenant.keys(), ...heads.keys()]);
  const tenants = [...ids]
    .sort((a, b) => a - b)
    .map((id) =>
      tenantReport(
        id,
        (segmentsByTenant.get(id) ?? []).sort((a, b) => (a.first_seq ?? 0) - (b.first_seq ?? 0)),
        checked.byTenant.get(id) ?? [],
        checked.findings.filter((f) => f.company_id === id),
        heads.get(id),
        maxFindings,
      ),
    );
  const elapsed = performance.now() - t0;
  return {
    ok: tenants.every((r) => r.ok),
    rows_checked: rows,
    tenants,
    elapsed_ms: Math.round(elapsed * 10) / 10,
    rows_per_second: elapsed > 0 ? Math.round((rows * 1000) / elapsed) : rows,
    warnings: [],
  };
}

function headMap(heads: Iterable<ChainHead>, only: number | undefined): Map<number, ChainHead> {
  const m = new Map<number, ChainHead>();
  for (const h of heads) {
    const companyId = Number(h.company_id);
    if (only === undefined || companyId === only)
      m.set(companyId, { company_id: companyId, audit_seq: Number(h.audit_seq), audit_hash: h.audit_hash });
  }
  return m;
}

/**
 * Verify audit chains. `rows` must come in (company_id, seq) order (the store's
 * UNIQUE(company_id, seq) index gives it); each row is an object of audit_log columns, or an array
 * of values in VERIFY_COLUMNS order (cheaper to stream). `checkpoints` may come in any order;
 * `heads` are the store's recorded chain heads (optional). Pure, offline, synchronous; never
 * throws on bad data.
 *
 * Returns a report per tenant (every tenant seen in rows, checkpoints or heads); `ok` is false on
 * any finding. Spec: spec/audit.md §verify.
 */
export function verifyAuditChain(
  rows: Iterable<StoredAuditRow | readonly unknown[]>,
  checkpoints: Iterable<CheckpointRecord>,
  publicKeys: readonly PublicJwk[] | ReadonlyMap<string, KeyObject>,
  heads: Iterable<ChainHead> = [],
  options: VerifyOptions = {},
): AuditVerifyReport {
  const t0 = performance.now();
  const maxFindings = options.maxFindings ?? 1000;
  const every = options.progressEvery ?? 16384;
  const only = options.tenant;
  const checked = checkCheckpoints(checkpoints, keyMap(publicKeys), only);
  const walkers = new Map<number, SegmentWalker>();
  let total = 0;
  let cur: SegmentWalker | undefined;
  for (const row of rows) {
    const companyId = storedInteger(
      Array.isArray(row) ? (row as readonly unknown[])[I_COMPANY] : (row as StoredAuditRow).company_id,
    );
    if (only !== undefined && companyId !== only) continue;
    if (cur === undefined || cur.r.company_id !== companyId) {
      cur = walkers.get(companyId);
      if (cur === undefined)
        walkers.set(
          companyId,
          (cur = new SegmentWalker(
            companyId,
            1,
            GENESIS_HASH,
            checked.byTenant.get(companyId) ?? [],
            maxFindings,
          )),
        );
    }
    cur.push(row);
    total++;
    if (every > 0 && total % every === 0) options.onProgress?.(total);
  }
  options.onProgress?.(total);
  const segments = new Map<number, SegmentResult[]>();
  for (const [id, w] of walkers) segments.set(id, [w.r]);
  return assemble(t0, total, segments, checked, headMap(heads, only), maxFindings);
}

/** A trusted key file: a JWKS, optionally with exported checkpoints (`solid audit export-keys`). */
export interface TrustFile {
  keys: PublicJwk[];
  checkpoints?: CheckpointRecord[];
}

/** Parse a key file: `{ keys: [...] , checkpoints?: [...] }` (a JWKS) or a bare array of JWKs. Throws invalid_request. */
export function parseTrustFile(text: string): TrustFile {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new VerbError('invalid_request', `The key file is not JSON: ${(err as Error).message}`, {
      hint: 'Pass the file written by `solid audit export-keys`.',
    });
  }
  const keys = Array.isArray(doc) ? doc : (doc as { keys?: unknown })?.keys;
  if (
    !Array.isArray(keys) ||
    keys.some((k) => typeof k !== 'object' || k === null || typeof (k as { kid?: unknown }).kid !== 'string')
  ) {
    throw new VerbError(
      'invalid_request',
      'The key file must be a JWKS: { "keys": [ { "kid": …, "kty": "EC", … } ] }.',
      { hint: 'Pass the file written by `solid audit export-keys`.' },
    );
  }
  const cps = Array.isArray(doc) ? undefined : (doc as { checkpoints?: unknown }).checkpoints;
  return {
    keys: keys as PublicJwk[],
    ...(Array.isArray(cps) ? { checkpoints: cps as CheckpointRecord[] } : {}),
  };
}

const SELECT_ROWS = `SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log`;

/** A path SQLite can open read-only for `path`, and what to do when done with it. */
export interface ReadableAuditPath {
  path: string;
  /** True when `path` is a private snapshot (the original sits where SQLite cannot write). */
  snapshot: boolean;
  /** For a snapshot: whether the original had a `-wal` file next to it (copied and folded in). */
  hadWal?: boolean;
  release(): void;
}

/**
 * Where to read the audit log of the SQLite database `path` from. Normally `path` itself, opened
 * read-only. A WAL-mode database on read-only media (a write-protected copy handed to an auditor,
 * a read-only mount) cannot be opened even read-only — SQLite must create its `-shm` file next
 * to it — so then the database and its `-wal`, when present, are copied into a private temp
 * directory, the WAL is folded into the copy, and the copy is read; `release()` deletes it (also
 * at process exit). The copy needs as much free temp space as the database.
 * Reasons (thrown): store_unavailable (missing file, not a solid database, unreadable).
 */
export function readableAuditPath(path: string): ReadableAuditPath {
  const probe = (p: string): void => {
    const db = new Database(p, { readonly: true, fileMustExist: true });
    try {
      db.prepare('SELECT 1 FROM audit_log LIMIT 1').get();
    } finally {
      db.close();
    }
  };
  const unavailable = (err: unknown) =>
    new VerbError('store_unavailable', `Cannot read an audit log at ${path}: ${(err as Error).message}`, {
      hint: 'Pass the solid database with --db (or SOLID_DB).',
    });
  try {
    probe(path);
    return { path, snapshot: false, release: () => {} };
  } catch (err) {
    if (!existsSync(path) || !/readonly|read-only|unable to open/i.test((err as Error).message))
      throw unavailable(err);
  }
  const dir = mkdtempSync(join(tmpdir(), 'solid-audit-snapshot-'));
  // The copy holds the business's data: deleted on release, at exit, and on a terminating signal
  // (then the signal is raised again, so the process still ends the way it was asked to).
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const remove = () => rmSync(dir, { recursive: true, force: true });
  const onSignal = (signal: NodeJS.Signals) => {
    detach();
    remove();
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  };
  const detach = () => {
    process.removeListener('exit', remove);
    for (const sig of signals) process.removeListener(sig, onSignal);
  };
  const release = () => {
    detach();
    remove();
  };
  process.once('exit', remove);
  for (const sig of signals) process.once(sig, onSignal);
  const hadWal = existsSync(`${path}-wal`);
  try {
    const copy = join(dir, 'audit.db');
    copyFileSync(path, copy);
    chmodSync(copy, 0o600); // the copy keeps the original's (read-only) mode otherwise
    if (hadWal) {
      copyFileSync(`${path}-wal`, `${copy}-wal`);
      chmodSync(`${copy}-wal`, 0o600);
    }
    const db = new Database(copy, { fileMustExist: true });
    try {
      db.pragma('journal_mode = DELETE'); // folds the WAL into the copy; later opens need no -shm
    } finally {
      db.close();
    }
    probe(copy);
    return { path: copy, snapshot: true, hadWal, release };
  } catch (err) {
    release();
    throw unavailable(err);
  }
}

/**
 * Open a solid SQLite database read-only (no runtime, no keyfile), through a private snapshot when
 * it sits on read-only media (readableAuditPath; deleted when the connection closes).
 * Throws store_unavailable.
 */
export function openAuditDatabase(path: string): Database.Database {
  const source = readableAuditPath(path);
  try {
    const db = new Database(source.path, { readonly: true, fileMustExist: true });
    if (source.snapshot) {
      const close = db.close.bind(db);
      db.close = () => {
        close();
        source.release();
        return db;
      };
    }
    return db;
  } catch (err) {
    source.release();
    throw new VerbError(
      'store_unavailable',
      `Cannot read an audit log at ${path}: ${(err as Error).message}`,
      { hint: 'Pass the solid database with --db (or SOLID_DB).' },
    );
  }
}

/** A read-only Queryable over a better-sqlite3 connection (offline tools, no Store needed). */
export function sqliteQueryable(db: Database.Database): Queryable {
  return {
    get: async <T>(sql: string, params: readonly unknown[] = []) =>
      db.prepare(sql).get(...params) as T | undefined,
    all: async <T>(sql: string, params: readonly unknown[] = []) => db.prepare(sql).all(...params) as T[],
    run: async () => {
      throw new VerbError('store_unavailable', 'This audit source is read-only.');
    },
  };
}

/** Every public key a database holds, any state (retired keys still verify old checkpoints). */
export async function databaseKeys(q: Queryable, tenant?: number): Promise<PublicJwk[]> {
  const rows = await q.all<{ public_jwk: unknown }>(
    `SELECT public_jwk FROM tenant_keys${tenant === undefined ? '' : ' WHERE company_id = ?'} ORDER BY company_id, created_at, kid`,
    tenant === undefined ? [] : [tenant],
  );
  return rows.map((r) => parseJson<PublicJwk>(r.public_jwk));
}

/** The latest checkpoint of each tenant (the anchors export-keys writes). */
export async function latestCheckpoints(q: Queryable, tenant?: number): Promise<CheckpointRecord[]> {
  const sql = `SELECT c.company_id, c.seq, c.head_hash, c.created_at, c.kid, c.signature FROM audit_checkpoints c
    WHERE c.seq = (SELECT MAX(seq) FROM audit_checkpoints m WHERE m.company_id = c.company_id)${tenant === undefined ? '' : ' AND c.company_id = ?'} ORDER BY c.company_id`;
  const rows = await q.all<CheckpointRecord>(sql, tenant === undefined ? [] : [tenant]);
  return rows.map((r) => ({ ...r, company_id: Number(r.company_id), seq: Number(r.seq) }));
}

const SAME_STORE_WARNING =
  'No trusted keys given (--keys): checkpoint signatures were checked with the public keys stored in this same database, so someone able to rewrite the database could also have replaced them. Export the keys once (`solid audit export-keys`) and keep the file elsewhere.';

/**
 * Verify the audit log through any Store (SQLite or PostgreSQL): rows are read in pages of
 * `pageRows` in (company_id, seq) order (keyset pagination on the UNIQUE(company_id, seq) index),
 * one snapshot per page; rows appended meanwhile land after the heads read first and are simply
 * walked too. Findings as verifyAuditChain. Spec: spec/audit.md §verify.
 */
export async function verifyStoreChain(
  store: Store,
  options: VerifyOptions & { trust?: TrustFile; pageRows?: number; onStart?: (rows: number) => void } = {},
): Promise<AuditVerifyReport> {
  const t0 = performance.now();
  const t = options.tenant;
  const maxFindings = options.maxFindings ?? 1000;
  const where = t === undefined ? '' : ' WHERE company_id = ?';
  const params = t === undefined ? [] : [t];
  const meta = await store.read(async (q) => ({
    count: Number((await q.get<{ n: number }>(`SELECT COUNT(*) AS n FROM audit_log${where}`, params))!.n),
    checkpoints: await q.all<CheckpointRecord>(
      `SELECT company_id, seq, head_hash, created_at, kid, signature FROM audit_checkpoints${where}`,
      params,
    ),
    heads: await q.all<ChainHead>(
      `SELECT company_id, audit_seq, audit_hash FROM tenant_heads${where}`,
      params,
    ),
    keys: options.trust === undefined ? await databaseKeys(q, t) : options.trust.keys,
  }));
  options.onStart?.(meta.count);
  const checkpoints = [
    ...meta.checkpoints,
    ...(options.trust?.checkpoints ?? []).filter((c) => t === undefined || Number(c.company_id) === t),
  ];
  const checked = checkCheckpoints(checkpoints, keyMap(meta.keys), t);
  const walkers = new Map<number, SegmentWalker>();
  const page = Math.max(1, options.pageRows ?? 10_000);
  // The last row's values as stored (not coerced: a hand-put text seq must not end the paging).
  let after: [unknown, unknown] = [-1, -1];
  let total = 0;
  for (;;) {
    const rows = await store.read((q) =>
      q.all<StoredAuditRow>(
        `${SELECT_ROWS} WHERE (company_id, seq) > (?, ?)${t === undefined ? '' : ' AND company_id = ?'} ORDER BY company_id, seq LIMIT ?`,
        [...after, ...params, page],
      ),
    );
    for (const row of rows) {
      const companyId = storedInteger(row.company_id);
      let w = walkers.get(companyId);
      if (w === undefined)
        walkers.set(
          companyId,
          (w = new SegmentWalker(
            companyId,
            1,
            GENESIS_HASH,
            checked.byTenant.get(companyId) ?? [],
            maxFindings,
          )),
        );
      w.push(row);
    }
    total += rows.length;
    options.onProgress?.(total);
    if (rows.length < page) break;
    const last = rows[rows.length - 1]!;
    after = [last.company_id, last.seq];
  }
  const segments = new Map<number, SegmentResult[]>();
  for (const [id, w] of walkers) segments.set(id, [w.r]);
  const report = assemble(t0, total, segments, checked, headMap(meta.heads, t), maxFindings);
  if (options.trust === undefined) report.warnings.push(SAME_STORE_WARNING);
  return report;
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

/**
 * Verify the audit log of a SQLite database file directly (offline: no runtime, no secrets).
 * Long logs are walked in seq-range chunks by worker threads and stitched (same findings as one
 * sequential walk); if workers cannot start, one thread walks it (a warning says so).
 * Reasons (thrown): store_unavailable. Findings are in the report. Spec: spec/audit.md §verify.
 */
export async function verifyDatabaseFile(
  original: string,
  options: VerifyDatabaseOptions = {},
): Promise<AuditVerifyReport> {
  const t0 = performance.now();
  const source = readableAuditPath(original);
  const path = source.path; // the workers open the same file
  // readableAuditPath has opened and probed `path` already: open it, no second probe.
  const open = () => new Database(path, { readonly: true, fileMustExist: true });
  let db: Database.Database;
  try {
    db = open();
  } catch (err) {
    source.release();
    throw new VerbError(
      'store_unavailable',
      `Cannot read an audit log at ${original}: ${(err as Error).message}`,
      { hint: 'Pass the solid database with --db (or SOLID_DB).' },
    );
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
        report = await parallelWalk(path, ranges, checkpoints, keys, heads, options, workers, t0);
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
        let walkers = new Map<number, SegmentWalker>();
        let total = 0;
        walkSqliteOrExact(
          rdb,
          () => {
            walkers = new Map();
            total = 0;
            return (companyId) => {
              let w = walkers.get(companyId);
              if (w === undefined)
                walkers.set(
                  companyId,
                  (w = new SegmentWalker(
                    companyId,
                    1,
                    GENESIS_HASH,
                    checked.byTenant.get(companyId) ?? [],
                    maxFindings,
                  )),
                );
              return w;
            };
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
        report = assemble(t0, total, segments, checked, headMap(heads, t), maxFindings);
      } finally {
        if (closed) rdb.close();
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
 * the built package ships that bundle (`dist/runtime/ledger/chain-walk.cjs`, made by `npm run
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
): Promise<AuditVerifyReport> {
  const maxFindings = options.maxFindings ?? 1000;
  const checked = checkCheckpoints(checkpoints, keyMap(keys), options.tenant);
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
  return assemble(t0, done, segments, checked, headMap(heads, options.tenant), maxFindings);
}

/** Outcome of checking a receipt's attestation against a local audit log. */
export interface ReceiptLogCheck {
  /** present: the row at the receipt's seq exists with the same hash and intact content. */
  status: 'present' | 'missing' | 'different' | 'unknown_tenant';
  company_id?: number;
  seq: number;
  message: string;
}

/**
 * Check a receipt's attestation (seq, row_hash, prev_hash, kid) against a SQLite audit log: the
 * row at that seq must exist, carry the same hashes, and its content must still hash to them.
 * That proves the log was neither rewritten nor truncated below the receipt.
 */
export async function checkReceiptInLog(
  q: Queryable,
  attestation: { kid: string; seq: number; row_hash: string; prev_hash: string },
): Promise<ReceiptLogCheck> {
  const seq = Number(attestation.seq);
  const owner = await q.get<{ company_id: number }>('SELECT company_id FROM tenant_keys WHERE kid = ?', [
    attestation.kid,
  ]);
  if (owner === undefined)
    return {
      status: 'unknown_tenant',
      seq,
      message: `This log holds no key ${attestation.kid}: the receipt was not issued by this database.`,
    };
  const company = Number(owner.company_id);
  const row = await q.get<StoredAuditRow>(`${SELECT_ROWS} WHERE company_id = ? AND seq = ?`, [company, seq]);
  if (row === undefined) {
    return {
      status: 'missing',
      company_id: company,
      seq,
      message: `Tenant ${company}'s log has no row at seq ${seq}: the log was truncated or rows were deleted below this receipt.`,
    };
  }
  if (
    row.row_hash !== attestation.row_hash ||
    row.prev_hash !== attestation.prev_hash ||
    storedRowHash(row) !== attestation.row_hash
  ) {
    return {
      status: 'different',
      company_id: company,
      seq,
      message: `Tenant ${company}'s row at seq ${seq} is not the row this receipt attests: the log was rewritten.`,
    };
  }
  return {
    status: 'present',
    company_id: company,
    seq,
    message: `Tenant ${company}'s log holds this receipt's row at seq ${seq}, unchanged.`,
  };
}
