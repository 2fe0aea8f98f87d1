/**
 * Remote mode with a wrong target: a malformed URL (exit 2), nothing listening, something that is
 * not a solid server, a missing path prefix, https to a plain-http port, a connection dropped
 * mid-call, a server that never answers — each one clear message and exit 8
 * (upstream_unavailable), never a stack, and nothing stored. Retries only where a repeat cannot
 * act twice: a write is sent once unless it carries an idempotency key; reads are retried.
 * Spec: spec/transports.md §remote-errors.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { remoteFixture, runCliCaptured } from './support.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { ApiClient } from '../../src/remote-client/api-client.ts';
import { exitCodeOf } from '../../src/transports/cli/output.ts';
import { reasonInfo } from '../../src/spec/reasons.ts';

const ENV = { SOLID_API_URL: undefined, SOLID_API_KEY: undefined, SOLID_DB: undefined };

async function fakeServer(
  t: TestContext,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function noStack(text: string): void {
  assert.doesNotMatch(text, /node:internal|\n\s+at \S+ \(/);
}

test('a malformed --url is a usage error (exit 2) naming the problem', async () => {
  for (const [url, why] of [
    ['127.0.0.1:4400', /no http:\/\/ or https:\/\/ scheme/],
    ['ftp://example.com', /must use http or https/],
    ['http://user:secret@example.com', /must not carry a user name or password/],
    ['http://example.com/?x=1', /must not have a query/],
  ] as const) {
    const r = await runCliCaptured(['--url', url, 'agent', 'dispatch', 'audit.trail'], { env: ENV });
    assert.equal(r.code, 2, url);
    assert.match(r.stderr, why);
    noStack(r.stderr);
  }
  const both = await runCliCaptured(['--url', 'http://127.0.0.1:1', '--db', '/tmp/x.db', 'verbs', 'list'], {
    env: ENV,
  });
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--url and --db name two different targets/);
});

test('nothing listening: exit 8 with "connection refused", for dispatches and listings', async () => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const d = await runCliCaptured(['--url', url, 'agent', 'dispatch', 'audit.trail', '--json'], { env: ENV });
  assert.equal(d.code, 8);
  const env = d.json<Envelope>();
  assert.equal(env.error!.reason, 'upstream_unavailable');
  assert.match(env.error!.message, /connection refused/);
  assert.match(env.error!.hint!, /Check --url \/ SOLID_API_URL/);
  const l = await runCliCaptured(['--url', url, 'verbs', 'list'], { env: ENV });
  assert.equal(l.code, 8);
  assert.match(l.stderr, /✗ upstream_unavailable: .*connection refused/);
  noStack(l.stderr);
});

test(
  'something that is not a solid server, or a solid server under a missing path prefix: exit 8 saying so',
  { timeout: 120_000 },
  async (t) => {
    const html = await fakeServer(t, (_req, res) =>
      res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>'),
    );
    const r = await runCliCaptured(['--url', html, 'agent', 'dispatch', 'audit.trail', '--json'], {
      env: ENV,
    });
    assert.equal(r.code, 8);
    assert.match(
      r.json<Envelope>().error!.message,
      /does not look like a solid server: HTTP 404, .* answered text\/html, not JSON/,
    );

    const f = await remoteFixture(t);
    const prefixed = await runCliCaptured(
      ['--url', `${f.baseUrl}/solid`, 'agent', 'dispatch', 'audit.trail', '--json'],
      { env: ENV },
    );
    assert.equal(prefixed.code, 8);
    assert.match(
      prefixed.json<Envelope>().error!.message,
      /has no POST \/api\/v1\/agent\/dispatch\/audit.trail route/,
    );

    // https to the plain-http port of the same server: a TLS failure, said as such.
    const tls = await runCliCaptured(
      ['--url', f.baseUrl.replace('http:', 'https:'), 'agent', 'dispatch', 'audit.trail', '--json'],
      { env: ENV },
    );
    assert.equal(tls.code, 8);
    const e = tls.json<Envelope>().error!;
    assert.match(e.message, /TLS handshake with https:\/\/127\.0\.0\.1:\d+ failed .*plain http/);
    assert.equal(e.details!.failure, 'tls');

    // Nothing is stored by a login that could not reach the server.
    const login = await runCliCaptured(
      ['--url', `http://127.0.0.1:${await closedPort()}`, 'login', '--api-key', f.keys.owner],
      { env: { ...ENV, XDG_CONFIG_HOME: f.configHome } },
    );
    assert.equal(login.code, 8);
    assert.notEqual(login.code, 0);
    assert.equal(existsSync(join(f.configHome, 'solid', 'credentials.json')), false);
  },
);

test('a connection dropped mid-call: a write is sent once ("may or may not have run"), a keyed write and reads are retried', async (t) => {
  const seen: string[] = [];
  const url = await fakeServer(t, (req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.socket?.destroy());
  });
  const write = await runCliCaptured(
    ['--url', url, 'agent', 'dispatch', 'deals_create', '--args', '{"title":"x"}', '--confirm', '--json'],
    { env: ENV },
  );
  assert.equal(write.code, 8);
  const e = write.json<Envelope>().error!;
  assert.match(e.message, /dropped before a complete answer.*may or may not have run/);
  assert.match(e.hint!, /idempotency-key/);
  assert.equal(e.details!.may_have_run, true);
  assert.deepEqual(seen, ['POST /api/v1/agent/dispatch/deals_create'], 'not retried');

  seen.length = 0;
  const keyed = await runCliCaptured(
    [
      '--url',
      url,
      'agent',
      'dispatch',
      'deals_create',
      '--args',
      '{"title":"x"}',
      '--idempotency-key',
      'k-1',
      '--json',
    ],
    { env: ENV },
  );
  assert.equal(keyed.code, 8);
  assert.equal(seen.length, 3, 'an idempotency key makes the write safe to repeat (1 + 2 retries)');

  seen.length = 0;
  const read = await runCliCaptured(['--url', url, 'verbs', 'list', '--surface', 'cli'], { env: ENV });
  assert.equal(read.code, 8);
  assert.deepEqual(seen, Array(3).fill('GET /api/v1/agent/verbs?surface=cli'));
});

test('a server that never answers: the call ends with upstream_unavailable after the timeout', async (t) => {
  const url = await fakeServer(t, () => {
    /* accept and say nothing */
  });
  const r = await runCliCaptured(['--url', url, 'agent', 'dispatch', 'audit.trail', '--json'], {
    env: { ...ENV, SOLID_API_TIMEOUT_SECONDS: '0.3' },
  });
  assert.equal(r.code, 8);
  assert.match(r.json<Envelope>().error!.message, /did not answer in time/);
});

test("a server's domain reasons give the remote CLI its exit codes, in that client only and bounded", async (t) => {
  let n = 0;
  const url = await fakeServer(t, (req, res) => {
    req.resume();
    req.on('end', () => {
      n++;
      // 409 for the first reason; then a new made-up reason every call.
      const reason = n === 1 ? 'stock_reserved' : `made_up_${n}`;
      res.writeHead(n === 1 ? 409 : 422, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: false, verb: 'x.y', error: { reason, message: 'no' } }));
    });
  });
  const client = new ApiClient({ baseUrl: url, apiKey: null, retries: 0 });
  t.after(() => client.close());
  const first = await client.dispatch('x.y', {});
  assert.equal(first.error?.reason, 'stock_reserved');
  assert.equal(exitCodeOf(first, client.reasons), 6, 'a 409 domain reason exits like an embedded conflict');
  assert.equal(exitCodeOf(first), 1, 'the process-global table learned nothing');
  assert.equal(reasonInfo('stock_reserved').status, 422);
  const other = new ApiClient({ baseUrl: url, apiKey: null });
  t.after(() => other.close());
  assert.equal(other.reasons.has('stock_reserved'), false, 'another client does not see it');
  for (let i = 0; i < ApiClient.MAX_LEARNED_REASONS + 20; i++) await client.dispatch('x.y', {});
  const learned = [...Array(n + 1).keys()].filter((k) => client.reasons.has(`made_up_${k}`)).length;
  assert.equal(learned + 1, ApiClient.MAX_LEARNED_REASONS, 'at most MAX_LEARNED_REASONS are kept');
  assert.equal(client.reasons.has('stock_reserved'), true);
});
