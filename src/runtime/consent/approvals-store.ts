/**
 * The approvals repository: every read and write of the `approvals` table (and the burned-nonce
 * ids of `nonces`) goes through this module, named by the key it uses (`…ByJti`, `…ById`,
 * `…SameAction`). The consent step writes the pending row and reads it back by the nonce's jti;
 * the write core consumes it and supersedes its twins in the effect's transaction; the approvals
 * verbs list and decide rows by approval_id; the maintenance pass expires and deletes them; the
 * metrics gauge counts them.
 *
 * Lifecycle (spec/consent.md §approvals): `pending` → `approved` | `rejected` | `expired` |
 * `superseded`; `pending` | `approved` → `consumed` (the one execution it answered). An approval
 * answers one attempt: once an identical action (same tenant, verb and canonical arguments hash)
 * completes, or the requester withdraws the pending call, its other open approvals become
 * `superseded`.
 *
 * Spec: spec/consent.md §nonce, §approvals, §pending, §provenance.
 */
import type { Queryable, StoreTx } from '../../store/store.ts';
import { parseJson } from '../../store/store.ts';
import type { Role, VerbClass } from '../../spec/types.ts';
import type { ConsentChannel } from './provenance.ts';

/** Stored statuses, plus `expired` for pending rows past their expiry not yet swept. */
export const APPROVAL_STATUSES = [
  'pending',
  'approved',
  'rejected',
  'consumed',
  'expired',
  'superseded',
] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/** Where a human (or, by tenant choice, the agent) decided an approval. spec/consent.md §provenance */
export type DecisionChannel = ConsentChannel;

/** One approvals row, typed (numbers as numbers, args and agent_text parsed). */
export interface ApprovalRecord {
  approval_id: string;
  company_id: number;
  jti: string;
  verb: string;
  /** The pending call's arguments, secret fields redacted. */
  args: Record<string, unknown>;
  /** SHA-256 (base64url) of the canonical arguments: the nonce's `a`; null on rows older than migration 12. */
  args_hash: string | null;
  consent_class: VerbClass;
  typed_phrase: string | null;
  /** The sentence the human consents to, built from typed, validated fields only. */
  summary: string;
  /** The agent's free text of the call (e.g. a refund's reason), shown apart, labelled as the agent's words. */
  agent_text: Record<string, string> | null;
  requested_by: number;
  requested_role: string;
  agent_type: string | null;
  status: Exclude<ApprovalStatus, 'expired'> | 'expired';
  decided_by: number | null;
  decided_at: string | null;
  decided_channel: DecisionChannel | null;
  /** The approver's role and display name when they decided. */
  decided_role: Role | null;
  decided_name: string | null;
  /** The approver's note on a rejection (their words, read by the agent), or why it was superseded. */
  decision_note: string | null;
  created_at: string;
  expires_at: string;
  /** After an approval: until when the agent's confirm may use it (the decision + the nonce TTL). */
  retry_expires_at: string | null;
  /** The role floor of the action as asked; null on rows older than migration 5. */
  role_floor: Role | null;
  /** The requesting principal's API key id (migration 14): a plain retry must come from it. */
  requested_key: string | null;
  /** The expiry signed into the pending answer's nonce (migration 14); null on older rows. */
  nonce_expires_at: string | null;
}

const COLUMNS =
  'approval_id, company_id, jti, verb, args, args_hash, consent_class, typed_phrase, summary, agent_text, requested_by, requested_role, agent_type, status, decided_by, decided_at, decided_channel, decided_role, decided_name, decision_note, created_at, expires_at, retry_expires_at, role_floor, requested_key, nonce_expires_at';

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function recordOf(raw: Record<string, unknown>): ApprovalRecord {
  return {
    ...(raw as unknown as ApprovalRecord),
    company_id: Number(raw.company_id),
    requested_by: Number(raw.requested_by),
    decided_by: num(raw.decided_by),
    args: parseJson<Record<string, unknown>>(raw.args) ?? {},
    agent_text: parseJson<Record<string, string>>(raw.agent_text) ?? null,
    args_hash: (raw.args_hash as string | null | undefined) ?? null,
    decided_channel: (raw.decided_channel as DecisionChannel | null | undefined) ?? null,
    decided_role: (raw.decided_role as Role | null | undefined) ?? null,
    decided_name: (raw.decided_name as string | null | undefined) ?? null,
    retry_expires_at: (raw.retry_expires_at as string | null | undefined) ?? null,
    role_floor: (raw.role_floor as Role | null | undefined) ?? null,
    requested_key: (raw.requested_key as string | null | undefined) ?? null,
    nonce_expires_at: (raw.nonce_expires_at as string | null | undefined) ?? null,
  };
}

/**
 * The status a reader should see at `nowIso`: a pending row past its expiry is `expired` (the
 * sweep marks it later); an approved row whose retry window closed is `expired` too.
 */
export function effectiveStatus(
  row: Pick<ApprovalRecord, 'status' | 'expires_at' | 'retry_expires_at'>,
  nowIso: string,
): ApprovalStatus {
  if (row.status === 'pending' && row.expires_at <= nowIso) return 'expired';
  if (row.status === 'approved' && (row.retry_expires_at ?? row.expires_at) <= nowIso) return 'expired';
  return row.status;
}

/** What a pending answer records (the args already redacted, as JSON): typed-phrase gates, and confirmation gates a plain retry or a human completes. */
export interface PendingApproval {
  approvalId: string;
  companyId: number;
  jti: string;
  verb: string;
  argsJson: string;
  /** The nonce's arguments hash (the identical-action key of supersede). */
  argsHash: string;
  consentClass: VerbClass;
  /** The phrase of a typed-phrase gate; null for a confirmation gate (approved with a click). */
  typedPhrase: string | null;
  summary: string;
  /** The agent's free text, kept apart from the summary; undefined when the call has none. */
  agentText?: Record<string, string>;
  requestedBy: number;
  requestedRole: string;
  agentType: string | null;
  createdAt: string;
  expiresAt: string;
  roleFloor: string;
  /** The requesting principal's API key id, when it has one. */
  requestedKey?: string | null;
  /** The expiry signed into the nonce of the pending answer. */
  nonceExpiresAt?: string;
}

/** Insert the `pending` approvals row of a pending answer (inside that answer's transaction). */
export async function insertPendingApproval(tx: StoreTx, a: PendingApproval): Promise<void> {
  await tx.run(
    `INSERT INTO approvals (approval_id, company_id, jti, verb, args, args_hash, consent_class, typed_phrase, summary, agent_text, requested_by, requested_role, agent_type, status, created_at, expires_at, role_floor, requested_key, nonce_expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)`,
    [
      a.approvalId,
      a.companyId,
      a.jti,
      a.verb,
      a.argsJson,
      a.argsHash,
      a.consentClass,
      a.typedPhrase,
      a.summary,
      a.agentText === undefined ? null : JSON.stringify(a.agentText),
      a.requestedBy,
      a.requestedRole,
      a.agentType,
      a.createdAt,
      a.expiresAt,
      a.roleFloor,
      a.requestedKey ?? null,
      a.nonceExpiresAt ?? null,
    ],
  );
}

/**
 * The approvals a plain retry may answer (spec/consent.md §plain-retry): the rows of this tenant,
 * verb and canonical arguments hash requested by this user with this API key (null = no key) that
 * are still open or were rejected, newest first (at most 10). Windows are the caller's to judge
 * ({@link effectiveStatus}).
 */
export async function findRetryApprovals(
  q: Queryable,
  a: { companyId: number; verb: string; argsHash: string; userId: number; keyId: string | null },
): Promise<ApprovalRecord[]> {
  const raw = await q.all<Record<string, unknown>>(
    `SELECT ${COLUMNS} FROM approvals
       WHERE company_id = ? AND verb = ? AND args_hash = ? AND requested_by = ?
         AND ${a.keyId === null ? 'requested_key IS NULL' : 'requested_key = ?'}
         AND status IN ('pending', 'approved', 'rejected')
       ORDER BY created_at DESC, approval_id DESC
       LIMIT 10`,
    a.keyId === null
      ? [a.companyId, a.verb, a.argsHash, a.userId]
      : [a.companyId, a.verb, a.argsHash, a.userId, a.keyId],
  );
  return raw.map(recordOf);
}

/** The approvals row of a nonce (by its jti) in a tenant, or undefined. */
export async function findApprovalByJti(
  q: Queryable,
  companyId: number,
  jti: string,
): Promise<ApprovalRecord | undefined> {
  const raw = await q.get<Record<string, unknown>>(
    `SELECT ${COLUMNS} FROM approvals WHERE jti = ? AND company_id = ?`,
    [jti, companyId],
  );
  return raw === undefined ? undefined : recordOf(raw);
}

/** The approvals row with this approval_id in a tenant (another tenant's id reads as undefined). */
export async function findApprovalById(
  q: Queryable,
  companyId: number,
  approvalId: string,
): Promise<ApprovalRecord | undefined> {
  const raw = await q.get<Record<string, unknown>>(
    `SELECT ${COLUMNS} FROM approvals WHERE approval_id = ? AND company_id = ?`,
    [approvalId, companyId],
  );
  return raw === undefined ? undefined : recordOf(raw);
}

/** Filter of {@link listApprovals}: `pending` = awaiting a decision (expired ones included). */
export interface ApprovalFilter {
  status: ApprovalStatus | 'all';
  approvalId?: string;
  limit: number;
  nowIso: string;
  /**
   * Leave out open confirmation requests (no phrase, pending) — under confirmation_channel `any`
   * the agent's own retry completes them, so nobody has to decide them. spec/consent.md §plain-retry
   */
  hideAgentConfirmations?: boolean;
}

/** A tenant's approvals, newest first, by filter. */
export async function listApprovals(
  q: Queryable,
  companyId: number,
  f: ApprovalFilter,
): Promise<ApprovalRecord[]> {
  const where = ['company_id = ?'];
  const params: unknown[] = [companyId];
  if (f.status === 'pending') where.push(`status IN ('pending', 'expired')`);
  else if (f.status === 'expired') {
    where.push(`(status = 'expired' OR (status = 'pending' AND expires_at <= ?))`);
    params.push(f.nowIso);
  } else if (f.status !== 'all') {
    where.push('status = ?');
    params.push(f.status);
  }
  if (f.approvalId !== undefined) {
    where.push('approval_id = ?');
    params.push(f.approvalId);
  }
  if (f.hideAgentConfirmations === true)
    where.push(`NOT (typed_phrase IS NULL AND status IN ('pending', 'expired'))`);
  params.push(f.limit);
  const raw = await q.all<Record<string, unknown>>(
    `SELECT ${COLUMNS} FROM approvals WHERE ${where.join(' AND ')} ORDER BY created_at DESC, approval_id LIMIT ?`,
    params,
  );
  return raw.map(recordOf);
}

/**
 * Counts of a tenant's queue at `nowIso`: waiting, expired, approved and not yet used
 * (`hideAgentConfirmations`: as in {@link ApprovalFilter}, open confirmation requests left out).
 */
export async function countApprovals(
  q: Queryable,
  companyId: number,
  nowIso: string,
  hideAgentConfirmations = false,
): Promise<{ pending: number; expired: number; approved_unused: number }> {
  const c = await q.get<{ pending: unknown; expired: unknown; approved_unused: unknown }>(
    `SELECT SUM(CASE WHEN status = 'pending' AND expires_at > ? THEN 1 ELSE 0 END) AS pending,
            SUM(CASE WHEN status = 'expired' OR (status = 'pending' AND expires_at <= ?) THEN 1 ELSE 0 END) AS expired,
            SUM(CASE WHEN status = 'approved' AND COALESCE(retry_expires_at, expires_at) > ? THEN 1 ELSE 0 END) AS approved_unused
     FROM approvals WHERE company_id = ?${hideAgentConfirmations ? ` AND NOT (typed_phrase IS NULL AND status IN ('pending', 'expired'))` : ''}`,
    [nowIso, nowIso, nowIso, companyId],
  );
  return {
    pending: Number(c?.pending ?? 0),
    expired: Number(c?.expired ?? 0),
    approved_unused: Number(c?.approved_unused ?? 0),
  };
}

/** Per tenant: approvals pending and unexpired at `nowIso` (the /metrics gauge). */
export async function countWaitingByTenant(
  q: Queryable,
  nowIso: string,
): Promise<Array<{ company_id: number; n: number }>> {
  const rows = await q.all<{ company_id: number; n: number }>(
    "SELECT company_id, COUNT(*) AS n FROM approvals WHERE status = 'pending' AND expires_at > ? GROUP BY company_id",
    [nowIso],
  );
  return rows.map((r) => ({ company_id: Number(r.company_id), n: Number(r.n) }));
}

/** A decision on an approval: who, when, where, and (reject) the approver's words. */
export interface Decision {
  by: number;
  role: Role;
  /** The approver's display name (users table), when known. */
  name?: string | null;
  at: string;
  channel: DecisionChannel | null;
  note?: string | null;
  /** Approve only: until when the agent's confirm may use the approval (decision + nonce TTL). */
  retryExpiresAt?: string;
}

/** Mark a pending approval approved. False when it was not pending any more (another decision won). */
export async function approveById(
  tx: StoreTx,
  companyId: number,
  approvalId: string,
  d: Decision,
): Promise<boolean> {
  const r = await tx.run(
    `UPDATE approvals SET status = 'approved', decided_by = ?, decided_at = ?, decided_channel = ?, decided_role = ?, decided_name = ?, retry_expires_at = ? WHERE approval_id = ? AND company_id = ? AND status = 'pending'`,
    [d.by, d.at, d.channel, d.role, d.name ?? null, d.retryExpiresAt ?? null, approvalId, companyId],
  );
  return r.changes === 1;
}

/** Mark a pending (or approved, unused) approval rejected with the approver's note. False when it was not open. */
export async function rejectById(
  tx: StoreTx,
  companyId: number,
  approvalId: string,
  d: Decision,
): Promise<boolean> {
  const r = await tx.run(
    `UPDATE approvals SET status = 'rejected', decided_by = ?, decided_at = ?, decided_channel = ?, decided_role = ?, decided_name = ?, decision_note = ? WHERE approval_id = ? AND company_id = ? AND status IN ('pending', 'approved')`,
    [d.by, d.at, d.channel, d.role, d.name ?? null, d.note ?? null, approvalId, companyId],
  );
  return r.changes === 1;
}

/**
 * Withdraw a pending call's approval (its requester, or the agent acting for them): status
 * `superseded` with the note. False when it was not open.
 */
export async function withdrawById(
  tx: StoreTx,
  companyId: number,
  approvalId: string,
  at: string,
  note: string,
): Promise<boolean> {
  const r = await tx.run(
    `UPDATE approvals SET status = 'superseded', decided_at = ?, decision_note = ? WHERE approval_id = ? AND company_id = ? AND status IN ('pending', 'approved')`,
    [at, note, approvalId, companyId],
  );
  return r.changes === 1;
}

/** The consumed row's decision facts (provenance of the execution it answered). */
export interface ConsumedApproval {
  approval_id: string;
  decided_by: number | null;
  decided_at: string | null;
  decided_channel: DecisionChannel | null;
  decided_role: Role | null;
  decided_name: string | null;
}

/**
 * Consume the approvals row of a nonce, only while it is pending or approved (the row lock makes a
 * concurrent second use or rejection lose or win cleanly). Undefined when no row was consumed.
 */
export async function consumeApprovalByJti(
  tx: StoreTx,
  companyId: number,
  jti: string,
): Promise<ConsumedApproval | undefined> {
  const r = await tx.get<Record<string, unknown>>(
    `UPDATE approvals SET status = 'consumed' WHERE jti = ? AND company_id = ? AND status IN ('pending', 'approved') RETURNING approval_id, decided_by, decided_at, decided_channel, decided_role, decided_name`,
    [jti, companyId],
  );
  if (r === undefined) return undefined;
  return {
    approval_id: r.approval_id as string,
    decided_by: num(r.decided_by),
    decided_at: (r.decided_at as string | null) ?? null,
    decided_channel: (r.decided_channel as DecisionChannel | null) ?? null,
    decided_role: (r.decided_role as Role | null) ?? null,
    decided_name: (r.decided_name as string | null) ?? null,
  };
}

/**
 * Supersede the other open (pending or approved) approvals of an identical action — same tenant,
 * verb and canonical arguments hash — inside the transaction of the write that just completed it:
 * each answered that attempt, so none may run it again. Returns the superseded approval ids.
 * spec/consent.md §approvals
 */
export async function supersedeSameAction(
  tx: StoreTx,
  a: {
    companyId: number;
    verb: string;
    argsHash: string;
    exceptApprovalId?: string;
    at: string;
    auditId: number;
  },
): Promise<string[]> {
  const rows = await tx.all<{ approval_id: string }>(
    `UPDATE approvals SET status = 'superseded', decided_at = ?, decision_note = ?
       WHERE company_id = ? AND verb = ? AND args_hash = ? AND status IN ('pending', 'approved') AND approval_id <> ?
       RETURNING approval_id`,
    [
      a.at,
      `The same action completed by another path (audit #${a.auditId}).`,
      a.companyId,
      a.verb,
      a.argsHash,
      a.exceptApprovalId ?? '',
    ],
  );
  return rows.map((r) => r.approval_id);
}

/** Mark every pending approval past its expiry `expired` (the maintenance pass). Returns the count. */
export async function expireDueApprovals(tx: StoreTx, nowIso: string): Promise<number> {
  return (
    await tx.run(`UPDATE approvals SET status = 'expired' WHERE status = 'pending' AND expires_at <= ?`, [
      nowIso,
    ])
  ).changes;
}

/** Delete decided or expired approvals that expired before `cutIso` (the maintenance pass). */
export async function deleteApprovalsBefore(tx: StoreTx, cutIso: string): Promise<number> {
  return (await tx.run(`DELETE FROM approvals WHERE status <> 'pending' AND expires_at < ?`, [cutIso]))
    .changes;
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

/**
 * Keep a pending audit row's nonce id (`pending_actions`, outside the hash chain), in the pending
 * row's transaction: the write that later burns the nonce is linked to it (spec/audit.md §fold).
 */
export async function recordPendingAction(
  tx: StoreTx,
  companyId: number,
  pendingAuditId: number,
  jti: string,
): Promise<void> {
  await tx.run('INSERT INTO pending_actions (company_id, audit_id, jti) VALUES (?, ?, ?)', [
    companyId,
    pendingAuditId,
    jti,
  ]);
}

/**
 * Link the pending rows of nonce `jti` to the write that burns it (`actionAuditId`), in the
 * write's transaction: one action, one Activity row (spec/audit.md §fold). No pending row (a
 * nonce issued before this link existed): nothing to link.
 */
export async function linkPendingAction(
  tx: StoreTx,
  companyId: number,
  jti: string,
  actionAuditId: number,
): Promise<void> {
  await tx.run(
    'UPDATE pending_actions SET action_audit_id = ? WHERE company_id = ? AND jti = ? AND action_audit_id IS NULL',
    [actionAuditId, companyId, jti],
  );
}
