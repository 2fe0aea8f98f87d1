/**
 * Bounded in time, durable by default (issue 30 rows 4, 5, 9, 12; docs/operations.md):
 *
 * - a write body that waits inside its SQLite transaction is cut at its time budget, rolled back
 *   and answered `store_unavailable`, while another tenant's write commits meanwhile;
 * - the default SQLite durability is synchronous=FULL;
 * - every HTTP request is answered within its deadline (an envelope at worst), a long poll is not
 *   cut, /readyz answers 503 when the store does not answer a ping;
 * - when read audit rows cannot be written, reads are refused and /readyz says so, until they can;
 * - a request arriving on a kept-alive connection while the server closes gets the envelope.
 *
 * Assertions are on answers and their order; the only times are generous guards.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { StoreError } from '../../src/store/store.ts';
import { createHttpServer, type HttpPlugin } from '../../src/transports/http/server.ts';
import { createMetrics } from '../../src/transports/http/metrics.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

/** An answer body as the tests read it (an envelope, loosely typed). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test reads of envelope fields
type Body = Record<string, any>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A reversible write whose handler waits `wait_ms` inside its transaction after writing its row. */
const slowNote = defineVerb<{ note: string; wait_ms: number }>({
  name: 'slow.note',
  description: 'Write a note, then wait inside the write transaction (deadline tests).',
  shape: 'receipt',
  category: 'test',
  consent: 'WRITE_REVERSIBLE',
  input: {
    type: 'object',
    properties: {
      note: { type: 'string', minLength: 1, maxLength: 40 },
      wait_ms: { type: 'integer', minimum: 0, maximum: 60_000 },
    },
    required: ['note', 'wait_ms'],
    additionalProperties: false,
  },
  summary: (a) => `Write the note ${a.note}.`,
  async handler(ctx, a) {
    await ctx.db.run('INSERT INTO slow_notes (company_id, note) VALUES (?, ?)', [
      ctx.principal.company_id,
      a.note,
    ]);
    if (a.wait_ms > 0) await sleep(a.wait_ms);
    handlerDone.add(a.note);
    ctx.setEntity('note', a.note);
    return { note: a.note };
  },
});
const handlerDone = new Set<string>();

async function slowRuntime(t: import('node:test').TestContext, budgetMs: number): Promise<TestRuntime> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-deadline-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = new SqliteStore({ path: join(dir, 'd.db'), writeBudgetMs: budgetMs });
  const h = await createTestRuntime(t, { store });
  await store.migrate('slow', [
    {
      version: 1,
      name: 'notes',
      sqlite: 'CREATE TABLE slow_notes (company_id INTEGER NOT NULL, note TEXT NOT NULL)',
    },
  ]);
  h.rt.register(slowNote);
  return h;
}

/** POST /api/v1/agent/dispatch/<verb> through inject, confirming a pending answer once. */
async function confirmed(
  app: FastifyInstance,
  key: string,
  verb: string,
  args: Record<string, unknown>,
): Promise<{ status: number; body: Body; headers: Record<string, unknown> }> {
  const call = async (extra: Record<string, unknown>) => {
    const r = await app.inject({
      method: 'POST',
      url: `/api/v1/agent/dispatch/${verb}`,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload: { args, ...extra },
    });
    return { status: r.statusCode, body: r.json() as Body, headers: r.headers };
  };
  const first = await call({});
  if (first.status !== 202) return first;
  return call({ confirm: true, nonce: first.body.consent.nonce });
}

function assertEnvelope(body: Body, reason?: string): void {
  assert.equal(typeof body.ok, 'boolean', `an envelope: ${JSON.stringify(body)}`);
  if (body.ok === false) {
    assert.equal(typeof body.error?.reason, 'string');
    assert.equal(typeof body.error?.message, 'string');
    assert.equal(typeof body.error?.hint, 'string', 'every refusal carries a hint');
  }
  if (reason !== undefined) assert.equal(body.error?.reason, reason, JSON.stringify(body));
}

describe('SQLite: a write that waits inside its transaction (issue 30 row 12)', { timeout: 60_000 }, () => {
  it('is rolled back at its budget and answered store_unavailable; another tenant writes meanwhile', async (t) => {
    const h = await slowRuntime(t, 300);
    const app = createHttpServer(h.rt, { logger: false });
    t.after(() => app.close());
    const slow = confirmed(app, h.keys.owner, 'slow.note', { note: 'stalled', wait_ms: 4000 });
    await sleep(50);
    const other = await confirmed(app, h.otherOwnerKey, 'slow.note', { note: 'other-tenant', wait_ms: 0 });
    assert.equal(other.status, 200, JSON.stringify(other.body));
    assert.equal(
      handlerDone.has('stalled'),
      false,
      'the other tenant was answered while the stalled handler still waited',
    );
    const stalled = await slow;
    assert.equal(stalled.status, 503);
    assertEnvelope(stalled.body, 'store_unavailable');
    assert.match(stalled.body.error.message, /time budget/);
    assert.match(stalled.body.error.hint, /outbox/);
    assert.equal(stalled.headers['retry-after'], '1');
    const rows = await h.rt.store.read((q) => q.all<{ note: string }>('SELECT note FROM slow_notes'));
    assert.deepEqual(
      rows.map((r) => r.note),
      ['other-tenant'],
      'the stalled write was rolled back',
    );
  });

  it('a budget cut inside a group commit rolls back that writer only', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'solid-budget-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const store = new SqliteStore({ path: join(dir, 'g.db'), writeBudgetMs: 200 });
    t.after(() => store.close());
    await store.migrate('g', [{ version: 1, name: 't', sqlite: 'CREATE TABLE g (v TEXT NOT NULL)' }]);
    const fast1 = store.write((tx) => tx.run("INSERT INTO g (v) VALUES ('a')"));
    const stuck = store.write(async (tx) => {
      await tx.run("INSERT INTO g (v) VALUES ('stuck')");
      await sleep(3000);
      await tx.run("INSERT INTO g (v) VALUES ('after')"); // the handle is closed by then: throws
    });
    const fast2 = store.write((tx) => tx.run("INSERT INTO g (v) VALUES ('b')"));
    await assert.rejects(stuck, (err: unknown) => err instanceof StoreError && err.code === 'timeout');
    await Promise.all([fast1, fast2]);
    const rows = await store.read((q) => q.all<{ v: string }>('SELECT v FROM g ORDER BY v'));
    assert.deepEqual(
      rows.map((r) => r.v),
      ['a', 'b'],
    );
  });
});

describe('SQLite durability (issue 30 row 4)', () => {
  it('is synchronous=FULL by default; normal only when asked', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'solid-durable-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const full = new SqliteStore({ path: join(dir, 'a.db') });
    const normal = new SqliteStore({ path: join(dir, 'b.db'), durability: 'normal' });
    t.after(async () => {
      await full.close();
      await normal.close();
    });
    assert.equal(full.durability, 'full');
    assert.equal(full.rawDatabase.pragma('synchronous', { simple: true }), 2, 'FULL');
    assert.equal(normal.rawDatabase.pragma('synchronous', { simple: true }), 1, 'NORMAL');
  });
});

describe('HTTP deadlines', { timeout: 60_000 }, () => {
  it('a route that never answers gets a 503 store_unavailable envelope at the deadline; a long poll is not cut', async (t) => {
    const h = await createTestRuntime(t, { engine: 'sqlite' });
    const hang: HttpPlugin = async (app) => {
      app.get('/test/hang', () => new Promise(() => {}));
    };
    const app = createHttpServer(h.rt, { logger: false, requestTimeoutMs: 300, plugins: [hang] });
    t.after(() => app.close());
    const r = await app.inject({ method: 'GET', url: '/test/hang' });
    assert.equal(r.statusCode, 503);
    assertEnvelope(r.json(), 'store_unavailable');
    assert.equal(r.json().error.details.deadline_ms, 300);
    assert.equal(r.headers['retry-after'], '1');

    const sub = await confirmed(app, h.keys.owner, 'events.subscribe', {});
    assert.equal(sub.status, 200, JSON.stringify(sub.body));
    const poll = await app.inject({
      method: 'POST',
      url: '/api/v1/agent/dispatch/events.poll',
      headers: { authorization: `Bearer ${h.keys.owner}`, 'content-type': 'application/json' },
      payload: { args: { cursor: sub.body.result.cursor, wait_ms: 800 } },
    });
    assert.equal(poll.statusCode, 200, 'a poll that waits by design gets its wait on top of the deadline');
  });

  it('/readyz answers 503 when the store does not answer a ping', async (t) => {
    const h = await createTestRuntime(t, { engine: 'sqlite' });
    const app = createHttpServer(h.rt, { logger: false });
    t.after(() => app.close());
    const ping = h.rt.store.ping.bind(h.rt.store);
    (h.rt.store as { ping: () => Promise<void> }).ping = () => new Promise(() => {});
    t.after(() => ((h.rt.store as { ping: () => Promise<void> }).ping = ping));
    const r = await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(r.statusCode, 503);
    assertEnvelope(r.json(), 'store_unavailable');
  });
});

describe('read audit rows that cannot be written (issue 30 row 5)', { timeout: 60_000 }, () => {
  it('refuses reads, reports /readyz 503 and the metric, and answers again once rows can be written', async (t) => {
    const h = await createTestRuntime(t, { engine: 'sqlite', readAuditFlushMs: 5 });
    const app = createHttpServer(h.rt, { logger: false });
    t.after(() => app.close());
    const metrics = createMetrics(h.rt);
    t.after(() => metrics.close());
    const read = () =>
      app.inject({
        method: 'POST',
        url: '/api/v1/agent/dispatch/macros.list',
        headers: { authorization: `Bearer ${h.keys.owner}`, 'content-type': 'application/json' },
        payload: { args: {} },
      });
    assert.equal((await read()).statusCode, 200);
    await h.rt.auditBuffer.flush();

    // The disk is full: every write (the read rows' flush included) fails.
    const store = h.rt.store;
    const write = store.write.bind(store);
    let full = true;
    (store as { write: typeof store.write }).write = (fn, options) =>
      full
        ? Promise.reject(new StoreError('disk_full', 'injected: database or disk is full'))
        : write(fn, options);
    t.after(() => ((store as { write: typeof store.write }).write = write));

    assert.equal((await read()).statusCode, 200, 'answered before its row is flushed (the buffered window)');
    await h.rt.auditBuffer.flush();
    assert.equal(h.rt.auditBuffer.unwritable, true);
    const refused = await read();
    assert.equal(refused.statusCode, 503);
    assertEnvelope(refused.json(), 'store_unavailable');
    assert.match(refused.json().error.message, /audit rows cannot be written/);
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(ready.statusCode, 503);
    assertEnvelope(ready.json(), 'store_unavailable');
    assert.match(await metrics.render(), /^solid_read_audit_unwritable 1$/m);

    full = false;
    await h.rt.auditBuffer.flush();
    assert.equal(h.rt.auditBuffer.unwritable, false);
    assert.equal((await read()).statusCode, 200, 'reads are answered again');
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    assert.match(await metrics.render(), /^solid_read_audit_unwritable 0$/m);
    await h.rt.auditBuffer.flush();
    const trail = await h.rt.store.read((q) =>
      q.get<{ n: number }>("SELECT COUNT(*) AS n FROM audit_log WHERE action_type = 'macros.list'"),
    );
    assert.equal(trail!.n, 3, 'the read answered during the fault kept its row; the refused one has none');
  });
});

describe('closing (issue 30 row 9)', { timeout: 60_000 }, () => {
  it('a request waiting on a busy keep-alive connection gets the server_closing envelope', async (t) => {
    const h = await createTestRuntime(t, { engine: 'sqlite' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const busy = new Promise<void>((r) => (entered = r));
    const slow: HttpPlugin = async (app) => {
      app.get('/test/busy', async () => {
        entered();
        await gate;
        return { ok: true, done: true };
      });
    };
    const app = createHttpServer(h.rt, { logger: false, plugins: [slow] });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as import('node:net').AddressInfo).port;
    const socket = connect(port, '127.0.0.1');
    t.after(() => socket.destroy());
    let raw = '';
    socket.on('data', (d: Buffer) => (raw += d.toString()));
    const ended = new Promise<void>((r) => socket.once('close', () => r()));
    socket.write('GET /test/busy HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await busy;
    const closed = app.close(); // what SIGTERM does in `solid serve`
    await sleep(50);
    socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'); // waits behind the busy request
    await sleep(50);
    release();
    await Promise.race([ended, sleep(20_000)]);
    await closed;
    const answers = raw.split(/(?=HTTP\/1\.1 )/);
    assert.equal(answers.length, 2, raw);
    assert.match(answers[0]!, /^HTTP\/1\.1 200/);
    assert.match(answers[1]!, /^HTTP\/1\.1 503/);
    assert.match(answers[1]!, /retry-after: 1/i);
    const body = JSON.parse(answers[1]!.slice(answers[1]!.indexOf('\r\n\r\n') + 4));
    assertEnvelope(body, 'server_closing');
  });
});
