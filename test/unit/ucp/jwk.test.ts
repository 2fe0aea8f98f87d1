/** P-256 JWK import/export (research brief §2.2 key rules, §9.1 test key). */
import assert from 'node:assert/strict';
import { createPublicKey, ECDH, generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, it } from 'node:test';
import { exportPublicJwk, importJwk } from '../../../src/transports/ucp/jwk.ts';
import { SignatureError } from '../../../src/transports/ucp/signature-error.ts';
import { ECC_P256_JWK, eccPrivateKey, eccPublicKey } from './rfc9421-vectors.ts';
import { generateP256KeyObjects } from '../../../src/runtime/ledger/keys/keygen.ts';

function hasCode(code: string) {
  return (error: unknown) => error instanceof SignatureError && error.code === code;
}

describe('importJwk', () => {
  it('imports the RFC test key as the same key as its PEM form', () => {
    const privateKey = importJwk(ECC_P256_JWK);
    assert.equal(privateKey.type, 'private');
    const { d: _d, ...publicJwk } = ECC_P256_JWK;
    const publicKey = importJwk(publicJwk);
    assert.equal(publicKey.type, 'public');
    assert.ok(publicKey.equals(eccPublicKey));
    const data = Buffer.from('payload');
    const signature = sign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
    assert.equal(verify('sha256', data, { key: eccPublicKey, dsaEncoding: 'ieee-p1363' }, signature), true);
  });

  it('returns the cached KeyObject for the same JWK object', () => {
    const jwk = { kty: 'EC', crv: 'P-256', x: ECC_P256_JWK.x, y: ECC_P256_JWK.y };
    assert.equal(importJwk(jwk), importJwk(jwk));
  });

  it('refuses other key types, curves, algs and uses with algorithm_unsupported', () => {
    assert.throws(
      () => importJwk({ kty: 'OKP', crv: 'Ed25519', x: 'JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs' }),
      hasCode('algorithm_unsupported'),
    );
    assert.throws(() => importJwk({ ...ECC_P256_JWK, crv: 'P-384' }), hasCode('algorithm_unsupported'));
    assert.throws(() => importJwk({ ...ECC_P256_JWK, alg: 'ES384' }), hasCode('algorithm_unsupported'));
    assert.throws(() => importJwk({ ...ECC_P256_JWK, use: 'enc' }), hasCode('algorithm_unsupported'));
    const { d: _d, ...publicJwk } = ECC_P256_JWK;
    assert.throws(() => importJwk({ ...publicJwk, key_ops: ['encrypt'] }), hasCode('algorithm_unsupported'));
    assert.equal(importJwk({ ...publicJwk, key_ops: ['verify'] }).type, 'public');
  });

  it('refuses a point that is not on the curve with key_not_found', () => {
    // The UCP 2026-04-08 example key `business_2025` is not a valid P-256 point (brief §7.9).
    const offCurve = { kty: 'EC', crv: 'P-256', x: ECC_P256_JWK.x, y: ECC_P256_JWK.x };
    assert.throws(() => importJwk(offCurve), hasCode('key_not_found'));
    assert.throws(() => importJwk({ kty: 'EC', crv: 'P-256', x: ECC_P256_JWK.x }), hasCode('key_not_found'));
  });
});

describe('exportPublicJwk', () => {
  it('exports exactly the public members UCP publishes, from a private key', () => {
    assert.deepEqual(exportPublicJwk(eccPrivateKey, 'test-key-ecc-p256'), {
      kty: 'EC',
      crv: 'P-256',
      x: ECC_P256_JWK.x,
      y: ECC_P256_JWK.y,
      kid: 'test-key-ecc-p256',
      use: 'sig',
      alg: 'ES256',
    });
  });

  it('round-trips a generated key through import', () => {
    const { publicKey } = generateP256KeyObjects();
    const jwk = exportPublicJwk(publicKey, 'k1');
    assert.equal('d' in jwk, false);
    assert.ok(importJwk(jwk).equals(publicKey));
  });

  it('reads public keys with a compressed point (e.g. `openssl ec -conv_form compressed`) exactly', () => {
    const prefix = Buffer.from('3039301306072a8648ce3d020106082a8648ce3d030107032200', 'hex');
    for (let i = 0; i < 300; i++) {
      const { publicKey } = generateP256KeyObjects();
      const full = publicKey.export({ type: 'spki', format: 'der' });
      const compressed = ECDH.convertKey(
        full.subarray(full.length - 65),
        'prime256v1',
        undefined,
        undefined,
        'compressed',
      ) as Buffer;
      const key = createPublicKey({ key: Buffer.concat([prefix, compressed]), format: 'der', type: 'spki' });
      assert.equal(
        key.export({ type: 'spki', format: 'der' }).length,
        prefix.length + 33,
        'the key keeps its compressed form',
      );
      assert.deepEqual(exportPublicJwk(key, 'k'), exportPublicJwk(publicKey, 'k'));
    }
  });

  it('refuses non-P-256 keys', () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    assert.throws(() => exportPublicJwk(publicKey, 'k'), hasCode('algorithm_unsupported'));
    const ed = generateKeyPairSync('ed25519').publicKey;
    assert.throws(() => exportPublicJwk(ed, 'k'), hasCode('algorithm_unsupported'));
  });
});
