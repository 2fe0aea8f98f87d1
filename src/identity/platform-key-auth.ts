/**
 * Authentication of a platform credential (`pk_solid_<key_id>_<secret>`, spec/platform.md
 * §credential): the key's format and its check against `platform_keys` (SHA-256 of the secret,
 * compared in constant time). Made, listed and revoked by src/platform/platform-keys.ts, which
 * re-exports these; the provisioning runner and the HTTP rate limiter (a platform key's own
 * budget) ask them. A platform credential is an agent-side credential of no tenant.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Store } from '../store/store.ts';
import { sha256Bytes } from '../runtime/sha256.ts';
import { VerbError } from '../runtime/errors.ts';
import { PLATFORM_KEY_PREFIX } from '../runtime/tenants.ts';

/** Who is calling provisioning: a platform key by its id and name. */
export interface PlatformPrincipal {
  key_id: string;
  name: string;
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
