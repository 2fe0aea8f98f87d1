/**
 * The tenant's event stream as cursor polling (shape subscribe): subscriptions with filters,
 * authenticated cursors, bounded long-polls, and the pruning that makes a retention statement true.
 *
 * Ordering and completeness: events are appended with the write that caused them, their `seq`
 * assigned under the tenant head lock (ledger/write/events.ts), so commit order equals seq order and a
 * rolled-back write leaves no event and no gap. A poll reads the committed head H of the tenant
 * first, then the matching events with cursor < seq ≤ H: every event ≤ H is committed by then, and
 * everything committed later has seq > H, so a poller sees each committed event exactly once, in
 * order, and never one whose write rolled back.
 *
 * Cursor: `ev1.<kid>.<payload>.<hmac>` (Secrets.sealToken, purpose "cursor"), payload
 * `{ c: company_id, s: subscription_id, q: last seq covered, h: hour issued (hours since epoch) }`.
 * It is opaque to clients and cannot be forged or moved to another tenant (cursor_invalid). A cursor
 * stays valid EVENT_RETENTION_SECONDS after it was issued (every poll hands back a fresh one), and as
 * long as no event after it was pruned; otherwise cursor_expired (410).
 *
 * Spec: spec/shapes.md §subscribe.
 */
import { randomBytes } from 'node:crypto';
import type { DomainEvent } from '../../spec/types.ts';
import type { Queryable, Store } from '../../store/store.ts';
import { parseJson } from '../../store/store.ts';
import { VerbError } from '../errors.ts';
import type { Secrets } from '../secrets.ts';
import { eventsChannel, toDomainEvent } from '../ledger/write/events.ts';
import { refuse } from '../refusals.ts';

/** How long a cursor stays valid after it was issued (seconds): 30 days. */
export const EVENT_RETENTION_SECONDS = 30 * 24 * 3600;
/** Suggested wait between polls when nothing is pending (ms), advertised in every answer. */
export const DEFAULT_POLL_INTERVAL_MS = 2000;
/** Longest a poll may be held open waiting for a matching event (ms). */
export const MAX_WAIT_MS = 30_000;
/** Most events a poll returns (default 100). */
export const MAX_POLL_LIMIT = 500;
/** Most events returned with a new subscription (default 20). */
export const MAX_INITIAL_EVENTS = 100;
/**
 * Most subscriptions one user of a tenant keeps (the keyless sandbox caller is one user): a new
 * one beyond it replaces that user's oldest, whose cursors then answer subscription_not_found.
 */
export const MAX_SUBSCRIPTIONS_PER_USER = 100;

/** A subscription's filters, normalised (ISO times, string entity ids). */
export interface SubscriptionFilters {
  /** Event types; an entry ending in ".*" matches a prefix (`deal.*`). Absent: every type. */
  types?: string[];
  entity_type?: string;
  /** With entity_type: only these entities. */
  entity_ids?: string[];
  /** occurred_at ≥ from. */
  from?: string;
  /** occurred_at < to. */
  to?: string;
}

export interface SubscribeArgs {
  types?: string[];
  entity_type?: string;
  entity_ids?: Array<string | number>;
  from?: string;
  to?: string;
  initial_limit?: number;
}

interface CursorPayload {
  c: number;
  s: string;
  q: number;
  h: number;
}

const HOUR_MS = 3600_000;
/** Abort reason of a finished wait (a preallocated reason spares building a DOMException). */
const DONE = Symbol('poll answered');

/**
 * Check and normalise subscribe arguments. Throws invalid_input (with the JSON Pointer) for
 * entity_ids without entity_type and for a time range whose end is not after its start.
 */
export function normalizeFilters(args: SubscribeArgs): SubscriptionFilters {
  const f: SubscriptionFilters = {};
  if (args.types !== undefined && args.types.length > 0) f.types = [...new Set(args.types)].sort();
  if (args.entity_type !== undefined) f.entity_type = args.entity_type;
  if (args.entity_ids !== undefined && args.entity_ids.length > 0) {
    if (args.entity_type === undefined) {
      throw new VerbError(
        'invalid_input',
        'entity_ids needs entity_type: ids are only unique within one entity type.',
        {
          path: '/entity_type',
          hint: 'Add entity_type (e.g. "deal") beside entity_ids.',
        },
      );
    }
    f.entity_ids = [...new Set(args.entity_ids.map(String))].sort();
  }
  if (args.from !== undefined) f.from = new Date(args.from).toISOString();
  if (args.to !== undefined) f.to = new Date(args.to).toISOString();
  if (f.from !== undefined && f.to !== undefined && f.to <= f.from) {
    throw new VerbError('invalid_input', 'The time range is empty: `to` must be after `from`.', {
      path: '/to',
      hint: 'Swap the bounds or widen the range.',
    });
  }
  return f;
}

/** SQL conditions (portable, `?` placeholders) selecting events that match `f`. */
export function filterSql(f: SubscriptionFilters): { where: string[]; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  if (f.types !== undefined) {
    const exact = f.types.filter((t) => !t.endsWith('.*'));
    const prefixes = f.types.filter((t) => t.endsWith('.*')).map((t) => t.slice(0, -1));
    const ors: string[] = [];
    if (exact.length > 0) {
      ors.push(`type IN (${exact.map(() => '?').join(', ')})`);
      params.push(...exact);
    }
    for (const p of prefixes) {
      ors.push('substr(type, 1, ?) = ?');
      params.push(p.length, p);
    }
    where.push(`(${ors.join(' OR ')})`);
  }
  if (f.entity_type !== undefined) {
    where.push('entity_type = ?');
    params.push(f.entity_type);
  }
  if (f.entity_ids !== undefined) {
    where.push(`entity_id IN (${f.entity_ids.map(() => '?').join(', ')})`);
    params.push(...f.entity_ids);
  }
  if (f.from !== undefined) {
    where.push('occurred_at >= ?');
    params.push(f.from);
  }
  if (f.to !== undefined) {
    where.push('occurred_at < ?');
    params.push(f.to);
  }
  return { where, params };
}

/** Seal a cursor for a subscription at position `seq`, issued at `nowMs`. */
export function sealCursor(
  secrets: Secrets,
  companyId: number,
  subscriptionId: string,
  seq: number,
  nowMs: number,
): string {
  return secrets.sealToken('cursor', 'ev1', {
    c: companyId,
    s: subscriptionId,
    q: seq,
    h: Math.floor(nowMs / HOUR_MS),
  } satisfies CursorPayload as unknown as Record<string, unknown>);
}

/**
 * Open a cursor for `companyId`. Throws cursor_invalid (forged, altered, another tenant's, not an
 * event cursor) or cursor_expired (issued more than EVENT_RETENTION_SECONDS ago).
 */
export function openCursor(
  secrets: Secrets,
  token: unknown,
  companyId: number,
  nowMs: number,
): CursorPayload {
  const c = secrets.openToken<CursorPayload>('cursor', 'ev1', token);
  if (
    c === undefined ||
    c.c !== companyId ||
    typeof c.s !== 'string' ||
    !Number.isSafeInteger(c.q) ||
    c.q < 0 ||
    !Number.isSafeInteger(c.h)
  ) {
    throw new VerbError('cursor_invalid', 'The cursor is not a valid event cursor for this tenant.', {
      hint: 'Pass the cursor exactly as the last events.subscribe or events.poll answer gave it, with the API key of the same tenant.',
    });
  }
  if (Math.floor(nowMs / HOUR_MS) - c.h > EVENT_RETENTION_SECONDS / 3600) {
    throw expired();
  }
  return c;
}

function expired(): VerbError {
  return new VerbError(
    'cursor_expired',
    `The cursor is older than the event retention (${EVENT_RETENTION_SECONDS / 86400} days): events after it may be gone.`,
    {
      hint: 'Subscribe again with events.subscribe for a fresh cursor; read older history with audit.trail or audit.explain.',
      details: { retention_seconds: EVENT_RETENTION_SECONDS },
    },
  );
}

/** The committed head of a tenant's event stream (0 when it has none). */
export async function eventHead(q: Queryable, companyId: number): Promise<number> {
  const r = await q.get<{ event_seq: number }>('SELECT event_seq FROM tenant_heads WHERE company_id = ?', [
    companyId,
  ]);
  return r === undefined ? 0 : Number(r.event_seq);
}

/** Matching events with after < seq ≤ through, oldest first, at most `limit`. */
export async function eventsBetween(
  q: Queryable,
  companyId: number,
  f: SubscriptionFilters,
  after: number,
  through: number,
  limit: number,
): Promise<DomainEvent[]> {
  const { where, params } = filterSql(f);
  const rows = await q.all<Record<string, unknown>>(
    `SELECT seq, type, entity_type, entity_id, payload, occurred_at, audit_id, actor FROM events
     WHERE company_id = ? AND seq > ? AND seq <= ?${where.map((w) => ` AND ${w}`).join('')} ORDER BY seq LIMIT ?`,
    [companyId, after, through, ...params, limit],
  );
  return rows.map(toDomainEvent);
}

/** The last `limit` matching events with seq ≤ through, oldest first. */
export async function latestEvents(
  q: Queryable,
  companyId: number,
  f: SubscriptionFilters,
  through: number,
  limit: number,
): Promise<DomainEvent[]> {
  if (limit <= 0) return [];
  const { where, params } = filterSql(f);
  const rows = await q.all<Record<string, unknown>>(
    `SELECT seq, type, entity_type, entity_id, payload, occurred_at, audit_id, actor FROM events
     WHERE company_id = ? AND seq <= ?${where.map((w) => ` AND ${w}`).join('')} ORDER BY seq DESC LIMIT ?`,
    [companyId, through, ...params, limit],
  );
  return rows.map(toDomainEvent).reverse();
}

/** An event as the subscribe shape publishes it (no null audit_id; the actor kept). */
export function wireEvent(e: DomainEvent): Record<string, unknown> {
  const out: Record<string, unknown> = {
    seq: e.seq,
    type: e.type,
    entity_type: e.entity_type,
    entity_id: e.entity_id,
    payload: e.payload,
    occurred_at: e.occurred_at,
  };
  if (e.audit_id !== null && e.audit_id !== undefined) out.audit_id = e.audit_id;
  if (e.actor !== null && e.actor !== undefined) out.actor = e.actor;
  return out;
}

/** A stored subscription. */
export interface Subscription {
  subscription_id: string;
  company_id: number;
  user_id: number;
  filters: SubscriptionFilters;
  created_at: string;
}

/**
 * Store a new subscription (one write of runtime metadata) and return it. Keeps the user's count
 * at MAX_SUBSCRIPTIONS_PER_USER in the same transaction: beyond it the oldest are deleted (by
 * created_at, in ms; subscriptions made in the same millisecond are ordered by their random id,
 * so which of those goes first is arbitrary), so no caller — the shared keyless sandbox user least of all — grows the
 * table without bound. Spec: spec/shapes.md §subscribe.
 */
export async function createSubscription(
  store: Store,
  companyId: number,
  userId: number,
  filters: SubscriptionFilters,
  now: Date,
): Promise<Subscription> {
  const sub: Subscription = {
    subscription_id: `sub_${randomBytes(12).toString('base64url')}`,
    company_id: companyId,
    user_id: userId,
    filters,
    created_at: now.toISOString(),
  };
  await store.write(
    async (tx) => {
      await tx.run(
        'INSERT INTO subscriptions (subscription_id, company_id, user_id, filters, created_at) VALUES (?, ?, ?, ?, ?)',
        [sub.subscription_id, companyId, userId, JSON.stringify(filters), sub.created_at],
      );
      // The newest of the user's other subscriptions that no longer fits (the new one and the
      // MAX - 1 newest others stay): found through subscriptions_user reading at most MAX entries.
      const cut = await tx.get<{ subscription_id: string; created_at: string }>(
        'SELECT subscription_id, created_at FROM subscriptions WHERE company_id = ? AND user_id = ? AND subscription_id <> ? ORDER BY created_at DESC, subscription_id DESC LIMIT 1 OFFSET ?',
        [companyId, userId, sub.subscription_id, MAX_SUBSCRIPTIONS_PER_USER - 1],
      );
      if (cut !== undefined)
        await tx.run(
          'DELETE FROM subscriptions WHERE company_id = ? AND user_id = ? AND subscription_id <> ? AND (created_at < ? OR (created_at = ? AND subscription_id <= ?))',
          [companyId, userId, sub.subscription_id, cut.created_at, cut.created_at, cut.subscription_id],
        );
    },
    { label: 'events.subscribe' },
  );
  return sub;
}

/** Load a subscription of a tenant; throws subscription_not_found. */
export async function getSubscription(
  q: Queryable,
  companyId: number,
  subscriptionId: string,
): Promise<Subscription> {
  const r = await q.get<Record<string, unknown>>(
    'SELECT subscription_id, company_id, user_id, filters, created_at FROM subscriptions WHERE subscription_id = ? AND company_id = ?',
    [subscriptionId, companyId],
  );
  if (r === undefined) {
    throw refuse.subscriptionNotFound(
      subscriptionId,
      'exists for this tenant (it was removed with events.unsubscribe, or never existed)',
      'Call events.subscribe again for a new subscription and cursor.',
    );
  }
  return {
    subscription_id: r.subscription_id as string,
    company_id: Number(r.company_id),
    user_id: Number(r.user_id),
    filters: parseJson<SubscriptionFilters>(r.filters) ?? {},
    created_at: r.created_at as string,
  };
}

/** Highest pruned seq of a tenant (0 when nothing was pruned). */
export async function prunedThrough(q: Queryable, companyId: number): Promise<number> {
  const r = await q.get<{ pruned_through_seq: number }>(
    'SELECT pruned_through_seq FROM event_retention WHERE company_id = ?',
    [companyId],
  );
  return r === undefined ? 0 : Number(r.pruned_through_seq);
}

export interface PollInput {
  cursor: string;
  wait_ms?: number;
  limit?: number;
}

export interface PollResult {
  subscription_id: string;
  cursor: string;
  events: Record<string, unknown>[];
  filters: SubscriptionFilters;
  poll_interval_ms: number;
  retention_seconds: number;
  /** True when the answer holds every event up to the head seen (false: poll again now). */
  caught_up: boolean;
}

/**
 * Answer one poll: the events after the cursor, oldest first, and the next cursor. Writes nothing.
 * With wait_ms > 0 and nothing new, waits on the tenant's events channel (woken after each commit
 * that appended events) until a matching event commits or wait_ms passes.
 * Throws cursor_invalid, cursor_expired, subscription_not_found.
 */
export async function pollEvents(
  deps: { store: Store; read: Queryable; secrets: Secrets; now: () => Date },
  companyId: number,
  input: PollInput,
  signal?: AbortSignal,
): Promise<PollResult> {
  const started = deps.now().getTime();
  const c = openCursor(deps.secrets, input.cursor, companyId, started);
  // One statement: the subscription, the pruned mark and the head.
  const row = await deps.read.get<Record<string, unknown>>(
    `SELECT s.filters AS filters, s.user_id AS user_id, s.created_at AS created_at,
            (SELECT pruned_through_seq FROM event_retention WHERE company_id = ?) AS pruned,
            (SELECT event_seq FROM tenant_heads WHERE company_id = ?) AS head
     FROM subscriptions s WHERE s.subscription_id = ? AND s.company_id = ?`,
    [companyId, companyId, c.s, companyId],
  );
  if (row === undefined) await getSubscription(deps.read, companyId, c.s); // throws subscription_not_found
  const sub: Subscription = {
    subscription_id: c.s,
    company_id: companyId,
    user_id: Number(row!.user_id),
    filters: parseJson<SubscriptionFilters>(row!.filters) ?? {},
    created_at: row!.created_at as string,
  };
  if (c.q < Number(row!.pruned ?? 0)) throw expired();
  // The head read with the subscription serves a poll that does not wait; a waiting poll arms its
  // wake-up first and reads the head after it (below), so no commit slips between the two.
  let firstHead: number | undefined = (input.wait_ms ?? 0) > 0 ? undefined : Number(row!.head ?? 0);
  const limit = Math.min(input.limit ?? 100, MAX_POLL_LIMIT);
  const waitMs = Math.min(Math.max(0, input.wait_ms ?? 0), MAX_WAIT_MS);
  const deadline = Date.now() + waitMs;
  let pos = c.q;
  for (;;) {
    // Arm the wake-up before reading the head, so a commit between the two is never missed.
    const remaining = deadline - Date.now();
    // Only a poll that may wait pays for an AbortController (aborting one builds a DOMException).
    let stop: AbortController | undefined;
    const onAbort = () => stop?.abort();
    let woken: Promise<boolean> | undefined;
    if (remaining > 0 && signal?.aborted !== true) {
      stop = new AbortController();
      signal?.addEventListener('abort', onAbort, { once: true });
      woken = deps.store.waitFor(eventsChannel(companyId), remaining, stop.signal);
    }
    let result: PollResult | undefined;
    let leaving = true;
    try {
      const head = firstHead ?? (await eventHead(deps.read, companyId));
      firstHead = undefined;
      if (head < pos) {
        throw new VerbError(
          'cursor_invalid',
          "The cursor points past the end of this tenant's event stream.",
          { hint: 'Subscribe again with events.subscribe.' },
        );
      }
      if (head > pos) {
        const events = await eventsBetween(deps.read, companyId, sub.filters, pos, head, limit);
        if (events.length > 0) {
          const full = events.length === limit;
          result = answer(
            deps,
            companyId,
            sub,
            input.cursor,
            c,
            full ? events[events.length - 1]!.seq : head,
            events.map(wireEvent),
            !full,
          );
        } else {
          pos = head;
        }
      }
      if (result === undefined && woken === undefined)
        result = answer(deps, companyId, sub, input.cursor, c, pos, [], true);
      leaving = result !== undefined;
    } finally {
      if (leaving && stop !== undefined) {
        stop.abort(DONE);
        signal?.removeEventListener('abort', onAbort);
      }
    }
    if (result !== undefined) return result;
    await woken;
    signal?.removeEventListener('abort', onAbort);
  }
}

function answer(
  deps: { secrets: Secrets; now: () => Date },
  companyId: number,
  sub: Subscription,
  given: string,
  c: CursorPayload,
  pos: number,
  events: Record<string, unknown>[],
  caughtUp: boolean,
): PollResult {
  const nowMs = deps.now().getTime();
  // The same cursor comes back when nothing moved within the hour it was issued (cheap to compare).
  const cursor =
    pos === c.q && Math.floor(nowMs / HOUR_MS) === c.h
      ? given
      : sealCursor(deps.secrets, companyId, sub.subscription_id, pos, nowMs);
  return {
    subscription_id: sub.subscription_id,
    cursor,
    events,
    filters: sub.filters,
    poll_interval_ms: caughtUp ? DEFAULT_POLL_INTERVAL_MS : 0,
    retention_seconds: EVENT_RETENTION_SECONDS,
    caught_up: caughtUp,
  };
}

/**
 * Prune, per tenant, the prefix of the event stream whose events all occurred before
 * `now - olderThanSeconds`, and record the highest pruned seq (cursors behind it then answer
 * cursor_expired). Off by default (events are also explain's history); the runtime runs it when
 * `observe.eventPruneAfterSeconds` is set. Returns the number of events deleted.
 */
export async function pruneEvents(store: Store, now: Date, olderThanSeconds: number): Promise<number> {
  const cut = new Date(now.getTime() - olderThanSeconds * 1000).toISOString();
  return store.write(
    async (tx) => {
      let deleted = 0;
      const tenants = await tx.all<{ company_id: number; first_kept: number | null; last: number | null }>(
        `SELECT h.company_id AS company_id,
                (SELECT MIN(e.seq) FROM events e WHERE e.company_id = h.company_id AND e.occurred_at >= ?) AS first_kept,
                h.event_seq AS last
         FROM tenant_heads h`,
        [cut],
      );
      for (const t of tenants) {
        const companyId = Number(t.company_id);
        const through = t.first_kept === null ? Number(t.last ?? 0) : Number(t.first_kept) - 1;
        if (through <= 0) continue;
        const r = await tx.run('DELETE FROM events WHERE company_id = ? AND seq <= ?', [companyId, through]);
        deleted += r.changes;
        await tx.run(
          `INSERT INTO event_retention (company_id, pruned_through_seq, pruned_at) VALUES (?, ?, ?)
           ON CONFLICT (company_id) DO UPDATE SET pruned_at = excluded.pruned_at,
             pruned_through_seq = CASE WHEN excluded.pruned_through_seq > event_retention.pruned_through_seq THEN excluded.pruned_through_seq ELSE event_retention.pruned_through_seq END`,
          [companyId, through, now.toISOString()],
        );
      }
      return deleted;
    },
    { label: 'events.prune' },
  );
}
