/**
 * Outbox delivery: the effects a write queued (`ctx.outbox`, rows written in its transaction) are
 * delivered after commit through the handler registered for their kind, at least once: each row
 * is leased before delivery (a concurrent pass skips it), marked delivered after, and on a failure
 * retried with exponential backoff (1 s · 2^attempts, at most 1 h) until 8 attempts mark it failed.
 *
 * Spec: spec/store.md (outbox rows are written in the effect's transaction, nothing half-written).
 */
import type { Store } from '../../../store/store.ts';

/** How long a delivery pass owns an outbox row it claimed (ms). */
export const OUTBOX_LEASE_MS = 60_000;

/** Delivers one outbox row after commit; `meta.runtime` lets a pack's handler record the outcome (its own store write). */
export type OutboxHandlerOf<R> = (
  payload: Record<string, unknown>,
  meta: { company_id: number; audit_id: number | null; outbox_id: number; runtime: R },
) => Promise<void>;

/** One delivery pass over at most `limit` due rows. Returns the number of rows delivered. */
export async function deliverOutbox<R>(
  store: Store,
  clock: () => Date,
  handlers: ReadonlyMap<string, OutboxHandlerOf<R>>,
  runtime: R,
  limit: number,
): Promise<number> {
  const nowIso = clock().toISOString();
  const rows = await store.read((q) =>
    q.all<Record<string, unknown>>(
      `SELECT outbox_id, company_id, kind, payload, audit_id, attempts FROM outbox WHERE status = 'pending' AND deliver_after <= ? ORDER BY outbox_id LIMIT ?`,
      [nowIso, limit],
    ),
  );
  let delivered = 0;
  for (const r of rows) {
    const handler = handlers.get(r.kind as string);
    if (handler === undefined) continue;
    const id = Number(r.outbox_id);
    // Claim the row with a lease before delivering: a concurrent pass (another node, or a kick
    // racing the timer) that read the same row finds it leased and skips it. A crash between
    // delivery and the 'delivered' mark redelivers after the lease: at-least-once, never twice
    // at the same time.
    const lease = new Date(clock().getTime() + OUTBOX_LEASE_MS).toISOString();
    const claimed = await store.write((tx) =>
      tx.run(
        `UPDATE outbox SET deliver_after = ? WHERE outbox_id = ? AND status = 'pending' AND deliver_after <= ?`,
        [lease, id, nowIso],
      ),
    );
    if (claimed.changes !== 1) continue;
    try {
      const payload =
        typeof r.payload === 'string'
          ? (JSON.parse(r.payload) as Record<string, unknown>)
          : (r.payload as Record<string, unknown>);
      await handler(payload, {
        company_id: Number(r.company_id),
        audit_id: r.audit_id === null ? null : Number(r.audit_id),
        outbox_id: id,
        runtime,
      });
      await store.write((tx) =>
        tx.run(
          `UPDATE outbox SET status = 'delivered', delivered_at = ?, attempts = attempts + 1 WHERE outbox_id = ?`,
          [clock().toISOString(), id],
        ),
      );
      delivered++;
    } catch (err) {
      const attempts = Number(r.attempts) + 1;
      const next = new Date(clock().getTime() + Math.min(3600_000, 1000 * 2 ** attempts)).toISOString();
      await store.write((tx) =>
        tx.run(
          `UPDATE outbox SET attempts = ?, last_error = ?, status = ?, deliver_after = ? WHERE outbox_id = ?`,
          [
            attempts,
            String((err as Error).message).slice(0, 500),
            attempts >= 8 ? 'failed' : 'pending',
            next,
            id,
          ],
        ),
      );
    }
  }
  return delivered;
}
