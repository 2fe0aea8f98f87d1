/**
 * Periodic housekeeping of the consent and idempotency tables. It never changes an outcome: every
 * row it touches is already past the point where it could matter —
 *
 * - burned nonces (`nonces`) whose expiry is more than a grace period ago: an expired nonce is
 *   refused with nonce_expired before its burn row is ever consulted;
 * - pending approvals past their expiry are marked `expired` (their nonce has expired too), and
 *   decided or expired approvals older than the retention are deleted (the audit log keeps every
 *   decision);
 * - idempotency records past their 24 h expiry (a lookup already ignores them). On SQLite, which
 *   keeps no expiry index (migration 10), the records are deleted in insertion (rowid) order up to
 *   the oldest one not yet expired: a record outlives its expiry at most until every record
 *   written before it has expired (a key taken over after expiry, a longer TTL on another node);
 * - daily cap counters of days before yesterday (UTC): the cap only reads today's row.
 *
 * The runtime runs it on a timer (RuntimeOptions.maintenanceIntervalMs, default 10 min) and it can
 * be called directly. Spec: spec/consent.md §maintenance, spec/idempotency.md.
 */
import type { Store } from '../store/store.ts';
import { deleteApprovalsBefore } from './consent/approvals-store.ts';
import { sweepExpiredApprovals } from './ledger/write/webhook-endpoints.ts';

/** Grace after a nonce's expiry before its burn row is deleted (seconds; covers clock skew between nodes). */
export const NONCE_ROW_GRACE_SECONDS = 600;
/** How long decided/expired approval rows stay listable after their expiry (seconds). */
export const APPROVAL_RETENTION_SECONDS = 7 * 24 * 3600;

const IDEMPOTENCY_PRUNE = 'DELETE FROM idempotency WHERE expires_at <= ?';
/** Oldest first by rowid, up to the first record not expired (no index on expires_at, migration 10). */
const IDEMPOTENCY_PRUNE_SQLITE = `DELETE FROM idempotency WHERE rowid < COALESCE(
  (SELECT rowid FROM idempotency WHERE expires_at > ? ORDER BY rowid LIMIT 1),
  (SELECT MAX(rowid) + 1 FROM idempotency))`;

/** Rows touched by one maintenance pass. */
export interface MaintenanceReport {
  nonces_deleted: number;
  approvals_expired: number;
  approvals_deleted: number;
  idempotency_deleted: number;
  daily_counts_deleted: number;
  /** Request signatures (UCP replay guard) whose window has ended. */
  signature_replays_deleted: number;
  /** Rate-limit counters of windows that ended (src/transports/http/rate-limit.ts). */
  rate_limit_counters_deleted: number;
  /** Audit rows archived and pruned by retention policies (Runtime.maintenance with an archive directory). */
  audit_rows_archived?: number;
}

/**
 * Run one maintenance pass at `now` in one store transaction. Returns the number of rows touched
 * per table. Throws StoreError when the store is unavailable (the timer logs and retries later).
 */
export async function runMaintenance(store: Store, now: Date): Promise<MaintenanceReport> {
  const nowIso = now.toISOString();
  const nonceCut = new Date(now.getTime() - NONCE_ROW_GRACE_SECONDS * 1000).toISOString();
  const approvalCut = new Date(now.getTime() - APPROVAL_RETENTION_SECONDS * 1000).toISOString();
  const dayCut = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - 1))
    .toISOString()
    .slice(0, 10);
  return store.write(
    async (tx) => ({
      nonces_deleted: (await tx.run('DELETE FROM nonces WHERE expires_at < ?', [nonceCut])).changes,
      // Announced as approval.expired to subscribed webhooks in this transaction (docs/webhooks.md).
      approvals_expired: await sweepExpiredApprovals(tx, now, { onlyWebhookTenants: false }),
      approvals_deleted: await deleteApprovalsBefore(tx, approvalCut),
      idempotency_deleted: (
        await tx.run(store.engine === 'sqlite' ? IDEMPOTENCY_PRUNE_SQLITE : IDEMPOTENCY_PRUNE, [nowIso])
      ).changes,
      daily_counts_deleted: (await tx.run('DELETE FROM daily_counts WHERE day < ?', [dayCut])).changes,
      signature_replays_deleted: (
        await tx.run('DELETE FROM signature_replays WHERE expires_at < ?', [Math.floor(now.getTime() / 1000)])
      ).changes,
      rate_limit_counters_deleted: (
        await tx.run('DELETE FROM rate_limit_counters WHERE window_end <= ?', [now.getTime()])
      ).changes,
    }),
    { label: 'maintenance' },
  );
}
