/**
 * The resource-server side (spec/oauth.md §resource-server): the RFC 9728 protected-resource
 * metadata, and the bearer authenticator the runtime asks for any bearer credential that is not
 * an `sk_solid_` key (`rt.tenants.useBearer`).
 *
 * A token is honoured only when, at this use:
 *   - it is an access token this server's authorization server stored (opaque, looked up in the
 *     store: a revoked grant's tokens are gone on every node), not expired;
 *   - its audience is one of this server's resources (RFC 8707; OAuthResources);
 *   - its grant is live (not revoked, not expired) and the human who made it is still an active
 *     user of the tenant.
 * The principal is an **agent** (identity's `agentPrincipal`): the grant's tenant, the human's
 * user id, the role the grant allows now (grants.ts `grantPrincipalRole`), `agent_type`
 * `oauth:<client name>` and `key_id` `grant:<grant id>`, which audit rows carry, and the grant's
 * toolset/verb allow-list as its `scope` (the same pipeline step as an API key's). It can never
 * approve, type a phrase that counts, change consent settings or open a session: identity's
 * `mayConsent` answers no for every agent.
 *
 * With a trusted external issuer (an enterprise IdP, external.ts), a JWT-shaped token is verified
 * against that issuer instead (RFC 9068); it too yields an agent principal.
 *
 * Every refusal is the runtime's audited `auth_invalid` (the caller's 401 carries
 * `WWW-Authenticate: Bearer error="invalid_token", resource_metadata="…"`); a token naming a
 * grant that has ended also leaves a row in that grant's tenant.
 */
import type { CredentialScope, Principal } from '../spec/types.ts';
import type { BearerAuthenticator } from '../runtime/tenants.ts';
import type { TransportRuntime as Runtime } from '../transports/runtime-surface.ts';
import { VerbError } from '../runtime/errors.ts';
import { agentPrincipal } from '../identity/principal.ts';
import { getUser } from '../identity/users.ts';
import { storeAdapter, type OAuthModelAdapter } from './adapter.ts';
import { getGrant, grantLive, grantPrincipalRole, type GrantScope } from './grants.ts';
import { OAUTH_SCOPES, type OAuthResources } from './provider.ts';
import { looksLikeJwt, type ExternalIssuer } from './external.ts';

/** The well-known path of the protected-resource metadata (RFC 9728 §3). */
export const PRM_PATH = '/.well-known/oauth-protected-resource';

/**
 * The RFC 9728 metadata document for `resource` (`<origin>/` or `<origin>/mcp`), naming
 * `issuer` as its authorization server (the built-in one, or the trusted external issuer).
 */
export function protectedResourceMetadata(resource: string, issuer: string): Record<string, unknown> {
  return {
    resource,
    authorization_servers: [issuer],
    scopes_supported: [...OAUTH_SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'solid-verbs',
  };
}

/** A grant's allow-list as the principal's CredentialScope (the pipeline's scope step decides). */
function grantScope(g: GrantScope): CredentialScope {
  return {
    ...(g.verbs !== undefined ? { verbs: [...g.verbs] } : {}),
    ...(g.toolsets !== undefined ? { toolsets: [...g.toolsets] } : {}),
  };
}

function tokenInvalid(message: string): VerbError {
  return new VerbError('auth_invalid', message, {
    hint: 'Obtain a new token: run the OAuth authorization again (the owner may have revoked the grant), or use an API key (sk_solid_…).',
  });
}

/** Options of {@link OAuthBearer}. */
export interface OAuthBearerOptions {
  /** This server's resources, once known (the issuer is fixed at the first OAuth request). */
  resources: () => OAuthResources | undefined;
  /** Keyless requests to /mcp keep the sandbox (see BearerAuthenticator.keylessSandbox). */
  keylessSandbox: boolean;
  /** A trusted external issuer: JWT-shaped tokens are verified against it (external.ts). */
  external?: ExternalIssuer;
}

/** The bearer authenticator for OAuth access tokens (see the header). */
export class OAuthBearer implements BearerAuthenticator {
  readonly #rt: Runtime;
  readonly #tokens: OAuthModelAdapter;
  readonly #options: OAuthBearerOptions;
  readonly keylessSandbox: boolean;

  constructor(rt: Runtime, options: OAuthBearerOptions) {
    this.#rt = rt;
    this.#options = options;
    this.keylessSandbox = options.keylessSandbox;
    const Adapter = storeAdapter(rt.store, () => rt.clock().getTime());
    this.#tokens = new Adapter('AccessToken');
  }

  /** `<origin>/.well-known/oauth-protected-resource[/mcp]` for a request path. */
  resourceMetadataUrl(origin: string, path: string): string {
    return `${origin}${PRM_PATH}${path.startsWith('/mcp') ? '/mcp' : ''}`;
  }

  /**
   * Resolve an access token to its agent principal.
   * @throws VerbError auth_invalid — unknown, expired, foreign audience, grant revoked or expired,
   *   the human gone or disabled
   */
  async authenticate(token: string): Promise<Principal> {
    const external = this.#options.external;
    if (external !== undefined && looksLikeJwt(token))
      return external.authenticate(token, this.#options.resources());
    const at = await this.#tokens.find(token);
    const nowMs = this.#rt.clock().getTime();
    if (at === undefined || at.kind !== 'AccessToken' || typeof at.grantId !== 'string')
      throw tokenInvalid('The access token is not valid (unknown, expired, or its grant was revoked).');
    if (typeof at.exp !== 'number' || at.exp * 1000 <= nowMs)
      throw tokenInvalid('The access token has expired.');
    const grant = await this.#rt.store.read((q) => getGrant(q, at.grantId as string));
    const attribute = (err: VerbError, revoked: boolean): VerbError => {
      if (grant !== undefined)
        err.keyAttribution = { company_id: grant.company_id, key_id: `grant:${grant.grant_id}`, revoked };
      return err;
    };
    const resources = this.#options.resources();
    const aud = Array.isArray(at.aud) ? (at.aud as unknown[]) : [at.aud];
    if (resources === undefined || !aud.some((a) => typeof a === 'string' && resources.has(a)))
      throw attribute(tokenInvalid('The access token was issued for another resource (audience).'), false);
    if (grant === undefined || !grantLive(grant, new Date(nowMs)))
      throw attribute(
        tokenInvalid(
          grant?.revoked_at != null
            ? 'The grant of this token was revoked.'
            : 'The grant of this token has ended.',
        ),
        grant?.revoked_at != null,
      );
    const human = await this.#rt.store.read((q) => getUser(q, grant.company_id, grant.user_id));
    const role = grantPrincipalRole(grant, human);
    if (role === undefined)
      throw attribute(
        tokenInvalid('The person who made this grant can no longer act for the tenant.'),
        false,
      );
    const tenant = await this.#rt.tenants.get(grant.company_id);
    if (tenant === undefined)
      throw attribute(tokenInvalid('The tenant of this grant no longer exists.'), false);
    return agentPrincipal({
      company_id: grant.company_id,
      user_id: grant.user_id,
      role,
      tier: tenant.tier,
      agent_type: `oauth:${grant.client_name}`.slice(0, 120),
      key_id: `grant:${grant.grant_id}`,
      ...(grant.scope !== null ? { scope: grantScope(grant.scope) } : {}),
    });
  }
}
