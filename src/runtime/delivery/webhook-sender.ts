/**
 * Signed webhook delivery: the outbox handler of kind `solid.webhook`. It signs one queued event
 * with the endpoint's secret through the `standardwebhooks` library (Standard Webhooks: headers
 * `webhook-id`, `webhook-timestamp`, `webhook-signature`; we write no cryptography) and POSTs it
 * with the attempt's deadline. A 2xx answer is delivered; anything else (3xx included: redirects
 * are not followed) throws, and the delivery loop retries with backoff.
 *
 * The body is `{"type", "timestamp", "data"}` (docs/webhooks.md §payloads); `webhook-id` is the
 * outbox message id, the same on every retry, so a receiver drops duplicates by it.
 */

import type { Store } from '../../store/store.ts';
import type { Secrets } from '../secrets.ts';
import type { OutboxHandlerOf } from '../ledger/write/outbox.ts';
import { endpointForDelivery, type WebhookMessagePayload } from '../ledger/write/webhook-endpoints.ts';

/** The User-Agent of deliveries. */
export const WEBHOOK_USER_AGENT = 'solid-verbs-webhooks/1';

/**
 * The `solid.webhook` handler for a runtime's store and secrets. `fetchImpl` is for tests.
 * A message whose endpoint was removed meanwhile is dropped (counted delivered: there is no one
 * left to deliver to).
 */
export function webhookSender<R>(deps: {
  store: Store;
  secrets: Secrets;
  fetchImpl?: typeof fetch;
}): OutboxHandlerOf<R> {
  // The global fetch (undici) and standardwebhooks load on the first delivery, not at start-up.
  const doFetch: typeof fetch = deps.fetchImpl ?? ((input, init) => fetch(input, init));
  return async (payload, meta) => {
    const p = payload as unknown as WebhookMessagePayload;
    const ep = await deps.store.read((q) =>
      endpointForDelivery(q, deps.secrets, meta.company_id, p.endpoint_id),
    );
    if (ep === undefined) return;
    const body = JSON.stringify({ type: p.type, timestamp: p.timestamp, data: p.data });
    const at = new Date();
    const { Webhook } = await import('standardwebhooks');
    const signature = new Webhook(ep.secret).sign(meta.idempotency_key, at, body);
    const res = await doFetch(ep.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': WEBHOOK_USER_AGENT,
        'webhook-id': meta.idempotency_key,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body,
      redirect: 'manual',
      signal: meta.signal,
    });
    // The receiver's body is not read (bounded work); release the connection.
    await res.body?.cancel().catch(() => {});
    if (res.status < 200 || res.status > 299) {
      throw new Error(`the receiver answered HTTP ${res.status} (attempt ${meta.attempt})`);
    }
  };
}
