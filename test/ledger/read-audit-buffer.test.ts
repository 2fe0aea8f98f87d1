/**
 * The read-audit buffer (spec/audit.md §read-rows): a flush resolves only once every row pushed
 * before it is committed, whoever started the flush in flight; on PostgreSQL each tenant's rows
 * commit in their own transaction, so a tenant holding its chain head does not hold up another
 * tenant's writes; a flush the store refuses is retried once.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { auditEntry } from '../../src/runtime/ledger/write/audit.ts';
import { ReadAuditBuffer } from '../../src/runtime/ledger/write/read-audit-buffer.ts';
import { StoreError } from '../../src/store/store.ts';
import { PG_SKIP_REASON, TEST_DATABASE_URL } from '../support/postgres.ts';
import { verifyStoreChain } from '../../src/runtime/ledger/verify/verify.ts';
import { call, createObserveRuntime } from '../support/observe-verbs.ts';

// Every warning of this process (Node emits a deprecation once per process, so whichever test of
// this file makes `pg` warn, the list holds it).
const warnings: Error[] = [];
process.on('warning', (w) => warnings.push(w));

function readRow(h: TestRuntime, companyId: number, action: string) {
  return auditEntry({
    company_id: companyId,
    now: new Date(),
    action,
    category: 'test',
    status: 'completed',
    principal: h.principal('owner', companyId),
  });
}

async function count(h: TestRuntime, action: string): Promise<number> {
  return Number(
    (await h.rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM audit_log WHERE action_type = ?', [action]),
    ))!.n,
  );
}

/** The counter verbs' audit rows of the harness tenant, in audit_id order, as "verb:status". */
async function counterRows(h: Awaited<ReturnType<typeof createObserveRuntime>>): Promise<string[]> {
  const rows = await h.rt.store.read((q) =>
    q.all<{ action_type: string; status: string }>(
      "SELECT action_type, status FROM audit_log WHERE company_id = ? AND action_type LIKE 'counter.%' ORDER BY audit_id",
      [h.companyId],
    ),
  );
  return rows.map((r) => `${r.action_type}:${r.status}`);
}

describe('read-audit buffer', () => {
  it('every concurrent flush resolves only after the rows pushed before it are committed', async (t) => {
    const h = await createTestRuntime(t);
    for (let round = 0; round < 5; round++) {
      const action = `buffer.round${round}`;
      h.rt.auditBuffer.push(readRow(h, h.companyId, action));
      const first = h.rt.auditBuffer.flush();
      h.rt.auditBuffer.push(readRow(h, h.companyId, action));
      const second = h.rt.auditBuffer.flush();
      const third = h.rt.auditBuffer.flush();
      await third;
      assert.equal(await count(h, action), 2, `round ${round}: the third waiter saw both rows committed`);
      await Promise.all([first, second]);
    }
  });

  it('full batches flush on their own, and the rows pushed while a flush runs go out in the next one, without the timer', async (t) => {
    const h = await createTestRuntime(t);
    await h.rt.auditBuffer.flush();
    const store = h.rt.store;
    let writes = 0;
    const sink = {
      store: {
        engine: store.engine,
        write: ((fn, options) => {
          writes++;
          return store.write(fn, options);
        }) as typeof store.write,
      } as typeof store,
      logger: h.rt.logger,
      afterWrite() {},
    };
    // A one-hour timer: only full batches can flush these rows.
    const buffer = new ReadAuditBuffer(sink, 3_600_000, 4);
    for (let i = 0; i < 42; i++) buffer.push(readRow(h, h.companyId, 'buffer.batches'));
    for (let turn = 0; turn < 1000 && (await count(h, 'buffer.batches')) < 42; turn++)
      await new Promise<void>((r) => setImmediate(r));
    assert.equal(await count(h, 'buffer.batches'), 42, 'every row written, the timer never fired');
    assert.equal(buffer.size, 0);
    assert.ok(writes <= 3, `the rows pushed while a flush ran went out together (${writes} writes)`);
    await h.rt.checkpoints.checkpointAll(); // what the runtime's timer does for rows it did not append
    const report = await verifyStoreChain(store);
    assert.deepEqual(
      report.tenants.flatMap((x) => x.findings),
      [],
    );
  });

  it('a store outage holds the rows, marks the buffer unwritable, and the next good flush writes them', async (t) => {
    const h = await createTestRuntime(t);
    const store = h.rt.store;
    const write = store.write.bind(store);
    // An outage fails every write while it lasts, whoever writes (the buffer's own retry timer,
    // background work), so the test does not depend on which write comes first.
    let outage = false;
    (store as { write: typeof store.write }).write = (fn, options) =>
      outage ? Promise.reject(new StoreError('unavailable', 'injected outage')) : write(fn, options);
    t.after(() => ((store as { write: typeof store.write }).write = write));
    outage = true;
    h.rt.auditBuffer.push(readRow(h, h.companyId, 'buffer.retry'));
    await h.rt.auditBuffer.flush();
    assert.equal(await count(h, 'buffer.retry'), 0, 'the outage kept the row out');
    assert.equal(h.rt.auditBuffer.size, 1, 'the row is held for the next flush');
    outage = false;
    await h.rt.auditBuffer.flush();
    assert.equal(await count(h, 'buffer.retry'), 1, 'written by the next flush');

    assert.equal(h.rt.auditBuffer.unwritable, false, 'writable again after a good flush');

    outage = true;
    h.rt.auditBuffer.push(readRow(h, h.companyId, 'buffer.twice'));
    await h.rt.auditBuffer.flush();
    await h.rt.auditBuffer.flush();
    assert.equal(h.rt.auditBuffer.unwritable, true, 'an outage is reported (reads refused, /readyz 503)');
    assert.equal(h.rt.auditBuffer.size, 1, 'held through the outage, never dropped for its retries');
    outage = false;
    await h.rt.auditBuffer.flush();
    assert.equal(await count(h, 'buffer.twice'), 1, 'written once the store takes rows again');
    assert.equal(h.rt.auditBuffer.unwritable, false);
    assert.equal(h.rt.auditBuffer.droppedRows, 0);
  });

  it('a row that cannot be stored never costs another row, another tenant’s least of all', async (t) => {
    const h = await createTestRuntime(t);
    h.rt.auditBuffer.push(readRow(h, h.companyId, 'buffer.isolated'));
    const bad = readRow(h, h.companyId, 'buffer.bad');
    (bad as { action_type: unknown }).action_type = null; // NOT NULL: this row alone fails its insert
    h.rt.auditBuffer.push(bad);
    h.rt.auditBuffer.push(readRow(h, h.otherCompanyId, 'buffer.isolated'));
    await h.rt.auditBuffer.flush();
    assert.equal(await count(h, 'buffer.isolated'), 2, 'both good rows, both tenants, are stored');
    assert.equal(h.rt.auditBuffer.size, 1, 'only the bad row is held for one retry');
    await h.rt.auditBuffer.flush();
    assert.equal(h.rt.auditBuffer.size, 0);
  });

  it('rows holding Infinity, NaN, U+0000 and lone surrogates are stored on both engines and verify', async (t) => {
    const h = await createTestRuntime(t);
    const odd = readRow(h, h.companyId, 'buffer.odd\u0000name');
    odd.request_data = { pad: Infinity, nan: NaN, body: 'a\u0000b', '\u0000': 1, lone: '\ud800' };
    h.rt.auditBuffer.push(odd);
    h.rt.auditBuffer.push(readRow(h, h.otherCompanyId, 'buffer.odd.other'));
    await h.rt.auditBuffer.flush();
    assert.equal(h.rt.auditBuffer.size, 0, 'nothing held: both rows stored');
    assert.equal(await count(h, 'buffer.odd.other'), 1);
    const row = await h.rt.store.read((q) =>
      q.get<{ request_data: string | object }>(
        "SELECT request_data FROM audit_log WHERE action_type LIKE 'buffer.odd%name'",
      ),
    );
    const data = typeof row!.request_data === 'string' ? JSON.parse(row!.request_data) : row!.request_data;
    assert.deepEqual(data, { pad: 'Infinity', nan: 'NaN', body: 'a\ufffdb', '\ufffd': 1, lone: '\ufffd' });
    await h.rt.checkpoints.checkpointAll(); // the first-row checkpoint runs after the commit
    const report = await verifyStoreChain(h.rt.store);
    assert.deepEqual(
      report.tenants.flatMap((x) => x.findings),
      [],
    );
  });

  it('audit_id order is answer order within a tenant, and a trail read sees every call before it', async (t) => {
    // A flush timer far longer than the test: only the ordering rule can put the reads in place.
    const h = await createObserveRuntime(t, { readAuditFlushMs: 600_000 });
    const calls: [string, string, Record<string, unknown>][] = [
      ['employee', 'counter.get', { name: 'order' }],
      ['employee', 'counter.bump', { name: 'order' }],
      ['employee', 'counter.get', { name: 'order' }],
      ['read_only', 'counter.bump', { name: 'order' }], // a denial (role floor employee)
      ['employee', 'counter.get', { name: 'order' }],
      ['employee', 'counter.bump', { name: 'order', fail: true }], // a failed write
      ['employee', 'counter.get', { name: 'order' }],
    ];
    for (const [who, verb, args] of calls) await call(h, who as 'employee', verb, args);
    // Another tenant's buffered read is not written by this tenant's turn at the log.
    await call(h, h.principal('owner', h.otherCompanyId), 'counter.get', { name: 'other' });
    const trail = await call(h, 'owner', 'audit.trail', { verb: 'counter.get', limit: 50 });
    assert.equal(trail.ok, true, JSON.stringify(trail.error));
    const seen = (trail.result as { entries: unknown[] }).entries.length;
    assert.equal(seen, 4, 'the trail shows the four reads answered before it, none waits for the timer');
    assert.deepEqual(await counterRows(h), [
      'counter.get:completed',
      'counter.bump:completed',
      'counter.get:completed',
      'counter.bump:denied',
      'counter.get:completed',
      'counter.bump:failed',
      'counter.get:completed',
    ]);
    assert.equal(h.rt.auditBuffer.size, 2, 'the trail read itself and the other tenant’s read stay buffered');
  });

  it('replays stay buffered like reads, and still come before the next write of their tenant', async (t) => {
    const h = await createObserveRuntime(t, { readAuditFlushMs: 600_000 });
    const key = { idempotency_key: 'replay-order-1' };
    assert.equal((await call(h, 'employee', 'counter.bump', { name: 'replay' }, key)).ok, true);
    for (let i = 0; i < 3; i++) {
      const again = await call(h, 'employee', 'counter.bump', { name: 'replay' }, key);
      assert.equal(again.replayed, true);
    }
    await call(h, 'employee', 'counter.get', { name: 'replay' });
    assert.equal(h.rt.auditBuffer.size, 4, 'three replayed rows and a read, held for one batch');
    assert.equal((await call(h, 'employee', 'counter.bump', { name: 'replay' })).ok, true);
    assert.equal(h.rt.auditBuffer.size, 0, 'the write wrote them first');
    assert.deepEqual(await counterRows(h), [
      'counter.bump:completed',
      'counter.bump:replayed',
      'counter.bump:replayed',
      'counter.bump:replayed',
      'counter.get:completed',
      'counter.bump:completed',
    ]);
    await h.rt.checkpoints.checkpointAll(); // the first-row checkpoint runs after the commit
    const report = await verifyStoreChain(h.rt.store);
    assert.deepEqual(
      report.tenants.flatMap((x) => x.findings),
      [],
    );
  });

  it(
    'postgres: a flush sends one query at a time on its connection (no pg deprecation warning; pg 9 refuses overlapping queries)',
    { skip: TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false },
    async (t) => {
      const h = await createTestRuntime(t, { engine: 'postgres' });
      // Several multi-row INSERT groups and a remainder, for two tenants.
      for (let i = 0; i < 43; i++) {
        h.rt.auditBuffer.push(readRow(h, h.companyId, 'buffer.sequential'));
        if (i % 2 === 0) h.rt.auditBuffer.push(readRow(h, h.otherCompanyId, 'buffer.sequential'));
      }
      await h.rt.auditBuffer.flush();
      assert.equal(await count(h, 'buffer.sequential'), 43 + 22);
      await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
      assert.deepEqual(
        warnings.filter((w) => /already executing a query|pg@9/.test(w.message)).map((w) => w.message),
        [],
      );
      // Each tenant's rows chained in order (a checkpoint of the new tenant may still be on its way).
      const report = await verifyStoreChain(h.rt.store);
      const broken = report.tenants.flatMap((x) => x.findings).filter((f) => f.kind !== 'no_checkpoint');
      assert.deepEqual(broken, []);
      assert.equal(report.rows_checked, 43 + 22);
    },
  );

  it(
    'postgres: a tenant holding its chain head delays only its own read rows, not another tenant’s writes',
    { skip: TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false },
    async (t) => {
      const h = await createTestRuntime(t, { engine: 'postgres' });
      // Tenant 3 (the higher id, so a mixed batch would lock tenant 2's head first) holds its head.
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holder = h.rt.store.write(async (tx) => {
        await tx.lockTenantHead(h.otherCompanyId);
        locked();
        await held;
      });
      await isLocked;
      h.rt.auditBuffer.push(readRow(h, h.companyId, 'buffer.mixed'));
      h.rt.auditBuffer.push(readRow(h, h.otherCompanyId, 'buffer.mixed'));
      const flushed = h.rt.auditBuffer.flush();
      await new Promise((r) => setTimeout(r, 100));
      const w = await Promise.race([
        h.rt.store.write((tx) => tx.lockTenantHead(h.companyId)).then(() => 'locked'),
        new Promise((r) => setTimeout(() => r('blocked'), 5000)),
      ]);
      assert.equal(w, 'locked', 'tenant 2’s head is free while tenant 3 holds its own');
      assert.equal(await count(h, 'buffer.mixed'), 1, 'tenant 2’s read row is already committed');
      release();
      await holder;
      await flushed;
      assert.equal(await count(h, 'buffer.mixed'), 2);
    },
  );
});
