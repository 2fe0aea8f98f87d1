/**
 * Another process holding the SQLite write lock (a `solid` CLI command, a second `solid serve`
 * on the same file, a backup) must not stall this one (issue 30: the synchronous busy wait froze a
 * node for 5 s, p99 8.1 s). The writer waits for the lock asynchronously, so the event loop keeps
 * answering reads meanwhile; past its busy timeout it gives up with StoreError('busy').
 *
 * Two stores on one file in one process stand for the two processes: with a synchronous wait the
 * holder's own timer could never fire while the waiter blocks the event loop, so the waiter would
 * fail with `busy` after its whole timeout instead of committing when the holder lets go.
 * Assertions are on outcomes and their order; the only times are generous guards.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { StoreError } from '../../src/store/store.ts';

const ROWS = [
  {
    version: 1,
    name: 'rows',
    sqlite: 'CREATE TABLE r (id INTEGER PRIMARY KEY, v TEXT NOT NULL);',
    postgres: 'CREATE TABLE r (id BIGINT PRIMARY KEY, v TEXT NOT NULL);',
  },
];

function twoStores(t: import('node:test').TestContext, busyTimeoutMs = 5000, groupCommit = true) {
  const dir = mkdtempSync(join(tmpdir(), 'solid-lock-'));
  const file = join(dir, 'db.sqlite');
  const holder = new SqliteStore({ path: file, groupCommit: false });
  const waiter = new SqliteStore({ path: file, busyTimeoutMs, groupCommit });
  t.after(() => {
    holder.close();
    waiter.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { holder, waiter };
}

describe('SQLite: waiting for another process’s write lock', () => {
  for (const groupCommit of [true, false]) {
    it(`keeps the event loop free: reads answer, then the write commits once the lock is free (group commit ${groupCommit ? 'on' : 'off'})`, async (t) => {
      const { holder, waiter } = twoStores(t, 5000, groupCommit);
      await holder.migrate('rows', ROWS);
      await waiter.migrate('rows', ROWS);
      const order: string[] = [];
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const lockTaken = new Promise<void>((r) => (locked = r));
      const holding = holder.write(async (tx) => {
        await tx.run('INSERT INTO r (id, v) VALUES (1, ?)', ['holder']);
        locked();
        await held;
        order.push('holder commits');
      });
      await lockTaken;
      const writing = waiter
        .write(async (tx) => {
          await tx.run('INSERT INTO r (id, v) VALUES (2, ?)', ['waiter']);
        })
        .then(() => order.push('waiter committed'));
      // The waiter is now waiting for the lock; a read on the same store still answers.
      await new Promise((r) => setTimeout(r, 100));
      const seen = await waiter.read((q) => q.all<{ id: number }>('SELECT id FROM r'));
      order.push(`read saw ${seen.length} rows`);
      setTimeout(release, 200);
      await holding;
      await writing;
      assert.deepEqual(order, ['read saw 0 rows', 'holder commits', 'waiter committed']);
      const rows = await waiter.read((q) =>
        q.all<{ id: number; v: string }>('SELECT id, v FROM r ORDER BY id'),
      );
      assert.deepEqual(
        rows.map((r) => r.v),
        ['holder', 'waiter'],
      );
    });
  }

  it('gives up with StoreError busy after its busy timeout, and writes again afterwards', async (t) => {
    const { holder, waiter } = twoStores(t, 300);
    await holder.migrate('rows', ROWS);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const lockTaken = new Promise<void>((r) => (locked = r));
    const holding = holder.write(async (tx) => {
      await tx.run('INSERT INTO r (id, v) VALUES (1, ?)', ['holder']);
      locked();
      await held;
    });
    await lockTaken;
    await assert.rejects(
      waiter.write(async (tx) => {
        await tx.run('INSERT INTO r (id, v) VALUES (2, ?)', ['waiter']);
      }),
      (e: unknown) => e instanceof StoreError && e.code === 'busy',
    );
    release();
    await holding;
    await waiter.write(async (tx) => {
      await tx.run('INSERT INTO r (id, v) VALUES (3, ?)', ['after']);
    });
    const rows = await waiter.read((q) => q.all<{ v: string }>('SELECT v FROM r ORDER BY id'));
    assert.deepEqual(
      rows.map((r) => r.v),
      ['holder', 'after'],
      'the refused write left nothing behind',
    );
  });
});
