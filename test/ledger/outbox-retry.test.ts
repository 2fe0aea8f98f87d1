/**
 * The outbox delivery loop (src/runtime/delivery/outbox-worker.ts): a failed message is retried
 * with no other traffic, a restart sends what a previous process left pending, N failures make a
 * dead letter (announced by the outbox.dead webhook, counted by telemetry), every attempt has a
 * deadline, and two runtimes on one database deliver each message once. Both engines
 * (SOLID_TEST_ENGINE=postgres with .ci/postgres.sh). Spec: docs/authoring.md §8(c).
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import pino from 'pino';
import { createTestRuntime, testEngine } from '../support/runtime.ts';
import { createTestPostgresStore, dropSchema, freshSchemaName } from '../support/postgres.ts';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.ts';
import { Secrets } from '../../src/runtime/secrets.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { queueOutboxMessage } from '../../src/runtime/ledger/write/outbox.ts';
import { backoffDelayMs } from '../../src/runtime/delivery/outbox-worker.ts';
import { insertWebhookEndpoint, WEBHOOK_KIND } from '../../src/runtime/ledger/write/webhook-endpoints.ts';
import { systemVerbs } from '../../src/verbs/index.ts';
import { createMetrics } from '../../src/transports/http/metrics.ts';

/** Poll `check` every 20 ms until it is true or `ms` pass (bounded wait). */
async function until(check: () => Promise<boolean>, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

type OutboxRow = {
  outbox_id: number;
  status: string;
  attempts: number;
  last_error: string | null;
  kind: string;
};
const rowsOf = (rt: Runtime, kind: string) =>
  rt.store.read((q) =>
    q.all<OutboxRow>(
      'SELECT outbox_id, status, attempts, last_error, kind FROM outbox WHERE kind = ? ORDER BY outbox_id',
      [kind],
    ),
  );

/** A way to open the same database again (a "restart"): SQLite file or PostgreSQL schema. */
function reopenable(t: TestContext): () => Store {
  if (testEngine() === 'postgres') {
    const schema = freshSchemaName();
    t.after(() => dropSchema(schema));
    return () => createTestPostgresStore(undefined, { schema, keep: true });
  }
  const dir = mkdtempSync(join(tmpdir(), 'solid-outbox-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return () => new SqliteStore({ path: join(dir, 'db.sqlite') });
}

const quiet = () => pino({ level: process.env.SOLID_TEST_LOG ?? 'silent' });

it('backoff doubles from the base, is capped, and jitters within [d/2, d]', () => {
  const o = { baseDelayMs: 1000, maxDelayMs: 8000 };
  assert.equal(
    backoffDelayMs(1, o, () => 0),
    500,
  );
  assert.equal(
    backoffDelayMs(1, o, () => 0.999999),
    1000,
  );
  assert.equal(
    backoffDelayMs(3, o, () => 0.999999),
    4000,
  );
  assert.equal(
    backoffDelayMs(10, o, () => 0.999999),
    8000,
  );
  assert.equal(
    backoffDelayMs(500, o, () => 0),
    4000,
  );
});

it('a handler that fails once is retried with no other traffic, with the same idempotency key', async (t) => {
  const h = await createTestRuntime(t, { outbox: { baseDelayMs: 50, maxDelayMs: 100, pollIntervalMs: 200 } });
  const seen: Array<{ key: string; attempt: number }> = [];
  h.rt.outboxHandlers.set('flaky', async (_payload, meta) => {
    seen.push({ key: meta.idempotency_key, attempt: meta.attempt });
    if (seen.length === 1) throw new Error('the external API answered 503');
  });
  await h.rt.store.write((tx) =>
    queueOutboxMessage(tx, {
      companyId: h.companyId,
      kind: 'flaky',
      payload: { n: 1 },
      auditId: null,
      now: h.rt.clock(),
    }),
  );
  h.rt.kickOutbox(); // what a committing write does; nothing else happens after it
  assert.ok(
    await until(async () => (await rowsOf(h.rt, 'flaky'))[0]?.status === 'delivered'),
    'delivered by the loop alone',
  );
  const [row] = await rowsOf(h.rt, 'flaky');
  assert.equal(row!.attempts, 2);
  assert.equal(seen.length, 2);
  assert.equal(seen[0]!.key, seen[1]!.key, 'the same idempotency key on the retry');
  assert.match(seen[0]!.key, /^msg_[0-9a-f]{32}$/);
  assert.deepEqual(
    seen.map((s) => s.attempt),
    [1, 2],
  );
});

it('a restart sends a message a previous process left pending (the start-up pass)', async (t) => {
  const open = reopenable(t);
  const secrets = Secrets.ephemeral();
  const a = await createRuntime({ store: open(), secrets, logger: quiet() });
  // Process A queues and dies before delivering (no handler for the kind here).
  await a.store.write((tx) =>
    queueOutboxMessage(tx, { companyId: 2, kind: 'later', payload: { n: 7 }, auditId: null, now: a.clock() }),
  );
  await a.close();
  const delivered: number[] = [];
  const b = await createRuntime({ store: open(), secrets, logger: quiet() });
  t.after(() => b.close());
  b.outboxHandlers.set('later', async (p) => {
    delivered.push(Number(p.n));
  });
  assert.ok(await until(async () => delivered.length === 1), 'the start-up pass delivered it');
  assert.deepEqual(delivered, [7]);
  // Marked delivered in the write that follows the handler's answer.
  assert.ok(await until(async () => (await rowsOf(b, 'later'))[0]?.status === 'delivered'));
});

it('after maxAttempts failures a message is dead: never retried, announced by outbox.dead, counted', async (t) => {
  const h = await createTestRuntime(t, {
    outbox: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20, pollIntervalMs: 100 },
  });
  // An endpoint subscribed to outbox.dead only (its own deliveries are held back: no receiver needed).
  await h.rt.store.write((tx) =>
    insertWebhookEndpoint(tx, h.rt.secrets, {
      companyId: h.companyId,
      url: 'http://127.0.0.1:9/hook',
      events: ['outbox.dead'],
      createdBy: 1,
      now: h.rt.clock(),
    }),
  );
  let calls = 0;
  h.rt.outboxHandlers.set('doomed', async () => {
    calls++;
    throw new Error(`refused #${calls}`);
  });
  await h.rt.store.write((tx) =>
    queueOutboxMessage(tx, {
      companyId: h.companyId,
      kind: 'doomed',
      payload: {},
      auditId: null,
      now: h.rt.clock(),
    }),
  );
  h.rt.kickOutbox();
  assert.ok(await until(async () => (await rowsOf(h.rt, 'doomed'))[0]?.status === 'dead'), 'dead');
  await new Promise((r) => setTimeout(r, 300)); // no further attempt after dead
  assert.equal(calls, 3);
  const [row] = await rowsOf(h.rt, 'doomed');
  assert.equal(row!.attempts, 3);
  assert.equal(row!.last_error, 'refused #3');
  const announced = await h.rt.store.read((q) =>
    q.all<{ payload: unknown }>('SELECT payload FROM outbox WHERE kind = ?', [WEBHOOK_KIND]),
  );
  assert.equal(announced.length, 1, JSON.stringify(announced));
  const p = (
    typeof announced[0]!.payload === 'string' ? JSON.parse(announced[0]!.payload) : announced[0]!.payload
  ) as {
    type: string;
    data: { outbox_id: number; kind: string; attempts: number };
  };
  assert.equal(p.type, 'outbox.dead');
  assert.equal(p.data.outbox_id, row!.outbox_id);
  assert.equal(p.data.kind, 'doomed');
  assert.equal(p.data.attempts, 3);
  // The telemetry verb (and the dashboard through it) shows the dead letter.
  const tel = await h.rt.dispatch({ surface: 'cli', apiKey: h.keys.owner }, 'system.telemetry', {});
  assert.equal(tel.ok, true, JSON.stringify(tel));
  const queues = (tel.result as { queues: { outbox_dead: number; dead_letters: Array<{ kind: string }> } })
    .queues;
  // The dead message, and its announcement (no receiver listens on port 9): dead too, not announced again.
  assert.equal(queues.outbox_dead, 2);
  assert.deepEqual(queues.dead_letters.map((d) => d.kind).sort(), ['doomed', WEBHOOK_KIND].sort());
  // /metrics counts them per tenant.
  const metrics = createMetrics(h.rt);
  t.after(() => metrics.close());
  assert.match(
    await metrics.render(),
    new RegExp(`solid_outbox_dead_letters\\{tenant="${h.companyId}"\\} 2`),
  );
});

it('an attempt that does not answer is cut at its deadline, its signal aborted, and retried', async (t) => {
  const h = await createTestRuntime(t, {
    outbox: { attemptTimeoutMs: 100, baseDelayMs: 20, maxDelayMs: 40, pollIntervalMs: 100 },
  });
  let aborted = false;
  let calls = 0;
  h.rt.outboxHandlers.set('hangs', (_p, meta) => {
    calls++;
    if (calls > 1) return Promise.resolve();
    meta.signal.addEventListener('abort', () => (aborted = true));
    return new Promise<void>(() => {}); // never settles, ignores its signal
  });
  const t0 = Date.now();
  await h.rt.store.write((tx) =>
    queueOutboxMessage(tx, {
      companyId: h.companyId,
      kind: 'hangs',
      payload: {},
      auditId: null,
      now: h.rt.clock(),
    }),
  );
  h.rt.kickOutbox();
  assert.ok(await until(async () => (await rowsOf(h.rt, 'hangs'))[0]?.status === 'delivered', 3000));
  assert.ok(Date.now() - t0 < 3000);
  assert.equal(aborted, true);
  assert.equal(calls, 2);
});

it('two runtimes on one database deliver each message exactly once', async (t) => {
  const open = reopenable(t);
  const secrets = Secrets.ephemeral();
  const opts = { secrets, logger: quiet(), outbox: { pollIntervalMs: 50, concurrency: 3 } };
  const a = await createRuntime({ store: open(), ...opts });
  const b = await createRuntime({ store: open(), ...opts });
  t.after(async () => {
    await a.close();
    await b.close();
  });
  a.register(...systemVerbs);
  const delivered: number[] = [];
  for (const rt of [a, b])
    rt.outboxHandlers.set('once', async (p) => {
      await new Promise((r) => setTimeout(r, 2));
      delivered.push(Number(p.n));
    });
  await a.store.write(async (tx) => {
    for (let n = 0; n < 30; n++)
      await queueOutboxMessage(tx, {
        companyId: 2,
        kind: 'once',
        payload: { n },
        auditId: null,
        now: a.clock(),
      });
  });
  a.kickOutbox();
  b.kickOutbox();
  await Promise.all([a.deliverOutbox(), b.deliverOutbox()]);
  assert.ok(await until(async () => delivered.length >= 30));
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(
    [...delivered].sort((x, y) => x - y),
    Array.from({ length: 30 }, (_, i) => i),
  );
});
