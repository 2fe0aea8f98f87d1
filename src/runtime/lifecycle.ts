/**
 * The runtime's lifecycle: the periodic maintenance pass, the `closing` signal long waits listen
 * to, and the ordered shutdown (stop timers and delivery, flush buffered rows, sign the heads that
 * moved, close the store). Spec: spec/transports.md §cli-serve.
 */
import type { Logger } from 'pino';
import type { Store } from '../store/store.ts';
import type { MaintenanceReport } from './maintenance.ts';

/** What the shutdown stops, flushes and closes, in order. */
export interface ClosingParts {
  readonly store: Store;
  readonly logger: Logger;
  readonly checkpoints: { stop(): void; checkpointAll(): Promise<unknown> };
  readonly delivery: { close(): Promise<void> };
  readonly auditBuffer: { flush(): Promise<unknown> };
  readonly authFailures: { flushAll(): Promise<unknown> };
  readonly tenants: { flushKeyUse(): Promise<unknown> };
  readonly observers: { close(): Promise<unknown> };
}

/** The maintenance timer, the closing signal and close(), for one runtime. */
export class Lifecycle {
  readonly #closing = new AbortController();
  readonly #parts: ClosingParts;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  /** `parts` is read only when closing (a runtime may pass itself while it is being built). */
  constructor(parts: ClosingParts) {
    this.#parts = parts;
  }

  /** Run `maintenance` every `ms` (0: never); the timer does not hold the process open. */
  startMaintenance(maintenance: () => Promise<MaintenanceReport>, ms: number): void {
    if (ms <= 0) return;
    this.#timer = setInterval(
      () =>
        void maintenance().catch((err: unknown) => this.#parts.logger.error({ err }, 'maintenance failed')),
      ms,
    );
    this.#timer.unref();
  }

  /** Aborted by beginClose (and close): what long waits listen to. */
  get closing(): AbortSignal {
    return this.#closing.signal;
  }

  /** Start shutting down: waiting calls (events.poll with wait_ms) answer now. Idempotent. */
  beginClose(): void {
    this.#closing.abort();
  }

  /** Flush buffered rows, stop timers, sign the heads that moved, close the store. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const p = this.#parts;
    this.beginClose();
    p.checkpoints.stop();
    if (this.#timer !== undefined) clearInterval(this.#timer);
    await p.delivery.close();
    await p.auditBuffer.flush();
    await Promise.all([p.authFailures.flushAll(), p.tenants.flushKeyUse()]);
    await p.observers.close();
    // Sign the heads that moved, so a short-lived process (a CLI call) leaves its rows anchored.
    await p.checkpoints
      .checkpointAll()
      .catch((err: unknown) => p.logger.error({ err }, 'closing checkpoint failed'));
    await p.store.close();
  }
}
