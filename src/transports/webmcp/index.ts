/**
 * The WebMCP transport and the dashboard, as one encapsulated Fastify plugin mounted on the HTTP
 * server (`createHttpServer(rt, { plugins: [webmcpPlugin] })`). It inherits the HTTP transport's
 * JSON body parser and envelope error handlers and adds:
 *
 *   sessions   POST/GET/DELETE /api/v1/session                 (session-routes.ts)
 *   WebMCP     GET /api/v1/webmcp/manifest, POST /api/v1/webmcp/execute/{tool_name}  (webmcp-routes.ts)
 *   browser    GET /, /dashboard.js, /dashboard.css, /webmcp.js                 (dashboard-routes.ts)
 *   dashboard  GET /api/v1/dashboard/catalog, POST /api/v1/dashboard/dispatch/{verb}  (dashboard-api-routes.ts)
 *
 * Session and CSRF design: session-store.ts and request-guard.ts. Browser side: web/.
 * Spec: spec/transports.md §webmcp.
 */
import type { FastifyInstance } from 'fastify';
import type { HttpPlugin, HttpPluginOptions } from '../http/server.ts';
import { normalizeAllowedOrigins } from '../../identity/origin-policy.ts';
import { markRefusalSurface } from '../http/error-handler.ts';
import { registerDashboardApiRoutes } from './dashboard-api-routes.ts';
import { registerDashboardRoutes } from './dashboard-routes.ts';
import { registerSessionRoutes } from '../../transports/http/session-routes.ts';
import { SessionStore } from '../../identity/session-store.ts';
import { registerWebmcpRoutes } from './webmcp-routes.ts';
import { registerHumanRoutes } from './human-routes.ts';

export {
  SessionStore,
  SESSION_COOKIE,
  CSRF_COOKIE,
  CSRF_HEADER,
  DEFAULT_SESSION_TTL_SECONDS,
} from '../../identity/session-store.ts';
export { webmcpManifest, toWebmcpTool, type WebmcpTool, type WebmcpManifest } from './manifest.ts';

/** Default body limit of the execute route: 256 KiB, in bytes. */
export const DEFAULT_EXECUTE_BODY_LIMIT_BYTES = 262_144;

/** Options of the WebMCP plugin (the dashboard and its WebMCP module). spec/transports.md §webmcp */
export interface WebmcpPluginOptions {
  /** Absolute session lifetime in seconds (default 8 h). */
  sessionTtlSeconds?: number;
  /**
   * Origins accepted besides the server's own on state-changing requests (e.g. `https://app.example`),
   * added to the server's `allowedOrigins`. A malformed one throws VerbError invalid_request.
   */
  allowedOrigins?: readonly string[];
  /** Body limit of the execute and dashboard dispatch routes in bytes (default 256 KiB); larger → 413 payload_too_large. */
  executeBodyLimitBytes?: number;
  /** Serve the dashboard (page, assets, /api/v1/dashboard/*) (default true). `/webmcp.js` is always served. */
  dashboard?: boolean;
}

/**
 * Build the plugin. The `web_sessions` table is created on registration (migration scope `webmcp`).
 * Mount it with `createHttpServer(rt, { plugins: [createWebmcpPlugin(options)] })`.
 */
export function createWebmcpPlugin(options: WebmcpPluginOptions = {}): HttpPlugin {
  const own = normalizeAllowedOrigins(options.allowedOrigins ?? []);
  return async function webmcp(app: FastifyInstance, opts: HttpPluginOptions): Promise<void> {
    const { rt } = opts;
    const allowedOrigins = [...new Set([...own, ...(opts.allowedOrigins ?? [])])];
    const sessions = new SessionStore(rt, { ttlSeconds: options.sessionTtlSeconds });
    await sessions.migrate();
    const bodyLimitBytes = options.executeBodyLimitBytes ?? DEFAULT_EXECUTE_BODY_LIMIT_BYTES;
    // Refusals of the session and WebMCP routes are audited on the webmcp surface; the dashboard's on http.
    markRefusalSurface(app, 'webmcp', ['/api/v1/webmcp', '/api/v1/session']);
    registerSessionRoutes(app, { rt, sessions, allowedOrigins });
    registerWebmcpRoutes(app, { rt, sessions, allowedOrigins, executeBodyLimitBytes: bodyLimitBytes });
    registerDashboardRoutes(app, { dashboard: options.dashboard ?? true });
    if (options.dashboard ?? true) {
      registerDashboardApiRoutes(app, { rt, sessions, allowedOrigins, bodyLimitBytes });
      registerHumanRoutes(app, { rt, sessions, allowedOrigins, bodyLimitBytes });
    }
  };
}

/** The plugin with default options. */
export const webmcpPlugin: HttpPlugin = createWebmcpPlugin();
