/**
 * Rate limits (src/transports/http/rate-limit.ts) and aggregated auth-failure audit rows
 * (src/identity/auth-failure-log.ts): spec/transports.md §rate-limits, spec/audit.md
 * §auth-failure-windows. Runs on the engine of SOLID_TEST_ENGINE; the two-node case needs
 * PostgreSQL (SOLID_TEST_DATABASE_URL).
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createTestRuntime, type TestRuntime } from '../../support/runtime.ts';
import { createTestPostgresStore, PG_SKIP_REASON, TEST_DATABASE_URL } from '../../support/postgres.ts';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import type { RateLimits } from '../../../src/transports/http/rate-limit.ts';
import { createRuntime } from '../../../src/runtime/runtime.ts';
import { AUTH_FAILURES_ACTION } from '../../../src/runtime/ledger/write/refusal-rows.ts';
import { systemVerbs } from '../../../src/verbs/index.ts';
import { verifyStoreChain } from '../../../src/runtime/ledger/verify/verify.ts';
import type { Envelope } from '../../../src/spec/types.ts';
import { rateLimitsOf } from '../../../src/transports/cli/commands/serve-options.ts';
import { isVerbError } from '../../../src/runtime/errors.ts';
import { createWebmcpPlugin } from '../../../src/transports/webmcp/index.ts';
import { injectLogin } from '../webmcp/fixture.ts';
import { signInHumanForTest } from '../../../src/testing.ts';
import { loadHttpMounts } from '../../../src/transports/server/http-mounts.ts';

const T0 = Date.parse('2026-03-02T10:00:05.000Z');

/** A mutable clock: windows only move when the test moves it. */
function testClock(): { now: () => Date; advance(ms: number): void } {
  let at = T0;
  return { now: () => new Date(at), advance: (ms) => (at += ms) };
}

async function server(
  t: TestContext,
  h: TestRuntime,
  rateLimits: Partial<RateLimits>,
): Promise<FastifyInstance> {
  const app = createHttpServer(h.rt, { logger: false, rateLimits });
  t.after(() => app.close());
  await app.ready();
  return app;
}

function call(
  app: FastifyInstance,
  key?: string,
  remoteAddress = '203.0.113.7',
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/api/v1/agent/dispatch/verbs.list',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    payload: '{}',
    remoteAddress,
  });
}

async function auditCount(h: TestRuntime, companyId: number): Promise<number> {
  const r = await h.rt.store.read((q) =>
    q.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM audit_log WHERE company_id = ?', [companyId]),
  );
  return Number(r!.n);
}

async function aggregatedRows(h: TestRuntime, companyId: number): Promise<Record<string, unknown>[]> {
  const rows = await h.rt.store.read((q) =>
    q.all<{ request_data: unknown; reason: string }>(
      'SELECT request_data, reason FROM audit_log WHERE company_id = ? AND action_type = ? ORDER BY seq',
      [companyId, AUTH_FAILURES_ACTION],
    ),
  );
  return rows.map((r) => ({
    reason: r.reason,
    ...((typeof r.request_data === 'string' ? JSON.parse(r.request_data) : r.request_data) as object),
  }));
}

/** Send `n` calls, `batch` at a time; resolves to every answer in order. */
async function burst(n: number, batch: number, send: () => Promise<LightMyRequestResponse>) {
  const out: LightMyRequestResponse[] = [];
  for (let i = 0; i < n; i += batch)
    out.push(...(await Promise.all(Array.from({ length: Math.min(batch, n - i) }, send))));
  return out;
}

describe('rate limits', () => {
  it('solid serve takes its limits from the flags, else SOLID_RATE_LIMIT_*, else the defaults', () => {
    assert.deepEqual(rateLimitsOf({}, {}), {
      perKey: 600,
      perSession: 600,
      perAddress: 60,
      windowMs: 60_000,
    });
    assert.deepEqual(
      rateLimitsOf(
        { rateLimitKey: '5', rateLimitWindow: '10' },
        { SOLID_RATE_LIMIT_KEY: '7', SOLID_RATE_LIMIT_ADDRESS: '0', SOLID_RATE_LIMIT_SESSION: '' },
      ),
      { perKey: 5, perSession: 600, perAddress: 0, windowMs: 10_000 },
    );
    for (const bad of ['-1', '1.5', 'many', '1e3'])
      assert.throws(
        () => rateLimitsOf({ rateLimitAddress: bad }, {}),
        (e: unknown) =>
          isVerbError(e) && e.reason === 'invalid_request' && e.message.includes('--rate-limit-address'),
      );
  });

  it('a burst of 200 calls on one key gets rate_limited envelopes with Retry-After past the limit', async (t) => {
    const clock = testClock();
    const h = await createTestRuntime(t, { clock: clock.now });
    const app = await server(t, h, { perKey: 50, perAddress: 10, windowMs: 60_000 });

    const answers = await burst(200, 20, () => call(app, h.keys.owner));
    const ok = answers.filter((r) => r.statusCode === 200);
    const limited = answers.filter((r) => r.statusCode === 429);
    assert.equal(ok.length, 50);
    assert.equal(limited.length, 150);
    for (const r of limited) {
      const env = r.json() as Envelope;
      assert.equal(env.ok, false);
      assert.equal(env.error!.reason, 'rate_limited');
      assert.ok(env.error!.message.length > 0 && (env.error!.hint ?? '').length > 0);
      // 5 s into the minute: 55 s until the window ends.
      assert.equal(r.headers['retry-after'], '55');
      assert.equal(env.error!.details!.retry_after_seconds, 55);
    }
    // Another key has its own bucket; probes are never limited.
    assert.equal((await call(app, h.keys.admin)).statusCode, 200);
    for (let i = 0; i < 20; i++) assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200);
    // A bad key is counted on the address (10), never in the key's bucket.
    const bad = await burst(15, 5, () => call(app, `${h.keys.admin}x`));
    assert.deepEqual(
      bad.map((r) => r.statusCode),
      [...Array(10).fill(401), ...Array(5).fill(429)],
    );
    assert.equal((await call(app, h.keys.admin)).statusCode, 200);
    // The next window admits the key again.
    clock.advance(60_000);
    assert.equal((await call(app, h.keys.owner)).statusCode, 200);
  });

  it('limited answers carry x-ratelimit-limit, -remaining and -reset; 404s and probes are not counted', async (t) => {
    const clock = testClock();
    const h = await createTestRuntime(t, { clock: clock.now });
    const app = await server(t, h, { perKey: 3, perAddress: 2, windowMs: 60_000 });

    const first = await call(app, h.keys.owner);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.headers['x-ratelimit-limit'], '3');
    assert.equal(first.headers['x-ratelimit-remaining'], '2');
    assert.equal(first.headers['x-ratelimit-reset'], '55');
    // Unknown routes and probes spend nothing of the address's bucket and carry no limit headers.
    for (let i = 0; i < 5; i++) {
      const missing = await app.inject({ url: '/no/such/route', remoteAddress: '203.0.113.7' });
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.headers['x-ratelimit-limit'], undefined);
      assert.equal((await app.inject({ url: '/readyz', remoteAddress: '203.0.113.7' })).statusCode, 200);
    }
    const anon = await call(app);
    assert.equal(anon.statusCode, 200, anon.body);
    assert.equal(anon.headers['x-ratelimit-remaining'], '1');
    assert.equal((await call(app, h.keys.owner)).headers['x-ratelimit-remaining'], '1');
    assert.equal((await call(app, h.keys.owner)).headers['x-ratelimit-remaining'], '0');
    const over = await call(app, h.keys.owner);
    assert.equal(over.statusCode, 429);
    assert.equal(over.headers['x-ratelimit-limit'], '3');
    assert.equal(over.headers['x-ratelimit-remaining'], '0');
    assert.equal(over.headers['x-ratelimit-reset'], '55');
    assert.equal(over.headers['retry-after'], '55');
  });

  it('a session counts against the key or person behind it: three sessions of one key share its budget', async (t) => {
    const clock = testClock();
    const h = await createTestRuntime(t, { clock: clock.now });
    const app = createHttpServer(h.rt, {
      logger: false,
      plugins: [createWebmcpPlugin()],
      rateLimits: { perKey: 9, perSession: 4, perAddress: 3 },
    });
    t.after(() => app.close());
    await app.ready();
    // Three sessions minted from one key (keyless logins: 3 of the address's 3).
    const sessions = [];
    for (let i = 0; i < 3; i++) sessions.push(await injectLogin(app, h.keys.owner));
    const who = (cookie: string) => app.inject({ url: '/api/v1/session', headers: { cookie } });
    const answers = await Promise.all(
      sessions.flatMap((s) => Array.from({ length: 4 }, () => who(s.cookie))),
    );
    // 12 calls through three sessions, one key's budget of 9: three refused (on main: none).
    assert.deepEqual(
      answers.map((r) => r.statusCode).filter((c) => c === 429).length,
      3,
      answers.map((r) => r.statusCode).join(','),
    );
    assert.equal(
      (answers.find((r) => r.statusCode === 429)!.json() as Envelope).error!.reason,
      'rate_limited',
    );
    // The key itself has nothing left either.
    assert.equal((await call(app, h.keys.owner)).statusCode, 429);
    // Made-up cookies are counted on the address (used up by the logins), not in a fresh bucket.
    const forged = await Promise.all(
      Array.from({ length: 2 }, (_, i) => who(`solid_session=sess_${'A'.repeat(42)}${i}`)),
    );
    assert.deepEqual(forged.map((r) => r.statusCode).sort(), [429, 429]);
  });

  it("a signed-in person's sessions share one budget; another person has their own", async (t) => {
    const clock = testClock();
    const h = await createTestRuntime(t, { clock: clock.now });
    const app = createHttpServer(h.rt, {
      logger: false,
      plugins: [createWebmcpPlugin()],
      rateLimits: { perKey: 100, perSession: 5, perAddress: 100 },
    });
    t.after(() => app.close());
    await app.ready();
    const jane = { company_id: h.companyId, user_id: 1, role: 'owner' as const, name: 'Jane' };
    const a = await signInHumanForTest(h.rt, jane);
    const b = await signInHumanForTest(h.rt, jane);
    const other = await signInHumanForTest(h.rt, { ...jane, user_id: 2, role: 'admin', name: 'Ann' });
    const who = (cookie: string) => app.inject({ url: '/api/v1/session', headers: { cookie } });
    const janes = await Promise.all([a, b, a, b, a, b, a, b].map((s) => who(s.cookie)));
    assert.equal(
      janes.filter((r) => r.statusCode === 429).length,
      3,
      janes.map((r) => r.statusCode).join(','),
    );
    const anns = await Promise.all(Array.from({ length: 5 }, () => who(other.cookie)));
    assert.ok(anns.every((r) => r.statusCode !== 429));
  });

  it('1000 bad-key calls leave a bounded number of audit rows that record the count', async (t) => {
    const clock = testClock();
    const h = await createTestRuntime(t, { clock: clock.now });
    const app = await server(t, h, { perAddress: 0 });
    const before = await auditCount(h, h.sandboxId);

    const answers = await burst(1000, 50, () => call(app, 'sk_solid_nope_nope'));
    assert.ok(
      answers.every((r) => r.statusCode === 401 && (r.json() as Envelope).error!.reason === 'auth_invalid'),
    );
    const firstId = (answers[0]!.json() as Envelope).audit_id;
    assert.equal(typeof firstId, 'number');
    // Every answer names the audited row of its window.
    assert.ok(answers.every((r) => (r.json() as Envelope).audit_id === firstId));

    clock.advance(60_000);
    await h.rt.authFailures.flushExpired();
    const rows = (await auditCount(h, h.sandboxId)) - before;
    assert.ok(rows <= 2, `rows written: ${rows}`);
    const agg = await aggregatedRows(h, h.sandboxId);
    assert.equal(agg.length, 1);
    assert.equal(agg[0]!.count, 1000);
    assert.equal(agg[0]!.reason, 'auth_invalid');
    assert.equal(agg[0]!.address, '203.0.113.7');
    assert.equal(agg[0]!.first_audit_id, firstId);
    assert.equal(agg[0]!.first_at, new Date(T0).toISOString());

    // A wrong secret for an existing key id: the owner's log is bounded too.
    const ownerBefore = await auditCount(h, h.companyId);
    const keyId = h.rt.tenants.keyIdOf(h.keys.owner)!;
    const wrong = h.keys.owner.slice(0, -4) + (h.keys.owner.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    assert.equal(h.rt.tenants.keyIdOf(wrong), keyId);
    await burst(300, 50, () => call(app, wrong, '198.51.100.9'));
    await h.rt.authFailures.flushAll();
    assert.ok((await auditCount(h, h.companyId)) - ownerBefore <= 2);
    const ownerAgg = await aggregatedOwnerCount(h, keyId);
    assert.equal(ownerAgg, 300);

    const report = await verifyStoreChain(h.rt.store);
    assert.equal(report.ok, true, JSON.stringify(report.tenants.flatMap((x) => x.findings)));
  });

  it(
    'two PostgreSQL nodes share the limit and each bounds the audit rows of a bad-key flood',
    { skip: TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false },
    async (t) => {
      const clock = testClock();
      const h = await createTestRuntime(t, { clock: clock.now, engine: 'postgres' });
      const schema = (h.rt.store as unknown as { schema: string }).schema;
      const rt2 = await createRuntime({
        store: createTestPostgresStore(t, { schema, keep: true }),
        secrets: h.rt.secrets,
        clock: clock.now,
        logger: pino({ level: 'silent' }),
        sandboxCompanyId: 1,
      });
      rt2.register(...systemVerbs);
      t.after(() => rt2.close());
      const limits = { perKey: 60, perAddress: 20, windowMs: 60_000 };
      const nodes = [await server(t, h, limits), await server(t, { ...h, rt: rt2 }, limits)];

      let i = 0;
      const answers = await burst(200, 20, () => call(nodes[i++ % 2]!, h.keys.owner));
      assert.equal(answers.filter((r) => r.statusCode === 200).length, 60);
      const limited = answers.filter((r) => r.statusCode === 429);
      assert.equal(limited.length, 140);
      assert.ok(limited.every((r) => (r.json() as Envelope).error!.reason === 'rate_limited'));
      assert.ok(limited.every((r) => r.headers['retry-after'] === '55'));

      // 1000 bad-key calls from 1000 callers behind one address are cut at 20 by the limit; from
      // distinct addresses past the limit (limit off) each node aggregates its own window.
      const before = await auditCount(h, h.sandboxId);
      const noLimit = [
        await server(t, h, { perAddress: 0, perKey: 0 }),
        await server(t, { ...h, rt: rt2 }, { perAddress: 0, perKey: 0 }),
      ];
      let j = 0;
      await burst(1000, 50, () => call(noLimit[j++ % 2]!, 'sk_solid_nope_nope'));
      await h.rt.authFailures.flushAll();
      await rt2.authFailures.flushAll();
      assert.ok((await auditCount(h, h.sandboxId)) - before <= 4);
      const agg = await aggregatedRows(h, h.sandboxId);
      assert.equal(
        agg.reduce((n, r) => n + Number(r.count), 0),
        1000,
      );
      const report = await verifyStoreChain(h.rt.store);
      assert.equal(report.ok, true, JSON.stringify(report.tenants.flatMap((x) => x.findings)));
    },
  );
});

async function aggregatedOwnerCount(h: TestRuntime, keyId: string): Promise<number> {
  const rows = await h.rt.store.read((q) =>
    q.all<{ request_data: unknown }>(
      "SELECT request_data FROM audit_log WHERE company_id = ? AND key_id = ? AND action_type = 'api_key.wrong_secret' ORDER BY seq",
      [h.companyId, keyId],
    ),
  );
  const data = rows.map(
    (r) =>
      (typeof r.request_data === 'string' ? JSON.parse(r.request_data) : r.request_data) as Record<
        string,
        unknown
      >,
  );
  // The window's first attempt has its ordinary row; the aggregated row counts every attempt.
  return data.filter((d) => d.aggregated === true).reduce((n, d) => n + Number(d.count), 0);
}

describe('rate limits on every mount', () => {
  it('past the limit every mounted route answers 429 with Retry-After and the rate_limited reason in its own shape', async (t) => {
    const clock = testClock();
    const h = await createTestRuntime(t, { clock: clock.now });
    const app = createHttpServer(h.rt, {
      logger: false,
      rateLimits: { perAddress: 1, perKey: 1, perSession: 1, windowMs: 60_000 },
      plugins: await loadHttpMounts(),
    });
    t.after(() => app.close());
    await app.ready();
    const initialize = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const routes: Array<{
      method: 'GET' | 'POST';
      url: string;
      payload?: string;
      headers?: Record<string, string>;
    }> = [
      { method: 'GET', url: '/.well-known/ucp' },
      { method: 'GET', url: '/openapi.json' },
      { method: 'GET', url: '/api/v1/agent/verbs' },
      { method: 'GET', url: '/webmcp.js' },
      { method: 'GET', url: '/' },
      { method: 'GET', url: '/.well-known/solid-verbs-conformance' },
      {
        method: 'POST',
        url: '/mcp',
        payload: initialize,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      },
      { method: 'GET', url: '/mcp', headers: { accept: 'text/event-stream' } },
    ];
    const reasonOf = (body: string): string | undefined => {
      const b = JSON.parse(body) as {
        error?: { reason?: string; data?: { envelope?: Envelope } };
        code?: string;
      };
      return b.code ?? b.error?.reason ?? b.error?.data?.envelope?.error?.reason;
    };
    let address = 0;
    for (const r of routes) {
      // Each route from an address of its own: the first call spends the bucket, the second is over.
      const remoteAddress = `203.0.113.${++address}`;
      const first = await app.inject({ ...r, remoteAddress });
      assert.notEqual(first.statusCode, 429, `${r.method} ${r.url}: the first call is within the limit`);
      const over = await app.inject({ ...r, remoteAddress });
      assert.equal(over.statusCode, 429, `${r.method} ${r.url}: ${over.body}`);
      const retry = Number(over.headers['retry-after']);
      assert.ok(
        Number.isInteger(retry) && retry >= 1 && retry <= 60,
        `${r.method} ${r.url}: Retry-After ${retry}`,
      );
      assert.equal(reasonOf(over.body), 'rate_limited', `${r.method} ${r.url}: ${over.body}`);
    }
  });
});
