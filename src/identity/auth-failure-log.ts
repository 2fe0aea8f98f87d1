/**
 * AuthFailureLog: repeated unauthenticated failures (a refused key, a missing or expired session)
 * are counted per window instead of writing one signed row per attempt, so the audit log records
 * an attack without being flooded by it (spec/audit.md §auth-failure-windows).
 *
 * A window is keyed by (reason, client address, surface, the key id presented when it exists).
 * The first failure of a window writes its ordinary rows (spec/audit.md §auth-failures) and opens
 * the window; every further failure with the same key within `windowMs` of that first one only
 * increments the window's counter and answers with the first row's audit_id. When the window
 * closes — a sweep every `windowMs`, the next failure after it ended, or `flushAll` on shutdown —
 * a window that counted more than its first attempt writes ONE aggregated row
 * (`auth.failures`, see `AggregatedFailure`). Per window key the log thus grows by at most
 * 2 rows per window (plus the key owner's copies), whatever the number of attempts.
 *
 * The counters live in the process: on several nodes each node keeps its own windows, so the
 * bound is per node. At most `maxWindows` windows are open at once; a failure that would open one
 * more is written as an ordinary row (never dropped).
 */
import type { Logger } from 'pino';

/** What an aggregated row records about the attempts of one window. */
export interface AggregatedFailure {
  /** Window key fields. */
  reason: string;
  address: string | null;
  surface: string;
  category: string;
  keyAttribution?: { company_id: number; key_id: string; revoked: boolean; expired?: boolean } | undefined;
  /** Attempts in the window, the first (which has its own row) included. */
  count: number;
  /** ISO-8601 time of the first and the last attempt. */
  first_at: string;
  last_at: string;
  /** audit_id of the window's first row (undefined when it could not be written). */
  first_audit_id: number | undefined;
}

interface Window extends AggregatedFailure {
  startedMs: number;
  first: Promise<number | undefined>;
}

export interface AuthFailureLogOptions {
  /** Window length in ms; 0 disables aggregation (every failure is an ordinary row). */
  windowMs: number;
  /** Most windows open at once (default 10_000). */
  maxWindows?: number;
  clock: () => Date;
  logger: Logger;
  /** Write the aggregated row(s) of a closed window that counted more than one attempt. */
  writeAggregate: (w: AggregatedFailure) => Promise<void>;
}

/** One window per (reason, address, surface, key id); see the header. */
export class AuthFailureLog {
  readonly #windows = new Map<string, Window>();
  readonly #opts: AuthFailureLogOptions;
  readonly #timer: NodeJS.Timeout | undefined;
  #pending: Promise<unknown> = Promise.resolve();

  constructor(opts: AuthFailureLogOptions) {
    this.#opts = opts;
    if (opts.windowMs > 0) {
      this.#timer = setInterval(() => void this.flushExpired(), opts.windowMs);
      this.#timer.unref();
    }
  }

  /**
   * Record one failure. `writeFirst` writes the ordinary rows and resolves to the audit_id the
   * caller gets; it runs only for the first failure of a window (or when aggregation is off or
   * full). Resolves to the audit_id to answer with.
   */
  async record(
    key: Omit<AggregatedFailure, 'count' | 'first_at' | 'last_at' | 'first_audit_id'>,
    writeFirst: () => Promise<number | undefined>,
  ): Promise<number | undefined> {
    const { windowMs, maxWindows = 10_000, clock } = this.#opts;
    if (windowMs <= 0) return writeFirst();
    const now = clock();
    const id = JSON.stringify([
      key.reason,
      key.address,
      key.surface,
      key.category,
      key.keyAttribution?.key_id ?? null,
      key.keyAttribution?.revoked ?? null,
    ]);
    const open = this.#windows.get(id);
    if (open !== undefined && now.getTime() - open.startedMs < windowMs) {
      open.count += 1;
      open.last_at = now.toISOString();
      return open.first;
    }
    if (open !== undefined) this.#close(id, open);
    if (this.#windows.size >= maxWindows) return writeFirst();
    const first = writeFirst();
    const w: Window = {
      ...key,
      count: 1,
      first_at: now.toISOString(),
      last_at: now.toISOString(),
      first_audit_id: undefined,
      startedMs: now.getTime(),
      first,
    };
    this.#windows.set(id, w);
    w.first_audit_id = await first;
    return w.first_audit_id;
  }

  /** Close every window older than `windowMs` (the periodic sweep). */
  async flushExpired(): Promise<void> {
    const nowMs = this.#opts.clock().getTime();
    for (const [id, w] of this.#windows) {
      if (nowMs - w.startedMs >= this.#opts.windowMs) this.#close(id, w);
    }
    await this.#pending;
  }

  /** Close every open window now (shutdown) and stop the sweep. */
  async flushAll(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    for (const [id, w] of this.#windows) this.#close(id, w);
    await this.#pending;
  }

  #close(id: string, w: Window): void {
    this.#windows.delete(id);
    if (w.count <= 1) return;
    const write = w.first
      .then((firstId) => this.#opts.writeAggregate({ ...w, first_audit_id: firstId }))
      .catch((err: unknown) =>
        this.#opts.logger.error({ err, reason: w.reason }, 'could not write an aggregated auth-failure row'),
      );
    this.#pending = Promise.all([this.#pending, write]);
  }
}
