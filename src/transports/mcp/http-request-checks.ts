/**
 * What MCP over Streamable HTTP (http-plugin.ts) checks of a request before the SDK or a session
 * sees it, and how it words a refusal: the JSON-RPC error bodies carrying the refusal's envelope,
 * the shape checks of a body (one JSON-RPC message; batches only for sessions that negotiated a
 * version before 2025-06-18) and the Origin/Host guard against DNS rebinding (a listed or
 * same-origin Origin, origin-policy.ts; on a loopback socket a loopback Host and Origin).
 *
 * Spec: spec/transports.md §mcp-http.
 */
import type { FastifyRequest } from 'fastify';
import {
  JSONRPCMessageSchema,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { Envelope } from '../../spec/types.ts';
import type { Reason } from '../../spec/reasons.ts';
import { originAllowed } from '../../identity/origin-policy.ts';

/**
 * Whether a session may send a JSON-RPC batch: only one that negotiated a protocol version
 * before 2025-06-18, which removed batching (MCP changelog 2025-06-18). Decided by the version
 * initialize negotiated, not by the request's MCP-Protocol-Version header (a client could leave
 * it out or name an older version to get batches back).
 */
export function batchesAllowed(negotiated: string): boolean {
  return negotiated < '2025-06-18';
}

/** The version an initialize request negotiates: the client's if the SDK supports it, else the latest. */
export function negotiatedVersion(body: unknown): string {
  const asked = (body as { params?: { protocolVersion?: unknown } }).params?.protocolVersion;
  return typeof asked === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(asked)
    ? asked
    : LATEST_PROTOCOL_VERSION;
}

/** A refusal this plugin decides itself: HTTP status, JSON-RPC code, and the envelope's reason, message, hint. */
export interface RpcRefusal {
  status: number;
  code: number;
  /** A core reason (a literal typo does not compile) or the reason of a VerbError relayed. */
  reason: Reason;
  message: string;
  hint: string;
  details?: Record<string, unknown>;
  headers?: Record<string, string>;
}

export const BATCH_REFUSED: RpcRefusal = {
  status: 400,
  code: -32600,
  reason: 'invalid_request',
  message:
    'Invalid Request: JSON-RPC batches are not accepted under MCP 2025-06-18 and later (the protocol removed them); send one message per POST.',
  hint: 'Send one JSON-RPC message per POST.',
};

/** A JSON-RPC error body; the refusal's envelope, if any, in `error.data.envelope`. */
export function rpcError(
  code: number,
  message: string,
  envelope?: Envelope,
  id: string | number | null = null,
): Record<string, unknown> {
  return { jsonrpc: '2.0', error: { code, message, ...(envelope ? { data: { envelope } } : {}) }, id };
}

/** The JSON-RPC id of a parsed body, when it shows one (a string or a number), else null. */
export function idOfBody(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

/** Is the body one JSON-RPC 2.0 message, or (`batch`) an array of them, as the SDK would read it? */
export function isJsonRpcBody(body: unknown): boolean {
  if (Array.isArray(body))
    return body.length > 0 && body.every((m) => JSONRPCMessageSchema.safeParse(m).success);
  return JSONRPCMessageSchema.safeParse(body).success;
}

const LOOPBACK_ADDRESSES = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** The host name of a Host header, without its port (an IPv6 literal keeps its brackets). */
function hostnameOf(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return colon >= 0 ? h.slice(0, colon) : h;
}

/**
 * The Origin/Host check of a request (DNS-rebinding protection) for these allowed origins and
 * hosts: the 403 origin_denied refusal, or undefined when the request may go on.
 */
export function originHostGuard(
  allowedOrigins: readonly string[],
  allowedHosts: ReadonlySet<string>,
): (request: FastifyRequest) => RpcRefusal | undefined {
  const forbidden = (message: string): RpcRefusal => ({
    status: 403,
    code: -32000,
    reason: 'origin_denied',
    message,
    hint: 'Call /mcp from an allowed origin and host (solid serve --allowed-origin), or from a client without an Origin header.',
  });
  return (request) => {
    const loopback = LOOPBACK_ADDRESSES.has(request.socket.localAddress ?? '');
    const host = hostnameOf(request.headers.host ?? '');
    if (loopback && !LOOPBACK_HOSTS.has(host) && !allowedHosts.has(host))
      return forbidden(
        `Forbidden: Host "${host}" is not allowed on this loopback server (DNS rebinding protection).`,
      );
    if (!loopback && allowedHosts.size > 0 && !allowedHosts.has(host))
      return forbidden(`Forbidden: Host "${host}" is not allowed.`);
    const origin = request.headers.origin;
    if (origin !== undefined) {
      let ok: boolean;
      try {
        const o = new URL(origin);
        const oHost = o.hostname
          .toLowerCase()
          .replace(/^\[?(.*?)\]?$/, (_m, h: string) => (h.includes(':') ? `[${h}]` : h));
        ok = originAllowed(request, o.origin, allowedOrigins) || (loopback && LOOPBACK_HOSTS.has(oHost));
      } catch {
        ok = false;
      }
      if (!ok) return forbidden(`Forbidden: Origin "${origin.slice(0, 200)}" is not allowed.`);
    }
    return undefined;
  };
}
