/**
 * Test keys and messages from RFC 9421 Appendix B and the UCP-shaped vector of the research brief
 * (/work/shared/research/ucp-rfc9421.md §9). Keys are the RFC's published test keys: test only.
 */
import { createPrivateKey, createPublicKey, createSecretKey } from 'node:crypto';
import type { HttpMessage } from '../../../src/transports/ucp/rfc9421.ts';

/** RFC 9421 B.1.3 test-key-ecc-p256. */
export const ECC_P256_PUBLIC_PEM = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqIVYZVLCrPZHGHjP17CTW0/+D9Lf
w0EkjqF7xB4FivAxzic30tMM4GF+hR6Dxh71Z50VGGdldkkDXZCnTNnoXQ==
-----END PUBLIC KEY-----`;
export const ECC_P256_PRIVATE_PEM = `-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIFKbhfNZfpDsW43+0+JjUr9K+bTeuxopu653+hBaXGA7oAoGCCqGSM49
AwEHoUQDQgAEqIVYZVLCrPZHGHjP17CTW0/+D9Lfw0EkjqF7xB4FivAxzic30tMM
4GF+hR6Dxh71Z50VGGdldkkDXZCnTNnoXQ==
-----END EC PRIVATE KEY-----`;
export const ECC_P256_JWK = {
  kty: 'EC',
  crv: 'P-256',
  kid: 'test-key-ecc-p256',
  d: 'UpuF81l-kOxbjf7T4mNSv0r5tN67Gim7rnf6EFpcYDs',
  x: 'qIVYZVLCrPZHGHjP17CTW0_-D9Lfw0EkjqF7xB4FivA',
  y: 'Mc4nN9LTDOBhfoUeg8Ye9WedFRhnZXZJA12Qp0zZ6F0',
} as const;
export const eccPublicKey = createPublicKey(ECC_P256_PUBLIC_PEM);
export const eccPrivateKey = createPrivateKey(ECC_P256_PRIVATE_PEM);

/** RFC 9421 B.1.4 test-key-ed25519 and B.1.5 test-shared-secret (for the deterministic B.2.5/B.2.6 checks). */
export const ed25519PublicKey = createPublicKey({
  key: Buffer.from('MCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=', 'base64'),
  format: 'der',
  type: 'spki',
});
export const sharedSecret = createSecretKey(
  Buffer.from(
    'uzvJfB4u3N0Jy4T7NZ75MDVcr8zSTInedJtkgcu46YW4XByzNJjxBdtjUkdJPBtbmHhIDi6pcl8jsasjlTMtDQ==',
    'base64',
  ),
);

export const SHA512_HELLO_WORLD =
  'sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:';
export const SHA512_GOOD_DOG =
  'sha-512=:mEWXIS7MaLRuGgxOBdODa3xqM1XdEvxoYhvlCFJ41QJgJc4GTsPp29l5oGX69wWdXymyU0rjJuahq4l5aGgfLQ==:';

/** RFC 9421 B.2 test-request (body `{"hello": "world"}`, 18 bytes). */
export function testRequest(): HttpMessage {
  return {
    method: 'POST',
    url: 'https://example.com/foo?param=Value&Pet=dog',
    headers: {
      Host: 'example.com',
      Date: 'Tue, 20 Apr 2021 02:07:55 GMT',
      'Content-Type': 'application/json',
      'Content-Digest': SHA512_HELLO_WORLD,
      'Content-Length': '18',
    },
    body: Buffer.from('{"hello": "world"}'),
  };
}

/** RFC 9421 B.2 test-response (body `{"message": "good dog"}`, 23 bytes; digest per erratum PR #2669). */
export function testResponse(): HttpMessage {
  return {
    status: 200,
    url: 'https://example.com/foo?param=Value&Pet=dog',
    headers: {
      Date: 'Tue, 20 Apr 2021 02:07:56 GMT',
      'Content-Type': 'application/json',
      'Content-Digest': SHA512_GOOD_DOG,
      'Content-Length': '23',
    },
    body: Buffer.from('{"message": "good dog"}'),
  };
}

/** Research brief §9.5: UCP-shaped request signed once with test-key-ecc-p256 (created 1738617600). */
export function ucpRequest(): HttpMessage {
  return {
    method: 'POST',
    url: 'https://merchant.example.com/checkout-sessions',
    headers: {
      'UCP-Agent': 'profile="https://platform.example/.well-known/ucp"',
      'Idempotency-Key': '550e8400-e29b-41d4-a716-446655440000',
      'Content-Digest': 'sha-256=:leXoa3FKKUAMFTdq8N3nWDxiosg58m3sa1Ijui1xSl4=:',
      'Content-Type': 'application/json',
      'Signature-Input':
        'sig1=("@method" "@authority" "@path" "ucp-agent" "idempotency-key" "content-digest" "content-type");created=1738617600;keyid="test-key-ecc-p256"',
      Signature:
        'sig1=:dxLycvC6Ploc90Ap67wtMbfj5TSsq26vz8SISDaqIKaUEkG1Z1Qp/3wQfEFvAvGXY18JtJSNms3kKb+jDiPfrQ==:',
    },
    body: Buffer.from('{"line_items":[{"item":{"id":"item_123"},"quantity":2}]}'),
  };
}

/** Research brief §9.5: the matching response (created 1738617601). */
export function ucpResponse(): HttpMessage {
  return {
    status: 201,
    url: 'https://merchant.example.com/checkout-sessions',
    headers: {
      'Content-Digest': 'sha-256=:+UseLnRVC3jNBUg6T+yWmCSrmtxQ6ePebkaY+OLX5bQ=:',
      'Content-Type': 'application/json',
      'Signature-Input':
        'sig1=("@status" "content-digest" "content-type");created=1738617601;keyid="test-key-ecc-p256"',
      Signature:
        'sig1=:mr69ZZePRrJr7Dckb1ODv35btCmYE7d6D1S6XtYFPm9URldhvDZ6Dfk3Mc/Pi/BflIJIp74IK7o9iiH925yjJA==:',
    },
    body: Buffer.from('{"ucp":{"version":"2026-08-25","status":"success"},"id":"chk_123"}'),
  };
}
