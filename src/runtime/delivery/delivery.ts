/**
 * Wires a runtime's delivery loop: the packs' outbox handlers, the built-in signed webhook sender,
 * the `outbox.dead` announcement of a dead letter and the approval-expiry sweep that announces
 * `approval.expired`. createRuntime calls `createDelivery` once and starts it after migrations.
 *
 * Spec: docs/authoring.md §8(c), docs/webhooks.md.
 */
import type { Logger } from 'pino';
import type { Store } from '../../store/store.ts';
import type { Secrets } from '../secrets.ts';
import type { OutboxHandlerOf } from '../ledger/write/outbox.ts';
import { emitWebhookEvent, sweepExpiredApprovals, WEBHOOK_KIND } from '../ledger/write/webhook-endpoints.ts';
import { OutboxWorker, type OutboxDeliveryOptions } from './outbox-worker.ts';
import { webhookSender } from './webhook-sender.ts';
import { auditWebhooksDue, onAuditRowDelivered, pumpAuditWebhooks } from '../ledger/stream/webhook-sink.ts';

export { OutboxWorker, type OutboxDeliveryOptions } from './outbox-worker.ts';

/** The delivery loop of a runtime `R` (see outbox-worker.ts), with webhooks built in. */
export function createDelivery<R>(
  deps: {
    store: Store;
    secrets: Secrets;
    clock: () => Date;
    logger: Logger;
    handlers: ReadonlyMap<string, OutboxHandlerOf<R>>;
    runtime: R;
    fetchImpl?: typeof fetch;
  },
  options: OutboxDeliveryOptions = {},
): OutboxWorker<R> {
  let worker: OutboxWorker<R> | undefined = undefined;
  const kick = () => worker?.kick();
  let lastSweep = 0;
  let lastAuditPump = 0;
  worker = new OutboxWorker<R>(
    {
      store: deps.store,
      clock: deps.clock,
      logger: deps.logger,
      handlers: deps.handlers,
      runtime: deps.runtime,
      builtin: new Map([[WEBHOOK_KIND, webhookSender<R>(deps)]]),
      async onDelivered(tx, m) {
        // The audit.row stream of that endpoint moves on to its next row (webhook-sink.ts).
        await onAuditRowDelivered(tx, m, deps.clock());
      },
      async onDead(tx, m, error) {
        // A dead `outbox.dead` announcement is not announced again (no loop).
        if (m.kind === WEBHOOK_KIND && m.payload.type === 'outbox.dead') return;
        await emitWebhookEvent(
          tx,
          {
            companyId: m.company_id,
            type: 'outbox.dead',
            data: {
              outbox_id: m.outbox_id,
              kind: m.kind,
              message_id: m.message_id,
              attempts: m.attempts + 1,
              last_error: error.slice(0, 500),
              ...(m.kind === WEBHOOK_KIND
                ? { webhook: { endpoint_id: m.payload.endpoint_id, type: m.payload.type } }
                : {}),
            },
            now: deps.clock(),
            auditId: m.audit_id,
          },
          kick,
        );
      },
      async beforePass() {
        const now = deps.clock();
        // Audit streams that are idle or new (at most once per poll interval; a read first).
        if (now.getTime() - lastAuditPump >= (worker?.options.pollIntervalMs ?? 5000)) {
          lastAuditPump = now.getTime();
          const due = await deps.store.read((q) => auditWebhooksDue(q));
          if (due.length > 0) await deps.store.write((tx) => pumpAuditWebhooks(tx, due, now));
        }
        // At most once per poll interval; a read first, so an idle tenant costs no write.
        if (now.getTime() - lastSweep < (worker?.options.pollIntervalMs ?? 5000)) return;
        lastSweep = now.getTime();
        const due = await deps.store.read((q) =>
          q.get(
            `SELECT 1 AS due FROM approvals WHERE status = 'pending' AND expires_at <= ? AND company_id IN (SELECT company_id FROM webhook_endpoints) LIMIT 1`,
            [now.toISOString()],
          ),
        );
        if (due === undefined) return;
        await deps.store.write((tx) => sweepExpiredApprovals(tx, now, { onlyWebhookTenants: true, kick }));
      },
    },
    options,
  );
  return worker;
}
