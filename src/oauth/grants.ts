/**
 * Grants as objects (table `oauth_grants`): a signed-in human of a tenant let one OAuth client
 * act for the tenant, up to a role (never above the human's own), read-only or not, limited or
 * not to some toolsets or verbs, until an expiry. Every access and refresh token the authorization server issues belongs to one grant
 * (oidc-provider's grant id); a token is honoured only while its grant is live, and the principal
 * it yields is recomputed at each use from the grant and the human's current role
 * ({@link grantPrincipalRole}): a grant is never more than the human who made it, now.
 *
 * Revocation ({@link revokeGrant}) marks the row and deletes the grant's tokens and codes in the
 * same transaction; every node reads the same store and checks the row at every use, so a revoked
 * grant stops working on every node at its next request (bound: 0 s; spec/oauth.md §grants).
 */
import type { Queryable, Store, StoreTx } from '../store/store.ts';
import { ROLES, type Role } from '../spec/types.ts';
import type { TransportRuntime as Runtime } from '../transports/runtime-surface.ts';
import type { AuditRow } from '../runtime/ledger/write/audit.ts';
import { appendHumanAudit } from '../identity/human-audit.ts';

/** One grant, as listed (`solid grants list`, `GET /api/v1/oauth/grants`). */
export interface Grant {
  grant_id: string;
  company_id: number;
  /** The human who consented. */
  user_id: number;
  user_name: string;
  client_id: string;
  /** The client's own name (client_name of its registration), which audit rows name. */
  client_name: string;
  /** The highest role the agent acts with (the human's role at use time caps it further). */
  role: Role;
  /** Reads only, whatever the role. */
  read_only: boolean;
  /**
   * The toolsets and/or verbs the agent may reach (CredentialScope's allow-list, decided by the
   * pipeline's scope step like an API key's); null: everything the role reaches.
   */
  scope: GrantScope | null;
  /** The resource (audience) the tokens are for. */
  resource: string;
  created_at: string;
  /** ISO 8601: the grant and every token of it end then. */
  expires_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

/** A grant's allow-list: verb names and/or toolsets (verb categories); a verb either names is reachable. */
export interface GrantScope {
  verbs?: readonly string[];
  toolsets?: readonly string[];
}

function scopeOfColumn(v: unknown): GrantScope | null {
  if (typeof v !== 'string' || v === '') return null;
  const s = JSON.parse(v) as GrantScope;
  const out: GrantScope = {};
  if (Array.isArray(s.verbs)) out.verbs = s.verbs.map(String);
  if (Array.isArray(s.toolsets)) out.toolsets = s.toolsets.map(String);
  return out.verbs === undefined && out.toolsets === undefined ? null : out;
}

/**
 * The lifetime (seconds) the human chose for a grant being saved, read by the provider's
 * `ttl.Grant` (provider.ts): keyed by oidc-provider's Grant instance.
 */
export const grantTtlSeconds = new WeakMap<object, number>();

/** Grant expiries a human may pick on the consent screen, in days. */
export const GRANT_EXPIRY_DAYS = [1, 7, 30, 90] as const;

const rank = (r: Role) => ROLES.indexOf(r);

/** The lower of two roles. */
export function lowerRole(a: Role, b: Role): Role {
  return rank(a) <= rank(b) ? a : b;
}

/**
 * The role a grant's agent acts with now: the grant's role, capped by the human's current role,
 * and `read_only` when the grant is read-only. Undefined when the human can no longer act (no
 * such user, disabled).
 */
export function grantPrincipalRole(
  grant: Pick<Grant, 'role' | 'read_only'>,
  human: { role: Role; status: string } | undefined,
): Role | undefined {
  if (human === undefined || human.status === 'disabled') return undefined;
  if (grant.read_only) return 'read_only';
  return lowerRole(grant.role, human.role);
}

function rowOf(r: Record<string, unknown>): Grant {
  return {
    grant_id: String(r.grant_id),
    company_id: Number(r.company_id),
    user_id: Number(r.user_id),
    user_name: String(r.user_name),
    client_id: String(r.client_id),
    client_name: String(r.client_name),
    role: r.role as Role,
    read_only: Number(r.read_only) === 1,
    scope: scopeOfColumn(r.scope),
    resource: String(r.resource),
    created_at: String(r.created_at),
    expires_at: String(r.expires_at),
    revoked_at: r.revoked_at === null || r.revoked_at === undefined ? null : String(r.revoked_at),
    last_used_at: r.last_used_at === null || r.last_used_at === undefined ? null : String(r.last_used_at),
  };
}

/** Record a new grant (the consent screen's POST). */
export async function insertGrant(
  q: Queryable,
  g: Omit<Grant, 'revoked_at' | 'last_used_at' | 'scope'> & { scope?: GrantScope | null },
): Promise<void> {
  await q.run(
    `INSERT INTO oauth_grants (grant_id, company_id, user_id, user_name, client_id, client_name, role, read_only, scope, resource, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      g.grant_id,
      g.company_id,
      g.user_id,
      g.user_name,
      g.client_id,
      g.client_name,
      g.role,
      g.read_only ? 1 : 0,
      g.scope === undefined || g.scope === null ? null : JSON.stringify(g.scope),
      g.resource,
      g.created_at,
      g.expires_at,
    ],
  );
}

/**
 * Keep a grant's client registered at least until the grant ends (plus a day): an ungranted
 * client expires (adapter.ts UNGRANTED_CLIENT_TTL_MS), a granted one lives as long as its grants.
 */
export async function keepClientFor(q: Queryable, clientId: string, grantExpiresAt: string): Promise<void> {
  const until = Date.parse(grantExpiresAt) + 86_400_000;
  await q.run(
    `UPDATE oauth_models SET expires_at = ? WHERE model = 'Client' AND id = ? AND expires_at IS NOT NULL AND expires_at < ?`,
    [until, clientId, until],
  );
}

/** One grant by id, or undefined. */
export async function getGrant(q: Queryable, grantId: string): Promise<Grant | undefined> {
  const r = await q.get<Record<string, unknown>>('SELECT * FROM oauth_grants WHERE grant_id = ?', [grantId]);
  return r === undefined ? undefined : rowOf(r);
}

/** A tenant's grants, newest first (revoked and expired ones included: they are history). */
export async function listGrants(q: Queryable, companyId: number): Promise<Grant[]> {
  const rows = await q.all<Record<string, unknown>>(
    'SELECT * FROM oauth_grants WHERE company_id = ? ORDER BY created_at DESC, grant_id',
    [companyId],
  );
  return rows.map(rowOf);
}

/**
 * Revoke a tenant's grant: mark it and delete its tokens and codes (oauth_models rows of the
 * grant), in one transaction. Returns the grant as it is now and whether this call revoked it, or
 * undefined when the tenant has no such grant. Revoking a revoked grant changes nothing.
 */
export async function revokeGrant(
  store: Store,
  companyId: number,
  grantId: string,
  now: Date,
  /** Written in the same transaction when this call revokes the grant (its audit row). */
  onRevoked?: (tx: StoreTx, g: Grant) => Promise<void>,
): Promise<{ grant: Grant; changed: boolean } | undefined> {
  return store.write(async (tx) => {
    const g = await getGrant(tx, grantId);
    if (g === undefined || g.company_id !== companyId) return undefined;
    if (g.revoked_at !== null) return { grant: g, changed: false };
    const at = now.toISOString();
    await tx.run('UPDATE oauth_grants SET revoked_at = ? WHERE grant_id = ?', [at, grantId]);
    await tx.run('DELETE FROM oauth_models WHERE grant_id = ?', [grantId]);
    await tx.run(`DELETE FROM oauth_models WHERE model = 'Grant' AND id = ?`, [grantId]);
    const revoked = { ...g, revoked_at: at };
    if (onRevoked !== undefined) await onRevoked(tx, revoked);
    return { grant: revoked, changed: true };
  });
}

/** Is the grant live at `now` (not revoked, not expired)? */
export function grantLive(g: Grant, now: Date): boolean {
  return g.revoked_at === null && Date.parse(g.expires_at) > now.getTime();
}

/**
 * Revoke a grant and write its `oauth.revoke` audit row (the actor: a signed-in human, or the
 * operator at the CLI when `actor` is undefined). Returns the grant, or undefined when the tenant
 * has no such grant. spec/oauth.md §grants
 */
export async function revokeAndAudit(
  rt: Pick<Runtime, 'store' | 'clock' | 'afterWrite'>,
  companyId: number,
  grantId: string,
  actor: { user_id: number; role: string } | undefined,
  agentType: string,
): Promise<Grant | undefined> {
  const now = rt.clock();
  const rows: AuditRow[] = [];
  const done = await revokeGrant(rt.store, companyId, grantId, now, async (tx, g) => {
    rows.push(
      await appendHumanAudit(tx, {
        company_id: companyId,
        action: 'oauth.revoke',
        status: 'completed',
        actor,
        agent_type: agentType,
        request_data: { grant_id: g.grant_id, client_name: g.client_name },
        subject_user_id: g.user_id,
        now,
      }),
    );
  });
  for (const row of rows) rt.afterWrite(row);
  if (done === undefined) return undefined;
  const g = done.grant;
  return g;
}
