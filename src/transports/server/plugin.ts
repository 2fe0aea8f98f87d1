/**
 * The transports on a Fastify app of your own, and a standalone server.
 *
 *   await app.register(solidVerbsPlugin, { rt, prefix: '/agents', mounts: ['mcp', 'ucp'] });
 *   const { url, close } = await startServer(rt, { port: 0 });
 *
 * solidVerbsPlugin is an encapsulated plugin (deliberately not fastify-plugin): our JSON-only body
 * parser, envelope error handler and envelope 404 apply under the prefix only, so the app's other
 * routes keep Fastify's defaults and the app's own 404. Spec: spec/transports.md §http.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { VerbError } from '../../runtime/errors.ts';
import { HTTP_MOUNTS } from './http-mounts.ts';
import {
  createHttpServer,
  installSolidRoutes,
  type HttpPlugin,
  type HttpServerOptions,
} from '../http/server.ts';
import { normalizeAllowedOrigins } from '../../identity/origin-policy.ts';

/** A transport to mount: a name of HTTP_MOUNTS (`mcp`, `webmcp`, `ucp`, `remote`, `conformance`) or a plugin. */
export type SolidMount = keyof typeof HTTP_MOUNTS | HttpPlugin;

/** Options of `solidVerbsPlugin`: the runtime, the prefix, the mounts to add. docs/authoring.md §10 */
export interface SolidVerbsPluginOptions {
  /** The runtime whose verbs are served. */
  rt: Runtime;
  /**
   * Where everything is mounted (Fastify's own register option): `/agents` serves
   * `/agents/api/v1/agent/dispatch/{verb}`, `/agents/openapi.json`, `/agents/healthz`, `/agents/mcp`…
   * Default: the root.
   */
  prefix?: string;
  /**
   * Transports besides the agent API, openapi and health, in order. `webmcp` (WebMCP and the
   * dashboard) needs the root prefix: its page fetches absolute `/api/v1/...` paths.
   */
  mounts?: readonly SolidMount[];
  /** Origins allowed on Origin/Host checks besides the server's own (see HttpServerOptions). */
  allowedOrigins?: readonly string[];
  /** Write one log line per request under the prefix (request-log.ts). Default false: the app logs. */
  requestLog?: boolean;
  /** Rate limits under the prefix (see HttpServerOptions.rateLimits). Default: off. */
  rateLimits?: HttpServerOptions['rateLimits'];
  /** Request deadline under the prefix in ms (see HttpServerOptions.requestTimeoutMs). Default: off (the app's own). */
  requestTimeoutMs?: number;
}

/**
 * Fastify plugin serving the agent API (`/api/v1/agent/*`), `/openapi.json`, `/healthz`, `/readyz`
 * and the chosen `mounts` under `prefix`, with the JSON body parser (the app's `bodyLimit`) and
 * envelope errors scoped to it.
 * Throws at registration (app.ready() rejects): VerbError invalid_request — an unknown mount name,
 * `webmcp` under a prefix other than the root, or a malformed `allowedOrigins` entry.
 */
export const solidVerbsPlugin: FastifyPluginAsync<SolidVerbsPluginOptions> = async (scope, options) => {
  const prefix = scope.prefix;
  const plugins: HttpPlugin[] = [];
  for (const mount of options.mounts ?? []) {
    if (typeof mount === 'function') {
      plugins.push(mount);
      continue;
    }
    const load = HTTP_MOUNTS[mount];
    if (load === undefined)
      throw new VerbError('invalid_request', `solidVerbsPlugin: no transport named "${String(mount)}".`, {
        hint: `Mount one of ${Object.keys(HTTP_MOUNTS).join(', ')}, or pass a plugin function.`,
      });
    if (mount === 'webmcp' && prefix !== '' && prefix !== '/')
      throw new VerbError(
        'invalid_request',
        `solidVerbsPlugin: the webmcp mount (WebMCP and the dashboard) needs the root prefix, not "${prefix}".`,
        {
          hint: 'Its page fetches absolute /api/v1/... paths: register a second solidVerbsPlugin with mounts: ["webmcp"] and no prefix, or leave webmcp out.',
        },
      );
    plugins.push(await load());
  }
  installSolidRoutes(scope as unknown as FastifyInstance, options.rt, {
    plugins,
    allowedOrigins: normalizeAllowedOrigins(options.allowedOrigins ?? []),
    requestLog: options.requestLog === true,
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    ...(options.rateLimits !== undefined ? { rateLimits: options.rateLimits } : {}),
  });
};

export interface StartServerOptions extends HttpServerOptions {
  /** TCP port (0 = any free port). Default 4400. */
  port?: number;
  /** Interface to bind. Default 127.0.0.1. */
  host?: string;
}

/** What `startServer` resolves with: the URL it listens on, the Fastify app, and close(). */
export interface RunningServer {
  /** `http://host:port` as bound (the real port when `port` was 0). */
  url: string;
  /** The Fastify instance (already listening). */
  app: FastifyInstance;
  /** Stop listening and close the app's plugins; resolves when the port is free. Not rt.close(). */
  close(): Promise<void>;
}

/**
 * A standalone server: createHttpServer(rt, options) listening on `host:port`.
 * Rejects with the listen error (EADDRINUSE…) or VerbError invalid_request for a bad
 * `allowedOrigins` entry. The runtime stays open after close(); close it yourself.
 */
export async function startServer(rt: Runtime, options: StartServerOptions = {}): Promise<RunningServer> {
  const { port = 4400, host = '127.0.0.1', ...http } = options;
  const app = createHttpServer(rt, http);
  try {
    await app.listen({ port, host });
  } catch (err) {
    await app.close();
    throw err;
  }
  const address = app.server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return { url: `http://${shown}:${bound}`, app, close: () => app.close() };
}
