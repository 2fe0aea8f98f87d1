/**
 * The read-audit buffer: reads' audit rows are held briefly and appended in batches
 * (spec/audit.md §read-rows). Writes and denials never pass through it.
 */
import type { Logger } from 'pino';
import type { Store } from '../../../store/store.ts';
import { appendAuditRows, type AuditEntry, type AuditRow } from './audit.ts';

/** What the buffer needs from the runtime: the store, a logger, and the after-commit hook of stored rows. */
export interface ReadAuditSink {
  readonly store: Store;
  readonly logger: Logger;
  afterWrite(row: AuditRow): void;
}

/**
 * Buffers the audit rows of reads and flushes them in batches (one store transaction per batch).
 * Policy (spec/audit.md §read-rows): a crash may lose at most the last flush interval of read rows;
 * write rows and denials are never buffered.
 */
export class ReadAuditBuffer {
  /** Most rows held while the store fails (rows beyond it are dropped and logged). */
  static readonly MAX_HELD = 65_536;
  #rows: AuditEntry[] = [];
  /** Rows already put back once after a failed flush: a second failure drops them. */
  readonly #retried = new WeakSet<AuditEntry>();
  #timer: NodeJS.Timeout | undefined;
  /** Writes in flight, each with the tenants whose rows it holds. */
  readonly #inFlight = new Map<Promise<void>, ReadonlySet<number>>();
  constructor(
    private readonly rt: ReadAuditSink,
    private readonly intervalMs: number,
    private readonly batch: number,
  ) {}
  get size(): number {
    return this.#rows.length;
  }
  /** The flush `push` started on a full batch, until it settles (one at a time). */
  #batchFlush: Promise<void> | undefined;
  push(entry: AuditEntry): void {
    this.#rows.push(entry);
    if (this.#rows.length >= this.batch) this.#flushFullBatch();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => void this.flush(), this.intervalMs);
      this.#timer.unref();
    }
  }

  /**
   * Start one flush for a full batch unless one started so is still running (its flush takes every
   * row buffered when it gets the store, and the next starts when it settles, if a batch is full
   * again). Without this, every row pushed while a flush waits for the store (group commit waits
   * for the next event-loop turn) started one more flush: one more promise chain per row.
   */
  #flushFullBatch(): void {
    if (this.#batchFlush !== undefined) return;
    this.#batchFlush = this.flush().finally(() => {
      this.#batchFlush = undefined;
      if (this.#rows.length >= this.batch) this.#flushFullBatch();
      else if (this.#rows.length > 0 && this.#timer === undefined) {
        this.#timer = setTimeout(() => void this.flush(), this.intervalMs);
        this.#timer.unref();
      }
    });
  }
  /**
   * Write now the buffered rows of one tenant (after any write in flight that holds some of its
   * rows), so rows appended next for that tenant take later audit_ids: dispatch calls it before a
   * write's, a denial's or a trail read's turn at the log (spec/audit.md §read-rows, order). Other
   * tenants' flushes in flight are not waited for. Never throws: a failure is handled as in
   * flush() (retried once, logged). Costs nothing when the tenant holds no rows.
   */
  async flushTenant(companyId: number): Promise<void> {
    for (;;) {
      const mineInFlight = [...this.#inFlight].filter(([, t]) => t.has(companyId)).map(([p]) => p);
      if (mineInFlight.length === 0) break;
      await Promise.all(mineInFlight);
    }
    if (!this.#rows.some((r) => r.company_id === companyId)) return;
    const mine: AuditEntry[] = [];
    const rest: AuditEntry[] = [];
    for (const r of this.#rows) (r.company_id === companyId ? mine : rest).push(r);
    this.#rows = rest;
    await this.#track(mine, this.#write(mine));
  }

  async flush(): Promise<void> {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    // Another caller may start a flush while we wait for the ones in flight: wait until none is.
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight.keys());
    if (this.#rows.length === 0) return;
    const rows = this.#rows;
    this.#rows = [];
    await this.#track(
      rows,
      Promise.all(this.#batches(rows).map((batch) => this.#write(batch))).then(() => {}),
    );
  }

  /** Register a write of `rows` in flight (with the tenants it holds) until it settles. */
  #track(rows: readonly AuditEntry[], write: Promise<void>): Promise<void> {
    const tenants = new Set(rows.map((r) => r.company_id));
    const p: Promise<void> = write.finally(() => this.#inFlight.delete(p));
    this.#inFlight.set(p, tenants);
    return p;
  }

  /**
   * SQLite: one transaction for the whole flush (one writer, so nothing to isolate). PostgreSQL:
   * one transaction per tenant, run side by side — each takes only its own tenant's chain-head
   * lock, so a long write of one tenant delays that tenant's read rows only, never another
   * tenant's writes (one mixed batch would hold tenant B's head while waiting for tenant A's).
   */
  #batches(rows: AuditEntry[]): AuditEntry[][] {
    if (this.rt.store.engine !== 'postgres') return [rows];
    const byTenant = new Map<number, AuditEntry[]>();
    for (const r of rows) {
      const list = byTenant.get(r.company_id);
      if (list === undefined) byTenant.set(r.company_id, [r]);
      else list.push(r);
    }
    return [...byTenant.values()];
  }

  async #write(rows: AuditEntry[]): Promise<void> {
    try {
      await this.#append(rows);
    } catch (err) {
      // Isolate: a batch that fails is written again row by row, so one row that cannot be stored
      // never costs another row (another tenant's least of all); only the rows that fail alone
      // are put back (a store outage fails them all).
      if (rows.length > 1) {
        const failed: AuditEntry[] = [];
        for (const r of rows) {
          try {
            await this.#append([r]);
          } catch {
            failed.push(r);
          }
        }
        if (failed.length === 0) return;
        rows = failed;
      }
      // Put the rows back once, to be retried with the next flush (a short outage loses nothing);
      // rows that fail twice, or beyond MAX_HELD, are dropped — read rows only (spec/audit.md §read-rows).
      const again = rows
        .filter((r) => !this.#retried.has(r))
        .slice(0, Math.max(0, ReadAuditBuffer.MAX_HELD - this.#rows.length));
      for (const r of again) this.#retried.add(r);
      this.#rows.unshift(...again);
      if (again.length > 0 && this.#timer === undefined) {
        this.#timer = setTimeout(() => void this.flush(), this.intervalMs);
        this.#timer.unref();
      }
      this.rt.logger.error(
        { err, rows: rows.length, retried: again.length, dropped: rows.length - again.length },
        'could not flush read audit rows',
      );
    }
  }

  async #append(rows: AuditEntry[]): Promise<void> {
    await this.rt.store.write(async (tx) => {
      const stored = await appendAuditRows(tx, rows);
      tx.afterCommit(() => {
        for (const s of stored) this.rt.afterWrite(s);
      });
    });
  }
}
