/**
 * Audit rows for operator actions taken on the local database outside any verb (`solid keys …`,
 * `solid ucp config set`): the same tamper-evident chain as dispatches, written in the same store
 * transaction as the change, attributed to the CLI operator (`agent_type` "cli:operator", no
 * user, no role). Not a dispatch: no consent gate, no receipt.
 *
 * Spec: spec/transports.md §ucp-keys, spec/audit.md.
 */
import type { StoreTx } from '../../../store/store.ts';
import { appendAudit, auditEntry, type AuditRow } from './audit.ts';

export interface OperatorAction {
  company_id: number;
  /** e.g. "keys.rotate", "ucp.config_set". */
  action: string;
  /** e.g. "keys", "ucp". */
  category: string;
  request_data: Record<string, unknown>;
  entity_type?: string;
  entity_id?: string;
  now: Date;
}

/** Append the action's audit row inside `tx` (status completed). */
export function appendOperatorAudit(tx: StoreTx, a: OperatorAction): Promise<AuditRow> {
  return appendAudit(
    tx,
    auditEntry(
      {
        company_id: a.company_id,
        now: a.now,
        action: a.action,
        category: a.category,
        status: 'completed',
        agent_type: 'cli:operator',
      },
      { request_data: a.request_data, entity_type: a.entity_type ?? null, entity_id: a.entity_id ?? null },
    ),
  );
}
