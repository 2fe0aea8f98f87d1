/**
 * P-256 JWK import/export for UCP signing keys (ES256 only), on node:crypto's JWK support.
 *
 * Spec: RFC 7517/7518 (JWK, EC keys); research brief "UCP + RFC 9421" §2.2 (profile `keys[]`:
 * kid, kty, crv, x, y, use "sig", alg "ES256"; private members forbidden) and §7.1.
 */
import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
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
    known = key.type !== 'secret' && key.asymmetricKeyType === 'ec'
      && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
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
    throw new SignatureError('algorithm_unsupported', `unsupported key type kty=${String(jwk.kty)} crv=${String(jwk.crv)}; only EC P-256 (ES256)`);
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
  if (typeof jwk.x !== 'string' || typeof jwk.y !== 'string' || (jwk.d !== undefined && typeof jwk.d !== 'string')) {
    throw new SignatureError('key_not_found', 'JWK lacks the P-256 coordinates x and y');
  }
  const material: JsonWebKey = { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
  if (jwk.d !== undefined) material.d = jwk.d;
  let key: KeyObject;
  try {
    key = jwk.d === undefined
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
  // deadlock Node 20 (see src/runtime/ledger/keygen.ts). A P-256 SPKI ends with the uncompressed
  // point 0x04 ‖ x (32 bytes) ‖ y (32 bytes).
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const der = publicKey.export({ type: 'spki', format: 'der' });
  const point = der.subarray(der.length - 65);
  if (point[0] !== 0x04) {
    throw new SignatureError('algorithm_unsupported', 'key export produced no uncompressed P-256 point');
  }
  const x = point.subarray(1, 33).toString('base64url');
  const y = point.subarray(33, 65).toString('base64url');
  return { kty: 'EC', crv: 'P-256', x, y, kid, use: 'sig', alg: 'ES256' };
}
