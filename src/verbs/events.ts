/**
 * events.subscribe / events.poll / events.unsubscribe (shape subscribe): watch the tenant's domain
 * events by cursor polling, no socket needed.
 *
 * All three are READ verbs: they change no business data and need no consent, and keyless sandbox
 * callers may watch the sandbox tenant. subscribe stores one row of runtime metadata (the
 * subscription and its filters) and unsubscribe deletes it; a poll writes nothing (its only trace is
 * the pipeline's buffered read-audit row). They are detached verbs (VerbDefinition.detached): a
 * poll may wait up to 30 s for an event without holding a store connection or the write lock.
 *
 * Reasons: cursor_invalid (forged, altered, another tenant's), cursor_expired (older than the
 * 30-day retention, or events after it were pruned), subscription_not_found, invalid_input.
 * Spec: spec/shapes.md §subscribe.
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import {
  createSubscription,
  DEFAULT_POLL_INTERVAL_MS,
  EVENT_RETENTION_SECONDS,
  eventHead,
  getSubscription,
  latestEvents,
  MAX_INITIAL_EVENTS,
  MAX_POLL_LIMIT,
  MAX_WAIT_MS,
  normalizeFilters,
  pollEvents,
  sealCursor,
  wireEvent,
  type SubscribeArgs,
} from '../runtime/observe/event-stream.ts';

const EVENT_TYPE = {
  type: 'string',
  pattern: '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*(\\.\\*)?$',
  maxLength: 100,
} as const;

export const eventsSubscribe = defineSystemVerb<SubscribeArgs>({
  name: 'events.subscribe',
  title: 'Subscribe to events',
  description:
    'Watch the tenant\'s domain events (deal.stage_changed, invoice.paid…) without a socket: returns a subscription_id, a cursor, the latest matching events (initial_events) and poll_interval_ms; events.poll with the cursor then returns every later match, in order, once. Filter by types (exact or "deal.*"), entity_type (+ entity_ids), occurred_at range. Cursors last 30 days; 100 per user at most.',
  shape: 'subscribe',
  category: 'events',
  input: {
    type: 'object',
    properties: {
      types: {
        type: 'array',
        items: EVENT_TYPE,
        maxItems: 50,
        description: 'Event types to receive; "deal.*" matches every deal event. Absent: all types.',
      },
      entity_type: {
        type: 'string',
        minLength: 1,
        maxLength: 100,
        description: 'Only events about this kind of entity (contact, deal, invoice…).',
      },
      entity_ids: {
        type: 'array',
        items: { type: ['string', 'integer'] },
        maxItems: 100,
        description: 'With entity_type: only events about these entities.',
      },
      from: {
        type: 'string',
        format: 'date-time',
        description: 'Only events that occurred at or after this time.',
      },
      to: { type: 'string', format: 'date-time', description: 'Only events that occurred before this time.' },
      initial_limit: {
        type: 'integer',
        minimum: 0,
        maximum: MAX_INITIAL_EVENTS,
        default: 20,
        description: 'How many recent matching events to return now.',
      },
    },
    additionalProperties: false,
  },
  detached: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const filters = normalizeFilters(args);
    const p = ctx.principal;
    const head = await eventHead(ctx.db, p.company_id);
    const initial = await latestEvents(ctx.db, p.company_id, filters, head, args.initial_limit ?? 20);
    const sub = await createSubscription(ctx.runtime.store, p.company_id, p.user_id, filters, ctx.now);
    return {
      subscription_id: sub.subscription_id,
      cursor: sealCursor(ctx.runtime.secrets, p.company_id, sub.subscription_id, head, ctx.now.getTime()),
      initial_events: initial.map(wireEvent),
      filters,
      poll_interval_ms: DEFAULT_POLL_INTERVAL_MS,
      retention_seconds: EVENT_RETENTION_SECONDS,
    };
  },
});

export const eventsPoll = defineSystemVerb<{ cursor: string; wait_ms?: number; limit?: number }>({
  name: 'events.poll',
  title: 'Poll events',
  description:
    'Get the events that happened after a cursor (from events.subscribe or the previous poll), oldest first, and the next cursor to keep. Nothing new: events is empty, the cursor unchanged; wait_ms (up to 30000) holds the call until a matching event commits. Wait poll_interval_ms before the next poll (0: more are waiting). Only committed events, none skipped.',
  shape: 'subscribe',
  category: 'events',
  input: {
    type: 'object',
    properties: {
      cursor: {
        type: 'string',
        minLength: 1,
        maxLength: 4096,
        description: 'The cursor from the last events.subscribe or events.poll answer.',
      },
      wait_ms: {
        type: 'integer',
        minimum: 0,
        maximum: MAX_WAIT_MS,
        default: 0,
        description: 'Longest time to wait for a matching event (ms).',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_POLL_LIMIT,
        default: 100,
        description: 'Most events to return.',
      },
    },
    required: ['cursor'],
    additionalProperties: false,
  },
  detached: true,
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    return pollEvents(
      { store: ctx.runtime.store, read: ctx.db, secrets: ctx.runtime.secrets, now: ctx.runtime.clock },
      ctx.principal.company_id,
      ctx.principal.user_id,
      args,
      // A waiting poll also ends when the server starts shutting down (rt.beginClose).
      (args.wait_ms ?? 0) > 0 ? AbortSignal.any([ctx.signal, ctx.runtime.closing]) : ctx.signal,
    );
  },
});

export const eventsUnsubscribe = defineSystemVerb<{ subscription_id: string }>({
  name: 'events.unsubscribe',
  title: 'Unsubscribe from events',
  description:
    'Remove a subscription made with events.subscribe; its cursors then answer subscription_not_found. Only the user who subscribed may remove it.',
  shape: 'subscribe',
  category: 'events',
  input: {
    type: 'object',
    properties: { subscription_id: { type: 'string', minLength: 1, maxLength: 100 } },
    required: ['subscription_id'],
    additionalProperties: false,
  },
  detached: true,
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const p = ctx.principal;
    // Another user's subscription is refused in the words of an unknown one (no oracle).
    const sub = await getSubscription(ctx.db, p.company_id, args.subscription_id, p.user_id);
    await ctx.runtime.store.write(
      (tx) =>
        tx.run('DELETE FROM subscriptions WHERE subscription_id = ? AND company_id = ?', [
          sub.subscription_id,
          p.company_id,
        ]),
      {
        label: 'events.unsubscribe',
      },
    );
    return {
      subscription_id: sub.subscription_id,
      cursor: '',
      filters: sub.filters,
      unsubscribed: true,
      retention_seconds: EVENT_RETENTION_SECONDS,
    };
  },
});

export const eventVerbs = [eventsSubscribe, eventsPoll, eventsUnsubscribe];
