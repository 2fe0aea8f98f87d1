/**
 * Durable mode (SQLite, synchronous=FULL) with group commit: concurrent writers share one COMMIT,
 * and none is answered before that COMMIT returned. Observed from outside: when a caller's write
 * (or dispatch) resolves, an independent connection on the same file already sees its rows.
 * A failing writer does not poison the others of its group; a group that SQLite rolled back as a
 * whole (disk full) answers none of its writers as committed. Spec: spec/store.md §durability.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { StoreError, type StoreTx } from '../../src/store/store.ts';

type StoreTxGet = StoreTx['get'];
import { createRuntime } from '../../src/runtime/runtime.ts';
import { defineVerb } from '../../src/runtime/verb.ts';

function tempDb(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'solid-durable-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'durable.db');
}

async function storeWithTable(path: string, options: { groupCommit?: boolean } = {}): Promise<SqliteStore> {
  const store = new SqliteStore({ path, durability: 'full', ...options });
  await store.migrate('t', [
    {
      version: 1,
      name: 'items',
      sqlite: 'CREATE TABLE items (id INTEGER PRIMARY KEY, label TEXT NOT NULL, blob TEXT)',
    },
  ]);
  return store;
}

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('group commit (durability full)', () => {
  it('16 concurrent writers share commits, and each is visible to another connection when its write resolves', async (t) => {
    const path = tempDb(t);
    const store = await storeWithTable(path);
    t.after(() => store.close());
    const outside = new Database(path, { readonly: true });
    t.after(() => outside.close());
    const seenAtResolve: boolean[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        for (let k = 0; k < 10; k++) {
          const id = i * 100 + k + 1;
          await store.write(async (tx) => {
            await tx.run('INSERT INTO items (id, label) VALUES (?, ?)', [id, `w${i}`]);
            await tick(); // let the other writers queue while this group runs
          });
          seenAtResolve.push(outside.prepare('SELECT 1 FROM items WHERE id = ?').get(id) !== undefined);
        }
      }),
    );
    assert.equal(seenAtResolve.length, 160);
    assert.ok(seenAtResolve.every(Boolean), 'every write was committed before its caller was answered');
    const stats = store.commitStats;
    assert.equal(stats.writes, 160);
    assert.ok(
      stats.commits < stats.writes / 2,
      `writers share commits (${stats.commits} commits for ${stats.writes} writes)`,
    );
  });

  it('without grouping (groupCommit: false) every write has its own commit', async (t) => {
    const store = await storeWithTable(tempDb(t), { groupCommit: false });
    t.after(() => store.close());
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        store.write((tx) => tx.run('INSERT INTO items (id, label) VALUES (?, ?)', [i + 1, 'x'])),
      ),
    );
    assert.deepEqual(store.commitStats, { commits: 8, writes: 8 });
  });

  it('normal mode groups concurrent writers by default; groupCommit: false commits each alone', async (t) => {
    const concurrent = (store: SqliteStore) =>
      Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          store.write(async (tx) => {
            await tx.run('INSERT INTO items (id, label) VALUES (?, ?)', [i + 1, 'x']);
            await tick();
          }),
        ),
      );
    const grouped = new SqliteStore({ path: tempDb(t) });
    const plain = new SqliteStore({ path: tempDb(t), groupCommit: false });
    t.after(() => plain.close());
    t.after(() => grouped.close());
    for (const s of [plain, grouped])
      await s.migrate('t', [
        {
          version: 1,
          name: 'items',
          sqlite: 'CREATE TABLE items (id INTEGER PRIMARY KEY, label TEXT NOT NULL, blob TEXT)',
        },
      ]);
    await concurrent(plain);
    await concurrent(grouped);
    assert.deepEqual(plain.commitStats, { commits: 8, writes: 8 });
    assert.equal(grouped.commitStats.writes, 8);
    assert.ok(grouped.commitStats.commits < 8, `grouped: ${JSON.stringify(grouped.commitStats)}`);
  });

  for (const groupCommit of [true, false]) {
    it(`relaxed writes (durable: false${groupCommit ? '' : ', groupCommit false'}) commit without their fsync; a durable write never does`, async (t) => {
      // The safety level a write's COMMIT runs at, read inside its own transaction: 2 = FULL (the
      // WAL fsynced at COMMIT), 1 = NORMAL (spec/store.md §durability, relaxed commits).
      const path = tempDb(t);
      const store = await storeWithTable(path, { groupCommit });
      t.after(() => store.close());
      const outside = new Database(path, { readonly: true });
      t.after(() => outside.close());
      const level = (tx: { get: StoreTxGet }) =>
        tx.get<{ synchronous: number }>('PRAGMA synchronous').then((r) => Number(r!.synchronous));
      const seen: Array<{ durable: boolean; level: number; visible: boolean }> = [];
      await Promise.all(
        Array.from({ length: 24 }, async (_, i) => {
          const durable = i % 3 === 2;
          const id = i + 1;
          const at = await store.write(
            async (tx) => {
              await tx.run('INSERT INTO items (id, label) VALUES (?, ?)', [id, durable ? 'full' : 'relaxed']);
              await tick(); // let the others queue: relaxed and durable writers arrive mixed
              return level(tx);
            },
            durable ? undefined : { durable: false },
          );
          seen.push({
            durable,
            level: at,
            visible: outside.prepare('SELECT 1 FROM items WHERE id = ?').get(id) !== undefined,
          });
        }),
      );
      assert.ok(
        seen.every((s) => s.visible),
        'every write is committed when it resolves',
      );
      assert.deepEqual(
        seen.filter((s) => s.durable).map((s) => s.level),
        Array(8).fill(2),
        'a durable write commits at synchronous=FULL, whoever shares its group',
      );
      assert.ok(
        seen.some((s) => !s.durable && s.level === 1),
        'relaxed writes commit at NORMAL',
      );
      // A relaxed write that fails puts the level back too: the next write is durable.
      await assert.rejects(
        store.write(
          async (tx) => {
            await tx.run('INSERT INTO items (id, label) VALUES (?, ?)', [1, 'duplicate']);
          },
          { durable: false },
        ),
      );
      assert.equal(await store.write((tx) => level(tx)), 2);
      assert.equal(store.rawDatabase.pragma('synchronous', { simple: true }), 2);
    });
  }

  it('a failing writer is rolled back alone: the others of its group commit, afterCommit runs only for them', async (t) => {
    const path = tempDb(t);
    const store = await storeWithTable(path);
    t.after(() => store.close());
    const callbacks: number[] = [];
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        store.write(async (tx) => {
          await tx.run('INSERT INTO items (id, label) VALUES (?, ?)', [i + 1, `w${i}`]);
          tx.afterCommit(() => callbacks.push(i));
          await tick();
          if (i === 4) throw new Error('domain failure');
          if (i === 6) await tx.run('INSERT INTO items (id, label) VALUES (?, ?)', [1, 'duplicate id']); // unique violation
          return i;
        }),
      ),
    );
    assert.equal(results[4]!.status, 'rejected');
    assert.equal(
      (results[4] as PromiseRejectedResult).reason.message,
      'domain failure',
      'the body error is rethrown unchanged',
    );
    assert.equal(results[6]!.status, 'rejected');
    assert.equal(((results[6] as PromiseRejectedResult).reason as StoreError).code, 'unique_violation');
    const ok = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
    assert.deepEqual(ok, [0, 1, 2, 3, 5, 7, 8, 9]);
    const rows = await store.read((q) => q.all<{ id: number }>('SELECT id FROM items ORDER BY id'));
    assert.deepEqual(
      rows.map((r) => r.id),
      [1, 2, 3, 4, 6, 8, 9, 10],
    );
    assert.deepEqual(
      [...callbacks].sort((a, b) => a - b),
      ok,
    );
  });

  for (const durability of ['normal', 'full'] as const)
    it(`${durability} mode: a group's failing first writer leaves nothing, and the writers queued behind it commit`, async (t) => {
      const store = new SqliteStore({ path: tempDb(t), durability });
      t.after(() => store.close());
      await store.migrate('t', [
        {
          version: 1,
          name: 'items',
          sqlite: 'CREATE TABLE items (id INTEGER PRIMARY KEY, label TEXT NOT NULL, blob TEXT)',
        },
      ]);
      const callbacks: number[] = [];
      // Writer 0 runs first in its group (nothing queued before it) and fails after its INSERT.
      const results = await Promise.allSettled(
        Array.from({ length: 6 }, (_, i) =>
          store.write(async (tx) => {
            await tx.run('INSERT INTO items (id, label) VALUES (?, ?)', [i + 1, `w${i}`]);
            tx.afterCommit(() => callbacks.push(i));
            await tick();
            if (i === 0 || i === 3) throw new Error(`failure ${i}`);
            return i;
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        ['rejected', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
      );
      const rows = await store.read((q) => q.all<{ id: number }>('SELECT id FROM items ORDER BY id'));
      assert.deepEqual(
        rows.map((r) => r.id),
        [2, 3, 5, 6],
      );
      assert.deepEqual(
        [...callbacks].sort((a, b) => a - b),
        [1, 2, 4, 5],
      );
      // A lone write after them (first of its own group) still commits.
      await store.write((tx) => tx.run('INSERT INTO items (id, label) VALUES (?, ?)', [7, 'later']));
      assert.equal((await store.read((q) => q.all('SELECT id FROM items'))).length, 5);
    });

  it('a throwing afterCommit callback neither fails its committed write nor skips the others', async (t) => {
    const store = await storeWithTable(tempDb(t));
    t.after(() => store.close());
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    t.after(() => process.off('warning', onWarning));
    const ran: number[] = [];
    const results = await Promise.allSettled(
      [0, 1, 2].map((i) =>
        store.write(async (tx) => {
          await tx.run('INSERT INTO items (id, label) VALUES (?, ?)', [i + 1, 'x']);
          tx.afterCommit(() => {
            if (i === 0) throw new Error('observer bug');
            ran.push(i);
          });
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled', 'fulfilled'],
    );
    assert.deepEqual(ran.sort(), [1, 2]);
    await tick();
    assert.ok(warnings.some((w) => /observer bug/.test(w)));
  });

  it('disk full inside a group: a writer answered as committed is committed, one rejected left nothing', async (t) => {
    const path = tempDb(t);
    const store = await storeWithTable(path);
    t.after(() => store.close());
    // Cap the file a few pages above its current size: the big rows below cannot all fit.
    const pages = Number(store.rawDatabase.pragma('page_count', { simple: true }));
    store.rawDatabase.pragma(`max_page_count = ${pages + 8}`);
    const big = 'x'.repeat(6000);
    const results = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) =>
        store.write(async (tx) => {
          await tick();
          await tx.run('INSERT INTO items (id, label, blob) VALUES (?, ?, ?)', [i + 1, `w${i}`, big]);
          await tick();
          return i;
        }),
      ),
    );
    const rejected = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
    assert.ok(rejected.length > 0, 'the cap was hit');
    for (const r of rejected)
      assert.ok(
        r.reason instanceof StoreError && ['disk_full', 'unavailable', 'unknown'].includes(r.reason.code),
        String(r.reason),
      );
    assert.ok(rejected.some((r) => (r.reason as StoreError).code === 'disk_full'));
    const outside = new Database(path, { readonly: true });
    t.after(() => outside.close());
    const present = new Set(
      (outside.prepare('SELECT id FROM items').all() as Array<{ id: number }>).map((r) => r.id),
    );
    results.forEach((r, i) => {
      assert.equal(
        present.has(i + 1),
        r.status === 'fulfilled',
        `writer ${i}: ${r.status} but row ${present.has(i + 1) ? 'present' : 'absent'}`,
      );
    });
    // Recovery: with room again, writes succeed and the database is intact.
    store.rawDatabase.pragma('max_page_count = 1073741823');
    await store.write((tx) => tx.run('INSERT INTO items (id, label) VALUES (?, ?)', [1000, 'after']));
    assert.equal(outside.pragma('integrity_check', { simple: true }), 'ok');
  });

  for (const durability of ['full', 'normal'] as const)
    it(`dispatch in ${durability} mode (default options): no caller holds a receipt before its effect and audit row are committed`, async (t) => {
      const path = tempDb(t);
      const store = new SqliteStore({ path, durability });
      const rt = await createRuntime({
        store,
        logger: pino({ level: 'silent' }),
        sandboxCompanyId: 1,
        maintenanceIntervalMs: 0,
      });
      t.after(() => rt.close());
      await store.migrate('t', [
        {
          version: 1,
          name: 'notes',
          sqlite:
            'CREATE TABLE notes (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, body TEXT NOT NULL)',
        },
      ]);
      await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
      await rt.createTenant({ company_id: 2, name: 'Co', tier: 'enterprise' });
      const principal = await rt.tenants.authenticate(
        await rt.createApiKey({ company_id: 2, user_id: 1, role: 'owner' }),
      );
      rt.register(
        defineVerb<{ body: string }>({
          name: 'notes.add',
          description: 'Add a note (no gate).',
          shape: 'receipt',
          category: 'test',
          input: {
            type: 'object',
            properties: { body: { type: 'string' } },
            required: ['body'],
            additionalProperties: false,
          },
          delegateConsent: async () => ({
            consentClass: null,
            roleFloor: 'employee',
            summary: 'Add a note.',
          }),
          async handler(ctx, a) {
            const r = await ctx.db.run('INSERT INTO notes (company_id, body) VALUES (?, ?)', [
              ctx.principal.company_id,
              a.body,
            ]);
            return { note_id: r.lastInsertId };
          },
        }),
      );
      const outside = new Database(path, { readonly: true });
      t.after(() => outside.close());
      const auditRow = outside.prepare('SELECT status FROM audit_log WHERE audit_id = ?');
      const note = outside.prepare('SELECT body FROM notes WHERE id = ?');
      let receipts = 0;
      await Promise.all(
        Array.from({ length: 16 }, async (_, c) => {
          for (let k = 0; k < 8; k++) {
            const env = await rt.dispatch(
              { principal, surface: 'http' },
              'notes.add',
              { body: `c${c}k${k}` },
              { idempotency_key: `c${c}-k${k}` },
            );
            assert.equal(env.ok, true, JSON.stringify(env.error));
            const r = env.result as { note_id: number; audit_id: number };
            assert.deepEqual(
              auditRow.get(env.audit_id),
              { status: 'completed' },
              'audit row committed before the receipt',
            );
            assert.deepEqual(
              note.get(r.note_id),
              { body: `c${c}k${k}` },
              'effect committed before the receipt',
            );
            receipts++;
          }
        }),
      );
      assert.equal(receipts, 128);
      const { commits, writes } = store.commitStats;
      assert.ok(
        writes / commits > 2,
        `concurrent dispatches share commits (${writes} writes in ${commits} commits)`,
      );
    });
});
