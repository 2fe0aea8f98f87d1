/**
 * The hot path of audit verification, shared by the main thread and the worker threads: the
 * canonical hash of a stored row, the walk over one tenant's rows in seq order (SegmentWalker),
 * the SQLite fast query, and the worker's loop. Kept apart from verify.ts so a worker loads only
 * this (no runtime). Spec: spec/audit.md §verify.
 */
import { sha256Hex } from '../../sha256.ts';
import type { MessagePort } from 'node:worker_threads';
import canonicalize from 'canonicalize';
import Database from 'better-sqlite3';
import { AUDIT_COLUMNS } from '../write/audit.ts';

export type AuditFindingKind =
  | 'modified'
  | 'chain_break'
  | 'gap'
  | 'truncated'
  | 'bad_signature'
  | 'unknown_key'
  | 'unsigned_tail'
  | 'receipt_mismatch'
  | 'no_checkpoint'
  | 'rolled_back';

export interface AuditFinding {
  kind: AuditFindingKind;
  company_id: number;
  /** The row (or first missing seq, or checkpoint seq) concerned. */
  seq?: number;
  audit_id?: number;
  /** For gaps: how many seq numbers are missing. */
  missing?: number;
  kid?: string;
  message: string;
}

/** A row as stored: every audit_log column (request_data as its canonical text, or parsed). */
export type StoredAuditRow = Record<string, unknown>;

const HASHED_COLUMNS = AUDIT_COLUMNS.filter((c) => c !== 'row_hash').sort();
/**
 * Column order of a row given as an array (the fast path of the file verifier): the hashed
 * columns in canonical key order, then row_hash.
 */
export const VERIFY_COLUMNS: readonly string[] = [...HASHED_COLUMNS, 'row_hash'];
const NUMERIC = new Set([
  'audit_id',
  'company_id',
  'seq',
  'user_id',
  'parent_id',
  'approved_by',
  'is_reversible',
  'requires_approval',
  'latency_ms',
]);
/** `"col":` with the separating comma, per hashed column, in canonical key order (0x00 domain prefix first). */
const KEY_PREFIX = HASHED_COLUMNS.map((c, i) => (i === 0 ? '\u0000{' : ',') + JSON.stringify(c) + ':');
const IS_NUMERIC = HASHED_COLUMNS.map((c) => NUMERIC.has(c));
const N_HASHED = HASHED_COLUMNS.length;
const REQUEST_DATA = HASHED_COLUMNS.indexOf('request_data');
/** The consent provenance column: hashed only when present (rows before it hash as before). */
const CONSENT = HASHED_COLUMNS.indexOf('consent');
export const I_COMPANY = VERIFY_COLUMNS.indexOf('company_id');
const I_SEQ = VERIFY_COLUMNS.indexOf('seq');
const I_AUDIT = VERIFY_COLUMNS.indexOf('audit_id');
const I_PREV = VERIFY_COLUMNS.indexOf('prev_hash');
const I_HASH = VERIFY_COLUMNS.indexOf('row_hash');

/**
 * An integer column's value as stored: a number that is a safe integer, a bigint, or (PostgreSQL
 * BIGINT) canonical decimal text; anything else — SQLite text such as 'x' or '0x10' in an INTEGER
 * column — is NaN, never coerced.
 */
export function storedInteger(v: unknown): number {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : Number.NaN;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && /^(0|-?[1-9]\d*)$/.test(v)) {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : Number.NaN;
  }
  return Number.NaN;
}

/** Characters JSON.stringify escapes in a string (any surrogate takes the slow, exact path). */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** RFC 8785 form of one stored value (JSON.stringify's, which JCS uses for strings and numbers). */
export function canonicalValue(i: number, v: unknown): string {
  if (v === null || v === undefined) return 'null';
  // A BLOB (SQLite gives a Buffer) is never what was appended: keep it apart from every text form.
  if (v instanceof Uint8Array) return `blob:${Buffer.from(v).toString('hex')}`;
  if (i === REQUEST_DATA) return typeof v === 'string' ? v : (canonicalize(v) ?? 'null');
  if (typeof v === 'string') {
    // A numeric column read as text: PostgreSQL's BIGINT, always in canonical decimal. Any other
    // text (SQLite keeps '0x2' or 'user 9' as text in an INTEGER column) is kept quoted, so it can
    // never hash like the number or NULL that was appended: Number('0x2') is 2, and a NaN would
    // serialize as null.
    if (IS_NUMERIC[i]) return String(Number(v)) === v ? v : JSON.stringify(v);
    return NEEDS_ESCAPE.test(v) ? JSON.stringify(v) : `"${v}"`;
  }
  // Appended latencies are finite; a stored Infinity was put there afterwards, so it must not
  // hash as the null it replaced.
  if (typeof v === 'number') return String(v);
  if (typeof v === 'bigint') return String(v);
  return JSON.stringify(v);
}

/** Hash of a row given as values in VERIFY_COLUMNS order. */
export function valuesHash(values: readonly unknown[]): string {
  let s = '';
  for (let i = 0; i < N_HASHED; i++) {
    const v = values[i];
    if (i === CONSENT && (v === null || v === undefined)) continue;
    s += KEY_PREFIX[i]! + canonicalValue(i, v);
  }
  return sha256Hex(s + '}');
}

/**
 * SHA-256(0x00 ‖ canonical row) from the stored values: the same bytes `hashAuditRow` hashes
 * when the row is appended. Works on SQLite rows (request_data as text) and PostgreSQL rows
 * (BIGINT as strings, request_data as parsed JSONB).
 */
export function storedRowHash(row: StoredAuditRow): string {
  let s = '';
  for (let i = 0; i < N_HASHED; i++) {
    const v = row[HASHED_COLUMNS[i]!];
    if (i === CONSENT && (v === null || v === undefined)) continue;
    s += KEY_PREFIX[i]! + canonicalValue(i, v);
  }
  return sha256Hex(s + '}');
}

/** A checkpoint after its signature was checked. */
export interface CheckedCheckpoint {
  seq: number;
  head_hash: string;
  kid: string;
  /** The signature verified with a trusted key. */
  valid: boolean;
}

/** What one walk over a contiguous seq range of one tenant found. */
export interface SegmentResult {
  company_id: number;
  rows: number;
  first_seq: number | null;
  first_prev_hash: string | null;
  /** The first row failed its own hash (its link is then not reported separately). */
  first_modified: boolean;
  last_seq: number | null;
  last_hash: string | null;
  last_signed_seq: number | null;
  finding_count: number;
  findings: AuditFinding[];
}

/**
 * Walks the rows of one tenant in seq order: per-row hash, links, gaps, checkpoint hashes. Started
 * with `expectSeq`/`prevHash` it checks the first row too (a whole chain); started without them
 * (a chunk of a parallel walk) the first row's position and link are left to the stitcher.
 */
export class SegmentWalker {
  #cpIndex = 0;
  #expectSeq: number | undefined;
  #prevHash: string | undefined;
  readonly r: SegmentResult;
  constructor(
    companyId: number,
    expectSeq: number | undefined,
    prevHash: string | undefined,
    private readonly checkpoints: readonly CheckedCheckpoint[],
    private readonly maxFindings: number,
  ) {
    this.#expectSeq = expectSeq;
    this.#prevHash = prevHash;
    this.r = {
      company_id: companyId,
      rows: 0,
      first_seq: null,
      first_prev_hash: null,
      first_modified: false,
      last_seq: null,
      last_hash: null,
      last_signed_seq: null,
      finding_count: 0,
      findings: [],
    };
  }
  find(f: Omit<AuditFinding, 'company_id'>): void {
    this.r.finding_count++;
    if (this.r.findings.length < this.maxFindings)
      this.r.findings.push({ company_id: this.r.company_id, ...f });
  }
  push(row: StoredAuditRow | readonly unknown[]): void {
    const values = Array.isArray(row) ? (row as readonly unknown[]) : undefined;
    const obj = values === undefined ? (row as StoredAuditRow) : undefined;
    const stored = (values !== undefined ? values[I_HASH] : obj!.row_hash) as string;
    this.step(
      storedInteger(values !== undefined ? values[I_SEQ] : obj!.seq),
      storedInteger(values !== undefined ? values[I_AUDIT] : obj!.audit_id),
      (values !== undefined ? values[I_PREV] : obj!.prev_hash) as string,
      stored,
      () => (values !== undefined ? valuesHash(values) : storedRowHash(obj!)) === stored,
    );
  }
  /** One row: its position, its hashes, and whether its content still hashes to row_hash. */
  step(seq: number, auditId: number, prev: string, stored: string, intact: () => boolean): void {
    const r = this.r;
    if (!Number.isSafeInteger(seq) || !Number.isSafeInteger(auditId) || !Number.isSafeInteger(r.company_id)) {
      // Not a position at all (SQLite keeps text like 'x' in an INTEGER column): a row put there
      // by hand. It neither moves the chain nor hides behind it (NaN compares false with everything).
      r.rows++;
      this.find({
        kind: 'modified',
        ...(Number.isSafeInteger(seq) ? { seq } : {}),
        ...(Number.isSafeInteger(auditId) ? { audit_id: auditId } : {}),
        message:
          'A row whose seq, audit_id or company_id is not an integer as stored was put into the log by hand: the ledger only writes integers there.',
      });
      return;
    }
    const first = r.rows === 0;
    r.rows++;
    if (first) {
      r.first_seq = seq;
      r.first_prev_hash = prev;
    }
    let linked = this.#prevHash !== undefined;
    if (this.#expectSeq !== undefined) {
      if (seq > this.#expectSeq) {
        const missing = seq - this.#expectSeq;
        this.find({
          kind: 'gap',
          seq: this.#expectSeq,
          missing,
          message:
            missing === 1
              ? `Row seq ${this.#expectSeq} is missing (deleted).`
              : `Rows seq ${this.#expectSeq}–${seq - 1} are missing (${missing} deleted).`,
        });
        linked = false; // the link across a gap cannot be checked; the gap is the finding
      } else if (seq < this.#expectSeq) {
        this.find({
          kind: 'chain_break',
          seq,
          audit_id: auditId,
          message: `Row seq ${seq} appears again (audit_id ${auditId}): seq must grow by one.`,
        });
        return;
      }
    }
    if (!intact()) {
      if (first) r.first_modified = true;
      this.find({
        kind: 'modified',
        seq,
        audit_id: auditId,
        message: `Row seq ${seq} (audit_id ${auditId}) was modified: its content does not hash to its row_hash.`,
      });
    } else if (linked && prev !== this.#prevHash) {
      this.find({
        kind: 'chain_break',
        seq,
        audit_id: auditId,
        message: `Row seq ${seq} (audit_id ${auditId}) does not link to row seq ${seq - 1}: prev_hash differs from that row's hash (a row was replaced or re-hashed).`,
      });
    }
    const cps = this.checkpoints;
    while (this.#cpIndex < cps.length && cps[this.#cpIndex]!.seq <= seq) {
      const cp = cps[this.#cpIndex++]!;
      if (cp.seq < seq) continue; // its row is missing: inside a gap, already reported
      if (cp.head_hash !== stored) {
        this.find({
          kind: 'bad_signature',
          seq,
          audit_id: auditId,
          kid: cp.kid,
          message: `The checkpoint at seq ${seq} signed head hash ${cp.head_hash.slice(0, 12)}…, but the row there hashes to ${stored.slice(0, 12)}…: the log up to seq ${seq} was rewritten.`,
        });
      } else if (cp.valid) {
        r.last_signed_seq = seq;
      }
    }
    this.#expectSeq = seq + 1;
    this.#prevHash = stored;
    r.last_seq = seq;
    r.last_hash = stored;
  }
}

/**
 * The SQLite fast path: SQLite builds the canonical text of every column but latency_ms (a REAL,
 * whose shortest round-trip form only JavaScript gives) with json_quote, which escapes strings as
 * JSON.stringify does; JavaScript adds latency_ms and hashes. Only 8 values cross into JavaScript
 * per row. Any row whose fast hash differs is re-read whole and hashed exactly before it is called
 * modified, so a formatting difference can never produce a false finding.
 */
const LATENCY = HASHED_COLUMNS.indexOf('latency_ms');
// BLOBs: json_quote throws for one (BLOB_IN_FAST_WALK; walkSqliteOrExact then walks the exact way), and
// request_data, concatenated as is, would pass a BLOB of the same bytes for the text — so a BLOB
// request_data makes the row's text NULL, sending that row to the exact path, where a Buffer never
// canonicalizes like anything appended. (A typeof guard on every column costs ~30 % of the walk.)
const sqlPart = (cols: readonly string[], first: boolean) =>
  cols
    .map((c, i) =>
      c === 'consent'
        ? `(CASE WHEN consent IS NULL THEN '' ELSE ',"consent":' || json_quote(consent) END)`
        : `'${i === 0 && first ? '{' : ','}"${c}":' || ${c === 'request_data' ? `(CASE WHEN typeof(request_data) = 'blob' THEN NULL ELSE request_data END)` : `json_quote(${c})`}`,
    )
    .join(' || ');
/** The SQLite error of the fast query when some column holds a BLOB. */
const BLOB_IN_FAST_WALK = /JSON cannot hold BLOB values/;
/** Every hashed column then row_hash, in VERIFY_COLUMNS order: the exact walk (valuesHash per row). */
const SELECT_VALUES = `SELECT ${VERIFY_COLUMNS.join(', ')} FROM audit_log`;
export const SELECT_FAST = `SELECT company_id, seq, audit_id, prev_hash, row_hash, ${sqlPart(HASHED_COLUMNS.slice(0, LATENCY), true)} AS head, latency_ms, ${sqlPart(HASHED_COLUMNS.slice(LATENCY + 1), false)} AS tail FROM audit_log`;

/** Feed rows of the fast query to a walker (see SELECT_FAST). */
function pushFast(w: SegmentWalker, row: readonly unknown[], exact: Database.Statement): void {
  const stored = row[4] as string;
  w.step(storedInteger(row[1]), storedInteger(row[2]), row[3] as string, stored, () => {
    if (typeof row[5] === 'string' && typeof row[7] === 'string') {
      const text = '\u0000' + row[5] + ',"latency_ms":' + canonicalValue(LATENCY, row[6]) + row[7] + '}';
      if (sha256Hex(text) === stored) return true;
    }
    const full = exact.get(row[2]) as unknown[] | undefined;
    return full !== undefined && valuesHash(full) === stored;
  });
}

/**
 * Walk the rows of one SQLite statement for one tenant or several: the fast form (SELECT_FAST;
 * throws BLOB_IN_FAST_WALK when a column holds a BLOB) or, with `exactRows`, SELECT_VALUES rows
 * hashed whole.
 */
export function walkSqlite(
  db: Database.Database,
  w: SegmentWalker | ((companyId: number) => SegmentWalker),
  sql: string,
  params: unknown[],
  onRow?: () => void,
  exactRows = false,
): void {
  const exact = db.prepare(`${SELECT_VALUES} WHERE audit_id = ?`).raw(true);
  let cur: SegmentWalker | undefined = typeof w === 'function' ? undefined : w;
  for (const row of db
    .prepare(sql)
    .raw(true)
    .iterate(...params) as Iterable<unknown[]>) {
    const companyId = storedInteger(row[exactRows ? I_COMPANY : 0]);
    if (typeof w === 'function' && (cur === undefined || cur.r.company_id !== companyId)) cur = w(companyId);
    if (exactRows) cur!.push(row);
    else pushFast(cur!, row, exact);
    onRow?.();
  }
}

/**
 * Walk `SELECT_FAST + tail` with the walker(s) `start()` returns; when the fast query meets a BLOB
 * (BLOB_IN_FAST_WALK), call `start()` again — it must hand back fresh walkers — and walk
 * `SELECT_VALUES + tail`, every row hashed whole (the BLOB's row is then reported as modified).
 */
export function walkSqliteOrExact(
  db: Database.Database,
  start: () => SegmentWalker | ((companyId: number) => SegmentWalker),
  tail: string,
  params: unknown[],
  onRow?: () => void,
): void {
  try {
    walkSqlite(db, start(), SELECT_FAST + tail, params, onRow);
  } catch (e) {
    if (!BLOB_IN_FAST_WALK.test((e as Error).message)) throw e;
    walkSqlite(db, start(), SELECT_VALUES + tail, params, onRow, true);
  }
}

/** One chunk of a parallel walk. */
export interface SegmentTask {
  id: number;
  company_id: number;
  from: number;
  to: number;
  checkpoints: CheckedCheckpoint[];
}

/**
 * Worker side of a parallel walk: walk each seq range it is sent, answer its SegmentResult.
 * Internal (exported for the worker bootstrap).
 */
export function serveSegmentWalks(port: MessagePort, path: string, maxFindings: number): void {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const range = ' WHERE company_id = ? AND seq BETWEEN ? AND ? ORDER BY seq';
  port.on('message', (task: SegmentTask | null) => {
    if (task === null) {
      db.close();
      port.close();
      return;
    }
    try {
      let w: SegmentWalker | undefined;
      walkSqliteOrExact(
        db,
        () => (w = new SegmentWalker(task.company_id, undefined, undefined, task.checkpoints, maxFindings)),
        range,
        [task.company_id, task.from, task.to],
      );
      port.postMessage({ id: task.id, result: w!.r });
    } catch (e) {
      port.postMessage({ fatal: String((e as Error)?.stack ?? e) });
    }
  });
  port.postMessage({ ready: true });
}
