/**
 * Files holding customer data and the audit log are created private (spec/store.md §file-modes):
 * the database and its -wal/-shm files 0600, a folder the runtime creates 0700, whatever the
 * process umask lets through by default (022 makes plain files world-readable).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { cliHarness } from '../support/cli.ts';

const mode = (p: string): number => statSync(p).mode & 0o777;

test('a new SQLite database, its WAL and shared-memory files are 0600 in a 0700 folder', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'solid-modes-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const previous = process.umask(0o022);
  t.after(() => process.umask(previous));
  const path = join(root, 'data', 'nested', 'solid.db');
  const store = new SqliteStore({ path });
  await store.write(async (tx) => {
    await tx.run('CREATE TABLE t (x INTEGER)');
    await tx.run('INSERT INTO t (x) VALUES (1)');
  });
  try {
    assert.equal(mode(path).toString(8), '600');
    for (const side of ['-wal', '-shm'])
      if (existsSync(path + side)) assert.equal(mode(path + side).toString(8), '600', side);
    assert.equal(mode(join(root, 'data')).toString(8), '700');
    assert.equal(mode(join(root, 'data', 'nested')).toString(8), '700');
  } finally {
    await store.close();
  }
});

test('solid init: the database and the key file beside it are private', async (t) => {
  const cli = cliHarness(t);
  const r = await cli.run(['init', '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(mode(cli.db).toString(8), '600');
  const keys = `${cli.db}.keys.json`;
  assert.ok(existsSync(keys), keys);
  assert.equal(mode(keys).toString(8), '600');
});
