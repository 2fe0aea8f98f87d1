/**
 * The user_id of a UCP platform (spec/transports.md §ucp-dispatch): one id per profile URL,
 * recorded in `ucp_platform_users` (runtime migration 6) the first time a platform is seen, so
 * two platforms never share an id — and with it an idempotency scope, nonces, daily caps and a
 * reputation. The first candidate is the deterministic `platformUserId(url)` (10⁹ + SHA-256
 * prefix mod 10⁹, what earlier versions used, so existing platforms keep their ids); while another
 * URL holds a candidate, the next ones come from an HMAC of the URL under the runtime secret
 * (purpose `platform`), so nobody can predict — and squat — the ids a platform would fall back to.
 */
import type { Store } from '../../store/store.ts';
import { StoreError } from '../../store/store.ts';
import type { Secrets } from '../../runtime/secrets.ts';
import { platformUserId } from './verify-request.ts';

const FIRST_ID = 1_000_000_000;
const SPAN = 1_000_000_000;
/** Probes before giving up (every candidate held by another URL: with keyed candidates, a bug rather than chance or an attack). */
const MAX_PROBES = 64;
/** Profile URLs whose id is kept in memory (the mapping never changes once recorded). */
const CACHE_LIMIT = 10_000;

/**
 * Resolves platform profile URLs to user ids, with an in-process cache in front of the store.
 * One per runtime store; safe across nodes (the store's unique constraints decide).
 */
export class PlatformUsers {
  readonly #store: Store;
  readonly #secrets: Secrets;
  readonly #cache = new Map<string, number>();

  constructor(store: Store, secrets: Secrets) {
    this.#store = store;
    this.#secrets = secrets;
  }

  /**
   * The user_id of `profileUrl` (a normalized https URL), recording it on first sight.
   * @returns an integer in [10⁹, 2·10⁹)
   * @throws StoreError (answered as `503 store_unavailable`) when the store fails, or when MAX_PROBES ids in a
   *   row are taken by other URLs
   */
  async userIdOf(profileUrl: string): Promise<number> {
    const cached = this.#cache.get(profileUrl);
    if (cached !== undefined) return cached;
    const known = await this.#store.read((q) =>
      q.get<{ user_id: number | string }>('SELECT user_id FROM ucp_platform_users WHERE profile_url = ?', [
        profileUrl,
      ]),
    );
    const id = known !== undefined ? Number(known.user_id) : await this.#record(profileUrl);
    if (this.#cache.size >= CACHE_LIMIT) this.#cache.delete(this.#cache.keys().next().value!);
    this.#cache.set(profileUrl, id);
    return id;
  }

  /** Candidate k of a URL: the legacy id first, then keyed ids nobody outside can compute. */
  #candidate(profileUrl: string, k: number): number {
    if (k === 0) return platformUserId(profileUrl);
    const mac = Buffer.from(this.#secrets.mac('platform', `${k}\n${profileUrl}`), 'base64url');
    return FIRST_ID + (mac.readUIntBE(0, 6) % SPAN);
  }

  async #record(profileUrl: string): Promise<number> {
    const now = new Date().toISOString();
    return this.#store.write(async (tx) => {
      for (let k = 0; k < MAX_PROBES; k++) {
        const candidate = this.#candidate(profileUrl, k);
        // DO NOTHING without a target absorbs both conflicts: this URL recorded meanwhile (by
        // another node) or the candidate id held by another URL.
        await tx.run(
          'INSERT INTO ucp_platform_users (profile_url, user_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
          [profileUrl, candidate, now],
        );
        const row = await tx.get<{ user_id: number | string }>(
          'SELECT user_id FROM ucp_platform_users WHERE profile_url = ?',
          [profileUrl],
        );
        if (row !== undefined) return Number(row.user_id);
      }
      throw new StoreError(
        'unavailable',
        `No free platform user id for ${profileUrl} after ${MAX_PROBES} probes.`,
      );
    });
  }
}
