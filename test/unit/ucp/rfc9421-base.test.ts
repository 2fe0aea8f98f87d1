/**
 * RFC 9421 signature bases: Appendix B vectors byte for byte (research brief §9.3) and the
 * component rules of §2.1/§2.2 (brief §9.4).
 */
import assert from 'node:assert/strict';
import { createHash, createHmac, verify } from 'node:crypto';
import { describe, it } from 'node:test';
import { createSignatureBase, type HttpMessage } from '../../../src/transports/ucp/rfc9421.ts';
import { SignatureError } from '../../../src/transports/ucp/signature-error.ts';
import {
  ed25519PublicKey,
  sharedSecret,
  SHA512_GOOD_DOG,
  SHA512_HELLO_WORLD,
  testRequest,
  testResponse,
} from './rfc9421-vectors.ts';

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'latin1').digest('hex');
}

describe('RFC 9421 Appendix B signature bases', () => {
  it('B.2.1 minimal: empty component list with nonce', () => {
    const base = createSignatureBase(testRequest(), [], {
      created: 1618884473,
      keyid: 'test-key-rsa-pss',
      nonce: 'b3k2pp5k7z-50gnwp.yemd',
    });
    assert.equal(
      base,
      '"@signature-params": ();created=1618884473;keyid="test-key-rsa-pss";nonce="b3k2pp5k7z-50gnwp.yemd"',
    );
    assert.equal(base.length, 98);
    assert.equal(sha256Hex(base), 'f1203cf63332f016993ca3ff7aa06e65bfe86828641ed386cd70dbfc913f7374');
  });

  it('B.2.2 selective: @authority, content-digest, @query-param;name="Pet", tag', () => {
    const base = createSignatureBase(
      testRequest(),
      ['@authority', 'content-digest', '"@query-param";name="Pet"'],
      {
        created: 1618884473,
        keyid: 'test-key-rsa-pss',
        tag: 'header-example',
      },
    );
    assert.equal(
      base,
      [
        '"@authority": example.com',
        `"content-digest": ${SHA512_HELLO_WORLD}`,
        '"@query-param";name="Pet": dog',
        '"@signature-params": ("@authority" "content-digest" "@query-param";name="Pet");created=1618884473;keyid="test-key-rsa-pss";tag="header-example"',
      ].join('\n'),
    );
    assert.equal(base.length, 317);
    assert.equal(sha256Hex(base), '583b3f0c08dd5411e7274618358d36d7cd7cd380724d4ed2f8105b435babcae6');
  });

  it('B.2.3 full coverage, including @query', () => {
    const base = createSignatureBase(
      testRequest(),
      [
        'date',
        '@method',
        '@path',
        '@query',
        '@authority',
        'content-type',
        'content-digest',
        'content-length',
      ],
      { created: 1618884473, keyid: 'test-key-rsa-pss' },
    );
    assert.equal(
      base,
      [
        '"date": Tue, 20 Apr 2021 02:07:55 GMT',
        '"@method": POST',
        '"@path": /foo',
        '"@query": ?param=Value&Pet=dog',
        '"@authority": example.com',
        '"content-type": application/json',
        `"content-digest": ${SHA512_HELLO_WORLD}`,
        '"content-length": 18',
        '"@signature-params": ("date" "@method" "@path" "@query" "@authority" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-rsa-pss"',
      ].join('\n'),
    );
    assert.equal(base.length, 458);
    assert.equal(sha256Hex(base), 'd786e78f598692440526474950ca190880abd4e2de8c5c3458b256ec0236de96');
  });

  it('B.2.4 response signed with test-key-ecc-p256', () => {
    const base = createSignatureBase(
      testResponse(),
      ['@status', 'content-type', 'content-digest', 'content-length'],
      {
        created: 1618884473,
        keyid: 'test-key-ecc-p256',
      },
    );
    assert.equal(
      base,
      [
        '"@status": 200',
        '"content-type": application/json',
        `"content-digest": ${SHA512_GOOD_DOG}`,
        '"content-length": 23',
        '"@signature-params": ("@status" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-ecc-p256"',
      ].join('\n'),
    );
    assert.equal(base.length, 312);
    assert.equal(sha256Hex(base), 'a44c7b3073f410ccc0fe106b2deddabe48dbd3fcbf04a1965ecbf3b6f8241c3d');
  });

  it('§4.3 sig1 request signed with test-key-ecc-p256', () => {
    const base = createSignatureBase(
      testRequest(),
      ['@method', '@authority', '@path', 'content-digest', 'content-type', 'content-length'],
      { created: 1618884475, keyid: 'test-key-ecc-p256' },
    );
    assert.equal(
      base,
      [
        '"@method": POST',
        '"@authority": example.com',
        '"@path": /foo',
        `"content-digest": ${SHA512_HELLO_WORLD}`,
        '"content-type": application/json',
        '"content-length": 18',
        '"@signature-params": ("@method" "@authority" "@path" "content-digest" "content-type" "content-length");created=1618884475;keyid="test-key-ecc-p256"',
      ].join('\n'),
    );
    assert.equal(base.length, 374);
    assert.equal(sha256Hex(base), '23177ab179858877a1e0a236f9b1ac358d27700b607473ff8456c211c9db431b');
  });

  it('B.2.5 base reproduces the published hmac-sha256 signature', () => {
    const base = createSignatureBase(testRequest(), ['date', '@authority', 'content-type'], {
      created: 1618884473,
      keyid: 'test-shared-secret',
    });
    assert.equal(
      base,
      [
        '"date": Tue, 20 Apr 2021 02:07:55 GMT',
        '"@authority": example.com',
        '"content-type": application/json',
        '"@signature-params": ("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"',
      ].join('\n'),
    );
    assert.equal(sha256Hex(base), '82faed1b67e492cfc8fe50fee1b6fdbdcf9f4d6384af8282339dcad5e44310e7');
    const mac = createHmac('sha256', sharedSecret).update(base, 'latin1').digest('base64');
    assert.equal(mac, 'pxcQw6G3AjtMBQjwo8XzkZf/bws5LelbaMk5rGIGtE8=');
  });

  it('B.2.6 base verifies the published ed25519 signature', () => {
    const base = createSignatureBase(
      testRequest(),
      ['date', '@method', '@path', '@authority', 'content-type', 'content-length'],
      { created: 1618884473, keyid: 'test-key-ed25519' },
    );
    assert.equal(base.length, 284);
    assert.equal(sha256Hex(base), 'e6402577f54303accfda63dfbde1a7b8c5e5e6f3f7898637b7d78dc07ee1896a');
    const signature = Buffer.from(
      'wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==',
      'base64',
    );
    assert.equal(verify(null, Buffer.from(base, 'latin1'), ed25519PublicKey, signature), true);
  });
});

function withHeaders(headers: HttpMessage['headers'], url = 'https://example.com/'): HttpMessage {
  return { method: 'GET', url, headers };
}

function valueLine(message: HttpMessage, component: string): string {
  return createSignatureBase(message, [component], {}).split('\n')[0]!;
}

function assertInvalid(fn: () => unknown): void {
  assert.throws(
    fn,
    (error: unknown) => error instanceof SignatureError && error.code === 'signature_invalid',
  );
}

describe('RFC 9421 §2.1 field components', () => {
  it('trims whitespace, lower-cases the name and joins multiple lines with ", "', () => {
    const message = withHeaders({
      'X-OWS-Header': '   Leading and trailing whitespace.   ',
      'Cache-Control': ['max-age=60', '   must-revalidate'],
      'X-Obs-Fold-Header': 'Obsolete\r\n    line folding.',
      'X-Empty-Header': '',
    });
    assert.equal(valueLine(message, 'X-OWS-Header'), '"x-ows-header": Leading and trailing whitespace.');
    assert.equal(valueLine(message, 'cache-control'), '"cache-control": max-age=60, must-revalidate');
    assert.equal(valueLine(message, 'x-obs-fold-header'), '"x-obs-fold-header": Obsolete line folding.');
    assert.equal(valueLine(message, 'x-empty-header'), '"x-empty-header": ');
  });

  it(';sf re-serializes strictly and ;key selects one dictionary member', () => {
    const message = withHeaders({ 'Example-Dict': ' a=1,    b=2;x=1;y=2,   c=(a   b   c), d' });
    assert.equal(
      valueLine(message, 'example-dict'),
      '"example-dict": a=1,    b=2;x=1;y=2,   c=(a   b   c), d',
    );
    assert.equal(valueLine(message, 'example-dict;sf'), '"example-dict";sf: a=1, b=2;x=1;y=2, c=(a b c), d');
    assert.equal(valueLine(message, '"example-dict";key="a"'), '"example-dict";key="a": 1');
    assert.equal(valueLine(message, 'example-dict;key="d"'), '"example-dict";key="d": ?1');
    assert.equal(valueLine(message, 'example-dict;key="b"'), '"example-dict";key="b": 2;x=1;y=2');
    assert.equal(valueLine(message, 'example-dict;key="c"'), '"example-dict";key="c": (a b c)');
    assertInvalid(() => valueLine(message, 'example-dict;key="zz"'));
  });

  it(';bs wraps each field line as a byte sequence', () => {
    assert.equal(
      valueLine(withHeaders({ 'Example-Header': ['value, with, lots', 'of, commas'] }), 'example-header;bs'),
      '"example-header";bs: :dmFsdWUsIHdpdGgsIGxvdHM=:, :b2YsIGNvbW1hcw==:',
    );
    assert.equal(
      valueLine(withHeaders({ 'Example-Header': 'value, with, lots, of, commas' }), 'example-header;bs'),
      '"example-header";bs: :dmFsdWUsIHdpdGgsIGxvdHMsIG9mLCBjb21tYXM=:',
    );
    assertInvalid(() => valueLine(withHeaders({ 'Example-Header': 'a' }), 'example-header;bs;sf'));
  });

  it(';req takes the field from the request a response answers, and is refused on a request', () => {
    const response: HttpMessage = { ...testResponse(), request: testRequest() };
    const base = createSignatureBase(
      response,
      ['@status', 'content-digest;req', '@method;req', '@authority;req'],
      {},
    );
    assert.deepEqual(base.split('\n').slice(0, 4), [
      '"@status": 200',
      `"content-digest";req: ${SHA512_HELLO_WORLD}`,
      '"@method";req: POST',
      '"@authority";req: example.com',
    ]);
    assertInvalid(() => createSignatureBase(testRequest(), ['content-type;req'], {}));
    assertInvalid(() => createSignatureBase(testResponse(), ['content-type;req'], {}));
  });

  it('refuses a missing field, a duplicate, an unknown parameter or derived name', () => {
    assertInvalid(() => createSignatureBase(testRequest(), ['x-not-there'], {}));
    assertInvalid(() => createSignatureBase(testRequest(), ['date', 'Date'], {}));
    assertInvalid(() => createSignatureBase(testRequest(), ['date;xyz'], {}));
    assertInvalid(() => createSignatureBase(testRequest(), ['@unknown'], {}));
    assertInvalid(() => createSignatureBase(testRequest(), ['@signature-params'], {}));
  });
});

describe('RFC 9421 §2.2 derived components', () => {
  it('derives every request component from the raw URL', () => {
    const message: HttpMessage = {
      method: 'POST',
      url: 'https://WWW.Example.com:443/path/a%2Fb?param=value&foo=bar#frag',
      headers: {},
    };
    const lines = createSignatureBase(
      message,
      ['@method', '@target-uri', '@authority', '@scheme', '@request-target', '@path', '@query'],
      {},
    ).split('\n');
    assert.deepEqual(lines.slice(0, 7), [
      '"@method": POST',
      '"@target-uri": https://WWW.Example.com:443/path/a%2Fb?param=value&foo=bar',
      '"@authority": www.example.com',
      '"@scheme": https',
      '"@request-target": /path/a%2Fb?param=value&foo=bar',
      '"@path": /path/a%2Fb',
      '"@query": ?param=value&foo=bar',
    ]);
  });

  it('keeps a non-default port, uses "/" for an empty path and "?" for an absent query', () => {
    const message: HttpMessage = { method: 'GET', url: 'http://example.com:8080', headers: {} };
    assert.equal(valueLine(message, '@authority'), '"@authority": example.com:8080');
    assert.equal(valueLine(message, '@path'), '"@path": /');
    assert.equal(valueLine(message, '@query'), '"@query": ?');
  });

  it('@query-param decodes then re-encodes names and values', () => {
    const message: HttpMessage = {
      method: 'GET',
      url: 'https://example.com/path?param=value&foo=bar&baz=batman&qux=&var=this%20is%20a%20big%0Amultiline%20value&bar=with+plus+whitespace&dup=1&dup=2',
      headers: {},
    };
    assert.equal(valueLine(message, '"@query-param";name="baz"'), '"@query-param";name="baz": batman');
    assert.equal(valueLine(message, '"@query-param";name="qux"'), '"@query-param";name="qux": ');
    assert.equal(valueLine(message, '"@query-param";name="param"'), '"@query-param";name="param": value');
    assert.equal(
      valueLine(message, '"@query-param";name="var"'),
      '"@query-param";name="var": this%20is%20a%20big%0Amultiline%20value',
    );
    assert.equal(
      valueLine(message, '"@query-param";name="bar"'),
      '"@query-param";name="bar": with%20plus%20whitespace',
    );
    assertInvalid(() => valueLine(message, '"@query-param";name="dup"'));
    assertInvalid(() => valueLine(message, '"@query-param";name="nope"'));
  });

  it('@status only on responses; request components on a response need ;req', () => {
    assertInvalid(() => createSignatureBase(testRequest(), ['@status'], {}));
    assertInvalid(() => createSignatureBase(testResponse(), ['@method'], {}));
  });
});

describe('@signature-params serialization', () => {
  it('keeps the caller’s parameter order and quotes strings', () => {
    const base = createSignatureBase(testRequest(), ['@method'], {
      keyid: 'k "1"',
      tag: 'web-bot-auth',
      expires: 1700000300,
      created: 1700000000,
      nonce: 'abc',
    });
    assert.equal(
      base.split('\n')[1],
      '"@signature-params": ("@method");keyid="k \\"1\\"";tag="web-bot-auth";expires=1700000300;created=1700000000;nonce="abc"',
    );
  });

  it('refuses non-integer times', () => {
    assertInvalid(() => createSignatureBase(testRequest(), ['@method'], { created: 1.5 }));
  });
});
