/**
 * `solid backup` / `solid restore` on real database files (issue 30 row 10): a backup of a live
 * database holds every receipt handed out before it began (a `cp` of the main file does not: the
 * commits still in the -wal), it verifies (chain, checkpoints, receipts) before it is published,
 * a restore refuses a database in use and a backup that does not verify, names the tenants it
 * rolls back, and leaves a database `solid audit verify` accepts. Spec: spec/audit.md §backup.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import type { TestRuntime } from '../support/runtime.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import type { Io } from '../../src/transports/cli/output.ts';
import type { Envelope, Receipt } from '../../src/spec/types.ts';
import type { TestContext } from 'node:test';

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (s) => out.push(s), err: (s) => err.push(s), isTTY: false };
  const code = await runCli(args, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** A SQLite runtime with `n` consented writes on the main tenant; the receipts handed out. */
async function withWrites(t: TestContext, n: number): Promise<{ h: TestRuntime; receipts: Receipt[] }> {
  const h = await counterRuntime(t, { engine: 'sqlite' });
  const receipts: Receipt[] = [];
  for (let i = 0; i < n; i++) receipts.push(await write(h, i));
  return { h, receipts };
}

async function write(h: TestRuntime, i: number): Promise<Receipt> {
  const env: Envelope = await consented(h, h.keys.employee, 'counter.add', { name: `c${i % 3}`, by: 1 });
  assert.equal(env.ok, true, JSON.stringify(env.error));
  return env.result as Receipt;
}

/** The audit rows (seq, row_hash) a database file holds for these receipts' audit_ids. */
function rowsOf(
  path: string,
  receipts: readonly Receipt[],
): Array<{ seq: number; row_hash: string } | undefined> {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    // A copy taken before the first WAL checkpoint may not even hold the table.
    if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'audit_log'").get() === undefined)
      return receipts.map(() => undefined);
    const q = db.prepare('SELECT seq, row_hash FROM audit_log WHERE audit_id = ?');
    return receipts.map((r) => q.get(r.audit_id) as { seq: number; row_hash: string } | undefined);
  } finally {
    db.close();
  }
}

describe('solid backup', () => {
  it('copies a live database with every receipt handed out, verified; cp of the file misses them', async (t) => {
    const { h, receipts } = await withWrites(t, 12);
    // The runtime is still open: the last commits live in the -wal file.
    assert.ok(existsSync(`${h.dbPath}-wal`));
    const copied = join(h.dir, 'cp.db');
    copyFileSync(h.dbPath, copied);
    const inCp = rowsOf(copied, receipts).filter((r) => r !== undefined).length;

    const file = join(h.dir, 'backup.db');
    const res = await cli(['--db', h.dbPath, 'backup', file, '--json']);
    assert.equal(res.code, 0, res.err + res.out);
    const out = JSON.parse(res.out) as { ok: boolean; report: { ok: boolean; receipts_checked: number } };
    assert.equal(out.ok, true);
    assert.equal(out.report.ok, true);
    assert.ok(out.report.receipts_checked >= receipts.length);
    const rows = rowsOf(file, receipts);
    for (const [i, r] of receipts.entries()) {
      assert.equal(rows[i]?.seq, r.attestation!.seq, `receipt ${i} is in the backup`);
      assert.equal(rows[i]?.row_hash, r.attestation!.row_hash);
    }
    assert.ok(inCp < receipts.length, `cp of the live file missed receipts (${inCp}/${receipts.length})`);
    assert.equal(existsSync(`${file}-wal`), false, 'one self-contained file');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    // The running runtime was not disturbed.
    await write(h, 99);
    // The backup verifies on its own too.
    const verify = await cli(['--db', file, 'audit', 'verify']);
    assert.equal(verify.code, 0, verify.err);
  });

  it('refuses an existing file without --force, and PostgreSQL with the pg_dump hint', async (t) => {
    const { h } = await withWrites(t, 1);
    const file = join(h.dir, 'backup.db');
    assert.equal((await cli(['--db', h.dbPath, 'backup', file])).code, 0);
    const again = await cli(['--db', h.dbPath, 'backup', file]);
    assert.equal(again.code, 2);
    assert.match(again.err, /invalid_args: .*exists/);
    assert.match(again.err, /hint: .*--force/);
    assert.equal((await cli(['--db', h.dbPath, 'backup', file, '--force'])).code, 0);
    const pg = await cli(['--db', 'postgres://u@127.0.0.1:1/x', 'backup', join(h.dir, 'pg.db')]);
    assert.equal(pg.code, 2);
    assert.match(pg.err, /hint: .*pg_dump/);
  });

  it('publishes nothing when the copy does not verify (a receipt no longer matches its row)', async (t) => {
    const { h, receipts } = await withWrites(t, 3);
    await h.rt.close();
    const db = new Database(h.dbPath);
    const target = receipts[1]!;
    const stored = JSON.parse(
      (
        db.prepare('SELECT receipt FROM receipts WHERE audit_id = ?').get(target.audit_id) as {
          receipt: string;
        }
      ).receipt,
    ) as Receipt;
    stored.attestation!.row_hash = 'f'.repeat(64);
    db.prepare('UPDATE receipts SET receipt = ? WHERE audit_id = ?').run(
      JSON.stringify(stored),
      target.audit_id,
    );
    db.close();
    const file = join(h.dir, 'backup.db');
    const res = await cli(['--db', h.dbPath, 'backup', file]);
    assert.equal(res.code, 1, res.out + res.err);
    assert.match(res.err, /receipt_mismatch/);
    assert.equal(existsSync(file), false, 'no file published');
    // audit verify names the same finding on the database itself.
    const verify = await cli(['--db', h.dbPath, 'audit', 'verify', '--json']);
    assert.equal(verify.code, 1);
    assert.match(verify.out, /"receipt_mismatch"/);
  });
});

describe('solid restore', () => {
  it('refuses a database in use, restores with --force, and names the rollback', async (t) => {
    const { h, receipts } = await withWrites(t, 4);
    const file = join(h.dir, 'backup.db');
    assert.equal((await cli(['--db', h.dbPath, 'backup', file])).code, 0);
    const later = await write(h, 5); // after the backup

    const busy = await cli(['--db', h.dbPath, 'restore', file]);
    assert.equal(busy.code, 2, busy.err);
    assert.match(busy.err, /open in another process/);
    assert.match(busy.err, /hint: .*--force/);
    assert.notEqual(rowsOf(h.dbPath, [later])[0], undefined, 'nothing was restored');

    await h.rt.close();
    const res = await cli(['--db', h.dbPath, 'restore', file]);
    assert.equal(res.code, 0, res.err);
    assert.match(res.err, new RegExp(`tenant ${h.companyId}: .*rolls back`));
    assert.equal(rowsOf(h.dbPath, [later])[0], undefined, 'the later write is gone');
    for (const r of rowsOf(h.dbPath, receipts)) assert.notEqual(r, undefined);
    assert.equal((await cli(['--db', h.dbPath, 'audit', 'verify'])).code, 0);
  });

  it('restores into a database held open with --force', async (t) => {
    const { h, receipts } = await withWrites(t, 2);
    const file = join(h.dir, 'backup.db');
    assert.equal((await cli(['--db', h.dbPath, 'backup', file])).code, 0);
    await write(h, 3);
    const res = await cli(['--db', h.dbPath, 'restore', file, '--force', '--json']);
    assert.equal(res.code, 0, res.err);
    const out = JSON.parse(res.out) as { ok: boolean; rolled_back: Array<{ company_id: number }> };
    assert.equal(out.ok, true);
    assert.deepEqual(
      out.rolled_back.map((b) => b.company_id),
      [h.companyId],
    );
    for (const r of rowsOf(h.dbPath, receipts)) assert.notEqual(r, undefined);
  });

  it('refuses a backup that does not verify and leaves the database as it was', async (t) => {
    const { h } = await withWrites(t, 3);
    await h.rt.close();
    const file = join(h.dir, 'backup.db');
    assert.equal((await cli(['--db', h.dbPath, 'backup', file])).code, 0);
    const db = new Database(file);
    db.exec('DROP TRIGGER audit_log_no_update');
    db.prepare("UPDATE audit_log SET action_type = 'forged' WHERE seq = 2 AND company_id = ?").run(
      h.companyId,
    );
    db.close();
    const before = statSync(h.dbPath).mtimeMs;
    const res = await cli(['--db', h.dbPath, 'restore', file]);
    assert.equal(res.code, 1);
    assert.match(res.err, /modified/);
    assert.match(res.err, /was not touched/);
    assert.equal(statSync(h.dbPath).mtimeMs, before);
  });

  it('restores into a new path (a lost database)', async (t) => {
    const { h, receipts } = await withWrites(t, 3);
    const file = join(h.dir, 'backup.db');
    assert.equal((await cli(['--db', h.dbPath, 'backup', file])).code, 0);
    const fresh = join(h.dir, 'new', 'solid.db');
    const res = await cli(['--db', fresh, 'restore', file]);
    assert.equal(res.code, 0, res.err);
    assert.equal(statSync(fresh).mode & 0o777, 0o600);
    for (const r of rowsOf(fresh, receipts)) assert.notEqual(r, undefined);
    assert.match(res.err, /no keyfile/);
  });
});
