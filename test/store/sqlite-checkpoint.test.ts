/**
 * The background WAL checkpointer of SqliteStore file databases (checkpointer.ts, issue 21;
 * spec/store.md §durability): the worker checkpoints so the WAL stays far below the backstop,
 * data survives close, close never hangs (under load, right after open, without close at all),
 * and a failing worker leaves writes working with SQLite's own auto-checkpoint back on.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { StoreError } from '../../src/store/store.ts';
import { BACKSTOP_PAGES, INLINE_PAGES } from '../../src/store/sqlite/checkpointer.ts';

const CHILD = fileURLToPath(new URL('./fixtures/checkpoint-exit.ts', import.meta.url));

function tempDb(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'solid-ckpt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'db.sqlite');
}

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function walBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

async function createTable(store: SqliteStore): Promise<void> {
  await store.write(async (tx) => {
    await tx.run('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
  });
}

const row = 'x'.repeat(1000);

test('the worker checkpoints: the WAL stays far below the backstop under bursts of writes', async (t) => {
  const path = tempDb(t);
  const store = new SqliteStore({
    path,
    checkpoint: 'background',
    checkpointStartAfterCommits: 0,
    checkpointIntervalMs: 10,
  });
  t.after(() => store.close());
  await createTable(store);
  assert.equal(store.checkpointState.mode, 'background');
  assert.equal(store.checkpointState.autocheckpoint, BACKSTOP_PAGES);
  let max = 0;
  // 40 bursts of 50 writes: ≈ 2,000 frames (≈ 8 MB) if nothing checkpointed, since the
  // writer's own auto-checkpoint only fires at 10,000 pages.
  for (let burst = 0; burst < 40; burst++) {
    for (let i = 0; i < 50; i++) await store.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', [row]));
    max = Math.max(max, walBytes(path));
    const before = store.checkpointState.stats!.passive;
    await until(() => {
      const s = store.checkpointState.stats!;
      return s.passive > before && s.complete;
    }, 'a complete background checkpoint');
  }
  assert.ok(max < 2 * 1024 * 1024, `the WAL reached ${max} bytes`);
  const check = new Database(path, { readonly: true });
  t.after(() => check.close());
  assert.equal((check.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 2000);
});

test('data written with the worker is readable by a fresh connection after close', async (t) => {
  const path = tempDb(t);
  const store = new SqliteStore({
    path,
    checkpoint: 'background',
    checkpointStartAfterCommits: 0,
    checkpointIntervalMs: 5,
  });
  await createTable(store);
  await Promise.all(
    Array.from({ length: 300 }, (_, i) =>
      store.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', [`${i}`])),
    ),
  );
  await store.close();
  const db = new Database(path);
  t.after(() => db.close());
  assert.equal((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 300);
  assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
});

test('close while writes are in flight resolves; each write committed or was refused', async (t) => {
  const path = tempDb(t);
  const store = new SqliteStore({
    path,
    checkpoint: 'background',
    checkpointStartAfterCommits: 0,
    checkpointIntervalMs: 1,
  });
  await createTable(store);
  const writes = Array.from({ length: 500 }, () =>
    store
      .write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', [row]))
      .then(
        () => 'ok',
        (e: unknown) => {
          assert.ok(e instanceof StoreError);
          assert.equal(e.code, 'unavailable');
          return 'refused';
        },
      ),
  );
  await new Promise((r) => setTimeout(r, 20));
  await store.close();
  const outcomes = await Promise.all(writes);
  const db = new Database(path, { readonly: true });
  t.after(() => db.close());
  const n = (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
  assert.equal(n, outcomes.filter((o) => o === 'ok').length);
});

test('close right after open resolves (the worker may not have started yet)', async (t) => {
  const path = tempDb(t);
  for (let i = 0; i < 5; i++) {
    const store = new SqliteStore({ path, checkpoint: 'background', checkpointStartAfterCommits: 0 });
    await store.close();
    await store.close();
  }
  const store = new SqliteStore({ path, checkpoint: 'background', checkpointStartAfterCommits: 0 });
  await createTable(store);
  await store.close();
});

test('a process with a running worker exits, with and without close', async (t) => {
  for (const mode of ['close', 'no-close']) {
    const path = tempDb(t);
    const r = await new Promise<{ code: number | null; killed: boolean; out: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', CHILD, path, mode],
        { timeout: 30_000 },
        (err, stdout, stderr) =>
          resolve({
            code: err === null ? 0 : ((err as { code?: number }).code ?? 1),
            killed: err?.killed ?? false,
            out: stdout + stderr,
          }),
      );
    });
    assert.equal(r.killed, false, `${mode}: the process did not exit`);
    assert.equal(r.code, 0, `${mode}: ${r.out}`);
    assert.match(r.out, /done/);
  }
});

for (const where of ['start', 'checkpoint'] as const) {
  test(`a worker that fails (${where}) leaves writes working and the auto-checkpoint back on`, async (t) => {
    const path = tempDb(t);
    const errors: Error[] = [];
    const store = new SqliteStore({
      path,
      checkpoint: 'background',
      checkpointStartAfterCommits: 0,
      checkpointIntervalMs: 5,
      checkpointInjectFailure: where,
      onCheckpointError: (e) => errors.push(e),
    });
    t.after(() => store.close());
    await createTable(store);
    await until(() => errors.length > 0, 'the failure report');
    assert.match(errors[0]!.message, /checkpointer worker failed: .*injected/);
    assert.equal(store.checkpointState.mode, 'inline');
    assert.equal(store.checkpointState.autocheckpoint, INLINE_PAGES);
    for (let i = 0; i < 1500; i++) await store.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', [row]));
    // SQLite's own checkpoint every 1,000 pages bounds the WAL again (≈ 4 MB, not 1,500 × 4 KB+).
    assert.ok(walBytes(path) < 6 * 1024 * 1024, `the WAL reached ${walBytes(path)} bytes`);
    assert.equal(errors.length, 1);
  });
}

test("checkpoint: 'inline' starts no worker; 'background' starts it only after the first commits; the default is inline", async (t) => {
  const inline = new SqliteStore({ path: tempDb(t), checkpoint: 'inline', checkpointStartAfterCommits: 0 });
  t.after(() => inline.close());
  await createTable(inline);
  assert.deepEqual(inline.checkpointState, {
    mode: 'inline',
    autocheckpoint: INLINE_PAGES,
    stats: undefined,
  });
  const lazy = new SqliteStore({ path: tempDb(t), checkpoint: 'background', checkpointStartAfterCommits: 3 });
  t.after(() => lazy.close());
  await createTable(lazy);
  assert.equal(lazy.checkpointState.mode, 'inline');
  assert.equal(lazy.checkpointState.autocheckpoint, INLINE_PAGES);
  await lazy.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', ['a']));
  await lazy.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', ['b']));
  assert.equal(lazy.checkpointState.mode, 'background');
  assert.equal(lazy.checkpointState.autocheckpoint, BACKSTOP_PAGES);
  const plain = new SqliteStore({ path: tempDb(t), checkpointStartAfterCommits: 0 });
  t.after(() => plain.close());
  await createTable(plain);
  assert.equal(plain.checkpointState.mode, 'inline', 'inline by default');
  const memory = new SqliteStore({ path: ':memory:', checkpointStartAfterCommits: 0 });
  t.after(() => memory.close());
  assert.equal(memory.checkpointState.mode, 'inline');
});

test('an idle WAL over 4 MiB is truncated by the worker', async (t) => {
  const path = tempDb(t);
  const store = new SqliteStore({
    path,
    checkpoint: 'background',
    checkpointStartAfterCommits: 0,
    checkpointIntervalMs: 10,
  });
  t.after(() => store.close());
  await createTable(store);
  // Paused, the worker copies nothing: the WAL grows past the truncation threshold.
  await store.withCheckpointsPaused(async () => {
    for (let i = 0; i < 1500; i++) await store.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', [row]));
  });
  assert.ok(walBytes(path) > 4 * 1024 * 1024, `the WAL is only ${walBytes(path)} bytes`);
  await until(() => (store.checkpointState.stats?.truncated ?? 0) > 0, 'a TRUNCATE checkpoint');
  assert.equal(walBytes(path), 0);
  await store.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', ['after']));
  const n = await store.read((q) => q.get<{ n: number }>('SELECT count(*) AS n FROM t'));
  assert.equal(n?.n, 1501);
});
