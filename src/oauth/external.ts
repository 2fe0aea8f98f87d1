/**
 * Trusting an external authorization server (an enterprise IdP) — spec/oauth.md §external-issuer.
 * The operator names its issuer (`solid serve --oauth-issuer https://idp.example`,
 * `SOLID_OAUTH_ISSUER`, or `createOAuthPlugin({ externalIssuer })`); this server then:
 *
 *   - fetches the issuer's RFC 8414 metadata (`/.well-known/oauth-authorization-server`, else the
 *     OpenID `/.well-known/openid-configuration`; the path-inserted form for an issuer with a
 *     path), within `timeoutMs` and `maxBytes`, no redirects; its `issuer` must equal the
 *     configured one exactly and it must name a `jwks_uri` on https (or loopback http);
 *   - verifies JWT access tokens (RFC 9068 profile) with jose: `typ` `at+jwt`, an asymmetric
 *     signature by a key of the issuer's JWKS (`createRemoteJWKSet`, same time and size limits;
 *     `alg: none` and HMAC are refused), `iss` = the issuer, `aud` naming one of this server's
 *     resources (`<origin>/` or `<origin>/mcp`), `exp` in the future, `sub` present;
 *   - maps claims to who acts (documented, configurable names): `solid_tenant` (the tenant id;
 *     default: the configured `tenant`), `solid_user` (the user id in that tenant, who must be a
 *     user and not disabled), `solid_role` (optional: the highest role, never above the user's
 *     role now); a `scope` claim with `solid:read` and without `solid:write` makes the principal
 *     read-only.
 *
 * Such a token is always an **agent** principal (a token is held by an agent): `agent_type`
 * `oauth-idp:<client_id>`, `key_id` `idp:<sub>`. It can never approve, type a phrase that counts,
 * change consent settings, open a human session or mint keys. Every refusal is `auth_invalid`
 * (401 `invalid_token`, audited by the runtime in the sandbox tenant, and in the mapped tenant
 * when the token's signature held but the mapping failed).
 */
import {
  createRemoteJWKSet,
  customFetch,
  errors as joseErrors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { Principal, Role } from '../spec/types.ts';
import { ROLES } from '../spec/types.ts';
import type { TransportRuntime as Runtime } from '../transports/runtime-surface.ts';
import { VerbError } from '../runtime/errors.ts';
import { agentPrincipal } from '../identity/principal.ts';
import { getUser } from '../identity/users.ts';
import { lowerRole } from './grants.ts';
import type { OAuthResources } from './provider.ts';

/** Which claims name the tenant, the user and the role (defaults: solid_tenant, solid_user, solid_role). */
export interface ExternalClaimNames {
  tenant?: string;
  user?: string;
  role?: string;
}

/** Options of an external issuer (createOAuthPlugin's `externalIssuer`). */
export interface ExternalIssuerOptions {
  /** The issuer identifier, exactly as the IdP's metadata states it (https; http on loopback only). */
  issuer: string;
  /** The tenant of a token without a tenant claim. */
  tenant?: number;
  claims?: ExternalClaimNames;
  /** Fetch deadline for the metadata and the JWKS, ms (default 5000). */
  timeoutMs?: number;
  /** Largest metadata or JWKS document accepted, bytes (default 65536). */
  maxBytes?: number;
}

/** The algorithms a token may be signed with: asymmetric only (no `none`, no HMAC). */
export const EXTERNAL_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
];

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Check an issuer URL an operator configured: https, or http on a loopback host; no query or
 * fragment. Returns it unchanged. @throws VerbError invalid_input naming what is wrong.
 */
export function checkIssuerUrl(issuer: string): string {
  let u: URL;
  try {
    u = new URL(issuer);
  } catch {
    throw new VerbError(
      'invalid_input',
      `The OAuth issuer ${JSON.stringify(issuer.slice(0, 200))} is not a URL.`,
      {
        hint: 'Give the issuer identifier exactly as the IdP publishes it, e.g. https://login.example.com/tenant-id/v2.0.',
      },
    );
  }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && LOOPBACK.has(u.hostname)))
    throw new VerbError('invalid_input', `The OAuth issuer ${u.href} is not https.`, {
      hint: 'An external issuer must be https (http only on localhost, for tests).',
    });
  if (u.search !== '' || u.hash !== '')
    throw new VerbError('invalid_input', 'The OAuth issuer has a query or a fragment.', {
      hint: 'RFC 8414 §2: an issuer is https://host[/path] with neither.',
    });
  return issuer;
}

/** The RFC 8414 §3 / OpenID discovery URLs of an issuer, in the order tried. */
export function metadataUrls(issuer: string): string[] {
  const u = new URL(issuer);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/$/, '');
  return [
    `${u.origin}/.well-known/oauth-authorization-server${path}`,
    `${u.origin}${path}/.well-known/openid-configuration`,
  ];
}

/** fetch with no redirects, a deadline and a size cap; the body as text (undefined on a non-200). */
async function limitedFetch(
  url: string,
  opts: { timeoutMs: number; maxBytes: number; signal?: AbortSignal; headers?: Headers },
): Promise<{ status: number; text: string | undefined }> {
  const signal = opts.signal ?? AbortSignal.timeout(opts.timeoutMs);
  const res = await fetch(url, {
    redirect: 'manual',
    signal,
    headers: opts.headers ?? { accept: 'application/json' },
  });
  if (res.status !== 200) {
    await res.body?.cancel();
    return { status: res.status, text: undefined };
  }
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > opts.maxBytes) {
    await res.body?.cancel();
    throw new Error(`${url} is larger than ${opts.maxBytes} bytes`);
  }
  const reader = res.body!.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > opts.maxBytes) {
      await reader.cancel();
      throw new Error(`${url} is larger than ${opts.maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return { status: 200, text: Buffer.concat(chunks).toString('utf8') };
}

function tokenInvalid(message: string): VerbError {
  return new VerbError('auth_invalid', message, {
    hint: 'Obtain a new access token from the organisation’s identity provider for this server (its resource URL as the audience), or use an API key (sk_solid_…).',
  });
}

/** Is `token` shaped like a JWS (three base64url parts)? Opaque tokens of the built-in server are not. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/.test(token);
}

/**
 * The verifier of one external issuer's access tokens (see the header). Metadata and the key set
 * are fetched at the first token and kept (the key set refreshed by jose: at most every 30 s on an
 * unknown `kid`, every 10 minutes otherwise); a failed metadata fetch is retried at the next token.
 */
export class ExternalIssuer {
  readonly issuer: string;
  readonly #rt: Runtime;
  readonly #options: ExternalIssuerOptions;
  readonly #claims: Required<ExternalClaimNames>;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;
  #keys: Promise<JWTVerifyGetKey> | undefined;

  constructor(rt: Runtime, options: ExternalIssuerOptions) {
    this.issuer = checkIssuerUrl(options.issuer);
    this.#rt = rt;
    this.#options = options;
    this.#claims = {
      tenant: options.claims?.tenant ?? 'solid_tenant',
      user: options.claims?.user ?? 'solid_user',
      role: options.claims?.role ?? 'solid_role',
    };
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#maxBytes = options.maxBytes ?? 65_536;
  }

  /** The issuer's key set, from its metadata's jwks_uri (fetched once; retried after a failure). */
  #keySet(): Promise<JWTVerifyGetKey> {
    this.#keys ??= this.#discover().catch((err: unknown) => {
      this.#keys = undefined;
      throw err;
    });
    return this.#keys;
  }

  async #discover(): Promise<JWTVerifyGetKey> {
    let meta: Record<string, unknown> | undefined;
    for (const url of metadataUrls(this.issuer)) {
      const res = await limitedFetch(url, { timeoutMs: this.#timeoutMs, maxBytes: this.#maxBytes });
      if (res.text === undefined) continue;
      meta = JSON.parse(res.text) as Record<string, unknown>;
      break;
    }
    if (meta === undefined) throw new Error(`no metadata at ${metadataUrls(this.issuer).join(' or ')}`);
    if (meta.issuer !== this.issuer)
      throw new Error(
        `the metadata names the issuer ${String(meta.issuer)}, not ${this.issuer} (RFC 8414 §3.3)`,
      );
    if (typeof meta.jwks_uri !== 'string') throw new Error('the metadata names no jwks_uri');
    const jwksUri = new URL(meta.jwks_uri);
    if (jwksUri.protocol !== 'https:' && !(jwksUri.protocol === 'http:' && LOOPBACK.has(jwksUri.hostname)))
      throw new Error(`the jwks_uri ${jwksUri.href} is not https`);
    const { timeoutMs, maxBytes } = { timeoutMs: this.#timeoutMs, maxBytes: this.#maxBytes };
    return createRemoteJWKSet(jwksUri, {
      timeoutDuration: timeoutMs,
      [customFetch]: async (url, init) => {
        const res = await limitedFetch(url, {
          timeoutMs,
          maxBytes,
          signal: init.signal,
          headers: init.headers,
        });
        return new Response(res.text ?? '', {
          status: res.status,
          headers: { 'content-type': 'application/json' },
        });
      },
    });
  }

  /**
   * Verify an access token and map it to its agent principal.
   * @throws VerbError auth_invalid — bad signature, unknown kid, alg none/HMAC, wrong typ, iss or
   *   aud, expired, no sub, a tenant or user the claims do not name or that cannot act, a role
   *   claim that is not a role; the IdP unreachable (its metadata or keys)
   */
  async authenticate(token: string, resources: OAuthResources | undefined): Promise<Principal> {
    let keys: JWTVerifyGetKey;
    try {
      keys = await this.#keySet();
    } catch (err) {
      this.#rt.logger.warn(
        { issuer: this.issuer, err: (err as Error).message },
        'oauth: external issuer unreachable',
      );
      throw tokenInvalid(
        `The identity provider ${this.issuer} could not be used to check the token: ${(err as Error).message}.`,
      );
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: this.issuer,
        typ: 'at+jwt',
        algorithms: EXTERNAL_ALGORITHMS,
        currentDate: this.#rt.clock(),
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      throw tokenInvalid(`The access token was refused: ${describeJoseError(err)}.`);
    }
    const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if (resources === undefined || !aud.some((a) => typeof a === 'string' && resources.has(a)))
      throw tokenInvalid(
        `The access token was issued for another resource (audience ${JSON.stringify(aud).slice(0, 200)}); this server is ${resources?.primary ?? 'not yet addressed'}/mcp.`,
      );
    return this.#principal(payload);
  }

  async #principal(payload: JWTPayload): Promise<Principal> {
    const c = this.#claims;
    const int = (v: unknown): number | undefined => {
      const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
      return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : undefined;
    };
    const companyId = payload[c.tenant] !== undefined ? int(payload[c.tenant]) : this.#options.tenant;
    if (companyId === undefined)
      throw tokenInvalid(
        `The access token names no tenant (claim ${c.tenant}) and the server has no default tenant.`,
      );
    const attribute = (e: VerbError): VerbError => {
      e.keyAttribution = {
        company_id: companyId,
        key_id: `idp:${String(payload.sub).slice(0, 100)}`,
        revoked: false,
      };
      return e;
    };
    const tenant = await this.#rt.tenants.get(companyId);
    if (tenant === undefined)
      throw tokenInvalid(`The access token names tenant ${companyId}, which does not exist.`);
    const userId = int(payload[c.user]);
    if (userId === undefined)
      throw attribute(tokenInvalid(`The access token names no user of this server (claim ${c.user}).`));
    const user = await this.#rt.store.read((q) => getUser(q, companyId, userId));
    if (user === undefined || user.status === 'disabled')
      throw attribute(
        tokenInvalid(`User ${userId} of tenant ${companyId} cannot act (no such user, or disabled).`),
      );
    const claimed = payload[c.role];
    if (
      claimed !== undefined &&
      !(typeof claimed === 'string' && (ROLES as readonly string[]).includes(claimed))
    )
      throw attribute(tokenInvalid(`The claim ${c.role} is not a role (${ROLES.join(', ')}).`));
    const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
    const readOnly = scopes.includes('solid:read') && !scopes.includes('solid:write');
    const role: Role = readOnly
      ? 'read_only'
      : lowerRole((claimed as Role | undefined) ?? user.role, user.role);
    const client = String(payload.client_id ?? payload.azp ?? 'idp');
    return agentPrincipal({
      company_id: companyId,
      user_id: userId,
      role,
      tier: tenant.tier,
      agent_type: `oauth-idp:${client}`.slice(0, 120),
      key_id: `idp:${String(payload.sub)}`.slice(0, 120),
    });
  }
}

/** A jose verification error in plain words (no token content). */
function describeJoseError(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'it has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return `its claim ${err.claim} is not acceptable (${err.reason})`;
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'no key of the identity provider matches its kid';
  if (err instanceof joseErrors.JOSEAlgNotAllowed)
    return 'its signature algorithm is not allowed (asymmetric only)';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'its signature does not verify';
  if (err instanceof joseErrors.JWKSTimeout) return 'the identity provider’s keys did not arrive in time';
  if (err instanceof joseErrors.JOSEError) return `${err.code}`;
  return 'it is not a JWT';
}
