/**
 * Outbox delivery after commit: concurrent delivery passes deliver each row once (rows are claimed
 * with a lease), failures are retried with backoff. Spec: spec/transactions.md §outbox.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestRuntime } from '../support/runtime.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { dispatchAs } from '../support/keyed.ts';

it('two concurrent delivery passes deliver every outbox row exactly once', async (t) => {
  const h = await createTestRuntime(t);
  const delivered: number[] = [];
  h.rt.outboxHandlers.set('ping', async (payload) => {
    await new Promise((r) => setTimeout(r, 2));
    delivered.push(Number(payload.n));
  });
  h.rt.register(
    defineVerb({
      name: 'pings_send',
      description: 'Queue pings.',
      shape: 'receipt',
      category: 'test',
      consent: 'WRITE_REVERSIBLE',
      input: {
        type: 'object',
        properties: { count: { type: 'integer', minimum: 1, maximum: 50 } },
        required: ['count'],
      },
      async handler(ctx, a: { count: number }) {
        for (let n = 0; n < a.count; n++) ctx.outbox('ping', { n });
        return { queued: a.count };
      },
    }),
  );
  // Queue without delivering: the handler is registered, so stop the automatic kick by delivering manually.
  const caller = { surface: 'cli' as const, apiKey: h.keys.owner };
  const pending = await dispatchAs(h.rt, caller, 'pings_send', { count: 20 });
  const done = await dispatchAs(
    h.rt,
    caller,
    'pings_send',
    { count: 20 },
    { confirm: true, nonce: pending.consent!.nonce },
  );
  assert.equal(done.ok, true, JSON.stringify(done));
  await Promise.all([h.rt.deliverOutbox(), h.rt.deliverOutbox(), h.rt.deliverOutbox()]);
  // The automatic kick after commit may have delivered some too; in all, each row once.
  await new Promise((r) => setTimeout(r, 200));
  await h.rt.deliverOutbox();
  assert.deepEqual(
    [...delivered].sort((a, b) => a - b),
    Array.from({ length: 20 }, (_, i) => i),
  );
  const rows = await h.rt.store.read((q) => q.all<{ status: string }>('SELECT status FROM outbox'));
  assert.ok(rows.every((r) => r.status === 'delivered'));
});

it('deliverOutbox() waits for the after-commit pass already delivering: its row is delivered when it resolves', async (t) => {
  const h = await createTestRuntime(t);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let started!: () => void;
  const delivering = new Promise<void>((r) => (started = r));
  h.rt.outboxHandlers.set('slow', async () => {
    started();
    await gate;
  });
  h.rt.register(
    defineVerb({
      name: 'slow_send',
      description: 'Queue one slow delivery.',
      shape: 'receipt',
      category: 'test',
      consent: 'WRITE_REVERSIBLE',
      input: { type: 'object', properties: {} },
      async handler(ctx) {
        ctx.outbox('slow', {});
        return { queued: 1 };
      },
    }),
  );
  const caller = { surface: 'cli' as const, apiKey: h.keys.owner };
  const pending = await dispatchAs(h.rt, caller, 'slow_send', {});
  const done = await dispatchAs(
    h.rt,
    caller,
    'slow_send',
    {},
    { confirm: true, nonce: pending.consent!.nonce },
  );
  assert.equal(done.ok, true, JSON.stringify(done));
  await delivering; // the automatic kick after commit holds the row's lease now
  let resolved = false;
  const explicit = h.rt.deliverOutbox().then(() => (resolved = true));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(resolved, false, 'deliverOutbox waits for the pass in flight');
  release();
  await explicit;
  const rows = await h.rt.store.read((q) => q.all<{ status: string }>('SELECT status FROM outbox'));
  assert.deepEqual(
    rows.map((r) => r.status),
    ['delivered'],
  );
});
