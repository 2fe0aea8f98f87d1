/**
 * Anchors outside the database (issue 30 row 11): signed checkpoint heads published to a directory
 * or an HTTP endpoint; `solid audit verify --anchors` catches a chain rewritten after its later
 * checkpoints were deleted (which the database alone cannot prove) and a rollback to an older
 * backup. Spec: spec/audit.md §anchors.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import { AUDIT_COLUMNS, hashAuditRow, toAuditRow } from '../../src/runtime/ledger/write/audit.ts';
import {
  AnchorPublisher,
  directorySink,
  httpSink,
  type AnchorDocument,
} from '../../src/runtime/ledger/keys/anchors.ts';
import { anchorOptionsOf } from '../../src/transports/cli/commands/serve-options.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import type { Io } from '../../src/transports/cli/output.ts';
import type { AuditVerifyReport } from '../../src/runtime/ledger/verify/verify.ts';
import type { TestContext } from 'node:test';
import type { TestRuntime } from '../support/runtime.ts';

const silent = pino({ level: 'silent' });

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (s) => out.push(s), err: (s) => err.push(s), isTTY: false };
  const code = await runCli(args, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function verify(
  h: TestRuntime,
  extra: string[] = [],
): Promise<{ code: number; report: AuditVerifyReport }> {
  const r = await cli(['--db', h.dbPath, 'audit', 'verify', '--json', ...extra]);
  return { code: r.code, report: JSON.parse(r.out) as AuditVerifyReport };
}

function kinds(report: AuditVerifyReport, companyId: number): string[] {
  return report.tenants.find((x) => x.company_id === companyId)?.findings.map((f) => f.kind) ?? [];
}

/** A runtime on a fake clock, with `n` writes 150 s apart (pauses the unsigned-tail check splits at). */
async function paced(t: TestContext, n: number): Promise<{ h: TestRuntime; tick: () => Date }> {
  let now = Date.parse('2026-03-02T09:00:00Z');
  const h = await counterRuntime(t, { engine: 'sqlite', clock: () => new Date(now) });
  for (let i = 0; i < n; i++) {
    await consented(h, h.keys.employee, 'counter.add', { name: 'c', by: i + 1 });
    now += 150_000;
  }
  return { h, tick: () => new Date(now) };
}

describe('anchors', () => {
  it('catch a chain rewritten after its later checkpoints were deleted, which audit verify alone passes', async (t) => {
    const { h } = await paced(t, 6);
    await h.rt.checkpoints.checkpointAll();
    const dir = join(h.dir, 'anchors');
    const publisher = new AnchorPublisher(h.rt.store, [directorySink(dir)], { logger: silent });
    await publisher.publishNow();
    await publisher.publishNow(); // nothing moved: not published twice
    assert.equal(readdirSync(dir).filter((f) => f.endsWith('.json')).length, 1);
    await h.rt.close();
    assert.equal((await verify(h, ['--anchors', dir])).code, 0, 'the honest log matches its anchors');

    // The attacker edits a write after the first checkpoint, re-hashes the chain, deletes the
    // checkpoints that would expose it and the receipts: no key needed, only the file.
    const db = new Database(h.dbPath);
    db.exec('DROP TRIGGER audit_log_no_update; DROP TRIGGER audit_log_no_delete;');
    const first = db
      .prepare('SELECT MIN(seq) AS s FROM audit_checkpoints WHERE company_id = ?')
      .get(h.companyId) as { s: number };
    const target = db
      .prepare(
        `SELECT audit_id FROM audit_log WHERE company_id = ? AND seq > ? AND action_type = 'counter.add' AND status = 'completed' ORDER BY seq DESC LIMIT 1`,
      )
      .get(h.companyId, first.s) as { audit_id: number };
    db.prepare(`UPDATE audit_log SET request_data = '{"by":900,"name":"c"}' WHERE audit_id = ?`).run(
      target.audit_id,
    );
    const rows = db
      .prepare(`SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log WHERE company_id = ? ORDER BY seq`)
      .all(h.companyId) as Array<Record<string, unknown>>;
    let prev = '0'.repeat(64);
    for (const raw of rows) {
      const row = toAuditRow({ ...raw, prev_hash: prev });
      const hash = hashAuditRow(row);
      db.prepare('UPDATE audit_log SET prev_hash = ?, row_hash = ? WHERE audit_id = ?').run(
        prev,
        hash,
        row.audit_id,
      );
      prev = hash;
    }
    db.prepare('UPDATE tenant_heads SET audit_hash = ? WHERE company_id = ?').run(prev, h.companyId);
    db.prepare('DELETE FROM audit_checkpoints WHERE company_id = ? AND seq > ?').run(h.companyId, first.s);
    db.prepare('DELETE FROM receipts WHERE company_id = ?').run(h.companyId);
    db.close();

    const alone = await verify(h);
    assert.equal(
      alone.code,
      0,
      `the database alone proves nothing wrong: ${JSON.stringify(alone.report.tenants)}`,
    );
    const anchored = await verify(h, ['--anchors', dir]);
    assert.equal(anchored.code, 1);
    assert.ok(
      kinds(anchored.report, h.companyId).includes('bad_signature'),
      kinds(anchored.report, h.companyId).join(),
    );
    assert.ok(anchored.report.warnings.some((w) => /anchor document/.test(w)));
  });

  it('name a restore older than the anchored head (rolled_back), in restore and in audit verify', async (t) => {
    const { h } = await paced(t, 3);
    const backup = join(h.dir, 'backup.db');
    assert.equal((await cli(['--db', h.dbPath, 'backup', backup])).code, 0);
    await consented(h, h.keys.employee, 'counter.add', { name: 'late', by: 1 });
    await h.rt.checkpoints.checkpointAll();
    const dir = join(h.dir, 'anchors');
    await new AnchorPublisher(h.rt.store, [directorySink(dir)], { logger: silent }).publishNow();
    await h.rt.close();

    const restore = await cli(['--db', h.dbPath, 'restore', backup, '--anchors', dir]);
    assert.equal(restore.code, 0, restore.err);
    assert.match(
      restore.err,
      new RegExp(`tenant ${h.companyId}: the backup ends at seq \\d+, older than the head anchored`),
    );
    assert.equal((await verify(h)).code, 0, 'the restored database is consistent in itself');
    const anchored = await verify(h, ['--anchors', dir]);
    assert.equal(anchored.code, 1);
    assert.ok(kinds(anchored.report, h.companyId).includes('rolled_back'));
  });

  it('POST to an HTTP endpoint, retried on the next turn after a failure', async (t) => {
    const { h } = await paced(t, 2);
    await h.rt.checkpoints.checkpointAll();
    const received: AnchorDocument[] = [];
    let status = 503;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        assert.equal(req.headers.authorization, 'Bearer s3cret-token');
        if (status === 200)
          received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as AnchorDocument);
        res.statusCode = status;
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.after(() => new Promise<void>((r) => server.close(() => r())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/anchors`;
    const publisher = new AnchorPublisher(h.rt.store, [httpSink(url, { token: 's3cret-token' })], {
      logger: silent,
    });
    await publisher.publishNow(); // 503: logged, not thrown
    assert.equal(received.length, 0);
    status = 200;
    await publisher.publishNow();
    assert.equal(received.length, 1);
    const doc = received[0]!;
    assert.equal(doc.solid_anchor, 1);
    const mine = doc.checkpoints.find((c) => c.company_id === h.companyId);
    assert.ok(mine !== undefined && mine.seq > 0 && mine.signature.length > 0);
    assert.ok(
      doc.keys.some((k) => k.kid === mine.kid),
      'the key that verifies it is published with it',
    );
  });

  it('serve options: a directory and a URL sink; a bad URL or interval is refused with an envelope', () => {
    const ok = anchorOptionsOf({ anchorDir: '/tmp/a', anchorUrl: 'https://anchors.example.org/x' }, {});
    assert.deepEqual(
      ok.sinks.map((s) => s.name),
      ['dir:/tmp/a', 'https://anchors.example.org/x'],
    );
    assert.equal(ok.intervalMs, 300_000);
    assert.throws(
      () => anchorOptionsOf({ anchorUrl: 'ftp://x' }, {}),
      (e: { reason?: string; hint?: string }) => e.reason === 'invalid_args' && typeof e.hint === 'string',
    );
    assert.throws(
      () => anchorOptionsOf({ anchorInterval: '0' }, {}),
      (e: { reason?: string }) => e.reason === 'invalid_args',
    );
    assert.equal(
      anchorOptionsOf({}, { SOLID_ANCHOR_DIR: '/tmp/b', SOLID_ANCHOR_INTERVAL: '60' }).intervalMs,
      60_000,
    );
  });
});
