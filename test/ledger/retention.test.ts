/**
 * Retention (spec/audit.md §retention, docs/compliance.md §7): archive a tenant's old rows to a
 * verified export, prune them behind a signed continuity record, and `audit verify` still passes
 * across the cut — from the boundary on without the archive, the whole history with it; a
 * tampered archive, a forged record and a deleted kept row are each caught; a stored receipt of a
 * pruned row does not fail verification. Only a human sets the policy. Both engines.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { installNotesPack } from '../support/notes-pack.ts';
import type { DispatchOptions } from '../../src/runtime/core.ts';
import { archiveAuditLog, checkArchives } from '../../src/runtime/ledger/retention/archive.ts';
import { verifyStoreChain } from '../../src/runtime/ledger/verify/verify.ts';
import { storedContinuity } from '../../src/runtime/ledger/verify/continuity-check.ts';
import { verifyDatabaseFile } from '../../src/runtime/ledger/verify/verify-file.ts';
import { dispatchAs } from '../support/keyed.ts';

async function activity(h: TestRuntime, n: number): Promise<void> {
  const call = (key: string, verb: string, args: unknown = {}, o?: DispatchOptions) =>
    dispatchAs(h.rt, { surface: 'http', apiKey: key }, verb, args, o);
  for (let i = 0; i < n; i++) {
    const pending = await call(h.keys.employee, 'notes_add', { text: `note ${i}` });
    const done = await call(
      h.keys.employee,
      'notes_add',
      { text: `note ${i}` },
      { confirm: true, nonce: pending.consent!.nonce },
    );
    assert.equal(done.ok, true, JSON.stringify(done));
    await call(h.keys.employee, 'notes.count');
    await call(h.keys.read_only, 'notes_add', { text: 'refused' });
  }
  await h.rt.auditBuffer.flush();
}

const DAY = 86_400_000;

test('archive + prune keeps the chain verifiable across the boundary, with and without the archive', async (t) => {
  let now = Date.parse('2026-01-10T09:00:00Z');
  const h = await createTestRuntime(t, { clock: () => new Date(now) });
  await installNotesPack(h);
  await activity(h, 5); // January
  await h.rt.checkpoints.checkpointAll();
  now += 40 * DAY; // February
  await activity(h, 3);
  await h.rt.checkpoints.checkpointAll();
  const tenant = h.companyId;
  const dir = join(h.dir, 'archive');
  const storedReceipts = await h.rt.store.read((q) =>
    q.get<{ n: number }>('SELECT COUNT(*) AS n FROM receipts WHERE company_id = ?', [tenant]),
  );
  assert.ok(Number(storedReceipts!.n) > 0, 'January writes left stored receipts');

  const cut = new Date(Date.parse('2026-02-01T00:00:00Z'));
  const first = await archiveAuditLog(h.rt.store, h.rt.keys, {
    companyId: tenant,
    before: cut,
    dir,
    now: new Date(now),
  });
  assert.equal(first.ok, true, JSON.stringify(first));
  assert.ok(first.ok && first.record !== null && first.archived > 0);
  const boundary = first.record!.rows.last_seq;
  const oldest = await h.rt.store.read((q) =>
    q.get<{ lo: number; jan: number }>(
      'SELECT MIN(seq) AS lo, SUM(CASE WHEN created_at < ? THEN 1 ELSE 0 END) AS jan FROM audit_log WHERE company_id = ?',
      [cut.toISOString(), tenant],
    ),
  );
  assert.equal(Number(oldest!.lo), boundary + 1, 'pruned up to the boundary');
  assert.equal(Number(oldest!.jan), 0, 'no January row left in the database');

  // Without the archive: passes from the boundary on, and says so plainly.
  const report = await verifyStoreChain(h.rt.store, { tenant });
  assert.equal(report.ok, true, JSON.stringify(report.tenants[0]?.findings));
  assert.equal(report.tenants[0]!.archived?.through_seq, boundary);
  assert.ok(
    report.warnings.some(
      (w) => w.includes(`rows seq 1–${boundary} were archived and pruned`) && w.includes('--archive'),
    ),
    report.warnings.join('\n'),
  );
  assert.ok((report.receipts_archived ?? 0) > 0, 'stored receipts of pruned rows are counted, not failed');

  if (h.rt.store.engine === 'sqlite') {
    // The database file offline (what `solid audit verify --db` runs), on one thread and on workers.
    for (const o of [{}, { parallelMinRows: 1, workers: 2, chunkRows: 7 }]) {
      const file = await verifyDatabaseFile(h.dbPath, { tenant, ...o });
      assert.equal(file.ok, true, JSON.stringify(file.tenants[0]?.findings));
      assert.equal(file.tenants[0]!.archived?.through_seq, boundary);
      assert.equal(file.tenants[0]!.rows_checked, report.tenants[0]!.rows_checked);
    }
  }

  // With the archive: the whole history.
  const records = await h.rt.store.read((q) => storedContinuity(q, tenant));
  await checkArchives(report, records, dir, undefined);
  assert.equal(report.ok, true, JSON.stringify(report.tenants[0]?.findings));
  assert.ok(report.warnings.some((w) => w.includes('the whole history')));
  const all = await h.rt.store.read((q) =>
    q.get<{ n: number }>('SELECT COUNT(*) AS n FROM audit_log WHERE company_id = ?', [tenant]),
  );
  assert.equal(
    report.tenants[0]!.rows_checked,
    Number(all!.n) + first.archived,
    'every row, kept or archived',
  );

  // A second cut continues the first: two records, still whole.
  now += 40 * DAY;
  await activity(h, 1);
  const second = await archiveAuditLog(h.rt.store, h.rt.keys, {
    companyId: tenant,
    before: new Date(now - DAY),
    dir,
    now: new Date(now),
  });
  assert.ok(second.ok && second.record !== null);
  assert.equal(second.record.rows.first_seq, boundary + 1);
  assert.equal(second.record.chain.prev_hash, first.record!.chain.boundary_hash);
  await h.rt.checkpoints.checkpointAll(); // what the runtime's minute timer does
  const again = await verifyStoreChain(h.rt.store, { tenant });
  await checkArchives(again, await h.rt.store.read((q) => storedContinuity(q, tenant)), dir, undefined);
  assert.equal(again.ok, true, JSON.stringify(again.tenants[0]?.findings));

  // Tampered archive: one row edited in the file.
  const file = second.rowsPath!;
  const text = readFileSync(file, 'utf8');
  writeFileSync(file, text.replace('"completed"', '"failed"'));
  const tampered = await verifyStoreChain(h.rt.store, { tenant });
  await checkArchives(tampered, await h.rt.store.read((q) => storedContinuity(q, tenant)), dir, undefined);
  assert.equal(tampered.ok, false);
  assert.ok(tampered.tenants[0]!.findings.some((f) => f.kind === 'modified'));
  // A missing archive file.
  rmSync(file);
  const missing = await verifyStoreChain(h.rt.store, { tenant });
  await checkArchives(missing, await h.rt.store.read((q) => storedContinuity(q, tenant)), dir, undefined);
  assert.equal(missing.ok, false);
  assert.ok(missing.tenants[0]!.findings.some((f) => f.kind === 'truncated'));

  // A kept row (above the boundary) still cannot be deleted: the trigger refuses it.
  await assert.rejects(
    h.rt.store.write((tx) =>
      tx.run('DELETE FROM audit_log WHERE company_id = ? AND seq = ?', [
        tenant,
        second.record!.rows.last_seq + 1,
      ]),
    ),
    /append-only/,
  );
});

test('a forged continuity record is caught by audit verify', async (t) => {
  let now = Date.parse('2026-01-10T09:00:00Z');
  const h = await createTestRuntime(t, { clock: () => new Date(now) });
  await installNotesPack(h);
  await activity(h, 3);
  now += 40 * DAY;
  await activity(h, 1);
  const r = await archiveAuditLog(h.rt.store, h.rt.keys, {
    companyId: h.companyId,
    before: new Date(now - DAY),
    dir: join(h.dir, 'a'),
    now: new Date(now),
  });
  assert.ok(r.ok && r.record !== null);
  // Someone with write access moves the boundary up to delete more rows under it.
  const forged = { ...r.record, rows: { ...r.record.rows, last_seq: r.record.rows.last_seq + 2 } };
  await h.rt.store.write(async (tx) => {
    await tx.run('UPDATE audit_archives SET record = ?, through_seq = ? WHERE company_id = ?', [
      JSON.stringify(forged),
      forged.rows.last_seq,
      h.companyId,
    ]);
    await tx.run('DELETE FROM audit_log WHERE company_id = ? AND seq <= ?', [
      h.companyId,
      forged.rows.last_seq,
    ]);
  });
  const report = await verifyStoreChain(h.rt.store, { tenant: h.companyId });
  assert.equal(report.ok, false);
  assert.ok(
    report.tenants[0]!.findings.some((f) => f.kind === 'bad_signature'),
    JSON.stringify(report.tenants[0]!.findings),
  );
});

test('only a human sets the retention policy: an agent key is refused human_required, and the refusal is audited', async (t) => {
  const h = await createTestRuntime(t);
  const agent = { surface: 'http' as const, apiKey: h.keys.owner };
  const asked = await dispatchAs(h.rt, agent, 'tenant.audit_retention_set', { archive_after_days: 30 });
  const refused = asked.consent?.nonce
    ? await dispatchAs(
        h.rt,
        agent,
        'tenant.audit_retention_set',
        { archive_after_days: 30 },
        { confirm: true, nonce: asked.consent.nonce },
      )
    : asked;
  assert.equal(refused.ok, false);
  assert.equal(refused.error?.reason, 'human_required', JSON.stringify(refused.error));
  const tenant = await h.rt.tenants.get(h.companyId);
  assert.equal(tenant?.settings.audit_retention_days, undefined, 'nothing changed');
  const rows = await h.rt.store.read((q) =>
    q.all<{ status: string; reason: string | null }>(
      `SELECT status, reason FROM audit_log WHERE company_id = ? AND action_type = 'tenant.audit_retention_set'`,
      [h.companyId],
    ),
  );
  assert.ok(
    rows.some((r) => r.reason === 'human_required'),
    'the refusal is a row',
  );

  // The owner signed in to the dashboard sets it.
  const owner = { surface: 'http' as const, principal: h.human('owner') };
  const pending = await h.rt.dispatch(owner, 'tenant.audit_retention_set', { archive_after_days: 30 });
  const set = await h.rt.dispatch(
    owner,
    'tenant.audit_retention_set',
    { archive_after_days: 30 },
    { confirm: true, nonce: pending.consent!.nonce },
  );
  assert.equal(set.ok, true, JSON.stringify(set));
  h.rt.tenants.invalidate();
  assert.equal((await h.rt.tenants.get(h.companyId))?.settings.audit_retention_days, 30);
});

test('the maintenance pass archives and prunes by policy only with an archive directory', async (t) => {
  let now = Date.parse('2026-01-10T09:00:00Z');
  const dir = join('/tmp', `solid-retention-${process.pid}-${Date.now()}`);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const h = await createTestRuntime(t, { clock: () => new Date(now), auditArchiveDir: dir });
  await installNotesPack(h);
  await activity(h, 3);
  now += 45 * DAY;
  assert.equal((await h.rt.maintenance()).audit_rows_archived, 0, 'no policy: nothing pruned');
  const owner = { surface: 'http' as const, principal: h.human('owner') };
  const pending = await h.rt.dispatch(owner, 'tenant.audit_retention_set', { archive_after_days: 30 });
  await h.rt.dispatch(
    owner,
    'tenant.audit_retention_set',
    { archive_after_days: 30 },
    {
      confirm: true,
      nonce: pending.consent!.nonce,
    },
  );
  const report = await h.rt.maintenance();
  assert.ok((report.audit_rows_archived ?? 0) > 0, JSON.stringify(report));
  await h.rt.checkpoints.checkpointAll(); // what the runtime's minute timer does
  const verified = await verifyStoreChain(h.rt.store, { tenant: h.companyId });
  await checkArchives(
    verified,
    await h.rt.store.read((q) => storedContinuity(q, h.companyId)),
    join(dir, `tenant-${h.companyId}`),
    undefined,
  );
  assert.equal(verified.ok, true, JSON.stringify(verified.tenants[0]?.findings));
});
