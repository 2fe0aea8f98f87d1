/**
 * Every HTTP error is an envelope `{ ok: false, verb, error: { reason, message, hint } }`, never
 * Fastify's default error JSON and never a stack. installEnvelopeErrors(app) sets the error and
 * not-found handlers on the instance (the root, or solidVerbsPlugin's scope); mounted plugins
 * inherit them.
 *
 *   VerbError (body parser, routes)         its reason, status from the reason table
 *   FST_ERR_CTP_BODY_TOO_LARGE              413 payload_too_large
 *   FST_ERR_CTP_INVALID_MEDIA_TYPE          415 unsupported_media_type
 *   other 4xx from Fastify (bad length,
 *   schema validation of a plugin route)    400 invalid_request
 *   anything else                           500 internal_error (cause logged only)
 *   VerbError rate_limited (rate-limit.ts)  429 + Retry-After, not audited
 *   no route                                404 not_found
 *
 * Spec: spec/transports.md §http-errors.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isVerbError, VerbError } from '../../runtime/errors.ts';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { reasonInfo, type ReasonTable } from '../../spec/reasons.ts';
import { envelopeToHttp, transportEnvelope } from './envelope-map.ts';
import type { Envelope } from '../../spec/types.ts';
import { apiKeyOf, refuseWithKey } from '../../identity/api-key-auth.ts';
import { notedPrincipal } from '../../identity/request-guard.ts';

/** The verb an error answer names: the route's `verb`/`name` parameter, else "". */
export function verbOfRequest(request: FastifyRequest): string {
  const p = request.params as Record<string, unknown> | undefined;
  const v = p?.verb ?? p?.name ?? p?.tool_name;
  return typeof v === 'string' ? v.slice(0, 200) : '';
}

/** Send an envelope through envelopeToHttp (`reasons`: the runtime's table, for pack reasons). */
export function sendEnvelope(
  reply: FastifyReply,
  envelope: Envelope,
  nowMs?: number,
  reasons?: ReasonTable,
): FastifyReply {
  const { status, headers, body } = envelopeToHttp(envelope, nowMs, reasons);
  return reply.code(status).headers(headers).type('application/json; charset=utf-8').send(body);
}

/** Turn a thrown error into the transport-level envelope. */
export function errorToEnvelope(err: unknown, verb: string, limitBytes: number): Envelope {
  if (isVerbError(err)) return { ok: false, verb, error: err.toEnvelopeError() };
  const e = err as Partial<FastifyError>;
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return transportEnvelope(
        verb,
        'payload_too_large',
        `The request body exceeds the limit of ${limitBytes} bytes.`,
        'Send a smaller body; large inputs belong in several calls.',
        { limit_bytes: limitBytes },
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return transportEnvelope(
        verb,
        'unsupported_media_type',
        'The request body must be JSON.',
        'Send Content-Type: application/json with a JSON body.',
      );
  }
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    return transportEnvelope(
      verb,
      'invalid_request',
      `The request is malformed: ${String(e.message ?? 'bad request')}.`,
      'Check the method, headers and JSON body against /openapi.json.',
    );
  }
  return transportEnvelope(
    verb,
    'internal_error',
    'An unexpected error occurred; it was logged.',
    'Retry later; if it persists, report it with the time of the request.',
  );
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The surface this route's refusals are audited under (default `http`); see markRefusalSurface. */
    refusalSurface?: 'webmcp';
  }
}

/**
 * Mark the routes a plugin registers after this call whose path (below any prefix) starts with one
 * of `paths` as answering on `surface`: their refusals are audited under it. The plugin that owns
 * the routes says so; this handler knows no other transport's URLs.
 */
export function markRefusalSurface(app: FastifyInstance, surface: 'webmcp', paths: readonly string[]): void {
  app.addHook('onRoute', (route) => {
    if (paths.some((p) => route.routePath.startsWith(p)))
      route.config = { ...route.config, refusalSurface: surface };
  });
}

function refusalSurfaceOf(request: FastifyRequest): 'webmcp' | 'http' {
  return request.routeOptions.config?.refusalSurface ?? 'http';
}

/**
 * Install the envelope error handler and the 404 handler on `app`. With `rt`, a refusal a
 * transport decides itself (auth, session, CSRF, Origin — any denial reason, and bad input once a
 * route noted the caller's principal) is audited through `rt.recordRefusal`, so every denial
 * leaves a row (spec/audit.md).
 */
export function installEnvelopeErrors(app: FastifyInstance, rt?: Runtime): void {
  const limit = app.initialConfig.bodyLimit ?? 1_048_576;
  app.setErrorHandler(async function envelopeErrorHandler(err, request, reply) {
    const verb = verbOfRequest(request) || `${request.method} ${request.url.split('?')[0]!.slice(0, 150)}`;
    let envelope = errorToEnvelope(err, verbOfRequest(request), limit);
    if (envelope.error!.reason === 'internal_error')
      request.log.error({ err }, 'unhandled error in HTTP route');
    const surface = refusalSurfaceOf(request);
    const principal = notedPrincipal(request) ?? null;
    const refusal = isVerbError(err)
      ? (err as VerbError)
      : new VerbError(envelope.error!.reason, envelope.error!.message, {
          ...(envelope.error!.hint !== undefined ? { hint: envelope.error!.hint } : {}),
          ...(envelope.error!.details !== undefined ? { details: envelope.error!.details } : {}),
        });
    const info = reasonInfo(refusal.reason, rt?.registry.reasons);
    const authorization = request.headers.authorization;
    // A rate_limited answer is decided before the request is read and is not audited: auditing
    // each one would let the flood the limit stops write the log (spec/audit.md §auth-failure-windows).
    const audited = envelope.error!.reason !== 'internal_error' && envelope.error!.reason !== 'rate_limited';
    if (rt !== undefined && audited) {
      if (info.denial || info.kind === 'auth' || (info.kind === 'input' && principal !== null)) {
        // Denials always; bad input too once the caller is known (a malformed body from a signed-in
        // page is an attempt in that tenant's log).
        const recorded = await rt.recordRefusal({ surface, principal, address: request.ip }, verb, refusal);
        envelope = { ...recorded, verb: envelope.verb };
      } else if (principal === null && typeof authorization === 'string' && authorization !== '') {
        // A client error (malformed JSON, 415, 413, a prototype key, a bad header) from a caller who
        // sent a key: an attempt in that caller's tenant, audited like a malformed dispatch body (a
        // bad key is the audited auth_invalid instead). Anonymous garbage is answered, not logged.
        const recorded = await refuseWithKey(
          rt,
          { surface, address: request.ip },
          apiKeyOf(authorization),
          verb,
          refusal,
        );
        envelope = { ...recorded, verb: envelope.verb };
      }
    }
    return sendEnvelope(reply, envelope);
  });
  app.setNotFoundHandler(function envelopeNotFound(request, reply) {
    const path = request.url.split('?')[0]!.slice(0, 200);
    return sendEnvelope(
      reply,
      transportEnvelope(
        '',
        'not_found',
        `No route ${request.method} ${path}.`,
        'See /openapi.json for the routes; verbs are called with POST /api/v1/agent/dispatch/{verb}.',
      ),
    );
  });
}

/**
 * Fastify's clientErrorHandler: errors Node's HTTP parser raises before any route or hook runs
 * (bare CR/LF/NUL in a header, headers over the limit, a broken request line). Answers the
 * envelope on the socket and closes it: 431 headers_too_large for HPE_HEADER_OVERFLOW, 400
 * invalid_request for the rest. Nothing is audited: no header was parsed, so no caller is known.
 * Spec: spec/transports.md §http-errors.
 */
export function clientErrorEnvelope(err: Error & { code?: string }, socket: import('node:net').Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
  const envelope = tooLarge
    ? transportEnvelope(
        '',
        'headers_too_large',
        'The request headers exceed the size limit.',
        'Send smaller headers (the limit is 16 KiB in total); large inputs belong in the JSON body.',
      )
    : transportEnvelope(
        '',
        'invalid_request',
        'The request could not be parsed: a header or the request line holds bytes HTTP does not allow.',
        'Send header values without bare CR, LF or NUL bytes, and a well-formed request line.',
      );
  const { status, body } = envelopeToHttp(envelope);
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(text)}\r\n` +
      'Connection: close\r\n\r\n' +
      text,
  );
}

/** Longest path parameter (a verb or tool name) the router accepts; the default is 100. */
export const MAX_PATH_PARAM_LENGTH = 1024;

/**
 * Fastify's frameworkErrors: the router refused the path before any route ran — a parameter
 * longer than MAX_PATH_PARAM_LENGTH (FST_ERR_MAX_PARAM_LENGTH) or a path that is no valid URL
 * (FST_ERR_BAD_URL, e.g. `%zz`). Answers 400 invalid_request as an envelope, without echoing the
 * path. Not audited: no route parsed the request, so no caller is known.
 * Spec: spec/transports.md §http-errors.
 */
export function frameworkErrorEnvelope(
  err: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
  void sendEnvelope(
    reply,
    transportEnvelope(
      '',
      'invalid_request',
      tooLong
        ? `A path segment of the request is longer than ${MAX_PATH_PARAM_LENGTH} characters.`
        : 'The request path is not a valid URL (a malformed percent-encoding).',
      tooLong
        ? 'Verb names are at most 64 characters; list them with verbs.list.'
        : 'Percent-encode the path correctly, or send the verb name as it is listed by verbs.list.',
    ),
  );
}
