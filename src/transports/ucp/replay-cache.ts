/**
 * Replay detection for verified RFC 9421 signatures: a signature (keyid + signature bytes) may be
 * accepted once within its validity window. Used by verifyMessage (rfc9421.ts).
 *
 * Spec: RFC 9421 §7.2.2 (signature replay); research brief "UCP + RFC 9421" §7.3.
 */

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
