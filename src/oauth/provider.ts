/**
 * The built-in authorization server: oidc-provider configured for OAuth 2.1 as the MCP
 * authorization specification asks (spec/oauth.md §authorization-server). We write none of the
 * protocol or the cryptography; this module only configures the library:
 *
 *   - authorization code + PKCE (S256, the only method oidc-provider 9 implements), required for
 *     every client; no implicit or hybrid flows, no device or CIBA flows
 *   - RFC 7591 dynamic registration (open: a hosted connector registers itself), RFC 7009
 *     revocation, RFC 8414 metadata (served by plugin.ts under both well-known names)
 *   - RFC 8707 resource indicators: a token is issued only for this server's own resources
 *     ({@link OAuthResources}), opaque, stored through our Store (adapter.ts), so the resource
 *     server checks each use against the store (revocation is immediate on every node)
 *   - refresh tokens for every client allowed the refresh_token grant, rotated on each use
 *   - consent always asked of a signed-in human (consent.ts); never remembered across requests
 *
 * Keys: the ES256 signing key (JWKS) is made once with `jose`, stored encrypted under the
 * runtime's master key; the cookie keys are derived from the runtime's secrets, so every node of
 * one deployment agrees on both.
 */
import Provider, { type Configuration, errors } from 'oidc-provider';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import type { TransportRuntime as Runtime } from '../transports/runtime-surface.ts';
import { storeAdapter } from './adapter.ts';
import { grantTtlSeconds } from './grants.ts';

/** The scopes a client may ask for; the human's choices on the consent screen decide what they mean. */
export const OAUTH_SCOPES = ['solid:read', 'solid:write'] as const;

/** Lifetimes, in seconds. */
export const OAUTH_TTL = {
  AccessToken: 3600,
  AuthorizationCode: 60,
  RefreshToken: 30 * 86_400,
  Interaction: 600,
  Session: 600,
  Grant: 90 * 86_400,
} as const;

/** Where the authorization server's endpoints live (under the issuer, which is the server's origin). */
export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  end_session: '/oauth/session/end',
  userinfo: '/oauth/userinfo',
  introspection: '/oauth/introspect',
  pushed_authorization_request: '/oauth/par',
  code_verification: '/oauth/device',
  device_authorization: '/oauth/device/auth',
  backchannel_authentication: '/oauth/backchannel',
  challenge: '/oauth/challenge',
  credential: '/oauth/credential',
} as const;

/** The consent page's path for an interaction uid (consent.ts). */
export const consentPath = (uid: string): string => `/oauth/consent/${encodeURIComponent(uid)}`;

/**
 * This server's resources (RFC 8707 resource indicators / token audiences): its origin (covering
 * `/mcp` and `/api/v1`) and `<origin>/mcp`, for each origin the server is reached at.
 */
export class OAuthResources {
  readonly #origins: Set<string>;
  readonly primary: string;
  constructor(issuer: string, otherOrigins: readonly string[]) {
    this.primary = new URL(issuer).origin;
    this.#origins = new Set([this.primary, ...otherOrigins.map((o) => new URL(o).origin)]);
  }
  /** Is `resource` one of ours? Only `<origin>/` and `<origin>/mcp`, no query or fragment. */
  has(resource: string): boolean {
    let u: URL;
    try {
      u = new URL(resource);
    } catch {
      return false;
    }
    return (
      this.#origins.has(u.origin) &&
      (u.pathname === '/' || u.pathname === '/mcp') &&
      u.search === '' &&
      u.hash === ''
    );
  }
}

async function signingJwk(rt: Runtime): Promise<JWK> {
  const found = await rt.store.read((q) =>
    q.get<{ payload: string }>(`SELECT payload FROM oauth_models WHERE model = 'ServerKey' AND id = 'es256'`),
  );
  if (found !== undefined) return JSON.parse(rt.secrets.decrypt(found.payload, 'oauth:es256')) as JWK;
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = {
    ...(await exportJWK(privateKey)),
    alg: 'ES256',
    use: 'sig',
    kid: `oauth-${Date.now().toString(36)}`,
  };
  const sealed = rt.secrets.encrypt(JSON.stringify(jwk), 'oauth:es256');
  await rt.store.write((tx) =>
    tx.run(
      `INSERT INTO oauth_models (model, id, payload, expires_at) VALUES ('ServerKey', 'es256', ?, NULL) ON CONFLICT (model, id) DO NOTHING`,
      [sealed],
    ),
  );
  // Another node may have won the race: use the stored key.
  const row = await rt.store.read((q) =>
    q.get<{ payload: string }>(`SELECT payload FROM oauth_models WHERE model = 'ServerKey' AND id = 'es256'`),
  );
  return JSON.parse(rt.secrets.decrypt(row!.payload, 'oauth:es256')) as JWK;
}

/** Options of {@link createProvider}. */
export interface ProviderOptions {
  /** The issuer: the server's public origin (`https://solid.example`), no path. */
  issuer: string;
  resources: OAuthResources;
  /** Behind a trusted proxy (X-Forwarded-Proto decides https). */
  proxy?: boolean;
}

/** Build the oidc-provider instance for `rt` (scope `oauth` migrated first). */
export async function createProvider(rt: Runtime, options: ProviderOptions): Promise<Provider> {
  const jwk = await signingJwk(rt);
  const { resources } = options;
  const config: Configuration = {
    adapter: storeAdapter(rt.store, () => rt.clock().getTime()),
    clients: [],
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    scopes: [...OAUTH_SCOPES, 'offline_access'],
    claims: { openid: ['sub'] },
    responseTypes: ['code'],
    pkce: { required: () => true },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'ES256',
    },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      revocation: { enabled: true },
      userinfo: { enabled: false },
      introspection: { enabled: false },
      // Client ID metadata documents: the client id is an https URL of the client's metadata,
      // fetched by oidc-provider (https only, no redirects, 2.5 s, 5 KiB, connections to
      // special-use addresses dropped); we also refuse IP literals and localhost names before
      // any fetch. spec/oauth.md §authorization-server
      clientIdMetadataDocument: {
        enabled: true,
        ack: 'draft-02',
        allowFetch: (_ctx, clientId) => metadataUrlAllowed(clientId),
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resources.primary + '/',
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          if (!resources.has(resource))
            throw new errors.InvalidTarget('this server issues tokens only for its own resources');
          return {
            scope: OAUTH_SCOPES.join(' '),
            audience: resource,
            accessTokenTTL: OAUTH_TTL.AccessToken,
            accessTokenFormat: 'opaque',
          };
        },
      },
    },
    interactions: { url: (_ctx, interaction) => consentPath(interaction.uid) },
    // Consent is asked every time: only the grant the human just made on the consent screen
    // counts, never one remembered in the provider's session.
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId;
      return typeof grantId === 'string' ? ctx.oidc.provider.Grant.find(grantId) : undefined;
    },
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    routes: OAUTH_ROUTES,
    ttl: { ...OAUTH_TTL, Grant: (_ctx, grant) => grantTtlSeconds.get(grant) ?? OAUTH_TTL.Grant },
    cookies: {
      keys: [rt.secrets.mac('session', 'oauth-provider-cookies')],
      long: { signed: true, httpOnly: true, sameSite: 'lax' },
      short: { signed: true, httpOnly: true, sameSite: 'lax' },
    },
    jwks: { keys: [jwk as never] },
    renderError: (ctx, out) => {
      ctx.type = 'html';
      ctx.body = `<!doctype html><meta charset="utf-8"><title>Authorization error</title><h1>Authorization error</h1><p>${escapeHtml(String(out.error))}: ${escapeHtml(String(out.error_description ?? ''))}</p>`;
    },
  };
  const provider = new Provider(options.issuer, config);
  if (options.proxy === true) provider.proxy = true;
  return provider;
}

/**
 * May the authorization server fetch this client ID metadata document URL? Only an https URL
 * whose host is a DNS name (not an IP literal, not `localhost` or a `.localhost`/`.local`/
 * `.internal` name). The library refuses special-use addresses the name resolves to.
 */
export function metadataUrlAllowed(clientId: string): boolean {
  let u: URL;
  try {
    u = new URL(clientId);
  } catch {
    return false;
  }
  const host = u.hostname.toLowerCase().replace(/\.$/, '');
  if (u.protocol !== 'https:' || host === '' || host.startsWith('[') || /^[0-9.]+$/.test(host)) return false;
  if (host === 'localhost' || /\.(localhost|local|internal)$/.test(host) || !host.includes('.')) return false;
  return u.port === '' || u.port === '443';
}

/** HTML-escape text for the pages this room renders. */
export function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}
