/**
 * Platform credentials: the key a platform's backend program holds to provision the businesses it
 * hosts (spec/platform.md §credential). `pk_solid_<key_id>_<secret>`: the key id is 12 hex digits,
 * the secret 24 random bytes; only SHA-256(secret) is stored (table `platform_keys`, migration
 * scope `platform`), compared in constant time, and the key is shown once at creation.
 *
 * A platform credential belongs to no tenant and yields no Principal: it is an **agent-side**
 * credential that only the provisioning verbs accept (src/platform/provisioning.ts). Presented to
 * a tenant's verbs it is refused (`platform_credential_required`, runtime/tenants.ts); it can
 * never approve, type a phrase, change consent settings or open a human session. Only the
 * operator makes one, at the local CLI (`solid platform keys create`), never through the API.
 */
import { randomBytes } from 'node:crypto';
import type { Queryable, Store } from '../store/store.ts';
import { sha256Hex } from '../runtime/sha256.ts';
import { PLATFORM_KEY_PREFIX } from '../runtime/tenants.ts';

export { PLATFORM_KEY_PREFIX };
// Authentication of a presented key lives with identity (the room that turns credentials into
// callers; the HTTP core's rate limiter asks it too): re-exported here for the platform room.
export {
  authenticatePlatformKey,
  parsePlatformKey,
  type PlatformPrincipal,
} from '../identity/platform-key-auth.ts';

/** One platform key as listed (never its secret). Times ISO 8601. */
export interface PlatformKeyInfo {
  key_id: string;
  name: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

/**
 * Create a platform key (operator only: `solid platform keys create`). Returns the plaintext key,
 * shown once, and its info. The caller audits it in the platform log.
 */
export async function createPlatformKey(
  store: Store,
  name: string,
  now: Date,
): Promise<{ key: string; info: PlatformKeyInfo }> {
  const key_id = randomBytes(6).toString('hex');
  const secret = randomBytes(24).toString('base64url');
  const info: PlatformKeyInfo = {
    key_id,
    name,
    created_at: now.toISOString(),
    revoked_at: null,
    last_used_at: null,
  };
  await store.write((tx) =>
    tx.run('INSERT INTO platform_keys (key_id, name, secret_hash, created_at) VALUES (?, ?, ?, ?)', [
      key_id,
      name,
      sha256Hex(secret),
      info.created_at,
    ]),
  );
  return { key: `${PLATFORM_KEY_PREFIX}${key_id}_${secret}`, info };
}

/** Every platform key, oldest first (never secrets). */
export async function listPlatformKeys(q: Queryable): Promise<PlatformKeyInfo[]> {
  const rows = await q.all<PlatformKeyInfo>(
    'SELECT key_id, name, created_at, revoked_at, last_used_at FROM platform_keys ORDER BY created_at, key_id',
  );
  return rows.map((r) => ({ ...r, revoked_at: r.revoked_at ?? null, last_used_at: r.last_used_at ?? null }));
}

/** Revoke a platform key; false when there is no such live key. */
export async function revokePlatformKey(q: Queryable, keyId: string, now: Date): Promise<boolean> {
  const r = await q.run('UPDATE platform_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL', [
    now.toISOString(),
    keyId,
  ]);
  return r.changes > 0;
}
