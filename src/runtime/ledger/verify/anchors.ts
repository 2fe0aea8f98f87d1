/**
 * Reading anchors (ledger/keys/anchors.ts) back for `solid audit verify --anchors` and `solid
 * restore --anchors`: the anchored keys become the trusted keys, the anchored checkpoints are
 * checked like the database's own (a head that no longer matches its row is `bad_signature`, one
 * beyond the log `truncated`), and every tenant whose log ends before its newest anchored head is
 * `rolled_back`. The anchors are read from a directory (or one file) or an S3 bucket
 * (`s3://bucket/prefix`). Spec: spec/audit.md §anchors.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { VerbError } from '../../errors.ts';
import type { PublicJwk } from '../keys/tenant-keys.ts';
import type { AuditVerifyReport, CheckpointRecord, TrustFile } from './verify.ts';
import { tenantOf } from './receipt-check.ts';
import { isS3Location, readS3Objects, s3SettingsFromEnv } from '../keys/anchors-s3.ts';

/** The anchors of a directory (or one file): trust for the verifier and the newest head per tenant. */
export interface AnchorSet {
  /** Anchor documents read. */
  documents: number;
  trust: TrustFile;
  /** Per tenant, the anchored checkpoint with the highest seq, and when it was published. */
  newest: Map<number, CheckpointRecord & { published_at: string }>;
  /** Files that are not anchor documents (named in the report's warnings). */
  unreadable: string[];
}

const HINT =
  'Pass the directory `solid serve --anchor-dir` publishes to, the s3://bucket/prefix of --anchor-s3, or where your --anchor-url receiver keeps the documents.';

function isCheckpoint(c: unknown): c is CheckpointRecord {
  const r = c as Partial<CheckpointRecord> | null;
  return (
    r !== null &&
    typeof r === 'object' &&
    Number.isSafeInteger(Number(r.company_id)) &&
    Number.isSafeInteger(Number(r.seq)) &&
    typeof r.head_hash === 'string' &&
    typeof r.created_at === 'string' &&
    typeof r.kid === 'string' &&
    typeof r.signature === 'string'
  );
}

/**
 * Read every `*.json` anchor document of `path` (a directory, or a single file). Throws
 * invalid_args when `path` cannot be read or holds no anchor at all.
 */
export function readAnchors(path: string): AnchorSet {
  let files: string[];
  try {
    files = statSync(path).isDirectory()
      ? readdirSync(path)
          .filter((f) => f.endsWith('.json') && !f.startsWith('.'))
          .sort()
          .map((f) => join(path, f))
      : [path];
  } catch (err) {
    throw new VerbError('invalid_args', `Cannot read the anchors at ${path}: ${(err as Error).message}`, {
      hint: HINT,
    });
  }
  return anchorSetOf(
    files.map((name) => ({ name, text: readFileSync(name, 'utf8') })),
    path,
  );
}

/**
 * Read the anchors at `location`: an `s3://bucket/prefix` (the objects `solid serve --anchor-s3`
 * published; S3 settings from `env`, see ledger/keys/anchors-s3.ts), else a directory or file as
 * {@link readAnchors}. Throws invalid_args when nothing can be read or no anchor is there.
 */
export async function readAnchorsAt(
  location: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<AnchorSet> {
  if (!isS3Location(location)) return readAnchors(location);
  return anchorSetOf(await readS3Objects(location, s3SettingsFromEnv(env)), location);
}

/** The anchor set of documents read from `where` (`name` is a file path or object URL, for warnings). */
export function anchorSetOf(entries: Array<{ name: string; text: string }>, where: string): AnchorSet {
  const keys = new Map<string, PublicJwk>();
  const checkpoints = new Map<string, CheckpointRecord>();
  const newest = new Map<number, CheckpointRecord & { published_at: string }>();
  const unreadable: string[] = [];
  let documents = 0;
  for (const { name, text } of entries) {
    let doc: { solid_anchor?: unknown; published_at?: unknown; checkpoints?: unknown; keys?: unknown };
    try {
      doc = JSON.parse(text) as typeof doc;
    } catch {
      unreadable.push(name);
      continue;
    }
    if (doc?.solid_anchor !== 1 || !Array.isArray(doc.checkpoints) || !Array.isArray(doc.keys)) {
      unreadable.push(name);
      continue;
    }
    documents++;
    for (const k of doc.keys as PublicJwk[])
      if (k !== null && typeof k === 'object' && typeof k.kid === 'string' && !keys.has(k.kid))
        keys.set(k.kid, k);
    for (const c of doc.checkpoints) {
      if (!isCheckpoint(c)) continue;
      const cp: CheckpointRecord = { ...c, company_id: Number(c.company_id), seq: Number(c.seq) };
      checkpoints.set(`${cp.company_id}|${cp.seq}|${cp.signature}`, cp);
      const prev = newest.get(cp.company_id);
      if (prev === undefined || cp.seq > prev.seq)
        newest.set(cp.company_id, { ...cp, published_at: String(doc.published_at ?? '') });
    }
  }
  if (documents === 0) throw new VerbError('invalid_args', `No anchor document in ${where}.`, { hint: HINT });
  return {
    documents,
    trust: { keys: [...keys.values()], checkpoints: [...checkpoints.values()] },
    newest,
    unreadable,
  };
}

/** Merge two trust files (keys by kid, checkpoints by content). */
export function mergeTrust(a: TrustFile | undefined, b: TrustFile): TrustFile {
  if (a === undefined) return b;
  const keys = new Map([...a.keys, ...b.keys].map((k) => [k.kid, k]));
  return { keys: [...keys.values()], checkpoints: [...(a.checkpoints ?? []), ...(b.checkpoints ?? [])] };
}

/**
 * Add a `rolled_back` finding to each tenant whose log ends before its newest anchored head (the
 * database was restored from an older copy, or its tail was cut with its checkpoints), and an
 * `anchor`-less tenant note: none. Mutates the report. Pure otherwise.
 */
export function checkAnchoredHeads(report: AuditVerifyReport, anchors: AnchorSet, tenant?: number): void {
  for (const [companyId, cp] of anchors.newest) {
    if (tenant !== undefined && companyId !== tenant) continue;
    const last = report.tenants.find((x) => x.company_id === companyId)?.last_seq ?? 0;
    if (last >= cp.seq) continue;
    const t = tenantOf(report, companyId);
    t.ok = false;
    report.ok = false;
    t.finding_count++;
    t.findings.push({
      kind: 'rolled_back',
      company_id: companyId,
      seq: cp.seq,
      kid: cp.kid,
      message: `The log ends at seq ${last}, but an anchor published ${cp.published_at || 'earlier'} holds the signed head at seq ${cp.seq}: the database was rolled back (restored from an older copy) or rows ${last + 1}–${cp.seq} were removed with their checkpoints.`,
    });
  }
}
