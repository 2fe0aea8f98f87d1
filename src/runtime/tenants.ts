/**
 * Tenants, API keys and authentication. The principal (company_id, user_id, role, tier,
 * agent_type) comes from authentication only, never from arguments.
 *
 * API keys look like `sk_solid_<key_id>_<secret>`; only SHA-256(secret) is stored (the secret is
 * 32 random bytes, so a fast hash is the right tool), compared in constant time. The key is shown
 * once at creation.
 *
 * Spec: spec/consent.md §principal, spec/transports.md §auth.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { Queryable, Store } from '../store/store.ts';
import { parseJson } from '../store/store.ts';
import type { CredentialScope, Principal, Role, Tier, VerbClass } from '../spec/types.ts';
import { ROLES, TIERS } from '../spec/types.ts';
import { VerbError } from './errors.ts';
import type { GateRule } from './consent/gate-rules.ts';
import { refuse } from './refusals.ts';
import { sha256Bytes, sha256Hex } from './sha256.ts';
import { agentPrincipal } from '../identity/principal.ts';

export const API_KEY_PREFIX = 'sk_solid_';
/** The prefix of a platform credential (src/platform/platform-keys.ts): never a tenant's key. */
export const PLATFORM_KEY_PREFIX = 'pk_solid_';

// The setting `phrase_channel` is read through identity's consent predicate (default `human`).
export {
  CHANNEL_SETTINGS as PHRASE_CHANNEL_SETTINGS,
  confirmationChannelOf,
  phraseChannelOf,
  type ChannelSetting as PhraseChannelSetting,
} from '../identity/consent-predicate.ts';
import type { ChannelSetting } from '../identity/consent-predicate.ts';

/**
 * A second kind of bearer credential a server may accept besides API keys: OAuth access tokens
 * (src/oauth installs one with {@link Tenants.useBearer}). `authenticate` resolves a presented
 * token that is not an `sk_solid_` key to an **agent** principal or throws VerbError
 * `auth_invalid` (with `keyAttribution` when the token names a tenant's grant, so that tenant's
 * log gets the row). spec/oauth.md §resource-server
 */
export interface BearerAuthenticator {
  authenticate(token: string): Promise<Principal>;
  /**
   * The URL of the RFC 9728 protected-resource metadata a 401 names
   * (`WWW-Authenticate: Bearer resource_metadata="…"`), for a request to `path` on `origin`.
   */
  resourceMetadataUrl(origin: string, path: string): string;
  /** May a request without credentials still get the keyless sandbox on /mcp (else a 401 challenge)? */
  readonly keylessSandbox: boolean;
}

export interface TenantSettings {
  /** Daily caps per consent class (defaults 100 / 25 / 10). */
  caps?: Partial<Record<VerbClass, number>>;
  /** Extra blocked verb names for this tenant. */
  blocklist?: string[];
  /**
   * Who may type a phrase that counts (spec/consent.md §channels): `human` (default, also when
   * absent) — only a human principal (a signed-in user on the dashboard or approval page, the
   * operator at the local CLI's terminal); `any` — agents too, an explicit owner choice that
   * receipts name ("typed by the agent: this business allows agent-typed phrases").
   */
  phrase_channel?: ChannelSetting;
  /** Who may confirm a confirmation-click gate: `any` (default) or `human` (spec/consent.md §channels). */
  confirmation_channel?: ChannelSetting;
  /**
   * How long an approval of a typed-phrase class waits for a human, in minutes (5…1440), per
   * class; unset: as long as its nonce (spec/consent.md §approvals). Set by tenant.approval_ttl_set.
   */
  approval_ttl_minutes?: Partial<Record<'WRITE_FINANCIAL' | 'IRREVERSIBLE', number>>;
  /**
   * The business's time zone (IANA name; default UTC): where its day begins, so daily caps reset
   * at its midnight and money is summed per business day (runtime/consent/business-day.ts). Set by
   * tenant.time_zone_set, a human only.
   */
  time_zone?: string;
  /** Conditional gates: rules that raise a verb's gate by its arguments (spec/consent.md §conditional-gates). */
  gate_rules?: GateRule[];
  /** Anything else a pack stores. */
  [k: string]: unknown;
}

/** A tenant's lifecycle (spec/platform.md §lifecycle): only `active` tenants' credentials act. */
export type TenantStatus = 'active' | 'suspended' | 'deleted';

export interface Tenant {
  company_id: number;
  name: string;
  tier: Tier;
  settings: TenantSettings;
  created_at: string;
  /** `active` unless a platform suspended or deleted it (spec/platform.md §lifecycle). */
  status: TenantStatus;
  /** The platform's own account id of a tenant it created; null for the operator's tenants. */
  external_id: string | null;
  /** IANA time zone name (default UTC). */
  time_zone: string;
}

export interface ApiKeyInfo {
  key_id: string;
  company_id: number;
  user_id: number;
  role: Role;
  agent_type: string;
  name: string;
  created_at: string;
  revoked_at: string | null;
  /** The key's allow-list and read-only flag (null: its role's whole power). spec/consent.md §api-keys */
  scope: Omit<CredentialScope, 'expires_at'> | null;
  /** ISO 8601; null when the key does not expire. */
  expires_at: string | null;
}

/** The stored scope of a key (`{verbs?, toolsets?, read_only?}`), or null when it limits nothing. */
function storedScope(s: CredentialScope | undefined): Omit<CredentialScope, 'expires_at'> | null {
  if (s === undefined) return null;
  const out: Omit<CredentialScope, 'expires_at'> = {};
  if (s.verbs !== undefined) out.verbs = [...new Set(s.verbs)].sort();
  if (s.toolsets !== undefined) out.toolsets = [...new Set(s.toolsets)].sort();
  if (s.read_only === true) out.read_only = true;
  return Object.keys(out).length === 0 ? null : out;
}

/** A key row's scope and expiry as a principal's scope (undefined when the key is unlimited). */
function scopeOfRow(scope: unknown, expiresAt: unknown): CredentialScope | undefined {
  const s = parseJson<CredentialScope>(scope) ?? {};
  const out: CredentialScope = { ...s };
  if (typeof expiresAt === 'string' && expiresAt !== '') out.expires_at = expiresAt;
  return Object.keys(out).length === 0 ? undefined : out;
}

function hashSecret(secret: string): string {
  return sha256Hex(secret);
}

/** Insert a tenant row (inside a write). */
export async function insertTenant(
  q: Queryable,
  t: { company_id: number; name: string; tier: Tier; settings?: TenantSettings },
  now: Date,
): Promise<Tenant> {
  if (!(TIERS as readonly string[]).includes(t.tier))
    throw new VerbError('invalid_request', `tier must be one of ${TIERS.join(', ')}`);
  const created_at = now.toISOString();
  await q.run('INSERT INTO tenants (company_id, name, tier, settings, created_at) VALUES (?, ?, ?, ?, ?)', [
    t.company_id,
    t.name,
    t.tier,
    JSON.stringify(t.settings ?? {}),
    created_at,
  ]);
  return {
    company_id: t.company_id,
    name: t.name,
    tier: t.tier,
    settings: t.settings ?? {},
    created_at,
    status: 'active',
    external_id: null,
    time_zone: 'UTC',
  };
}

/** A tenants row as a Tenant (a database without the `platform` migrations reads as active, UTC). */
export function tenantOfRow(row: Record<string, unknown>): Tenant {
  return {
    company_id: Number(row.company_id),
    name: row.name as string,
    tier: row.tier as Tier,
    settings: parseJson<TenantSettings>(row.settings) ?? {},
    created_at: row.created_at as string,
    status: (row.status as TenantStatus | undefined) ?? 'active',
    external_id: (row.external_id as string | null | undefined) ?? null,
    time_zone: (row.time_zone as string | undefined) ?? 'UTC',
  };
}

/** How many tenants the database holds (the sandbox included). */
export async function countTenants(q: Queryable): Promise<number> {
  const row = await q.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM tenants');
  return Number(row?.n ?? 0);
}

/** The `limit` lowest tenant ids, ascending. */
export async function lowestTenantIds(q: Queryable, limit: number): Promise<number[]> {
  const rows = await q.all<{ company_id: number }>(
    'SELECT company_id FROM tenants ORDER BY company_id LIMIT ?',
    [limit],
  );
  return rows.map((r) => Number(r.company_id));
}

/**
 * Set one top-level member of a tenant's settings (inside the caller's write), keeping the others;
 * returns the settings as they were. Throws VerbError not_found for an unknown tenant. The
 * caller audits the change.
 */
export async function setTenantSetting(
  tx: Queryable,
  companyId: number,
  member: string,
  value: unknown,
): Promise<Record<string, unknown>> {
  const row = await tx.get<{ settings: unknown }>('SELECT settings FROM tenants WHERE company_id = ?', [
    companyId,
  ]);
  if (row === undefined) throw new VerbError('not_found', `No tenant ${companyId}.`);
  const current = parseJson<Record<string, unknown>>(row.settings) ?? {};
  await tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
    JSON.stringify({ ...current, [member]: value }),
    companyId,
  ]);
  return current;
}

/**
 * Create an API key; returns the plaintext key (shown once) and its info. `scope` limits it
 * beyond its role (verb/toolset allow-list, read-only, `expires_at` ISO 8601); the caller checks
 * that it is no wider than the creator's own (api_keys.create). spec/consent.md §api-keys
 */
export async function insertApiKey(
  q: Queryable,
  k: {
    company_id: number;
    user_id: number;
    role: Role;
    agent_type?: string;
    name?: string;
    scope?: CredentialScope;
  },
  now: Date,
): Promise<{ apiKey: string; info: ApiKeyInfo }> {
  if (!(ROLES as readonly string[]).includes(k.role))
    throw new VerbError('invalid_request', `role must be one of ${ROLES.join(', ')}`);
  const key_id = randomBytes(6).toString('hex');
  const secret = randomBytes(24).toString('base64url');
  const info: ApiKeyInfo = {
    key_id,
    company_id: k.company_id,
    user_id: k.user_id,
    role: k.role,
    agent_type: k.agent_type ?? 'api',
    name: k.name ?? '',
    created_at: now.toISOString(),
    revoked_at: null,
    scope: storedScope(k.scope),
    expires_at: k.scope?.expires_at ?? null,
  };
  await q.run(
    'INSERT INTO api_keys (key_id, company_id, user_id, role, agent_type, name, secret_hash, created_at, scope, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    [
      key_id,
      info.company_id,
      info.user_id,
      info.role,
      info.agent_type,
      info.name,
      hashSecret(secret),
      info.created_at,
      info.scope === null ? null : JSON.stringify(info.scope),
      info.expires_at,
    ],
  );
  return { apiKey: `${API_KEY_PREFIX}${key_id}_${secret}`, info };
}

/** Split `sk_solid_<key_id>_<secret>`; undefined when malformed. */
export function parseApiKey(apiKey: unknown): { keyId: string; secret: string } | undefined {
  if (typeof apiKey !== 'string' || !apiKey.startsWith(API_KEY_PREFIX) || apiKey.length > 200)
    return undefined;
  const rest = apiKey.slice(API_KEY_PREFIX.length);
  const cut = rest.indexOf('_');
  if (cut !== 12) return undefined;
  const keyId = rest.slice(0, cut);
  const secret = rest.slice(cut + 1);
  if (!/^[0-9a-f]{12}$/.test(keyId) || secret.length < 16) return undefined;
  return { keyId, secret };
}

interface CachedKey {
  keyId: string;
  hash: Buffer;
  principal: Principal;
  revoked: boolean;
  loadedAt: number;
}

interface CachedTenant {
  tenant: Tenant;
  loadedAt: number;
}

/** How many presented keys whose secret was verified are remembered (see Tenants.authenticate). */
const VERIFIED_KEYS_MAX = 1024;

/**
 * Authentication and tenant lookups with a short cache (revocation and tier changes take effect
 * within `cacheTtlMs`, default 5 s, on every node; at once in the process that made them). A key's `last_used_at` (api_keys.list) is
 * written at most once per `lastUsedGrainMs` (default 60 s) per key and process, after the call
 * that used it and outside its transaction: it is accurate to that grain.
 */
export class Tenants {
  readonly #store: Store;
  readonly #logger: Logger | undefined;
  readonly #keys = new Map<string, CachedKey>();
  /**
   * Presented keys whose secret matched, each with the key entry it matched (at most
   * VERIFIED_KEYS_MAX, oldest dropped first). A hit counts only while that entry is still the
   * one in #keys: a revocation, invalidate() or the TTL reload replaces or drops it, and the next
   * call hashes the secret again. Only a key that verified gets here, so a guessed secret never
   * meets a stored one in a comparison (the Map matches whole strings, by their hash first).
   */
  readonly #verified = new Map<string, CachedKey>();
  readonly #tenants = new Map<number, CachedTenant>();
  /** Per key id: when this process last wrote its last_used_at (ms since the epoch). */
  readonly #usedWritten = new Map<string, number>();
  /** last_used_at writes in flight (awaited by flushKeyUse). */
  readonly #usePending = new Set<Promise<void>>();
  cacheTtlMs = 5000;
  lastUsedGrainMs = 60_000;
  #bearer: BearerAuthenticator | undefined;

  /**
   * Accept a second kind of bearer token (OAuth access tokens, src/oauth): `authenticate` hands
   * it every presented credential that does not start with `sk_solid_`. One per runtime; a later
   * call replaces the earlier one.
   */
  useBearer(bearer: BearerAuthenticator | undefined): void {
    this.#bearer = bearer;
  }

  /** The installed bearer authenticator (OAuth), if any. */
  get bearer(): BearerAuthenticator | undefined {
    return this.#bearer;
  }

  /** The runtime's clock (key expiry); set by the runtime, default the system clock. */
  #now: () => Date = () => new Date();

  constructor(store: Store, logger?: Logger, clock?: () => Date) {
    this.#store = store;
    this.#logger = logger;
    if (clock !== undefined) this.#now = clock;
  }

  /**
   * Record that `keyId` authenticated now, unless this process recorded it less than
   * `lastUsedGrainMs` ago: one UPDATE of api_keys.last_used_at (never moved backwards), in its
   * own transaction, not awaited by the call. A failure is logged, never thrown (the call it
   * follows has already been authenticated).
   */
  #noteUse(keyId: string): void {
    const now = Date.now();
    const last = this.#usedWritten.get(keyId);
    if (last !== undefined && now - last < this.lastUsedGrainMs) return;
    this.#usedWritten.set(keyId, now);
    const at = new Date(now).toISOString();
    const p: Promise<void> = this.#store
      .write(async (tx) => {
        await tx.run(
          'UPDATE api_keys SET last_used_at = ? WHERE key_id = ? AND (last_used_at IS NULL OR last_used_at < ?)',
          [at, keyId, at],
        );
      })
      .catch((err: unknown) => this.#logger?.warn({ err, key_id: keyId }, 'could not record the key use'))
      .finally(() => this.#usePending.delete(p));
    this.#usePending.add(p);
  }

  /** Wait for the last_used_at writes in flight (runtime close, tests). Never throws. */
  async flushKeyUse(): Promise<void> {
    while (this.#usePending.size > 0) await Promise.all(this.#usePending);
  }

  /** A tenant by id (cached). Undefined when absent. */
  async get(companyId: number): Promise<Tenant | undefined> {
    const c = this.#tenants.get(companyId);
    if (c !== undefined && Date.now() - c.loadedAt < this.cacheTtlMs) return c.tenant;
    const row = await this.#store.read((q) =>
      q.get<Record<string, unknown>>('SELECT * FROM tenants WHERE company_id = ?', [companyId]),
    );
    if (row === undefined) {
      this.#tenants.delete(companyId);
      return undefined;
    }
    const tenant = tenantOfRow(row);
    this.#tenants.set(companyId, { tenant, loadedAt: Date.now() });
    return tenant;
  }

  /**
   * The cached tenant when the cache holds it fresh (no store read, no await): the hot path's
   * suspension check (steps/resolve-principal.ts) asks this first and falls back to {@link get}.
   */
  peek(companyId: number): Tenant | undefined {
    const c = this.#tenants.get(companyId);
    return c !== undefined && Date.now() - c.loadedAt < this.cacheTtlMs ? c.tenant : undefined;
  }

  /** Forget cached facts (after an update in this process). */
  invalidate(): void {
    this.#keys.clear();
    this.#verified.clear();
    this.#tenants.clear();
  }

  /**
   * Resolve an API key to its principal. Throws VerbError auth_invalid for a malformed, unknown,
   * wrong or revoked key (the message never says which, to avoid an oracle).
   */
  async authenticate(apiKey: unknown, agentType?: string): Promise<Principal> {
    // The hot path: this exact key verified before, and its entry is still the live one (not
    // revoked, reloaded or invalidated since): no parse, no hash. Expiry is checked every call.
    const hit = typeof apiKey === 'string' ? this.#verified.get(apiKey) : undefined;
    if (hit !== undefined) {
      if (this.#keys.get(hit.keyId) === hit && !hit.revoked && Date.now() - hit.loadedAt < this.cacheTtlMs)
        return this.#accept(hit, agentType);
      this.#verified.delete(apiKey as string);
    }
    const parsed = parseApiKey(apiKey);
    const invalid = refuse.authInvalid;
    if (typeof apiKey === 'string' && apiKey.startsWith(PLATFORM_KEY_PREFIX))
      // A platform credential provisions tenants; it never acts inside one (spec/platform.md §credential).
      throw new VerbError(
        'platform_credential_required',
        "A platform credential acts only on provisioning, never on a tenant's verbs.",
        {
          hint: "Use one of the tenant's API keys (platform.api_keys.create provisions one, role at most admin).",
        },
      );
    if (
      parsed === undefined &&
      this.#bearer !== undefined &&
      typeof apiKey === 'string' &&
      !apiKey.startsWith(API_KEY_PREFIX) &&
      apiKey.length <= 4096
    )
      return this.#bearer.authenticate(apiKey);
    if (parsed === undefined) throw invalid();
    let c = this.#keys.get(parsed.keyId);
    if (c === undefined || Date.now() - c.loadedAt >= this.cacheTtlMs) {
      const row = await this.#store.read((q) =>
        q.get<Record<string, unknown>>(
          'SELECT k.key_id, k.company_id, k.user_id, k.role, k.agent_type, k.secret_hash, k.revoked_at, k.scope, k.expires_at, t.tier FROM api_keys k JOIN tenants t ON t.company_id = k.company_id WHERE k.key_id = ?',
          [parsed.keyId],
        ),
      );
      if (row === undefined) {
        this.#keys.delete(parsed.keyId);
        throw invalid();
      }
      const scope = scopeOfRow(row.scope, row.expires_at);
      c = {
        keyId: parsed.keyId,
        hash: Buffer.from(row.secret_hash as string, 'hex'),
        revoked: row.revoked_at !== null && row.revoked_at !== undefined,
        principal: agentPrincipal({
          company_id: Number(row.company_id),
          user_id: Number(row.user_id),
          role: row.role as Role,
          tier: row.tier as Tier,
          agent_type: row.agent_type as string,
          key_id: row.key_id as string,
          ...(scope !== undefined ? { scope } : {}),
        }),
        loadedAt: Date.now(),
      };
      this.#keys.set(parsed.keyId, c);
    }
    const given = sha256Bytes(parsed.secret);
    if (c.revoked || given.length !== c.hash.length || !timingSafeEqual(given, c.hash)) {
      // The key id exists: the refusal belongs in that tenant's audit log (the caller learns nothing more).
      const err = invalid();
      err.keyAttribution = { company_id: c.principal.company_id, key_id: parsed.keyId, revoked: c.revoked };
      throw err;
    }
    if (this.#verified.size >= VERIFIED_KEYS_MAX) this.#verified.delete(this.#verified.keys().next().value!);
    this.#verified.set(apiKey as string, c);
    return this.#accept(c, agentType);
  }

  /** The principal of a key whose secret matched: refused when expired, its use noted. */
  #accept(c: CachedKey, agentType: string | undefined): Principal {
    const expiresAt = c.principal.scope?.expires_at;
    if (expiresAt !== undefined && Date.parse(expiresAt) <= this.#now().getTime()) {
      // The right secret: saying "expired" reveals nothing the holder does not know.
      const err = new VerbError('key_expired', `This API key expired at ${expiresAt}.`, {
        hint: 'Ask an owner for a new key (solid api-keys create, or api_keys.create); an expired key cannot be renewed.',
      });
      err.keyAttribution = {
        company_id: c.principal.company_id,
        key_id: c.keyId,
        revoked: false,
        expired: true,
      };
      throw err;
    }
    this.#noteUse(c.keyId);
    return agentType === undefined ? c.principal : { ...c.principal, agent_type: agentType };
  }

  /** The key id part of a presented key, when well-formed (never a secret). */
  keyIdOf(apiKey: unknown): string | undefined {
    return parseApiKey(apiKey)?.keyId;
  }

  /** List a tenant's keys (never secrets). */
  async listKeys(q: Queryable, companyId: number): Promise<ApiKeyInfo[]> {
    const rows = await q.all<Record<string, unknown>>(
      'SELECT key_id, company_id, user_id, role, agent_type, name, created_at, revoked_at, scope, expires_at FROM api_keys WHERE company_id = ? ORDER BY created_at, key_id',
      [companyId],
    );
    return rows.map(
      (r) =>
        ({
          ...r,
          company_id: Number(r.company_id),
          user_id: Number(r.user_id),
          scope: storedScope(parseJson<CredentialScope>(r.scope) ?? undefined),
          expires_at: (r.expires_at as string | null) ?? null,
        }) as ApiKeyInfo,
    );
  }

  /** Revoke a key of a tenant. Returns false when no such key. */
  async revokeKey(q: Queryable, companyId: number, keyId: string, now: Date): Promise<boolean> {
    const r = await q.run(
      'UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND company_id = ? AND revoked_at IS NULL',
      [now.toISOString(), keyId, companyId],
    );
    this.#keys.delete(keyId);
    return r.changes > 0;
  }
}
