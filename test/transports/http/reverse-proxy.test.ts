/**
 * `solid serve` behind the usual HTTPS reverse proxy (spec/transports.md §http-proxy): a tiny
 * in-process proxy forwards to the real process with `Host: agents.example.com`,
 * `X-Forwarded-Proto: https` and `X-Forwarded-For`, as nginx does after TLS termination.
 *
 * With `--trust-proxy --allowed-origin https://agents.example.com` the dashboard sign-in works
 * and sets `Secure` cookies, and an MCP initialize passes the DNS-rebinding checks; with
 * `--trust-proxy` alone both are refused (fail-closed). Without `--trust-proxy` a forged
 * X-Forwarded-Proto from a client changes nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { cliHarness } from '../../support/cli.ts';
import { serve, solid } from '../../reliability/serve-process.ts';
import { normalizeAllowedOrigins, parseTrustProxy } from '../../../src/identity/origin-policy.ts';
import { proxyOptionsOf } from '../../../src/transports/cli/commands/serve-options.ts';

const PUBLIC = 'https://agents.example.com';

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One HTTP request with exactly these headers (fetch would not let a test set Host/Origin freely). */
function request(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<Raw> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        headers: {
          ...(payload !== undefined
            ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }
            : {}),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** A reverse proxy in front of `upstream`, rewriting Host and adding X-Forwarded-*; returns its base URL. */
async function reverseProxy(t: { after(fn: () => unknown): void }, upstream: string): Promise<string> {
  const target = new URL(upstream);
  const proxy = http.createServer((inbound, outbound) => {
    const headers = {
      ...inbound.headers,
      host: 'agents.example.com',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'agents.example.com',
      'x-forwarded-for': inbound.socket.remoteAddress ?? '127.0.0.1',
    };
    const up = http.request(
      { hostname: target.hostname, port: target.port, path: inbound.url, method: inbound.method, headers },
      (res) => {
        outbound.writeHead(res.statusCode ?? 502, res.headers);
        res.pipe(outbound);
      },
    );
    up.on('error', () => {
      outbound.writeHead(502);
      outbound.end();
    });
    inbound.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => proxy.close(() => r())));
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'proxy', version: '1' },
  },
};

function cookies(r: Raw): string[] {
  const c = r.headers['set-cookie'];
  return Array.isArray(c) ? c : c === undefined ? [] : [c];
}

test('allowed origins and trust-proxy values are checked; a bad one fails the start', async () => {
  assert.deepEqual(normalizeAllowedOrigins(['https://Agents.Example.com:443/', 'http://localhost:5173']), [
    'https://agents.example.com',
    'http://localhost:5173',
  ]);
  for (const bad of [
    'agents.example.com',
    'https://agents.example.com/app',
    'ftp://x',
    'https://a@b',
    'https://x?q',
  ])
    assert.throws(() => normalizeAllowedOrigins([bad]), { reason: 'invalid_request' }, bad);
  assert.equal(parseTrustProxy(true), 'loopback');
  assert.equal(parseTrustProxy('false'), false);
  assert.throws(() => parseTrustProxy('2'), { reason: 'invalid_request' });
  assert.deepEqual(parseTrustProxy('127.0.0.1, 10.0.0.0/8'), ['127.0.0.1', '10.0.0.0/8']);
  assert.deepEqual(
    proxyOptionsOf({}, { SOLID_TRUST_PROXY: '127.0.0.1', SOLID_ALLOWED_ORIGINS: `${PUBLIC}, http://x.test` }),
    {
      trustProxy: '127.0.0.1',
      allowedOrigins: [PUBLIC, 'http://x.test'],
    },
  );
  assert.deepEqual(proxyOptionsOf({}, {}), { trustProxy: false, allowedOrigins: [] });

  const r = await solid(['serve', '--port', '0', '--allowed-origin', 'https://agents.example.com/app']);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /not an origin/);
});

test(
  'behind an HTTPS reverse proxy: sign-in with Secure cookies and MCP only with --allowed-origin',
  { timeout: 300_000 },
  async (t) => {
    const cli = cliHarness(t);
    const init = await cli.run(['init', '--json']);
    assert.equal(init.code, 0, init.stderr);
    const key = init.json<{ owner_api_key: string }>().owner_api_key;

    const [allowed, bare, plain] = await Promise.all([
      serve(t, cli.db, ['--trust-proxy', '--allowed-origin', PUBLIC]),
      serve(t, cli.db, ['--trust-proxy']),
      serve(t, cli.db),
    ]);
    const viaAllowed = await reverseProxy(t, allowed.base);
    const viaBare = await reverseProxy(t, bare.base);
    const browser = { origin: PUBLIC, 'sec-fetch-site': 'same-origin' };

    await t.test('dashboard sign-in through the proxy sets Secure cookies', async () => {
      const res = await request(`${viaAllowed}/api/v1/session`, 'POST', browser, { api_key: key });
      assert.equal(res.status, 200, res.text);
      assert.equal((JSON.parse(res.text) as { ok: boolean }).ok, true);
      const set = cookies(res);
      assert.ok(set.length >= 2, String(set));
      for (const c of set) assert.match(c, /;\s*Secure/i, c);
      // The session works on the next request through the proxy.
      const session = set.map((c) => c.split(';')[0]).join('; ');
      const me = await request(`${viaAllowed}/api/v1/session`, 'GET', { ...browser, cookie: session });
      assert.equal(me.status, 200, me.text);
    });

    await t.test('without --allowed-origin the same sign-in is refused with origin_denied', async () => {
      const res = await request(`${viaBare}/api/v1/session`, 'POST', browser, { api_key: key });
      assert.equal(res.status, 403, res.text);
      const env = JSON.parse(res.text) as { ok: boolean; error: { reason: string } };
      assert.equal(env.ok, false);
      assert.equal(env.error.reason, 'origin_denied');
      assert.equal(cookies(res).length, 0);
    });

    await t.test('MCP initialize through the proxy passes only with --allowed-origin', async () => {
      const headers = {
        ...browser,
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${key}`,
      };
      const ok = await request(`${viaAllowed}/mcp`, 'POST', headers, INIT);
      assert.equal(ok.status, 200, ok.text);
      assert.ok(ok.headers['mcp-session-id'] !== undefined);
      const refused = await request(`${viaBare}/mcp`, 'POST', headers, INIT);
      assert.equal(refused.status, 403, refused.text);
    });

    await t.test('without --trust-proxy a forged X-Forwarded-Proto changes nothing', async () => {
      const own = new URL(plain.base).origin;
      const forged = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'agents.example.com' };
      const res = await request(
        `${plain.base}/api/v1/session`,
        'POST',
        { ...forged, origin: own },
        { api_key: key },
      );
      assert.equal(res.status, 200, res.text);
      for (const c of cookies(res)) assert.doesNotMatch(c, /;\s*Secure/i, c);
      const https = await request(
        `${plain.base}/api/v1/session`,
        'POST',
        { ...forged, origin: own.replace('http:', 'https:') },
        { api_key: key },
      );
      assert.equal(https.status, 403, https.text);
      const pub = await request(
        `${plain.base}/api/v1/session`,
        'POST',
        { ...forged, origin: PUBLIC },
        { api_key: key },
      );
      assert.equal(pub.status, 403, pub.text);
    });
  },
);
