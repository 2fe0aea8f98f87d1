/**
 * The runtime's observe hooks, wired once per runtime: reputation (from committed audit rows),
 * telemetry and OpenTelemetry spans (from dispatch outcomes), and their housekeeping. None of them
 * can change an outcome; the dispatch path pays only in-memory increments (bench/observe.ts).
 *
 * Housekeeping (`maintenance()`, on a timer every `maintenanceIntervalMs`, default 10 min):
 * reputation buckets past their use, expired macro runs, idle telemetry rings, and — only when
 * `eventPruneAfterSeconds` is set — the event-stream prefix older than that (events are also
 * explain's history, so the runtime keeps them unless the operator opts in).
 * Spec: spec/shapes.md §subscribe §reputation §telemetry.
 */
import type { RuntimeCore } from '../core.ts';
import { ReputationAggregator } from './reputation.ts';
import { TelemetryCollector } from './telemetry.ts';
import { DispatchSpans } from './dispatch-spans.ts';
import { EVENT_RETENTION_SECONDS, pruneEvents } from './event-stream.ts';

export interface ObserveOptions {
  /** Reputation flush interval (ms). Default 1000; 0 flushes only on demand and at close. */
  reputationFlushMs?: number;
  /** Housekeeping interval (ms). Default 600000; 0 disables the timer. */
  maintenanceIntervalMs?: number;
  /**
   * Prune events that occurred longer ago than this (seconds; at least the 30-day cursor retention).
   * Default undefined: events are kept.
   */
  eventPruneAfterSeconds?: number;
}

export interface ObserveMaintenanceReport {
  reputation_rows_deleted: number;
  macro_runs_deleted: number;
  events_deleted: number;
}

export class Observers {
  readonly reputation: ReputationAggregator;
  readonly telemetry = new TelemetryCollector();
  readonly spans = new DispatchSpans();
  readonly eventPruneAfterSeconds: number | undefined;
  #off: Array<() => void> = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly rt: RuntimeCore,
    options: ObserveOptions = {},
  ) {
    this.reputation = new ReputationAggregator(rt, options.reputationFlushMs ?? 1000);
    if (
      options.eventPruneAfterSeconds !== undefined &&
      options.eventPruneAfterSeconds < EVENT_RETENTION_SECONDS
    ) {
      throw new RangeError(
        `observe.eventPruneAfterSeconds must be at least the cursor retention (${EVENT_RETENTION_SECONDS} s)`,
      );
    }
    this.eventPruneAfterSeconds = options.eventPruneAfterSeconds;
    const every = options.maintenanceIntervalMs ?? 600_000;
    if (every > 0) {
      this.#timer = setInterval(
        () =>
          void this.maintenance().catch((err: unknown) =>
            rt.logger.error({ err }, 'observe maintenance failed'),
          ),
        every,
      );
      this.#timer.unref();
    }
  }

  /** Are the hooks installed? */
  get attached(): boolean {
    return this.#off.length > 0;
  }

  /** Install the hooks (idempotent). */
  attach(): void {
    if (this.attached) return;
    this.#off.push(
      this.rt.onAuditRow((row) => this.reputation.record(row)),
      this.rt.onDispatch((o) => {
        this.telemetry.record(o);
        this.spans.record(o);
      }),
    );
  }

  /** Remove the hooks (bench baseline; figures stop moving). */
  detach(): void {
    for (const off of this.#off) off();
    this.#off = [];
  }

  /** Write buffered reputation deltas now. */
  flush(): Promise<void> {
    return this.reputation.flush();
  }

  /** One housekeeping pass at `now` (default: the runtime clock). */
  async maintenance(now: Date = this.rt.clock()): Promise<ObserveMaintenanceReport> {
    this.telemetry.prune(Date.now());
    const reputation_rows_deleted = await this.reputation.prune(now);
    const macro_runs_deleted = await this.rt.store
      .write((tx) => tx.run('DELETE FROM macro_runs WHERE expires_at <= ?', [now.toISOString()]), {
        label: 'macros.prune',
      })
      .then((r) => r.changes);
    const events_deleted =
      this.eventPruneAfterSeconds === undefined
        ? 0
        : await pruneEvents(this.rt.store, now, this.eventPruneAfterSeconds);
    return { reputation_rows_deleted, macro_runs_deleted, events_deleted };
  }

  /** Flush and stop timers (called by Runtime.close after the read-audit flush). */
  async close(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.reputation.flush();
    this.reputation.stop();
  }
}
