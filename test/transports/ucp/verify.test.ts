/**
 * Inbound verification over a real socket: a platform whose profile is served on loopback signs
 * requests (RFC 9421, ES256) to the business served by createHttpServer + the UCP plugin; every
 * negative the issue lists is refused with UCP's code and status.
 */
import assert from 'node:assert/strict';
import { createHash, sign as nodeSign } from 'node:crypto';
import { describe, it } from 'node:test';
import { createUcpHarness, newPlatformKey } from './harness.ts';
import { verifyResponse, profileKeys } from '../../../src/transports/ucp/ucp-client.ts';
import type { Envelope } from '../../../src/spec/types.ts';

const COUNT = 'com.example.sales.notes_count';
const ADD = 'com.example.sales.notes_add';

describe('UCP inbound verification', () => {
  it('runs a signed request end to end and signs the answer with a key of the business profile', async (t) => {
    const u = await createUcpHarness(t);
    const res = await u.call(COUNT, {});
    assert.equal(res.status, 200, res.text);
    const body = res.json<{
      ok: boolean;
      verb: string;
      ucp: { version: string; status: string; capabilities: Record<string, unknown> };
      result: { data: { notes: number; user_id: number; agent_type: string; role: string } };
    }>();
    assert.equal(body.ok, true);
    assert.equal(body.verb, 'notes.count');
    assert.equal(body.ucp.version, '2026-08-25');
    assert.equal(body.ucp.status, 'success');
    assert.deepEqual(Object.keys(body.ucp.capabilities), [COUNT]);
    assert.equal(body.result.data.agent_type, `ucp:${new URL(u.platform.url).host}`);
    assert.equal(body.result.data.role, 'employee');
    assert.ok(body.result.data.user_id >= 1_000_000_000 && body.result.data.user_id < 2_000_000_000);
    const profile = (await u.get('/.well-known/ucp')).json();
    const verified = await verifyResponse({
      status: res.status,
      headers: res.headers,
      body: res.bytes,
      url: res.url,
      keys: profileKeys(profile),
    });
    const active = (await u.h.rt.keys.signingKey(u.h.companyId)).kid;
    assert.equal(verified.keyid, active);
    assert.deepEqual(verified.components, ['"@status"', '"content-digest"', '"content-type"']);
    assert.equal(res.headers['signature-input']!.includes('alg='), false);
    assert.equal(u.platform.hits, 1);
  });

  it('the same platform gets the same user id on every call (idempotency scope, audit)', async (t) => {
    const u = await createUcpHarness(t);
    const a = (await u.call(COUNT, {})).json<{ result: { data: { user_id: number } } }>();
    const b = (await u.call(COUNT, {})).json<{ result: { data: { user_id: number } } }>();
    assert.equal(a.result.data.user_id, b.result.data.user_id);
    assert.equal(u.platform.hits, 1, 'the profile is cached');
  });

  it('refuses an unsigned request (401 signature_missing) without dispatching', async (t) => {
    const u = await createUcpHarness(t);
    const res = await fetch(`${u.base}/ucp/v1/capabilities/${COUNT}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'ucp-agent': `profile="${u.platform.url}"` },
      body: '{}',
    });
    assert.equal(res.status, 401);
    // UCP's flat { code, content }, and beside it the envelope of the (audited) refusal.
    const body = (await res.json()) as { code: string; content: string; envelope: Envelope };
    assert.deepEqual(Object.keys(body), ['code', 'content', 'envelope']);
    assert.equal(body.code, 'signature_missing');
    assert.equal(body.envelope.ok, false);
    assert.equal(body.envelope.error!.reason, 'auth_invalid');
    assert.equal(body.envelope.error!.details!.ucp_code, 'signature_missing');
    assert.equal(typeof body.envelope.error!.hint, 'string');
    assert.equal(typeof body.envelope.audit_id, 'number', 'audited as an unauthenticated failure');
    assert.equal(u.timings.length, 0);
  });

  const refusals: Array<
    [string, number, string, Parameters<Awaited<ReturnType<typeof createUcpHarness>>['call']>[2], unknown?]
  > = [
    [
      'an altered body',
      400,
      'digest_mismatch',
      {
        tamper: (s) => {
          s.body = Buffer.from('{"text":"other"}');
        },
      },
      { text: 'hello' },
    ],
    [
      'an altered body with a recomputed digest',
      401,
      'signature_invalid',
      {
        tamper: (s) => {
          s.body = Buffer.from('{"text":"other"}');
          s.headers['content-digest'] =
            `sha-256=:${createHash('sha256').update('{"text":"other"}').digest().toString('base64')}:`;
        },
      },
      { text: 'hello' },
    ],
    [
      'an altered covered header (Idempotency-Key)',
      401,
      'signature_invalid',
      {
        tamper: (s) => {
          s.headers['idempotency-key'] = 'another-key';
        },
      },
      { text: 'hello' },
    ],
    [
      'a signature that does not cover content-digest',
      400,
      'components_missing',
      {
        tamper: (s) => {
          s.headers['signature-input'] = s.headers['signature-input']!.replace(' "content-digest"', '');
        },
      },
      { text: 'hello' },
    ],
    [
      'a DER-encoded ES256 signature',
      401,
      'signature_invalid',
      {
        tamper: (s) => {
          // Re-sign the same base with the default (DER) encoding.
          s.headers.signature = s.headers.signature!.replace(
            /:(.*):/,
            (_m, b64: string) => `:${derOf(Buffer.from(b64, 'base64')).toString('base64')}:`,
          );
        },
      },
      { text: 'hello' },
    ],
    [
      'an alg parameter other than ecdsa-p256-sha256',
      400,
      'algorithm_unsupported',
      {
        tamper: (s) => {
          s.headers['signature-input'] = `${s.headers['signature-input']!};alg="ed25519"`;
        },
      },
      { text: 'hello' },
    ],
  ];
  for (const [what, status, code, options, body] of refusals) {
    it(`refuses ${what} (${status} ${code})`, async (t) => {
      const u = await createUcpHarness(t);
      const res = await u.call(ADD, body, options);
      assert.equal(res.status, status, res.text);
      assert.equal(res.json<{ code: string }>().code, code);
      const envelope = res.json<{ envelope: Envelope }>().envelope;
      assert.equal(envelope.error!.details!.ucp_code, code);
      assert.equal(typeof envelope.audit_id, 'number', 'every refusal is audited');
      assert.equal(res.headers.signature, undefined, 'a refusal before verification is not signed');
      const notes = await u.h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM notes'));
      assert.equal(Number(notes!.n), 0);
    });
  }

  it('refuses a signature by a key the platform does not publish (wrong key, 401 signature_invalid)', async (t) => {
    const u = await createUcpHarness(t);
    const other = newPlatformKey('platform-2026-09');
    const res = await u.call(COUNT, {}, { key: other });
    assert.equal(res.status, 401);
    assert.equal(res.json<{ code: string }>().code, 'signature_invalid');
  });

  it('an unknown kid forces one profile refetch: a newly published key is found, a missing one is key_not_found', async (t) => {
    const u = await createUcpHarness(t);
    assert.equal((await u.call(COUNT, {})).status, 200);
    assert.equal(u.platform.hits, 1);
    const rotated = newPlatformKey('platform-2026-12');
    u.platform.keys.push(rotated);
    const res = await u.call(COUNT, {}, { key: rotated });
    assert.equal(res.status, 200, res.text);
    assert.equal(u.platform.hits, 2, 'one forced refetch for the unknown kid');
    const ghost = newPlatformKey('never-published');
    const refused = await u.call(COUNT, {}, { key: ghost });
    assert.equal(refused.status, 401);
    assert.equal(refused.json<{ code: string }>().code, 'key_not_found');
    assert.equal(u.platform.hits, 2, 'no second forced refetch within a minute');
  });

  it('refuses an expired signature and one created in the future (401 signature_expired)', async (t) => {
    const u = await createUcpHarness(t);
    const now = Math.floor(Date.now() / 1000);
    const old = await u.call(COUNT, {}, { created: now - 3600 });
    assert.equal(old.status, 401);
    assert.equal(old.json<{ code: string }>().code, 'signature_expired');
    const expired = await u.call(COUNT, {}, { created: now - 200, expires: now - 100 });
    assert.equal(expired.json<{ code: string }>().code, 'signature_expired');
    const future = await u.call(COUNT, {}, { created: now + 600 });
    assert.equal(future.json<{ code: string }>().code, 'signature_expired');
    assert.equal((await u.call(COUNT, {}, { created: now - 30 })).status, 200, 'within skew and age');
  });

  it('refuses a replayed request (same signature twice, 401 signature_replayed)', async (t) => {
    const u = await createUcpHarness(t);
    let captured: { headers: Record<string, string>; body: Buffer | undefined } | undefined;
    const first = await u.call(
      COUNT,
      {},
      { tamper: (s) => (captured = { headers: { ...s.headers }, body: s.body }) },
    );
    assert.equal(first.status, 200);
    const replay = await fetch(first.url, {
      method: 'POST',
      headers: captured!.headers,
      body: new Uint8Array(captured!.body!),
    });
    assert.equal(replay.status, 401);
    const replayed = (await replay.json()) as { code: string; envelope: Envelope };
    assert.equal(replayed.code, 'signature_replayed');
    assert.equal(typeof replayed.envelope.audit_id, 'number', 'a replay is audited');
  });

  it('requires the UCP components: @query when the URL has one, idempotency-key when sent', async (t) => {
    const u = await createUcpHarness(t);
    assert.equal((await u.call(COUNT, {}, { query: '?trace=1' })).status, 200, 'the client covers @query');
    const noQuery = await u.call(
      COUNT,
      {},
      {
        query: '?trace=1',
        tamper: (s) => {
          s.headers['signature-input'] = s.headers['signature-input']!.replace(' "@query"', '');
        },
      },
    );
    assert.equal(noQuery.json<{ code: string }>().code, 'components_missing');
  });

  it('refuses an untrusted platform (403 profile_not_trusted) and never fetches its profile', async (t) => {
    const u = await createUcpHarness(t, { settings: { platforms: [] } });
    const res = await u.call(COUNT, {});
    assert.equal(res.status, 403);
    assert.equal(res.json<{ code: string }>().code, 'profile_not_trusted');
    assert.equal(u.platform.hits, 0);
  });

  it('accepts any signing platform when any_platform is configured, with its policy', async (t) => {
    const u = await createUcpHarness(t, { settings: { any_platform: { role: 'read_only' } } });
    const res = await u.call(COUNT, {});
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json<{ result: { data: { role: string } } }>().result.data.role, 'read_only');
  });

  it('uses pinned trust-list keys without fetching the profile', async (t) => {
    const u = await createUcpHarness(t);
    const key = u.platform.keys[0]!;
    await u.configure({ platforms: [{ profile: u.platform.url, keys: [{ ...key.jwk }] }] });
    assert.equal((await u.call(COUNT, {})).status, 200);
    assert.equal(u.platform.hits, 0);
    const other = newPlatformKey('other');
    assert.equal((await u.call(COUNT, {}, { key: other })).json<{ code: string }>().code, 'key_not_found');
  });

  it('accepts a message when any of several signatures verifies', async (t) => {
    const u = await createUcpHarness(t);
    const bogus = newPlatformKey('bogus');
    const res = await u.call(
      COUNT,
      {},
      {
        tamper: (s) => {
          // A second label signed by an unknown key, listed first.
          s.headers['signature-input'] =
            `sig0=("@method");created=${Math.floor(Date.now() / 1000)};keyid="bogus", ${s.headers['signature-input']}`;
          s.headers.signature = `sig0=:${nodeSign('sha256', Buffer.from('x'), { key: bogus.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64')}:, ${s.headers.signature}`;
        },
      },
    );
    assert.equal(res.status, 200, res.text);
  });

  it('a missing or malformed UCP-Agent is invalid_profile_url (400)', async (t) => {
    const u = await createUcpHarness(t);
    const res = await u.call(
      COUNT,
      {},
      {
        tamper: (s) => {
          s.headers['ucp-agent'] = 'profile=notastring';
        },
      },
    );
    assert.equal(res.status, 400);
    assert.equal(res.json<{ code: string }>().code, 'invalid_profile_url');
  });
});

/** Encode a raw r‖s ECDSA signature as DER (SEQUENCE of two INTEGERs). */
function derOf(raw: Buffer): Buffer {
  const int = (b: Buffer) => {
    let v = b;
    while (v.length > 1 && v[0] === 0 && v[1]! < 0x80) v = v.subarray(1);
    if (v[0]! >= 0x80) v = Buffer.concat([Buffer.from([0]), v]);
    return Buffer.concat([Buffer.from([0x02, v.length]), v]);
  };
  const seq = Buffer.concat([int(raw.subarray(0, 32)), int(raw.subarray(32))]);
  return Buffer.concat([Buffer.from([0x30, seq.length]), seq]);
}
