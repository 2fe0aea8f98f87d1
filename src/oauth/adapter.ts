/**
 * oidc-provider's storage adapter over our Store (table `oauth_models`, migrations.ts): one class
 * per model name, the methods oidc-provider calls (`upsert`, `find`, `findByUid`,
 * `findByUserCode`, `consume`, `destroy`, `revokeByGrantId`). Both engines; every node of a
 * PostgreSQL deployment reads the same rows, so a revoked token or a consumed code is refused on
 * every node at its next use. Expired rows are never returned and are swept on writes.
 * spec/oauth.md §storage
 */
import type { Store } from '../store/store.ts';

/** The payload oidc-provider stores (opaque to us but for the lookup fields). */
export type Payload = Record<string, unknown> & { grantId?: string; uid?: string; userCode?: string };

/** How often (at most) an adapter write also deletes expired rows, in ms. */
const SWEEP_EVERY_MS = 60_000;

/**
 * How long a registered client is kept without a grant (ms). Registration is open (RFC 7591:
 * a connector registers itself), so a client nobody consented to expires; a grant extends its
 * client to the grant's end (grants.ts `keepClientFor`). Bounds what anonymous registrations can
 * store. spec/oauth.md §storage
 */
export const UNGRANTED_CLIENT_TTL_MS = 7 * 86_400_000;

/** One model's adapter: the methods oidc-provider calls. */
export interface OAuthModelAdapter {
  readonly name: string;
  upsert(id: string, payload: Payload, expiresIn?: number): Promise<void>;
  find(id: string): Promise<Payload | undefined>;
  findByUid(uid: string): Promise<Payload | undefined>;
  findByUserCode(userCode: string): Promise<Payload | undefined>;
  consume(id: string): Promise<void>;
  destroy(id: string): Promise<void>;
  revokeByGrantId(grantId: string): Promise<void>;
}

/**
 * Make the adapter class oidc-provider's `adapter` option takes, bound to `store`.
 * @param store the runtime's store (scope `oauth` migrated)
 * @param now the clock (ms since the epoch)
 */
export function storeAdapter(
  store: Store,
  now: () => number = Date.now,
): new (name: string) => OAuthModelAdapter {
  let lastSweep = 0;
  const live = (r: { expires_at: unknown } | undefined) =>
    r !== undefined && (r.expires_at === null || Number(r.expires_at) > now());
  const decode = (r: { payload: string; consumed_at: unknown }): Payload => {
    const p = JSON.parse(r.payload) as Payload;
    if (r.consumed_at !== null && r.consumed_at !== undefined)
      p.consumed = Math.floor(Number(r.consumed_at) / 1000);
    return p;
  };

  const findBy = async (
    model: string,
    column: 'id' | 'uid' | 'user_code',
    value: string,
  ): Promise<Payload | undefined> => {
    const row = await store.read((q) =>
      q.get<{ payload: string; consumed_at: unknown; expires_at: unknown }>(
        `SELECT payload, consumed_at, expires_at FROM oauth_models WHERE model = ? AND ${column} = ?`,
        [model, value],
      ),
    );
    return live(row) ? decode(row!) : undefined;
  };

  return class StoreAdapter implements OAuthModelAdapter {
    readonly name: string;
    constructor(name: string) {
      this.name = name;
    }

    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      const t = now();
      const expires =
        typeof expiresIn === 'number'
          ? t + expiresIn * 1000
          : this.name === 'Client'
            ? t + UNGRANTED_CLIENT_TTL_MS
            : null;
      await store.write(async (tx) => {
        if (t - lastSweep > SWEEP_EVERY_MS) {
          lastSweep = t;
          await tx.run('DELETE FROM oauth_models WHERE expires_at IS NOT NULL AND expires_at < ?', [t]);
        }
        await tx.run(
          `INSERT INTO oauth_models (model, id, payload, grant_id, uid, user_code, expires_at, consumed_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, NULL)
           ON CONFLICT (model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id,
             uid = excluded.uid, user_code = excluded.user_code,
             expires_at = CASE WHEN excluded.model = 'Client' AND oauth_models.expires_at > excluded.expires_at
                               THEN oauth_models.expires_at ELSE excluded.expires_at END`,
          [
            this.name,
            id,
            JSON.stringify(payload),
            payload.grantId ?? null,
            payload.uid ?? null,
            payload.userCode ?? null,
            expires,
          ],
        );
      });
    }

    find(id: string): Promise<Payload | undefined> {
      return findBy(this.name, 'id', id);
    }

    findByUid(uid: string): Promise<Payload | undefined> {
      return findBy(this.name, 'uid', uid);
    }

    findByUserCode(userCode: string): Promise<Payload | undefined> {
      return findBy(this.name, 'user_code', userCode);
    }

    async consume(id: string): Promise<void> {
      await store.write((tx) =>
        tx.run('UPDATE oauth_models SET consumed_at = ? WHERE model = ? AND id = ? AND consumed_at IS NULL', [
          now(),
          this.name,
          id,
        ]),
      );
    }

    async destroy(id: string): Promise<void> {
      await store.write((tx) =>
        tx.run('DELETE FROM oauth_models WHERE model = ? AND id = ?', [this.name, id]),
      );
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await store.write((tx) => tx.run('DELETE FROM oauth_models WHERE grant_id = ?', [grantId]));
    }
  };
}
