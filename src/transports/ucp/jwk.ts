/**
 * P-256 JWK import/export for UCP signing keys (ES256 only), on node:crypto's JWK support.
 *
 * Spec: RFC 7517/7518 (JWK, EC keys); the UCP business profile (`keys[]`:
 * kid, kty, crv, x, y, use "sig", alg "ES256"; private members forbidden; spec/transports.md §ucp-keys).
 */
import { createPrivateKey, createPublicKey, ECDH, type JsonWebKey, type KeyObject } from 'node:crypto';
import { SignatureError } from './signature-error.ts';

/** A public P-256 JWK as published in a UCP profile's `keys[]`. */
export interface PublicP256Jwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid: string;
  use: 'sig';
  alg: 'ES256';
}

/** The JWK members importJwk reads; other members are ignored. */
export interface P256JwkInput {
  kty?: string;
  crv?: string;
  x?: string;
  y?: string;
  d?: string;
  kid?: string;
  use?: string;
  alg?: string;
  key_ops?: readonly string[];
  ext?: boolean;
}

const imported = new WeakMap<object, KeyObject>();
const p256Keys = new WeakMap<KeyObject, boolean>();

/** True when `key` is an EC key on P-256 (prime256v1); the answer is cached per KeyObject. */
export function isP256Key(key: KeyObject): boolean {
  let known = p256Keys.get(key);
  if (known === undefined) {
    known =
      key.type !== 'secret' &&
      key.asymmetricKeyType === 'ec' &&
      key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
    p256Keys.set(key, known);
  }
  return known;
}

/**
 * Import a P-256 JWK into a node KeyObject: a private key when `d` is present, else a public key.
 * The same JWK object imported twice returns the same KeyObject (cached per object).
 *
 * @throws SignatureError `algorithm_unsupported` when kty is not "EC", crv not "P-256", alg present
 *   and not "ES256", `use` present and not "sig", or `key_ops` present without "verify" (public)
 *   / "sign" (private); `key_not_found` when the key material is
 *   malformed (missing x/y, bad base64url, point not on the curve) so no usable key exists.
 */
export function importJwk(jwk: P256JwkInput): KeyObject {
  const cached = imported.get(jwk);
  if (cached !== undefined) return cached;
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256') {
    throw new SignatureError(
      'algorithm_unsupported',
      `unsupported key type kty=${String(jwk.kty)} crv=${String(jwk.crv)}; only EC P-256 (ES256)`,
    );
  }
  if (jwk.alg !== undefined && jwk.alg !== 'ES256') {
    throw new SignatureError('algorithm_unsupported', `JWK alg ${String(jwk.alg)} is not ES256`);
  }
  if (jwk.use !== undefined && jwk.use !== 'sig') {
    throw new SignatureError('algorithm_unsupported', `JWK use ${String(jwk.use)} is not "sig"`);
  }
  const operation = jwk.d === undefined ? 'verify' : 'sign';
  if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes(operation))) {
    throw new SignatureError('algorithm_unsupported', `JWK key_ops does not allow "${operation}"`);
  }
  if (
    typeof jwk.x !== 'string' ||
    typeof jwk.y !== 'string' ||
    (jwk.d !== undefined && typeof jwk.d !== 'string')
  ) {
    throw new SignatureError('key_not_found', 'JWK lacks the P-256 coordinates x and y');
  }
  const material: JsonWebKey = { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
  if (jwk.d !== undefined) material.d = jwk.d;
  let key: KeyObject;
  try {
    key =
      jwk.d === undefined
        ? createPublicKey({ key: material, format: 'jwk' })
        : createPrivateKey({ key: material, format: 'jwk' });
  } catch (cause) {
    throw new SignatureError('key_not_found', 'JWK is not a valid P-256 key', { cause });
  }
  imported.set(jwk, key);
  return key;
}

/**
 * Export the public half of a P-256 key as the JWK a UCP profile publishes:
 * `{ kty: "EC", crv: "P-256", x, y, kid, use: "sig", alg: "ES256" }` — never private members.
 *
 * @param key a public or private P-256 KeyObject (the public part is derived from a private key)
 * @param kid the key id verifiers match against `keyid`
 * @throws SignatureError `algorithm_unsupported` for a key that is not EC P-256
 */
export function exportPublicJwk(key: KeyObject, kid: string): PublicP256Jwk {
  if (!isP256Key(key)) {
    throw new SignatureError('algorithm_unsupported', 'only EC P-256 keys can be exported as ES256 JWKs');
  }
  // From the SPKI DER, not export({ format: 'jwk' }): a JWK export of a freshly generated key can
  // deadlock Node 20 (see src/runtime/ledger/keys/keygen.ts).
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const point = p256Point(publicKey.export({ type: 'spki', format: 'der' }));
  const x = point.subarray(1, 33).toString('base64url');
  const y = point.subarray(33, 65).toString('base64url');
  return { kty: 'EC', crv: 'P-256', x, y, kid, use: 'sig', alg: 'ES256' };
}

/** DER of a P-256 SubjectPublicKeyInfo up to the BIT STRING's content: uncompressed (65-byte point) and compressed (33-byte point). */
const SPKI_P256_UNCOMPRESSED = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex');
const SPKI_P256_COMPRESSED = Buffer.from('3039301306072a8648ce3d020106082a8648ce3d030107032200', 'hex');

/** The uncompressed point 0x04 ‖ x ‖ y of a P-256 SPKI (a compressed point is decompressed). */
function p256Point(der: Buffer): Buffer {
  if (
    der.length === SPKI_P256_UNCOMPRESSED.length + 65 &&
    der.subarray(0, SPKI_P256_UNCOMPRESSED.length).equals(SPKI_P256_UNCOMPRESSED) &&
    der[SPKI_P256_UNCOMPRESSED.length] === 0x04
  ) {
    return der.subarray(SPKI_P256_UNCOMPRESSED.length);
  }
  if (
    der.length === SPKI_P256_COMPRESSED.length + 33 &&
    der.subarray(0, SPKI_P256_COMPRESSED.length).equals(SPKI_P256_COMPRESSED)
  ) {
    return ECDH.convertKey(
      der.subarray(SPKI_P256_COMPRESSED.length),
      'prime256v1',
      undefined,
      undefined,
      'uncompressed',
    ) as Buffer;
  }
  throw new SignatureError(
    'algorithm_unsupported',
    'the key is not an EC P-256 public key in a form this server reads',
  );
}
