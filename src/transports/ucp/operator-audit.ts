/**
 * Audit rows for operator actions taken on the local database outside any verb (`solid keys …`,
 * `solid ucp config set`): the same tamper-evident chain as dispatches, written in the same store
 * transaction as the change, attributed to the CLI operator (`agent_type` "cli:operator", no
 * user, no role). Not a dispatch: no consent gate, no receipt.
 *
 * Spec: spec/transports.md §ucp-keys, spec/audit.md.
 */
import type { StoreTx } from '../../store/store.ts';
import { appendAudit, type AuditRow } from '../../runtime/ledger/audit.ts';

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
  return appendAudit(tx, {
    company_id: a.company_id,
    created_at: a.now.toISOString(),
    user_id: null,
    role: null,
    agent_type: 'cli:operator',
    key_id: null,
    action_type: a.action,
    category: a.category,
    shape: null,
    consent_class: null,
    status: 'completed',
    reason: null,
    request_data: a.request_data,
    entity_type: a.entity_type ?? null,
    entity_id: a.entity_id ?? null,
    is_reversible: 0,
    rollback_handle: null,
    idempotency_key: null,
    transaction_id: null,
    parent_id: null,
    requires_approval: 0,
    approved_by: null,
    approved_at: null,
    latency_ms: null,
  });
}
