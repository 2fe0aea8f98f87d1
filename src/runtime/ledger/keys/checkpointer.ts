/**
 * When signed checkpoints are written (checkpoints.ts writes one): every `every` committed rows of
 * a tenant, every `intervalMs` for every tenant whose head moved, and once more on close, so a
 * short-lived process (a CLI call) leaves its rows anchored. A tenant without a usable signing key
 * does not stop the others'.
 *
 * The timer's pass reads only the tenants this process's committed writes touched since the last
 * pass (`Store.drainLockedHeads`), not every tenant's head: its work is in proportion to the
 * tenants that were active. Each node signs the heads its own writes moved.
 *
 * Spec: spec/audit.md §checkpoints.
 */
import type { Logger } from 'pino';
import type { Store } from '../../../store/store.ts';
import { checkpointedTenants, writeCheckpoint } from './checkpoints.ts';
import type { TenantKeys } from './tenant-keys.ts';

export interface CheckpointerOptions {
  store: Store;
  keys: TenantKeys;
  clock: () => Date;
  logger: Logger;
  /** A checkpoint after this many committed rows of one tenant. */
  every: number;
  /** A pass over every tenant every this many ms (the timer does not hold the process open). */
  intervalMs: number;
}

export class Checkpointer {
  readonly #o: CheckpointerOptions;
  readonly #sinceCheckpoint = new Map<number, number>();
  readonly #timer: NodeJS.Timeout;

  constructor(options: CheckpointerOptions) {
    this.#o = options;
    this.#timer = setInterval(
      () =>
        void this.checkpointAll().catch((err: unknown) => options.logger.error({ err }, 'checkpoint failed')),
      options.intervalMs,
    );
    this.#timer.unref();
  }

  /** Count one committed row of a tenant; the `every`-th starts a checkpoint of its head. */
  noteRow(companyId: number): void {
    const seen = this.#sinceCheckpoint.get(companyId);
    const n = (seen ?? 0) + 1;
    this.#sinceCheckpoint.set(companyId, n);
    // A tenant's first row in this process is signed at once, so an honest chain is never without
    // a checkpoint for long: `audit verify` reports a chain with none (no_checkpoint). spec/audit.md §verify
    if (seen === undefined || n >= this.#o.every) {
      this.#sinceCheckpoint.set(companyId, 0);
      void this.checkpoint(companyId).catch((err: unknown) => {
        // Tried again at the tenant's next row (the store may be back by then).
        this.#sinceCheckpoint.delete(companyId);
        this.#o.logger.error({ err }, 'checkpoint failed');
      });
    }
  }

  /** Write a signed checkpoint of a tenant's chain head. No-op when the head did not move. */
  checkpoint(companyId: number): Promise<{ seq: number; head_hash: string } | undefined> {
    return writeCheckpoint(this.#o.store, this.#o.keys, this.#o.clock, companyId);
  }

  /**
   * Checkpoint every tenant whose head moved: those this process's writes touched since the last
   * pass (every tenant when the store cannot say, or when `all` is true).
   */
  async checkpointAll(all = false): Promise<void> {
    const store = this.#o.store;
    const ids =
      all || store.drainLockedHeads === undefined
        ? await checkpointedTenants(store)
        : store.drainLockedHeads();
    for (const company_id of ids) {
      try {
        await this.checkpoint(company_id);
      } catch (err) {
        // One tenant without a usable signing key must not stop the others' checkpoints.
        this.#o.logger.error({ err, company_id }, 'checkpoint failed for a tenant');
      }
    }
  }

  /** Stop the timer (close). */
  stop(): void {
    clearInterval(this.#timer);
  }
}
