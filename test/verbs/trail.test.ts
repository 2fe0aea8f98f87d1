/**
 * audit.trail at scale: newest first, cursor pages that neither skip nor repeat, and — for every
 * combination of filters — a query plan that is an index search with no sort step, so a page costs
 * the same at 10k or 10M rows; a filter tested on the scanned index's rows examines at most
 * TRAIL_SCAN_ROWS of them and the page stops early with a cursor that resumes after them.
 * Spec: spec/audit.md §trail.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import type { TestRuntime } from '../support/runtime.ts';
import type { Queryable } from '../../src/store/store.ts';
import { PG_SKIP_REASON, TEST_DATABASE_URL } from '../support/postgres.ts';
import { dispatchAs } from '../support/keyed.ts';
import { TRAIL_SCAN_ROWS } from '../../src/verbs/audit-trail.ts';
import { AUDIT_COLUMNS } from '../../src/runtime/ledger/write/audit.ts';

type Entry = {
  audit_id: number;
  timestamp: string;
  action: string;
  status: string;
  actor: string;
  reason: string | null;
};

/** Record the SQL the trail verb runs (wraps the store's read view). */
function captureReads(h: TestRuntime): Array<{ sql: string; params: readonly unknown[] }> {
  const seen: Array<{ sql: string; params: readonly unknown[] }> = [];
  const store = h.rt.store;
  const read = store.read.bind(store);
  (store as { read: typeof store.read }).read = <T>(fn: (q: Queryable) => Promise<T>) =>
    read((q) =>
      fn({
        get: (sql, params) => q.get(sql, params),
        all: (sql, params) => {
          if (/FROM audit_log/.test(sql)) seen.push({ sql, params: params ?? [] });
          return q.all(sql, params);
        },
        run: (sql, params) => q.run(sql, params),
      }),
    );
  return seen;
}

async function seed(h: TestRuntime, clock: { now: Date }): Promise<void> {
  for (let i = 0; i < 14; i++) {
    clock.now = new Date(Date.parse('2026-02-01T10:00:00.000Z') + i * 60_000);
    if (i % 4 === 3)
      await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.read_only }, 'counter.add', {
        name: `n${i % 3}`,
        by: 1,
      });
    else
      await consented(h, i % 2 ? h.keys.admin : h.keys.employee, 'counter.add', { name: `n${i % 3}`, by: 1 });
  }
  await h.rt.auditBuffer.flush();
}

async function page(
  h: TestRuntime,
  args: Record<string, unknown>,
): Promise<{ entries: Entry[]; next_cursor: string | null }> {
  const env = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.owner }, 'audit.trail', args);
  assert.equal(env.ok, true, JSON.stringify(env.error));
  return env.result as { entries: Entry[]; next_cursor: string | null };
}

/**
 * Run `check` on the SQL of every trail page for every combination of filters (each with and
 * without a cursor); returns how many were checked.
 */
async function everyTrailQuery(
  h: TestRuntime,
  check: (args: Record<string, unknown>, sql: string, params: readonly unknown[]) => Promise<void>,
): Promise<number> {
  const seen = captureReads(h);
  const filters: Record<string, Record<string, unknown>> = {
    verb: { verb: 'counter.add' },
    status: { status: 'completed' },
    status_denied: { status: 'denied' },
    actor: { actor: 2 },
    entity: { entity_type: 'counter', entity_id: 'n1' },
    entity_type: { entity_type: 'counter' },
    reason: { reason: 'role_denied' },
    agent_type: { agent_type: 'test' },
    business: { scope: 'business' },
    time: { from: '2026-02-01T10:00:00.000Z', to: '2026-02-01T11:00:00.000Z' },
  };
  const names = Object.keys(filters);
  let checked = 0;
  for (let mask = 0; mask < 1 << names.length; mask++) {
    const both = (x: string, y: string) =>
      (mask & (1 << names.indexOf(x))) !== 0 && (mask & (1 << names.indexOf(y))) !== 0;
    if (both('entity', 'entity_type') || both('status', 'status_denied')) continue; // same arguments
    const args: Record<string, unknown> = { limit: 5 };
    for (let i = 0; i < names.length; i++) if (mask & (1 << i)) Object.assign(args, filters[names[i]!]);
    for (const withCursor of [false, true]) {
      seen.length = 0;
      const a = { ...args };
      if (withCursor) {
        const first = await page(h, { ...a, limit: 1 });
        if (first.next_cursor === null) continue;
        a.cursor = first.next_cursor;
        seen.length = 0;
      }
      await page(h, a);
      assert.equal(seen.length, 1, JSON.stringify(a));
      await check(a, seen[0]!.sql, seen[0]!.params);
      checked++;
    }
  }
  return checked;
}

describe('audit.trail', () => {
  it('pages newest first; following next_cursor visits every matching row exactly once', async (t) => {
    const clock = { now: new Date('2026-02-01T09:00:00.000Z') };
    const h = await counterRuntime(t, { clock: () => clock.now });
    await seed(h, clock);
    for (const filter of [
      {},
      { verb: 'counter.add' },
      { status: 'denied' },
      { actor: 3 },
      { entity_type: 'counter', entity_id: 'n1' },
      { from: '2026-02-01T10:03:00.000Z', to: '2026-02-01T10:09:00.000Z' },
    ]) {
      const seen: Entry[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 100; i++) {
        const p = await page(h, { ...filter, limit: 3, ...(cursor ? { cursor } : {}) });
        seen.push(...p.entries);
        if (p.next_cursor === null) break;
        cursor = p.next_cursor;
      }
      const full = await page(h, { ...filter, limit: 200 });
      // The paging's own audit.trail reads are in the log by now (a trail read writes the rows
      // answered before it, spec/audit.md §read-rows): they are the only rows newer than page 1.
      const start = full.entries.findIndex((e) => e.audit_id === seen[0]!.audit_id);
      assert.ok(start >= 0, JSON.stringify(filter));
      assert.ok(
        full.entries.slice(0, start).every((e) => e.action === 'audit.trail'),
        JSON.stringify(filter),
      );
      const all = { entries: full.entries.slice(start) };
      assert.deepEqual(
        seen.map((e) => e.audit_id),
        all.entries.map((e) => e.audit_id),
        JSON.stringify(filter),
      );
      assert.ok(all.entries.length > 0, JSON.stringify(filter));
      for (let i = 1; i < all.entries.length; i++) {
        const a = all.entries[i - 1]!;
        const b = all.entries[i]!;
        assert.ok(
          a.timestamp > b.timestamp || (a.timestamp === b.timestamp && a.audit_id > b.audit_id),
          'newest first',
        );
      }
    }
    const denied = await page(h, { status: 'denied', limit: 200 });
    assert.ok(denied.entries.every((e) => e.status === 'denied' && e.reason === 'role_denied'));
    const ranged = await page(h, {
      from: '2026-02-01T10:03:00.000Z',
      to: '2026-02-01T10:09:00.000Z',
      limit: 200,
    });
    assert.ok(
      ranged.entries.every(
        (e) => e.timestamp >= '2026-02-01T10:03:00.000Z' && e.timestamp < '2026-02-01T10:09:00.000Z',
      ),
    );
  });

  it("scope business leaves out reads (the dashboard's own polling) but keeps writes and their denials", async (t) => {
    const clock = { now: new Date('2026-02-01T09:00:00.000Z') };
    const h = await counterRuntime(t, { clock: () => clock.now });
    await seed(h, clock);
    const dashboard = {
      surface: 'http' as const,
      principal: { ...h.principal('owner'), agent_type: 'dashboard' },
    };
    for (let i = 0; i < 3; i++) {
      await h.rt.dispatch(dashboard, 'counter.get', { name: 'n1' });
      await h.rt.dispatch(dashboard, 'audit.trail', { limit: 5 });
    }
    await h.rt.auditBuffer.flush();
    const all = await page(h, { limit: 200 });
    assert.ok(
      all.entries.some((e) => e.action === 'audit.trail'),
      'the reads are still audited',
    );
    const business = await page(h, { scope: 'business', limit: 200 });
    assert.ok(business.entries.length > 0);
    assert.deepEqual(
      [...new Set(business.entries.map((e) => e.action))],
      ['counter.add'],
      'only the business action, completed and denied',
    );
    assert.ok(business.entries.some((e) => e.status === 'denied'));
    const mine = await page(h, { agent_type: 'dashboard', limit: 200 });
    assert.equal(mine.entries.length, 6, "the dashboard's own six reads, marked as its own");
    const write = business.entries.find((e) => e.status === 'completed')!;
    const one = await page(h, { audit_id: write.audit_id });
    assert.equal(one.entries.length, 1);
    const receipt = one.entries[0] as unknown as Record<string, unknown>;
    assert.deepEqual(
      receipt.arguments,
      { name: receipt.entity_id, by: 1 },
      'the arguments, for the receipt view',
    );
    assert.equal(receipt.revertible, true);
    assert.equal(receipt.reverted_by_audit_id, null);
    assert.equal(receipt.self_approved, false);
  });

  it('a cursor is bound to its tenant and filters (cursor_invalid otherwise)', async (t) => {
    const clock = { now: new Date('2026-02-01T09:00:00.000Z') };
    const h = await counterRuntime(t, { clock: () => clock.now });
    await seed(h, clock);
    const p = await page(h, { verb: 'counter.add', limit: 2 });
    const other = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.owner }, 'audit.trail', {
      status: 'denied',
      limit: 2,
      cursor: p.next_cursor,
    });
    assert.equal(other.error?.reason, 'cursor_invalid');
    const foreign = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.otherOwnerKey }, 'audit.trail', {
      verb: 'counter.add',
      limit: 2,
      cursor: p.next_cursor,
    });
    assert.equal(foreign.error?.reason, 'cursor_invalid');
  });

  it('a filter tested on rows examines a bounded number of them; its pages stop early and resume without skipping or repeating a row', async (t) => {
    const h = await counterRuntime(t);
    // 2.5 × TRAIL_SCAN_ROWS rows, one a minute from 2020-01-01 (older than anything the runtime
    // writes), mostly denials of a read verb by agent `bulk`; a few rows at the edges of the
    // bounded scans (0, N-1, N, N+1, 2N-1, 2N, last) are completed writes of agent `rare`.
    const n = Math.floor(TRAIL_SCAN_ROWS * 2.5);
    const rare = new Set([
      0,
      1,
      TRAIL_SCAN_ROWS - 1,
      TRAIL_SCAN_ROWS,
      TRAIL_SCAN_ROWS + 1,
      2 * TRAIL_SCAN_ROWS - 1,
      2 * TRAIL_SCAN_ROWS,
      n - 1,
    ]);
    type Seeded = {
      audit_id: number;
      created_at: string;
      agent_type: string;
      status: string;
      action_type: string;
      user_id: number;
      consent_class: string;
    };
    const seeded: Seeded[] = [];
    await h.rt.store.write(async (tx) => {
      const ids =
        tx.nextAuditIds !== undefined
          ? await tx.nextAuditIds(n)
          : await Promise.all(Array.from({ length: n }, () => tx.nextAuditId()));
      for (let i = 0; i < n; i += 250) {
        const batch = ids.slice(i, i + 250).map((audit_id, j) => {
          const k = i + j;
          const r = rare.has(k);
          const row: Record<string, unknown> = {
            audit_id,
            company_id: h.companyId,
            seq: 10_000_000 + k,
            // Every 7th row shares its minute with the next one: ties broken by audit_id.
            created_at: new Date(
              Date.parse('2020-01-01T00:00:00.000Z') + (k - (k % 7 === 1 ? 1 : 0)) * 60_000,
            ).toISOString(),
            user_id: 1 + (k % 5),
            role: 'employee',
            agent_type: r ? 'rare' : 'bulk',
            key_id: null,
            action_type: r ? 'counter.add' : 'counter.get',
            category: 'bench',
            shape: 'receipt',
            consent_class: r ? 'WRITE_REVERSIBLE' : 'READ',
            status: r ? 'completed' : 'denied',
            reason: r ? null : 'role_denied',
            request_data: '{}',
            entity_type: null,
            entity_id: null,
            is_reversible: 0,
            rollback_handle: null,
            idempotency_key: null,
            transaction_id: null,
            parent_id: null,
            requires_approval: 0,
            approved_by: null,
            approved_at: null,
            latency_ms: 1,
            prev_hash: 'x',
            row_hash: 'x',
          };
          seeded.push(row as unknown as Seeded);
          return row;
        });
        await tx.run(
          `INSERT INTO audit_log (${AUDIT_COLUMNS.join(', ')}) VALUES ${batch.map(() => `(${AUDIT_COLUMNS.map(() => '?').join(', ')})`).join(', ')}`,
          batch.flatMap((row) => AUDIT_COLUMNS.map((c) => row[c] ?? null)),
        );
      }
    });
    const until = '2021-01-01T00:00:00.000Z'; // only the seeded rows
    const newest = (a: Seeded, b: Seeded) =>
      a.created_at === b.created_at ? b.audit_id - a.audit_id : a.created_at < b.created_at ? 1 : -1;
    // stops: how many pages stop early when nothing matches (the scanned index holds 2.5 × N rows,
    // or, for the business index, only the few writes).
    const cases: Array<{ args: Record<string, unknown>; match: (r: Seeded) => boolean; stops?: number }> = [
      { args: { agent_type: 'rare' }, match: (r) => r.agent_type === 'rare' },
      { args: { agent_type: 'never-called' }, match: () => false, stops: 2 },
      { args: { status: 'completed' }, match: (r) => r.status === 'completed' },
      { args: { verb: 'counter.get', agent_type: 'rare' }, match: () => false, stops: 2 },
      {
        args: { verb: 'counter.add', status: 'completed', actor: 2 },
        match: (r) => r.action_type === 'counter.add' && r.user_id === 2,
      },
      { args: { scope: 'business', agent_type: 'bulk' }, match: () => false, stops: 0 },
      {
        args: { status: 'denied', actor: 3, agent_type: 'bulk' },
        match: (r) => r.status === 'denied' && r.user_id === 3,
      },
    ];
    for (const c of cases)
      for (const limit of [1, 3, 200]) {
        const label = JSON.stringify({ ...c.args, limit });
        const want = seeded
          .filter(c.match)
          .sort(newest)
          .map((r) => r.audit_id);
        const got: number[] = [];
        let cursor: string | undefined;
        let pages = 0;
        let stopped = 0;
        for (;;) {
          const p = (await page(h, { ...c.args, to: until, limit, ...(cursor ? { cursor } : {}) })) as {
            entries: Entry[];
            next_cursor: string | null;
            stopped_early: boolean;
          };
          pages++;
          assert.ok(p.entries.length <= limit, label);
          if (p.stopped_early) {
            stopped++;
            assert.notEqual(p.next_cursor, null, `${label}: a page that stopped early says where to resume`);
          }
          got.push(...p.entries.map((e) => e.audit_id));
          if (p.next_cursor === null) break;
          cursor = p.next_cursor;
          assert.ok(pages < 1000, label);
        }
        assert.deepEqual(got, want, `${label}: every matching row exactly once, newest first`);
        // Nothing matches: each page examined N rows of the scanned index, then the rest.
        if (c.stops !== undefined) {
          assert.equal(stopped, c.stops, `${label}: stopped ${stopped} times in ${pages} pages`);
          assert.equal(pages, c.stops + 1, label);
        }
      }
    // A filter served by its own index never stops early: every denial of actor 3 in one page run.
    const byIndex = await page(h, { status: 'denied', actor: 3, to: until, limit: 200 });
    assert.equal((byIndex as { stopped_early?: boolean }).stopped_early, false);
  });

  it('entity_id without entity_type is refused with invalid_input, not silently ignored', async (t) => {
    const h = await counterRuntime(t);
    const env = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.owner }, 'audit.trail', {
      entity_id: 42,
    });
    assert.equal(env.error?.reason, 'invalid_input', JSON.stringify(env));
    assert.match(`${env.error?.message} ${env.error?.hint ?? ''}`, /entity_type/);
    const ok = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.owner }, 'audit.trail', {
      entity_type: 'counter',
      entity_id: 42,
    });
    assert.equal(ok.ok, true, JSON.stringify(ok.error));
  });

  it('every filter combination is an index search with no sort step (no full scan, no temp b-tree)', async (t) => {
    const clock = { now: new Date('2026-02-01T09:00:00.000Z') };
    const h = await counterRuntime(t, { clock: () => clock.now, engine: 'sqlite' }); // SQLite query plans
    await seed(h, clock);
    const db = new Database(h.dbPath, { readonly: true });
    t.after(() => db.close());
    const checked = await everyTrailQuery(h, async (a, sql, params) => {
      const plan = (
        db
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all(...params.map((p) => (typeof p === 'boolean' ? Number(p) : p))) as Array<{ detail: string }>
      )
        .map((r) => r.detail)
        .join(' | ');
      assert.match(
        plan,
        /SEARCH audit_log USING (COVERING )?INDEX audit_company_/,
        `${JSON.stringify(a)}: ${plan}`,
      );
      assert.doesNotMatch(plan, /TEMP B-TREE/, `${JSON.stringify(a)}: ${plan}`);
      // A status other than completed is searched on a status index (partial, runtime migration 9).
      if (
        a.status === 'denied' &&
        a.actor === undefined &&
        a.entity_type === undefined &&
        a.reason === undefined
      )
        assert.match(plan, /INDEX audit_company_(action_)?status_time/, `${JSON.stringify(a)}: ${plan}`);
      // A filter tested on the scanned index's rows: the scan is bounded (and no row is sorted).
      if (/UNION ALL/.test(sql)) assert.ok(params.includes(TRAIL_SCAN_ROWS), `${JSON.stringify(a)}: ${sql}`);
    });
    assert.ok(checked > 100, `checked ${checked} combinations`);
  });

  it(
    'postgres: every filter combination is an index scan of audit_log with no sort step',
    { skip: TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false },
    async (t) => {
      const clock = { now: new Date('2026-02-01T09:00:00.000Z') };
      const h = await counterRuntime(t, { clock: () => clock.now, engine: 'postgres' });
      await seed(h, clock);
      const checked = await everyTrailQuery(h, async (a, sql, params) => {
        // A few rows: left to its costs the planner would read them all, or sort them. With
        // sequential scans and sorts priced out, a filter no index serves (in the page's order)
        // still shows as a Seq Scan or a Sort.
        const plan = await h.rt.store.write(async (tx) => {
          await tx.run('SET LOCAL enable_seqscan = off');
          await tx.run('SET LOCAL enable_sort = off');
          const rows = await tx.all<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params);
          return rows.map((r) => r['QUERY PLAN']).join(' | ');
        });
        assert.match(
          plan,
          /Index (Only )?Scan (Backward )?using audit_company_\w+ on audit_log/,
          `${JSON.stringify(a)}: ${plan}`,
        );
        assert.doesNotMatch(plan, /Seq Scan|Sort/, `${JSON.stringify(a)}: ${plan}`);
        if (
          a.status === 'denied' &&
          a.actor === undefined &&
          a.entity_type === undefined &&
          a.reason === undefined
        )
          assert.match(plan, /using audit_company_(action_)?status_time/, `${JSON.stringify(a)}: ${plan}`);
      });
      assert.ok(checked > 100, `checked ${checked} combinations`);
    },
  );
});
