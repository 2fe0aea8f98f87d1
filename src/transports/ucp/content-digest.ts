/**
 * RFC 9530 `Content-Digest` over the raw message content bytes (as sent, after any
 * Content-Encoding; no JSON canonicalization). UCP signs with `sha-256`; `sha-512` is accepted.
 *
 * Spec: RFC 9530 §2 and §5 (Content-Digest is an RFC 8941 Dictionary of algorithm → Byte Sequence);
 * RFC 9530 (Content-Digest) and the UCP specification's signing order (digest checked before the signature).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { parseDictionary, serializeDictionary, type Dictionary } from 'structured-headers';
import { SignatureError } from './signature-error.ts';

/** Digest algorithms this module creates and checks (RFC 9530 "Active" algorithms). */
export type DigestAlgorithm = 'sha-256' | 'sha-512';

const NODE_HASH: Readonly<Record<DigestAlgorithm, string>> = { 'sha-256': 'sha256', 'sha-512': 'sha512' };

/** `sha-256=:<44 base64 chars>:` alone (optional surrounding spaces, as RFC 8941 parsing allows). */
const SINGLE_SHA256 = /^ *sha-256=:([A-Za-z0-9+/]{43}=): *$/;

function isDigestAlgorithm(name: string): name is DigestAlgorithm {
  return name === 'sha-256' || name === 'sha-512';
}

/** Raw digest bytes of `body` for one algorithm. */
export function digestBytes(body: Uint8Array, algorithm: DigestAlgorithm = 'sha-256'): Buffer {
  return createHash(NODE_HASH[algorithm]).update(body).digest();
}

/**
 * Build a `Content-Digest` header value, e.g. `sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:`.
 *
 * @param body the exact content bytes sent on the wire (Buffer/Uint8Array; empty for no body)
 * @param algorithms one or more of `sha-256` (UCP default) and `sha-512`, serialized in that order
 * @returns the RFC 8941 Dictionary serialization (members joined by ", ")
 */
export function createContentDigest(
  body: Uint8Array,
  algorithms: DigestAlgorithm | readonly DigestAlgorithm[] = 'sha-256',
): string {
  const list = typeof algorithms === 'string' ? [algorithms] : algorithms;
  if (list.length === 0) throw new SignatureError('algorithm_unsupported', 'no digest algorithm given');
  const dict: Dictionary = new Map();
  for (const algorithm of list) {
    if (!isDigestAlgorithm(algorithm)) {
      throw new SignatureError(
        'algorithm_unsupported',
        `digest algorithm ${String(algorithm)} is not supported`,
      );
    }
    dict.set(algorithm, [Uint8Array.from(digestBytes(body, algorithm)), new Map()]);
  }
  return serializeDictionary(dict);
}

/**
 * Check a received `Content-Digest` header against the raw body bytes.
 *
 * Every supported member (`sha-256`, `sha-512`) present must match; unknown or deprecated
 * algorithms (md5, sha, crc32c, …) are ignored.
 *
 * @param header the header value; several lines (string[]) are joined with ", " before parsing
 * @param body the exact content bytes received (empty Uint8Array for no body)
 * @returns the algorithms that were checked and matched
 * @throws SignatureError `digest_mismatch` (header absent, not a valid Dictionary, a member that
 *   is not a Byte Sequence, or a digest that differs); `algorithm_unsupported` (no supported
 *   algorithm listed)
 */
export function verifyContentDigest(
  header: string | readonly string[] | undefined,
  body: Uint8Array,
): DigestAlgorithm[] {
  const raw = typeof header === 'string' ? header : header?.join(', ');
  if (raw === undefined || raw.trim() === '') {
    throw new SignatureError('digest_mismatch', 'Content-Digest header is missing');
  }
  // The common form (one sha-256 member, what UCP signs) without the generic dictionary parser:
  // the same bytes the parser would decode, compared the same way.
  const single = SINGLE_SHA256.exec(raw);
  if (single !== null) {
    const received = Buffer.from(single[1]!, 'base64');
    const expected = digestBytes(body, 'sha-256');
    if (received.length !== expected.length || !timingSafeEqual(received, expected)) {
      throw new SignatureError('digest_mismatch', 'Content-Digest sha-256 does not match the body');
    }
    return ['sha-256'];
  }
  let dict: Dictionary;
  try {
    dict = parseDictionary(raw);
  } catch (cause) {
    throw new SignatureError('digest_mismatch', 'Content-Digest is not a valid structured-field dictionary', {
      cause,
    });
  }
  const checked: DigestAlgorithm[] = [];
  for (const [name, member] of dict) {
    if (!isDigestAlgorithm(name)) continue;
    const value = member[0];
    if (!(value instanceof ArrayBuffer)) {
      throw new SignatureError('digest_mismatch', `Content-Digest member ${name} is not a byte sequence`);
    }
    const expected = digestBytes(body, name);
    const received = new Uint8Array(value);
    if (received.length !== expected.length || !timingSafeEqual(received, expected)) {
      throw new SignatureError('digest_mismatch', `Content-Digest ${name} does not match the body`);
    }
    checked.push(name);
  }
  if (checked.length === 0) {
    throw new SignatureError(
      'algorithm_unsupported',
      'Content-Digest lists no supported algorithm (sha-256, sha-512)',
    );
  }
  return checked;
}
