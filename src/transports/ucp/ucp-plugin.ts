/**
 * The UCP transport as one encapsulated Fastify plugin (mounted by `solid serve` through
 * http-mounts.ts, or passed to createHttpServer). Routes, for the primary tenant at the root and
 * for any tenant under `/t/{company_id}`:
 *
 *   GET  /.well-known/ucp                        the 2026-08-25 business profile
 *   GET  /ucp/v1/profiles/2026-04-08             the 2026-04-08 leaf profile (signing_keys[])
 *   GET  /ucp/v1/openapi.json                    the REST binding (service `schema`)
 *   GET  /ucp/v1/schemas/{capability}.json       a capability's JSON Schema (its `schema`)
 *   GET  /ucp/v1/spec, /ucp/v1/spec/{capability} Markdown pages (the `spec` URLs)
 *   POST /ucp/v1/capabilities/{capability}       run it: signed request in, signed answer out
 *
 * Documents: JSON, `Cache-Control: public, max-age=300`, a strong ETag, 304 on If-None-Match,
 * never a redirect. POST: the body is read as raw bytes (no JSON parser runs before the signature
 * check: Content-Digest is computed over the bytes received), the request is verified
 * (verify-request.ts), then parsed and dispatched (capability-dispatch.ts); the answer is signed
 * with the tenant's active key over `@status`, `content-digest` and `content-type` (RFC 9421,
 * label sig1, created + keyid). Failures before the platform is verified answer UCP's flat
 * `{ code, content }` unsigned (ucp-error.ts); everything after is signed.
 *
 * Configuration: see ucp-config.ts (server options / environment, tenant `settings.ucp`).
 *
 * Spec: spec/transports.md §ucp.
 */
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isVerbError, VerbError } from '../../runtime/errors.ts';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import type { Tenant } from '../../runtime/tenants.ts';
import { StoreError } from '../../store/store.ts';
import { parseJsonBody } from '../http/json-body.ts';
import { idempotencyKeyOfRequest } from '../http/request-headers.ts';
import { rateLimitRefusal } from '../http/rate-limit.ts';
import type { HttpPlugin, HttpPluginOptions } from '../http/server.ts';
import { authorityBinds, buildCapabilityCatalog, type CapabilityEntry } from './capability-names.ts';
import { platformPrincipal, refusalOf, runCapability, type CapabilityAnswer } from './capability-dispatch.ts';
import { PlatformProfiles, type PlatformProfilesOptions } from './platform-profiles.ts';
import {
  PROFILE_MAX_AGE_SECONDS,
  buildBusinessProfile,
  buildCapabilitySchema,
  buildLegacyProfile,
  buildServiceOpenApi,
  buildSpecPage,
  etagOf,
  ifNoneMatchHits,
  type ProfileUrls,
} from './profile.ts';
import { StoreReplayGuard, type ReplayGuard } from './replay-cache.ts';
import { PlatformUsers } from './platform-users.ts';
import { signJsonAnswer } from './rfc9421.ts';
import { UcpError, type UcpErrorCode } from './ucp-error.ts';
import type { Envelope } from '../../spec/types.ts';
import type { Reason } from '../../spec/reasons.ts';
import {
  checkBaseUrl,
  primaryTenantOf,
  resolveTenantConfig,
  ucpConfigFromEnv,
  type UcpServerConfig,
  type UcpTenantConfig,
} from './ucp-config.ts';
import { CONSENT_NONCE_HEADER, verifyUcpRequest, type InboundRequest } from './verify-request.ts';

/** Where the time of one capability call went (ms), for the benchmark. */
export interface UcpTimings {
  /** Signature verification (header parsing, key lookup, digest, ES256, replay check). */
  verify_ms: number;
  /** Parsing the body and the dispatch(es) through the pipeline. */
  dispatch_ms: number;
  /** Digest and ES256 signature of the answer. */
  sign_ms: number;
  total_ms: number;
}

export interface UcpPluginOptions extends Partial<UcpServerConfig> {
  /** The platform profile cache (default: one per plugin with `profileFetch` options). */
  profiles?: PlatformProfiles;
  profileFetch?: Omit<PlatformProfilesOptions, 'dev'>;
  /** Replay store for verified signatures (default: a StoreReplayGuard on the runtime's store, shared by every node). */
  replay?: ReplayGuard;
  /** Clock skew tolerated on created/expires, seconds (default 60). */
  skewSeconds?: number;
  /** Oldest acceptable signature `created`, seconds (default 300). */
  maxSignatureAgeSeconds?: number;
  /** Called after every capability call that passed verification. */
  onTimings?: (timings: UcpTimings) => void;
}

const JSON_TYPE = /^application\/(?:[a-z0-9.+-]*\+)?json\s*(?:;|$)/i;

interface TenantState {
  tenant: Tenant;
  config: UcpTenantConfig;
  catalog: CapabilityEntry[];
  byName: Map<string, CapabilityEntry>;
}

/** `settings.ucp` objects → their JSON text (the tenant cache hands out the same object until it reloads). */
const settingsTexts = new WeakMap<object, string>();

function settingsText(ucp: unknown): string {
  if (ucp === null || typeof ucp !== 'object') return JSON.stringify(ucp ?? {});
  let text = settingsTexts.get(ucp);
  if (text === undefined) {
    text = JSON.stringify(ucp);
    settingsTexts.set(ucp, text);
  }
  return text;
}

/** A tenant configuration → the part of its catalog cache key it decides (configs are never mutated). */
const catalogShapes = new WeakMap<UcpTenantConfig, string>();

/** Per-plugin caches: tenant configuration (by settings text) and catalogs (by registry generation). */
class UcpState {
  readonly rt: Runtime;
  readonly cfg: UcpServerConfig;
  #generation = 0;
  readonly #configs = new Map<number, { raw: string; config: UcpTenantConfig }>();
  readonly #catalogs = new Map<
    string,
    { catalog: CapabilityEntry[]; byName: Map<string, CapabilityEntry> }
  >();
  #primary: { id: number | undefined; at: number } | undefined;
  /** Stop following registry changes (the server closes). */
  readonly detach: () => void;

  constructor(rt: Runtime, cfg: UcpServerConfig) {
    this.rt = rt;
    this.cfg = cfg;
    this.detach = rt.registry.onChange(() => {
      this.#generation++;
      this.#catalogs.clear();
    });
  }

  /** company_id served at the root (primaryTenantOf, re-read at most every 5 s). */
  async primaryTenant(): Promise<number | undefined> {
    if (this.cfg.primaryTenant !== undefined) return this.cfg.primaryTenant;
    if (this.#primary !== undefined && Date.now() - this.#primary.at < 5000) return this.#primary.id;
    const id = await primaryTenantOf(this.rt);
    this.#primary = { id, at: Date.now() };
    return id;
  }

  /** The tenant, its UCP configuration and catalog. @throws UcpError not_found, internal_error */
  async tenantState(companyId: number): Promise<TenantState> {
    const tenant = await this.rt.tenants.get(companyId);
    if (tenant === undefined) throw new UcpError('not_found', `No business ${companyId} is served here.`);
    const raw = settingsText(tenant.settings.ucp);
    let cached = this.#configs.get(companyId);
    if (cached === undefined || cached.raw !== raw) {
      try {
        cached = { raw, config: resolveTenantConfig(tenant.settings.ucp, this.cfg.defaultNamespace) };
      } catch (err) {
        this.rt.logger.error({ err, company_id: companyId }, 'invalid settings.ucp');
        throw new UcpError(
          'internal_error',
          "This business's UCP settings are invalid; the operator must fix them (solid ucp config set).",
        );
      }
      this.#configs.set(companyId, cached);
      const base = this.cfg.baseUrl;
      if (base !== undefined && !authorityBinds(`${cached.config.namespace}.ops.x`, `${base}/`)) {
        this.rt.logger.warn(
          { company_id: companyId, namespace: cached.config.namespace, base_url: base },
          'UCP namespace does not match the base URL host: platforms will ignore the capabilities (spec/transports.md §ucp-names)',
        );
      }
    }
    const config = cached.config;
    let shape = catalogShapes.get(config);
    if (shape === undefined) {
      shape = `${config.namespace}|${JSON.stringify(config.subAgents)}|${JSON.stringify(config.extends)}`;
      catalogShapes.set(config, shape);
    }
    const key = `${this.#generation}|${shape}`;
    let cat = this.#catalogs.get(key);
    if (cat === undefined) {
      const catalog = buildCapabilityCatalog(this.rt.registry.all(), {
        namespace: config.namespace,
        subAgents: config.subAgents,
        extends: config.extends,
      });
      cat = { catalog, byName: new Map(catalog.map((e) => [e.name, e])) };
      if (this.#catalogs.size > 64) this.#catalogs.clear();
      this.#catalogs.set(key, cat);
    }
    return { tenant, config, ...cat };
  }
}

/** The company_id of a route: `/t/{tenant}` or the primary tenant. @throws UcpError not_found */
async function companyOf(
  state: UcpState,
  request: FastifyRequest,
): Promise<{ id: number; prefixed: boolean }> {
  const param = (request.params as { tenant?: string }).tenant;
  if (param === undefined) {
    const id = await state.primaryTenant();
    if (id === undefined) throw new UcpError('not_found', 'No business is configured on this server.');
    return { id, prefixed: false };
  }
  const id = Number(param);
  if (!/^[1-9][0-9]{0,15}$/.test(param) || !Number.isSafeInteger(id))
    throw new UcpError('not_found', `No business ${JSON.stringify(param.slice(0, 40))} is served here.`);
  return { id, prefixed: true };
}

function originOf(state: UcpState, request: FastifyRequest): string {
  if (state.cfg.baseUrl !== undefined) return state.cfg.baseUrl;
  return `${request.protocol}://${request.headers.host ?? 'localhost'}`;
}

function urlsOf(
  state: UcpState,
  request: FastifyRequest,
  company: { id: number; prefixed: boolean },
): ProfileUrls {
  return { base: `${originOf(state, request)}${company.prefixed ? `/t/${company.id}` : ''}` };
}

/** Send a cacheable public document with ETag / 304. */
function sendDocument(
  request: FastifyRequest,
  reply: FastifyReply,
  body: string,
  type: string,
): FastifyReply {
  const etag = etagOf(body);
  reply.header('cache-control', `public, max-age=${PROFILE_MAX_AGE_SECONDS}`).header('etag', etag);
  if (ifNoneMatchHits(request.headers['if-none-match'], etag)) return reply.code(304).send();
  return reply.code(200).type(type).send(body);
}

/**
 * A UCP flat error (unsigned): UCP's `{ code, content }` and, beside it, the solid-verbs
 * `envelope` of the refusal (reason, message, hint; `audit_id` when it was audited, so a refused
 * platform can name the row of its attempt).
 */
function sendError(reply: FastifyReply, err: UcpError, envelope?: Envelope): FastifyReply {
  if (err.retryAfterSeconds !== undefined) void reply.header('retry-after', String(err.retryAfterSeconds));
  const env: Envelope = envelope ?? {
    ok: false,
    verb: '',
    error: { reason: err.code, message: err.message, hint: hintOf(err.code) },
  };
  return reply
    .code(err.status)
    .header('cache-control', 'no-store')
    .type('application/json')
    .send(JSON.stringify({ ...err.toBody(), envelope: env }));
}

/** What to do about a UCP transport error, in one sentence (the envelope's hint). */
function hintOf(code: UcpErrorCode): string {
  switch (code) {
    case 'signature_missing':
    case 'signature_invalid':
    case 'signature_expired':
    case 'signature_replayed':
    case 'key_not_found':
    case 'components_missing':
    case 'algorithm_unsupported':
    case 'digest_mismatch':
      return 'Sign each request afresh (RFC 9421, ecdsa-p256-sha256) with a key your UCP profile publishes, covering the components UCP requires and a Content-Digest of the exact body.';
    case 'invalid_profile_url':
    case 'profile_unreachable':
    case 'profile_malformed':
    case 'version_unsupported':
    case 'profile_not_trusted':
      return 'Send UCP-Agent: profile="https://…/.well-known/ucp" naming a profile this business trusts (settings.ucp.platforms).';
    case 'rate_limited':
    case 'store_unavailable':
      return 'Retry later (after Retry-After when present).';
    case 'payload_too_large':
      return 'Send a smaller body.';
    case 'unsupported_media_type':
      return 'Send Content-Type: application/json.';
    case 'not_found':
      return 'See the capabilities of /.well-known/ucp.';
    default:
      return 'Check the request against /ucp/v1/openapi.json.';
  }
}

/**
 * Audit a request the verification refused (bad, expired or replayed signature, digest, unknown
 * or untrusted platform): nobody is authenticated, so it is an unauthenticated failure
 * (`auth_invalid`, counted per window and client address like a bad API key: spec/audit.md
 * §auth-failure-windows) whose details name the UCP code and the claimed profile. Resolves to the
 * envelope for sendError; store and rate-limit refusals are not audited (nothing to write into /
 * decided before the request was read).
 */
async function auditedVerifyFailure(
  rt: Runtime,
  request: FastifyRequest,
  capability: string,
  err: UcpError,
): Promise<Envelope | undefined> {
  if (err.code === 'store_unavailable' || err.code === 'rate_limited' || err.code === 'internal_error')
    return undefined;
  const agent = request.headers['ucp-agent'];
  const profile = /profile="([^"]{1,300})"/.exec(Array.isArray(agent) ? agent.join(',') : (agent ?? ''))?.[1];
  try {
    const env = await rt.recordRefusal(
      { surface: 'ucp', address: request.ip },
      capability.slice(0, 200),
      new VerbError('auth_invalid', err.message, {
        hint: hintOf(err.code),
        details: { ucp_code: err.code, ...(profile !== undefined ? { profile } : {}) },
      }),
      'auth',
    );
    return env;
  } catch (e) {
    rt.logger.warn({ err: e }, 'UCP: could not audit a refused request');
    return undefined;
  }
}

function toUcpError(err: unknown, rt: Runtime): UcpError {
  if (err instanceof UcpError) return err;
  if (err instanceof StoreError)
    return new UcpError('store_unavailable', 'The database is unavailable; retry shortly.');
  // The HTTP server's rate limiter (an onRequest hook of the root) refuses before this route.
  const limited = rateLimitRefusal(err);
  if (limited !== undefined)
    return new UcpError('rate_limited', `${limited.message} ${limited.hint}`, {
      retryAfterSeconds: limited.retryAfterSeconds,
    });
  const e = err as { code?: string; statusCode?: number; message?: string };
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return new UcpError('payload_too_large', 'The request body is too large.');
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500)
    return new UcpError(
      'invalid_request',
      `The request is malformed: ${String(e.message ?? 'bad request')}.`,
    );
  rt.logger.error({ err }, 'unhandled error in the UCP transport');
  return new UcpError('internal_error', 'An unexpected error occurred; it was logged.');
}

/**
 * Sign and send an answer with the tenant's active key (RFC 9421 over @status, content-digest,
 * content-type; created = now, keyid = the active kid).
 */
async function sendSigned(
  rt: Runtime,
  reply: FastifyReply,
  companyId: number,
  answer: CapabilityAnswer,
): Promise<FastifyReply> {
  const bytes = Buffer.from(JSON.stringify(answer.body), 'utf8');
  const key = await rt.keys.signingKey(companyId);
  const signed = signJsonAnswer(answer.status, bytes, {
    keyid: key.kid,
    privateKey: key.keyObject,
    created: Math.floor(rt.clock().getTime() / 1000),
  });
  return reply
    .code(answer.status)
    .headers({ ...answer.headers, ...signed })
    .send(bytes);
}

/**
 * Build the UCP plugin with explicit options (tests, embedding). Options not given come from the
 * environment (ucpConfigFromEnv).
 */
export function createUcpPlugin(options: UcpPluginOptions = {}): HttpPlugin {
  return async function ucp(app: FastifyInstance, { rt }: HttpPluginOptions) {
    const env = ucpConfigFromEnv();
    const cfg: UcpServerConfig = {
      baseUrl: options.baseUrl === undefined ? env.baseUrl : checkBaseUrl(options.baseUrl),
      primaryTenant: options.primaryTenant ?? env.primaryTenant,
      defaultNamespace: options.defaultNamespace ?? env.defaultNamespace,
      dev: options.dev ?? env.dev,
    };
    const state = new UcpState(rt, cfg);
    app.addHook('onClose', async () => state.detach());
    const profiles = options.profiles ?? new PlatformProfiles({ ...options.profileFetch, dev: cfg.dev });
    const replay = options.replay ?? new StoreReplayGuard(rt.store);
    const platformUsers = new PlatformUsers(rt.store, rt.secrets);

    // Raw bytes for every media type: the digest and the signature are checked before parsing.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser(
      '*',
      { parseAs: 'buffer' },
      (_req: FastifyRequest, body: Buffer, done: (err: Error | null, body?: unknown) => void) =>
        done(null, body),
    );
    app.setErrorHandler(function ucpErrorHandler(err, _request, reply) {
      return sendError(reply, toUcpError(err, rt));
    });

    const documents = async (prefixApp: FastifyInstance) => {
      const doc = (
        path: string,
        summary: string,
        build: (
          s: TenantState,
          urls: ProfileUrls,
          request: FastifyRequest,
        ) => Promise<{ body: string; type: string }>,
      ) => {
        prefixApp.get(
          path,
          {
            config: {
              openapi: {
                summary,
                tags: ['ucp'],
                responses: { 200: { description: summary }, 304: { description: 'not modified' } },
              },
            },
          },
          async (request, reply) => {
            const company = await companyOf(state, request);
            const s = await state.tenantState(company.id);
            const { body, type } = await build(s, urlsOf(state, request, company), request);
            return sendDocument(request, reply, body, type);
          },
        );
      };
      const keysOf = (s: TenantState) =>
        rt.store.read((q) => rt.keys.publishable(q, s.tenant.company_id, rt.clock()));
      doc('/.well-known/ucp', 'UCP business profile (2026-08-25)', async (s, urls) => ({
        body: JSON.stringify(
          buildBusinessProfile({
            catalog: s.catalog,
            capabilityVersion: s.config.capabilityVersion,
            urls,
            keys: await keysOf(s),
          }),
        ),
        type: 'application/json',
      }));
      doc(
        '/ucp/v1/profiles/2026-04-08',
        'UCP leaf profile for 2026-04-08 (signing_keys)',
        async (s, urls) => ({
          body: JSON.stringify(
            buildLegacyProfile({
              catalog: s.catalog,
              capabilityVersion: s.config.capabilityVersion,
              urls,
              keys: await keysOf(s),
            }),
          ),
          type: 'application/json',
        }),
      );
      doc('/ucp/v1/openapi.json', 'OpenAPI of the UCP REST binding', async (s, urls) => ({
        body: JSON.stringify(buildServiceOpenApi(s.catalog, urls)),
        type: 'application/json',
      }));
      doc('/ucp/v1/schemas/:file', 'JSON Schema of one capability', async (s, urls, request) => {
        const file = (request.params as { file: string }).file;
        const entry = file.endsWith('.json') ? s.byName.get(file.slice(0, -5)) : undefined;
        if (entry === undefined)
          throw new UcpError('not_found', `No capability schema ${JSON.stringify(file.slice(0, 200))}.`);
        return {
          body: JSON.stringify(buildCapabilitySchema(entry, s.config.capabilityVersion, urls)),
          type: 'application/json',
        };
      });
      doc('/ucp/v1/spec', 'UCP capabilities (index)', async (s) => ({
        body: buildSpecPage(s.catalog),
        type: 'text/markdown; charset=utf-8',
      }));
      doc('/ucp/v1/spec/:capability', 'What one capability does', async (s, _urls, request) => {
        const entry = s.byName.get((request.params as { capability: string }).capability);
        if (entry === undefined) throw new UcpError('not_found', 'No such capability.');
        return { body: buildSpecPage(s.catalog, entry), type: 'text/markdown; charset=utf-8' };
      });

      prefixApp.post(
        '/ucp/v1/capabilities/:capability',
        {
          config: {
            openapi: {
              summary: 'Run a UCP capability (RFC 9421 signed request and answer)',
              tags: ['ucp'],
              responses: { 200: { description: 'signed answer' } },
            },
          },
        },
        async (request, reply) => {
          const t0 = performance.now();
          const company = await companyOf(state, request);
          const s = await state.tenantState(company.id);
          const raw = Buffer.isBuffer(request.body) ? request.body : undefined;
          const url = `${request.protocol}://${request.headers.host ?? ''}${request.raw.url ?? request.url}`;
          const inbound: InboundRequest = {
            method: request.method,
            url,
            headers: fieldLinesOf(request),
            ...(raw !== undefined && raw.length > 0 ? { body: raw } : {}),
          };
          let platform;
          let userId: number;
          try {
            platform = await verifyUcpRequest(inbound, {
              config: s.config,
              profiles,
              replay,
              now: rt.clock(),
              ...(options.skewSeconds !== undefined ? { skewSeconds: options.skewSeconds } : {}),
              ...(options.maxSignatureAgeSeconds !== undefined
                ? { maxAgeSeconds: options.maxSignatureAgeSeconds }
                : {}),
            });
            userId = await platformUsers.userIdOf(platform.profileUrl);
          } catch (err) {
            const e = toUcpError(err, rt);
            request.log.info(
              { code: e.code, ucp_agent: request.headers['ucp-agent'] },
              'UCP request refused',
            );
            const capability = (request.params as { capability: string }).capability;
            return sendError(reply, e, await auditedVerifyFailure(rt, request, capability, e));
          }
          const t1 = performance.now();
          const name = (request.params as { capability: string }).capability;
          const entry = s.byName.get(name);
          const version = s.config.capabilityVersion;
          let answer: CapabilityAnswer;
          // A refusal the transport decides for a verified platform is an attempt in the tenant's
          // log, like any dispatch (spec/audit.md): recorded, and its audit_id answered.
          const audited = async (
            verbName: string,
            status: number,
            reason: Reason,
            message: string,
            hint: string,
          ): Promise<CapabilityAnswer> => {
            const recorded = await rt.recordRefusal(
              { surface: 'ucp', principal: platformPrincipal(s.tenant, platform, userId) },
              verbName,
              new VerbError(reason, message, { hint }),
            );
            return refusalOf(
              verbName,
              entry,
              version,
              recorded.error?.reason === reason ? status : 503,
              recorded.error!.reason,
              recorded.error!.message,
              recorded.error!.hint,
              {
                ...(recorded.audit_id !== undefined ? { audit_id: recorded.audit_id } : {}),
              },
            );
          };
          if (entry === undefined) {
            answer = await audited(
              name.slice(0, 200),
              404,
              'not_found',
              `No capability named ${JSON.stringify(name.slice(0, 200))} is offered here.`,
              'See the capabilities of /.well-known/ucp.',
            );
          } else if (
            raw !== undefined &&
            raw.length > 0 &&
            !JSON_TYPE.test(String(request.headers['content-type'] ?? ''))
          ) {
            answer = await audited(
              entry.verb.name,
              415,
              'unsupported_media_type',
              'The request body must be JSON.',
              'Send Content-Type: application/json.',
            );
          } else {
            try {
              const args = raw === undefined ? undefined : parseJsonBody(raw);
              const idempotencyKey = idempotencyKeyOfRequest(request.raw.rawHeaders);
              const consentNonce = headerValue(request.headers[CONSENT_NONCE_HEADER]);
              answer = await runCapability({
                rt,
                tenant: s.tenant,
                entry,
                capabilityVersion: version,
                platform,
                userId,
                args,
                ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
                ...(consentNonce !== undefined ? { consentNonce: consentNonce.trim() } : {}),
              });
            } catch (err) {
              if (!isVerbError(err)) throw err;
              answer = await audited(entry.verb.name, 400, err.reason, err.message, err.hint ?? '');
            }
          }
          const t2 = performance.now();
          const sent = await sendSigned(rt, reply, company.id, answer);
          if (options.onTimings !== undefined) {
            const t3 = performance.now();
            options.onTimings({
              verify_ms: t1 - t0,
              dispatch_ms: t2 - t1,
              sign_ms: t3 - t2,
              total_ms: t3 - t0,
            });
          }
          return sent;
        },
      );
    };
    await app.register(documents);
    await app.register(documents, { prefix: '/t/:tenant' });
  };
}

/**
 * The request's header field lines, each repeated field kept as separate lines (Node's
 * `headersDistinct`; `request.headers` joins or drops some duplicates, e.g. content-type).
 * Falls back to `request.headers` where the raw request has no `headersDistinct` (inject()).
 */
function fieldLinesOf(request: FastifyRequest): Record<string, string | string[] | undefined> {
  return (
    (request.raw.headersDistinct as Record<string, string[]> | undefined) ??
    (request.headers as Record<string, string | string[] | undefined>)
  );
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

/** The plugin `solid serve` mounts (options from the environment; see ucp-config.ts). */
export const ucpPlugin: HttpPlugin = createUcpPlugin();
