/**
 * Tenants' webhook endpoints and the events queued for them.
 *
 * - An endpoint is a URL, the event types it wants and a signing secret (`whsec_` + base64 of 32
 *   random bytes, the Standard Webhooks secret format). The secret is shown once, when the endpoint
 *   is added; it is stored encrypted with the runtime's master key (Secrets.encrypt, aad
 *   `webhook:<endpoint_id>`) and never logged.
 * - `emitWebhookEvent` queues one outbox message per subscribed endpoint **inside the caller's
 *   transaction**: a rolled-back write sends nothing. The delivery loop
 *   (delivery/outbox-worker.ts) signs and posts each message (delivery/webhook-sender.ts) with
 *   retries; its outbox message id is the `webhook-id` header, the same on every retry.
 *
 * Spec: docs/webhooks.md.
 */
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { Queryable, StoreTx } from '../../../store/store.ts';
import type { Secrets } from '../../secrets.ts';
import { VerbError } from '../../errors.ts';
import { queueOutboxMessage } from './outbox.ts';

/** The event types a webhook endpoint may subscribe to (docs/webhooks.md §events). */
export const WEBHOOK_EVENTS = [
  'approval.requested',
  'approval.decided',
  'approval.expired',
  'cap.reached',
  'refusals.burst',
  'outbox.dead',
  'audit.row',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

/**
 * The events an endpoint gets when it names none: every notification, not `audit.row` (the whole
 * audit log, one delivery per row: ledger/stream/webhook-sink.ts), which is asked for by name.
 */
export const DEFAULT_WEBHOOK_EVENTS: readonly WebhookEventType[] = WEBHOOK_EVENTS.filter(
  (e) => e !== 'audit.row',
);

/** The outbox kind of one signed delivery to one endpoint. */
export const WEBHOOK_KIND = 'solid.webhook';

/** Endpoints one tenant may have. */
export const MAX_WEBHOOK_ENDPOINTS = 20;

/** One endpoint as webhooks.list shows it (never the secret). */
export interface WebhookEndpointView {
  endpoint_id: string;
  url: string;
  description: string | null;
  events: WebhookEventType[];
  created_by: number;
  created_at: string;
}

/** The payload of a queued `solid.webhook` outbox message. */
export interface WebhookMessagePayload {
  endpoint_id: string;
  type: WebhookEventType;
  /** ISO 8601: when the event happened. */
  timestamp: string;
  data: Record<string, unknown>;
}

function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1';
  return false;
}

/**
 * Check a webhook URL; returns it normalised. Refuses (VerbError `invalid_input`, path `/url`):
 * anything but http(s); credentials in the URL; a fragment; plain `http` to a host other than
 * loopback (the signature would travel in clear text and the body could be read on the way).
 * It does not resolve the host: pointing an endpoint at an internal address is the owner's
 * choice (docs/webhooks.md §ssrf says how to fence the egress).
 */
export function validateWebhookUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new VerbError('invalid_input', 'The webhook URL is not a valid absolute URL.', {
      path: '/url',
      hint: 'Give a full URL such as https://hooks.example.com/solid.',
    });
  }
  const refuse = (message: string, hint: string) =>
    new VerbError('invalid_input', message, { path: '/url', hint });
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw refuse(
      `A webhook URL must be http or https, not ${u.protocol.replace(':', '')}.`,
      'Use an https:// URL.',
    );
  if (u.username !== '' || u.password !== '')
    throw refuse(
      'A webhook URL must not carry a user name or password.',
      'Receivers authenticate deliveries by their Standard Webhooks signature: drop the credentials from the URL.',
    );
  if (u.hash !== '') throw refuse('A webhook URL must not have a #fragment.', 'Remove the part after #.');
  if (u.protocol === 'http:' && !isLoopbackHost(u.hostname))
    throw refuse(
      'Plain http is accepted only for a receiver on this machine (localhost, 127.0.0.1, ::1).',
      'Use https:// for a receiver on another host.',
    );
  return u.toString();
}

/** A new Standard Webhooks signing secret: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const aadOf = (endpointId: string) => `webhook:${endpointId}`;

function parseEvents(v: unknown): WebhookEventType[] {
  const arr = typeof v === 'string' ? (JSON.parse(v) as unknown) : v;
  return Array.isArray(arr) ? (arr.filter((e) => typeof e === 'string') as WebhookEventType[]) : [];
}

/** A tenant's endpoints, oldest first. */
export async function listWebhookEndpoints(q: Queryable, companyId: number): Promise<WebhookEndpointView[]> {
  const rows = await q.all<Record<string, unknown>>(
    'SELECT endpoint_id, url, description, events, created_by, created_at FROM webhook_endpoints WHERE company_id = ? ORDER BY created_at, endpoint_id',
    [companyId],
  );
  return rows.map((r) => ({
    endpoint_id: String(r.endpoint_id),
    url: String(r.url),
    description: (r.description as string | null) ?? null,
    events: parseEvents(r.events),
    created_by: Number(r.created_by),
    created_at: String(r.created_at),
  }));
}

/**
 * Add an endpoint inside `tx`; returns it with its secret (plaintext, to be shown once). The URL
 * must have passed validateWebhookUrl. Throws VerbError `invalid_input` past MAX_WEBHOOK_ENDPOINTS.
 */
export async function insertWebhookEndpoint(
  tx: Queryable,
  secrets: Secrets,
  e: {
    companyId: number;
    url: string;
    description?: string;
    events: readonly WebhookEventType[];
    createdBy: number;
    now: Date;
  },
): Promise<WebhookEndpointView & { secret: string }> {
  const n = await tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE company_id = ?', [
    e.companyId,
  ]);
  if (Number(n?.n ?? 0) >= MAX_WEBHOOK_ENDPOINTS)
    throw new VerbError(
      'invalid_input',
      `A tenant may have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints.`,
      {
        hint: 'Remove one with webhooks.remove first.',
      },
    );
  const endpointId = `wh_${randomBytes(9).toString('base64url')}`;
  const secret = newWebhookSecret();
  const view: WebhookEndpointView = {
    endpoint_id: endpointId,
    url: e.url,
    description: e.description ?? null,
    events: [...new Set(e.events)],
    created_by: e.createdBy,
    created_at: e.now.toISOString(),
  };
  await insertRow(tx, e.companyId, view, secrets.encrypt(secret, aadOf(endpointId)));
  return { ...view, secret };
}

async function insertRow(
  tx: Queryable,
  companyId: number,
  v: WebhookEndpointView,
  secretEnc: string,
): Promise<void> {
  await tx.run(
    'INSERT INTO webhook_endpoints (endpoint_id, company_id, url, description, events, secret_enc, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    [
      v.endpoint_id,
      companyId,
      v.url,
      v.description,
      JSON.stringify(v.events),
      secretEnc,
      v.created_by,
      v.created_at,
    ],
  );
}

/** The stored row of a removed endpoint, kept as revert data (the secret stays encrypted). */
export interface RemovedEndpoint extends WebhookEndpointView {
  secret_enc: string;
}

/** Remove a tenant's endpoint inside `tx`; the removed row, or undefined when the tenant has none by that id. */
export async function deleteWebhookEndpoint(
  tx: Queryable,
  companyId: number,
  endpointId: string,
): Promise<RemovedEndpoint | undefined> {
  const row = await tx.get<Record<string, unknown>>(
    'SELECT endpoint_id, url, description, events, secret_enc, created_by, created_at FROM webhook_endpoints WHERE company_id = ? AND endpoint_id = ?',
    [companyId, endpointId],
  );
  if (row === undefined) return undefined;
  await tx.run('DELETE FROM webhook_endpoints WHERE company_id = ? AND endpoint_id = ?', [
    companyId,
    endpointId,
  ]);
  return {
    endpoint_id: String(row.endpoint_id),
    url: String(row.url),
    description: (row.description as string | null) ?? null,
    events: parseEvents(row.events),
    created_by: Number(row.created_by),
    created_at: String(row.created_at),
    secret_enc: String(row.secret_enc),
  };
}

/** Put a removed endpoint back (the revert of webhooks.remove), with its old secret. */
export async function restoreWebhookEndpoint(
  tx: Queryable,
  companyId: number,
  r: RemovedEndpoint,
): Promise<void> {
  const { secret_enc, ...view } = r;
  await insertRow(tx, companyId, view, secret_enc);
}

/** The URL and decrypted secret of an endpoint, for delivery; undefined once removed. Never log the secret. */
export async function endpointForDelivery(
  q: Queryable,
  secrets: Secrets,
  companyId: number,
  endpointId: string,
): Promise<{ url: string; secret: string } | undefined> {
  const row = await q.get<{ url: string; secret_enc: string }>(
    'SELECT url, secret_enc FROM webhook_endpoints WHERE company_id = ? AND endpoint_id = ?',
    [companyId, endpointId],
  );
  if (row === undefined) return undefined;
  return { url: row.url, secret: secrets.decrypt(row.secret_enc, aadOf(endpointId)) };
}

/**
 * Queue event `type` for every endpoint of the tenant subscribed to it, inside the caller's
 * transaction `q` (one outbox message each; nothing when none is subscribed). `kick` (the
 * runtime's kickOutbox) runs after the commit when `q` is a StoreTx. Returns the messages queued.
 */
export async function emitWebhookEvent(
  q: Queryable,
  e: {
    companyId: number;
    type: WebhookEventType;
    data: Record<string, unknown>;
    now: Date;
    auditId?: number | null;
  },
  kick?: () => void,
): Promise<number> {
  const endpoints = await q.all<{ endpoint_id: string; events: unknown }>(
    'SELECT endpoint_id, events FROM webhook_endpoints WHERE company_id = ? ORDER BY endpoint_id',
    [e.companyId],
  );
  let queued = 0;
  for (const ep of endpoints) {
    if (!parseEvents(ep.events).includes(e.type)) continue;
    const payload: WebhookMessagePayload = {
      endpoint_id: ep.endpoint_id,
      type: e.type,
      timestamp: e.now.toISOString(),
      data: e.data,
    };
    await queueOutboxMessage(q, {
      companyId: e.companyId,
      kind: WEBHOOK_KIND,
      payload: payload as unknown as Record<string, unknown>,
      auditId: e.auditId ?? null,
      now: e.now,
    });
    queued++;
  }
  const tx = q as Partial<StoreTx>;
  if (queued > 0 && kick !== undefined && typeof tx.afterCommit === 'function') tx.afterCommit(kick);
  return queued;
}

/**
 * Mark pending approvals past their expiry `expired` inside `tx`, and queue `approval.expired` for
 * each (to the tenant's subscribed endpoints) in the same transaction, so each expiry is announced
 * once whichever node or pass sees it first. `onlyWebhookTenants`: touch only tenants with an
 * endpoint (the delivery loop's frequent sweep; the maintenance pass sweeps all). Returns the
 * number of approvals expired.
 */
export async function sweepExpiredApprovals(
  tx: StoreTx,
  now: Date,
  options: { onlyWebhookTenants: boolean; kick?: () => void },
): Promise<number> {
  const rows = await tx.all<Record<string, unknown>>(
    `UPDATE approvals SET status = 'expired' WHERE status = 'pending' AND expires_at <= ?${
      options.onlyWebhookTenants ? ' AND company_id IN (SELECT company_id FROM webhook_endpoints)' : ''
    } RETURNING approval_id, company_id, verb, summary, expires_at, requested_by`,
    [now.toISOString()],
  );
  for (const r of rows) {
    await emitWebhookEvent(
      tx,
      {
        companyId: Number(r.company_id),
        type: 'approval.expired',
        data: {
          approval_id: r.approval_id,
          verb: r.verb,
          summary: r.summary,
          requested_by: Number(r.requested_by),
          expired_at: r.expires_at,
        },
        now,
      },
      options.kick,
    );
  }
  return rows.length;
}
