/**
 * The transports `solid serve` mounts on the HTTP server, by name, loaded on demand (like
 * KNOWN_PACKS). A transport adds itself with ONE line here:
 *
 *   mcp:    () => import('../mcp/http-plugin.ts').then((m) => m.mcpHttpPlugin),
 *
 * The loader returns an HttpPlugin (server.ts). `solid serve` prints the URLs of what got mounted
 * by asking the server which well-known routes exist (`/mcp`, `/`, `/.well-known/ucp`).
 * Spec: spec/transports.md §http.
 */
import type { HttpPlugin } from '../http/server.ts';

/** A mount of `solidVerbsPlugin`: loads the Fastify plugin of one transport on demand. */
export type HttpMount = () => Promise<HttpPlugin>;

/** The named mounts `solidVerbsPlugin` accepts by name (`mcp`, `ucp`, `webmcp`, `remote`, `oauth`, `conformance`). */
export const HTTP_MOUNTS: Readonly<Record<string, HttpMount>> = {
  webmcp: () => import('../webmcp/index.ts').then((m) => m.webmcpPlugin),
  mcp: () => import('../mcp/http-plugin.ts').then((m) => m.mcpHttpPlugin),
  ucp: () => import('../ucp/ucp-plugin.ts').then((m) => m.ucpPlugin),
  remote: () => import('../remote/remote-plugin.ts').then((m) => m.remotePlugin),
  oauth: () => import('../../oauth/plugin.ts').then((m) => m.oauthPlugin),
  platform: () => import('../../platform/plugin.ts').then((m) => m.platformPlugin),
  conformance: () =>
    import('../../conformance/declaration-plugin.ts').then((m) => m.conformanceDeclarationPlugin),
};

/**
 * Load every mount; a mount that fails to load is reported through `onError` and skipped.
 * `configured` replaces a mount's loader by name (e.g. `solid serve --toolsets` mounts a
 * configured MCP plugin).
 */
export async function loadHttpMounts(
  onError: (name: string, err: unknown) => void = () => {},
  configured: Readonly<Partial<Record<string, HttpMount>>> = {},
): Promise<HttpPlugin[]> {
  const out: HttpPlugin[] = [];
  for (const [name, mount] of Object.entries(HTTP_MOUNTS)) {
    const load = configured[name] ?? mount;
    try {
      out.push(await load());
    } catch (err) {
      onError(name, err);
    }
  }
  return out;
}
