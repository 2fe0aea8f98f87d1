/**
 * The receipts table: every write's receipt, kept for as long as its audit row, so a receipt can
 * be shown, verified and downloaded later (the idempotency record that also holds it expires
 * after 24 h). The stored form is the chained receipt (attestation with kid-less `seq`,
 * `row_hash`, `prev_hash`, no `jws`): it is signed as it is read, with the tenant's current key,
 * like a replay (spec/receipts.md §attestation, §stored).
 *
 * Spec: spec/receipts.md §stored.
 */
import type { Queryable, StoreTx } from '../../../store/store.ts';
import { parseJson } from '../../../store/store.ts';
import type { Envelope, Receipt } from '../../../spec/types.ts';

/**
 * Keep the receipt of a successful write envelope (in the write's own store transaction, so the
 * receipt exists exactly when the action does), with the write's revert data (JSON) when given
 * (migration 10: one row instead of a receipts and a revert_data row). An envelope without an
 * attested receipt is skipped; its revert data then goes to revert_data. Called by
 * claimIdempotency, which every dispatched write passes. Returns true when the receipt row was
 * written by this call.
 */
export async function storeReceipt(
  tx: StoreTx,
  companyId: number,
  auditId: number,
  envelope: Envelope,
  revertData?: string,
): Promise<boolean> {
  const r = envelope.result as Receipt | undefined;
  const stored =
    r?.attestation !== undefined &&
    (
      await tx.run(
        'INSERT INTO receipts (audit_id, company_id, receipt, revert_data) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
        [auditId, companyId, JSON.stringify(r), revertData ?? null],
      )
    ).changes > 0;
  if (!stored && revertData !== undefined) await insertRevertData(tx, auditId, companyId, revertData);
  return stored;
}

/**
 * The revert data (parsed JSON) recorded for one audit row of this tenant: in its receipt row
 * (migration 10), else in revert_data. Undefined when the write recorded none.
 */
export async function findRevertData(
  q: Queryable,
  companyId: number,
  auditId: number,
): Promise<Record<string, unknown> | undefined> {
  const row = await q.get<{ data: unknown }>(
    `SELECT COALESCE(
       (SELECT revert_data FROM receipts WHERE audit_id = ? AND company_id = ?),
       (SELECT data FROM revert_data WHERE audit_id = ? AND company_id = ?)) AS data`,
    [auditId, companyId, auditId, companyId],
  );
  if (row === undefined || row.data === null || row.data === undefined) return undefined;
  return parseJson<Record<string, unknown>>(row.data) ?? {};
}

/**
 * The stored (unsigned, chained) receipt of one audit row of this tenant, or undefined: the row
 * is not a completed write, belongs to another tenant, or was written before receipts were kept
 * (its idempotency record is then looked at, while it lives).
 */
export async function findReceipt(
  q: Queryable,
  companyId: number,
  auditId: number,
): Promise<Receipt | undefined> {
  const row = await q.get<{ receipt: unknown }>(
    'SELECT receipt FROM receipts WHERE audit_id = ? AND company_id = ?',
    [auditId, companyId],
  );
  if (row !== undefined) return parseJson<Receipt>(row.receipt);
  const idem = await q.get<{ envelope: unknown }>(
    'SELECT envelope FROM idempotency WHERE company_id = ? AND audit_id = ?',
    [companyId, auditId],
  );
  const r =
    idem === undefined ? undefined : (parseJson<Envelope>(idem.envelope).result as Receipt | undefined);
  return r?.attestation === undefined ? undefined : r;
}

/** The revert data of a write without a stored receipt row (JSON text), in its transaction. */
export async function insertRevertData(
  tx: StoreTx,
  auditId: number,
  companyId: number,
  data: string,
): Promise<void> {
  await tx.run('INSERT INTO revert_data (audit_id, company_id, data) VALUES (?, ?, ?)', [
    auditId,
    companyId,
    data,
  ]);
}
