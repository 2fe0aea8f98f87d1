/**
 * RFC 9421 ES256 signing and verification with UCP's rules (research brief §7, §9.3, §9.5):
 * published signatures verify, sign→verify round trips, and each failure carries its UCP code.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { describe, it } from 'node:test';
import { createContentDigest } from '../../../src/transports/ucp/content-digest.ts';
import { ReplayCache } from '../../../src/transports/ucp/replay-cache.ts';
import {
  createSignatureBase,
  MAX_SIGNATURE_LABELS,
  signMessage,
  verifyMessage,
  type HttpMessage,
  type VerifyOptions,
} from '../../../src/transports/ucp/rfc9421.ts';
import { SignatureError, type SignatureErrorCode } from '../../../src/transports/ucp/signature-error.ts';
import {
  eccPrivateKey,
  eccPublicKey,
  testRequest,
  testResponse,
  ucpRequest,
  ucpResponse,
} from './rfc9421-vectors.ts';
import { generateP256KeyObjects } from '../../../src/runtime/ledger/keys/keygen.ts';

const KEYS = new Map<string, KeyObject>([['test-key-ecc-p256', eccPublicKey]]);
const resolveKey = (keyid: string) => KEYS.get(keyid);
const NOW = 1_738_617_600;

const UCP_REQUEST_COMPONENTS = [
  '@method',
  '@authority',
  '@path',
  'ucp-agent',
  'idempotency-key',
  'content-digest',
  'content-type',
];

async function rejectsWith(promise: Promise<unknown>, code: SignatureErrorCode): Promise<SignatureError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return error instanceof SignatureError && error.code === code;
  });
  return caught as SignatureError;
}

/** A fresh UCP-shaped request with a Content-Digest, signed with test-key-ecc-p256 at NOW. */
function signedRequest(
  overrides: { key?: KeyObject; keyid?: string; created?: number; expires?: number } = {},
): HttpMessage {
  const body = Buffer.from('{"line_items":[{"item":{"id":"item_9"},"quantity":1}]}');
  const message: HttpMessage = {
    method: 'POST',
    url: 'https://merchant.example.com/checkout-sessions',
    headers: {
      'ucp-agent': 'profile="https://platform.example/.well-known/ucp"',
      'idempotency-key': '0b6f4c1e-0f7a-4c55-9d11-2f1f6ad0b0e1',
      'content-type': 'application/json',
      'content-digest': createContentDigest(body),
    },
    body,
  };
  const headers = signMessage(message, {
    keyid: overrides.keyid ?? 'test-key-ecc-p256',
    privateKey: overrides.key ?? eccPrivateKey,
    label: 'sig1',
    components: UCP_REQUEST_COMPONENTS,
    created: overrides.created ?? NOW,
    expires: overrides.expires,
  });
  return { ...message, headers: { ...message.headers, ...headers } };
}

function options(extra: Partial<VerifyOptions> = {}): VerifyOptions {
  return { resolveKey, now: NOW, maxSkewSeconds: 30, maxAgeSeconds: 300, ...extra };
}

/** DER-encode a raw 64-byte P-256 r‖s signature (what Node produces by default). */
function rawToDer(raw: Uint8Array): Buffer {
  const integer = (bytes: Uint8Array) => {
    let start = 0;
    while (start < bytes.length - 1 && bytes[start] === 0) start++;
    let body = Buffer.from(bytes.subarray(start));
    if (body[0]! & 0x80) body = Buffer.concat([Buffer.from([0]), body]);
    return Buffer.concat([Buffer.from([0x02, body.length]), body]);
  };
  const sequence = Buffer.concat([integer(raw.subarray(0, 32)), integer(raw.subarray(32))]);
  return Buffer.concat([Buffer.from([0x30, sequence.length]), sequence]);
}

describe('verifyMessage with published signatures', () => {
  it('verifies RFC 9421 B.2.4 (response, test-key-ecc-p256) including its sha-512 Content-Digest', async () => {
    const response = testResponse();
    response.headers['Signature-Input'] =
      'sig-b24=("@status" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-ecc-p256"';
    response.headers.Signature =
      'sig-b24=:wNmSUAhwb5LxtOtOpNa6W5xj067m5hFrj0XQ4fvpaCLx0NKocgPquLgyahnzDnDAUy5eCdlYUEkLIj+32oiasw==:';
    const result = await verifyMessage(response, options({ now: 1618884473 }));
    assert.equal(result.label, 'sig-b24');
    assert.equal(result.keyid, 'test-key-ecc-p256');
    assert.deepEqual(result.components, [
      '"@status"',
      '"content-type"',
      '"content-digest"',
      '"content-length"',
    ]);
    assert.deepEqual(result.params, { created: 1618884473, keyid: 'test-key-ecc-p256' });
  });

  it('verifies RFC 9421 §4.3 sig1 (request, test-key-ecc-p256)', async () => {
    const request = testRequest();
    request.headers['Signature-Input'] =
      'sig1=("@method" "@authority" "@path" "content-digest" "content-type" "content-length");created=1618884475;keyid="test-key-ecc-p256"';
    request.headers.Signature =
      'sig1=:X5spyd6CFnAG5QnDyHfqoSNICd+BUP4LYMz2Q0JXlb//4Ijpzp+kve2w4NIyqeAuM7jTDX+sNalzA8ESSaHD3A==:';
    const result = await verifyMessage(request, options({ now: 1618884475 }));
    assert.equal(result.label, 'sig1');
  });

  it('verifies the UCP-shaped request and response of the research brief with UCP coverage required', async () => {
    const request = await verifyMessage(
      ucpRequest(),
      options({ requiredComponents: UCP_REQUEST_COMPONENTS }),
    );
    assert.equal(request.keyid, 'test-key-ecc-p256');
    const response = await verifyMessage(
      ucpResponse(),
      options({
        now: 1738617601,
        requiredComponents: ['@status', 'content-digest', 'content-type'],
      }),
    );
    assert.equal(response.label, 'sig1');
  });

  it('rejects the B.2.4 signature re-encoded as DER with signature_invalid', async () => {
    const raw = Buffer.from(
      'wNmSUAhwb5LxtOtOpNa6W5xj067m5hFrj0XQ4fvpaCLx0NKocgPquLgyahnzDnDAUy5eCdlYUEkLIj+32oiasw==',
      'base64',
    );
    const response = testResponse();
    response.headers['Signature-Input'] =
      'sig-b24=("@status" "content-type" "content-digest" "content-length");created=1618884473;keyid="test-key-ecc-p256"';
    response.headers.Signature = `sig-b24=:${rawToDer(raw).toString('base64')}:`;
    await rejectsWith(verifyMessage(response, options({ now: 1618884473 })), 'signature_invalid');
  });
});

describe('signMessage', () => {
  it('emits the RFC 9421 header forms without alg, and a 64-byte raw signature', () => {
    const message = signedRequest({ expires: NOW + 60 });
    assert.equal(
      message.headers['signature-input'],
      'sig1=("@method" "@authority" "@path" "ucp-agent" "idempotency-key" "content-digest" "content-type");created=1738617600;expires=1738617660;keyid="test-key-ecc-p256"',
    );
    const match = /^sig1=:([A-Za-z0-9+/=]+):$/.exec(message.headers.signature as string);
    assert.ok(match, 'signature is an sf byte sequence under label sig1');
    assert.equal(Buffer.from(match[1]!, 'base64').length, 64);
  });

  it('round-trips: what it signs verifies, with nonce and tag echoed back', async () => {
    const body = Buffer.from('{}');
    const message: HttpMessage = {
      method: 'GET',
      url: 'https://api.example.com/ucp/v1/items?page=2',
      headers: { 'content-digest': createContentDigest(body) },
      body,
    };
    const headers = signMessage(message, {
      keyid: 'test-key-ecc-p256',
      privateKey: eccPrivateKey,
      label: 'agent-7',
      components: ['@method', '@authority', '@path', '@query', 'content-digest'],
      created: NOW,
      nonce: 'n-123',
      tag: 'web-bot-auth',
    });
    const result = await verifyMessage(
      { ...message, headers: { ...message.headers, ...headers } },
      options(),
    );
    assert.equal(result.label, 'agent-7');
    assert.deepEqual(result.params, {
      created: NOW,
      keyid: 'test-key-ecc-p256',
      nonce: 'n-123',
      tag: 'web-bot-auth',
    });
  });

  it('signs a response covering request fields with ;req', async () => {
    const request = testRequest();
    const response: HttpMessage = { ...testResponse(), request };
    const headers = signMessage(response, {
      keyid: 'test-key-ecc-p256',
      privateKey: eccPrivateKey,
      label: 'sig1',
      components: ['@status', 'content-digest', '@method;req', 'content-digest;req'],
      created: NOW,
    });
    const signed: HttpMessage = { ...response, headers: { ...response.headers, ...headers } };
    assert.equal((await verifyMessage(signed, options())).label, 'sig1');
    const tampered: HttpMessage = { ...signed, request: { ...request, method: 'PUT' } };
    await rejectsWith(verifyMessage(tampered, options()), 'signature_invalid');
  });

  it('refuses a non-P-256 or public key with algorithm_unsupported', () => {
    const message = testRequest();
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
    for (const privateKey of [p384, eccPublicKey]) {
      assert.throws(
        () =>
          signMessage(message, {
            keyid: 'k',
            privateKey,
            label: 'sig1',
            components: ['@method'],
            created: NOW,
          }),
        (error: unknown) => error instanceof SignatureError && error.code === 'algorithm_unsupported',
      );
    }
  });
});

describe('verifyMessage failures carry UCP error codes', () => {
  it('accepts the untouched signed request (control for the cases below)', async () => {
    assert.equal(
      (await verifyMessage(signedRequest(), options({ requiredComponents: UCP_REQUEST_COMPONENTS }))).label,
      'sig1',
    );
  });

  it('altered body → digest_mismatch', async () => {
    const message = signedRequest();
    message.body = Buffer.from('{"line_items":[{"item":{"id":"item_9"},"quantity":9}]}');
    const error = await rejectsWith(verifyMessage(message, options()), 'digest_mismatch');
    assert.equal(error.status, 400);
  });

  it('altered covered header → signature_invalid', async () => {
    const message = signedRequest();
    message.headers['idempotency-key'] = '11111111-2222-3333-4444-555555555555';
    const error = await rejectsWith(verifyMessage(message, options()), 'signature_invalid');
    assert.equal(error.status, 401);
  });

  it('altered @authority (different host) → signature_invalid', async () => {
    const message = signedRequest();
    message.url = 'https://other.example.com/checkout-sessions';
    await rejectsWith(verifyMessage(message, options()), 'signature_invalid');
  });

  it('covered header removed from the message → signature_invalid', async () => {
    const message = signedRequest();
    delete message.headers['ucp-agent'];
    await rejectsWith(verifyMessage(message, options()), 'signature_invalid');
  });

  it('required component not covered → components_missing', async () => {
    const message = signedRequest();
    const error = await rejectsWith(
      verifyMessage(message, options({ requiredComponents: [...UCP_REQUEST_COMPONENTS, '@query'] })),
      'components_missing',
    );
    assert.equal(error.status, 400);
    assert.match(error.message, /"@query"/);
  });

  it('signed with another key → signature_invalid', async () => {
    const other = generateP256KeyObjects().privateKey;
    await rejectsWith(verifyMessage(signedRequest({ key: other }), options()), 'signature_invalid');
  });

  it('unknown keyid → key_not_found (async resolver)', async () => {
    await rejectsWith(
      verifyMessage(
        signedRequest({ keyid: 'nobody' }),
        options({
          resolveKey: async (keyid) => KEYS.get(keyid),
        }),
      ),
      'key_not_found',
    );
  });

  it('resolved key that is not P-256 → algorithm_unsupported', async () => {
    const ed = generateKeyPairSync('ed25519').publicKey;
    await rejectsWith(
      verifyMessage(signedRequest(), options({ resolveKey: () => ed })),
      'algorithm_unsupported',
    );
  });

  it('expired, too old or created in the future → signature_expired', async () => {
    await rejectsWith(
      verifyMessage(signedRequest({ expires: NOW + 10 }), options({ now: NOW + 41 })),
      'signature_expired',
    );
    await rejectsWith(verifyMessage(signedRequest(), options({ now: NOW + 331 })), 'signature_expired');
    await rejectsWith(verifyMessage(signedRequest({ created: NOW + 31 }), options()), 'signature_expired');
    // within the skew allowance both ways
    assert.equal(
      (await verifyMessage(signedRequest({ expires: NOW + 10 }), options({ now: NOW + 40 }))).label,
      'sig1',
    );
    assert.equal((await verifyMessage(signedRequest({ created: NOW + 30 }), options())).label, 'sig1');
  });

  it('replay within the window → signature_replayed; a fresh signature is still accepted', async () => {
    const replayCache = new ReplayCache();
    const message = signedRequest();
    assert.equal((await verifyMessage(message, options({ replayCache }))).label, 'sig1');
    const error = await rejectsWith(
      verifyMessage(structuredClone(message), options({ replayCache, now: NOW + 100 })),
      'signature_replayed',
    );
    assert.equal(error.status, 401);
    assert.equal((await verifyMessage(signedRequest(), options({ replayCache }))).label, 'sig1');
  });

  it('replay as the ECDSA twin (r, n − s) of the captured signature → signature_replayed', async () => {
    const n = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
    const replayCache = new ReplayCache();
    const message = signedRequest();
    assert.equal((await verifyMessage(message, options({ replayCache }))).label, 'sig1');
    const raw = Buffer.from(/^sig1=:([^:]+):$/.exec(String(message.headers.signature))![1]!, 'base64');
    const s = BigInt(`0x${raw.subarray(32).toString('hex')}`);
    const twin = Buffer.concat([
      raw.subarray(0, 32),
      Buffer.from((n - s).toString(16).padStart(64, '0'), 'hex'),
    ]);
    const forged: HttpMessage = {
      ...message,
      headers: { ...message.headers, signature: `sig1=:${twin.toString('base64')}:` },
    };
    // The twin is a valid signature of the same message (without a replay guard it is accepted) …
    assert.equal((await verifyMessage(structuredClone(forged), options())).label, 'sig1');
    // … so the guard must know it as the same signature.
    await rejectsWith(verifyMessage(forged, options({ replayCache, now: NOW + 5 })), 'signature_replayed');
  });

  it('replay with one of two valid labels stripped → signature_replayed', async () => {
    const replayCache = new ReplayCache();
    const message = signedRequest();
    const second = signMessage(message, {
      keyid: 'test-key-ecc-p256',
      privateKey: eccPrivateKey,
      label: 'sig2',
      components: ['@method', '@path'],
      created: NOW,
    });
    const both: HttpMessage = {
      ...message,
      headers: {
        ...message.headers,
        'signature-input': `${message.headers['signature-input']}, ${second['signature-input']}`,
        signature: `${message.headers.signature}, ${second.signature}`,
      },
    };
    assert.equal((await verifyMessage(both, options({ replayCache }))).label, 'sig1');
    const onlySecond: HttpMessage = { ...message, headers: { ...message.headers, ...second } };
    await rejectsWith(verifyMessage(onlySecond, options({ replayCache })), 'signature_replayed');
  });

  it('junk labels beside a valid one: recorded only up to the longest window, and at most MAX_SIGNATURE_LABELS labels', async () => {
    const recorded: Array<{ id: string; expiresAtSeconds: number }> = [];
    const replayCache = {
      checkAndRecord: (id: string, expiresAtSeconds: number) => {
        recorded.push({ id, expiresAtSeconds });
        return true;
      },
    };
    const message = signedRequest();
    const junk = (i: number) => `junk${i}=("@method");keyid="attacker";expires=9999999999`;
    const junkSig = (i: number) => `junk${i}=:${Buffer.alloc(64, i).toString('base64')}:`;
    const withJunk = (n: number): HttpMessage => ({
      ...message,
      headers: {
        ...message.headers,
        'signature-input': [
          message.headers['signature-input'],
          ...Array.from({ length: n }, (_, i) => junk(i)),
        ].join(', '),
        signature: [message.headers.signature, ...Array.from({ length: n }, (_, i) => junkSig(i))].join(', '),
      },
    });
    assert.equal(
      (await verifyMessage(withJunk(MAX_SIGNATURE_LABELS - 1), options({ replayCache }))).label,
      'sig1',
    );
    assert.equal(recorded.length, MAX_SIGNATURE_LABELS);
    assert.ok(
      recorded.every((r) => r.expiresAtSeconds <= NOW + 300 + 60),
      JSON.stringify(recorded.map((r) => r.expiresAtSeconds)),
    );
    recorded.length = 0;
    const tooMany = await rejectsWith(
      verifyMessage(withJunk(MAX_SIGNATURE_LABELS), options({ replayCache })),
      'signature_invalid',
    );
    assert.match(tooMany.message, /at most 8/);
    assert.equal(recorded.length, 0, 'nothing recorded for a refused message');
  });

  it('requireCreated: a signature without created is refused before anything is recorded', async () => {
    const replayCache = new ReplayCache();
    const message = signedRequest();
    const unsigned = { ...message, headers: { ...message.headers } };
    const headers = signMessage(unsigned, {
      keyid: 'test-key-ecc-p256',
      privateKey: eccPrivateKey,
      label: 'sig1',
      components: UCP_REQUEST_COMPONENTS,
      expires: NOW + 100,
      created: undefined as unknown as number,
    }); // a signer that omits created
    const noCreated: HttpMessage = { ...unsigned, headers: { ...unsigned.headers, ...headers } };
    assert.doesNotMatch(noCreated.headers['signature-input'] as string, /created/);
    const error = await rejectsWith(
      verifyMessage(noCreated, options({ replayCache, requireCreated: true })),
      'signature_invalid',
    );
    assert.match(error.message, /created/);
    assert.equal(replayCache.size, 0);
    assert.equal(
      (await verifyMessage(noCreated, options({ replayCache }))).label,
      'sig1',
      'accepted when not required',
    );
  });

  it('DER-encoded ES256 signature → signature_invalid', async () => {
    const message = signedRequest();
    const params = { created: NOW, keyid: 'test-key-ecc-p256' };
    const base = createSignatureBase(message, UCP_REQUEST_COMPONENTS, params);
    const der = sign('sha256', Buffer.from(base), eccPrivateKey); // Node's default encoding is DER
    assert.notEqual(der.length, 64);
    message.headers.signature = `sig1=:${der.toString('base64')}:`;
    const error = await rejectsWith(verifyMessage(message, options()), 'signature_invalid');
    assert.match(error.message, /DER/);
  });

  it('alg other than ecdsa-p256-sha256 → algorithm_unsupported; the matching alg is accepted', async () => {
    const message = signedRequest();
    for (const [alg, expected] of [
      ['ed25519', 'algorithm_unsupported'],
      ['ecdsa-p256-sha256', null],
    ] as const) {
      const params = { created: NOW, keyid: 'test-key-ecc-p256', alg };
      const base = createSignatureBase(message, UCP_REQUEST_COMPONENTS, params);
      const signature = sign('sha256', Buffer.from(base), { key: eccPrivateKey, dsaEncoding: 'ieee-p1363' });
      const input = base.split('\n').at(-1)!.slice('"@signature-params": '.length);
      const withAlg: HttpMessage = {
        ...message,
        headers: {
          ...message.headers,
          'signature-input': `sig1=${input}`,
          signature: `sig1=:${signature.toString('base64')}:`,
        },
      };
      if (expected === null) assert.equal((await verifyMessage(withAlg, options())).params.alg, alg);
      else await rejectsWith(verifyMessage(withAlg, options()), expected);
    }
  });

  it('no Signature / Signature-Input → signature_missing', async () => {
    const message = signedRequest();
    const error = await rejectsWith(
      verifyMessage({ ...message, headers: { ...message.headers, signature: undefined } }, options()),
      'signature_missing',
    );
    assert.equal(error.status, 401);
    await rejectsWith(verifyMessage(testRequest(), options()), 'signature_missing');
  });

  it('malformed Signature-Input or mismatched labels → signature_invalid', async () => {
    const message = signedRequest();
    await rejectsWith(
      verifyMessage(
        { ...message, headers: { ...message.headers, 'signature-input': 'sig1=(((' } },
        options(),
      ),
      'signature_invalid',
    );
    const renamed = (message.headers.signature as string).replace(/^sig1=/, 'sig9=');
    await rejectsWith(
      verifyMessage({ ...message, headers: { ...message.headers, signature: renamed } }, options()),
      'signature_invalid',
    );
  });

  it('two signatures where only the second verifies → accepted via the second label', async () => {
    const message = signedRequest({ key: generateP256KeyObjects().privateKey });
    const good = signMessage(message, {
      keyid: 'test-key-ecc-p256',
      privateKey: eccPrivateKey,
      label: 'sig2',
      components: UCP_REQUEST_COMPONENTS,
      created: NOW,
    });
    const both: HttpMessage = {
      ...message,
      headers: {
        ...message.headers,
        'signature-input': [message.headers['signature-input'] as string, good['signature-input']],
        signature: [message.headers.signature as string, good.signature],
      },
    };
    const result = await verifyMessage(both, options({ requiredComponents: UCP_REQUEST_COMPONENTS }));
    assert.equal(result.label, 'sig2');
  });

  it('when no label verifies, the first failure is the code and every label is listed', async () => {
    const message = signedRequest({ keyid: 'nobody' });
    const bad = signMessage(message, {
      keyid: 'test-key-ecc-p256',
      privateKey: generateP256KeyObjects().privateKey,
      label: 'sig2',
      components: ['@method'],
      created: NOW,
    });
    const both: HttpMessage = {
      ...message,
      headers: {
        ...message.headers,
        'signature-input': `${message.headers['signature-input']}, ${bad['signature-input']}`,
        signature: `${message.headers.signature}, ${bad.signature}`,
      },
    };
    const error = await rejectsWith(verifyMessage(both, options()), 'key_not_found');
    assert.deepEqual(
      error.failures.map(({ label, code }) => ({ label, code })),
      [
        { label: 'sig1', code: 'key_not_found' },
        { label: 'sig2', code: 'signature_invalid' },
      ],
    );
  });

  it('lets a non-signature error from resolveKey propagate unchanged', async () => {
    const outage = new Error('profile fetch failed');
    await assert.rejects(
      verifyMessage(
        signedRequest(),
        options({
          resolveKey: () => {
            throw outage;
          },
        }),
      ),
      (error) => error === outage,
    );
  });
});
