/**
 * The stored receipts against the audit log (spec/audit.md §verify, spec/receipts.md §stored):
 * every receipt row (src/runtime/ledger/write/receipt-store.ts) attests one audit row — its
 * `attestation.seq`, `row_hash` and `prev_hash` — and that row must be in the log, in the
 * receipt's tenant, with those very hashes. A receipt whose row is gone or differs means the log
 * (or the receipts table) was rewritten, rolled back under the receipts, or restored from a copy
 * that mixes two moments. Part of `solid audit verify` on both engines, and of `solid backup` /
 * `solid restore`. Also one receipt against a log (`checkReceiptInLog`: `solid receipt verify
 * --db`, the audit.receipt verb).
 */
import type { Queryable } from '../../../store/store.ts';
import { parseJson } from '../../../store/store.ts';
import type { Receipt } from '../../../spec/types.ts';
import type { AuditVerifyReport, TenantVerifyReport } from './verify.ts';
import { storedRowHash, type AuditFinding, type StoredAuditRow } from './chain-walk.ts';
import { AUDIT_COLUMNS } from '../write/audit.ts';

/** Rows read per page (keyset pagination on receipts.audit_id). */
const PAGE = 5_000;

interface ReceiptJoinRow {
  audit_id: number | string;
  company_id: number | string;
  receipt: unknown;
  row_company: number | string | null;
  seq: number | string | null;
  row_hash: string | null;
  prev_hash: string | null;
}

/** Why a receipt does not match the log, or undefined when it matches. */
function mismatch(r: ReceiptJoinRow): string | undefined {
  let receipt: Receipt | undefined;
  try {
    receipt = parseJson<Receipt>(r.receipt);
  } catch {
    return `The stored receipt of audit_id ${r.audit_id} is not JSON.`;
  }
  const a = receipt?.attestation;
  if (a === undefined || typeof a !== 'object') return undefined; // not chained: nothing to compare
  if (r.seq === null || r.row_company === null)
    return `The receipt of audit_id ${r.audit_id} attests seq ${a.seq}, but the log has no row ${r.audit_id}: the log was rolled back or rows were deleted under a receipt handed out.`;
  if (Number(r.row_company) !== Number(r.company_id))
    return `The receipt of audit_id ${r.audit_id} belongs to tenant ${r.company_id}, but row ${r.audit_id} of the log belongs to tenant ${r.row_company}.`;
  if (Number(a.seq) !== Number(r.seq) || a.row_hash !== r.row_hash || a.prev_hash !== r.prev_hash)
    return `The receipt of audit_id ${r.audit_id} attests seq ${a.seq} with hash ${String(a.row_hash).slice(0, 12)}…, but the log's row is seq ${r.seq} with hash ${String(r.row_hash).slice(0, 12)}…: the log was rewritten under a receipt handed out.`;
  return undefined;
}

/**
 * Check every stored receipt (of `tenant`, or all) against its audit row, adding a
 * `receipt_mismatch` finding per receipt whose row is missing or differs to the tenant's report
 * (created when the report has no entry for it). Sets `report.receipts_checked`. A database
 * older than the receipts table (runtime migration 8) is skipped with no finding.
 * Mutates the report (ok, finding_count, findings). Spec: spec/audit.md §verify.
 */
export async function checkStoredReceipts(
  report: AuditVerifyReport,
  q: Pick<Queryable, 'all'>,
  options: { tenant?: number; maxFindings?: number } = {},
): Promise<void> {
  const maxFindings = options.maxFindings ?? 1000;
  const t = options.tenant;
  let after = -1;
  let checked = 0;
  let archived = 0;
  for (;;) {
    let rows: ReceiptJoinRow[];
    try {
      rows = await q.all<ReceiptJoinRow>(
        `SELECT r.audit_id, r.company_id, r.receipt, a.company_id AS row_company, a.seq, a.row_hash, a.prev_hash
           FROM receipts r LEFT JOIN audit_log a ON a.audit_id = r.audit_id
          WHERE r.audit_id > ?${t === undefined ? '' : ' AND r.company_id = ?'}
          ORDER BY r.audit_id LIMIT ?`,
        t === undefined ? [after, PAGE] : [after, t, PAGE],
      );
    } catch (err) {
      if (checked === 0 && /receipts/.test((err as Error).message)) return; // no receipts table yet
      throw err;
    }
    for (const r of rows) {
      if (r.seq === null) {
        // The row was archived and pruned (§retention): nothing in this database to compare.
        const attested = Number(
          (parseJsonSafe(r.receipt)?.attestation as { seq?: unknown } | undefined)?.seq,
        );
        const through = report.tenants.find((x) => x.company_id === Number(r.company_id))?.archived
          ?.through_seq;
        if (through !== undefined && Number.isSafeInteger(attested) && attested <= through) {
          archived++;
          continue;
        }
      }
      checked++;
      const why = mismatch(r);
      if (why === undefined) continue;
      const companyId = Number(r.company_id);
      const tenant = tenantOf(report, companyId);
      const finding: AuditFinding = {
        kind: 'receipt_mismatch',
        company_id: companyId,
        audit_id: Number(r.audit_id),
        message: why,
      };
      const seq = Number((parseJsonSafe(r.receipt)?.attestation as { seq?: unknown } | undefined)?.seq);
      if (Number.isSafeInteger(seq)) finding.seq = seq;
      tenant.finding_count++;
      tenant.ok = false;
      report.ok = false;
      if (tenant.findings.length < maxFindings) tenant.findings.push(finding);
    }
    if (rows.length < PAGE) break;
    after = Number(rows[rows.length - 1]!.audit_id);
  }
  report.receipts_checked = checked;
  if (archived > 0) report.receipts_archived = archived;
}

function parseJsonSafe(value: unknown): Receipt | undefined {
  try {
    return parseJson<Receipt>(value);
  } catch {
    return undefined;
  }
}

/** The report of `companyId` in `report`, added (empty, ok) in company order when it has none yet. */
export function tenantOf(report: AuditVerifyReport, companyId: number): TenantVerifyReport {
  let t = report.tenants.find((x) => x.company_id === companyId);
  if (t === undefined) {
    t = {
      company_id: companyId,
      ok: true,
      rows_checked: 0,
      last_seq: 0,
      last_hash: '0'.repeat(64),
      checkpoints_checked: 0,
      last_signed_seq: null,
      unsigned_rows: 0,
      finding_count: 0,
      findings: [],
    };
    report.tenants.push(t);
    report.tenants.sort((a, b) => a.company_id - b.company_id);
  }
  return t;
}

/** Outcome of checking a receipt's attestation against a local audit log. */
export interface ReceiptLogCheck {
  /** present: the row at the receipt's seq exists with the same hash and intact content. */
  status: 'present' | 'missing' | 'different' | 'unknown_tenant';
  company_id?: number;
  seq: number;
  /** present: the action the attested row records (its verb and audit_id), whatever a wrapper around the receipt claims. */
  verb?: string;
  audit_id?: number;
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
  const row = await q.get<StoredAuditRow>(
    `SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log WHERE company_id = ? AND seq = ?`,
    [company, seq],
  );
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
    verb: String(row.action_type),
    audit_id: Number(row.audit_id),
    message: `Tenant ${company}'s log holds this receipt's row at seq ${seq} (${String(row.action_type)}, audit_id ${Number(row.audit_id)}), unchanged.`,
  };
}
