/** RFC 9530 Content-Digest vectors (research brief §10) and verification failures. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createContentDigest, verifyContentDigest } from '../../../src/transports/ucp/content-digest.ts';
import { SignatureError } from '../../../src/transports/ucp/signature-error.ts';

const HELLO = Buffer.from('{"hello": "world"}');
const HELLO_LF = Buffer.from('{"hello": "world"}\n');
const GOOD_DOG = Buffer.from('{"message": "good dog"}');

function hasCode(code: string) {
  return (error: unknown) => error instanceof SignatureError && error.code === code;
}

describe('createContentDigest', () => {
  it('produces the RFC 9530 sample values (sha-256 default, sha-512 on request)', () => {
    assert.equal(createContentDigest(HELLO), 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:');
    assert.equal(
      createContentDigest(HELLO, 'sha-512'),
      'sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:',
    );
    assert.equal(createContentDigest(HELLO_LF), 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:');
    assert.equal(
      createContentDigest(HELLO_LF, 'sha-512'),
      'sha-512=:YMAam51Jz/jOATT6/zvHrLVgOYTGFy1d6GJiOHTohq4yP+pgk4vf2aCsyRZOtw8MjkM7iw7yZ/WkppmM44T3qg==:',
    );
    assert.equal(createContentDigest(GOOD_DOG), 'sha-256=:z0bm/K2/kBiAHdTk/FHlB2NyoHqaTdzCA9k+jeJ0ezA=:');
    assert.equal(
      createContentDigest(new Uint8Array(0)),
      'sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:',
    );
  });

  it('lists several algorithms in the order given', () => {
    assert.equal(
      createContentDigest(GOOD_DOG, ['sha-256', 'sha-512']),
      'sha-256=:z0bm/K2/kBiAHdTk/FHlB2NyoHqaTdzCA9k+jeJ0ezA=:, sha-512=:mEWXIS7MaLRuGgxOBdODa3xqM1XdEvxoYhvlCFJ41QJgJc4GTsPp29l5oGX69wWdXymyU0rjJuahq4l5aGgfLQ==:',
    );
  });

  it('refuses an algorithm it does not implement', () => {
    assert.throws(() => createContentDigest(HELLO, 'md5' as never), hasCode('algorithm_unsupported'));
  });
});

describe('verifyContentDigest', () => {
  it('accepts matching sha-256 and sha-512 members and ignores unknown algorithms', () => {
    assert.deepEqual(verifyContentDigest('sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:', HELLO), [
      'sha-256',
    ]);
    assert.deepEqual(
      verifyContentDigest(
        'md5=:Sd/dVLAcvNLSq16eXua5uQ==:, sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:',
        HELLO,
      ),
      ['sha-512'],
    );
    assert.deepEqual(
      verifyContentDigest(
        ['sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:', 'unixsum=:GQU=:'],
        HELLO,
      ),
      ['sha-256'],
    );
  });

  it('reports digest_mismatch for an altered body, a wrong member or a malformed header', () => {
    const header = createContentDigest(HELLO);
    assert.throws(() => verifyContentDigest(header, HELLO_LF), hasCode('digest_mismatch'));
    assert.throws(
      () =>
        verifyContentDigest(
          `sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:, sha-512=:${Buffer.alloc(64).toString('base64')}:`,
          HELLO,
        ),
      hasCode('digest_mismatch'),
    );
    assert.throws(() => verifyContentDigest('sha-256="not bytes"', HELLO), hasCode('digest_mismatch'));
    assert.throws(() => verifyContentDigest('sha-256=:???', HELLO), hasCode('digest_mismatch'));
    assert.throws(() => verifyContentDigest(undefined, HELLO), hasCode('digest_mismatch'));
  });

  it('reports algorithm_unsupported when no supported algorithm is listed', () => {
    assert.throws(
      () => verifyContentDigest('md5=:Sd/dVLAcvNLSq16eXua5uQ==:', HELLO),
      hasCode('algorithm_unsupported'),
    );
  });

  it('carries the HTTP status UCP gives each code', () => {
    assert.throws(
      () => verifyContentDigest(createContentDigest(HELLO), GOOD_DOG),
      (error: unknown) => error instanceof SignatureError && error.status === 400,
    );
  });
});
