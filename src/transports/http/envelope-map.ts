/**
 * envelopeToHttp(envelope): THE mapping from an envelope to an HTTP answer. Pure: the status comes
 * from the reason table (src/spec/reasons.ts), the body is the envelope unchanged, and a few
 * reasons add the header HTTP clients expect:
 *
 *   ok                      200 (202 for dispatch_pending, which is `ok: false`)
 *   replayed                `Idempotent-Replayed: true`
 *   401 (auth_*)            `WWW-Authenticate: Bearer` (`error="invalid_token"` for auth_invalid and key_expired, RFC 6750 §3)
 *   daily_cap_exceeded      429 + `Retry-After` = whole seconds until `error.details.resets_at`
 *   rate_limited            429 + `Retry-After` = `error.details.retry_after_seconds` when given
 *   other 503s              `Retry-After` = `error.details.retry_after_seconds`, else 1
 *                           (store_unavailable, server_closing: retry shortly)
 *   every answer            `Cache-Control: no-store` (nonces, receipts)
 *
 * Spec: spec/transports.md §http-status, spec/reasons.md.
 */
import type { Envelope, EnvelopeError } from '../../spec/types.ts';
import { reasonInfo, type CoreReason, type ReasonTable } from '../../spec/reasons.ts';

/** An envelope as an HTTP answer: its status, headers and body. spec/transports.md §http */
export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: Envelope;
}

/**
 * Map an envelope to `{ status, headers, body }`. `nowMs` (epoch ms) is only used to turn a
 * reset time into `Retry-After` seconds; pass the runtime clock. `reasons` is the runtime's table
 * (`rt.registry.reasons`): a pack's declared reason answers its status only when it is passed.
 */
export function envelopeToHttp(
  envelope: Envelope,
  nowMs: number = Date.now(),
  reasons?: ReasonTable,
): HttpAnswer {
  const headers: Record<string, string> = { 'cache-control': 'no-store' };
  if (envelope.ok) {
    if (envelope.replayed === true) headers['idempotent-replayed'] = 'true';
    return { status: 200, headers, body: envelope };
  }
  const reason = envelope.error?.reason ?? 'internal_error';
  const status = reasonInfo(reason, reasons).status;
  if (status === 401)
    headers['www-authenticate'] =
      reason === 'auth_invalid' || reason === 'key_expired' ? 'Bearer error="invalid_token"' : 'Bearer';
  const retryAfter = retryAfterSeconds(envelope.error, nowMs) ?? (status === 503 ? 1 : undefined);
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  if (envelope.replayed === true) headers['idempotent-replayed'] = 'true';
  return { status, headers, body: envelope };
}

function retryAfterSeconds(error: EnvelopeError | undefined, nowMs: number): number | undefined {
  const details = error?.details;
  if (details === undefined) return undefined;
  if (error!.reason === 'daily_cap_exceeded' && typeof details.resets_at === 'string') {
    const at = Date.parse(details.resets_at);
    if (Number.isNaN(at)) return undefined;
    return Math.max(0, Math.ceil((at - nowMs) / 1000));
  }
  if (typeof details.retry_after_seconds === 'number' && details.retry_after_seconds >= 0)
    return Math.ceil(details.retry_after_seconds);
  return undefined;
}

/**
 * The reasons the HTTP core and the transports mounted on it decide themselves, beside
 * `rt.dispatch`: a bad body, route or header, an unknown route, a request refused before it is
 * read (origin, rate limit, missing credentials), the probes' store check, the request deadline
 * and shutdown, an unexpected error. Each is a core reason of src/spec/reasons.ts, so a misspelt
 * reason in a transport refusal does not compile.
 */
export type TransportReason = Extract<
  CoreReason,
  | 'invalid_request'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'headers_too_large'
  | 'not_found'
  | 'origin_denied'
  | 'rate_limited'
  | 'auth_required'
  | 'store_unavailable'
  | 'server_closing'
  | 'internal_error'
>;

/**
 * The envelope of a transport-level refusal (body, route, headers), for the reasons the HTTP
 * transport itself decides (`TransportReason`): invalid_request, payload_too_large,
 * unsupported_media_type, the 404 of an unknown route, … Everything else comes from `rt.dispatch`.
 */
export function transportEnvelope(
  verb: string,
  reason: TransportReason,
  message: string,
  hint?: string,
  details?: Record<string, unknown>,
): Envelope {
  const error: EnvelopeError = { reason, message };
  if (hint !== undefined) error.hint = hint;
  if (details !== undefined) error.details = details;
  return { ok: false, verb, error };
}
