/**
 * Per-tenant ES256 signing keys with a rotation lifecycle: pending → active → rotating → retired.
 * A pending key is published (JWKS, UCP profile) before it signs anything; activating it moves the
 * previous active key to `rotating`, still accepted until `grace_until`; a retired key is no longer
 * accepted for inbound verification but stays listed for verifying old receipts offline.
 * Private keys are encrypted at rest with the master key (AES-256-GCM, bound to the kid); public
 * JWKs never carry private members. Imported keys are cached: no per-call key import.
 *
 * Spec: spec/receipts.md §attestation, spec/transports.md §ucp-keys.
 */
import { randomBytes, createPublicKey, type KeyObject, webcrypto } from 'node:crypto';
import { generateP256Jwk } from './keygen.ts';
import { jwsHeader } from './receipts.ts';
import type { Queryable, Store } from '../../../store/store.ts';
import { parseJson } from '../../../store/store.ts';
import type { Secrets } from '../../secrets.ts';
import { VerbError } from '../../errors.ts';
import { refuse } from '../../refusals.ts';

export type KeyState = 'pending' | 'active' | 'rotating' | 'retired';

export interface PublicJwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid: string;
  use: 'sig';
  alg: 'ES256';
}

export interface TenantKeyInfo {
  kid: string;
  company_id: number;
  state: KeyState;
  public_jwk: PublicJwk;
  created_at: string;
  activated_at: string | null;
  rotated_at: string | null;
  retired_at: string | null;
  grace_until: string | null;
}

export interface SigningKey {
  kid: string;
  /** WebCrypto key (sign happens on the thread pool, off the event loop). */
  cryptoKey: webcrypto.CryptoKey;
  /** node KeyObject for synchronous signing (checkpoints, receipts of a lone caller). */
  keyObject: KeyObject;
  /** The receipts' JWS protected header for this kid, base64url (made once per key). */
  jwsHeader?: string;
}

/** Default grace period during which a rotated-out key is still accepted (seconds). */
export const DEFAULT_GRACE_SECONDS = 7 * 24 * 3600;

function rowToInfo(r: Record<string, unknown>): TenantKeyInfo {
  return {
    kid: r.kid as string,
    company_id: Number(r.company_id),
    state: r.state as KeyState,
    public_jwk: parseJson<PublicJwk>(r.public_jwk),
    created_at: r.created_at as string,
    activated_at: (r.activated_at as string | null) ?? null,
    rotated_at: (r.rotated_at as string | null) ?? null,
    retired_at: (r.retired_at as string | null) ?? null,
    grace_until: (r.grace_until as string | null) ?? null,
  };
}

export class TenantKeys {
  readonly #store: Store;
  readonly #secrets: Secrets;
  readonly #signing = new Map<number, { key: SigningKey; loadedAt: number }>();
  readonly #public = new Map<string, KeyObject>();
  /** How long a cached signing key is trusted before re-reading (multi-node rotation), ms. */
  cacheTtlMs = 30_000;

  constructor(store: Store, secrets: Secrets) {
    this.#store = store;
    this.#secrets = secrets;
  }

  /** Create a key for a tenant (inside the caller's write). Returns its public info. */
  async create(
    q: Queryable,
    companyId: number,
    state: 'pending' | 'active',
    now = new Date(),
  ): Promise<TenantKeyInfo> {
    const pair = generateP256Jwk();
    const kid = `k${companyId}-${now.toISOString().slice(0, 10).replace(/-/g, '')}-${randomBytes(4).toString('hex')}`;
    const publicJwk: PublicJwk = { ...pair.publicJwk, kid, use: 'sig', alg: 'ES256' };
    const privateJwk = JSON.stringify(pair.privateJwk);
    const iso = now.toISOString();
    if (state === 'active') {
      await this.#demoteActive(q, companyId, iso);
    }
    await q.run(
      `INSERT INTO tenant_keys (kid, company_id, state, public_jwk, private_enc, created_at, activated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      [
        kid,
        companyId,
        state,
        JSON.stringify(publicJwk),
        this.#secrets.encrypt(privateJwk, kid),
        iso,
        state === 'active' ? iso : null,
      ],
    );
    this.#signing.delete(companyId);
    return {
      kid,
      company_id: companyId,
      state,
      public_jwk: publicJwk,
      created_at: iso,
      activated_at: state === 'active' ? iso : null,
      rotated_at: null,
      retired_at: null,
      grace_until: null,
    };
  }

  async #demoteActive(
    q: Queryable,
    companyId: number,
    iso: string,
    graceSeconds = DEFAULT_GRACE_SECONDS,
  ): Promise<void> {
    const grace = new Date(Date.parse(iso) + graceSeconds * 1000).toISOString();
    await q.run(
      `UPDATE tenant_keys SET state = 'rotating', rotated_at = ?, grace_until = ? WHERE company_id = ? AND state = 'active'`,
      [iso, grace, companyId],
    );
  }

  /** pending → active; the previous active key moves to rotating for the grace period. */
  async activate(
    q: Queryable,
    companyId: number,
    kid: string,
    now = new Date(),
    graceSeconds = DEFAULT_GRACE_SECONDS,
  ): Promise<TenantKeyInfo> {
    const row = await q.get<Record<string, unknown>>(
      'SELECT * FROM tenant_keys WHERE kid = ? AND company_id = ?',
      [kid, companyId],
    );
    if (row === undefined) throw refuse.signingKeyNotFound(kid);
    if (row.state !== 'pending')
      throw new VerbError(
        'invalid_request',
        `Key ${kid} is ${String(row.state)}; only a pending key can be activated.`,
      );
    const iso = now.toISOString();
    await this.#demoteActive(q, companyId, iso, graceSeconds);
    await q.run(`UPDATE tenant_keys SET state = 'active', activated_at = ? WHERE kid = ?`, [iso, kid]);
    this.#signing.delete(companyId);
    return rowToInfo({ ...row, state: 'active', activated_at: iso });
  }

  /** Rotate: a new key becomes active now; the old active key is accepted until the grace ends. */
  async rotate(
    q: Queryable,
    companyId: number,
    now = new Date(),
    graceSeconds = DEFAULT_GRACE_SECONDS,
  ): Promise<TenantKeyInfo> {
    const created = await this.create(q, companyId, 'pending', now);
    return this.activate(q, companyId, created.kid, now, graceSeconds);
  }

  /** Retire a key: no longer accepted inbound, kept for verifying old receipts. The active key cannot be retired. */
  async retire(q: Queryable, companyId: number, kid: string, now = new Date()): Promise<TenantKeyInfo> {
    const row = await q.get<Record<string, unknown>>(
      'SELECT * FROM tenant_keys WHERE kid = ? AND company_id = ?',
      [kid, companyId],
    );
    if (row === undefined) throw refuse.signingKeyNotFound(kid);
    if (row.state === 'active')
      throw new VerbError(
        'invalid_request',
        `Key ${kid} is the active signing key; rotate first, then retire it.`,
      );
    const iso = now.toISOString();
    await q.run(`UPDATE tenant_keys SET state = 'retired', retired_at = ? WHERE kid = ?`, [iso, kid]);
    this.#public.delete(kid);
    return rowToInfo({ ...row, state: 'retired', retired_at: iso });
  }

  /** All keys of a tenant, newest first (public parts only). */
  async list(q: Queryable, companyId: number): Promise<TenantKeyInfo[]> {
    const rows = await q.all<Record<string, unknown>>(
      'SELECT * FROM tenant_keys WHERE company_id = ? ORDER BY created_at DESC, kid',
      [companyId],
    );
    return rows.map(rowToInfo);
  }

  /**
   * Keys a verifier should accept now: pending (published ahead), active, rotating within grace.
   * `includeRetired` for offline verification of old receipts.
   */
  async publishable(
    q: Queryable,
    companyId: number,
    now = new Date(),
    includeRetired = false,
  ): Promise<PublicJwk[]> {
    const iso = now.toISOString();
    return (await this.list(q, companyId))
      .filter(
        (k) =>
          includeRetired ||
          k.state === 'pending' ||
          k.state === 'active' ||
          (k.state === 'rotating' && (k.grace_until === null || k.grace_until > iso)),
      )
      .map((k) => k.public_jwk);
  }

  /** The tenant's active signing key (cached; re-read after cacheTtlMs). Throws when none. */
  async signingKey(companyId: number): Promise<SigningKey> {
    const cached = this.#signing.get(companyId);
    if (cached !== undefined && Date.now() - cached.loadedAt < this.cacheTtlMs) return cached.key;
    const row = await this.#store.read((q) =>
      q.get<Record<string, unknown>>(
        `SELECT kid, private_enc FROM tenant_keys WHERE company_id = ? AND state = 'active'`,
        [companyId],
      ),
    );
    if (row === undefined) throw new Error(`tenant ${companyId} has no active signing key`);
    const kid = row.kid as string;
    if (cached !== undefined && cached.key.kid === kid) {
      cached.loadedAt = Date.now();
      return cached.key;
    }
    const jwk = JSON.parse(this.#secrets.decrypt(row.private_enc as string, kid)) as webcrypto.JsonWebKey;
    const cryptoKey = await webcrypto.subtle.importKey(
      'jwk',
      { ...jwk, ext: false },
      { name: 'ECDSA', namedCurve: 'P-256' },
      false,
      ['sign'],
    );
    const { createPrivateKey } = await import('node:crypto');
    const keyObject = createPrivateKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
    const key: SigningKey = { kid, cryptoKey, keyObject, jwsHeader: jwsHeader(kid) };
    this.#signing.set(companyId, { key, loadedAt: Date.now() });
    return key;
  }

  /** A public KeyObject by kid (any state, for offline verification), cached. */
  async publicKey(q: Queryable, kid: string): Promise<KeyObject | undefined> {
    let k = this.#public.get(kid);
    if (k === undefined) {
      const row = await q.get<Record<string, unknown>>('SELECT public_jwk FROM tenant_keys WHERE kid = ?', [
        kid,
      ]);
      if (row === undefined) return undefined;
      k = createPublicKey({
        key: parseJson<PublicJwk>(row.public_jwk) as unknown as import('node:crypto').JsonWebKey,
        format: 'jwk',
      });
      this.#public.set(kid, k);
    }
    return k;
  }

  /** Forget cached keys (after an out-of-process rotation). */
  invalidate(companyId?: number): void {
    if (companyId === undefined) this.#signing.clear();
    else this.#signing.delete(companyId);
  }
}
