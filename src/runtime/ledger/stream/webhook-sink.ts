/**
 * The webhook sink of the audit log: every audit row of a tenant, in `seq` order, to each of its
 * webhook endpoints subscribed to `audit.row`, through the outbox (signed with Standard Webhooks
 * by delivery/webhook-sender.ts, retried with backoff, at least once).
 *
 * - One row per delivery: the body's `data` is the row as an export writes it (every column,
 *   `seq`, `prev_hash`, `row_hash`), and its `webhook-id` is `audit_<audit_id>`, the same on every
 *   retry: the receiver's idempotency key.
 * - Order per tenant: an endpoint has at most one audit row in the outbox at a time. The next row
 *   is queued in the transaction that marks the previous one delivered (`onAuditRowDelivered`),
 *   and by the delivery loop's pass (`pumpAuditWebhooks`) when a stream was idle or new.
 * - A row whose delivery is dead (after the outbox's last attempt) stops that endpoint's stream
 *   there — no row is skipped; the dead letter is announced (`outbox.dead`) and shown with the
 *   others. Removing the endpoint (a human's act) stops it; adding it back with audit.revert
 *   resumes after the last row queued.
 *
 * Spec: spec/audit.md §streaming, docs/webhooks.md §audit.row.
 */
import type { Queryable, StoreTx } from '../../../store/store.ts';
import { queueOutboxMessage, type OutboxMessage } from '../write/outbox.ts';
import { WEBHOOK_KIND, type WebhookMessagePayload } from '../write/webhook-endpoints.ts';
import { AUDIT_ROW_EVENT, advanceCursor, auditRowsAfter, readCursor } from './audit-stream.ts';

/** The cursor name of an endpoint's audit stream. */
export function webhookSinkName(endpointId: string): string {
  return `webhook:${endpointId}`;
}

/** The `webhook-id` of an audit row's delivery. */
export function auditRowMessageId(auditId: number): string {
  return `audit_${auditId}`;
}

const SUBSCRIBED = `CAST(w.events AS TEXT) LIKE '%"${AUDIT_ROW_EVENT}"%'`;

/**
 * Endpoints whose audit stream can move now: subscribed to `audit.row`, behind their tenant's head,
 * and with no row in flight (the last one queued is delivered). A read: the loop writes only
 * when there is something to queue.
 */
export async function auditWebhooksDue(
  q: Queryable,
): Promise<Array<{ company_id: number; endpoint_id: string }>> {
  const rows = await q.all<Record<string, unknown>>(
    `SELECT w.company_id, w.endpoint_id FROM webhook_endpoints w
       JOIN tenant_heads h ON h.company_id = w.company_id
       LEFT JOIN audit_stream_cursors c ON c.company_id = w.company_id AND c.sink = 'webhook:' || w.endpoint_id
       LEFT JOIN outbox o ON o.outbox_id = c.outbox_id
       WHERE ${SUBSCRIBED} AND h.audit_seq > COALESCE(c.through_seq, 0)
         AND (o.status IS NULL OR o.status = 'delivered')
       ORDER BY w.company_id, w.endpoint_id`,
  );
  return rows.map((r) => ({ company_id: Number(r.company_id), endpoint_id: String(r.endpoint_id) }));
}

/**
 * Queue the next audit row for each given endpoint inside `tx`, when its previous row is
 * delivered (or it has none). Returns the number of rows queued. An endpoint whose cursor another
 * pass moved meanwhile is skipped (that pass queued the row).
 */
export async function pumpAuditWebhooks(
  tx: StoreTx,
  endpoints: ReadonlyArray<{ company_id: number; endpoint_id: string }>,
  now: Date,
): Promise<number> {
  let queued = 0;
  for (const ep of endpoints) {
    const live = await tx.get<{ events: unknown }>(
      `SELECT w.events FROM webhook_endpoints w WHERE w.company_id = ? AND w.endpoint_id = ? AND ${SUBSCRIBED}`,
      [ep.company_id, ep.endpoint_id],
    );
    if (live === undefined) continue;
    const cursor = await readCursor(tx, ep.company_id, webhookSinkName(ep.endpoint_id));
    if (cursor.outbox_id !== null) {
      const prev = await tx.get<{ status: string }>('SELECT status FROM outbox WHERE outbox_id = ?', [
        cursor.outbox_id,
      ]);
      if (prev !== undefined && prev.status !== 'delivered') continue;
    }
    const [row] = await auditRowsAfter(tx, ep.company_id, cursor.through_seq, 1);
    if (row === undefined) continue;
    const auditId = Number(row.audit_id);
    const payload: WebhookMessagePayload = {
      endpoint_id: ep.endpoint_id,
      type: AUDIT_ROW_EVENT,
      timestamp: String(row.created_at),
      data: row,
    };
    const outboxId = await queueOutboxMessage(tx, {
      companyId: ep.company_id,
      kind: WEBHOOK_KIND,
      payload: payload as unknown as Record<string, unknown>,
      auditId,
      now,
      messageId: auditRowMessageId(auditId),
    });
    if (!(await advanceCursor(tx, cursor, Number(row.seq), outboxId, now))) {
      await tx.run('DELETE FROM outbox WHERE outbox_id = ?', [outboxId]);
      continue;
    }
    queued++;
  }
  return queued;
}

/**
 * The delivery loop's hook after a message is marked delivered (same transaction): when it was an
 * audit row, queue that endpoint's next row. Returns the number queued (0 or 1).
 */
export function onAuditRowDelivered(tx: StoreTx, m: OutboxMessage, now: Date): Promise<number> {
  if (m.kind !== WEBHOOK_KIND || m.payload.type !== AUDIT_ROW_EVENT) return Promise.resolve(0);
  return pumpAuditWebhooks(
    tx,
    [{ company_id: m.company_id, endpoint_id: String(m.payload.endpoint_id) }],
    now,
  );
}
