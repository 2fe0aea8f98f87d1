/**
 * A tenant's webhook endpoints as verbs, audited like every other change (docs/webhooks.md).
 *
 * - webhooks.list    READ (aggregate), owner: endpoint_id, url, description, events, created_by,
 *                    created_at — never the secret.
 * - webhooks.add     WRITE_REVERSIBLE (confirmation), owner: a new endpoint for the given events.
 *                    Its Standard Webhooks signing secret (`whsec_…`) is returned once, in the
 *                    envelope's `secret` member (`secret_result`): never in the receipt, the audit
 *                    row, an idempotency replay or a log. Stored encrypted with the master key.
 *                    Reverting it removes the endpoint.
 * - webhooks.remove  WRITE_REVERSIBLE (confirmation), owner: removes an endpoint; messages already
 *                    queued for it are dropped at delivery. Reverting it restores the endpoint with
 *                    its old secret.
 *
 * Projected on http and cli only, and add/remove (and their reverts) only for a human principal
 * (identity's consent predicate, act change_consent_settings): an agent holding an owner key does
 * not decide where the business's notifications go — it could redirect or silence the
 * approval.requested messages a human waits for (docs/webhooks.md).
 *
 * Reasons: invalid_input (URL: not http(s), credentials, fragment, plain http off loopback; more
 * than 20 endpoints), not_found (no such endpoint in this tenant), role_denied, human_required.
 */
import { VerbError } from '../runtime/errors.ts';
import { defineSystemVerb, type SystemVerbContext } from '../runtime/verb.ts';
import { requireHumanToChange } from '../runtime/consent/refusals.ts';
import {
  deleteWebhookEndpoint,
  insertWebhookEndpoint,
  listWebhookEndpoints,
  restoreWebhookEndpoint,
  validateWebhookUrl,
  DEFAULT_WEBHOOK_EVENTS,
  WEBHOOK_EVENTS,
  type RemovedEndpoint,
  type WebhookEventType,
} from '../runtime/ledger/write/webhook-endpoints.ts';

/** Where the business's notifications go is a human's decision (human_required otherwise). */
async function requireHuman(ctx: SystemVerbContext): Promise<void> {
  const settings = await ctx.runtime.consentSettings(ctx.principal.company_id);
  requireHumanToChange(ctx.principal, settings, "where this business's webhooks go");
}

const ENDPOINT_ID = {
  type: 'string',
  pattern: '^wh_[A-Za-z0-9_-]{12}$',
  description: 'The endpoint id (wh_…), from webhooks.list.',
};

const ENDPOINT_VIEW = {
  type: 'object',
  properties: {
    endpoint_id: { type: 'string' },
    url: { type: 'string' },
    description: { type: ['string', 'null'] },
    events: { type: 'array', items: { type: 'string' } },
    created_by: { type: 'integer' },
    created_at: { type: 'string' },
  },
  required: ['endpoint_id', 'url', 'events', 'created_at'],
};

export const webhooksList = defineSystemVerb<Record<string, never>>({
  name: 'webhooks.list',
  title: 'List webhook endpoints',
  description:
    "List this tenant's webhook endpoints, oldest first: endpoint_id, url, description, events, created_by, created_at. Never the signing secret. Owner only.",
  shape: 'aggregate',
  category: 'consent',
  role_floor: 'owner',
  surfaces: ['http', 'cli'],
  input: { type: 'object', properties: {}, additionalProperties: false },
  idempotent: true,
  async handler(ctx) {
    const endpoints = await listWebhookEndpoints(ctx.db, ctx.principal.company_id);
    return {
      entity_type: 'tenant',
      entity_id: ctx.principal.company_id,
      data: { endpoints, events: [...WEBHOOK_EVENTS] },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export interface WebhooksAddArgs {
  url: string;
  events?: WebhookEventType[];
  description?: string;
}

export const webhooksAdd = defineSystemVerb<WebhooksAddArgs>({
  name: 'webhooks.add',
  title: 'Add a webhook endpoint',
  description: `Add a webhook endpoint: signed (Standard Webhooks) POSTs of the chosen events (default: ${DEFAULT_WEBHOOK_EVENTS.join(', ')}; \`audit.row\` streams every audit row, one delivery each, in order, and is asked for by name), retried with backoff. https, or http to this machine only. The signing secret (whsec_…) is in the answer once, in \`secret.secret\`; it is stored encrypted and never shown again. A signed-in human owner only (never an agent's key: human_required); needs a confirmation; audit.revert removes the endpoint.`,
  shape: 'receipt',
  category: 'consent',
  consent: 'WRITE_REVERSIBLE',
  cap_exempt: true,
  role_floor: 'owner',
  surfaces: ['http', 'cli'],
  secret_result: ['secret'],
  input: {
    type: 'object',
    properties: {
      url: { type: 'string', minLength: 8, maxLength: 2048, description: 'Where to POST, https://…' },
      events: {
        type: 'array',
        items: { type: 'string', enum: [...WEBHOOK_EVENTS] },
        minItems: 1,
        uniqueItems: true,
        description: 'The event types to send (default: all).',
      },
      description: { type: 'string', maxLength: 200, description: 'What the endpoint is, e.g. "ops pager".' },
    },
    required: ['url'],
    additionalProperties: false,
  },
  output: {
    type: 'object',
    properties: { status: { const: 'completed' }, audit_id: { type: 'integer' }, endpoint: ENDPOINT_VIEW },
    required: ['status', 'audit_id', 'endpoint'],
  },
  summary: (a) => `Send ${(a.events ?? DEFAULT_WEBHOOK_EVENTS).join(', ')} webhooks to ${a.url}.`,
  async handler(ctx, args) {
    await requireHuman(ctx);
    const p = ctx.principal;
    const url = validateWebhookUrl(args.url);
    const { secret, ...endpoint } = await insertWebhookEndpoint(ctx.db, ctx.runtime.secrets, {
      companyId: p.company_id,
      url,
      description: args.description,
      events: args.events ?? [...DEFAULT_WEBHOOK_EVENTS],
      createdBy: p.user_id,
      now: ctx.now,
    });
    ctx.setEntity('webhook_endpoint', endpoint.endpoint_id);
    ctx.setRollback(`webhook:add:${endpoint.endpoint_id}`, { endpoint_id: endpoint.endpoint_id });
    return {
      status: 'completed',
      endpoint,
      secret,
      secret_note:
        'The signing secret is shown once (secret.secret); verify deliveries with it through a Standard Webhooks library. If it was lost, remove the endpoint and add it again.',
    };
  },
  revert: {
    async handler(ctx, original) {
      await requireHuman(ctx);
      const id = (original.rollback as { endpoint_id?: string }).endpoint_id!;
      await deleteWebhookEndpoint(ctx.db, ctx.principal.company_id, id);
      return { revert_action: `webhook endpoint ${id} removed` };
    },
  },
});

export const webhooksRemove = defineSystemVerb<{ endpoint_id: string }>({
  name: 'webhooks.remove',
  title: 'Remove a webhook endpoint',
  description:
    "Remove one of this tenant's webhook endpoints: nothing more is sent to it (messages already queued are dropped). A signed-in human owner only (never an agent's key: human_required); needs a confirmation; audit.revert restores it with its old secret.",
  shape: 'receipt',
  category: 'consent',
  consent: 'WRITE_REVERSIBLE',
  cap_exempt: true,
  role_floor: 'owner',
  surfaces: ['http', 'cli'],
  input: {
    type: 'object',
    properties: { endpoint_id: ENDPOINT_ID },
    required: ['endpoint_id'],
    additionalProperties: false,
  },
  summary: (a) => `Remove the webhook endpoint ${a.endpoint_id}; nothing more is sent to it.`,
  async handler(ctx, args) {
    await requireHuman(ctx);
    const removed = await deleteWebhookEndpoint(ctx.db, ctx.principal.company_id, args.endpoint_id);
    if (removed === undefined) {
      // The same answer for another tenant's id: no oracle.
      throw new VerbError('not_found', `This tenant has no webhook endpoint ${args.endpoint_id}.`, {
        hint: 'See the endpoints with webhooks.list.',
      });
    }
    ctx.setEntity('webhook_endpoint', args.endpoint_id);
    ctx.setRollback(`webhook:remove:${args.endpoint_id}`, removed as unknown as Record<string, unknown>);
    const { secret_enc: _enc, ...endpoint } = removed;
    return { status: 'completed', endpoint };
  },
  revert: {
    async handler(ctx, original) {
      await requireHuman(ctx);
      const r = original.rollback as unknown as RemovedEndpoint;
      await restoreWebhookEndpoint(ctx.db, ctx.principal.company_id, r);
      return { revert_action: `webhook endpoint ${r.endpoint_id} restored` };
    },
  },
});

export const webhookVerbs = [webhooksList, webhooksAdd, webhooksRemove];
