/**
 * Retention (spec/audit.md §retention): archive a tenant's oldest audit rows to a verified export,
 * then prune them from the database behind a signed continuity record, so `audit verify` still
 * passes across the cut — from the boundary on without the archive, the whole history with it.
 *
 * One archive step, `archiveAuditLog`:
 * 1. The range: from the row after the last boundary (or seq 1) to the highest seq created before
 *    `before` — and no further than what every live audit stream has handed over (stream/), so a
 *    row is never pruned before a SIEM or webhook sink got it.
 * 2. Write it as an NDJSON export with its signed manifest (verify/export.ts, which walks and
 *    verifies the rows as it writes them) into `dir`, then verify the files as an auditor would
 *    (verify/export-check.ts, with the database's keys). Any finding: nothing is pruned.
 * 3. In one transaction: store the signed continuity record (keys/continuity.ts: range, count,
 *    the chain hash before and at the boundary, the rows file's digest), delete the range (the
 *    append-only trigger lets rows at or below a recorded boundary go, retention/migrations.ts),
 *    and append an `audit.archive` row attributed to the operator.
 *
 * Stored receipts of pruned rows stay: `audit verify` no longer compares them with a row (it says
 * how many), and a receipt still proves what its signature covers (docs/compliance.md §3).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Queryable, Store } from '../../../store/store.ts';
import type { TenantKeys } from '../keys/tenant-keys.ts';
import { signContinuity, type ContinuityRecord } from '../keys/continuity.ts';
import { writeAuditExport } from '../verify/export.ts';
import { verifyAuditExport, type ExportFinding } from '../verify/export-check.ts';
import { databaseKeys, type AuditFinding, type AuditVerifyReport, type TrustFile } from '../verify/verify.ts';
import { tenantOf } from '../verify/receipt-check.ts';
import { GENESIS_HASH } from '../write/audit.ts';
import { appendOperatorAudit } from '../write/operator-audit.ts';
import { OTLP_SINK } from '../stream/otlp-logs.ts';
import { webhookSinkName } from '../stream/webhook-sink.ts';
import { AUDIT_ROW_EVENT } from '../stream/audit-stream.ts';

/** What one archive step did. */
export type ArchiveResult =
  | {
      ok: true;
      /** Rows archived and pruned (0: nothing before the cut, or every such row is archived already). */
      archived: number;
      record: ContinuityRecord | null;
      rowsPath: string | null;
      manifestPath: string | null;
      /** Set when live audit streams held the cut back: the highest seq they have all handed over. */
      held_by_streams: number | null;
    }
  | { ok: false; findings: Array<AuditFinding | ExportFinding>; finding_count: number };

/** A tenant's archive boundary: the last pruned seq and its row hash (0 / genesis when none). */
export async function archiveBase(q: Queryable, companyId: number): Promise<{ seq: number; hash: string }> {
  const r = await q.get<{ through_seq: unknown; record: string }>(
    'SELECT through_seq, record FROM audit_archives WHERE company_id = ? ORDER BY through_seq DESC LIMIT 1',
    [companyId],
  );
  if (r === undefined) return { seq: 0, hash: GENESIS_HASH };
  return { seq: Number(r.through_seq), hash: (JSON.parse(r.record) as ContinuityRecord).chain.boundary_hash };
}

/**
 * The highest seq every live audit stream of the tenant has handed over, or null when none runs:
 * the OTLP sink once it has a cursor; each webhook endpoint subscribed to `audit.row` (its last
 * queued row counts once delivered).
 */
async function streamedThrough(q: Queryable, companyId: number): Promise<number | null> {
  let min: number | null = null;
  const take = (n: number) => (min = min === null ? n : Math.min(min, n));
  const otlp = await q.get<{ through_seq: unknown }>(
    'SELECT through_seq FROM audit_stream_cursors WHERE company_id = ? AND sink = ?',
    [companyId, OTLP_SINK],
  );
  if (otlp !== undefined) take(Number(otlp.through_seq));
  const endpoints = await q.all<{ endpoint_id: string }>(
    `SELECT endpoint_id FROM webhook_endpoints WHERE company_id = ? AND CAST(events AS TEXT) LIKE '%"${AUDIT_ROW_EVENT}"%'`,
    [companyId],
  );
  for (const ep of endpoints) {
    const c = await q.get<{ through_seq: unknown; status: string | null }>(
      `SELECT c.through_seq, o.status FROM audit_stream_cursors c LEFT JOIN outbox o ON o.outbox_id = c.outbox_id
         WHERE c.company_id = ? AND c.sink = ?`,
      [companyId, webhookSinkName(ep.endpoint_id)],
    );
    if (c === undefined) take(0);
    else take(Number(c.through_seq) - (c.status === null || c.status === 'delivered' ? 0 : 1));
  }
  return min;
}

/**
 * Archive and prune one tenant's rows created before `before` into `dir` (created if missing;
 * files `audit-<tenant>-<first seq>-<last seq>.ndjson` and its `.manifest.json`, mode 0600).
 * Returns what was archived, or the findings of a range that does not verify (nothing pruned,
 * no file kept). Throws when the tenant has no signing key, a file cannot be written, or the
 * store refuses the delete (PostgreSQL's restricted app role: run it as the owner).
 */
export async function archiveAuditLog(
  store: Store,
  keys: TenantKeys,
  o: { companyId: number; before: Date; dir: string; now: Date; pageRows?: number },
): Promise<ArchiveResult> {
  const t = o.companyId;
  const plan = await store.read(async (q) => {
    const base = await archiveBase(q, t);
    const cut = await q.get<{ hi: unknown }>(
      'SELECT MAX(seq) AS hi FROM audit_log WHERE company_id = ? AND seq > ? AND created_at < ?',
      [t, base.seq, o.before.toISOString()],
    );
    const streamed = await streamedThrough(q, t);
    return { base, hi: cut?.hi === null || cut?.hi === undefined ? null : Number(cut.hi), streamed };
  });
  const lo = plan.base.seq + 1;
  let hi = plan.hi ?? 0;
  const held = plan.streamed !== null && plan.streamed < hi ? plan.streamed : null;
  if (held !== null) hi = held;
  const none = {
    ok: true as const,
    archived: 0,
    record: null,
    rowsPath: null,
    manifestPath: null,
    held_by_streams: held,
  };
  if (hi < lo) return none;

  mkdirSync(o.dir, { recursive: true, mode: 0o700 });
  const name = `audit-${t}-${lo}-${hi}.ndjson`;
  const out = join(o.dir, name);
  const written = await writeAuditExport(store, keys, {
    companyId: t,
    from: new Date(0),
    to: o.before,
    format: 'ndjson',
    out,
    now: o.now,
    seqRange: { lo, hi },
    ...(o.pageRows !== undefined ? { pageRows: o.pageRows } : {}),
  });
  if (!written.ok) return written;
  const m = written.manifest;
  // Read back and verified as an auditor would, with the database's keys, before anything goes.
  const trustKeys = await store.read((q) => databaseKeys(q, t));
  const check = await verifyAuditExport(out, { trust: { keys: trustKeys } });
  if (!check.ok || m.rows.first_seq !== lo || m.rows.last_seq !== hi || m.chain.head_hash === null)
    return {
      ok: false,
      findings:
        check.findings.length > 0
          ? check.findings
          : [
              {
                kind: 'truncated',
                company_id: t,
                message: `The archive does not hold seq ${lo}–${hi} whole.`,
              },
            ],
      finding_count: Math.max(1, check.finding_count),
    };
  const digest = createHash('sha256').update(readFileSync(out)).digest('hex');
  const record = signContinuity(
    {
      solid_audit_continuity: 1,
      company_id: t,
      archived_at: o.now.toISOString(),
      before: o.before.toISOString(),
      rows: { count: m.rows.count, first_seq: lo, last_seq: hi },
      chain: { prev_hash: m.chain.prev_hash ?? plan.base.hash, boundary_hash: m.chain.head_hash },
      archive: {
        rows_file: name,
        manifest_file: `${name}.manifest.json`,
        digest: { alg: 'sha-256', hex: digest },
      },
    },
    await keys.signingKey(t),
  );
  await store.write(
    async (tx) => {
      // The boundary must still be where the plan found it (another archive step did not run meanwhile).
      const now = await archiveBase(tx, t);
      if (now.seq !== plan.base.seq) throw new Error('another archive step moved the boundary meanwhile');
      await tx.run(
        'INSERT INTO audit_archives (company_id, through_seq, record, created_at) VALUES (?, ?, ?, ?)',
        [t, hi, JSON.stringify(record), o.now.toISOString()],
      );
      await tx.run('DELETE FROM audit_log WHERE company_id = ? AND seq >= ? AND seq <= ?', [t, lo, hi]);
      await appendOperatorAudit(tx, {
        company_id: t,
        action: 'audit.archive',
        category: 'audit',
        request_data: {
          before: record.before,
          first_seq: lo,
          last_seq: hi,
          count: record.rows.count,
          boundary_hash: record.chain.boundary_hash,
          rows_file: name,
          digest,
        },
        now: o.now,
      });
    },
    { label: 'audit archive' },
  );
  return {
    ok: true,
    archived: record.rows.count,
    record,
    rowsPath: out,
    manifestPath: written.manifestPath,
    held_by_streams: held,
  };
}

/**
 * `audit verify --archive DIR`: verify each archived range of the report's pruned tenants from its
 * files in `dir`, as `audit verify --export` would (`trust`: the keys given, else each export's
 * own), and check that it is the range its signed continuity record names (first and last seq,
 * the chain hash before and at the boundary, the rows file's digest). Adds the rows checked and
 * any finding to the report (a missing file is `truncated`; a file that is not the recorded one,
 * `modified`), and replaces the "verified from the boundary on" warning by what was covered.
 * Spec: spec/audit.md §retention.
 */
export async function checkArchives(
  report: AuditVerifyReport,
  records: readonly ContinuityRecord[],
  dir: string,
  trust: TrustFile | undefined,
): Promise<void> {
  for (const t of report.tenants) {
    if (t.archived === undefined) continue;
    const mine = records.filter((r) => Number(r.company_id) === t.company_id);
    let rows = 0;
    const find = (f: AuditFinding | ExportFinding) => {
      const tenant = tenantOf(report, t.company_id);
      tenant.finding_count++;
      tenant.ok = false;
      report.ok = false;
      tenant.findings.push({ ...f, kind: f.kind as AuditFinding['kind'], company_id: t.company_id });
    };
    for (const r of mine) {
      const path = join(dir, r.archive.rows_file.replace(/^.*[\\/]/, ''));
      let check: Awaited<ReturnType<typeof verifyAuditExport>>;
      try {
        check = await verifyAuditExport(path, trust !== undefined ? { trust } : {});
      } catch (err) {
        find({
          kind: 'truncated',
          company_id: t.company_id,
          seq: r.rows.first_seq,
          message: `The archive of seq ${r.rows.first_seq}–${r.rows.last_seq} (${r.archive.rows_file}) cannot be read in ${dir}: ${(err as Error).message}`,
        });
        continue;
      }
      for (const f of check.findings) find({ ...f, company_id: t.company_id });
      const digest = createHash('sha256').update(readFileSync(path)).digest('hex');
      if (
        check.first_seq !== r.rows.first_seq ||
        check.last_seq !== r.rows.last_seq ||
        digest !== r.archive.digest.hex
      )
        find({
          kind: 'modified',
          company_id: t.company_id,
          seq: r.rows.first_seq,
          message: `${r.archive.rows_file} is not the archive its signed continuity record names (seq ${r.rows.first_seq}–${r.rows.last_seq}, SHA-256 ${r.archive.digest.hex.slice(0, 12)}…).`,
        });
      rows += check.rows_checked;
    }
    t.rows_checked += rows;
    report.rows_checked += rows;
    report.warnings = report.warnings.filter((w) => !w.startsWith(`Tenant ${t.company_id}: rows seq 1–`));
    report.warnings.push(
      `Tenant ${t.company_id}: the archived rows seq 1–${t.archived.through_seq} were verified from ${mine.length} archive file${mine.length === 1 ? '' : 's'} in ${dir} and link to the rows kept: the whole history.`,
    );
  }
}
