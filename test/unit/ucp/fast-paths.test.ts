/**
 * The hot-path shortcuts of the UCP transport agree with the generic RFC 9421 / RFC 9530 code:
 * signJsonAnswer builds the same base and fields as signMessage, the single-sha-256 Content-Digest
 * fast path accepts and refuses exactly what the dictionary parser does, and a low-s / high-s
 * signature pair keeps one replay identity.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { parseDictionary } from 'structured-headers';
import { createContentDigest, verifyContentDigest } from '../../../src/transports/ucp/content-digest.ts';
import { createSignatureBase, signJsonAnswer, verifyMessage } from '../../../src/transports/ucp/rfc9421.ts';
import { SignatureError } from '../../../src/transports/ucp/signature-error.ts';
import { generateP256KeyObjects } from '../../../src/runtime/ledger/keys/keygen.ts';

const { privateKey, publicKey } = generateP256KeyObjects();

describe('signJsonAnswer', () => {
  it('produces the fields and base of signMessage over @status content-digest content-type', async () => {
    for (const [status, text, kid] of [
      [200, '{"ok":true}', 'k1'],
      [404, '', 'tenant-2-2026"x\\y'],
      [503, '{"é":"ü"}', 'a b'],
    ] as const) {
      const body = Buffer.from(text, 'utf8');
      const out = signJsonAnswer(status, body, { keyid: kid, privateKey, created: 1_738_617_600 });
      assert.equal(out['content-type'], 'application/json');
      assert.equal(out['content-digest'], createContentDigest(body));
      const message = {
        status,
        url: 'https://shop.example/ucp/v1/capabilities/x',
        headers: { ...out },
        body,
      };
      const input = parseDictionary(out['signature-input']);
      assert.deepEqual([...input.keys()], ['sig1']);
      const base = createSignatureBase(message, ['@status', 'content-digest', 'content-type'], {
        created: 1_738_617_600,
        keyid: kid,
      });
      assert.ok(base.endsWith(`"@signature-params": ${out['signature-input'].slice('sig1='.length)}`));
      const verified = await verifyMessage(message, {
        resolveKey: (k) => (k === kid ? publicKey : undefined),
        requiredComponents: ['@status', 'content-digest', 'content-type'],
        now: 1_738_617_600,
      });
      assert.equal(verified.keyid, kid);
    }
  });

  it('refuses a keyid that is not printable ASCII and a status out of range', () => {
    assert.throws(
      () => signJsonAnswer(200, Buffer.alloc(0), { keyid: 'k\u00e9', privateKey, created: 1 }),
      (e: unknown) => e instanceof SignatureError && e.code === 'signature_invalid',
    );
    assert.throws(
      () => signJsonAnswer(1000, Buffer.alloc(0), { keyid: 'k', privateKey, created: 1 }),
      (e: unknown) => e instanceof SignatureError && e.code === 'signature_invalid',
    );
    assert.throws(
      () => signJsonAnswer(200, Buffer.alloc(0), { keyid: 'k', privateKey: publicKey, created: 1 }),
      (e: unknown) => e instanceof SignatureError && e.code === 'algorithm_unsupported',
    );
  });
});

/** The generic answer: parse as a dictionary, check sha-256/sha-512 members (the pre-fast-path code). */
function generic(header: string, body: Buffer): string {
  let dict;
  try {
    dict = parseDictionary(header);
  } catch {
    return 'digest_mismatch';
  }
  let checked = 0;
  for (const [name, member] of dict) {
    if (name !== 'sha-256' && name !== 'sha-512') continue;
    if (!(member[0] instanceof ArrayBuffer)) return 'digest_mismatch';
    const expected = createHash(name === 'sha-256' ? 'sha256' : 'sha512')
      .update(body)
      .digest();
    if (!expected.equals(Buffer.from(member[0]))) return 'digest_mismatch';
    checked++;
  }
  return checked === 0 ? 'algorithm_unsupported' : 'ok';
}

function fast(header: string, body: Buffer): string {
  try {
    verifyContentDigest(header, body);
    return 'ok';
  } catch (e) {
    return e instanceof SignatureError ? e.code : 'threw';
  }
}

describe('verifyContentDigest single sha-256 fast path', () => {
  it('answers as the dictionary parser does (property: random bodies and mutated headers)', () => {
    for (let i = 0; i < 400; i++) {
      const body = randomBytes(i % 50);
      const good = createContentDigest(body);
      const b64 = good.slice('sha-256=:'.length, -1);
      const flipped = `${b64[0] === 'A' ? 'B' : 'A'}${b64.slice(1)}`;
      const variants = [
        good,
        ` ${good}`,
        `${good} `,
        `sha-256=:${flipped}:`,
        `sha-256=:${b64.slice(0, -1)}:`,
        `sha-256=:${b64}`,
        `SHA-256=:${b64}:`,
        `sha-256=${b64}`,
        `sha-256=:${b64}:;p=1`,
        `sha-256=:${b64}:, md5=:AAAA:`,
        `sha-256=:${b64.replace(/=$/, '')}:`,
        `sha-256=:${b64}:\t`,
        `sha-256=:${b64.slice(0, 10)}\n${b64.slice(10)}:`,
      ];
      for (const v of variants) assert.equal(fast(v, body), generic(v, body), JSON.stringify(v));
    }
  });
});
