/**
 * createHttpServer(rt, options): the one Fastify 5 instance every HTTP-like transport mounts on.
 * It owns the JSON body parser (1 MiB default, JSON only), the envelope error and not-found
 * handlers (no Fastify default error JSON, no stack), the agent API (/api/v1/agent/*),
 * /openapi.json, /healthz and /readyz. It does not listen: the caller does (`solid serve`).
 *
 * Mounting another transport (MCP `/mcp`, WebMCP `/api/v1/webmcp/*` + `/webmcp.js` + dashboard
 * `/`, UCP `/.well-known/ucp`): pass it in `options.plugins` (or list it in http-mounts.ts for
 * `solid serve`). Each plugin is an ordinary `FastifyPluginAsync<HttpPluginOptions>` registered
 * encapsulated, after the core routes, with `{ rt }` as options. It inherits the JSON parser and
 * the envelope error/not-found handlers; it may add its own content-type parsers, hooks and
 * decorators in its own scope without leaking them to siblings. Routes it declares with a
 * `schema` show up in /openapi.json.
 *
 * Time limits (deadline.ts): every request is answered within `requestTimeoutMs` (a 503
 * `store_unavailable` envelope at worst), /readyz within a second, and once the server is closing
 * a request on a kept-alive connection gets a 503 `server_closing` envelope.
 *
 * Spec: spec/transports.md §http.
 */
import Fastify, { LogController, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { agentRoutes } from './agent-routes.ts';
import { healthRoutes } from './health-routes.ts';
import { installJsonBodyParser } from './json-body.ts';
import type { JsonBounds } from '../../spec/strict-json.ts';
import {
  MAX_PATH_PARAM_LENGTH,
  clientErrorEnvelope,
  frameworkErrorEnvelope,
  installEnvelopeErrors,
} from './error-handler.ts';
import { assertOneAuthorization } from './request-headers.ts';
import { openapiRoute, type OpenApiCollector } from './openapi.ts';
import { installRequestLog, requestIdOf } from './request-log.ts';
import { metricsRoute, type SolidMetrics } from './metrics.ts';
import { directOrigin, normalizeAllowedOrigins, type TrustProxy } from '../../identity/origin-policy.ts';
import { DEFAULT_RATE_LIMITS, installRateLimit, type RateLimits } from './rate-limit.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS, installClosingEnvelope, installRequestDeadline } from './deadline.ts';

/** Options every mounted plugin receives. */
export interface HttpPluginOptions {
  rt: Runtime;
  /**
   * Origins the server allows besides its own (normalised, see origin-policy.ts): every
   * Origin/Host check of the plugin adds them to its own list.
   */
  allowedOrigins?: readonly string[];
}

/** A transport mounted on the HTTP server (encapsulated Fastify plugin). */
export type HttpPlugin = FastifyPluginAsync<HttpPluginOptions>;

export interface HttpServerOptions {
  /** Maximum request body in bytes (default 1 MiB = 1_048_576); larger → 413 payload_too_large. */
  bodyLimitBytes?: number;
  /**
   * Work bound of a JSON body, checked before it is parsed (defaults: 64 levels, 1,000 keys per
   * object, 10,000 values; src/spec/strict-json.ts): beyond → 400 invalid_request.
   */
  jsonBounds?: JsonBounds;
  /** Logger (pino, to stderr). Default: a child of `rt.logger`. `false` silences request logs. */
  logger?: Logger | false;
  /** Other transports to mount, in order (see the header). */
  plugins?: readonly HttpPlugin[];
  /**
   * Fastify `trustProxy` (default false: X-Forwarded-* ignored). When on, a request from a
   * trusted proxy takes its scheme from X-Forwarded-Proto (so cookies get `Secure` behind an
   * HTTPS proxy); Origin/Host checks still use only the socket and the allow-list. `true` means
   * `'loopback'` (a proxy on this machine): list a remote proxy's address or CIDR explicitly.
   */
  trustProxy?: TrustProxy;
  /**
   * Origins allowed on every Origin/Host check besides the server's own (`https://agents.example.com`).
   * Validated here: a bad value throws VerbError invalid_request.
   */
  allowedOrigins?: readonly string[];
  /**
   * One info line per request (request id, method, path, status, duration_ms, verb, outcome,
   * audit_id; see request-log.ts). Default true when there is a logger.
   */
  requestLog?: boolean;
  /**
   * Serve `GET /metrics` (Prometheus text) from these metrics, asking for this bearer token
   * (see metrics.ts). Without it the route does not exist. A metrics listener on its own port is
   * the caller's (`solid serve --metrics-port`).
   */
  metrics?: { metrics: SolidMetrics; token: string };
  /**
   * Rate limits per API key, session and client address (rate-limit.ts; counters in the store,
   * shared by every node). Missing fields take DEFAULT_RATE_LIMITS. Default: off (an embedded
   * server, tests); `solid serve` turns them on.
   */
  rateLimits?: Partial<RateLimits>;
  /**
   * Answer every request within this many ms (deadline.ts): past it a 503 `store_unavailable`
   * envelope with Retry-After. Default DEFAULT_REQUEST_TIMEOUT_MS (10 000); 0 = no deadline.
   */
  requestTimeoutMs?: number;
}

export const DEFAULT_BODY_LIMIT_BYTES = 1_048_576;

/**
 * Build the HTTP server on a runtime: core routes first, then `options.plugins`, each
 * encapsulated. Await `app.ready()` (or `listen`) before use. Default bind address is the
 * caller's business (`solid serve` uses 127.0.0.1); `trustProxy` is off unless given.
 * @throws VerbError invalid_request — a malformed `allowedOrigins` entry, a negative rate limit.
 */
export function createHttpServer(rt: Runtime, options: HttpServerOptions = {}): FastifyInstance {
  const allowedOrigins = normalizeAllowedOrigins(options.allowedOrigins ?? []);
  const logger =
    options.logger === false ? undefined : (options.logger ?? rt.logger).child({ transport: 'http' });
  const app = Fastify({
    ...(logger === undefined ? { logger: false } : { loggerInstance: logger }),
    bodyLimit: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    trustProxy: options.trustProxy === true ? 'loopback' : (options.trustProxy ?? false),
    // Closing: installClosingEnvelope answers an envelope instead of Fastify's default 503 body.
    return503OnClosing: false,
    clientErrorHandler: clientErrorEnvelope,
    // A verb name longer than this is still answered unknown_verb (and audited, truncated);
    // beyond it, and for a path that is no valid URL, frameworkErrors answers an envelope.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: frameworkErrorEnvelope,
    genReqId: requestIdOf,
    // One line per request from request-log.ts instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
  }) as unknown as FastifyInstance;
  installClosingEnvelope(app);
  installSolidRoutes(app, rt, {
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    plugins: options.plugins ?? [],
    allowedOrigins,
    requestLog: logger !== undefined && options.requestLog !== false,
    ...(options.metrics !== undefined ? { metrics: options.metrics } : {}),
    ...(options.rateLimits !== undefined ? { rateLimits: options.rateLimits } : {}),
    ...(options.jsonBounds !== undefined ? { jsonBounds: options.jsonBounds } : {}),
  });
  return app;
}

/**
 * Install on `app` (the root, or an encapsulated scope: solidVerbsPlugin) the request ids and log,
 * the JSON body parser, the envelope error and 404 handlers, the core routes, then `plugins`.
 * `allowedOrigins` must be normalised already.
 */
export function installSolidRoutes(
  app: FastifyInstance,
  rt: Runtime,
  options: {
    plugins: readonly HttpPlugin[];
    allowedOrigins: readonly string[];
    requestLog: boolean;
    metrics?: { metrics: SolidMetrics; token: string };
    rateLimits?: Partial<RateLimits>;
    /** Request deadline in ms (deadline.ts); undefined or 0 = none. */
    requestTimeoutMs?: number;
    jsonBounds?: JsonBounds;
  },
): void {
  installRequestLog(app, rt, { log: options.requestLog });
  installRequestDeadline(app, rt, options.requestTimeoutMs ?? 0);
  const openapi: OpenApiCollector = { routes: [] };
  app.addHook('onRoute', (route) => {
    openapi.routes.push(route);
  });
  installJsonBodyParser(app, options.jsonBounds);
  installEnvelopeErrors(app, rt);
  // Before any route reads the key: one Authorization line or none (spec/transports.md §http-auth).
  // The hooks every request passes take `done` (no promise and no extra tick per request).
  app.addHook('onRequest', (request, _reply, done) => {
    try {
      assertOneAuthorization(request.raw.rawHeaders);
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  });
  // With OAuth mounted (src/oauth), every 401 Bearer challenge names the protected-resource
  // metadata (RFC 9728 §5.1), so a connector learns where to authorize. spec/oauth.md §resource-server
  app.addHook('onSend', (request, reply, payload, done) => {
    const bearer = rt.tenants.bearer;
    if (bearer === undefined) return done(null, payload);
    const h = reply.getHeader('www-authenticate');
    if (typeof h !== 'string' || !/^Bearer\b/.test(h) || h.includes('resource_metadata='))
      return done(null, payload);
    let origin: string | undefined;
    try {
      origin = directOrigin(request);
      if (origin !== undefined) {
        const url = bearer.resourceMetadataUrl(origin, request.url);
        void reply.header(
          'www-authenticate',
          `${h}${h.trim() === 'Bearer' ? ' ' : ', '}resource_metadata="${url}"`,
        );
      }
    } catch (err) {
      return done(err as Error);
    }
    done(null, payload);
  });
  if (options.rateLimits !== undefined)
    installRateLimit(app, rt, { ...DEFAULT_RATE_LIMITS, ...options.rateLimits });
  void app.register(healthRoutes, { rt });
  void app.register(agentRoutes, { rt });
  void app.register(openapiRoute, { rt, collector: openapi, allowedOrigins: options.allowedOrigins });
  if (options.metrics !== undefined) void app.register(metricsRoute, options.metrics);
  for (const plugin of options.plugins)
    void app.register(plugin, { rt, allowedOrigins: options.allowedOrigins });
}
