/**
 * New ES256 (EC P-256) key pairs, returned as JWKs. The one place keys are generated (tenant
 * signing keys, `solid ucp keygen`).
 *
 * Why JWKs and not KeyObjects: on Node 20, exporting a freshly generated EC KeyObject as a JWK
 * (`key.export({ format: 'jwk' })`, also via `createPublicKey(privateKey)`) can deadlock the
 * process — the export holds the key's mutex while it allocates, a GC then finalizes the
 * finished key-generation job, whose destructor waits for the same mutex (main thread parked in
 * futex_wait forever; reproduced in a loop within 20 000 keys). Asking the generator itself for
 * JWK output encodes the keys while the job is alive, so that lock is never contended. Import the
 * JWK with createPrivateKey / createPublicKey ({ format: 'jwk' }) when a KeyObject is needed.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';

/** A P-256 key pair as JWKs: `publicJwk` {kty, crv, x, y}; `privateJwk` adds `d`. */
export interface P256JwkPair {
  publicJwk: { kty: 'EC'; crv: 'P-256'; x: string; y: string };
  privateJwk: { kty: 'EC'; crv: 'P-256'; x: string; y: string; d: string };
}

/** generateKeyPairSync with JWK output encodings (supported by Node, not declared by @types/node). */
const generateJwkPair = generateKeyPairSync as unknown as (
  type: 'ec',
  options: {
    namedCurve: 'P-256';
    publicKeyEncoding: { format: 'jwk' };
    privateKeyEncoding: { format: 'jwk' };
  },
) => { publicKey: { x: string; y: string }; privateKey: { x: string; y: string; d: string } };

/** Generate a P-256 key pair (synchronous, ~0.1 ms) as JWKs. */
export function generateP256Jwk(): P256JwkPair {
  const { publicKey, privateKey } = generateJwkPair('ec', {
    namedCurve: 'P-256',
    publicKeyEncoding: { format: 'jwk' },
    privateKeyEncoding: { format: 'jwk' },
  });
  return {
    publicJwk: { kty: 'EC', crv: 'P-256', x: publicKey.x, y: publicKey.y },
    privateJwk: { kty: 'EC', crv: 'P-256', x: privateKey.x, y: privateKey.y, d: privateKey.d },
  };
}

/**
 * A new P-256 pair as KeyObjects that are safe to export: generated as JWKs (generateP256Jwk) and
 * imported, never the generator's own KeyObjects, which can deadlock an export (see above).
 * For tests, benchmarks and tools that want KeyObjects.
 */
export function generateP256KeyObjects(): { privateKey: KeyObject; publicKey: KeyObject } {
  const pair = generateP256Jwk();
  return {
    privateKey: createPrivateKey({ key: pair.privateJwk, format: 'jwk' }),
    publicKey: createPublicKey({ key: pair.publicJwk, format: 'jwk' }),
  };
}
