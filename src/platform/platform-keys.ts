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
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Queryable, Store } from '../store/store.ts';
import { sha256Bytes, sha256Hex } from '../runtime/sha256.ts';
import { VerbError } from '../runtime/errors.ts';
import { PLATFORM_KEY_PREFIX } from '../runtime/tenants.ts';

export { PLATFORM_KEY_PREFIX };

/** Who is calling provisioning: a platform key by its id and name. */
export interface PlatformPrincipal {
  key_id: string;
  name: string;
}

/** One platform key as listed (never its secret). Times ISO 8601. */
export interface PlatformKeyInfo {
  key_id: string;
  name: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

/** Split `pk_solid_<key_id>_<secret>`; undefined when malformed. */
export function parsePlatformKey(key: unknown): { keyId: string; secret: string } | undefined {
  if (typeof key !== 'string' || !key.startsWith(PLATFORM_KEY_PREFIX) || key.length > 200) return undefined;
  const rest = key.slice(PLATFORM_KEY_PREFIX.length);
  const keyId = rest.slice(0, 12);
  const secret = rest.slice(13);
  if (!/^[0-9a-f]{12}$/.test(keyId) || rest[12] !== '_' || secret.length < 16) return undefined;
  return { keyId, secret };
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

/**
 * The platform principal of a presented key. Throws VerbError `auth_invalid` for a malformed,
 * unknown, wrong or revoked key (never saying which; `details.key_id` only when the key id
 * exists, for the platform log), and `platform_credential_required` for a tenant's API key.
 */
export async function authenticatePlatformKey(store: Store, key: unknown): Promise<PlatformPrincipal> {
  const parsed = parsePlatformKey(key);
  if (parsed === undefined) {
    if (typeof key === 'string' && key.startsWith('sk_solid_'))
      throw new VerbError(
        'platform_credential_required',
        "A tenant's API key cannot call provisioning: it acts only inside its own tenant.",
        {
          hint: 'Use a platform credential (pk_solid_…), made by the operator with `solid platform keys create`.',
        },
      );
    throw new VerbError(
      'auth_invalid',
      'The platform credential is missing, malformed, unknown or revoked.',
      {
        hint: 'Send `Authorization: Bearer pk_solid_…`; the operator makes one with `solid platform keys create`.',
      },
    );
  }
  const row = await store.read((q) =>
    q.get<{ name: string; secret_hash: string; revoked_at: string | null }>(
      'SELECT name, secret_hash, revoked_at FROM platform_keys WHERE key_id = ?',
      [parsed.keyId],
    ),
  );
  const given = sha256Bytes(parsed.secret);
  const want = row === undefined ? undefined : Buffer.from(row.secret_hash, 'hex');
  if (
    row === undefined ||
    want === undefined ||
    (row.revoked_at !== null && row.revoked_at !== undefined) ||
    want.length !== given.length ||
    !timingSafeEqual(want, given)
  ) {
    throw new VerbError('auth_invalid', 'The platform credential is unknown, revoked or wrong.', {
      hint: 'Ask the operator for a new platform credential (`solid platform keys create`).',
      ...(row !== undefined ? { details: { key_id: parsed.keyId } } : {}),
    });
  }
  return { key_id: parsed.keyId, name: row.name };
}
