/**
 * Rate limits on the HTTP server (`@fastify/rate-limit`), with the counters in the runtime's store
 * so every node behind one PostgreSQL database shares them. Spec: spec/transports.md §rate-limits.
 *
 * Who is counted (the first that applies):
 *   a valid API key (Authorization: Bearer)   `key:<key_id>`        `perKey` calls per window
 *   a valid platform key (pk_solid_…)         `platform:<key_id>`   `perKey` (each platform
 *                                                                    backend its own budget)
 *   a live session opened with an API key     `key:<key_id>`        `perKey` (the key's budget)
 *   a live session of a signed-in person      `user:<company>:<user>` `perSession` (one budget
 *                                                                    for all of that person's sessions)
 *   anyone else (no key, a bad key, no or a
 *   dead session)                              `addr:<req.ip>`       `perAddress`
 * A session counts against the person or key behind it, never a bucket of its own, so minting
 * more sessions buys no more calls (issue 35 row 6).
 * `req.ip` honours the server's `trustProxy`. A bad key never names a key's bucket, so nobody can
 * spend someone else's limit by sending their key id. A limit of 0 turns that bucket off.
 *
 * Every route is limited except `/healthz`, `/readyz` and `/metrics`. Past the limit the answer is
 * the envelope `429 rate_limited` with `Retry-After` (whole seconds until the window ends) and
 * `details.retry_after_seconds`; it is not audited (error-handler.ts).
 *
 * Counters: fixed windows. On PostgreSQL in `rate_limit_counters(bucket, window_start, count)`,
 * one atomic upsert per request (`INSERT … ON CONFLICT DO UPDATE SET count = count + 1 RETURNING
 * count`), shared by every node; windows that ended are deleted by the maintenance pass
 * (maintenance.ts). When the store fails the request is let through (a limiter outage must not
 * become an API outage) and logged. On SQLite (one process) the same windows in memory.
 */
import fastifyRateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../../spec/types.ts';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { VerbError, isVerbError } from '../../runtime/errors.ts';
import { apiKeyOf } from '../../identity/api-key-auth.ts';
import { countHit } from '../../store/rate-limit-counters.ts';
import { sessionBucketOf } from '../../identity/request-guard.ts';
import { PLATFORM_KEY_PREFIX } from '../../runtime/tenants.ts';
import { authenticatePlatformKey } from '../../identity/platform-key-auth.ts';

/** Calls allowed per window and the window length. 0 for a bucket: not limited. */
export interface RateLimits {
  /** Calls per window for one valid API key (default 600). */
  perKey: number;
  /** Calls per window for one signed-in person, all their sessions together (default 600). */
  perSession: number;
  /** Calls per window for one client address without a valid key or session (default 60). */
  perAddress: number;
  /** Window length in ms (default 60_000). */
  windowMs: number;
}

export const DEFAULT_RATE_LIMITS: Readonly<RateLimits> = {
  perKey: 600,
  perSession: 600,
  perAddress: 60,
  windowMs: 60_000,
};

/** Paths never limited: probes and the scraper. */
const UNLIMITED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Fixed-window counters over the runtime store (both engines), in the shape
 * `@fastify/rate-limit` calls: `incr(bucket, cb, timeWindowMs, max)` → `{ current, ttl }`.
 */
export class StoreRateLimitCounters implements FastifyRateLimitStore {
  readonly #rt: Runtime;

  constructor(rt: Runtime) {
    this.#rt = rt;
  }

  /** Count one call of `bucket` in the window holding now; `ttl` is ms until that window ends. */
  incr(
    bucket: string,
    callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
    timeWindow: number,
  ): void {
    const now = this.#rt.clock().getTime();
    const start = now - (now % timeWindow);
    countHit(this.#rt.store, bucket, start, start + timeWindow).then(
      (current) => callback(null, { current, ttl: start + timeWindow - now }),
      (err: unknown) => {
        this.#rt.logger.warn({ err }, 'rate-limit counter unavailable; request let through');
        callback(err instanceof Error ? err : new Error(String(err)));
      },
    );
  }

  child(): FastifyRateLimitStore {
    return this;
  }
}

/**
 * The same fixed windows in this process's memory: SQLite's writes are serialized, so a counter
 * row per request would wait behind every running write transaction. At most `maxBuckets`
 * buckets are held; past that, buckets of ended windows are dropped first, then the oldest.
 */
export class MemoryRateLimitCounters implements FastifyRateLimitStore {
  readonly #rt: Runtime;
  readonly #buckets = new Map<string, { start: number; count: number }>();
  readonly #max: number;

  constructor(rt: Runtime, maxBuckets = 100_000) {
    this.#rt = rt;
    this.#max = maxBuckets;
  }

  /** Count one call of `bucket` in the window holding now; `ttl` is ms until that window ends. */
  incr(
    bucket: string,
    callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
    timeWindow: number,
  ): void {
    const now = this.#rt.clock().getTime();
    const start = now - (now % timeWindow);
    let b = this.#buckets.get(bucket);
    if (b === undefined || b.start !== start) {
      if (b === undefined && this.#buckets.size >= this.#max) this.#prune(start);
      b = { start, count: 0 };
      this.#buckets.set(bucket, b);
    }
    b.count += 1;
    callback(null, { current: b.count, ttl: start + timeWindow - now });
  }

  #prune(start: number): void {
    for (const [k, v] of this.#buckets) if (v.start < start) this.#buckets.delete(k);
    while (this.#buckets.size >= this.#max) this.#buckets.delete(this.#buckets.keys().next().value!);
  }

  child(): FastifyRateLimitStore {
    return this;
  }
}

/** The key the limiter authenticated for a request, and its principal (see limiterPrincipal). */
const limiterAuth = new WeakMap<FastifyRequest, { apiKey: string; principal: Principal }>();

/**
 * The principal the rate limiter found for `apiKey` on this request (it authenticated the same
 * key moments ago, through the same key cache), or undefined: no limiter, another key, or a key
 * that did not authenticate (the caller then lets the runtime authenticate and audit it).
 */
export function limiterPrincipal(req: FastifyRequest, apiKey: string | null): Principal | undefined {
  const a = limiterAuth.get(req);
  return a !== undefined && apiKey !== null && a.apiKey === apiKey ? a.principal : undefined;
}

/**
 * The limiter's refusal in `err`, if it is one (VerbError rate_limited): its message, hint and
 * whole seconds until the window ends. For the mounts whose own error handler answers in another
 * protocol's shape (UCP's `{code, content}`, MCP's JSON-RPC): the limiter runs as a root
 * onRequest hook, so its refusal reaches the error handler of whatever route was asked.
 */
export function rateLimitRefusal(
  err: unknown,
):
  { message: string; hint: string; retryAfterSeconds: number; details: Record<string, unknown> } | undefined {
  if (!isVerbError(err) || err.reason !== 'rate_limited') return undefined;
  const details = (err.details ?? {}) as Record<string, unknown>;
  const s = details.retry_after_seconds;
  return {
    message: err.message,
    hint: err.hint ?? 'Retry after Retry-After seconds.',
    retryAfterSeconds: typeof s === 'number' && s >= 0 ? Math.ceil(s) : 1,
    details,
  };
}

/**
 * The bucket of a request (see the header): a valid key's id, the key or user behind a live
 * session, else the client address. Reads the key cache / one indexed session lookup; never throws.
 */
export async function rateLimitBucket(rt: Runtime, req: FastifyRequest): Promise<string> {
  const apiKey = apiKeyOf(req.headers.authorization);
  if (apiKey !== null && apiKey.startsWith(PLATFORM_KEY_PREFIX)) {
    // A platform backend provisions many tenants: its own budget, by its verified key id (a bad
    // or revoked platform key counts against the address, like a bad API key).
    try {
      return `platform:${(await authenticatePlatformKey(rt.store, apiKey)).key_id}`;
    } catch {
      return `addr:${req.ip}`;
    }
  }
  if (apiKey !== null && apiKey !== '') {
    try {
      const p = await rt.tenants.authenticate(apiKey);
      limiterAuth.set(req, { apiKey, principal: p });
      return `key:${p.key_id ?? `${p.company_id}:${p.user_id}`}`;
    } catch {
      return `addr:${req.ip}`;
    }
  }
  try {
    const bucket = await sessionBucketOf(req, rt.store, rt.clock());
    if (bucket !== undefined) return bucket;
  } catch {
    // No web_sessions table (WebMCP not mounted) or the store is down: count the address.
  }
  return `addr:${req.ip}`;
}

function limitOf(limits: RateLimits, bucket: string): number {
  if (bucket.startsWith('key:') || bucket.startsWith('platform:')) return limits.perKey;
  if (bucket.startsWith('user:')) return limits.perSession;
  return limits.perAddress;
}

/**
 * Register the limiter on `app` (before any route, so it covers the routes of every mounted
 * transport). Nothing is registered when every limit is 0 or the window is 0.
 * @throws VerbError invalid_request — a negative or non-integer limit or window.
 */
export function installRateLimit(app: FastifyInstance, rt: Runtime, limits: RateLimits): void {
  for (const [name, v] of Object.entries(limits)) {
    if (!Number.isSafeInteger(v) || v < 0)
      throw new VerbError('invalid_request', `The rate limit ${name} must be a whole number ≥ 0, got ${v}.`, {
        hint: 'Pass e.g. --rate-limit-key 600 --rate-limit-window 60 (0 disables that limit).',
      });
  }
  if (limits.windowMs === 0 || (limits.perKey === 0 && limits.perSession === 0 && limits.perAddress === 0))
    return;
  const counters =
    rt.store.engine === 'postgres' ? new StoreRateLimitCounters(rt) : new MemoryRateLimitCounters(rt);
  void app.register(fastifyRateLimit, {
    global: true,
    hook: 'onRequest',
    timeWindow: limits.windowMs,
    store: function StoreCounters() {
      return counters;
    } as unknown as new () => FastifyRateLimitStore,
    keyGenerator: (req) => rateLimitBucket(rt, req),
    max: (_req, bucket) => limitOf(limits, bucket),
    allowList: (req, bucket) => UNLIMITED_PATHS.has(req.url.split('?')[0]!) || limitOf(limits, bucket) === 0,
    skipOnError: true,
    addHeaders: { 'retry-after': false },
    errorResponseBuilder: (_req, ctx) => {
      const seconds = Math.max(1, Math.ceil(ctx.ttl / 1000));
      return new VerbError('rate_limited', `Too many requests: the limit is ${ctx.max} per window.`, {
        hint: `Retry after ${seconds} s (Retry-After); spread calls out or ask the operator for a higher limit.`,
        details: { retry_after_seconds: seconds, limit: ctx.max },
      });
    },
  });
}
