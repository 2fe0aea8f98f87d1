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
 * that database. Sources: a SQLite file read directly (`verifyDatabaseFile` in verify-file.ts, worker threads on long
 * logs) or any Store (`verifyStoreChain`, e.g. PostgreSQL). A whole chain re-hashed by someone without the signing key is caught by the
 * checkpoints (or by a saved receipt/anchor), never by the hashes alone.
 * A tenant whose old rows were archived and pruned is walked from the signed boundary its
 * continuity records name (continuity-check.ts, spec/audit.md §retention).
 *
 * Speed: rows stream through an iterator; a row's canonical form is built directly from the stored
 * values (request_data is stored as its RFC 8785 text), one SHA-256 per row.
 */
import { createPublicKey, verify as nodeVerify, type KeyObject } from 'node:crypto';
import { StoreError } from '../../../store/store.ts';
import { openAuditFile, type AuditFile } from '../../../store/sqlite/audit-file.ts';
import { AUDIT_COLUMNS, GENESIS_HASH } from '../write/audit.ts';
import {
  I_COMPANY,
  SegmentWalker,
  storedInteger,
  type AuditFinding,
  type CheckedCheckpoint,
  type SegmentResult,
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
import type { Queryable, Store } from '../../../store/store.ts';
import { parseJson } from '../../../store/store.ts';
import type { PublicJwk } from '../keys/tenant-keys.ts';
import { checkpointMaterial } from '../keys/checkpoints.ts';
import {
  checkContinuity,
  storedContinuity,
  type ChainBase,
  type CheckedContinuity,
} from './continuity-check.ts';
import { VerbError } from '../../errors.ts';
import { checkStoredReceipts } from './receipt-check.ts';

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
  /**
   * Rows archived and pruned (spec/audit.md §retention): the chain was walked from the row after
   * `through_seq`, linked to the signed boundary hash; absent when nothing was pruned.
   */
  archived?: { through_seq: number; rows: number; records: number };
}

export interface AuditVerifyReport {
  ok: boolean;
  rows_checked: number;
  tenants: TenantVerifyReport[];
  elapsed_ms: number;
  rows_per_second: number;
  /** Stored receipts compared with their audit rows (checkStoredReceipts); absent when not checked. */
  receipts_checked?: number;
  /** Stored receipts whose row was archived and pruned: not compared with a row (§retention). */
  receipts_archived?: number;
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
  /**
   * Database walks only: the longest span (seconds, by the rows' created_at) the rows after a
   * tenant's last valid checkpoint may cover before that is the finding `unsigned_tail`.
   * Default UNSIGNED_TAIL_LIMITS.seconds; Infinity turns the check off.
   */
  maxUnsignedSeconds?: number;
  /** Database walks only: the most rows after the last valid checkpoint. Default UNSIGNED_TAIL_LIMITS.rows. */
  maxUnsignedRows?: number;
}

/**
 * How much of a tenant's chain may lie after its last valid checkpoint before `audit verify`
 * reports `unsigned_tail` (spec/audit.md §verify). The runtime signs a checkpoint every 1,000 rows
 * of a tenant, every 60 s for every tenant whose head moved, and when it closes, so an honest tail
 * covers at most about a minute (a crash) — these limits are five and ten times that. A longer
 * tail means checkpoints were deleted or the runtime never signed (a missing keyfile, a
 * maintenance pass turned off).
 */
export const UNSIGNED_TAIL_LIMITS = { seconds: 300, rows: 10_000 } as const;

/**
 * Add an `unsigned_tail` finding to each tenant of `report` whose rows after the last valid
 * checkpoint hold a run of activity (by created_at, split at pauses over 120 s: the runtime was
 * not running then) longer than `maxUnsignedSeconds`, or number more than `maxUnsignedRows`; a
 * tenant with rows and no valid checkpoint at all gets `no_checkpoint`. `q` reads each such tenant's
 * tail (at most maxUnsignedRows + 1 rows). Mutates the report (ok, finding_count, findings,
 * warnings). Spec: spec/audit.md §verify.
 */
export async function checkUnsignedTails(
  report: AuditVerifyReport,
  q: Pick<Queryable, 'all'>,
  options: Pick<VerifyOptions, 'maxUnsignedSeconds' | 'maxUnsignedRows' | 'maxFindings'> = {},
): Promise<void> {
  const maxSeconds = options.maxUnsignedSeconds ?? UNSIGNED_TAIL_LIMITS.seconds;
  const maxRows = options.maxUnsignedRows ?? UNSIGNED_TAIL_LIMITS.rows;
  if (!Number.isFinite(maxSeconds) && !Number.isFinite(maxRows)) return;
  for (const t of report.tenants) {
    if (t.unsigned_rows <= 0) continue;
    const from = t.last_signed_seq ?? 0;
    // The tail's rows (at most maxRows + 1 of them: one more is already a finding).
    const rows = await q.all<{ seq: number | string; created_at: string }>(
      `SELECT seq, created_at FROM audit_log WHERE company_id = ? AND seq > ? ORDER BY seq${Number.isFinite(maxRows) ? ' LIMIT ?' : ''}`,
      Number.isFinite(maxRows) ? [t.company_id, from, maxRows + 1] : [t.company_id, from],
    );
    if (rows.length === 0) continue;
    const run = longestActiveRun(rows.map((r) => Date.parse(r.created_at)));
    if (run.seconds <= maxSeconds && t.unsigned_rows <= maxRows) {
      // Short enough for a crash, but a whole chain with no signature at all is what deleting
      // every checkpoint and squeezing created_at leaves; the runtime signs a tenant's first row
      // at once (and then every minute), so an honest chain always has one.
      if (t.last_signed_seq === null && Number.isFinite(maxSeconds)) {
        t.finding_count++;
        t.ok = false;
        report.ok = false;
        if (t.findings.length < (options.maxFindings ?? 1000))
          t.findings.push({
            kind: 'no_checkpoint',
            company_id: t.company_id,
            seq: Number(rows[0]!.seq),
            message: `${t.unsigned_rows} rows and no valid signed checkpoint: the runtime signs a tenant's first row at once and then at least every minute, so its checkpoints were deleted (these rows may have been rewritten, timestamps included) or never written (a missing keyfile). Verify with --anchors, or --keys from an earlier \`solid audit export-keys\`.`,
          });
      }
      continue;
    }
    const firstSeq = Number(rows[0]!.seq);
    const signed = t.last_signed_seq === null ? 'no valid signed checkpoint' : `none after seq ${from}`;
    const what =
      t.unsigned_rows > maxRows
        ? `${t.unsigned_rows} rows (seq ${firstSeq}–${t.last_seq})`
        : `${t.unsigned_rows} rows (seq ${firstSeq}–${t.last_seq}, ${formatSpan(run.seconds)} of activity without a pause of ${DOWNTIME_GAP_SECONDS} s)`;
    t.finding_count++;
    t.ok = false;
    report.ok = false;
    if (t.findings.length < (options.maxFindings ?? 1000))
      t.findings.push({
        kind: 'unsigned_tail',
        company_id: t.company_id,
        seq: firstSeq,
        message: `${what} carry ${signed}: a running runtime signs at least every minute and on close, so checkpoints were deleted or never written (a missing keyfile, the maintenance pass off); these rows are chained but nothing proves they were not rewritten.`,
      });
  }
}

/**
 * A pause between two rows longer than this (seconds) means the runtime was not running (it signs
 * every 60 s while the head moves): an unsigned tail is split there, so a crash, a downtime and a
 * restart do not add up to one long unsigned span.
 */
const DOWNTIME_GAP_SECONDS = 120;

/** The longest span (seconds) of consecutive times (ms, in seq order) with no pause above DOWNTIME_GAP_SECONDS. */
function longestActiveRun(times: readonly number[]): { seconds: number } {
  let best = 0;
  let start = times[0]!;
  for (let i = 1; i < times.length; i++) {
    const gap = times[i]! - times[i - 1]!;
    if (!Number.isFinite(gap) || gap > DOWNTIME_GAP_SECONDS * 1000) start = times[i]!;
    else best = Math.max(best, times[i]! - start);
  }
  return { seconds: Number.isFinite(best) ? best / 1000 : 0 };
}

/** "3 h 12 min", "4 min 5 s", "12 s". */
function formatSpan(seconds: number): string {
  const s = Math.round(seconds);
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  if (s >= 60) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${s} s`;
}

export function keyMap(
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
export function checkCheckpoints(
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
  base?: ChainBase,
): TenantVerifyReport {
  const findings: AuditFinding[] = [...checkpointFindings];
  let count = checkpointFindings.length;
  const add = (f: AuditFinding) => {
    count++;
    findings.push(f);
  };
  let last = base?.seq ?? 0;
  let lastHash = base?.hash ?? GENESIS_HASH;
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
    unsigned_rows: last - (signed ?? base?.seq ?? 0),
    finding_count: count,
    findings: findings.slice(0, maxFindings),
    ...(base !== undefined
      ? { archived: { through_seq: base.seq, rows: base.rows, records: base.records } }
      : {}),
  };
}

export function assemble(
  t0: number,
  rows: number,
  segmentsByTenant: Map<number, SegmentResult[]>,
  checked: { byTenant: Map<number, CheckedCheckpoint[]>; findings: AuditFinding[] },
  heads: Map<number, ChainHead>,
  maxFindings: number,
  continuity?: CheckedContinuity,
): AuditVerifyReport {
  const ids = new Set<number>([
    ...segmentsByTenant.keys(),
    ...checked.byTenant.keys(),
    ...heads.keys(),
    ...(continuity?.bases.keys() ?? []),
  ]);
  const tenants = [...ids]
    .sort((a, b) => a - b)
    .map((id) =>
      tenantReport(
        id,
        (segmentsByTenant.get(id) ?? []).sort((a, b) => (a.first_seq ?? 0) - (b.first_seq ?? 0)),
        checked.byTenant.get(id) ?? [],
        [
          ...checked.findings.filter((f) => f.company_id === id),
          ...(continuity?.findings.filter((f) => f.company_id === id) ?? []),
        ],
        heads.get(id),
        maxFindings,
        continuity?.bases.get(id),
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

export function headMap(heads: Iterable<ChainHead>, only: number | undefined): Map<number, ChainHead> {
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
      cur = tenantWalker(walkers, companyId, checked, maxFindings);
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

/** The hint of every refused key file. */
export const KEY_FILE_HINT = 'Pass the file written by `solid audit export-keys`.';

/** Parse a key file: `{ keys: [...] , checkpoints?: [...] }` (a JWKS) or a bare array of JWKs. Throws invalid_request. */
export function parseTrustFile(text: string): TrustFile {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new VerbError('invalid_request', `The key file is not JSON: ${(err as Error).message}`, {
      hint: KEY_FILE_HINT,
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
      { hint: KEY_FILE_HINT },
    );
  }
  const cps = Array.isArray(doc) ? undefined : (doc as { checkpoints?: unknown }).checkpoints;
  return {
    keys: keys as PublicJwk[],
    ...(Array.isArray(cps) ? { checkpoints: cps as CheckpointRecord[] } : {}),
  };
}

const SELECT_ROWS = `SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log`;

/** The envelope error of an audit source that cannot be read (reason store_unavailable). */
export function storeUnavailable(message: string): VerbError {
  return new VerbError('store_unavailable', message, {
    hint: 'Pass the solid database with --db (or SOLID_DB).',
  });
}

/**
 * Open a solid SQLite database read-only for offline tools (store/sqlite/audit-file.ts: through a
 * private snapshot when it sits on read-only media). Throws VerbError store_unavailable.
 */
export function openAuditDatabase(path: string): AuditFile {
  try {
    return openAuditFile(path);
  } catch (err) {
    throw err instanceof StoreError ? storeUnavailable(err.message) : err;
  }
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

export const SAME_STORE_WARNING =
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
    continuity: await storedContinuity(q, t),
  }));
  options.onStart?.(meta.count);
  const checkpoints = [
    ...meta.checkpoints,
    ...(options.trust?.checkpoints ?? []).filter((c) => t === undefined || Number(c.company_id) === t),
  ];
  const checked = checkCheckpoints(checkpoints, keyMap(meta.keys), t);
  const continuity = checkContinuity(meta.continuity, keyMap(meta.keys), t);
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
      tenantWalker(walkers, companyId, checked, maxFindings, continuity).push(row);
    }
    total += rows.length;
    options.onProgress?.(total);
    if (rows.length < page) break;
    const last = rows[rows.length - 1]!;
    after = [last.company_id, last.seq];
  }
  const segments = new Map<number, SegmentResult[]>();
  for (const [id, w] of walkers) segments.set(id, [w.r]);
  const report = assemble(t0, total, segments, checked, headMap(meta.heads, t), maxFindings, continuity);
  report.warnings.push(...continuity.warnings);
  await store.read((q) => checkUnsignedTails(report, q, options));
  await store.read((q) => checkStoredReceipts(report, q, options));
  if (options.trust === undefined) report.warnings.push(SAME_STORE_WARNING);
  return report;
}

/**
 * The walker of `companyId`'s chain from its first row (seq 1, genesis hash — or, when rows were
 * archived and pruned, the row after the signed boundary and its hash), made on first use and
 * kept in `walkers`: every whole-chain walk (a Store, a SQLite file, one thread) starts its tenants so.
 */
export function tenantWalker(
  walkers: Map<number, SegmentWalker>,
  companyId: number,
  checked: { byTenant: Map<number, CheckedCheckpoint[]> },
  maxFindings: number,
  continuity?: CheckedContinuity,
): SegmentWalker {
  let w = walkers.get(companyId);
  if (w === undefined) {
    const base = continuity?.bases.get(companyId);
    w = new SegmentWalker(
      companyId,
      (base?.seq ?? 0) + 1,
      base?.hash ?? GENESIS_HASH,
      checked.byTenant.get(companyId) ?? [],
      maxFindings,
    );
    walkers.set(companyId, w);
  }
  return w;
}
