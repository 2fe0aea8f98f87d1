/**
 * Transport and discovery errors of the UCP endpoint, in UCP's REST shape: a flat body
 * `{ "code": "...", "content": "..." }` with the HTTP status of the code. Signature failures keep
 * the codes and statuses of signature-error.ts.
 *
 *   invalid_profile_url 400 · profile_unreachable 424 · profile_malformed 422 ·
 *   version_unsupported 422 · profile_not_trusted 403 · not_found 404 · invalid_request 400 ·
 *   unsupported_media_type 415 · payload_too_large 413 · rate_limited 429 (with Retry-After) ·
 *   store_unavailable 503 · internal_error 500
 *   + signature_missing / signature_invalid / key_not_found / signature_expired /
 *     signature_replayed 401, digest_mismatch / algorithm_unsupported / components_missing 400
 *
 * Spec: spec/transports.md §ucp-errors.
 */
import { SIGNATURE_ERROR_STATUS, type SignatureError } from './signature-error.ts';

export const UCP_ERROR_STATUS = {
  ...SIGNATURE_ERROR_STATUS,
  invalid_profile_url: 400,
  profile_unreachable: 424,
  profile_malformed: 422,
  version_unsupported: 422,
  profile_not_trusted: 403,
  not_found: 404,
  invalid_request: 400,
  unsupported_media_type: 415,
  payload_too_large: 413,
  rate_limited: 429,
  store_unavailable: 503,
  internal_error: 500,
} as const satisfies Record<string, number>;

export type UcpErrorCode = keyof typeof UCP_ERROR_STATUS;

/** The flat REST error body of UCP. */
export interface UcpErrorBody {
  code: string;
  content: string;
}

/** A refusal of the UCP transport before (or instead of) a dispatch. `status` follows `code`. */
export class UcpError extends Error {
  readonly code: UcpErrorCode;
  readonly status: number;
  /** rate_limited: whole seconds until the window ends (sent as Retry-After). */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: UcpErrorCode,
    message: string,
    options: { cause?: unknown; retryAfterSeconds?: number } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'UcpError';
    this.code = code;
    this.status = UCP_ERROR_STATUS[code];
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  /** The wire body `{ code, content }`. */
  toBody(): UcpErrorBody {
    return { code: this.code, content: this.message };
  }
}

/** The same failure as a UcpError (code and status unchanged). */
export function fromSignatureError(err: SignatureError): UcpError {
  return new UcpError(err.code, err.message, { cause: err });
}
