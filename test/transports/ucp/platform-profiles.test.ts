/**
 * Fetching platform profiles by UCP's hosting rules (research brief §2.4, §7.4): https or dev
 * loopback only, special-use addresses refused, no redirects, JSON only, bounded size and time,
 * cache ≥ 60 s honouring max-age, one forced refetch per minute per origin for an unknown kid.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  PlatformProfiles,
  checkProfileUrl,
  guardedLookup,
  isSpecialUseAddress,
  ttlFromCacheControl,
} from '../../../src/transports/ucp/platform-profiles.ts';
import { UcpError } from '../../../src/transports/ucp/ucp-error.ts';
import { SignatureError } from '../../../src/transports/ucp/signature-error.ts';
import { newPlatformKey, startPlatform } from './harness.ts';

function code(c: string) {
  return (err: unknown) => (err instanceof UcpError || err instanceof SignatureError) && err.code === c;
}

describe('platform profile URLs', () => {
  it('accepts https and, in dev mode only, http on loopback', () => {
    assert.equal(checkProfileUrl('https://platform.example/.well-known/ucp', false).host, 'platform.example');
    assert.throws(
      () => checkProfileUrl('http://platform.example/.well-known/ucp', false),
      code('invalid_profile_url'),
    );
    assert.throws(
      () => checkProfileUrl('http://platform.example/.well-known/ucp', true),
      code('invalid_profile_url'),
      'http only for loopback',
    );
    assert.throws(() => checkProfileUrl('http://127.0.0.1:8080/p', false), code('invalid_profile_url'));
    assert.equal(checkProfileUrl('http://127.0.0.1:8080/p', true).port, '8080');
    assert.equal(checkProfileUrl('http://localhost:8080/p', true).hostname, 'localhost');
    assert.throws(() => checkProfileUrl('https://localhost/p', false), code('invalid_profile_url'));
    assert.throws(() => checkProfileUrl('https://[::1]/p', false), code('invalid_profile_url'));
    assert.equal(checkProfileUrl('https://[::1]/p', true).hostname, '[::1]');
    for (const bad of [
      'https://10.0.0.1/p',
      'https://192.168.1.1/p',
      'https://169.254.169.254/latest',
      'https://[fd00::1]/p',
      'https://0.0.0.0/p',
      'ftp://platform.example/p',
      'https://user:pw@platform.example/p',
      'not a url',
    ]) {
      assert.throws(() => checkProfileUrl(bad, true), code('invalid_profile_url'), bad);
    }
  });

  it('classifies special-use addresses (IPv4, IPv6, IPv4-mapped)', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.0.1',
      '169.254.1.1',
      '100.64.0.1',
      '224.0.0.1',
      '::1',
      'fe80::1',
      'fc00::1',
      '::ffff:10.0.0.1',
      '::ffff:127.0.0.1',
    ])
      assert.equal(isSpecialUseAddress(a), true, a);
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      assert.equal(isSpecialUseAddress(a), false, a);
  });

  it('checks the addresses a name resolves to (the lookup of the connection itself), loopback only in dev mode', async () => {
    const lookup = (dev: boolean) =>
      new Promise<unknown>((resolve, reject) =>
        guardedLookup(dev)('localhost', { all: true }, (err, addresses) =>
          err ? reject(err) : resolve(addresses),
        ),
      );
    await assert.rejects(lookup(false), code('invalid_profile_url'));
    const ok = (await lookup(true)) as Array<{ address: string }>;
    assert.ok(ok.length > 0 && ok.every((a) => a.address === '127.0.0.1' || a.address === '::1'));
  });
});

describe('cache lifetime', () => {
  it('honours max-age between 60 s and 1 h; 60 s when absent or not cacheable', () => {
    assert.equal(ttlFromCacheControl(undefined, 60, 3600), 60);
    assert.equal(ttlFromCacheControl('public, max-age=300', 60, 3600), 300);
    assert.equal(ttlFromCacheControl('max-age=5', 60, 3600), 60);
    assert.equal(ttlFromCacheControl('max-age=999999', 60, 3600), 3600);
    assert.equal(ttlFromCacheControl('no-store, max-age=600', 60, 3600), 60);
  });
});

describe('PlatformProfiles', () => {
  it('caches a profile for its max-age and refetches after it (with If-None-Match)', async (t) => {
    const platform = await startPlatform(t);
    let now = 1_000_000;
    const profiles = new PlatformProfiles({ dev: true, now: () => now });
    platform.cacheControl = 'public, max-age=120';
    const first = await profiles.get(platform.url);
    assert.equal(first.version, '2026-08-25');
    assert.ok(first.keys.get(platform.keys[0]!.kid) !== undefined);
    now += 119_000;
    await profiles.get(platform.url);
    assert.equal(platform.hits, 1);
    now += 2000;
    await profiles.get(platform.url);
    assert.equal(platform.hits, 2);
  });

  it('shares one fetch between concurrent callers', async (t) => {
    const platform = await startPlatform(t);
    const profiles = new PlatformProfiles({ dev: true });
    await Promise.all([profiles.get(platform.url), profiles.get(platform.url), profiles.get(platform.url)]);
    assert.equal(platform.hits, 1);
  });

  it('forces one refetch per minute per origin for an unknown kid', async (t) => {
    const platform = await startPlatform(t);
    let now = 5_000_000;
    const profiles = new PlatformProfiles({ dev: true, now: () => now });
    await profiles.get(platform.url);
    now += 1000;
    assert.equal(await profiles.resolveKey(platform.url, 'unknown'), undefined);
    assert.equal(platform.hits, 2);
    now += 30_000;
    assert.equal(await profiles.resolveKey(platform.url, 'unknown'), undefined);
    assert.equal(platform.hits, 2, 'not again within 60 s');
    now += 31_000;
    const late = newPlatformKey('late');
    platform.keys.push(late);
    assert.ok(await profiles.resolveKey(platform.url, 'late'));
    assert.equal(platform.hits, 3);
  });

  it('refuses redirects, non-JSON, oversized, non-200, slow and malformed profiles with UCP codes', async (t) => {
    const platform = await startPlatform(t);
    const profiles = new PlatformProfiles({ dev: true, maxBytes: 1024, timeoutMs: 300 });
    const cases: Array<[string, (res: import('node:http').ServerResponse) => void]> = [
      [
        'profile_unreachable',
        (res) => res.writeHead(301, { location: 'https://elsewhere.example/.well-known/ucp' }).end(),
      ],
      ['profile_unreachable', (res) => res.writeHead(500).end()],
      [
        'profile_malformed',
        (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>'),
      ],
      [
        'profile_malformed',
        (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ucp": '),
      ],
      [
        'profile_malformed',
        (res) =>
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ ucp: { version: '2026-08-25' }, pad: 'x'.repeat(5000) })),
      ],
      [
        'profile_malformed',
        (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys": []}'),
      ],
      [
        'version_unsupported',
        (res) =>
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end('{"ucp": {"version": "2026-01-11"}}'),
      ],
      ['profile_unreachable', () => {}],
    ];
    for (const [expected, handler] of cases) {
      profiles.clear();
      platform.handler = (_req, res) => handler(res);
      await assert.rejects(profiles.get(platform.url), code(expected), expected);
    }
  });

  it('accepts a 2026-04-08 profile and reads its signing_keys[]', async (t) => {
    const platform = await startPlatform(t);
    const key = platform.keys[0]!;
    platform.handler = (_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ ucp: { version: '2026-04-08' }, signing_keys: [key.jwk] }));
    const profiles = new PlatformProfiles({ dev: true });
    assert.ok(await profiles.resolveKey(platform.url, key.kid));
  });

  it('a key it cannot use fails only that kid: unknown type, private members', async (t) => {
    const platform = await startPlatform(t);
    const good = platform.keys[0]!;
    platform.handler = (_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          ucp: { version: '2026-08-25' },
          keys: [
            good.jwk,
            { kid: 'ed', kty: 'OKP', crv: 'Ed25519', x: 'JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs' },
            { ...good.jwk, kid: 'leaky', d: 'UpuF81l-kOxbjf7T4mNSv0r5tN67Gim7rnf6EFpcYDs' },
          ],
        }),
      );
    const profiles = new PlatformProfiles({ dev: true });
    assert.ok(await profiles.resolveKey(platform.url, good.kid));
    await assert.rejects(profiles.resolveKey(platform.url, 'ed'), code('algorithm_unsupported'));
    await assert.rejects(profiles.resolveKey(platform.url, 'leaky'), code('key_not_found'));
  });

  it('uses a recent profile when a refetch finds the platform unreachable', async (t) => {
    const platform = await startPlatform(t);
    let now = 9_000_000;
    const profiles = new PlatformProfiles({ dev: true, now: () => now, staleIfErrorSeconds: 600 });
    await profiles.get(platform.url);
    now += 120_000;
    platform.handler = (_req, res) => res.writeHead(503).end();
    assert.equal((await profiles.get(platform.url)).version, '2026-08-25');
    now += 600_000;
    await assert.rejects(profiles.get(platform.url), code('profile_unreachable'));
  });
});
