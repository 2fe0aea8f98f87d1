/**
 * The runtime's two subscriptions: every dispatch outcome (`onDispatch`: reputation, telemetry,
 * spans, request logs, metrics) and every committed audit row (`onAuditRow`). A subscriber that
 * throws is logged and cannot change the outcome or stop the others.
 */
import type { Logger } from 'pino';
import type { DispatchOutcome } from '../core.ts';
import type { AuditRow } from '../ledger/write/audit.ts';

export class DispatchHooks {
  readonly #outcomes = new Set<(o: DispatchOutcome) => void>();
  readonly #rows = new Set<(row: AuditRow) => void>();

  constructor(private readonly logger: Logger) {}

  /** Subscribe to every dispatch outcome. Returns an unsubscribe. */
  onDispatch(fn: (o: DispatchOutcome) => void): () => void {
    this.#outcomes.add(fn);
    return () => this.#outcomes.delete(fn);
  }

  /** Subscribe to every committed audit row. Returns an unsubscribe. */
  onAuditRow(fn: (row: AuditRow) => void): () => void {
    this.#rows.add(fn);
    return () => this.#rows.delete(fn);
  }

  /** Tell the dispatch subscribers of an outcome. */
  outcome(o: DispatchOutcome): void {
    for (const fn of this.#outcomes) {
      try {
        fn(o);
      } catch (err) {
        this.logger.error({ err }, 'dispatch observer failed');
      }
    }
  }

  /** Tell the row subscribers of a committed audit row. */
  row(row: AuditRow): void {
    for (const fn of this.#rows) {
      try {
        fn(row);
      } catch (err) {
        this.logger.error({ err }, 'audit observer failed');
      }
    }
  }
}
