/**
 * Writing an audit export (`solid audit export`): one tenant's rows of a period, as NDJSON or CSV,
 * with a signed manifest beside them (keys/export-manifest.ts). The rows are walked by the same
 * verifier as `audit verify` (chain-walk.ts) while they are written: a range that does not verify
 * in the database is never signed — the caller gets the findings and no file.
 *
 * The range is contiguous in seq: from the lowest to the highest seq among the tenant's rows with
 * from ≤ created_at < to. A buffered read row (written up to 100 ms after its call, spec/audit.md
 * §read-rows) may carry a created_at a little outside the period and still sit inside that seq
 * range: it is exported, so the chain links with no hole.
 *
 * Spec: spec/audit.md §export.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename } from 'node:path';
import canonicalize from 'canonicalize';
import type { Queryable, Store } from '../../../store/store.ts';
import { AUDIT_COLUMNS, GENESIS_HASH } from '../write/audit.ts';
import type { TenantKeys } from '../keys/tenant-keys.ts';
import {
  manifestPathOf,
  signManifest,
  type ExportFormat,
  type ExportManifest,
} from '../keys/export-manifest.ts';
import { checkBoundary } from './export-check.ts';
import { SegmentWalker, storedInteger, type AuditFinding, type StoredAuditRow } from './chain-walk.ts';
import { checkCheckpoints, databaseKeys, keyMap, type CheckpointRecord } from './verify.ts';

export interface AuditExportOptions {
  companyId: number;
  /** Rows with from ≤ created_at < to. */
  from: Date;
  to: Date;
  format: ExportFormat;
  /** The rows file to write; the manifest goes to `<out>.manifest.json`. */
  out: string;
  /** The export time written into the manifest. */
  now: Date;
  /** Rows read per query (keyset pages on seq). Default 5000. */
  pageRows?: number;
  /** Export exactly this seq range instead of the period's (an archive: retention/archive.ts). */
  seqRange?: { lo: number; hi: number };
}

export type AuditExportResult =
  | { ok: true; manifest: ExportManifest; rowsPath: string; manifestPath: string }
  /** The range does not verify in the database: nothing was written. */
  | { ok: false; findings: AuditFinding[]; finding_count: number };

/** The columns of the CSV rows file, in order: every audit_log column (spec/audit.md §export). */
export const CSV_COLUMNS: readonly string[] = AUDIT_COLUMNS;

const INTEGER_COLUMNS = new Set([
  'audit_id',
  'company_id',
  'seq',
  'user_id',
  'parent_id',
  'approved_by',
  'is_reversible',
  'requires_approval',
]);

/**
 * A stored row as the export writes it: every column in AUDIT_COLUMNS order, integers as numbers
 * (PostgreSQL gives BIGINT as text), latency_ms as a number, request_data as JSON (SQLite keeps its
 * canonical text). A value that is not what the ledger writes is kept as stored, so it hashes as
 * stored (the export walk has refused such a range already).
 */
export function exportedRow(raw: StoredAuditRow): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of AUDIT_COLUMNS) {
    let v: unknown = raw[c] ?? null;
    if (v !== null && INTEGER_COLUMNS.has(c)) {
      const n = storedInteger(v);
      if (!Number.isNaN(n)) v = n;
    } else if (c === 'latency_ms' && typeof v === 'string' && String(Number(v)) === v) v = Number(v);
    else if (c === 'request_data' && typeof v === 'string') {
      try {
        v = JSON.parse(v) as unknown;
      } catch {
        /* kept as text: it hashes as stored */
      }
    }
    out[c] = v;
  }
  return out;
}

/** Characters a spreadsheet reads as the start of a formula (OWASP "CSV injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;

/** One CSV field (RFC 4180): null as empty, request_data as its RFC 8785 text, formula starts prefixed with '. */
function csvField(column: string, v: unknown): string {
  if (v === null || v === undefined) return '';
  let s: string;
  if (column === 'request_data') s = typeof v === 'string' ? v : (canonicalize(v) ?? '');
  else if (typeof v === 'number') return String(v);
  else s = String(v);
  if (FORMULA_START.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The CSV header line. */
export const CSV_HEADER = CSV_COLUMNS.join(',') + '\r\n';

/** One exported row as a line of the rows file. */
function rowLine(format: ExportFormat, row: Record<string, unknown>): string {
  if (format === 'ndjson') return JSON.stringify(row) + '\n';
  return CSV_COLUMNS.map((c) => csvField(c, row[c])).join(',') + '\r\n';
}

const SELECT = `SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log WHERE company_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`;

/**
 * The hash of an archived and pruned row that ends a range (its continuity record's
 * boundary_hash, spec/audit.md §retention), or undefined. The record's signature is checked by
 * `audit verify`; here it only links the next export to the archive.
 */
async function archivedRowHash(
  q: Queryable,
  t: number,
  seq: number,
): Promise<{ row_hash: string } | undefined> {
  let r: { record: string } | undefined;
  try {
    r = await q.get<{ record: string }>(
      'SELECT record FROM audit_archives WHERE company_id = ? AND through_seq = ?',
      [t, seq],
    );
  } catch {
    return undefined; // a database from before retention existed: no archive
  }
  if (r === undefined) return undefined;
  const rec = JSON.parse(r.record) as { chain?: { boundary_hash?: string } };
  return typeof rec.chain?.boundary_hash === 'string' ? { row_hash: rec.chain.boundary_hash } : undefined;
}

/** Where `buildAuditExport` reads from: a function running reads (one store snapshot each, or a verb's own). */
export type ExportReader = <T>(fn: (q: Queryable) => Promise<T>) => Promise<T>;

/** What `buildAuditExport` found: the signed manifest, or the findings of a range that does not verify. */
export type BuiltExport =
  { ok: true; manifest: ExportManifest } | { ok: false; findings: AuditFinding[]; finding_count: number };

/**
 * The core of an export: read one tenant's rows of a period in keyset pages (`read`), walk them
 * with the verifier (hashes, the link from the row before the range, the checkpoints in the range
 * and just before it), hand the rows file's text to `write` chunk by chunk, and sign the manifest
 * (named `rowsFile`) with the tenant's active key. When the range does not verify the findings
 * come back and the manifest is not signed (the caller discards what `write` received). `maxRows`
 * stops early with the `limit` answer. Throws when the tenant has no signing key. Spec:
 * spec/audit.md §export.
 */
export async function buildAuditExport(
  read: ExportReader,
  keys: TenantKeys,
  o: Omit<AuditExportOptions, 'out'> & { rowsFile: string; maxRows?: number },
  write: (chunk: string) => void,
): Promise<BuiltExport | { ok: false; limit: number; rows: number }> {
  const t = o.companyId;
  const fromIso = o.from.toISOString();
  const toIso = o.to.toISOString();
  const meta = await read(async (q) => {
    const range =
      o.seqRange ??
      (await q.get<{ lo: unknown; hi: unknown }>(
        'SELECT MIN(seq) AS lo, MAX(seq) AS hi FROM audit_log WHERE company_id = ? AND created_at >= ? AND created_at < ?',
        [t, fromIso, toIso],
      ));
    const lo = range?.lo === null || range?.lo === undefined ? null : Number(range.lo);
    const hi = range?.hi === null || range?.hi === undefined ? null : Number(range.hi);
    const before =
      lo !== null && lo > 1
        ? ((await q.get<{ row_hash: string }>(
            'SELECT row_hash FROM audit_log WHERE company_id = ? AND seq = ?',
            [t, lo - 1],
          )) ?? (await archivedRowHash(q, t, lo - 1)))
        : undefined;
    const checkpoints =
      lo === null
        ? []
        : (
            await q.all<CheckpointRecord>(
              'SELECT company_id, seq, head_hash, created_at, kid, signature FROM audit_checkpoints WHERE company_id = ? AND seq >= ? AND seq <= ? ORDER BY seq',
              [t, lo - 1, hi],
            )
          ).map((c) => ({ ...c, company_id: Number(c.company_id), seq: Number(c.seq) }));
    return { lo, hi, before, checkpoints, keys: await databaseKeys(q, t) };
  });
  if (o.maxRows !== undefined && meta.lo !== null && meta.hi !== null && meta.hi - meta.lo + 1 > o.maxRows)
    return { ok: false, limit: o.maxRows, rows: meta.hi - meta.lo + 1 };
  const signingKey = await keys.signingKey(t);
  const checked = checkCheckpoints(meta.checkpoints, keyMap(meta.keys), t);
  const cps = checked.byTenant.get(t) ?? [];
  const prevHash = meta.lo === null ? undefined : meta.lo === 1 ? GENESIS_HASH : meta.before?.row_hash;
  const walker = new SegmentWalker(
    t,
    meta.lo ?? undefined,
    prevHash,
    cps.filter((c) => meta.lo !== null && c.seq >= meta.lo),
    1000,
  );
  for (const f of checked.findings) walker.find(f);
  checkBoundary(cps, meta.lo, prevHash ?? null, (f) => walker.find(f));
  const digest = createHash('sha256');
  let first: Record<string, unknown> | undefined;
  let last: Record<string, unknown> | undefined;
  let count = 0;
  const emit = (s: string) => {
    digest.update(s, 'utf8');
    write(s);
  };
  if (o.format === 'csv') emit(CSV_HEADER);
  if (meta.lo !== null && meta.hi !== null) {
    const page = Math.max(1, o.pageRows ?? 5000);
    let after = meta.lo - 1;
    for (;;) {
      const rows = await read((q) => q.all<StoredAuditRow>(SELECT, [t, after, meta.hi, page]));
      let chunk = '';
      for (const raw of rows) {
        walker.push(raw);
        const row = exportedRow(raw);
        first ??= row;
        last = row;
        count++;
        chunk += rowLine(o.format, row);
      }
      emit(chunk);
      if (rows.length < page) break;
      after = storedInteger(rows[rows.length - 1]!.seq);
      if (Number.isNaN(after)) break; // a hand-put seq: the walker has reported it
    }
    if (walker.r.last_seq !== meta.hi)
      walker.find({
        kind: 'truncated',
        seq: meta.hi,
        message: `The log's seq range for this period ends at ${meta.hi}, but the rows read end at ${walker.r.last_seq ?? 'none'}.`,
      });
  }
  if (walker.r.finding_count > 0)
    return { ok: false, findings: walker.r.findings, finding_count: walker.r.finding_count };
  const manifest = signManifest(
    {
      solid_audit_export: 1,
      company_id: t,
      exported_at: o.now.toISOString(),
      from: fromIso,
      to: toIso,
      format: o.format,
      rows_file: o.rowsFile,
      rows: {
        count,
        first_seq: (first?.seq as number | undefined) ?? null,
        last_seq: (last?.seq as number | undefined) ?? null,
        first_audit_id: (first?.audit_id as number | undefined) ?? null,
        last_audit_id: (last?.audit_id as number | undefined) ?? null,
      },
      chain: {
        prev_hash: (first?.prev_hash as string | undefined) ?? null,
        head_hash: (last?.row_hash as string | undefined) ?? null,
      },
      digest: { alg: 'sha-256', hex: digest.digest('hex') },
      checkpoints: meta.checkpoints,
      keys: meta.keys,
    },
    signingKey,
  );
  return { ok: true, manifest };
}

/**
 * Export one tenant's rows of a period to files: the rows to `out` (a temp file renamed when all
 * is well, mode 0600) and the signed manifest to `<out>.manifest.json` (buildAuditExport, reading
 * through any Store — SQLite or PostgreSQL — one snapshot per page). Returns the findings and
 * leaves no file when the range does not verify. Throws when the tenant has no signing key or a
 * file cannot be written. Spec: spec/audit.md §export.
 */
export async function writeAuditExport(
  store: Store,
  keys: TenantKeys,
  o: AuditExportOptions,
): Promise<AuditExportResult> {
  const tmp = `${o.out}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  let built: Awaited<ReturnType<typeof buildAuditExport>>;
  try {
    built = await buildAuditExport(
      (fn) => store.read(fn),
      keys,
      { ...o, rowsFile: basename(o.out) },
      (s) => writeSync(fd, s),
    );
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  if (!built.ok) {
    rmSync(tmp, { force: true });
    if ('limit' in built) throw new Error('unreachable: no row limit on a file export');
    return built;
  }
  renameSync(tmp, o.out);
  const manifestPath = manifestPathOf(o.out);
  const mtmp = `${manifestPath}.${process.pid}.tmp`;
  const mfd = openSync(mtmp, 'w', 0o600);
  try {
    writeSync(mfd, JSON.stringify(built.manifest, null, 2) + '\n');
  } finally {
    closeSync(mfd);
  }
  renameSync(mtmp, manifestPath);
  return { ok: true, manifest: built.manifest, rowsPath: o.out, manifestPath };
}
