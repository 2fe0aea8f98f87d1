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
 * that database. A whole chain re-hashed by someone without the signing key is caught by the
 * checkpoints (or by a saved receipt/anchor), never by the hashes alone.
 *
 * Speed: rows stream through an iterator; a row's canonical form is built directly from the stored
 * values (request_data is stored as its RFC 8785 text), one SHA-256 per row.
 */
import { createHash, createPublicKey, verify as nodeVerify, type KeyObject } from 'node:crypto';
import * as nodeCrypto from 'node:crypto';
import canonicalize from 'canonicalize';
import Database from 'better-sqlite3';
import { AUDIT_COLUMNS, GENESIS_HASH } from './audit.ts';
import type { PublicJwk } from './tenant-keys.ts';
import { checkpointMaterial } from '../runtime.ts';
import { VerbError } from '../errors.ts';

export type AuditFindingKind = 'modified' | 'chain_break' | 'gap' | 'truncated' | 'bad_signature' | 'unknown_key';

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

/** A row as stored: every audit_log column (request_data as its canonical text, or parsed). */
export type StoredAuditRow = Record<string, unknown>;

export interface VerifyOptions {
  /** Only this tenant. */
  tenant?: number;
  /** Called every `progressEvery` rows with the number of rows walked so far. */
  onProgress?: (rows: number) => void;
  progressEvery?: number;
  /** Findings kept per tenant (all are counted). Default 1000. */
  maxFindings?: number;
}

const HASHED_COLUMNS = AUDIT_COLUMNS.filter((c) => c !== 'row_hash').sort();
/**
 * Column order of a row given as an array (the fast path of the file verifier): the hashed
 * columns in canonical key order, then row_hash.
 */
export const VERIFY_COLUMNS: readonly string[] = [...HASHED_COLUMNS, 'row_hash'];
const NUMERIC = new Set(['audit_id', 'company_id', 'seq', 'user_id', 'parent_id', 'approved_by', 'is_reversible', 'requires_approval', 'latency_ms']);
/** `"col":` with the separating comma, per hashed column, in canonical key order (0x00 domain prefix first). */
const KEY_PREFIX = HASHED_COLUMNS.map((c, i) => (i === 0 ? '\u0000{' : ',') + JSON.stringify(c) + ':');
const IS_NUMERIC = HASHED_COLUMNS.map((c) => NUMERIC.has(c));
const N_HASHED = HASHED_COLUMNS.length;
const REQUEST_DATA = HASHED_COLUMNS.indexOf('request_data');
const I_COMPANY = VERIFY_COLUMNS.indexOf('company_id');
const I_SEQ = VERIFY_COLUMNS.indexOf('seq');
const I_AUDIT = VERIFY_COLUMNS.indexOf('audit_id');
const I_PREV = VERIFY_COLUMNS.indexOf('prev_hash');
const I_HASH = VERIFY_COLUMNS.indexOf('row_hash');

const oneShotHash = (nodeCrypto as unknown as { hash?: (alg: string, data: string, enc: 'hex') => string }).hash;

function sha256Hex(s: string): string {
  return oneShotHash !== undefined ? oneShotHash('sha256', s, 'hex') : createHash('sha256').update(s, 'utf8').digest('hex');
}

function canonicalValue(i: number, v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (i === REQUEST_DATA) return typeof v === 'string' ? v : (canonicalize(v) ?? 'null');
  if (IS_NUMERIC[i] && (typeof v === 'string' || typeof v === 'bigint')) return JSON.stringify(Number(v));
  return JSON.stringify(v);
}

/** Hash of a row given as values in VERIFY_COLUMNS order. */
function valuesHash(values: readonly unknown[]): string {
  let s = '';
  for (let i = 0; i < N_HASHED; i++) s += KEY_PREFIX[i]! + canonicalValue(i, values[i]);
  return sha256Hex(s + '}');
}

/**
 * SHA-256(0x00 ‖ canonical row) from the stored values: the same bytes `hashAuditRow` hashes
 * when the row is appended. Works on SQLite rows (request_data as text) and PostgreSQL rows
 * (BIGINT as strings, request_data as parsed JSONB).
 */
export function storedRowHash(row: StoredAuditRow): string {
  let s = '';
  for (let i = 0; i < N_HASHED; i++) s += KEY_PREFIX[i]! + canonicalValue(i, row[HASHED_COLUMNS[i]!]);
  return sha256Hex(s + '}');
}

function keyMap(publicKeys: readonly PublicJwk[] | ReadonlyMap<string, KeyObject>): ReadonlyMap<string, KeyObject> {
  if (!Array.isArray(publicKeys)) return publicKeys as ReadonlyMap<string, KeyObject>;
  const m = new Map<string, KeyObject>();
  for (const jwk of publicKeys as readonly PublicJwk[]) {
    try {
      m.set(jwk.kid, createPublicKey({ key: jwk as unknown as import('node:crypto').JsonWebKey, format: 'jwk' }));
    } catch {
      /* an unusable key is simply not trusted */
    }
  }
  return m;
}

interface TenantState {
  report: TenantVerifyReport;
  /** Checkpoints sorted by seq, with their own signature verdict. */
  checkpoints: Array<CheckpointRecord & { valid: boolean }>;
  cpIndex: number;
  expectSeq: number;
  prevHash: string;
  head: ChainHead | undefined;
}

/**
 * Verify audit chains. `rows` must come in (company_id, seq) order (the store's
 * UNIQUE(company_id, seq) index gives it); each row is an object of audit_log columns, or an array
 * of values in VERIFY_COLUMNS order (cheaper to stream). `checkpoints` may come in any order; `heads` are the
 * store's recorded chain heads (optional). Pure and offline; never throws on bad data.
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
  const keys = keyMap(publicKeys);
  const maxFindings = options.maxFindings ?? 1000;
  const every = options.progressEvery ?? 16384;
  const only = options.tenant;
  const tenants = new Map<number, TenantState>();
  const state = (companyId: number): TenantState => {
    let s = tenants.get(companyId);
    if (s === undefined) {
      s = {
        report: { company_id: companyId, ok: true, rows_checked: 0, last_seq: 0, last_hash: GENESIS_HASH, checkpoints_checked: 0, last_signed_seq: null, unsigned_rows: 0, finding_count: 0, findings: [] },
        checkpoints: [],
        cpIndex: 0,
        expectSeq: 1,
        prevHash: GENESIS_HASH,
        head: undefined,
      };
      tenants.set(companyId, s);
    }
    return s;
  };
  const find = (s: TenantState, f: Omit<AuditFinding, 'company_id'>) => {
    s.report.ok = false;
    s.report.finding_count++;
    if (s.report.findings.length < maxFindings) s.report.findings.push({ company_id: s.report.company_id, ...f });
  };

  // Checkpoint signatures first: they do not depend on the rows.
  const seen = new Set<string>();
  for (const cp of checkpoints) {
    const companyId = Number(cp.company_id);
    if (only !== undefined && companyId !== only) continue;
    const dedupe = `${companyId}|${cp.seq}|${cp.signature}`;
    if (seen.has(dedupe)) continue;
    seen.add(dedupe);
    const s = state(companyId);
    const rec = { ...cp, company_id: companyId, seq: Number(cp.seq), valid: false };
    const key = keys.get(cp.kid);
    if (key === undefined) {
      find(s, { kind: 'unknown_key', seq: rec.seq, kid: cp.kid, message: `The checkpoint at seq ${rec.seq} is signed by key ${cp.kid}, which is not among the trusted keys.` });
    } else {
      let ok = false;
      try {
        const sig = Buffer.from(cp.signature, 'base64url');
        ok = sig.length === 64 && nodeVerify('sha256', checkpointMaterial({ company_id: companyId, seq: rec.seq, head_hash: cp.head_hash, created_at: cp.created_at }), { key, dsaEncoding: 'ieee-p1363' }, sig);
      } catch {
        ok = false;
      }
      if (!ok) find(s, { kind: 'bad_signature', seq: rec.seq, kid: cp.kid, message: `The signature of the checkpoint at seq ${rec.seq} does not verify with key ${cp.kid}: the checkpoint was forged or altered.` });
      rec.valid = ok;
    }
    s.checkpoints.push(rec);
  }
  for (const s of tenants.values()) s.checkpoints.sort((a, b) => a.seq - b.seq);
  for (const h of heads) {
    const companyId = Number(h.company_id);
    if (only !== undefined && companyId !== only) continue;
    state(companyId).head = { company_id: companyId, audit_seq: Number(h.audit_seq), audit_hash: h.audit_hash };
  }

  // The walk.
  let total = 0;
  let cur: TenantState | undefined;
  for (const row of rows) {
    const values = Array.isArray(row) ? (row as readonly unknown[]) : undefined;
    const obj = values === undefined ? (row as StoredAuditRow) : undefined;
    const companyId = Number(values !== undefined ? values[I_COMPANY] : obj!.company_id);
    if (only !== undefined && companyId !== only) continue;
    if (cur === undefined || cur.report.company_id !== companyId) cur = state(companyId);
    const s = cur;
    const seq = Number(values !== undefined ? values[I_SEQ] : obj!.seq);
    const auditId = Number(values !== undefined ? values[I_AUDIT] : obj!.audit_id);
    const stored = (values !== undefined ? values[I_HASH] : obj!.row_hash) as string;
    const prevHash = values !== undefined ? values[I_PREV] : obj!.prev_hash;
    total++;
    s.report.rows_checked++;
    if (every > 0 && total % every === 0) options.onProgress?.(total);
    let linked = true;
    if (seq > s.expectSeq) {
      const missing = seq - s.expectSeq;
      find(s, {
        kind: 'gap',
        seq: s.expectSeq,
        missing,
        message: missing === 1 ? `Row seq ${s.expectSeq} is missing (deleted).` : `Rows seq ${s.expectSeq}–${seq - 1} are missing (${missing} deleted).`,
      });
      linked = false; // the link across a gap cannot be checked; the gap is the finding
    } else if (seq < s.expectSeq) {
      find(s, { kind: 'chain_break', seq, audit_id: auditId, message: `Row seq ${seq} appears again (audit_id ${auditId}): seq must grow by one.` });
      continue;
    }
    if ((values !== undefined ? valuesHash(values) : storedRowHash(obj!)) !== stored) {
      find(s, { kind: 'modified', seq, audit_id: auditId, message: `Row seq ${seq} (audit_id ${auditId}) was modified: its content does not hash to its row_hash.` });
    } else if (linked && prevHash !== s.prevHash) {
      find(s, {
        kind: 'chain_break',
        seq,
        audit_id: auditId,
        message: `Row seq ${seq} (audit_id ${auditId}) does not link to row seq ${seq - 1}: prev_hash differs from that row's hash (a row was replaced or re-hashed).`,
      });
    }
    // Checkpoints at or below this seq.
    while (s.cpIndex < s.checkpoints.length && s.checkpoints[s.cpIndex]!.seq <= seq) {
      const cp = s.checkpoints[s.cpIndex++]!;
      s.report.checkpoints_checked++;
      if (cp.seq < seq) continue; // its row is inside a gap, already reported
      if (cp.head_hash !== stored) {
        find(s, {
          kind: 'bad_signature',
          seq,
          audit_id: auditId,
          kid: cp.kid,
          message: `The checkpoint at seq ${seq} signed head hash ${cp.head_hash.slice(0, 12)}…, but the row there hashes to ${stored.slice(0, 12)}…: the log up to seq ${seq} was rewritten.`,
        });
      } else if (cp.valid) {
        s.report.last_signed_seq = seq;
      }
    }
    s.expectSeq = seq + 1;
    s.prevHash = stored;
    s.report.last_seq = seq;
    s.report.last_hash = stored;
  }
  options.onProgress?.(total);

  // Tails: heads and checkpoints beyond the last row.
  for (const s of tenants.values()) {
    const last = s.report.last_seq;
    for (; s.cpIndex < s.checkpoints.length; s.cpIndex++) {
      const cp = s.checkpoints[s.cpIndex]!;
      s.report.checkpoints_checked++;
      find(s, { kind: 'truncated', seq: cp.seq, kid: cp.kid, message: `A checkpoint signed seq ${cp.seq}, but the log ends at seq ${last}: rows ${last + 1}–${cp.seq} were removed.` });
    }
    const h = s.head;
    if (h !== undefined) {
      if (h.audit_seq > last) {
        find(s, { kind: 'truncated', seq: h.audit_seq, message: `The chain head records seq ${h.audit_seq}, but the log ends at seq ${last}: the tail was removed.` });
      } else if (h.audit_seq === last && h.audit_seq > 0 && h.audit_hash !== s.report.last_hash) {
        find(s, { kind: 'chain_break', seq: last, message: `The chain head's hash differs from the hash of the last row (seq ${last}).` });
      }
    }
    s.report.unsigned_rows = last - (s.report.last_signed_seq ?? 0);
  }
  const elapsed = performance.now() - t0;
  const list = [...tenants.values()].map((s) => s.report).sort((a, b) => a.company_id - b.company_id);
  return {
    ok: list.every((r) => r.ok),
    rows_checked: total,
    tenants: list,
    elapsed_ms: Math.round(elapsed * 10) / 10,
    rows_per_second: elapsed > 0 ? Math.round((total * 1000) / elapsed) : total,
    warnings: [],
  };
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
    throw new VerbError('invalid_request', `The key file is not JSON: ${(err as Error).message}`, { hint: 'Pass the file written by `solid audit export-keys`.' });
  }
  const keys = Array.isArray(doc) ? doc : (doc as { keys?: unknown })?.keys;
  if (!Array.isArray(keys) || keys.some((k) => typeof k !== 'object' || k === null || typeof (k as { kid?: unknown }).kid !== 'string')) {
    throw new VerbError('invalid_request', 'The key file must be a JWKS: { "keys": [ { "kid": …, "kty": "EC", … } ] }.', { hint: 'Pass the file written by `solid audit export-keys`.' });
  }
  const cps = Array.isArray(doc) ? undefined : (doc as { checkpoints?: unknown }).checkpoints;
  return { keys: keys as PublicJwk[], ...(Array.isArray(cps) ? { checkpoints: cps as CheckpointRecord[] } : {}) };
}

const SELECT_ROWS = `SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log`;
const SELECT_VALUES = `SELECT ${VERIFY_COLUMNS.join(', ')} FROM audit_log`;

/** Open a solid SQLite database read-only (no runtime, no keyfile). Throws store_unavailable. */
export function openAuditDatabase(path: string): Database.Database {
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true });
    db.prepare('SELECT 1 FROM audit_log LIMIT 1').get();
    return db;
  } catch (err) {
    throw new VerbError('store_unavailable', `Cannot read an audit log at ${path}: ${(err as Error).message}`, { hint: 'Pass the solid database with --db (or SOLID_DB).' });
  }
}

/** Every public key a database holds, any state (retired keys still verify old checkpoints). */
export function databaseKeys(db: Database.Database, tenant?: number): PublicJwk[] {
  const rows = (tenant === undefined ? db.prepare('SELECT public_jwk FROM tenant_keys').all() : db.prepare('SELECT public_jwk FROM tenant_keys WHERE company_id = ?').all(tenant)) as Array<{ public_jwk: string }>;
  return rows.map((r) => JSON.parse(r.public_jwk) as PublicJwk);
}

/** The latest checkpoint of each tenant (the anchors export-keys writes). */
export function latestCheckpoints(db: Database.Database, tenant?: number): CheckpointRecord[] {
  const sql = `SELECT c.company_id, c.seq, c.head_hash, c.created_at, c.kid, c.signature FROM audit_checkpoints c
    WHERE c.seq = (SELECT MAX(seq) FROM audit_checkpoints m WHERE m.company_id = c.company_id)${tenant === undefined ? '' : ' AND c.company_id = ?'} ORDER BY c.company_id`;
  return (tenant === undefined ? db.prepare(sql).all() : db.prepare(sql).all(tenant)) as CheckpointRecord[];
}

export interface VerifyDatabaseOptions extends VerifyOptions {
  /** Trusted keys (and anchors). Without it the database's own keys are used, with a warning. */
  trust?: TrustFile;
  /** Called once with the number of rows to walk (progress bars). */
  onStart?: (rows: number) => void;
}

/**
 * Verify the audit log of a SQLite database file directly (offline: no runtime, no secrets).
 * Reasons (thrown): store_unavailable. Findings are in the report. Spec: spec/audit.md §verify.
 */
export function verifyDatabaseFile(path: string, options: VerifyDatabaseOptions = {}): AuditVerifyReport {
  const db = openAuditDatabase(path);
  try {
    const t = options.tenant;
    const where = t === undefined ? '' : ' WHERE company_id = ?';
    const params = t === undefined ? [] : [t];
    const count = Number((db.prepare(`SELECT COUNT(*) AS n FROM audit_log${where}`).get(...params) as { n: number }).n);
    options.onStart?.(count);
    const checkpoints = db.prepare(`SELECT company_id, seq, head_hash, created_at, kid, signature FROM audit_checkpoints${where}`).all(...params) as CheckpointRecord[];
    const heads = db.prepare(`SELECT company_id, audit_seq, audit_hash FROM tenant_heads${where}`).all(...params) as ChainHead[];
    const warnings: string[] = [];
    let keys: PublicJwk[];
    if (options.trust !== undefined) {
      keys = options.trust.keys;
      checkpoints.push(...(options.trust.checkpoints ?? []));
    } else {
      keys = databaseKeys(db, t);
      warnings.push('No trusted keys given (--keys): checkpoint signatures were checked with the public keys stored in this same database, so someone able to rewrite the database could also have replaced them. Export the keys once (`solid audit export-keys`) and keep the file elsewhere.');
    }
    const rows = db.prepare(`${SELECT_VALUES}${where} ORDER BY company_id, seq`).raw(true).iterate(...params) as Iterable<unknown[]>;
    const report = verifyAuditChain(rows, checkpoints, keys, heads, options);
    report.warnings.push(...warnings);
    return report;
  } finally {
    db.close();
  }
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
export function checkReceiptInLog(db: Database.Database, attestation: { kid: string; seq: number; row_hash: string; prev_hash: string }): ReceiptLogCheck {
  const seq = Number(attestation.seq);
  const owner = db.prepare('SELECT company_id FROM tenant_keys WHERE kid = ?').get(attestation.kid) as { company_id: number } | undefined;
  if (owner === undefined) return { status: 'unknown_tenant', seq, message: `This log holds no key ${attestation.kid}: the receipt was not issued by this database.` };
  const company = Number(owner.company_id);
  const row = db.prepare(`${SELECT_ROWS} WHERE company_id = ? AND seq = ?`).get(company, seq) as StoredAuditRow | undefined;
  if (row === undefined) {
    return { status: 'missing', company_id: company, seq, message: `Tenant ${company}'s log has no row at seq ${seq}: the log was truncated or rows were deleted below this receipt.` };
  }
  if (row.row_hash !== attestation.row_hash || row.prev_hash !== attestation.prev_hash || storedRowHash(row) !== attestation.row_hash) {
    return { status: 'different', company_id: company, seq, message: `Tenant ${company}'s row at seq ${seq} is not the row this receipt attests: the log was rewritten.` };
  }
  return { status: 'present', company_id: company, seq, message: `Tenant ${company}'s log holds this receipt's row at seq ${seq}, unchanged.` };
}
