/**
 * Several processes opening one SQLite file at once (two `solid serve` on one database, or
 * `serve` beside `solid mcp`) each run the migrations: exactly one applies each version and the
 * others see it applied, none fails with "table already exists" (spec/store.md, `migrate`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

const WORKER = fileURLToPath(new URL('./fixtures/migrate-worker.ts', import.meta.url));

function worker(db: string, barrier: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', WORKER, db, barrier], (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : ((err as { code?: number }).code ?? 1), out: stdout + stderr }),
    );
  });
}

test('processes migrating one SQLite file at the same time all succeed, each version once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'solid-migrate-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (let round = 0; round < 3; round++) {
    const db = join(dir, `r${round}.db`);
    const barrier = join(dir, `go${round}`);
    const runs = Array.from({ length: 5 }, () => worker(db, barrier));
    // Every worker polls for the barrier after opening the file; give them time to get there.
    await new Promise((r) => setTimeout(r, 2500));
    writeFileSync(barrier, '');
    const results = await Promise.all(runs);
    for (const r of results) assert.equal(r.code, 0, r.out);
    const check = new Database(db, { readonly: true });
    const rows = check
      .prepare("SELECT version, count(*) AS n FROM schema_migrations WHERE scope = 'many' GROUP BY version")
      .all() as { version: number; n: number }[];
    check.close();
    assert.equal(rows.length, 30);
    assert.ok(rows.every((r) => r.n === 1));
  }
});
