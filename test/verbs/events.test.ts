/**
 * events.subscribe / events.poll / events.unsubscribe (shape subscribe): cursor polling over the
 * tenant's committed domain events. Spec: spec/shapes.md §subscribe.
 *
 * Run: node --import tsx --test test/verbs/events.test.ts
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call, createObserveRuntime, okResult, refused } from '../support/observe-verbs.ts';
import { appendEvents } from '../../src/runtime/ledger/write/events.ts';
import { MAX_SUBSCRIPTIONS_PER_USER } from '../../src/runtime/observe/event-stream.ts';
import { reasonInfo } from '../../src/spec/reasons.ts';
import type { Envelope } from '../../src/spec/types.ts';

interface Ev {
  seq: number;
  type: string;
  entity_id: string | number;
  payload: Record<string, unknown>;
  audit_id?: number;
}

describe('events.subscribe / events.poll', () => {
  it('a poller running while writes commit and roll back sees exactly the committed events, in order, once', async (t) => {
    const h = await createObserveRuntime(t);
    const sub = okResult(
      await call(h, 'employee', 'events.subscribe', { types: ['counter.*'] }),
      'subscribe',
    );
    let cursor = sub.cursor as string;
    const seen: Ev[] = [];
    let writing = true;
    const poller = (async () => {
      for (;;) {
        const stillWriting = writing;
        const env = await call(h, 'employee', 'events.poll', {
          cursor,
          wait_ms: stillWriting ? 50 : 0,
          limit: 3,
        });
        const r = okResult(env, 'subscribe');
        seen.push(...(r.events as Ev[]));
        cursor = r.cursor as string;
        if (!stillWriting && r.caught_up === true) return;
        await new Promise((res) => setTimeout(res, 2));
      }
    })();
    const writes: Array<Promise<Envelope>> = [];
    for (let i = 0; i < 60; i++) {
      writes.push(call(h, 'employee', 'counter.bump', { name: `c${i % 4}`, fail: i % 3 === 0 }));
      // Another tenant's writes never reach this stream.
      if (i % 10 === 0)
        writes.push(call(h, h.principal('owner', h.otherCompanyId), 'counter.bump', { name: 'x' }));
      if (i % 5 === 0) await new Promise((r) => setImmediate(r));
    }
    const envs = await Promise.all(writes);
    writing = false;
    await poller;

    const mine = envs.filter((e) => e.verb === 'counter.bump' && e.audit_id !== undefined);
    const committed = envs.filter((e) => e.ok && (e.result as { name: string }).name !== 'x');
    const rolledBack = envs.filter((e) => !e.ok);
    assert.equal(rolledBack.length, 20, 'every third write was told to fail');
    assert.ok(mine.length > 0);
    // Once and in order.
    const seqs = seen.map((e) => e.seq);
    assert.deepEqual(
      seqs,
      [...new Set(seqs)].sort((a, b) => a - b),
      'strictly increasing, no duplicates',
    );
    // Exactly the committed writes' events (audit ids are not commit-ordered on every engine, so as sets).
    assert.deepEqual(
      seen.map((e) => e.audit_id).sort((a, b) => a! - b!),
      committed.map((e) => e.audit_id).sort((a, b) => a! - b!),
    );
    const valueOf = new Map(committed.map((e) => [e.audit_id, (e.result as { value: number }).value]));
    for (const e of seen) assert.equal((e.payload.state as { value: number }).value, valueOf.get(e.audit_id));
    // In commit order: each counter's values rise along the stream.
    const last = new Map<string | number, number>();
    for (const e of seen) {
      const v = (e.payload.state as { value: number }).value;
      assert.ok(v > (last.get(e.entity_id) ?? 0), `counter ${e.entity_id} went back to ${v}`);
      last.set(e.entity_id, v);
    }
    for (const e of rolledBack) assert.ok(!seen.some((s) => s.audit_id === e.audit_id));
    // Nothing committed was missed: the stream in the store holds the same events.
    const stored = await h.rt.store.read((q) =>
      q.all<{ seq: number }>('SELECT seq FROM events WHERE company_id = ? ORDER BY seq', [h.companyId]),
    );
    assert.deepEqual(
      seqs,
      stored.map((r) => Number(r.seq)),
    );
    assert.deepEqual(
      seqs,
      Array.from({ length: committed.length }, (_, i) => i + 1),
      'rolled-back writes leave no gap',
    );
  });

  it('pages a backlog by limit: each page continues where the last stopped and says whether it caught up', async (t) => {
    const h = await createObserveRuntime(t);
    const sub = okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe');
    for (let i = 0; i < 10; i++)
      okResult(await call(h, 'employee', 'counter.bump', { name: `n${i}` }), 'receipt');
    let cursor = sub.cursor as string;
    const pages: Array<[number[], boolean, number]> = [];
    for (;;) {
      const r = okResult(await call(h, 'employee', 'events.poll', { cursor, limit: 3 }), 'subscribe');
      pages.push([
        (r.events as Ev[]).map((e) => e.seq),
        r.caught_up as boolean,
        r.poll_interval_ms as number,
      ]);
      cursor = r.cursor as string;
      if (r.caught_up === true) break;
    }
    assert.deepEqual(pages, [
      [[1, 2, 3], false, 0],
      [[4, 5, 6], false, 0],
      [[7, 8, 9], false, 0],
      [[10], true, 2000],
    ]);
  });

  it('returns recent matching events with the subscription, then only later ones; filters by type prefix, entity and time', async (t) => {
    const h = await createObserveRuntime(t);
    for (const name of ['a', 'b', 'a'])
      okResult(await call(h, 'employee', 'counter.bump', { name }), 'receipt');
    okResult(
      await call(h, 'employee', 'counter.touch', { name: 'a' }).then((p) =>
        call(h, 'employee', 'counter.touch', { name: 'a' }, { confirm: true, nonce: p.consent!.nonce }),
      ),
      'receipt',
    );
    const all = okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe');
    assert.deepEqual(
      (all.initial_events as Ev[]).map((e) => [e.seq, e.type]),
      [
        [1, 'counter.bumped'],
        [2, 'counter.bumped'],
        [3, 'counter.bumped'],
        [4, 'counter.touched'],
      ],
    );
    assert.equal(all.poll_interval_ms, 2000);
    assert.equal(all.retention_seconds, 30 * 24 * 3600);
    const onlyA = okResult(
      await call(h, 'employee', 'events.subscribe', {
        types: ['counter.bumped'],
        entity_type: 'counter',
        entity_ids: ['a'],
        initial_limit: 1,
      }),
      'subscribe',
    );
    assert.deepEqual(
      (onlyA.initial_events as Ev[]).map((e) => e.seq),
      [3],
      'the most recent match only',
    );
    assert.deepEqual(onlyA.filters, { types: ['counter.bumped'], entity_type: 'counter', entity_ids: ['a'] });
    okResult(await call(h, 'employee', 'counter.bump', { name: 'b' }), 'receipt');
    okResult(await call(h, 'employee', 'counter.bump', { name: 'a' }), 'receipt');
    const pA = okResult(await call(h, 'employee', 'events.poll', { cursor: onlyA.cursor }), 'subscribe');
    assert.deepEqual(
      (pA.events as Ev[]).map((e) => [e.seq, e.entity_id]),
      [[6, 'a']],
    );
    const pAll = okResult(await call(h, 'employee', 'events.poll', { cursor: all.cursor }), 'subscribe');
    assert.deepEqual(
      (pAll.events as Ev[]).map((e) => e.seq),
      [5, 6],
    );
    const future = okResult(
      await call(h, 'employee', 'events.subscribe', { from: '2999-01-01T00:00:00Z' }),
      'subscribe',
    );
    assert.deepEqual(future.initial_events, []);
  });

  it('an empty poll writes nothing and hands back the same cursor', async (t) => {
    const h = await createObserveRuntime(t, { readAuditFlushMs: 60_000 });
    const sub = okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe');
    const store = h.rt.store;
    const realWrite = store.write.bind(store);
    let writes = 0;
    store.write = ((fn: Parameters<typeof realWrite>[0], o?: Parameters<typeof realWrite>[1]) => {
      writes++;
      return realWrite(fn, o);
    }) as typeof store.write;
    t.after(() => {
      store.write = realWrite;
    });
    const p = okResult(await call(h, 'employee', 'events.poll', { cursor: sub.cursor }), 'subscribe');
    assert.deepEqual(p.events, []);
    assert.equal(p.cursor, sub.cursor);
    assert.equal(p.caught_up, true);
    assert.equal(writes, 0);
  });

  it('a long poll returns as soon as a matching event commits, skipping events that do not match', async (t) => {
    const h = await createObserveRuntime(t);
    const sub = okResult(
      await call(h, 'employee', 'events.subscribe', { types: ['counter.touched'] }),
      'subscribe',
    );
    const polling = call(h, 'employee', 'events.poll', { cursor: sub.cursor, wait_ms: 20_000 });
    await new Promise((r) => setTimeout(r, 20));
    okResult(await call(h, 'employee', 'counter.bump', { name: 'a' }), 'receipt');
    const pending = await call(h, 'employee', 'counter.touch', { name: 'a' });
    okResult(
      await call(
        h,
        'employee',
        'counter.touch',
        { name: 'a' },
        { confirm: true, nonce: pending.consent!.nonce },
      ),
      'receipt',
    );
    const r = okResult(await polling, 'subscribe');
    assert.deepEqual(
      (r.events as Ev[]).map((e) => [e.seq, e.type]),
      [[2, 'counter.touched']],
    );
  });

  it('refuses forged, altered and other-tenant cursors with cursor_invalid', async (t) => {
    const h = await createObserveRuntime(t);
    const sub = okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe');
    const cursor = sub.cursor as string;
    const [prefix, kid, body, mac] = cursor.split('.') as [string, string, string, string];
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString()) as Record<string, unknown>;
    const moved = Buffer.from(JSON.stringify({ ...payload, q: 0, c: h.otherCompanyId })).toString(
      'base64url',
    );
    for (const bad of [
      `${prefix}.${kid}.${moved}.${mac}`,
      `${cursor.slice(0, -2)}xx`,
      'ev1.x.y.z',
      'not-a-cursor',
    ]) {
      const e = refused(await call(h, 'employee', 'events.poll', { cursor: bad }), 'cursor_invalid');
      assert.ok(e.hint);
    }
    refused(
      await call(h, h.principal('owner', h.otherCompanyId), 'events.poll', { cursor }),
      'cursor_invalid',
    );
    const trail = okResult(await call(h, 'owner', 'audit.trail', { limit: 1 }), 'trail');
    if (typeof trail.next_cursor === 'string')
      refused(await call(h, 'employee', 'events.poll', { cursor: trail.next_cursor }), 'cursor_invalid');
    assert.equal(reasonInfo('cursor_invalid').status, 400);
  });

  it('answers subscription_not_found after unsubscribe; only the subscriber may unsubscribe', async (t) => {
    const h = await createObserveRuntime(t);
    const sub = okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe');
    refused(
      await call(h, 'admin', 'events.unsubscribe', { subscription_id: sub.subscription_id }),
      'subscription_not_found',
    );
    okResult(
      await call(h, 'employee', 'events.unsubscribe', { subscription_id: sub.subscription_id }),
      'subscribe',
    );
    const e = refused(
      await call(h, 'employee', 'events.poll', { cursor: sub.cursor }),
      'subscription_not_found',
    );
    assert.match(e.hint!, /events\.subscribe/);
    refused(
      await call(h, 'employee', 'events.unsubscribe', { subscription_id: 'sub_nope' }),
      'subscription_not_found',
    );
    const rows = await h.rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM subscriptions'),
    );
    assert.equal(Number(rows!.n), 0);
  });

  it("a cursor answers only the user who subscribed: another user of the tenant gets an unknown subscription's refusal", async (t) => {
    const h = await createObserveRuntime(t);
    const sub = okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe');
    okResult(await call(h, 'employee', 'counter.bump', { name: 'a' }), 'receipt');
    const unknown = refused(
      await call(h, 'employee', 'events.unsubscribe', { subscription_id: 'sub_nope' }),
      'subscription_not_found',
    );
    for (const role of ['owner', 'admin', 'read_only'] as const) {
      const e = refused(await call(h, role, 'events.poll', { cursor: sub.cursor }), 'subscription_not_found');
      // The same words as for an id that does not exist: no oracle for someone else's subscription.
      assert.equal(
        e.message.replace(sub.subscription_id as string, 'ID'),
        unknown.message.replace('sub_nope', 'ID'),
      );
      assert.equal(e.hint, unknown.hint);
      const u = refused(
        await call(h, role, 'events.unsubscribe', { subscription_id: sub.subscription_id }),
        'subscription_not_found',
      );
      assert.equal(u.message, e.message);
    }
    // The subscriber still reads its events.
    const mine = okResult(await call(h, 'employee', 'events.poll', { cursor: sub.cursor }), 'subscribe');
    assert.ok((mine.events as unknown[]).length >= 1);
  });

  it('expires a cursor older than the 30-day retention with 410 cursor_expired', async (t) => {
    let now = Date.parse('2030-01-01T00:00:00Z');
    const h = await createObserveRuntime(t, { clock: () => new Date(now) });
    const sub = okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe');
    now += 29 * 86400_000;
    const fresh = okResult(await call(h, 'employee', 'events.poll', { cursor: sub.cursor }), 'subscribe');
    assert.notEqual(fresh.cursor, sub.cursor, 'each poll renews the cursor once the hour changed');
    now += 2 * 86400_000;
    const e = refused(await call(h, 'employee', 'events.poll', { cursor: sub.cursor }), 'cursor_expired');
    assert.match(e.hint!, /events\.subscribe/);
    assert.equal(reasonInfo('cursor_expired').status, 410);
    okResult(await call(h, 'employee', 'events.poll', { cursor: fresh.cursor }), 'subscribe');
  });

  it('expires a cursor behind pruned events, when event pruning is on', async (t) => {
    const now = Date.parse('2030-06-01T00:00:00Z');
    const h = await createObserveRuntime(t, {
      clock: () => new Date(now),
      observe: { eventPruneAfterSeconds: 30 * 86400, maintenanceIntervalMs: 0 },
    });
    const sub = okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe');
    // An import appends historical events after the subscription; pruning then removes them.
    await h.rt.store.write((tx) =>
      appendEvents(
        tx,
        h.companyId,
        [1, 2, 3].map((i) => ({ type: 'counter.imported', entity_type: 'counter', entity_id: `old${i}` })),
        {
          auditId: null,
          actor: 'system:import',
          occurredAt: new Date(now - 40 * 86400_000).toISOString(),
        },
      ),
    );
    okResult(await call(h, 'employee', 'counter.bump', { name: 'new' }), 'receipt');
    const report = await h.rt.observers.maintenance();
    assert.equal(report.events_deleted, 3);
    refused(await call(h, 'employee', 'events.poll', { cursor: sub.cursor }), 'cursor_expired');
    const again = okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe');
    assert.deepEqual(
      (again.initial_events as Ev[]).map((e) => e.seq),
      [4],
    );
  });

  it('refuses absurd input with invalid_input and writes no subscription', async (t) => {
    const h = await createObserveRuntime(t);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ from: '2030-01-02T00:00:00Z', to: '2030-01-01T00:00:00Z' }, '/to'],
      [{ entity_ids: [1, 2] }, '/entity_type'],
      [{ types: ['Not A Type'] }, '/types/0'],
      [{ initial_limit: 1000 }, '/initial_limit'],
    ];
    for (const [args, path] of cases)
      assert.equal(refused(await call(h, 'employee', 'events.subscribe', args), 'invalid_input').path, path);
    const sub = okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe');
    assert.equal(
      refused(
        await call(h, 'employee', 'events.poll', { cursor: sub.cursor, wait_ms: 60_000 }),
        'invalid_input',
      ).path,
      '/wait_ms',
    );
    assert.equal(
      refused(await call(h, 'employee', 'events.poll', { cursor: sub.cursor, limit: 0 }), 'invalid_input')
        .path,
      '/limit',
    );
    const rows = await h.rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM subscriptions'),
    );
    assert.equal(Number(rows!.n), 1);
  });

  it('keeps at most MAX_SUBSCRIPTIONS_PER_USER per user: the oldest is replaced, other users keep theirs', async (t) => {
    // "Oldest" is by created_at (ms); subscriptions of one millisecond are told apart by id, in no
    // particular order. A clock that moves 1 ms per reading gives each its own millisecond (a fast
    // machine made several in one and the test flaky).
    let tick = Date.now();
    const h = await createObserveRuntime(t, { clock: () => new Date(++tick) });
    const admin = okResult(await call(h, 'admin', 'events.subscribe', {}), 'subscribe');
    const mine: Array<{ subscription_id: string; cursor: string }> = [];
    for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_USER + 2; i++)
      mine.push(okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe') as (typeof mine)[0]);
    const count = async (): Promise<number> =>
      Number(
        (await h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM subscriptions')))!.n,
      );
    assert.equal(await count(), MAX_SUBSCRIPTIONS_PER_USER + 1, "the employee's 100 and the admin's one");
    for (const old of mine.slice(0, 2))
      refused(await call(h, 'employee', 'events.poll', { cursor: old.cursor }), 'subscription_not_found');
    for (const kept of [mine[2]!, mine.at(-1)!])
      okResult(await call(h, 'employee', 'events.poll', { cursor: kept.cursor }), 'subscribe');
    okResult(await call(h, 'admin', 'events.poll', { cursor: admin.cursor }), 'subscribe');
    // Keyless callers share one sandbox user: they too stop at the bound.
    for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_USER + 5; i++)
      okResult(await h.rt.dispatch({ surface: 'mcp_stdio' }, 'events.subscribe', {}), 'subscribe');
    assert.ok((await count()) <= 2 * MAX_SUBSCRIPTIONS_PER_USER + 1);
  });

  it('lets a keyless caller watch the sandbox tenant', async (t) => {
    const h = await createObserveRuntime(t);
    const sub = await h.rt.dispatch({ surface: 'mcp_stdio' }, 'events.subscribe', {});
    const r = okResult(sub, 'subscribe');
    okResult(await h.rt.dispatch({ surface: 'mcp_stdio' }, 'events.poll', { cursor: r.cursor }), 'subscribe');
    refused(await call(h, 'employee', 'events.poll', { cursor: r.cursor }), 'cursor_invalid');
  });
  it('a waiting poll answers at once, with its cursor, when the runtime begins to close', async (t) => {
    const h = await createObserveRuntime(t);
    const sub = okResult(await call(h, 'employee', 'events.subscribe', {}), 'subscribe');
    const poll = call(h, 'employee', 'events.poll', { cursor: sub.cursor, wait_ms: 30_000 });
    let answered = false;
    void poll.then(() => (answered = true));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(answered, false, 'the poll is waiting for an event');
    h.rt.beginClose();
    // The poll ends because the runtime is closing, long before its 30 s wait_ms.
    const settled = await Promise.race([
      poll,
      new Promise((r) => setTimeout(() => r('still waiting'), 10_000)),
    ]);
    assert.notEqual(settled, 'still waiting');
    const r = okResult(settled as Envelope, 'subscribe');
    assert.deepEqual(r.events, []);
    assert.equal(r.cursor, sub.cursor);
  });
});
