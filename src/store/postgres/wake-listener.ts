/**
 * Cross-node wake-ups for `Store.waitFor` / `Store.notify` over PostgreSQL LISTEN/NOTIFY.
 *
 * All channels of one store share ONE PostgreSQL channel (`pgChannel`, e.g. `solid_wake` or
 * `solid_wake:<schema>`); the payload is `<nodeId>|<channel>`. Each node LISTENs on a dedicated
 * connection (not from the pool), opened on the first `waitFor`. `notify` wakes local waiters at
 * once and sends one `pg_notify` per tick for all channels touched (batched); a node ignores its
 * own notifications. PostgreSQL delivers a notification only after the sending transaction
 * commits; we notify after commit anyway (Store.notify is called from afterCommit callbacks).
 *
 * When the LISTEN connection drops (database restart), it is re-opened with backoff; once it is
 * back every local waiter is woken (a spurious wake-up: waiters re-check), so no event that
 * committed while it was down is missed beyond that re-check. Spec: spec/store.md §wakeups.
 */
import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface WakeListenerOptions {
  /** Connection config for the dedicated LISTEN connection. */
  clientConfig: pg.ClientConfig;
  /** Runs `SELECT pg_notify(channel, payload)` for a batch (through the pool). */
  send: (pgChannel: string, payloads: string[]) => Promise<void>;
  /** PostgreSQL channel name (one per database schema). */
  pgChannel: string;
  /** Called with connection problems (logged by the owner; never thrown). */
  onError?: (err: unknown) => void;
}

export class WakeListener {
  readonly nodeId = randomBytes(6).toString('hex');
  readonly #events = new EventEmitter();
  readonly #options: WakeListenerOptions;
  #client: pg.Client | undefined;
  #connecting: Promise<void> | undefined;
  #closed = false;
  #backoffMs = 100;
  #retryTimer: NodeJS.Timeout | undefined;
  #pending = new Set<string>();
  #flushScheduled = false;

  constructor(options: WakeListenerOptions) {
    this.#options = options;
    this.#events.setMaxListeners(0);
  }

  /** True while the LISTEN connection is up. */
  get listening(): boolean {
    return this.#client !== undefined;
  }

  /** Wait for a wake-up on `channel`, or `timeoutMs`, or abort. Resolves true when woken. */
  waitFor(channel: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    this.#ensureListening();
    return new Promise((resolve) => {
      if (signal?.aborted) {
        resolve(false);
        return;
      }
      const done = (woken: boolean) => {
        clearTimeout(timer);
        this.#events.off(channel, onWake);
        this.#events.off('*', onWake);
        signal?.removeEventListener('abort', onAbort);
        resolve(woken);
      };
      const onWake = () => done(true);
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(false), Math.max(0, timeoutMs));
      this.#events.on(channel, onWake);
      this.#events.on('*', onWake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Wake local waiters now and the other nodes' on the next tick (one pg_notify batch). */
  notify(channel: string): void {
    this.#events.emit(channel);
    if (this.#closed) return;
    this.#pending.add(channel);
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(() => this.#flush());
    }
  }

  #flush(): void {
    this.#flushScheduled = false;
    const payloads = [...this.#pending].map((c) => `${this.nodeId}|${c}`);
    this.#pending.clear();
    if (payloads.length === 0 || this.#closed) return;
    this.#options
      .send(this.#options.pgChannel, payloads)
      .catch((err: unknown) => this.#options.onError?.(err));
  }

  #ensureListening(): void {
    if (
      this.#closed ||
      this.#client !== undefined ||
      this.#connecting !== undefined ||
      this.#retryTimer !== undefined
    )
      return;
    this.#connecting = this.#connect().finally(() => {
      this.#connecting = undefined;
    });
  }

  async #connect(): Promise<void> {
    const client = new pg.Client(this.#options.clientConfig);
    client.on('error', (err) => this.#lost(client, err));
    client.on('end', () => this.#lost(client, undefined));
    client.on('notification', (msg) => {
      if (msg.channel !== this.#options.pgChannel || msg.payload === undefined) return;
      const bar = msg.payload.indexOf('|');
      if (bar < 0 || msg.payload.slice(0, bar) === this.nodeId) return;
      this.#events.emit(msg.payload.slice(bar + 1));
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(this.#options.pgChannel)}`);
    } catch (err) {
      client.removeAllListeners('end');
      client.on('error', () => {});
      await client.end().catch(() => {});
      this.#options.onError?.(err);
      this.#scheduleRetry();
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    this.#backoffMs = 100;
    // Anything that committed before LISTEN took effect (first start, or while reconnecting):
    // let every waiter re-check once.
    this.#events.emit('*');
  }

  #lost(client: pg.Client, err: unknown): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.removeAllListeners('notification');
    client.on('error', () => {});
    void client.end().catch(() => {});
    if (err !== undefined) this.#options.onError?.(err);
    if (!this.#closed) this.#scheduleRetry();
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retryTimer !== undefined) return;
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(5000, this.#backoffMs * 2);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#ensureListening();
    }, delay);
    this.#retryTimer.unref();
  }

  /** Close the LISTEN connection and wake nobody further. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    if (this.#connecting !== undefined) await this.#connecting.catch(() => {});
    const c = this.#client;
    this.#client = undefined;
    if (c !== undefined) {
      c.removeAllListeners('end');
      c.on('error', () => {});
      await c.end().catch(() => {});
    }
  }
}
