/**
 * `solid audit verify` on read-only media (a write-protected copy handed to an auditor): SQLite
 * cannot open a WAL-mode database read-only where it may not create its -shm file, so the
 * verifier reads a private snapshot (database + WAL), reports that it did, and leaves nothing
 * behind. The copy's directory and files are made unwritable for an unprivileged user, so as root
 * the CLI runs as another account (`runuser`, e.g. the postgres user of the CI machine).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTestRuntime } from '../support/runtime.ts';
import { dispatchAs } from '../support/keyed.ts';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../bin/solid.js', import.meta.url));
const root = process.getuid?.() === 0;
const otherUser = root
  ? ['postgres', 'nobody'].find((u) => spawnSync('id', ['-u', u]).status === 0)
  : undefined;
const skip = root && otherUser === undefined ? 'running as root with no other account to drop to' : false;

describe('audit verify on read-only media', { skip }, () => {
  it('verifies a write-protected copy with its WAL, says so, and leaves no snapshot behind', async (t) => {
    const h = await createTestRuntime(t, { engine: 'sqlite' });
    for (let i = 0; i < 20; i++)
      await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.owner }, 'verbs.list', {});
    await h.rt.auditBuffer.flush();
    // The checkpoint of the tenant's first row is signed right after it commits: wait for it, so
    // the copy is not taken in the milliseconds before (no_checkpoint).
    await h.rt.checkpoints.checkpointAll();
    const expected = Number(
      (await h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM audit_log')))!.n,
    );
    assert.ok(expected >= 20);

    // The copy, taken while the runtime is open (its WAL holds committed rows), then write-protected.
    const dir = mkdtempSync(join(tmpdir(), 'solid-ro-'));
    t.after(() => {
      chmodSync(dir, 0o755);
      rmSync(dir, { recursive: true, force: true });
    });
    const copy = join(dir, 'audit.db');
    copyFileSync(h.dbPath, copy);
    assert.ok(existsSync(`${h.dbPath}-wal`) && statSync(`${h.dbPath}-wal`).size > 0, 'the runtime has a WAL');
    copyFileSync(`${h.dbPath}-wal`, `${copy}-wal`);
    for (const f of readdirSync(dir)) chmodSync(join(dir, f), 0o444);
    chmodSync(dir, 0o555);

    const snapshotsBefore = readdirSync(tmpdir()).filter((f) => f.startsWith('solid-audit-snapshot-')).length;
    const argv = [process.execPath, BIN, 'audit', 'verify', '--db', copy, '--json'];
    const { stdout } =
      otherUser !== undefined
        ? await run('runuser', ['-u', otherUser, '--', ...argv], { cwd: tmpdir() })
        : await run(argv[0]!, argv.slice(1), { cwd: tmpdir() });
    const report = JSON.parse(stdout) as { ok: boolean; rows_checked: number; warnings: string[] };
    assert.equal(report.ok, true);
    assert.equal(report.rows_checked, expected, 'the rows still in the WAL are verified too');
    assert.ok(
      report.warnings.some((w) => /read-only media/.test(w)),
      JSON.stringify(report.warnings),
    );
    assert.equal(
      readdirSync(tmpdir()).filter((f) => f.startsWith('solid-audit-snapshot-')).length,
      snapshotsBefore,
      'the snapshot is deleted',
    );
    assert.equal(statSync(dir).mode & 0o777, 0o555, 'the copy was not touched');
  });
});
