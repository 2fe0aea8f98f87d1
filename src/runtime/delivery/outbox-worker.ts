/**
 * The outbox delivery loop: delivers the messages writes queued (`ctx.outbox`, webhooks) after
 * their commit, at least once, without waiting for any other traffic.
 *
 * - **When**: a pass at start-up, a pass right after a commit that queued messages (`kick`), and a
 *   timer set to the next message's due time, at most `pollIntervalMs` away (so retries and other
 *   nodes' messages are picked up with no traffic at all).
 * - **Claims**: due rows are claimed a few at a time with a lease (ledger/outbox.ts
 *   `claimDueMessages`: `FOR UPDATE SKIP LOCKED` on PostgreSQL, so two nodes never take the same
 *   row; a holder that dies gives the row back when its lease ends).
 * - **Attempts**: each attempt has a deadline (`attemptTimeoutMs`, an AbortSignal given to the
 *   handler; a handler that ignores it is abandoned at the deadline all the same). The handler is
 *   given the message's idempotency key, the same on every attempt.
 * - **Retries**: exponential backoff with jitter: attempt n failed → due again after a delay drawn
 *   uniformly from [d/2, d], d = min(maxDelayMs, baseDelayMs · 2^(n−1)).
 * - **Dead letters**: after `maxAttempts` failed attempts the row is `dead` (never retried; shown
 *   by `telemetry`, the dashboard and /metrics); `onDead` runs in the same transaction (the
 *   `outbox.dead` webhook).
 *
 * Every wait is bounded: attempts by their deadline, close() by the deadline plus one second.
 * Spec: docs/authoring.md §8(c), docs/authoring.md §8(b).
 */
import type { Logger } from 'pino';
import type { Store, StoreTx } from '../../store/store.ts';
import {
  claimDueMessages,
  markDelivered,
  markFailed,
  nextDueAt,
  releaseClaim,
  type OutboxHandlerOf,
  type OutboxMessage,
} from '../ledger/write/outbox.ts';

/** Tuning of the delivery loop (RuntimeOptions.outbox). Times in milliseconds. */
export interface OutboxDeliveryOptions {
  /** Failed attempts after which a message is dead. Default 8. */
  maxAttempts?: number;
  /** Delay before the first retry (before jitter). Default 1000. */
  baseDelayMs?: number;
  /** Longest delay between attempts (before jitter). Default 3_600_000 (1 h). */
  maxDelayMs?: number;
  /** Deadline of one attempt. Default 10_000. */
  attemptTimeoutMs?: number;
  /** Longest sleep between passes (other nodes' messages, missed kicks). Default 5000. */
  pollIntervalMs?: number;
  /** Lease of a claimed message. Default 2 × attemptTimeoutMs + 30_000. */
  leaseMs?: number;
  /** Attempts run at once by one pass. Default 4. */
  concurrency?: number;
  /** Run the timer (start-up pass, polling). Default true; false: only kick() and deliver(). */
  timers?: boolean;
}

/** A handler that runs inside the transaction that marks its message delivered (webhook fan-out). */
export type OutboxTxHandler = (tx: StoreTx, m: OutboxMessage) => Promise<void>;

/** What the worker needs from the runtime. */
export interface OutboxWorkerDeps<R> {
  store: Store;
  clock: () => Date;
  logger: Logger;
  /** The packs' handlers by kind (the runtime's `outboxHandlers`, read at every pass). */
  handlers: ReadonlyMap<string, OutboxHandlerOf<R>>;
  /** Built-in handlers by kind (signed webhook delivery); they win over a pack's of the same kind. */
  builtin?: ReadonlyMap<string, OutboxHandlerOf<R>>;
  /** Built-in transactional handlers by kind. */
  txHandlers?: ReadonlyMap<string, OutboxTxHandler>;
  runtime: R;
  /** Runs in the transaction that marks `m` delivered (not when the claim was lost). */
  onDelivered?: (tx: StoreTx, m: OutboxMessage) => Promise<void>;
  /** Runs in the transaction that marks `m` dead. */
  onDead?: (tx: StoreTx, m: OutboxMessage, error: string) => Promise<void>;
  /** Runs before each timer pass (e.g. the approval-expiry sweep); its failure is logged only. */
  beforePass?: () => Promise<void>;
  /** [0, 1) source for jitter (tests pin it). Default Math.random. */
  random?: () => number;
}

/** The defaults of {@link OutboxDeliveryOptions}. */
export const OUTBOX_DEFAULTS = {
  maxAttempts: 8,
  baseDelayMs: 1000,
  maxDelayMs: 3_600_000,
  attemptTimeoutMs: 10_000,
  pollIntervalMs: 5000,
  concurrency: 4,
} as const;

/**
 * The delay before the next attempt after `failedAttempts` failures (≥ 1), in ms: uniformly in
 * [d/2, d] with d = min(maxDelayMs, baseDelayMs · 2^(failedAttempts − 1)). Pure given `random`.
 */
export function backoffDelayMs(
  failedAttempts: number,
  o: { baseDelayMs: number; maxDelayMs: number },
  random: () => number = Math.random,
): number {
  const d = Math.min(o.maxDelayMs, o.baseDelayMs * 2 ** Math.max(0, Math.min(failedAttempts - 1, 40)));
  return Math.round(d / 2 + (d / 2) * random());
}

/** Why an attempt was cut short. */
class AttemptAborted extends Error {}

/** Reject when `signal` aborts, so a handler that ignores its signal cannot hold the pass. */
function raceSignal<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  p.catch(() => {}); // a late rejection after the deadline is not unhandled
  return new Promise<T>((resolve, reject) => {
    const onAbort = () =>
      reject(signal.reason instanceof Error ? signal.reason : new AttemptAborted('aborted'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The delivery loop of one runtime. See the module comment. */
export class OutboxWorker<R> {
  readonly #d: OutboxWorkerDeps<R>;
  readonly #o: Required<OutboxDeliveryOptions>;
  readonly #closing = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #again = false;
  readonly #passes = new Set<Promise<number>>();

  constructor(deps: OutboxWorkerDeps<R>, options: OutboxDeliveryOptions = {}) {
    this.#d = deps;
    const attemptTimeoutMs = options.attemptTimeoutMs ?? OUTBOX_DEFAULTS.attemptTimeoutMs;
    this.#o = {
      maxAttempts: Math.max(1, options.maxAttempts ?? OUTBOX_DEFAULTS.maxAttempts),
      baseDelayMs: options.baseDelayMs ?? OUTBOX_DEFAULTS.baseDelayMs,
      maxDelayMs: options.maxDelayMs ?? OUTBOX_DEFAULTS.maxDelayMs,
      attemptTimeoutMs,
      pollIntervalMs: options.pollIntervalMs ?? OUTBOX_DEFAULTS.pollIntervalMs,
      leaseMs: options.leaseMs ?? 2 * attemptTimeoutMs + 30_000,
      concurrency: Math.max(1, options.concurrency ?? OUTBOX_DEFAULTS.concurrency),
      timers: options.timers ?? true,
    };
  }

  /** The effective options (defaults filled in). */
  get options(): Readonly<Required<OutboxDeliveryOptions>> {
    return this.#o;
  }

  /** Start the timer with a start-up pass (delivers what a previous process left pending). */
  start(): void {
    if (this.#o.timers && !this.#closing.signal.aborted) this.#schedule(0);
  }

  /** Deliver soon (after a commit that queued messages): one loop at a time, re-run if kicked meanwhile. */
  kick(): void {
    if (this.#closing.signal.aborted) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    void this.#loop().finally(() => {
      this.#running = false;
      if (this.#again) {
        this.#again = false;
        this.kick();
      }
    });
  }

  async #loop(): Promise<void> {
    try {
      await this.#d.beforePass?.();
    } catch (err) {
      this.#d.logger.error({ err }, 'outbox: pre-pass sweep failed');
    }
    try {
      await this.deliver();
    } catch (err) {
      this.#d.logger.error({ err }, 'outbox delivery pass failed');
    }
    if (!this.#o.timers || this.#closing.signal.aborted) return;
    let delay = this.#o.pollIntervalMs;
    try {
      const next = await nextDueAt(this.#d.store, this.#kinds());
      if (next !== undefined)
        delay = Math.min(delay, Math.max(25, next.getTime() - this.#d.clock().getTime()));
    } catch (err) {
      this.#d.logger.warn({ err }, 'outbox: reading the next due time failed');
    }
    this.#schedule(delay);
  }

  #schedule(ms: number): void {
    if (this.#closing.signal.aborted) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.kick();
    }, ms);
    this.#timer.unref();
  }

  #kinds(): string[] {
    return [
      ...new Set([
        ...this.#d.handlers.keys(),
        ...(this.#d.builtin?.keys() ?? []),
        ...(this.#d.txHandlers?.keys() ?? []),
      ]),
    ];
  }

  /**
   * One delivery pass over at most `limit` due messages; resolves to the number delivered. It first
   * waits for passes already running in this process (whose leased rows it would skip).
   */
  async deliver(limit = 100): Promise<number> {
    while (this.#passes.size > 0) await Promise.allSettled([...this.#passes]);
    const pass = this.#pass(limit);
    this.#passes.add(pass);
    try {
      return await pass;
    } finally {
      this.#passes.delete(pass);
    }
  }

  async #pass(limit: number): Promise<number> {
    const kinds = this.#kinds();
    let delivered = 0;
    let left = limit;
    while (left > 0 && !this.#closing.signal.aborted) {
      const due = await nextDueAt(this.#d.store, kinds);
      if (due === undefined || due.getTime() > this.#d.clock().getTime()) break;
      const batch = await claimDueMessages(
        this.#d.store,
        this.#d.clock(),
        kinds,
        this.#o.leaseMs,
        Math.min(left, this.#o.concurrency),
      );
      if (batch.length === 0) break;
      left -= batch.length;
      const ok = await Promise.all(batch.map((m) => this.#attempt(m)));
      delivered += ok.filter(Boolean).length;
    }
    return delivered;
  }

  /** One attempt at one claimed message; true when delivered. Never throws. */
  async #attempt(m: OutboxMessage): Promise<boolean> {
    const { store, clock, logger } = this.#d;
    const ac = new AbortController();
    const deadline = setTimeout(
      () =>
        ac.abort(
          new AttemptAborted(`no answer within the attempt deadline (${this.#o.attemptTimeoutMs} ms)`),
        ),
      this.#o.attemptTimeoutMs,
    );
    const onClose = () => ac.abort(new AttemptAborted('the runtime is closing'));
    this.#closing.signal.addEventListener('abort', onClose, { once: true });
    try {
      const tx = this.#d.txHandlers?.get(m.kind);
      if (tx !== undefined) {
        await store.write(async (t) => {
          await tx(t, m);
          if (await markDelivered(t, m, clock())) await this.#d.onDelivered?.(t, m);
        });
      } else {
        const handler = this.#d.builtin?.get(m.kind) ?? this.#d.handlers.get(m.kind);
        if (handler === undefined) throw new Error(`no outbox handler for kind ${m.kind}`);
        await raceSignal(
          handler(m.payload, {
            company_id: m.company_id,
            audit_id: m.audit_id,
            outbox_id: m.outbox_id,
            runtime: this.#d.runtime,
            idempotency_key: m.message_id,
            attempt: m.attempts + 1,
            signal: ac.signal,
          }),
          ac.signal,
        );
        await store.write(async (t) => {
          if (await markDelivered(t, m, clock())) await this.#d.onDelivered?.(t, m);
        });
      }
      return true;
    } catch (err) {
      if (this.#closing.signal.aborted) {
        // Not the receiver's failure: give the row back uncounted (best effort; else its lease ends).
        await releaseClaim(store, m, clock()).catch(() => {});
        return false;
      }
      const error = err instanceof Error ? err.message : String(err);
      const failed = m.attempts + 1;
      const dead = failed >= this.#o.maxAttempts;
      try {
        await store.write(async (t) => {
          const mine = await markFailed(
            t,
            m,
            error,
            dead
              ? { dead: true }
              : {
                  dead: false,
                  retryAt: new Date(clock().getTime() + backoffDelayMs(failed, this.#o, this.#d.random)),
                },
          );
          if (mine && dead) await this.#d.onDead?.(t, m, error);
        });
      } catch (markErr) {
        logger.error({ err: markErr, outbox_id: m.outbox_id }, 'outbox: recording a failed attempt failed');
      }
      // The kind, ids and error only: never the payload (it may name a receiver's secrets).
      const fields = {
        outbox_id: m.outbox_id,
        company_id: m.company_id,
        kind: m.kind,
        attempt: failed,
        error,
      };
      if (dead) logger.error(fields, 'outbox message is dead after its last attempt');
      else logger.warn(fields, 'outbox delivery attempt failed; retrying with backoff');
      return false;
    } finally {
      clearTimeout(deadline);
      this.#closing.signal.removeEventListener('abort', onClose);
    }
  }

  /**
   * Stop: no new passes, attempts in flight aborted (their rows given back), and wait for the
   * passes to end — at most the attempt deadline plus one second.
   */
  async close(): Promise<void> {
    this.#closing.abort();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#passes.size === 0) return;
    let t: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.#passes]),
      new Promise<void>((r) => {
        t = setTimeout(r, this.#o.attemptTimeoutMs + 1000);
        t.unref();
      }),
    ]);
    clearTimeout(t);
  }
}
