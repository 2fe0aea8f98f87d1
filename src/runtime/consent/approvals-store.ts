/**
 * The SQL of the consent tables the pipeline touches: the pending approval of a typed-phrase gate
 * (written with its pending answer, read when the call comes back, consumed in the effect's
 * transaction) and the burned nonce ids (whose primary key refuses a second use).
 *
 * Spec: spec/consent.md §nonce, §approvals.
 */
import type { Queryable, StoreTx } from '../../store/store.ts';
import type { VerbClass } from '../../spec/types.ts';

/** An approvals row as the consent step reads it. */
export interface ApprovalState {
  approval_id: string;
  status: string;
  decided_by: number | null;
  decided_at: string | null;
}

/** What a typed-phrase pending answer records (the args already redacted, as JSON). */
export interface PendingApproval {
  approvalId: string;
  companyId: number;
  jti: string;
  verb: string;
  argsJson: string;
  consentClass: VerbClass;
  typedPhrase: string;
  summary: string;
  requestedBy: number;
  requestedRole: string;
  agentType: string | null;
  createdAt: string;
  expiresAt: string;
  roleFloor: string;
}

/** Insert the `pending` approvals row of a typed-phrase gate (inside the pending answer's transaction). */
export async function insertPendingApproval(tx: StoreTx, a: PendingApproval): Promise<void> {
  await tx.run(
    `INSERT INTO approvals (approval_id, company_id, jti, verb, args, consent_class, typed_phrase, summary, requested_by, requested_role, agent_type, status, created_at, expires_at, role_floor)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
    [
      a.approvalId,
      a.companyId,
      a.jti,
      a.verb,
      a.argsJson,
      a.consentClass,
      a.typedPhrase,
      a.summary,
      a.requestedBy,
      a.requestedRole,
      a.agentType,
      a.createdAt,
      a.expiresAt,
      a.roleFloor,
    ],
  );
}

/** The approvals row of a nonce (by its jti) in a tenant, or undefined. */
export function findApproval(
  q: Queryable,
  jti: string,
  companyId: number,
): Promise<ApprovalState | undefined> {
  return q.get<ApprovalState>(
    'SELECT approval_id, status, decided_by, decided_at FROM approvals WHERE jti = ? AND company_id = ?',
    [jti, companyId],
  );
}

/**
 * Consume the approvals row of a nonce, only while it is pending or approved (the row lock makes a
 * concurrent second use or rejection lose or win cleanly). Undefined when no row was consumed.
 */
export function consumeApproval(
  tx: StoreTx,
  jti: string,
  companyId: number,
): Promise<{ approval_id: string; decided_by: number | null; decided_at: string | null } | undefined> {
  return tx.get<{ approval_id: string; decided_by: number | null; decided_at: string | null }>(
    `UPDATE approvals SET status = 'consumed' WHERE jti = ? AND company_id = ? AND status IN ('pending', 'approved') RETURNING approval_id, decided_by, decided_at`,
    [jti, companyId],
  );
}

/** Record a burned nonce id; throws the store's unique_violation on a second use. */
export async function insertBurnedNonce(
  tx: StoreTx,
  jti: string,
  companyId: number,
  consumedAt: string,
  expiresAt: string,
): Promise<void> {
  await tx.run('INSERT INTO nonces (jti, company_id, consumed_at, expires_at) VALUES (?, ?, ?, ?)', [
    jti,
    companyId,
    consumedAt,
    expiresAt,
  ]);
}
