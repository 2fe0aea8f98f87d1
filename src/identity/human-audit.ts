/**
 * Audit rows of the human side of identity: enrolment links made, credentials registered, users
 * invited or disabled, sign-ins and refused sign-ins. Each is a row of the tenant's hash chain,
 * written in the transaction of the change it records (refusals in their own). No secret is ever
 * in a row: not the enrolment token, the TOTP secret or code, nor passkey material (a credential
 * is named by its public id only). spec/audit.md, spec/consent.md §human-sign-in
 */
import { appendAudit, auditEntry, type AuditRow } from '../runtime/ledger/write/audit.ts';
import type { StoreTx } from '../store/store.ts';

/** One human-identity event. */
export interface HumanAuditEvent {
  company_id: number;
  /** e.g. `users.invite`, `session.signin`, `users.enrol`. */
  action: string;
  status: 'completed' | 'denied';
  /** A reason code for a denial (e.g. `signin_failed`). */
  reason?: string;
  /** Who acted: a signed-in human (`human:<channel>` agent_type), else the operator at the CLI. */
  actor?: { user_id: number; role: string } | undefined;
  /** `cli:operator`, `human:dashboard`, `human:signin`… (default `cli:operator` without an actor). */
  agent_type?: string;
  request_data: Record<string, unknown>;
  /** The user the event is about. */
  subject_user_id?: number;
  now: Date;
}

/** Append the event's audit row inside `tx` (category `identity`, entity `user`/<id>). */
export function appendHumanAudit(tx: StoreTx, e: HumanAuditEvent): Promise<AuditRow> {
  return appendAudit(
    tx,
    auditEntry(
      {
        company_id: e.company_id,
        now: e.now,
        action: e.action,
        category: 'identity',
        status: e.status,
        principal:
          e.actor === undefined
            ? null
            : { user_id: e.actor.user_id, role: e.actor.role, agent_type: e.agent_type ?? 'human' },
        agent_type: e.agent_type ?? 'cli:operator',
      },
      {
        request_data: e.request_data,
        reason: e.reason ?? null,
        entity_type: e.subject_user_id === undefined ? null : 'user',
        entity_id: e.subject_user_id === undefined ? null : String(e.subject_user_id),
      },
    ),
  );
}
