/**
 * The one error class of the UCP message-signature layer (RFC 9421 signatures, RFC 9530 digests,
 * P-256 JWKs). Callers branch on `code`, never on `message`.
 *
 * Spec: spec/transports.md §ucp-errors (the error table) and §ucp-verify (verification failures).
 */

/**
 * Every code this layer can raise, with the HTTP status UCP gives it (spec/transports.md §ucp-errors):
 * 401 for authentication failures, 400 for malformed or unsupported requests.
 */
export const SIGNATURE_ERROR_STATUS = {
  signature_missing: 401,
  signature_invalid: 401,
  key_not_found: 401,
  signature_expired: 401,
  signature_replayed: 401,
  digest_mismatch: 400,
  algorithm_unsupported: 400,
  components_missing: 400,
} as const satisfies Record<string, 400 | 401>;

export type SignatureErrorCode = keyof typeof SIGNATURE_ERROR_STATUS;

/** Per-label outcome attached to a failed multi-signature verification. */
export interface SignatureLabelFailure {
  label: string;
  code: SignatureErrorCode;
  message: string;
}

/**
 * Raised by content-digest, rfc9421 and jwk functions.
 * `status` is the HTTP status for `code` (SIGNATURE_ERROR_STATUS); `failures` lists every
 * signature label that was tried when verifyMessage rejected a message (first one = `code`).
 */
export class SignatureError extends Error {
  readonly code: SignatureErrorCode;
  readonly status: 400 | 401;
  readonly failures: readonly SignatureLabelFailure[];

  constructor(
    code: SignatureErrorCode,
    message: string,
    options: { cause?: unknown; failures?: readonly SignatureLabelFailure[] } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SignatureError';
    this.code = code;
    this.status = SIGNATURE_ERROR_STATUS[code];
    this.failures = options.failures ?? [];
  }
}

/** True when `value` is a SignatureError (optionally with the given code). */
export function isSignatureError(value: unknown, code?: SignatureErrorCode): value is SignatureError {
  return value instanceof SignatureError && (code === undefined || value.code === code);
}
