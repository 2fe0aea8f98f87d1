/**
 * Verifying an audit export offline (`solid audit verify --export FILE`): no database, no runtime,
 * no secret — the rows file, its signed manifest (keys/export-manifest.ts) and public keys. Checks:
 *
 *   manifest_signature  the manifest's ES256 signature does not verify with a trusted key
 *   digest_mismatch     the rows file's SHA-256 is not the manifest's (a byte was changed, added or removed)
 *   modified            a row no longer hashes to its row_hash (the one row hash: chain-walk.ts)
 *   chain_break         a row does not link to the one before it (or to the manifest's prev_hash),
 *                       a seq appears twice, or the last row is not the manifest's head
 *   gap                 seq numbers of the range are missing (rows removed)
 *   added               rows beyond the manifest's range
 *   truncated           the file ends before the manifest's last row, or inside a line
 *   count_mismatch      the number of rows is not the manifest's
 *   bad_signature / unknown_key  a checkpoint carried in the manifest does not verify, or its head
 *                       is not the row_hash at its seq
 *   unreadable_row      a line is not a JSON object
 *
 * NDJSON files are checked row by row; a CSV file only by its digest and the manifest signature
 * (CSV cannot tell null from "" and prefixes formula-like cells, so its rows cannot be re-hashed).
 *
 * Spec: spec/audit.md §export.
 */
import { createReadStream, readFileSync, existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { VerbError } from '../../errors.ts';
import { manifestPathOf, manifestSignatureValid, type ExportManifest } from '../keys/export-manifest.ts';
import {
  SegmentWalker,
  type AuditFinding,
  type AuditFindingKind,
  type CheckedCheckpoint,
} from './chain-walk.ts';
import { checkCheckpoints, keyMap, type TrustFile } from './verify.ts';

export type ExportFindingKind =
  AuditFindingKind | 'manifest_signature' | 'digest_mismatch' | 'added' | 'count_mismatch' | 'unreadable_row';

export interface ExportFinding extends Omit<AuditFinding, 'kind'> {
  kind: ExportFindingKind;
}

export interface ExportVerifyReport {
  ok: boolean;
  rows_file: string;
  manifest_file: string;
  company_id: number;
  format: string;
  from: string;
  to: string;
  exported_at: string;
  /** Rows read from the file (NDJSON; 0 for CSV, which is not re-hashed). */
  rows_checked: number;
  rows_expected: number;
  first_seq: number | null;
  last_seq: number | null;
  /** The manifest's signing key, and whether it came from the trusted keys or the export itself. */
  manifest_kid: string | null;
  keys_from: 'trusted' | 'export';
  /** Highest seq whose head a valid checkpoint signed when the rows were written (null: none in the range). */
  signed_through: number | null;
  finding_count: number;
  findings: ExportFinding[];
  warnings: string[];
  elapsed_ms: number;
  rows_per_second: number;
}

export interface ExportVerifyOptions {
  /** The manifest, when it is not `<rows file>.manifest.json`. */
  manifest?: string;
  /** Trusted keys (`solid audit export-keys`, anchors). Without them, the keys the manifest carries. */
  trust?: TrustFile;
  /** Findings kept (all are counted). Default 1000. */
  maxFindings?: number;
}

const HINT =
  'Pass the rows file written by `solid audit export` (its manifest, <file>.manifest.json, beside it).';

/** The files of an export named by either of them. @throws VerbError invalid_args */
export function exportFiles(path: string, manifest?: string): { rows: string; manifest: string } {
  if (manifest !== undefined) return { rows: path, manifest };
  if (path.endsWith('.manifest.json')) {
    const m = readManifest(path);
    // The name only: a manifest cannot point the verifier at a file elsewhere.
    return { rows: join(dirname(path), basename(m.rows_file)), manifest: path };
  }
  return { rows: path, manifest: manifestPathOf(path) };
}

/** Read and shape-check a manifest. @throws VerbError invalid_args (unreadable, not JSON, not a manifest) */
export function readManifest(path: string): ExportManifest {
  let doc: Partial<ExportManifest>;
  try {
    doc = JSON.parse(readFileSync(path, 'utf8')) as Partial<ExportManifest>;
  } catch (err) {
    throw new VerbError(
      'invalid_args',
      `Cannot read the export manifest ${path}: ${(err as Error).message}`,
      {
        hint: HINT,
      },
    );
  }
  const ok =
    doc !== null &&
    typeof doc === 'object' &&
    doc.solid_audit_export === 1 &&
    Number.isSafeInteger(doc.company_id) &&
    typeof doc.rows_file === 'string' &&
    typeof doc.rows === 'object' &&
    doc.rows !== null &&
    Number.isSafeInteger(doc.rows.count) &&
    typeof doc.chain === 'object' &&
    doc.chain !== null &&
    typeof doc.digest?.hex === 'string' &&
    Array.isArray(doc.checkpoints) &&
    Array.isArray(doc.keys) &&
    (doc.format === 'ndjson' || doc.format === 'csv');
  if (!ok) throw new VerbError('invalid_args', `${path} is not an audit export manifest.`, { hint: HINT });
  return doc as ExportManifest;
}

/**
 * Findings about the checkpoint just before the range (seq first_seq − 1): its signed head must
 * be the range's prev_hash. Returns whether a valid one signs it.
 */
export function checkBoundary(
  checkpoints: readonly CheckedCheckpoint[],
  firstSeq: number | null,
  prevHash: string | null,
  find: (f: Omit<AuditFinding, 'company_id'>) => void,
): boolean {
  let signed = false;
  if (firstSeq === null) return false;
  for (const cp of checkpoints) {
    if (cp.seq !== firstSeq - 1) continue;
    if (cp.head_hash !== prevHash)
      find({
        kind: 'bad_signature',
        seq: cp.seq,
        kid: cp.kid,
        message: `The checkpoint at seq ${cp.seq} signed head ${cp.head_hash.slice(0, 12)}…, but the range starts after ${String(prevHash).slice(0, 12)}…: the chain before the range was rewritten.`,
      });
    else if (cp.valid) signed = true;
  }
  return signed;
}

/**
 * Verify an export offline. `path` is the rows file or its manifest. Never throws on tampered
 * content (that is the report); throws VerbError invalid_args when the manifest cannot be read or
 * the rows file is missing. Spec: spec/audit.md §export.
 */
export async function verifyAuditExport(
  path: string,
  options: ExportVerifyOptions = {},
): Promise<ExportVerifyReport> {
  const t0 = performance.now();
  const files = exportFiles(path, options.manifest);
  const m = readManifest(files.manifest);
  if (!existsSync(files.rows))
    throw new VerbError(
      'invalid_args',
      `The rows file ${files.rows} named by ${files.manifest} is missing.`,
      {
        hint: HINT,
      },
    );
  const t = m.company_id;
  const max = options.maxFindings ?? 1000;
  const warnings: string[] = [];
  const keysFrom = options.trust === undefined ? 'export' : 'trusted';
  const keys = keyMap(options.trust?.keys ?? m.keys);
  if (options.trust === undefined)
    warnings.push(
      'No trusted keys given (--keys or --anchors): the signatures were checked with the public keys the export carries, which proves the file is whole and unedited since it was signed, not who signed it. Pass the keys exported earlier with `solid audit export-keys`, or the anchors.',
    );

  const first = m.rows.first_seq;
  const checked = checkCheckpoints(m.checkpoints, keys, t);
  const cps = checked.byTenant.get(t) ?? [];
  const walker = new SegmentWalker(
    t,
    first ?? undefined,
    first === null ? undefined : (m.chain.prev_hash ?? undefined),
    cps.filter((c) => first !== null && c.seq >= first),
    max,
  );
  const find = (f: Omit<ExportFinding, 'company_id'>) => walker.find(f as Omit<AuditFinding, 'company_id'>);
  for (const f of checked.findings) find(f);
  const boundarySigned = checkBoundary(cps, first, m.chain.prev_hash, find);

  // The manifest signature.
  const kid = m.signature?.kid ?? null;
  const key = kid === null ? undefined : keys.get(kid);
  if (m.signature === undefined) find({ kind: 'manifest_signature', message: 'The manifest is not signed.' });
  else if (key === undefined)
    find({
      kind: 'manifest_signature',
      kid: kid ?? undefined,
      message: `The manifest is signed by key ${kid}, which is not among the trusted keys.`,
    });
  else if (!manifestSignatureValid(m, key))
    find({
      kind: 'manifest_signature',
      kid: kid ?? undefined,
      message: `The manifest's signature does not verify with key ${kid}: the manifest was edited after it was signed.`,
    });

  // The rows file: digest, and for NDJSON every row.
  const digest = createHash('sha256');
  let lineNo = 0;
  let extra = 0;
  let partial = '';
  const last = m.rows.last_seq;
  const onLine = (line: string) => {
    lineNo++;
    if (m.format !== 'ndjson' || line === '') return;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      row = undefined;
    }
    if (row === null || typeof row !== 'object' || Array.isArray(row)) {
      find({ kind: 'unreadable_row', message: `Line ${lineNo} is not a JSON object.` });
      return;
    }
    const seq = (row as { seq?: unknown }).seq;
    if (last !== null && typeof seq === 'number' && seq > last) extra++;
    walker.push(row as Record<string, unknown>);
  };
  for await (const chunk of createReadStream(files.rows)) {
    const buf = chunk as Buffer;
    digest.update(buf);
    if (m.format !== 'ndjson') continue;
    const text = partial + buf.toString('utf8');
    const lines = text.split('\n');
    partial = lines.pop()!;
    for (const line of lines) onLine(line);
  }
  if (partial !== '') {
    find({
      kind: 'truncated',
      message: `The file ends inside line ${lineNo + 1} (no final newline): it was cut short.`,
    });
    onLine(partial);
  }
  const hex = digest.digest('hex');
  if (hex !== m.digest.hex)
    find({
      kind: 'digest_mismatch',
      message: `The rows file's SHA-256 is ${hex.slice(0, 16)}…, the manifest's ${m.digest.hex.slice(0, 16)}…: the file is not the one exported.`,
    });

  const r = walker.r;
  if (m.format === 'ndjson') {
    if (extra > 0)
      find({
        kind: 'added',
        seq: (last ?? 0) + 1,
        message: `${extra} row${extra === 1 ? '' : 's'} beyond the manifest's last seq ${last} ${extra === 1 ? 'was' : 'were'} added.`,
      });
    if (last !== null && (r.last_seq === null || r.last_seq < last))
      find({
        kind: 'truncated',
        seq: (r.last_seq ?? (first ?? 1) - 1) + 1,
        message: `The manifest's range ends at seq ${last}, but the file ends at ${r.last_seq === null ? 'no row' : `seq ${r.last_seq}`}: rows were cut off the end.`,
      });
    else if (r.last_seq === last && r.last_hash !== m.chain.head_hash)
      find({
        kind: 'chain_break',
        seq: last ?? undefined,
        message: `The last row's hash is not the head the manifest signed: the range was rewritten.`,
      });
    if (r.rows !== m.rows.count)
      find({
        kind: 'count_mismatch',
        message: `The file holds ${r.rows} rows, the manifest ${m.rows.count}.`,
      });
  } else {
    warnings.push(
      'A CSV export is checked by its digest and the signed manifest only (CSV cannot carry null apart from "", so its rows cannot be re-hashed): export NDJSON to verify the chain row by row.',
    );
  }
  const signedThrough = r.last_signed_seq ?? (boundarySigned && first !== null ? first - 1 : null);
  if (m.format === 'ndjson' && last !== null && r.finding_count === 0 && (signedThrough ?? 0) < last)
    warnings.push(
      `Rows after seq ${signedThrough ?? (first ?? 1) - 1} through ${last} are covered by the export's signature only (no checkpoint signed when they were written lies in the range): check them against a later export, the anchors or saved receipts.`,
    );
  const elapsed = performance.now() - t0;
  const findings = (r.findings as ExportFinding[]).slice().sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
  return {
    ok: r.finding_count === 0,
    rows_file: files.rows,
    manifest_file: files.manifest,
    company_id: t,
    format: m.format,
    from: m.from,
    to: m.to,
    exported_at: m.exported_at,
    rows_checked: m.format === 'ndjson' ? r.rows : 0,
    rows_expected: m.rows.count,
    first_seq: first,
    last_seq: last,
    manifest_kid: kid,
    keys_from: keysFrom,
    signed_through: signedThrough,
    finding_count: r.finding_count,
    findings,
    warnings,
    elapsed_ms: Math.round(elapsed * 10) / 10,
    rows_per_second: elapsed > 0 ? Math.round((r.rows * 1000) / elapsed) : r.rows,
  };
}
