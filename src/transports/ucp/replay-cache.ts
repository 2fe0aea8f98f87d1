/**
 * Replay detection for verified RFC 9421 signatures: a signature (keyid + signature bytes) may be
 * accepted once within its validity window. Used by verifyMessage (rfc9421.ts).
 *
 * Two guards: `StoreReplayGuard` (the UCP plugin's default) records signatures in the store's
 * `signature_replays` table, so every node of a PostgreSQL deployment and a restarted process see
 * them; `ReplayCache` is the bounded in-memory one (one process, forgotten on restart).
 *
 * Spec: RFC 9421 §7.2.2 (signature replay); spec/transports.md §ucp-verify (signature parameters and their window).
 */

import type { Store } from '../../store/store.ts';

/**
 * What verifyMessage needs from a replay store; `ReplayCache` is the in-memory one, a shared
 * store (database, Redis) can implement the same method for several processes.
 */
export interface ReplayGuard {
  /**
   * Record `id` unless it is already recorded and not yet expired.
   * @param id opaque identity of one signature (keyid + signature bytes)
   * @param expiresAtSeconds unix seconds after which the entry may be forgotten
   * @param nowSeconds current unix seconds
   * @returns true when `id` was new (now recorded), false when it is a replay
   */
  checkAndRecord(id: string, expiresAtSeconds: number, nowSeconds: number): boolean | Promise<boolean>;
  /**
   * Optional batch form: check-and-record `first`; when it was new, also record `others` (the
   * message's other signatures), all at once. Same answer as checkAndRecord for `first`.
   */
  checkAndRecordAll?(
    first: ReplayEntry,
    others: readonly ReplayEntry[],
    nowSeconds: number,
  ): Promise<boolean>;
}

/** One signature to remember: its identity and the unix second its window ends. */
export interface ReplayEntry {
  id: string;
  expiresAtSeconds: number;
}

/** Options for ReplayCache. */
export interface ReplayCacheOptions {
  /** Most entries kept (default 10 000). When full, expired entries are swept, then the oldest go. */
  maxEntries?: number;
}

/**
 * Bounded in-memory replay cache. Entries expire at the signature's window end. When more than
 * `maxEntries` unexpired signatures are live, the oldest recorded ones are evicted (so a replay of
 * an evicted signature is no longer detected: size the bound above the expected number of
 * signatures per window).
 */
export class ReplayCache implements ReplayGuard {
  readonly maxEntries: number;
  readonly #entries = new Map<string, number>();

  constructor(options: ReplayCacheOptions = {}) {
    const maxEntries = options.maxEntries ?? 10_000;
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`maxEntries must be a positive integer, got ${maxEntries}`);
    }
    this.maxEntries = maxEntries;
  }

  /** Number of entries currently held (expired ones included until swept). */
  get size(): number {
    return this.#entries.size;
  }

  /** See ReplayGuard.checkAndRecord; synchronous. */
  checkAndRecord(id: string, expiresAtSeconds: number, nowSeconds: number): boolean {
    const existing = this.#entries.get(id);
    if (existing !== undefined && existing >= nowSeconds) return false;
    if (existing !== undefined) this.#entries.delete(id);
    if (expiresAtSeconds < nowSeconds) return true; // already outside its window: nothing to remember
    if (this.#entries.size >= this.maxEntries) this.#makeRoom(nowSeconds);
    this.#entries.set(id, expiresAtSeconds);
    return true;
  }

  /** Drop every entry. */
  clear(): void {
    this.#entries.clear();
  }

  #makeRoom(nowSeconds: number): void {
    for (const [id, expiresAt] of this.#entries) {
      if (expiresAt < nowSeconds) this.#entries.delete(id);
    }
    const iterator = this.#entries.keys();
    while (this.#entries.size >= this.maxEntries) {
      const oldest = iterator.next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
  }
}

/** Thrown inside the guard's transaction to roll it back when the first signature is a replay. */
const REPLAYED = new Error('signature replayed');

/**
 * Replay guard backed by the store (table `signature_replays`, runtime migration 4): one
 * INSERT … ON CONFLICT per verified signature, atomic on both engines, so two nodes racing the
 * same signature admit exactly one. Rows past their window are reclaimed by a later insert of the
 * same id and swept by the runtime's maintenance pass. A store failure rejects (the caller answers
 * store_unavailable; nothing runs). Spec: spec/transports.md §ucp-verify.
 */
export class StoreReplayGuard implements ReplayGuard {
  constructor(private readonly store: Store) {}

  async checkAndRecord(id: string, expiresAtSeconds: number, nowSeconds: number): Promise<boolean> {
    return this.checkAndRecordAll({ id, expiresAtSeconds }, [], nowSeconds);
  }

  /**
   * One store transaction: every signature recorded in id order (two messages carrying the same
   * signatures in another label order cannot deadlock on PostgreSQL), rolled back as a whole when
   * the first one was already recorded (a replay records nothing).
   */
  async checkAndRecordAll(
    first: ReplayEntry,
    others: readonly ReplayEntry[],
    nowSeconds: number,
  ): Promise<boolean> {
    const live = [first, ...others].filter((e) => e.expiresAtSeconds >= nowSeconds); // expired: nothing to remember
    if (live.length === 0) return true;
    live.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    try {
      await this.store.write(
        async (tx) => {
          for (const e of live) {
            const r = await tx.run(
              'INSERT INTO signature_replays (signature_id, expires_at) VALUES (?, ?) ON CONFLICT (signature_id) DO UPDATE SET expires_at = excluded.expires_at WHERE signature_replays.expires_at < ?',
              [e.id, e.expiresAtSeconds, nowSeconds],
            );
            if (e === first && r.changes !== 1) throw REPLAYED;
          }
        },
        { label: 'signature replay guard' },
      );
      return true;
    } catch (err) {
      if (err === REPLAYED) return false;
      throw err;
    }
  }
}
