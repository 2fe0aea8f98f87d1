/**
 * The one Origin/Host allow-list every browser-facing check uses (dashboard sessions, WebMCP,
 * MCP Streamable HTTP), and the reverse-proxy settings of the HTTP server.
 *
 *   allowed origins  full origins (`https://agents.example.com`, scheme + host [+ port], no path)
 *                    configured on the server (`solid serve --allowed-origin`, SOLID_ALLOWED_ORIGINS)
 *                    or on a plugin; a bad value is an `invalid_request` VerbError at start.
 *   own origin       the origin as the socket saw it: `https` on a TLS socket else `http`, and the
 *                    raw `Host` header. It never comes from X-Forwarded-* headers, even with
 *                    trust-proxy on: forwarded headers decide the scheme of the request (so the
 *                    session cookie gets `Secure` behind an HTTPS proxy) but never widen the
 *                    Origin/Host checks. Behind a proxy the public origin must be listed: fail-closed.
 *   trust proxy      Fastify's `trustProxy` (false by default: X-Forwarded-* ignored).
 *   browser routes   (dashboard, WebMCP, sessions, sign-in, CLI login approvals) accept the own
 *                    origin only when its host is one a DNS-rebinding page cannot put in a
 *                    browser's Host header: `localhost` or an IP literal. Any other host name must
 *                    be an allowed origin (`browserOriginAllowed`).
 *
 * Spec: spec/transports.md §http-proxy, §webmcp-csrf, §mcp-http.
 */
import type { FastifyRequest } from 'fastify';
import { isIP } from 'node:net';
import { TLSSocket } from 'node:tls';
import { VerbError } from '../runtime/errors.ts';
import { refuse } from '../runtime/refusals.ts';

/**
 * Fastify `trustProxy`: true (the peer is trusted) or the addresses / CIDRs of trusted proxies.
 * No hop count: Fastify 5 never trusts X-Forwarded-Proto/Host on a hop count alone.
 */
export type TrustProxy = boolean | string | string[];

/**
 * Check and normalise allowed origins (`https://agents.example.com`, `http://localhost:5173`).
 * Returns them lower-case, without default ports, without duplicates.
 * @throws VerbError invalid_request — not an http(s) origin, or it carries a path, query,
 *   fragment or credentials.
 */
export function normalizeAllowedOrigins(values: readonly string[]): string[] {
  const out: string[] = [];
  for (const raw of values) {
    const value = raw.trim();
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    const bad =
      url === undefined ||
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      url.username !== '' ||
      url.password !== '' ||
      url.search !== '' ||
      url.hash !== '' ||
      !/^[a-z][a-z0-9+.-]*:\/\/[^/?#]+\/?$/i.test(value);
    if (bad || url === undefined) {
      throw new VerbError(
        'invalid_request',
        `Allowed origin "${value.slice(0, 200)}" is not an origin (scheme://host[:port], no path).`,
        { hint: 'Pass full origins such as https://agents.example.com (repeat the flag for several).' },
      );
    }
    if (!out.includes(url.origin)) out.push(url.origin);
  }
  return out;
}

/** The host names (`agents.example.com`, `[::1]`) of allowed origins, lower-case. */
export function hostsOfOrigins(origins: readonly string[]): string[] {
  return origins.map((o) => new URL(o).hostname.toLowerCase());
}

/**
 * This server's origin as the socket saw the request (`http://127.0.0.1:4400`), or undefined when
 * the Host header is missing or malformed. Never derived from X-Forwarded-* headers.
 */
export function directOrigin(request: FastifyRequest): string | undefined {
  const host = request.raw.headers.host;
  if (host === undefined || host === '') return undefined;
  const scheme = request.raw.socket instanceof TLSSocket ? 'https' : 'http';
  try {
    return new URL(`${scheme}://${host}`).origin;
  } catch {
    return undefined;
  }
}

/**
 * Is `origin` (already normalised with `new URL(o).origin`) acceptable for this request: this
 * server's own origin as addressed directly, or one of `allowed`?
 */
export function originAllowed(request: FastifyRequest, origin: string, allowed: readonly string[]): boolean {
  return allowed.includes(origin) || origin === directOrigin(request);
}

/**
 * Can a DNS-rebinding page make a browser send this host name (from `new URL(o).hostname`)? No
 * for `localhost` (browsers resolve it to loopback themselves) and for IP literals (no DNS
 * lookup): those are the hosts a same-origin check may trust without configuration.
 */
export function isRebindSafeHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || isIP(h) !== 0;
}

/**
 * The Origin rule of the browser routes (dashboard, WebMCP, sessions, sign-in, CLI login
 * approvals; spec/transports.md §webmcp-csrf): `origin` (normalised with `new URL(o).origin`) is
 * one of the configured `allowed` origins, or it is this server's own origin as addressed
 * directly **and** its host is `localhost` or an IP literal. A page of `http://rebind.example:3000`
 * whose name an attacker pointed at 127.0.0.1 sends matching `Origin` and `Host` headers; that
 * match proves nothing, so a host name other than those must be listed (`--allowed-origin`).
 */
export function browserOriginAllowed(
  request: FastifyRequest,
  origin: string,
  allowed: readonly string[],
): boolean {
  if (allowed.includes(origin)) return true;
  if (origin !== directOrigin(request)) return false;
  try {
    return isRebindSafeHost(new URL(origin).hostname);
  } catch {
    return false;
  }
}

/**
 * Parse a `--trust-proxy` / SOLID_TRUST_PROXY value: absent or "true" → `'loopback'` (only a
 * proxy on this machine is trusted: 127.0.0.0/8 and ::1), "false" → false, else a
 * comma-separated list of the proxies' addresses / CIDRs. Never "trust every peer": with that,
 * Fastify takes the left-most X-Forwarded-For entry, which the client writes itself; with a
 * list, the client is the right-most address that no trusted proxy added.
 * @throws VerbError invalid_request on an empty entry or a hop count (not supported: Fastify
 *   would ignore X-Forwarded-Proto with it, so cookies would silently lack `Secure`).
 */
export function parseTrustProxy(value: string | boolean | undefined): TrustProxy {
  if (value === undefined || value === true || value === 'true') return 'loopback';
  if (value === false || value === 'false' || value === '') return false;
  if (/^\d+$/.test(value)) {
    throw refuse.trustProxy(`--trust-proxy ${value}: hop counts are not supported.`);
  }
  const list = value.split(',').map((s) => s.trim());
  if (list.some((s) => s === '' || /\s/.test(s))) {
    throw refuse.trustProxy(`--trust-proxy "${value.slice(0, 200)}" is not valid.`);
  }
  return list.length === 1 ? list[0]! : list;
}
