/**
 * Refusal bursts: an agent probing the guard rails. The spec's "denied rows feed threat
 * detection" made concrete: when one credential (an API key or OAuth grant) collects
 * REFUSAL_BURST.refusals denied rows within one window of REFUSAL_BURST.window_minutes (fixed
 * windows from the epoch), the denial that reaches the threshold queues the `refusals.burst`
 * webhook event in its own audit row's transaction — once per credential and window — and
 * audit.alerts reports the burst to the dashboard's banner.
 *
 * Cost: one bounded count (at most threshold + 1 rows, the status-time index) per denial of a
 * known credential. On PostgreSQL two denials committing in the same instant may both see the
 * threshold or neither (no lock is taken for an alert); SQLite's single writer makes it exact.
 *
 * Spec: spec/audit.md §refusal-bursts, docs/webhooks.md §events.
 */
import type { Queryable, StoreTx } from '../../../store/store.ts';
import { emitWebhookEvent } from './webhook-endpoints.ts';

/** The threshold: this many refusals of one credential within one window of this many minutes. */
export const REFUSAL_BURST = { refusals: 20, window_minutes: 10 } as const;

/** The fixed window holding `now`: [start, end) as ISO instants. */
export function burstWindow(now: Date): { start: string; end: string } {
  const w = REFUSAL_BURST.window_minutes * 60_000;
  const start = Math.floor(now.getTime() / w) * w;
  return { start: new Date(start).toISOString(), end: new Date(start + w).toISOString() };
}

/**
 * Count the denied rows of credential `keyId` in the window holding `now` (bounded at the
 * threshold + 1), inside `tx` after this denial's row was appended; when this denial is the one
 * that reaches the threshold, queue `refusals.burst` (data: key_id, key_name, agent_type,
 * user_id, refusals, window_start, window_end, window_minutes, last_verb, last_reason).
 * Resolves to true when the event was queued.
 */
export async function noteRefusal(
  tx: StoreTx,
  d: {
    companyId: number;
    keyId: string;
    agentType: string;
    userId: number;
    verb: string;
    reason: string;
    now: Date;
    auditId: number;
  },
  kick?: () => void,
): Promise<boolean> {
  const win = burstWindow(d.now);
  const row = await tx.get<{ n: number }>(
    `SELECT COUNT(*) AS n FROM (SELECT 1 FROM audit_log
       WHERE company_id = ? AND status = 'denied' AND status <> 'completed' AND created_at >= ? AND key_id = ?
       LIMIT ?) AS w`,
    [d.companyId, win.start, d.keyId, REFUSAL_BURST.refusals + 1],
  );
  if (Number(row?.n ?? 0) !== REFUSAL_BURST.refusals) return false;
  const data = {
    key_id: d.keyId,
    key_name: await keyName(tx, d.companyId, d.keyId),
    agent_type: d.agentType,
    user_id: d.userId,
    refusals: REFUSAL_BURST.refusals,
    window_start: win.start,
    window_end: win.end,
    window_minutes: REFUSAL_BURST.window_minutes,
    last_verb: d.verb,
    last_reason: d.reason,
  };
  await emitWebhookEvent(
    tx,
    { companyId: d.companyId, type: 'refusals.burst', data, now: d.now, auditId: d.auditId },
    kick,
  );
  return true;
}

/** The name the owner gave an API key (null for a grant or an unknown id). */
export async function keyName(q: Queryable, companyId: number, keyId: string): Promise<string | null> {
  const k = await q.get<{ name: string }>('SELECT name FROM api_keys WHERE key_id = ? AND company_id = ?', [
    keyId,
    companyId,
  ]);
  return k?.name ?? null;
}
