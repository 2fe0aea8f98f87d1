/**
 * The tamper-evident audit log against an adversarial store: the SQLite file opened directly,
 * append-only triggers dropped on that raw connection, then a row edited, a row deleted, the tail
 * truncated, the whole chain re-hashed consistently without the signing key, checkpoints forged.
 * Every one is detected by the library verifier and by `solid audit verify` (exit ≠ 0, finding
 * named). The engine itself refuses UPDATE/DELETE on audit_log. Spec: spec/audit.md §verify.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createPrivateKey, sign as nodeSign } from 'node:crypto';
import { generateP256Jwk } from '../../src/runtime/ledger/keys/keygen.ts';
import Database from 'better-sqlite3';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import type { TestRuntime } from '../support/runtime.ts';
import {
  verifyAuditChain,
  verifyStoreChain,
  storedRowHash,
  type AuditVerifyReport,
  type AuditFindingKind,
} from '../../src/runtime/ledger/verify/verify.ts';
import { verifyDatabaseFile } from '../../src/runtime/ledger/verify/verify-file.ts';
import { AUDIT_COLUMNS, hashAuditRow, toAuditRow } from '../../src/runtime/ledger/write/audit.ts';
import { checkpointMaterial } from '../../src/runtime/ledger/keys/checkpoints.ts';
import { StoreError } from '../../src/store/store.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import type { Io } from '../../src/transports/cli/output.ts';
import type { TestContext } from 'node:test';
import { spareBitTwin } from '../support/base64url.ts';
import { dispatchAs } from '../support/keyed.ts';

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (s) => out.push(s), err: (s) => err.push(s), isTTY: false };
  const code = await runCli(args, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/**
 * Verify with one thread and with worker threads over tiny chunks (so chunk boundaries fall
 * everywhere): both walks must report the same findings. Returns the sequential report.
 */
async function verifyBoth(
  path: string,
  options: Parameters<typeof verifyDatabaseFile>[1] = {},
): Promise<AuditVerifyReport> {
  const one = await verifyDatabaseFile(path, { ...options, parallelMinRows: Number.POSITIVE_INFINITY });
  const many = await verifyDatabaseFile(path, { ...options, parallelMinRows: 0, workers: 2, chunkRows: 3 });
  assert.deepEqual(many.warnings, one.warnings, 'the parallel walk ran');
  const shape = (r: AuditVerifyReport) =>
    r.tenants.map((x) => ({ ...x, findings: x.findings.map((f) => [f.kind, f.seq]) }));
  assert.deepEqual(shape(many), shape(one));
  return one;
}

/** A closed database with writes, denials and reads on two tenants and signed checkpoints. */
async function populated(t: TestContext): Promise<TestRuntime> {
  const h = await counterRuntime(t, { engine: 'sqlite' }); // opens the SQLite file itself
  for (let i = 0; i < 6; i++)
    await consented(h, h.keys.employee, 'counter.add', { name: `c${i % 2}`, by: i + 1 });
  await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.read_only }, 'counter.add', { name: 'x', by: 1 }); // denied
  await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.employee }, 'counter.get', { name: 'c0' }); // read
  await h.rt.checkpoints.checkpointAll();
  for (let i = 0; i < 3; i++) await consented(h, h.keys.employee, 'counter.add', { name: 'late', by: 1 });
  await consented(h, h.otherOwnerKey, 'counter.add', { name: 'o', by: 1 });
  await h.rt.close(); // flushes reads and signs a closing checkpoint per tenant
  return h;
}

/** Open the file directly and drop the append-only triggers: the attacker's connection. */
function attacker(h: TestRuntime): Database.Database {
  const db = new Database(h.dbPath);
  db.exec('DROP TRIGGER audit_log_no_update; DROP TRIGGER audit_log_no_delete;');
  return db;
}

/**
 * The thorough attacker also removes the tenant's stored receipts, which would otherwise contradict
 * the rewrite (receipt_mismatch): the tests using it are about what the chain itself proves.
 */
function dropReceipts(db: Database.Database, companyId: number): void {
  db.prepare('DELETE FROM receipts WHERE company_id = ?').run(companyId);
}

function kinds(report: AuditVerifyReport, companyId: number): AuditFindingKind[] {
  return report.tenants.find((x) => x.company_id === companyId)?.findings.map((f) => f.kind) ?? [];
}

async function cliFindings(
  h: TestRuntime,
  extra: string[] = [],
): Promise<{ code: number; report: AuditVerifyReport; text: string }> {
  const json = await cli(['--db', h.dbPath, 'audit', 'verify', '--json', ...extra]);
  const text = await cli(['--db', h.dbPath, 'audit', 'verify', ...extra]);
  assert.equal(json.code, text.code);
  return { code: json.code, report: JSON.parse(json.out) as AuditVerifyReport, text: text.out + text.err };
}

function maxSeq(db: Database.Database, companyId: number): number {
  return Number(
    (db.prepare('SELECT MAX(seq) AS m FROM audit_log WHERE company_id = ?').get(companyId) as { m: number })
      .m,
  );
}

/** Recompute every hash and link of a tenant's chain from its rows (what an attacker can do without the key). */
function rehash(db: Database.Database, companyId: number): void {
  const rows = db
    .prepare(`SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log WHERE company_id = ? ORDER BY seq`)
    .all(companyId) as Array<Record<string, unknown>>;
  let prev = '0'.repeat(64);
  const upd = db.prepare('UPDATE audit_log SET prev_hash = ?, row_hash = ? WHERE audit_id = ?');
  for (const raw of rows) {
    const row = toAuditRow({ ...raw, prev_hash: prev });
    const h = hashAuditRow(row);
    upd.run(prev, h, row.audit_id);
    prev = h;
  }
  db.prepare('UPDATE tenant_heads SET audit_seq = ?, audit_hash = ? WHERE company_id = ?').run(
    rows.length > 0 ? Number(rows[rows.length - 1]!.seq) : 0,
    prev,
    companyId,
  );
}

describe('audit chain verification', () => {
  it('an untouched log verifies: every tenant ok, checkpoints checked, CLI exit 0', async (t) => {
    const h = await populated(t);
    const report = await verifyBoth(h.dbPath);
    assert.equal(report.ok, true, JSON.stringify(report.tenants.flatMap((x) => x.findings)));
    const main = report.tenants.find((x) => x.company_id === h.companyId)!;
    assert.ok(main.rows_checked >= 12, `rows ${main.rows_checked}`);
    assert.ok(main.checkpoints_checked >= 2);
    assert.equal(main.last_signed_seq, main.last_seq, 'the closing checkpoint signs the head');
    assert.match(
      report.warnings.join(' '),
      /same database/,
      'without --keys it says where the keys came from',
    );
    const run = await cliFindings(h);
    assert.equal(run.code, 0);
    assert.match(run.text, /✓ tenant 2/);
  });

  it('the verifier hashes stored rows exactly as the ledger hashed them when appending', async (t) => {
    const h = await populated(t);
    const db = new Database(h.dbPath, { readonly: true });
    const rows = db.prepare(`SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log`).all() as Array<
      Record<string, unknown>
    >;
    db.close();
    assert.ok(rows.length > 10);
    for (const raw of rows) {
      assert.equal(storedRowHash(raw), raw.row_hash);
      assert.equal(hashAuditRow(toAuditRow(raw)), raw.row_hash);
    }
  });

  it('hashes hostile strings exactly like the ledger: quotes, backslashes, control characters, emoji in names and keys', async (t) => {
    const h = await counterRuntime(t, { engine: 'sqlite' });
    await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.employee }, 'evil"\\name\n\u0001😀', {
      'k"\\': 'v\u0000😀',
    });
    await consented(
      h,
      h.keys.employee,
      'counter.add',
      { name: 'quote"back\\slash\ttab😀', by: 1 },
      { idempotency_key: 'key "with" \\ quotes' },
    );
    await h.rt.close();
    const report = await verifyBoth(h.dbPath);
    assert.equal(report.ok, true, JSON.stringify(report.tenants.flatMap((x) => x.findings)));
    const db = new Database(h.dbPath, { readonly: true });
    const rows = db.prepare(`SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log`).all() as Array<
      Record<string, unknown>
    >;
    db.close();
    assert.ok(
      rows.some((r) => String(r.action_type).includes('😀')),
      'the hostile name was audited',
    );
    for (const raw of rows) assert.equal(storedRowHash(raw), raw.row_hash);
  });

  it('verifies rows as PostgreSQL returns them (BIGINT as strings, request_data parsed) through the library', async (t) => {
    const h = await populated(t);
    const db = new Database(h.dbPath, { readonly: true });
    const rows = (
      db.prepare(`SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log ORDER BY company_id, seq`).all() as Array<
        Record<string, unknown>
      >
    ).map((r) => ({
      ...r,
      audit_id: String(r.audit_id),
      company_id: String(r.company_id),
      seq: String(r.seq),
      user_id: r.user_id === null ? null : String(r.user_id),
      request_data: JSON.parse(r.request_data as string) as unknown,
    }));
    const checkpoints = db.prepare('SELECT * FROM audit_checkpoints').all() as Array<{
      company_id: number;
      seq: number;
      head_hash: string;
      created_at: string;
      kid: string;
      signature: string;
    }>;
    const keys = (
      db.prepare('SELECT public_jwk FROM tenant_keys').all() as Array<{ public_jwk: string }>
    ).map((k) => JSON.parse(k.public_jwk));
    db.close();
    const report = verifyAuditChain(rows, checkpoints, keys);
    assert.equal(report.ok, true, JSON.stringify(report.tenants.flatMap((x) => x.findings)));
    rows[3]!.request_data = { tampered: true };
    assert.deepEqual(
      verifyAuditChain(rows, checkpoints, keys).tenants.flatMap((x) => x.findings.map((f) => f.kind)),
      ['modified'],
    );
  });

  it('verifies through any Store (the engine under test, paged) and catches a row edited there', async (t) => {
    const h = await counterRuntime(t);
    for (let i = 0; i < 5; i++) await consented(h, h.keys.employee, 'counter.add', { name: 'p', by: i });
    await consented(h, h.otherOwnerKey, 'counter.add', { name: 'p', by: 1 });
    await h.rt.checkpoints.checkpointAll();
    const ok = await verifyStoreChain(h.rt.store, { pageRows: 4 });
    assert.equal(ok.ok, true, JSON.stringify(ok.tenants.flatMap((x) => x.findings)));
    assert.ok(ok.tenants.find((x) => x.company_id === h.companyId)!.rows_checked >= 10);
    await h.rt.store.write(async (tx) => {
      if (h.rt.store.engine === 'sqlite') await tx.run('DROP TRIGGER audit_log_no_update');
      else await tx.run('ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update');
      await tx.run(`UPDATE audit_log SET reason = 'edited' WHERE company_id = ? AND seq = 2`, [h.companyId]);
    });
    const bad = await verifyStoreChain(h.rt.store, { pageRows: 4 });
    assert.deepEqual(
      bad.tenants.find((x) => x.company_id === h.companyId)!.findings.map((f) => [f.kind, f.seq]),
      [['modified', 2]],
    );
    assert.equal(bad.tenants.find((x) => x.company_id === h.otherCompanyId)!.ok, true);
  });

  it('the engine refuses UPDATE and DELETE on audit_log (StoreError append_only), also on a raw connection', async (t) => {
    const h = await counterRuntime(t, { engine: 'sqlite' }); // opens the SQLite file itself
    await consented(h, h.keys.employee, 'counter.add', { name: 'a', by: 1 });
    for (const sql of [`UPDATE audit_log SET status = 'denied'`, 'DELETE FROM audit_log']) {
      await assert.rejects(
        h.rt.store.write((tx) => tx.run(sql)),
        (err: unknown) => err instanceof StoreError && err.code === 'append_only',
        sql,
      );
    }
    const raw = new Database(h.dbPath);
    t.after(() => raw.close());
    assert.throws(() => raw.prepare(`UPDATE audit_log SET reason = 'x'`).run(), /append-only/);
    assert.throws(() => raw.prepare('DELETE FROM audit_log').run(), /append-only/);
  });

  it('detects an edited row (modified), by the library and by solid audit verify', async (t) => {
    const h = await populated(t);
    const db = attacker(h);
    const target = db
      .prepare(`SELECT audit_id, seq FROM audit_log WHERE company_id = ? AND status = 'denied'`)
      .get(h.companyId) as { audit_id: number; seq: number };
    db.prepare(`UPDATE audit_log SET status = 'completed', reason = NULL WHERE audit_id = ?`).run(
      target.audit_id,
    ); // hide a denial
    db.close();
    const report = await verifyBoth(h.dbPath);
    assert.equal(report.ok, false);
    const f = report.tenants.find((x) => x.company_id === h.companyId)!.findings;
    assert.deepEqual(
      f.map((x) => [x.kind, x.seq, x.audit_id]),
      [['modified', target.seq, target.audit_id]],
    );
    assert.deepEqual(kinds(report, h.otherCompanyId), [], 'the other tenant is untouched');
    const run = await cliFindings(h);
    assert.notEqual(run.code, 0);
    assert.deepEqual(kinds(run.report, h.companyId), ['modified']);
    assert.match(run.text, /modified\s+seq \d+ \(audit_id \d+\)/);
  });

  it('detects numeric columns rewritten as text that a lax reading takes for the same value (0x2 for 2, words or Infinity for NULL)', async (t) => {
    const h = await populated(t);
    const db = attacker(h);
    const rows = db
      .prepare(
        `SELECT audit_id, seq, user_id FROM audit_log WHERE company_id = ? AND user_id IS NOT NULL ORDER BY seq LIMIT 3`,
      )
      .all(h.companyId) as Array<{ audit_id: number; seq: number; user_id: number }>;
    const before = (
      db
        .prepare('SELECT COUNT(*) AS n FROM audit_log WHERE company_id = ? AND user_id = ?')
        .get(h.companyId, rows[0]!.user_id) as { n: number }
    ).n;
    // hide a row from the actor's trail: SQLite keeps '0x…' as TEXT, so user_id = N no longer finds it
    db.prepare(`UPDATE audit_log SET user_id = ? WHERE audit_id = ?`).run(
      `0x${rows[0]!.user_id.toString(16)}`,
      rows[0]!.audit_id,
    );
    // claim an approval that never happened, where approved_by was NULL
    db.prepare(`UPDATE audit_log SET approved_by = 'user 99 (CFO)' WHERE audit_id = ?`).run(
      rows[1]!.audit_id,
    );
    db.prepare(`UPDATE audit_log SET parent_id = 9e999 WHERE audit_id = ?`).run(rows[2]!.audit_id);
    const after = (
      db
        .prepare('SELECT COUNT(*) AS n FROM audit_log WHERE company_id = ? AND user_id = ?')
        .get(h.companyId, rows[0]!.user_id) as { n: number }
    ).n;
    db.close();
    assert.equal(after, before - 1, 'the edit really hides the row from SQL');
    const report = await verifyBoth(h.dbPath);
    const f = report.tenants.find((x) => x.company_id === h.companyId)!.findings;
    assert.deepEqual(
      f.map((x) => [x.kind, x.audit_id]),
      rows.map((r) => ['modified', r.audit_id]),
    );
  });

  it('detects columns rewritten as BLOBs of the same bytes, and a BLOB does not stop the walk', async (t) => {
    const h = await populated(t);
    const db = attacker(h);
    const rows = db
      .prepare(`SELECT audit_id FROM audit_log WHERE company_id = ? ORDER BY seq LIMIT 3`)
      .all(h.companyId) as Array<{ audit_id: number }>;
    db.prepare(`UPDATE audit_log SET role = CAST(role AS BLOB) WHERE audit_id = ?`).run(rows[0]!.audit_id);
    db.prepare(`UPDATE audit_log SET request_data = CAST(request_data AS BLOB) WHERE audit_id = ?`).run(
      rows[1]!.audit_id,
    );
    db.prepare(`UPDATE audit_log SET user_id = CAST(CAST(user_id AS TEXT) AS BLOB) WHERE audit_id = ?`).run(
      rows[2]!.audit_id,
    );
    db.close();
    const report = await verifyBoth(h.dbPath);
    const f = report.tenants.find((x) => x.company_id === h.companyId)!.findings;
    assert.deepEqual(
      f.map((x) => [x.kind, x.audit_id]),
      rows.map((r) => ['modified', r.audit_id]),
    );
    assert.deepEqual(kinds(report, h.otherCompanyId), [], 'the walk went on to the other tenant');
    const run = await cliFindings(h);
    assert.deepEqual(kinds(run.report, h.companyId), ['modified', 'modified', 'modified']);
  });

  it('detects rows appended by hand with a seq stored as text (self-hashed, linked to the head): serial, parallel, paged store walk and CLI agree', async (t) => {
    const h = await populated(t);
    const db = attacker(h);
    const last = db
      .prepare(
        `SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log WHERE company_id = ? ORDER BY seq DESC LIMIT 1`,
      )
      .get(h.companyId) as Record<string, unknown>;
    let prev = last.row_hash as string;
    for (const [i, seq] of ['x', '0x10'].entries()) {
      const forged: Record<string, unknown> = {
        ...last,
        audit_id: 900_000 + i,
        seq,
        action_type: 'counter.charge',
        request_data: `{"cents":${999_999 + i},"name":"c"}`,
        prev_hash: prev,
      };
      forged.row_hash = storedRowHash(forged);
      prev = forged.row_hash as string;
      db.prepare(
        `INSERT INTO audit_log (${AUDIT_COLUMNS.join(', ')}) VALUES (${AUDIT_COLUMNS.map(() => '?').join(', ')})`,
      ).run(...AUDIT_COLUMNS.map((c) => forged[c]));
    }
    db.close();
    const report = await verifyBoth(h.dbPath);
    assert.equal(report.ok, false);
    const f = report.tenants.find((x) => x.company_id === h.companyId)!.findings;
    assert.deepEqual(
      f.map((x) => x.kind),
      ['modified', 'modified'],
      JSON.stringify(f),
    );
    assert.deepEqual(kinds(report, h.otherCompanyId), [], 'the other tenant is still walked, and clean');
    const store = new SqliteStore({ path: h.dbPath });
    t.after(() => store.close());
    const paged = await verifyStoreChain(store, { pageRows: 2 });
    assert.deepEqual(kinds(paged, h.companyId), ['modified', 'modified']);
    assert.deepEqual(kinds(paged, h.otherCompanyId), [], 'paging went on past the text seq');
    assert.equal(
      paged.tenants.find((x) => x.company_id === h.otherCompanyId)!.rows_checked,
      report.tenants.find((x) => x.company_id === h.otherCompanyId)!.rows_checked,
    );
    const run = await cliFindings(h);
    assert.notEqual(run.code, 0);
  });

  it('detects an edited row whose own hash was recomputed (chain_break at the next row, and the checkpoint)', async (t) => {
    const h = await populated(t);
    const db = attacker(h);
    const row = db
      .prepare(`SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log WHERE company_id = ? AND seq = 3`)
      .get(h.companyId) as Record<string, unknown>;
    const edited = toAuditRow({ ...row, request_data: JSON.stringify({ name: 'c0', by: 999 }) });
    db.prepare('UPDATE audit_log SET request_data = ?, row_hash = ? WHERE audit_id = ?').run(
      JSON.stringify({ by: 999, name: 'c0' }),
      hashAuditRow(edited),
      edited.audit_id,
    );
    db.close();
    const report = await verifyBoth(h.dbPath);
    const k = kinds(report, h.companyId);
    assert.ok(k.includes('chain_break'), k.join(','));
    const run = await cliFindings(h);
    assert.notEqual(run.code, 0);
    assert.ok(kinds(run.report, h.companyId).includes('chain_break'));
  });

  it('detects a deleted row (gap)', async (t) => {
    const h = await populated(t);
    const db = attacker(h);
    db.prepare('DELETE FROM audit_log WHERE company_id = ? AND seq = 4').run(h.companyId);
    dropReceipts(db, h.companyId);
    db.close();
    const report = await verifyBoth(h.dbPath);
    const f = report.tenants.find((x) => x.company_id === h.companyId)!.findings;
    assert.deepEqual(
      f.map((x) => [x.kind, x.seq, x.missing]),
      [['gap', 4, 1]],
    );
    const run = await cliFindings(h);
    assert.notEqual(run.code, 0);
    assert.deepEqual(kinds(run.report, h.companyId), ['gap']);
    assert.match(run.text, /gap/);
  });

  it('detects rows deleted or rewritten under their stored receipts (receipt_mismatch)', async (t) => {
    const h = await populated(t);
    const db = attacker(h);
    const [gone, edited] = db
      .prepare('SELECT audit_id FROM receipts WHERE company_id = ? ORDER BY audit_id LIMIT 2')
      .all(h.companyId) as Array<{ audit_id: number }>;
    db.prepare('DELETE FROM audit_log WHERE audit_id = ?').run(gone!.audit_id);
    db.prepare('UPDATE audit_log SET row_hash = ? WHERE audit_id = ?').run('e'.repeat(64), edited!.audit_id);
    db.close();
    const report = await verifyBoth(h.dbPath);
    const f = report.tenants.find((x) => x.company_id === h.companyId)!.findings;
    assert.deepEqual(
      f.filter((x) => x.kind === 'receipt_mismatch').map((x) => x.audit_id),
      [gone!.audit_id, edited!.audit_id],
    );
    assert.ok(report.receipts_checked! >= 2);
    const store = new SqliteStore({ path: h.dbPath });
    t.after(() => store.close());
    const viaStore = await verifyStoreChain(store);
    assert.equal(
      viaStore.tenants
        .find((x) => x.company_id === h.companyId)!
        .findings.filter((x) => x.kind === 'receipt_mismatch').length,
      2,
    );
  });

  it('detects a truncated tail (truncated: the head and the signed checkpoint lie beyond the last row)', async (t) => {
    const h = await populated(t);
    const db = attacker(h);
    const last = maxSeq(db, h.companyId);
    db.prepare('DELETE FROM audit_log WHERE company_id = ? AND seq > ?').run(h.companyId, last - 3);
    dropReceipts(db, h.companyId);
    db.close();
    const report = await verifyBoth(h.dbPath);
    const k = kinds(report, h.companyId);
    assert.ok(k.length >= 1 && k.every((x) => x === 'truncated'), k.join(','));
    const run = await cliFindings(h);
    assert.notEqual(run.code, 0);
    assert.ok(kinds(run.report, h.companyId).includes('truncated'));
  });

  it('detects a truncated tail whose head and checkpoints were also cleaned up, against keys and checkpoints exported earlier', async (t) => {
    const h = await populated(t);
    const keysFile = join(h.dir, 'trusted.json');
    assert.equal((await cli(['--db', h.dbPath, 'audit', 'export-keys', '--out', keysFile])).code, 0);
    const db = attacker(h);
    const last = maxSeq(db, h.companyId);
    db.prepare('DELETE FROM audit_log WHERE company_id = ? AND seq > ?').run(h.companyId, last - 2);
    db.prepare('DELETE FROM audit_checkpoints WHERE company_id = ? AND seq > ?').run(h.companyId, last - 2);
    const newLast = db
      .prepare('SELECT seq, row_hash FROM audit_log WHERE company_id = ? ORDER BY seq DESC LIMIT 1')
      .get(h.companyId) as { seq: number; row_hash: string };
    db.prepare('UPDATE tenant_heads SET audit_seq = ?, audit_hash = ? WHERE company_id = ?').run(
      newLast.seq,
      newLast.row_hash,
      h.companyId,
    );
    dropReceipts(db, h.companyId);
    db.close();
    const run = await cliFindings(h, ['--keys', keysFile]);
    assert.notEqual(run.code, 0);
    assert.deepEqual(kinds(run.report, h.companyId), ['truncated']);
    assert.ok(
      !run.report.warnings.some((w) => /No trusted keys/.test(w)),
      'trusted keys: no same-store warning',
    );
    assert.ok(
      run.report.warnings.some((w) => /append-only triggers/.test(w)),
      'the dropped triggers are named',
    );
  });

  it('detects the whole chain re-hashed consistently without the signing key (bad_signature at the checkpoints)', async (t) => {
    const h = await populated(t);
    const db = attacker(h);
    const denied = db
      .prepare(`SELECT audit_id FROM audit_log WHERE company_id = ? AND status = 'denied'`)
      .get(h.companyId) as { audit_id: number };
    db.prepare('DELETE FROM audit_log WHERE audit_id = ?').run(denied.audit_id); // erase the denial…
    db.prepare('UPDATE audit_log SET seq = seq - 1 WHERE company_id = ? AND audit_id > ?').run(
      h.companyId,
      denied.audit_id,
    ); // …renumber…
    rehash(db, h.companyId); // …and make every hash and link consistent again
    db.close();
    const report = await verifyBoth(h.dbPath);
    const k = kinds(report, h.companyId);
    assert.ok(k.includes('bad_signature'), k.join(','));
    assert.ok(
      !k.includes('modified') && !k.includes('chain_break') && !k.includes('gap'),
      'the chain itself is consistent: only the signatures catch it',
    );
    const run = await cliFindings(h);
    assert.notEqual(run.code, 0);
    assert.ok(kinds(run.report, h.companyId).includes('bad_signature'));
    assert.match(run.text, /bad_signature/);
  });

  it('detects a chain rewritten with its checkpoints deleted (unsigned_tail), while a crash-sized unsigned tail is only counted', async (t) => {
    let now = Date.parse('2026-01-05T09:00:00Z');
    const h = await counterRuntime(t, { engine: 'sqlite', clock: () => new Date(now) });
    for (let i = 0; i < 8; i++) {
      await consented(h, h.keys.employee, 'counter.add', { name: 'c', by: i + 1 });
      now += 90_000; // a working day's pace: 1.5 minutes between writes, 10.5 minutes in all
    }
    await h.rt.close(); // signs a closing checkpoint
    const honest = await verifyBoth(h.dbPath);
    assert.equal(honest.ok, true, JSON.stringify(honest.tenants));
    assert.ok(!honest.warnings.some((w) => /append-only/.test(w)), honest.warnings.join('\n'));
    // The attacker edits a write's arguments, re-hashes the chain and deletes the checkpoints
    // that would expose it (bad_signature): no secret needed, only write access to the file.
    const db = attacker(h);
    const write = db
      .prepare(
        `SELECT audit_id FROM audit_log WHERE company_id = ? AND action_type = 'counter.add' AND status = 'completed' LIMIT 1`,
      )
      .get(h.companyId) as { audit_id: number };
    db.prepare(`UPDATE audit_log SET request_data = '{"by":500,"name":"c"}' WHERE audit_id = ?`).run(
      write.audit_id,
    );
    rehash(db, h.companyId);
    db.prepare('DELETE FROM audit_checkpoints WHERE company_id = ?').run(h.companyId);
    dropReceipts(db, h.companyId);
    db.close();
    const report = await verifyBoth(h.dbPath);
    const mine = report.tenants.find((x) => x.company_id === h.companyId)!;
    assert.deepEqual(kinds(report, h.companyId), ['unsigned_tail']);
    assert.ok(
      report.warnings.some((w) => /append-only triggers audit_log_no_update and audit_log_no_delete/.test(w)),
      `the dropped triggers are named: ${report.warnings.join('\n')}`,
    );
    assert.equal(mine.ok, false);
    assert.equal(mine.findings[0]!.seq, 1);
    assert.match(mine.findings[0]!.message, /no valid signed checkpoint/);
    const run = await cliFindings(h);
    assert.equal(run.code, 1, run.text);
    assert.match(run.text, /unsigned_tail/);
    // The same store walk through any Store agrees.
    const store = new SqliteStore({ path: h.dbPath });
    t.after(() => store.close());
    assert.deepEqual(
      (await verifyStoreChain(store)).tenants
        .find((x) => x.company_id === h.companyId)!
        .findings.map((f) => f.kind),
      ['unsigned_tail'],
    );
    // A limit the operator sets (their runtime signs less often) is honoured — the chain is then
    // still one without any checkpoint (no_checkpoint); Infinity turns both checks off.
    assert.deepEqual(kinds(await verifyDatabaseFile(h.dbPath, { maxUnsignedSeconds: 3600 }), h.companyId), [
      'no_checkpoint',
    ]);
    const off = await cli(['--db', h.dbPath, 'audit', 'verify', '--max-unsigned-seconds', 'Infinity']);
    assert.equal(off.code, 0, off.out + off.err);
    const bad = await cli(['--db', h.dbPath, 'audit', 'verify', '--max-unsigned-seconds', '-3']);
    assert.equal(bad.code, 2, bad.out + bad.err);
    assert.match(bad.err, /invalid_args/);
  });

  it('a crash, a downtime and a restart do not add up to one long unsigned tail: pauses over 120 s split it', async (t) => {
    let now = Date.parse('2026-01-05T09:00:00Z');
    const h = await counterRuntime(t, { engine: 'sqlite', clock: () => new Date(now) });
    for (let i = 0; i < 4; i++) {
      await consented(h, h.keys.employee, 'counter.add', { name: 'c', by: 1 });
      now += 10_000;
    }
    now += 3_600_000; // the server was down for an hour
    for (let i = 0; i < 4; i++) {
      await consented(h, h.keys.employee, 'counter.add', { name: 'c', by: 1 });
      now += 10_000;
    }
    await h.rt.close();
    const db = attacker(h);
    // As if it crashed twice, unsigned but for the checkpoint of the tenant's first row.
    db.prepare(
      'DELETE FROM audit_checkpoints WHERE company_id = ? AND seq > (SELECT MIN(seq) FROM audit_checkpoints WHERE company_id = ?)',
    ).run(h.companyId, h.companyId);
    db.close();
    const report = await verifyBoth(h.dbPath);
    assert.deepEqual(kinds(report, h.companyId), [], 'two short runs of activity, each as a crash leaves');
    const strict = await verifyDatabaseFile(h.dbPath, { maxUnsignedSeconds: 20 });
    assert.deepEqual(kinds(strict, h.companyId), ['unsigned_tail'], 'each run is still held to the limit');
    assert.match(
      strict.tenants.find((x) => x.company_id === h.companyId)!.findings[0]!.message,
      /without a pause of 120 s/,
    );
  });

  it('an unsigned tail as short as a crash leaves is counted, not a finding; a chain with no checkpoint at all is no_checkpoint', async (t) => {
    const h = await populated(t);
    const db = attacker(h);
    // A crash: every checkpoint after the one of the tenant's first row is missing.
    db.prepare(
      'DELETE FROM audit_checkpoints WHERE company_id = ? AND seq > (SELECT MIN(seq) FROM audit_checkpoints WHERE company_id = ?)',
    ).run(h.companyId, h.companyId);
    const crash = await verifyBoth(h.dbPath);
    const crashed = crash.tenants.find((x) => x.company_id === h.companyId)!;
    assert.equal(crashed.ok, true, JSON.stringify(crashed.findings));
    assert.ok(crashed.unsigned_rows > 0);
    // Deleting every checkpoint (and squeezing created_at into a minute) leaves a chain with no
    // signature at all: the runtime signs a tenant's first row at once, so that is a finding.
    db.prepare('DELETE FROM audit_checkpoints WHERE company_id = ?').run(h.companyId);
    db.close();
    const report = await verifyBoth(h.dbPath);
    const mine = report.tenants.find((x) => x.company_id === h.companyId)!;
    assert.equal(mine.last_signed_seq, null);
    assert.deepEqual(kinds(report, h.companyId), ['no_checkpoint']);
    assert.match(mine.findings[0]!.message, /no valid signed checkpoint/);
    const run = await cliFindings(h);
    assert.equal(run.code, 1, run.text);
    assert.match(run.text, /no_checkpoint/);
    const other = report.tenants.find((x) => x.company_id === h.otherCompanyId)!;
    assert.ok(other.ok && other.last_signed_seq !== null, 'the other tenant kept its checkpoints');
  });

  it('detects a re-hashed chain re-signed with a key of the attacker’s own, when verifying with keys exported earlier (unknown_key)', async (t) => {
    const h = await populated(t);
    const keysFile = join(h.dir, 'trusted.json');
    assert.equal((await cli(['--db', h.dbPath, 'audit', 'export-keys', '--out', keysFile])).code, 0);
    const db = attacker(h);
    db.prepare(`UPDATE audit_log SET reason = 'nothing to see' WHERE company_id = ? AND seq = 2`).run(
      h.companyId,
    );
    rehash(db, h.companyId);
    // Replace every checkpoint with one signed by a key the attacker made, and plant that key.
    const pair = generateP256Jwk();
    const privateKey = createPrivateKey({ key: pair.privateJwk, format: 'jwk' });
    const kid = 'k2-attacker';
    const jwk = { ...pair.publicJwk, kid, use: 'sig', alg: 'ES256' };
    db.prepare(
      `INSERT INTO tenant_keys (kid, company_id, state, public_jwk, private_enc, created_at) VALUES (?, ?, 'active', ?, 'x', ?)`,
    ).run(kid, h.companyId, JSON.stringify(jwk), new Date().toISOString());
    db.prepare('DELETE FROM audit_checkpoints WHERE company_id = ?').run(h.companyId);
    const head = db
      .prepare('SELECT audit_seq, audit_hash FROM tenant_heads WHERE company_id = ?')
      .get(h.companyId) as { audit_seq: number; audit_hash: string };
    const created_at = new Date().toISOString();
    const signature = nodeSign(
      'sha256',
      checkpointMaterial({
        company_id: h.companyId,
        seq: head.audit_seq,
        head_hash: head.audit_hash,
        created_at,
      }),
      { key: privateKey, dsaEncoding: 'ieee-p1363' },
    ).toString('base64url');
    db.prepare(
      'INSERT INTO audit_checkpoints (company_id, seq, head_hash, created_at, kid, signature) VALUES (?, ?, ?, ?, ?, ?)',
    ).run(h.companyId, head.audit_seq, head.audit_hash, created_at, kid, signature);
    db.close();
    // With the database's own keys the forgery is self-consistent: the warning is the honest answer.
    const selfCheck = await verifyBoth(h.dbPath, { tenant: h.companyId });
    assert.match(selfCheck.warnings.join(' '), /same database/);
    // With the keys (and checkpoints) exported before, it is caught.
    const run = await cliFindings(h, ['--keys', keysFile, '--tenant', String(h.companyId)]);
    assert.notEqual(run.code, 0);
    const k = kinds(run.report, h.companyId);
    assert.ok(k.includes('unknown_key'), k.join(','));
    assert.ok(k.includes('bad_signature'), 'the exported checkpoint no longer matches the rewritten row');
    assert.deepEqual(
      run.report.tenants.map((x) => x.company_id),
      [h.companyId],
      '--tenant limits the report',
    );
  });

  it('detects a checkpoint whose signature was altered (bad_signature)', async (t) => {
    const h = await populated(t);
    const db = new Database(h.dbPath);
    const cp = db
      .prepare('SELECT seq, signature FROM audit_checkpoints WHERE company_id = ? ORDER BY seq LIMIT 1')
      .get(h.companyId) as { seq: number; signature: string };
    const sig = Buffer.from(cp.signature, 'base64url');
    sig[10] = sig[10]! ^ 0xff;
    db.prepare('UPDATE audit_checkpoints SET signature = ? WHERE company_id = ? AND seq = ?').run(
      sig.toString('base64url'),
      h.companyId,
      cp.seq,
    );
    db.close();
    const report = await verifyBoth(h.dbPath);
    assert.deepEqual(kinds(report, h.companyId), ['bad_signature']);
    const run = await cliFindings(h);
    assert.notEqual(run.code, 0);
  });

  it('detects a checkpoint signature respelt with the same bytes (only the canonical base64url verifies)', async (t) => {
    const h = await populated(t);
    const db = new Database(h.dbPath);
    const cp = db
      .prepare('SELECT seq, signature FROM audit_checkpoints WHERE company_id = ? ORDER BY seq LIMIT 1')
      .get(h.companyId) as { seq: number; signature: string };
    const twin = spareBitTwin(cp.signature);
    assert.deepEqual(Buffer.from(twin, 'base64url'), Buffer.from(cp.signature, 'base64url'));
    db.prepare('UPDATE audit_checkpoints SET signature = ? WHERE company_id = ? AND seq = ?').run(
      twin,
      h.companyId,
      cp.seq,
    );
    db.close();
    assert.deepEqual(kinds(await verifyBoth(h.dbPath), h.companyId), ['bad_signature']);
  });

  it('a missing database answers store_unavailable with a hint, not a stack', async (t) => {
    const h = await counterRuntime(t, { engine: 'sqlite' }); // opens the SQLite file itself
    const run = await cli(['--db', join(h.dir, 'nope.db'), 'audit', 'verify']);
    assert.equal(run.code, 8);
    assert.match(run.err, /store_unavailable/);
  });
});
