/**
 * sendRequest(request): one HTTP(S) exchange with bounded time, for the remote client
 * (api-client.ts). node:http/https rather than fetch, so the connect phase has its own timeout and
 * every failure has a kind the client can explain:
 *
 *   dns               the host name does not resolve (ENOTFOUND, EAI_AGAIN)
 *   refused           nothing listens on that port (ECONNREFUSED)
 *   connect_timeout   no TCP (and, for https, TLS) connection within connectTimeoutMs
 *   tls               the TLS handshake failed: https to a plain-http port, an untrusted or
 *                     mismatched certificate (ERR_SSL_*, EPROTO, CERT_*, …)
 *   reset             the connection dropped mid-exchange (ECONNRESET, EPIPE, socket hang up)
 *   timeout           no complete answer within timeoutMs (from the start of the request)
 *   aborted           the caller's AbortSignal fired
 *   too_large         the answer exceeds maxBodyBytes
 *   protocol          the peer does not speak HTTP (HPE_*)
 *
 * `sent` tells whether the request body was handed to the connection (for writes: the server may
 * have acted on it). Spec: spec/transports.md §remote.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';

export interface HttpRequest {
  method: 'GET' | 'POST' | 'DELETE';
  url: URL;
  headers: Record<string, string>;
  /** JSON text (content-type is the caller's). */
  body?: string;
  /** Time to establish TCP (+ TLS) in ms. */
  connectTimeoutMs: number;
  /** Time for the whole exchange, answer body included, in ms. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Largest answer body in bytes (default 32 MiB). */
  maxBodyBytes?: number;
  /** Connection pool (keep-alive); default a fresh connection. */
  agent?: http.Agent;
}

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export type FailureKind =
  'dns' | 'refused' | 'connect_timeout' | 'tls' | 'reset' | 'timeout' | 'aborted' | 'too_large' | 'protocol';

/** A request that produced no HTTP answer. */
export class RequestFailure extends Error {
  override readonly name = 'RequestFailure';
  constructor(
    readonly kind: FailureKind,
    message: string,
    /** The system or OpenSSL code, when there is one. */
    readonly code: string | undefined,
    /** Was the request handed to the connection (the server may have seen it)? */
    readonly sent: boolean,
  ) {
    super(message);
  }
}

export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

const TLS_CODE = /^(ERR_SSL_|ERR_TLS_|EPROTO$|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_OSSL_)/;

/** Classify a socket or request error. */
export function failureKindOf(err: NodeJS.ErrnoException): FailureKind {
  const code = err.code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return 'dns';
  if (code === 'ECONNREFUSED') return 'refused';
  if (TLS_CODE.test(code) || /ssl|tls|certificate/i.test(err.message)) return 'tls';
  if (code.startsWith('HPE_')) return 'protocol';
  return 'reset';
}

/** Send one request; resolves with any HTTP answer (every status), rejects with RequestFailure. */
export function sendRequest(req: HttpRequest): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    const mod = req.url.protocol === 'https:' ? https : http;
    const maxBody = req.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const headers: Record<string, string> = { ...req.headers };
    if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));
    let settled = false;
    let sent = false;
    let connectTimer: NodeJS.Timeout | undefined;
    const totalTimer = setTimeout(
      () => fail('timeout', `no complete answer within ${req.timeoutMs} ms`),
      req.timeoutMs,
    );
    const onAbort = () => fail('aborted', 'the request was cancelled');

    const cleanup = () => {
      clearTimeout(totalTimer);
      if (connectTimer !== undefined) clearTimeout(connectTimer);
      req.signal?.removeEventListener('abort', onAbort);
    };
    const fail = (kind: FailureKind, message: string, code?: string) => {
      if (settled) return;
      settled = true;
      cleanup();
      reject(new RequestFailure(kind, message, code, sent));
      request.destroy();
    };

    const request = mod.request(req.url, { method: req.method, headers, agent: req.agent ?? false });
    request.on('socket', (socket: Socket) => {
      if (!socket.connecting) return;
      connectTimer = setTimeout(
        () => fail('connect_timeout', `no connection within ${req.connectTimeoutMs} ms`),
        req.connectTimeoutMs,
      );
      socket.once(req.url.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
        if (connectTimer !== undefined) clearTimeout(connectTimer);
      });
    });
    request.on('finish', () => {
      sent = true;
    });
    request.on('error', (err: NodeJS.ErrnoException) => fail(failureKindOf(err), err.message, err.code));
    request.on('response', (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > maxBody) return fail('too_large', `the answer exceeds ${maxBody} bytes`);
        chunks.push(chunk);
      });
      res.on('error', (err: NodeJS.ErrnoException) => fail('reset', err.message, err.code));
      res.on('aborted', () => fail('reset', 'the connection closed before the answer was complete'));
      res.on('end', () => {
        if (settled) return;
        if (!res.complete) return fail('reset', 'the connection closed before the answer was complete');
        settled = true;
        cleanup();
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
    });
    if (req.signal?.aborted) return onAbort();
    req.signal?.addEventListener('abort', onAbort, { once: true });
    request.end(req.body);
  });
}
