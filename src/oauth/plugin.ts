/**
 * OAuth 2.1 for hosted connectors, as one HTTP mount (`solid serve` lists it in http-mounts.ts):
 * this server becomes an OAuth resource server for `/mcp` and the HTTP API, with its own
 * authorization server (oidc-provider). spec/oauth.md
 *
 *   GET  /.well-known/oauth-protected-resource[/mcp]   RFC 9728 metadata (resource + issuer)
 *   GET  /.well-known/oauth-authorization-server       RFC 8414 metadata (same document as
 *   GET  /.well-known/openid-configuration             OpenID discovery, from oidc-provider)
 *   *    /oauth/authorize, /token, /register, /revoke, /jwks, …   oidc-provider (provider.ts)
 *   GET|POST /oauth/consent/:uid                       the human's consent screen (consent.ts)
 *   GET  /api/v1/oauth/grants                          the tenant's grants (human session)
 *   POST /api/v1/oauth/grants/:grant_id/revoke         revoke one (human session, Origin, CSRF)
 *
 * Mounting it installs the bearer authenticator (resource.ts) on the runtime: from then on every
 * transport that takes `Authorization: Bearer …` (the HTTP API, `/mcp`) accepts this server's
 * access tokens as agent credentials, and its 401s name the metadata
 * (`WWW-Authenticate: Bearer resource_metadata="…"`, added by the HTTP core). A request to
 * `/mcp` with no credentials gets that 401 challenge, unless `keylessSandbox` is on (the demo):
 * then it keeps the keyless sandbox (reads only) and the metadata is still published.
 *
 * With `externalIssuer` (an enterprise IdP), the metadata names that issuer instead and its JWT
 * access tokens are accepted too (external.ts); the built-in server stays mounted, unadvertised.
 *
 * The issuer is the server's public URL (`--public-url`, or the address `solid serve` prints),
 * else the origin the first OAuth request addressed (loopback names only).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import type { HttpPlugin, HttpPluginOptions } from '../transports/http/server.ts';
import type { TransportRuntime as Runtime } from '../transports/runtime-surface.ts';
import { VerbError } from '../runtime/errors.ts';
import { sendEnvelope } from '../transports/http/error-handler.ts';
import { directOrigin, isRebindSafeHost } from '../identity/origin-policy.ts';
import { requireSessionForWrite, sessionRequired, sessionTokenOf } from '../identity/request-guard.ts';
import { SessionStore } from '../identity/session-store.ts';
import { refuseWithKey } from '../identity/api-key-auth.ts';
import { oauthMigrations } from './migrations.ts';
import { createProvider, OAuthResources } from './provider.ts';
import { OAuthBearer, PRM_PATH, protectedResourceMetadata } from './resource.ts';
import { decideConsent, showConsent } from './consent.ts';
import { getGrant, listGrants, revokeAndAudit } from './grants.ts';
import { ExternalIssuer, type ExternalIssuerOptions } from './external.ts';

/** Options of {@link createOAuthPlugin}. */
export interface OAuthPluginOptions {
  /**
   * Keep the keyless sandbox (reads only) for `/mcp` requests without credentials instead of the
   * 401 challenge (default false; `solid serve --demo` and SOLID_KEYLESS_SANDBOX=1 turn it on).
   */
  keylessSandbox?: boolean;
  /** Trust X-Forwarded-Proto from the proxy (match the server's trustProxy). */
  proxy?: boolean;
  /**
   * Trust an external authorization server (an enterprise IdP): its JWT access tokens are
   * accepted (external.ts) and the protected-resource metadata names it as the authorization
   * server. `solid serve --oauth-issuer` / SOLID_OAUTH_ISSUER. spec/oauth.md §external-issuer
   */
  externalIssuer?: ExternalIssuerOptions;
}

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'];

/** This server's resources for an issuer: its origin, the allowed origins, the loopback aliases. */
function resourcesFor(issuer: string, allowedOrigins: readonly string[]): OAuthResources {
  const u = new URL(issuer);
  const aliases = LOOPBACK.includes(u.hostname)
    ? LOOPBACK.map((h) => `${u.protocol}//${h}${u.port === '' ? '' : `:${u.port}`}`)
    : [];
  return new OAuthResources(issuer, [...allowedOrigins, ...aliases]);
}

/**
 * The refusal of an authorization-server request addressed at another loopback name of this
 * server than its issuer's (`http://127.0.0.1:4400` when the issuer is `http://localhost:4400`),
 * else undefined. RFC 8414 §3.3 and RFC 9728 §3.3 make clients compare the issuer exactly, and the
 * human's session cookie belongs to one host name: a flow split across two names fails later with
 * a confusing error, so it is refused at once, naming the issuer. Only loopback names are
 * compared: behind a proxy the Host header may be the proxy's choice.
 */
export function misdirected(own: string | undefined, issuer: string): VerbError | undefined {
  if (own === undefined) return undefined;
  const o = new URL(own);
  const i = new URL(issuer);
  if (o.origin === i.origin || !LOOPBACK.includes(i.hostname) || !LOOPBACK.includes(o.hostname))
    return undefined;
  return new VerbError(
    'invalid_request',
    `This server's OAuth issuer is ${i.origin}, and OAuth needs that exact origin (RFC 8414 §3.3): this request addressed ${o.origin}.`,
    {
      hint: `Use ${i.origin} (connect to ${i.origin}/mcp, the address solid serve prints), or start the server with --public-url set to the origin you use.`,
      details: { issuer: i.origin, addressed: o.origin },
    },
  );
}

interface Built {
  provider: Provider;
  resources: OAuthResources;
  issuer: string;
  callback: ReturnType<Provider['callback']>;
}

const envelopeAnswer = {
  default: {
    description: 'Envelope (errors: session_invalid 401, csrf_failed / origin_denied 403, not_found 404)',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
  },
};
/** OpenAPI operations of the grants routes (spec/transports.md §http-openapi). */
const GRANT_DOCS = {
  list: {
    openapi: {
      operationId: 'oauth_grants_list',
      tags: ['oauth'],
      summary: 'The tenant’s OAuth grants',
      description:
        'Every grant (live, revoked, expired) of the signed-in person’s tenant: client, who allowed it, role ceiling, read-only, expiry. Needs a human session cookie.',
      responses: envelopeAnswer,
      security: [{ sessionCookie: [] }],
    },
  },
  revoke: {
    openapi: {
      operationId: 'oauth_grants_revoke',
      tags: ['oauth'],
      summary: 'Revoke an OAuth grant',
      description:
        'Its tokens stop working at their next use on every node. A person revokes their own grants; an admin or owner any of the tenant’s. Needs a human session cookie, a same-origin Origin and X-CSRF-Token.',
      parameters: [{ name: 'grant_id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: envelopeAnswer,
      security: [{ sessionCookie: [] }],
    },
  },
};

/** Build the plugin (see the header). `oauthPlugin` is the default-configured one. */
export function createOAuthPlugin(config: OAuthPluginOptions = {}): HttpPlugin {
  return async function oauth(app: FastifyInstance, opts: HttpPluginOptions): Promise<void> {
    const rt: Runtime = opts.rt;
    const allowedOrigins = opts.allowedOrigins ?? [];
    await rt.store.migrate('oauth', oauthMigrations);
    const sessions = new SessionStore(rt);
    await sessions.migrate();

    let built: Promise<Built> | undefined;
    let resources: OAuthResources | undefined;
    const issuerOf = (request: FastifyRequest): string => {
      if (rt.options.publicUrl !== undefined) return new URL(rt.options.publicUrl).origin;
      const own = directOrigin(request);
      if (own !== undefined && isRebindSafeHost(new URL(own).hostname)) return own;
      throw new VerbError(
        'invalid_request',
        'This server does not know its public URL, so it cannot act as an OAuth issuer.',
        {
          hint: 'Start it with --public-url https://… (SOLID_PUBLIC_URL).',
        },
      );
    };
    const build = (request: FastifyRequest): Promise<Built> =>
      (built ??= (async () => {
        const issuer = issuerOf(request);
        resources = resourcesFor(issuer, allowedOrigins);
        const provider = await createProvider(rt, { issuer, resources, proxy: config.proxy === true });
        auditProviderErrors(rt, provider);
        return { provider, resources, issuer, callback: provider.callback() };
      })().catch((err: unknown) => {
        built = undefined;
        throw err;
      }));

    const external =
      config.externalIssuer !== undefined ? new ExternalIssuer(rt, config.externalIssuer) : undefined;
    rt.tenants.useBearer(
      new OAuthBearer(rt, {
        ...(external !== undefined ? { external } : {}),
        resources: () =>
          resources ??
          (rt.options.publicUrl !== undefined
            ? resourcesFor(rt.options.publicUrl, allowedOrigins)
            : undefined),
        keylessSandbox: config.keylessSandbox === true,
      }),
    );
    app.addHook('onClose', async () => rt.tenants.useBearer(undefined));

    /** Answer and audit (sandbox tenant, action oauth.misdirected) a request at the wrong host name. */
    const refuseMisdirected = async (request: FastifyRequest, reply: FastifyReply, err: VerbError) => {
      const env = await refuseWithKey(
        rt,
        { surface: 'http', address: request.ip },
        null,
        'oauth.misdirected',
        err,
      );
      return sendEnvelope(reply, env);
    };

    // RFC 9728: the resource is the origin the client addressed (when it is one of ours), so the
    // MCP SDK's check "the metadata's resource is a prefix of the server URL" holds.
    const prm = async (request: FastifyRequest, reply: FastifyReply, suffix: string) => {
      const b = await build(request);
      const own = directOrigin(request);
      const origin = own !== undefined && b.resources.has(`${own}/`) ? own : b.resources.primary;
      return reply
        .header('cache-control', 'public, max-age=300')
        .header('access-control-allow-origin', '*')
        .send(
          protectedResourceMetadata(`${origin}${suffix === '' ? '/' : suffix}`, external?.issuer ?? b.issuer),
        );
    };
    // The OAuth protocol routes are described by their own metadata documents, not /openapi.json.
    const hidden = { config: { openapi: false as const } };
    app.get(PRM_PATH, hidden, (request, reply) => prm(request, reply, ''));
    app.get(`${PRM_PATH}/mcp`, hidden, (request, reply) => prm(request, reply, '/mcp'));

    // oidc-provider reads its own bodies: its routes live in a scope without body parsers.
    await app.register(async (child) => {
      child.removeAllContentTypeParsers();
      child.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
      const handOver = async (request: FastifyRequest, reply: FastifyReply) => {
        const b = await build(request);
        const wrongHost = misdirected(directOrigin(request), b.issuer);
        if (wrongHost !== undefined) return refuseMisdirected(request, reply, wrongHost);
        reply.hijack();
        await new Promise<void>((resolve) => {
          reply.raw.once('finish', resolve);
          reply.raw.once('close', resolve);
          void b.callback(request.raw, reply.raw);
        });
      };
      child.route({ method: ['GET', 'POST', 'OPTIONS'], url: '/oauth/*', ...hidden, handler: handOver });
      child.get('/.well-known/openid-configuration', hidden, handOver);
      child.get('/.well-known/oauth-authorization-server', hidden, (request, reply) => {
        request.raw.url = '/.well-known/openid-configuration';
        return handOver(request, reply);
      });
    });

    // The consent screen: a form post (urlencoded) or JSON.
    await app.register(async (child) => {
      child.addContentTypeParser(
        'application/x-www-form-urlencoded',
        { parseAs: 'string', bodyLimit: 8192 },
        (_request, body, done) => done(null, body),
      );
      type ConsentHandler = typeof showConsent;
      const consentRoute =
        (handler: ConsentHandler) =>
        async (request: FastifyRequest<{ Params: { uid: string } }>, reply: FastifyReply) => {
          const b = await build(request);
          const wrongHost = misdirected(directOrigin(request), b.issuer);
          if (wrongHost !== undefined) return refuseMisdirected(request, reply, wrongHost);
          const ctx = {
            rt,
            provider: b.provider,
            sessions,
            allowedOrigins,
            defaultResource: `${b.resources.primary}/`,
          };
          return handler(ctx, request, reply);
        };
      child.get<{ Params: { uid: string } }>('/oauth/consent/:uid', hidden, consentRoute(showConsent));
      child.post<{ Params: { uid: string } }>('/oauth/consent/:uid', hidden, consentRoute(decideConsent));
    });

    app.get('/api/v1/oauth/grants', { config: GRANT_DOCS.list }, async (request, reply) => {
      const s = await sessions.lookup(sessionTokenOf(request));
      if (s === undefined || s.principal.actor !== 'human') throw sessionRequired();
      const grants = await rt.store.read((q) => listGrants(q, s.principal.company_id));
      return sendEnvelope(reply, { ok: true, verb: 'oauth.grants', result: { grants } });
    });

    app.post<{ Params: { grant_id: string } }>(
      '/api/v1/oauth/grants/:grant_id/revoke',
      { config: GRANT_DOCS.revoke },
      async (request, reply) => {
        const s = await requireSessionForWrite(sessions, request, allowedOrigins);
        const p = s.principal;
        if (p.actor !== 'human') throw sessionRequired();
        const g = await rt.store.read((q) => getGrant(q, request.params.grant_id));
        const mayRevoke =
          g !== undefined &&
          g.company_id === p.company_id &&
          (g.user_id === p.user_id || p.role === 'admin' || p.role === 'owner');
        if (!mayRevoke)
          throw new VerbError(
            'not_found',
            'No such grant in this tenant (or it is another person’s and you are not an admin).',
            {
              hint: 'List the grants with GET /api/v1/oauth/grants.',
            },
          );
        const revoked = await revokeAndAudit(
          rt,
          p.company_id,
          g.grant_id,
          { user_id: p.user_id, role: p.role },
          'human:dashboard',
        );
        return sendEnvelope(reply, { ok: true, verb: 'oauth.grants.revoke', result: { grant: revoked } });
      },
    );
  };
}

/**
 * Every error the authorization server answers (a reused code, PKCE without S256, a redirect
 * mismatch, a foreign resource…) is an audited refusal: `oauth.authorize` / `oauth.token` /
 * `oauth.register` / `oauth.revoke` with the OAuth error in the message, in the sandbox tenant
 * (the caller is nobody yet) and, when the error names a grant, in that grant's tenant too.
 */
function auditProviderErrors(rt: Runtime, provider: Provider): void {
  const record =
    (action: string, reason: 'auth_invalid' | 'invalid_request') =>
    (
      ctx: { ip?: string; oidc?: { entities?: Record<string, { grantId?: string } | undefined> } },
      err: { error?: string; error_description?: string },
    ) => {
      void (async () => {
        const e = new VerbError(
          reason,
          `${err.error ?? 'error'}: ${err.error_description ?? ''}`.slice(0, 300),
          {
            details: { oauth_error: err.error ?? null },
          },
        );
        const ents = ctx.oidc?.entities ?? {};
        const grantId = ents.AuthorizationCode?.grantId ?? ents.RefreshToken?.grantId;
        if (grantId !== undefined) {
          const g = await rt.store.read((q) => getGrant(q, grantId));
          if (g !== undefined)
            e.keyAttribution = {
              company_id: g.company_id,
              key_id: `grant:${g.grant_id}`,
              revoked: g.revoked_at !== null,
            };
        }
        await rt.recordRefusal(
          { surface: 'http', ...(ctx.ip !== undefined ? { address: ctx.ip } : {}) },
          action,
          e,
        );
      })().catch((auditErr: unknown) => rt.logger.warn({ err: auditErr }, 'oauth: could not audit an error'));
    };
  provider.on('authorization.error', record('oauth.authorize', 'invalid_request') as never);
  provider.on('grant.error', record('oauth.token', 'auth_invalid') as never);
  provider.on('registration_create.error', record('oauth.register', 'invalid_request') as never);
  provider.on('revocation.error', record('oauth.revoke', 'invalid_request') as never);
}

/** The plugin with default options (challenge keyless /mcp requests). */
export const oauthPlugin: HttpPlugin = createOAuthPlugin();
