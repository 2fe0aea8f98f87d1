/**
 * Reading the idempotency header of the agent API (the API key of `Authorization` is read by
 * src/identity/api-key-auth.ts `apiKeyOf`). Both are transport facts; what the
 * values mean (is the key valid, is the idempotency key acceptable) is decided by the runtime.
 *
 * Spec: spec/transports.md §http-auth, §http-idempotency.
 */
import { parseItem } from 'structured-headers';
import { VerbError } from '../../runtime/errors.ts';

/**
 * Refuse a request carrying more than one `Authorization` (or `Proxy-Authorization`) line: Node
 * keeps the first and drops the rest, while a proxy may read the last, so the two would disagree
 * on who is calling. `rawHeaders` is Node's flat [name, value, …] list.
 * Throws VerbError invalid_request (400). Spec: spec/transports.md §http-auth.
 */
export function assertOneAuthorization(rawHeaders: readonly string[]): void {
  let seen = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() !== 'authorization') continue;
    if (++seen > 1)
      throw new VerbError('invalid_request', 'The request carries more than one Authorization header.', {
        hint: 'Send exactly one Authorization: Bearer <key> header.',
      });
  }
}

/**
 * The `Idempotency-Key` header (draft-ietf-httpapi-idempotency-key: an RFC 8941 sf-string).
 * Accepts a quoted sf-string (`"abc"`, parameters ignored) or, leniently, a bare value such as a
 * UUID (`550e8400-e29b-41d4-a716-446655440000`) taken as-is; the runtime checks length and
 * characters (idempotency_key_invalid). Returns undefined when absent.
 * Throws VerbError invalid_request when a quoted value is not a valid sf-string.
 */
export function idempotencyKeyOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (!value.startsWith('"')) return value;
  let item: ReturnType<typeof parseItem>;
  try {
    item = parseItem(value);
  } catch (err) {
    throw new VerbError(
      'invalid_request',
      `The Idempotency-Key header is not a valid structured-field string: ${(err as Error).message}`,
      {
        hint: 'Send Idempotency-Key: "<key>" (an RFC 8941 string) or a bare token such as a UUID.',
      },
    );
  }
  if (typeof item[0] !== 'string') {
    throw new VerbError('invalid_request', 'The Idempotency-Key header must be a string.', {
      hint: 'Send Idempotency-Key: "<key>".',
    });
  }
  return item[0];
}

/**
 * The `Idempotency-Key` of a request from its raw header lines (Node joins repeated lines of an
 * unknown header with ", ", which would make `a` and `b` the key `"a, b"`): one line → as
 * idempotencyKeyOf; two or more → VerbError idempotency_key_invalid (400); none → undefined.
 */
export function idempotencyKeyOfRequest(rawHeaders: readonly string[]): string | undefined {
  const lines: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2)
    if (rawHeaders[i]!.toLowerCase() === 'idempotency-key') lines.push(rawHeaders[i + 1]!);
  if (lines.length > 1) {
    throw new VerbError(
      'idempotency_key_invalid',
      `The request carries ${lines.length} Idempotency-Key header lines; exactly one is allowed.`,
      { hint: 'Send one Idempotency-Key header with one key.' },
    );
  }
  return idempotencyKeyOf(lines[0]);
}
