/**
 * The server side of remote mode, one encapsulated Fastify plugin mounted by `solid serve`
 * (http-mounts.ts, name `remote`):
 *
 *   GET  /api/v1/agent/verb-hints        runtime facts beyond the VerbRecords (verb-hints.ts)
 *   GET  /api/v1/whoami, POST /api/v1/whoami/revoke-key      (whoami.ts)
 *   POST /api/v1/cli-login, …/poll, GET …/{code}, POST …/{code}/approve|deny  (cli-login-routes.ts)
 *
 * The `Solid-Surface` header of the dispatch route is read by the agent API itself
 * (client-surface.ts). Spec: spec/transports.md §remote.
 */
import type { FastifyInstance } from 'fastify';
import type { HttpPlugin, HttpPluginOptions } from '../http/server.ts';
import { SessionStore } from '../../identity/session-store.ts';
import { CliLoginStore } from '../../identity/cli-login-store.ts';
import { registerCliLoginRoutes } from '../../transports/http/cli-login-routes.ts';
import { registerVerbHintsRoute } from '../http/verb-hints-route.ts';
import { registerWhoamiRoutes } from '../http/whoami-routes.ts';

export interface RemotePluginOptions {
  /** Lifetime of a CLI login code in seconds (default 600). */
  cliLoginTtlSeconds?: number;
}

/** Build the plugin. The `cli_logins` table (and the sessions table it reads) are created on registration. */
export function createRemotePlugin(options: RemotePluginOptions = {}): HttpPlugin {
  return async function remote(
    app: FastifyInstance,
    { rt, allowedOrigins }: HttpPluginOptions,
  ): Promise<void> {
    const sessions = new SessionStore(rt);
    await sessions.migrate();
    const logins = new CliLoginStore(rt, { ttlSeconds: options.cliLoginTtlSeconds });
    await logins.migrate();
    registerVerbHintsRoute(app, rt);
    registerWhoamiRoutes(app, rt);
    registerCliLoginRoutes(app, { rt, logins, sessions, allowedOrigins: allowedOrigins ?? [] });
  };
}

/** The plugin with default options. */
export const remotePlugin: HttpPlugin = createRemotePlugin();
