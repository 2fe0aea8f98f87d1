/**
 * Reading the `Cookie` request header and writing `Set-Cookie` values (RFC 6265), for the browser
 * session of the WebMCP transport and the dashboard. Kept here instead of a cookie plugin so the
 * WebMCP plugin adds no decorator that could clash with another plugin on the same server.
 *
 * Spec: spec/transports.md §webmcp-session.
 */

/**
 * Parse a `Cookie` header into name → value (first occurrence wins, values URI-decoded when they
 * decode cleanly). Malformed pairs are skipped, never thrown.
 */
export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (header === undefined || header === '') return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (name === '' || Object.hasOwn(out, name)) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    try {
      out[name] = decodeURIComponent(value);
    } catch {
      out[name] = value;
    }
  }
  return out;
}

/** Attributes of a cookie written by {@link serializeCookie}. */
export interface CookieAttributes {
  /** Lifetime in seconds; 0 deletes the cookie. */
  maxAgeSeconds: number;
  httpOnly: boolean;
  /** Add `Secure` (the request came over https). */
  secure: boolean;
  /** Always `Strict` for session material; exposed for completeness. */
  sameSite?: 'Strict' | 'Lax';
  /** Default `/`. */
  path?: string;
}

/**
 * One `Set-Cookie` header value: `name=value; Path=/; Max-Age=N; SameSite=Strict[; HttpOnly][; Secure]`.
 * Throws TypeError when the name or value contains characters a cookie cannot carry (our tokens are
 * base64url, so this never happens for them).
 */
export function serializeCookie(name: string, value: string, attrs: CookieAttributes): string {
  if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name))
    throw new TypeError(`invalid cookie name ${JSON.stringify(name)}`);
  if (!/^[\x21\x23-\x2B\x2D-\x3A\x3C-\x5B\x5D-\x7E]*$/.test(value))
    throw new TypeError(`invalid cookie value for ${name}`);
  const parts = [
    `${name}=${value}`,
    `Path=${attrs.path ?? '/'}`,
    `Max-Age=${Math.max(0, Math.floor(attrs.maxAgeSeconds))}`,
    `SameSite=${attrs.sameSite ?? 'Strict'}`,
  ];
  if (attrs.maxAgeSeconds <= 0) parts.push('Expires=Thu, 01 Jan 1970 00:00:00 GMT');
  if (attrs.httpOnly) parts.push('HttpOnly');
  if (attrs.secure) parts.push('Secure');
  return parts.join('; ');
}
