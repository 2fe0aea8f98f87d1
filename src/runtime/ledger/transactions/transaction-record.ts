/**
 * Transactions: the stored record (steps, status, expiry) and how it reads back; the refusals of a
 * transaction that is not open. Spec: spec/transactions.md.
 */
import type { Principal, VerbClass } from '../../../spec/types.ts';
import type { Queryable } from '../../../store/store.ts';
import { parseJson } from '../../../store/store.ts';
import { VerbError } from '../../errors.ts';

/** Default time an open transaction lives (seconds). */
export const TRANSACTION_TTL_SECONDS = 15 * 60;
/** Most steps one transaction may hold. */
export const MAX_TRANSACTION_STEPS = 50;
/** The verb that reverts (its handler reverts each step). */
export const REVERT_VERB = 'audit.revert';

/** Stored state of a transaction. */
export type StoredStatus = 'open' | 'committed' | 'aborted' | 'failed' | 'reverted' | 'partially_reverted';

/** A step as stored (args kept in full to run at commit; never echoed back). */
export interface StoredStep {
  verb: string;
  args: Record<string, unknown>;
  consent_class: VerbClass;
  /** The audit row of the confirmed append (carries approved_by/approved_at). */
  append_audit_id: number;
  revertible: boolean;
  status: 'pending' | 'completed' | 'failed' | 'rolled_back' | 'reverted';
  audit_id?: number;
}

export interface TransactionRecord {
  transaction_id: string;
  company_id: number;
  user_id: number;
  status: StoredStatus;
  steps: StoredStep[];
  audit_id: number | null;
  created_at: string;
  expires_at: string;
  updated_at: string;
}

/** What the transaction verbs answer (shape transaction), before the receipt fields. */
export interface TransactionOutput {
  transaction_id: string;
  status:
    | 'started'
    | 'appended'
    | 'committed'
    | 'aborted'
    | 'expired'
    | 'failed'
    | 'reverted'
    | 'partially_reverted';
  steps: Array<{ verb: string; status: string; audit_id?: number }>;
  expires_at?: string;
  [k: string]: unknown;
}

export function toRecord(r: Record<string, unknown>): TransactionRecord {
  return {
    transaction_id: r.transaction_id as string,
    company_id: Number(r.company_id),
    user_id: Number(r.user_id),
    status: r.status as StoredStatus,
    steps: parseJson<StoredStep[]>(r.steps) ?? [],
    audit_id: r.audit_id === null || r.audit_id === undefined ? null : Number(r.audit_id),
    created_at: r.created_at as string,
    expires_at: r.expires_at as string,
    updated_at: r.updated_at as string,
  };
}

/**
 * Load the caller's transaction. Another user's or tenant's id answers like a missing one
 * (transaction_not_found).
 */
export async function loadTransaction(
  q: Queryable,
  p: Principal,
  transactionId: string,
): Promise<TransactionRecord> {
  const r = await q.get<Record<string, unknown>>(
    'SELECT * FROM transactions WHERE transaction_id = ? AND company_id = ?',
    [transactionId, p.company_id],
  );
  if (r === undefined || Number(r.user_id) !== p.user_id) {
    throw new VerbError('transaction_not_found', `No transaction ${transactionId} of yours exists.`, {
      hint: 'Start one with transaction.start; a transaction belongs to the user who started it.',
    });
  }
  return toRecord(r);
}

/** The status a caller sees: open becomes started/appended, or expired once past expires_at. */
export function visibleStatus(t: TransactionRecord, now: Date): TransactionOutput['status'] {
  if (t.status === 'open') {
    if (now.toISOString() >= t.expires_at) return 'expired';
    return t.steps.length === 0 ? 'started' : 'appended';
  }
  return t.status;
}

export function assertOpen(t: TransactionRecord, now: Date): void {
  const s = visibleStatus(t, now);
  if (s === 'expired') {
    throw new VerbError(
      'transaction_expired',
      `Transaction ${t.transaction_id} expired at ${t.expires_at} before it was committed; nothing ran.`,
      {
        hint: 'Start a new transaction and append the steps again.',
        details: { expires_at: t.expires_at },
      },
    );
  }
  if (s !== 'started' && s !== 'appended') {
    throw new VerbError(
      'transaction_not_open',
      `Transaction ${t.transaction_id} is ${s}; it takes no more changes.`,
      {
        hint:
          s === 'committed'
            ? 'To undo it, call audit.revert with its audit_id or rollback_handle.'
            : 'Start a new transaction.',
        details: { status: s },
      },
    );
  }
}

export function stepsOut(t: TransactionRecord): TransactionOutput['steps'] {
  return t.steps.map((s) => ({
    verb: s.verb,
    status: s.status,
    ...(s.audit_id !== undefined ? { audit_id: s.audit_id } : {}),
  }));
}

export function refused(message: string, hint: string, details?: Record<string, unknown>): VerbError {
  return new VerbError('transaction_step_refused', message, {
    hint,
    path: '/verb',
    ...(details ? { details } : {}),
  });
}
