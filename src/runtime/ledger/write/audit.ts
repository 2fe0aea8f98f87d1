/**
 * The tamper-evident audit log: one row per dispatch attempt (denials included), chained per
 * tenant. Each row carries `seq` (per tenant, +1 without gaps) and
 * `row_hash = SHA-256(0x00 ‖ canonical(row including prev_hash))` where canonical is RFC 8785
 * JSON of every column except row_hash. The 0x00 prefix separates row hashes from checkpoint
 * signatures (0x01), as in RFC 6962.
 *
 * Appends happen inside the caller's store transaction after `lockTenantHead`, so the chain is
 * gap-free under concurrent writers on both engines. Spec: spec/audit.md.
 */
import { sha256Hex } from '../../sha256.ts';
import canonicalize from 'canonicalize';
import type { StoreTx, Queryable, TenantHead } from '../../../store/store.ts';
import { parseJson } from '../../../store/store.ts';

export type AuditStatus =
  'completed' | 'failed' | 'denied' | 'pending' | 'approved' | 'rejected' | 'replayed' | 'rolled_back';

/** What the pipeline records about one attempt. */
export interface AuditEntry {
  company_id: number;
  created_at: string;
  user_id: number | null;
  role: string | null;
  agent_type: string | null;
  key_id: string | null;
  action_type: string;
  category: string;
  shape: string | null;
  consent_class: string | null;
  status: AuditStatus;
  reason: string | null;
  request_data: Record<string, unknown>;
  entity_type: string | null;
  entity_id: string | null;
  is_reversible: number;
  rollback_handle: string | null;
  idempotency_key: string | null;
  transaction_id: string | null;
  parent_id: number | null;
  requires_approval: number;
  approved_by: number | null;
  approved_at: string | null;
  /**
   * Consent provenance of a consented write (canonical JSON text: spec/consent.md §provenance);
   * null otherwise. In the row hash only when present, so rows written before it hash as before.
   */
  consent?: string | null;
  latency_ms: number | null;
}

/** A stored row: the entry plus its place in the chain. */
export interface AuditRow extends AuditEntry {
  audit_id: number;
  seq: number;
  prev_hash: string;
  row_hash: string;
}

/** The columns covered by the row hash, in storage order. */
export const AUDIT_COLUMNS = [
  'audit_id',
  'company_id',
  'seq',
  'created_at',
  'user_id',
  'role',
  'agent_type',
  'key_id',
  'action_type',
  'category',
  'shape',
  'consent_class',
  'status',
  'reason',
  'request_data',
  'entity_type',
  'entity_id',
  'is_reversible',
  'rollback_handle',
  'idempotency_key',
  'transaction_id',
  'parent_id',
  'requires_approval',
  'approved_by',
  'approved_at',
  'consent',
  'latency_ms',
  'prev_hash',
  'row_hash',
] as const;

export const GENESIS_HASH = '0'.repeat(64);

const INSERT_SQL = `INSERT INTO audit_log (${AUDIT_COLUMNS.join(', ')}) VALUES (${AUDIT_COLUMNS.map(() => '?').join(', ')})`;

/** Rows per multi-row INSERT of a batch append (8: ≈ 0.8 µs less per row than one by one on SQLite; 16 gains nothing more). */
const INSERT_ROWS = 8;
const INSERT_GROUP_SQL = `INSERT INTO audit_log (${AUDIT_COLUMNS.join(', ')}) VALUES ${Array.from(
  { length: INSERT_ROWS },
  () => `(${AUDIT_COLUMNS.map(() => '?').join(', ')})`,
).join(', ')}`;

/**
 * The columns a usual read row leaves NULL (or 0): the short INSERT writes them as SQL literals
 * instead of binding 11 parameters a row (88 a statement). Values as buildRow would store them.
 */
const READ_LITERALS: Readonly<Partial<Record<(typeof AUDIT_COLUMNS)[number], string>>> = {
  reason: 'NULL',
  entity_type: 'NULL',
  entity_id: 'NULL',
  is_reversible: '0',
  rollback_handle: 'NULL',
  idempotency_key: 'NULL',
  transaction_id: 'NULL',
  parent_id: 'NULL',
  requires_approval: '0',
  approved_by: 'NULL',
  approved_at: 'NULL',
  consent: 'NULL',
};
/** INSERT_GROUP_SQL for INSERT_ROWS rows that all fit READ_LITERALS (see fitsReadLiterals). */
const INSERT_GROUP_READ_SQL = `INSERT INTO audit_log (${AUDIT_COLUMNS.join(', ')}) VALUES ${Array.from(
  { length: INSERT_ROWS },
  () => `(${AUDIT_COLUMNS.map((c) => READ_LITERALS[c] ?? '?').join(', ')})`,
).join(', ')}`;

/** Does the row built from `e` hold exactly READ_LITERALS' values in those columns? */
function fitsReadLiterals(e: AuditEntry): boolean {
  return (
    e.reason == null &&
    e.entity_type == null &&
    e.entity_id == null &&
    e.is_reversible === 0 &&
    e.rollback_handle == null &&
    e.idempotency_key == null &&
    e.transaction_id == null &&
    e.parent_id == null &&
    e.requires_approval === 0 &&
    e.approved_by == null &&
    e.approved_at == null &&
    e.consent == null
  );
}

/** Who and what an audit entry is about; everything else defaults to null / 0. */
export interface AuditEntryBase {
  company_id: number;
  now: Date;
  action: string;
  category: string;
  status: AuditStatus;
  /** The principal that acted; none for operator actions and unauthenticated refusals. */
  principal?: { user_id: number; role: string; agent_type: string; key_id?: string } | null;
  /** agent_type when there is no principal (e.g. "cli:operator", the transport). */
  agent_type?: string | null;
}

/**
 * A complete audit entry: the identity from `base`, every other column defaulted, then `fields`
 * applied. Built as one object literal (spreading this 25-member object is a slow path in V8 and
 * this runs per dispatch). The one place entries are made. spec/audit.md §rows
 */
export function auditEntry(base: AuditEntryBase, fields?: Partial<AuditEntry>): AuditEntry {
  const p = base.principal ?? null;
  const e: AuditEntry = {
    company_id: base.company_id,
    created_at: base.now.toISOString(),
    user_id: p?.user_id ?? null,
    role: p?.role ?? null,
    agent_type: p?.agent_type ?? base.agent_type ?? null,
    key_id: p?.key_id ?? null,
    action_type: base.action.length > 200 ? base.action.slice(0, 200) : base.action,
    category: base.category,
    shape: null,
    consent_class: null,
    status: base.status,
    reason: null,
    request_data: {},
    entity_type: null,
    entity_id: null,
    is_reversible: 0,
    rollback_handle: null,
    idempotency_key: null,
    transaction_id: null,
    parent_id: null,
    requires_approval: 0,
    approved_by: null,
    approved_at: null,
    latency_ms: null,
  };
  return fields === undefined ? e : Object.assign(e, fields);
}

/** Columns covered by the hash, in RFC 8785 key order (UTF-16 code-unit order). */
const HASHED_COLUMNS = AUDIT_COLUMNS.filter((c) => c !== 'row_hash').sort();

/**
 * A character JSON.stringify writes as an escape: a control character, `"`, `\\`, or any UTF-16
 * surrogate (a lone one is escaped; a paired one is not, but taking the general path for it costs
 * only time). A string without one is written as is between quotes.
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON escapes
const JSON_ESCAPED = /[\u0000-\u001f"\\\ud800-\udfff]/;

/**
 * JSON.stringify(s), byte for byte: a test and a concatenation for the usual string that needs
 * no escape (≈ 2–3× cheaper than the call on short strings, and a row has nine of them), the
 * call itself otherwise. RFC 8785 writes strings exactly so (a property test compares).
 */
export function jsonString(s: string): string {
  return JSON_ESCAPED.test(s) ? JSON.stringify(s) : '"' + s + '"';
}

/** JCS form of a column value that is a string, a finite number or null: exactly JSON.stringify's. */
function jv(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
  return typeof v === 'string' ? jsonString(v) : JSON.stringify(v);
}

type Material = Omit<AuditRow, 'row_hash'> | AuditRow;

/** The canonical text with request_data already canonical (`rd`). Keys written out in HASHED_COLUMNS order. */
function material(r: Material, rd: string): string {
  return (
    '{"action_type":' +
    jv(r.action_type) +
    ',"agent_type":' +
    jv(r.agent_type) +
    ',"approved_at":' +
    jv(r.approved_at) +
    ',"approved_by":' +
    jv(r.approved_by) +
    ',"audit_id":' +
    jv(r.audit_id) +
    ',"category":' +
    jv(r.category) +
    ',"company_id":' +
    jv(r.company_id) +
    (r.consent == null ? '' : ',"consent":' + jsonString(r.consent)) +
    ',"consent_class":' +
    jv(r.consent_class) +
    ',"created_at":' +
    jv(r.created_at) +
    ',"entity_id":' +
    jv(r.entity_id) +
    ',"entity_type":' +
    jv(r.entity_type) +
    ',"idempotency_key":' +
    jv(r.idempotency_key) +
    ',"is_reversible":' +
    jv(r.is_reversible) +
    ',"key_id":' +
    jv(r.key_id) +
    ',"latency_ms":' +
    jv(r.latency_ms) +
    ',"parent_id":' +
    jv(r.parent_id) +
    ',"prev_hash":' +
    jv(r.prev_hash) +
    ',"reason":' +
    jv(r.reason) +
    ',"request_data":' +
    rd +
    ',"requires_approval":' +
    jv(r.requires_approval) +
    ',"role":' +
    jv(r.role) +
    ',"rollback_handle":' +
    jv(r.rollback_handle) +
    ',"seq":' +
    jv(r.seq) +
    ',"shape":' +
    jv(r.shape) +
    ',"status":' +
    jv(r.status) +
    ',"transaction_id":' +
    jv(r.transaction_id) +
    ',"user_id":' +
    jv(r.user_id) +
    '}'
  );
}

// `material` spells the hashed columns out (static property reads are several times cheaper than
// a loop over names); refuse to load if they drift from AUDIT_COLUMNS.
{
  const probe = Object.fromEntries(
    HASHED_COLUMNS.map((c, i) => [c, c === 'request_data' ? null : c === 'consent' ? '{}' : i]),
  ) as unknown as Material;
  const written = Object.keys(JSON.parse(material(probe, 'null')) as object);
  if (written.join() !== HASHED_COLUMNS.join())
    throw new Error(
      `audit material columns drifted from AUDIT_COLUMNS: ${written.join()} vs ${HASHED_COLUMNS.join()}`,
    );
}

/**
 * RFC 8785 canonical JSON of the hashed columns. Every column but request_data is a string, a
 * number or null, whose JCS form is exactly JSON.stringify's; the keys are written in JCS order;
 * request_data (any JSON) goes through the general canonicalizer. Equivalent to
 * canonicalize(material) — a test checks it — at a fraction of the cost.
 */
export function canonicalAuditMaterial(row: Material): string {
  return material(row, canonicalize(row.request_data ?? null) ?? 'null');
}

/** Compute a row's hash from every column but row_hash: SHA-256(0x00 ‖ canonical row). */
export function hashAuditRow(row: Omit<AuditRow, 'row_hash'> | AuditRow): string {
  return sha256Row(canonicalAuditMaterial(row));
}

/** Round a latency to microseconds so it survives every engine's float round trip. */
export function roundLatency(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** SHA-256(0x00 ‖ UTF-8 of `text`), hex. U+0000 is the single byte 0x00 in UTF-8, so this hashes '\0' + text. */
function sha256Row(text: string): string {
  return sha256Hex('\u0000' + text);
}

/** A lone UTF-16 surrogate (in unicode mode a well-formed pair is one code point, never Cs). */
const LONE_SURROGATE = /\p{Cs}/u;
/** What neither engine stores as is: a lone surrogate (UTF-8 has none) or U+0000 (PostgreSQL text refuses it). */
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what PostgreSQL refuses
const UNSTORABLE = /[\p{Cs}\u0000]/u;
// eslint-disable-next-line no-control-regex -- as above
const UNSTORABLES = /[\p{Cs}\u0000]/gu;

/** Does `s` hold a lone UTF-16 surrogate (half a pair, alone)? */
export function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE.test(s);
}

/**
 * Text as both engines store it: the engines store UTF-8, where a lone surrogate becomes U+FFFD,
 * so hashing the JavaScript string as is would make an untouched row fail verification; U+0000,
 * which PostgreSQL refuses, becomes U+FFFD too (the same row on both engines). Copies only when
 * there is one.
 */
export function wellFormedText<T extends string | null>(s: T): T {
  return s !== null && UNSTORABLE.test(s) ? (s.replace(UNSTORABLES, '\uFFFD') as T) : s;
}

/**
 * `value` with wellFormedText applied to every key and string of a JSON-like value. Copy on
 * write: the same object comes back when there is nothing to replace (the usual case).
 */
export function wellFormedDeep(value: unknown): unknown {
  if (typeof value === 'string') return wellFormedText(value);
  // JSON has no form for Infinity or NaN: keep what was sent, as text.
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const x = wellFormedDeep(value[i]);
      if (x !== value[i]) (out ??= value.slice())[i] = x;
    }
    return out ?? value;
  }
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const k2 = wellFormedText(k);
    const v2 = wellFormedDeep(v);
    if (k2 === k && v2 === v) continue;
    out ??= { ...(value as Record<string, unknown>) };
    if (k2 !== k) delete out[k];
    out[k2] = v2;
  }
  return out ?? value;
}

/**
 * canonicalize(o) for the usual request_data — a plain object whose values are strings, finite
 * numbers, booleans or null — without the general canonicalizer's recursion and per-value checks;
 * undefined for anything else (nested values, lone surrogates, non-finite numbers, another
 * prototype), which takes the general path. Keys sorted by UTF-16 code units, strings and numbers
 * as JSON.stringify writes them: RFC 8785 for these values (a test compares with canonicalize).
 */
export function canonicalFlat(o: unknown): string | undefined {
  if (o === null || typeof o !== 'object' || Object.getPrototypeOf(o) !== Object.prototype) return undefined;
  const keys = Object.keys(o);
  if (keys.length > 1) keys.sort();
  let out = '{';
  for (const k of keys) {
    const v = (o as Record<string, unknown>)[k];
    let text: string;
    if (typeof v === 'string') {
      if (!JSON_ESCAPED.test(v)) text = '"' + v + '"';
      else if (LONE_SURROGATE.test(v)) return undefined;
      else text = JSON.stringify(v);
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) return undefined;
      text = JSON.stringify(v);
    } else if (v === null) text = 'null';
    else if (v === true) text = 'true';
    else if (v === false) text = 'false';
    else if (v === undefined) continue;
    else return undefined;
    let key: string;
    if (!JSON_ESCAPED.test(k)) key = '"' + k + '"';
    else if (LONE_SURROGATE.test(k)) return undefined;
    else key = JSON.stringify(k);
    out += (out.length === 1 ? '' : ',') + key + ':' + text;
  }
  return out + '}';
}

/**
 * RFC 8785 text of request_data. canonicalize refuses lone surrogates and non-finite numbers, and
 * PostgreSQL refuses U+0000: those are replaced first (wellFormedDeep), so the content of a row can
 * never fail its insert.
 */
function canonicalRequestData(entry: AuditEntry): string {
  try {
    const text = canonicalFlat(entry.request_data) ?? canonicalize(entry.request_data) ?? 'null';
    if (!text.includes('\\u0000')) return text;
    entry.request_data = wellFormedDeep(entry.request_data) as Record<string, unknown>;
    return canonicalize(entry.request_data) ?? 'null';
  } catch (err) {
    const fixed = wellFormedDeep(entry.request_data) as Record<string, unknown>;
    const text = canonicalize(fixed);
    if (text === undefined) throw err;
    entry.request_data = fixed;
    return text;
  }
}

/**
 * Build and hash one row after `head`, move `head`, and push the row's INSERT values (AUDIT_COLUMNS
 * order, request_data as its canonical text) onto `values` — without the READ_LITERALS columns
 * when `short` (the caller checked fitsReadLiterals). The tenant_heads row is the caller's to write.
 */
function buildRow(
  entry: AuditEntry,
  auditId: number,
  head: TenantHead,
  values: unknown[],
  short = false,
): AuditRow {
  const rd = canonicalRequestData(entry);
  // One literal with every column (no spread or Object.assign of this 28-member object: slow paths in V8).
  const row: AuditRow = {
    audit_id: auditId,
    company_id: entry.company_id,
    seq: head.audit_seq + 1,
    created_at: entry.created_at,
    user_id: entry.user_id ?? null,
    role: entry.role ?? null,
    agent_type: wellFormedText(entry.agent_type ?? null),
    key_id: wellFormedText(entry.key_id ?? null),
    action_type: wellFormedText(entry.action_type),
    category: entry.category,
    shape: entry.shape ?? null,
    consent_class: entry.consent_class ?? null,
    status: entry.status,
    reason: wellFormedText(entry.reason ?? null),
    request_data: entry.request_data,
    entity_type: wellFormedText(entry.entity_type ?? null),
    entity_id: wellFormedText(entry.entity_id ?? null),
    is_reversible: entry.is_reversible,
    rollback_handle: wellFormedText(entry.rollback_handle ?? null),
    idempotency_key: entry.idempotency_key ?? null,
    transaction_id: entry.transaction_id ?? null,
    parent_id: entry.parent_id ?? null,
    requires_approval: entry.requires_approval,
    approved_by: entry.approved_by ?? null,
    approved_at: entry.approved_at ?? null,
    consent: entry.consent ?? null,
    latency_ms:
      entry.latency_ms === null || entry.latency_ms === undefined ? null : roundLatency(entry.latency_ms),
    prev_hash: head.audit_hash,
    row_hash: '',
  };
  row.row_hash = sha256Row(material(row, rd));
  // In AUDIT_COLUMNS order (checked at load below).
  if (short)
    values.push(
      row.audit_id,
      row.company_id,
      row.seq,
      row.created_at,
      row.user_id,
      row.role,
      row.agent_type,
      row.key_id,
      row.action_type,
      row.category,
      row.shape,
      row.consent_class,
      row.status,
      rd,
      row.latency_ms,
      row.prev_hash,
      row.row_hash,
    );
  else
    values.push(
      row.audit_id,
      row.company_id,
      row.seq,
      row.created_at,
      row.user_id,
      row.role,
      row.agent_type,
      row.key_id,
      row.action_type,
      row.category,
      row.shape,
      row.consent_class,
      row.status,
      row.reason,
      rd,
      row.entity_type,
      row.entity_id,
      row.is_reversible,
      row.rollback_handle,
      row.idempotency_key,
      row.transaction_id,
      row.parent_id,
      row.requires_approval,
      row.approved_by,
      row.approved_at,
      row.consent,
      row.latency_ms,
      row.prev_hash,
      row.row_hash,
    );
  // The head object is the transaction's view of the chain: move it for the next append.
  head.audit_seq = row.seq;
  head.audit_hash = row.row_hash;
  return row;
}

if (
  AUDIT_COLUMNS.filter((c) => READ_LITERALS[c] === undefined).join() !==
  'audit_id,company_id,seq,created_at,user_id,role,agent_type,key_id,action_type,category,shape,consent_class,status,request_data,latency_ms,prev_hash,row_hash'
) {
  throw new Error("buildRow's short values drifted from READ_LITERALS");
}
if (
  INSERT_SQL !==
  `INSERT INTO audit_log (audit_id, company_id, seq, created_at, user_id, role, agent_type, key_id, action_type, category, shape, consent_class, status, reason, request_data, entity_type, entity_id, is_reversible, rollback_handle, idempotency_key, transaction_id, parent_id, requires_approval, approved_by, approved_at, consent, latency_ms, prev_hash, row_hash) VALUES (${AUDIT_COLUMNS.map(() => '?').join(', ')})`
) {
  throw new Error('buildRow writes its values in an order that drifted from AUDIT_COLUMNS');
}

const UPDATE_HEAD_SQL = 'UPDATE tenant_heads SET audit_seq = ?, audit_hash = ? WHERE company_id = ?';

/**
 * Append one row to the tenant's chain inside `tx`. Takes the tenant head lock, assigns
 * audit_id (unless reserved earlier with `tx.nextAuditId()`) and seq, hashes, inserts, moves
 * the head. Returns the stored row.
 */
export async function appendAudit(
  tx: StoreTx,
  entry: AuditEntry,
  reservedAuditId?: number,
): Promise<AuditRow> {
  const head = await tx.lockTenantHead(entry.company_id);
  const auditId = reservedAuditId ?? (await tx.nextAuditId());
  const values: unknown[] = [];
  const row = buildRow(entry, auditId, head, values);
  await tx.run(INSERT_SQL, values);
  await tx.run(UPDATE_HEAD_SQL, [row.seq, row.row_hash, row.company_id]);
  return row;
}

/**
 * Append several rows (any tenants) inside `tx`, in order: the same rows `appendAudit` would make
 * one by one, with each touched tenant's head row written once at the end instead of per row (the
 * read-audit buffer flushes hundreds of rows per transaction). Returns the stored rows.
 */
export async function appendAuditRows(tx: StoreTx, entries: readonly AuditEntry[]): Promise<AuditRow[]> {
  const heads = new Map<number, TenantHead>();
  // Heads are locked in company_id order, so two multi-tenant batches never wait on each other in a cycle.
  for (const id of [...new Set(entries.map((e) => e.company_id))].sort((a, b) => a - b))
    heads.set(id, await tx.lockTenantHead(id));
  // The ids are drawn at once, ascending (tx.nextAuditIds: SQLite counts them in memory,
  // PostgreSQL draws them in one query; otherwise nextAuditId in call order, one at a time).
  // Rows go in INSERTs of INSERT_ROWS rows (one statement's fixed cost, and on PostgreSQL one
  // round trip, per group), the rest one by one, each awaited before the next is sent: one
  // transaction is one connection, and a `pg` client given a query while another runs queues it
  // with a deprecation warning today and refuses it from pg 9. A failed INSERT fails the whole
  // write, which rolls back (the read-audit buffer then retries its rows one by one).
  let ids: number[];
  if (tx.nextAuditIds !== undefined) ids = await tx.nextAuditIds(entries.length);
  else {
    ids = [];
    for (let i = 0; i < entries.length; i++) ids.push(await tx.nextAuditId());
  }
  const rows = new Array<AuditRow>(entries.length);
  let values: unknown[] = [];
  const grouped = entries.length - (entries.length % INSERT_ROWS);
  // A group of usual read rows (fitsReadLiterals, all INSERT_ROWS of them) binds 17 values a row
  // instead of 28: INSERT_GROUP_READ_SQL writes the other columns as literals.
  let short = false;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    if (i % INSERT_ROWS === 0 && i < grouped) {
      short = true;
      for (let j = i; j < i + INSERT_ROWS; j++) if (!fitsReadLiterals(entries[j]!)) short = false;
    }
    const inGroup = i < grouped;
    rows[i] = buildRow(entry, ids[i]!, heads.get(entry.company_id)!, values, inGroup && short);
    if (inGroup ? (i + 1) % INSERT_ROWS === 0 : true) {
      await tx.run(inGroup ? (short ? INSERT_GROUP_READ_SQL : INSERT_GROUP_SQL) : INSERT_SQL, values);
      values = [];
    }
  }
  for (const head of heads.values())
    await tx.run(UPDATE_HEAD_SQL, [head.audit_seq, head.audit_hash, head.company_id]);
  return rows;
}

/** Normalize a row read from either engine into an AuditRow (JSON parsed, numbers as numbers). */
export function toAuditRow(raw: Record<string, unknown>): AuditRow {
  const row = { ...raw } as Record<string, unknown>;
  row.request_data = parseJson(raw.request_data) ?? {};
  for (const c of [
    'audit_id',
    'company_id',
    'seq',
    'user_id',
    'parent_id',
    'approved_by',
    'is_reversible',
    'requires_approval',
  ] as const) {
    if (row[c] !== null && row[c] !== undefined) row[c] = Number(row[c]);
  }
  if (row.latency_ms !== null && row.latency_ms !== undefined) row.latency_ms = Number(row.latency_ms);
  return row as unknown as AuditRow;
}

/** Read one audit row of a tenant (undefined when absent or another tenant's). */
export async function getAuditRow(
  q: Queryable,
  companyId: number,
  auditId: number,
): Promise<AuditRow | undefined> {
  const raw = await q.get<Record<string, unknown>>(
    `SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log WHERE audit_id = ? AND company_id = ?`,
    [auditId, companyId],
  );
  return raw === undefined ? undefined : toAuditRow(raw);
}

/** Replace the values at `paths` (dotted, split) with "[REDACTED]"; returns a copy. */
export function redact(
  args: Record<string, unknown>,
  paths: readonly (readonly string[])[],
): Record<string, unknown> {
  if (paths.length === 0) return args;
  const copy = structuredClone(args);
  for (const path of paths) {
    let cur: unknown = copy;
    for (let i = 0; i < path.length - 1; i++) {
      if (cur === null || typeof cur !== 'object') break;
      cur = (cur as Record<string, unknown>)[path[i]!];
    }
    const last = path[path.length - 1]!;
    if (cur !== null && typeof cur === 'object' && last in (cur as object))
      (cur as Record<string, unknown>)[last] = '[REDACTED]';
  }
  return copy;
}
