/**
 * Store faults (issue 11), on the dispatch level and over HTTP:
 *
 * - disk full (simulated with SQLite's max_page_count on the writer connection: the file cannot
 *   grow) and a read-only database (PRAGMA query_only on the writer: SQLITE_READONLY, which is
 *   what a read-only file or mount gives; file permissions cannot be used, the suite may run as
 *   root): writes answer store_unavailable (HTTP 503) with nothing written, reads keep answering,
 *   nothing is corrupted (integrity check, `audit verify`), and writes succeed again once the
 *   fault is gone;
 * - a slow verb of one tenant does not block other tenants' reads (reads never take the write
 *   lock); a slow WRITE holds SQLite's single writer, so every other write — any tenant — waits
 *   for it, while on PostgreSQL only writes of the same tenant wait (row lock on its chain head).
 *
 * Spec: spec/store.md §errors, §durability; spec/reasons.md (store_unavailable).
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { PG_SKIP_REASON, TEST_DATABASE_URL } from '../support/postgres.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { createHttpServer } from '../../src/transports/http/server.ts';
import { verifyStoreChain } from '../../src/runtime/ledger/verify/verify.ts';
import { verifyDatabaseFile } from '../../src/runtime/ledger/verify/verify-file.ts';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Envelope } from '../../src/spec/types.ts';

const NOTES = [
  {
    version: 1,
    name: 'notes',
    sqlite:
      'CREATE TABLE fault_notes (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, body TEXT NOT NULL)',
    postgres:
      'CREATE TABLE fault_notes (id BIGSERIAL PRIMARY KEY, company_id BIGINT NOT NULL, body TEXT NOT NULL)',
  },
];

/** Gates the slow verbs: each call waits until the test opens its gate. */
class Gate {
  #open!: () => void;
  readonly entered: Promise<void>;
  #enter!: () => void;
  readonly opened = new Promise<void>((r) => (this.#open = r));
  constructor() {
    this.entered = new Promise<void>((r) => (this.#enter = r));
  }
  async pass(): Promise<void> {
    this.#enter();
    await this.opened;
  }
  open(): void {
    this.#open();
  }
}

let gate = new Gate();

const verbs = [
  defineVerb<{ body: string; big?: boolean }>({
    name: 'fault.note_add',
    description: 'Add a note (no consent gate).',
    shape: 'receipt',
    category: 'test',
    input: {
      type: 'object',
      properties: { body: { type: 'string' }, big: { type: 'boolean' } },
      required: ['body'],
      additionalProperties: false,
    },
    delegateConsent: async () => ({ consentClass: null, roleFloor: 'employee', summary: 'Add a note.' }),
    async handler(ctx, a) {
      const r = await ctx.db.get<{ id: number }>(
        'INSERT INTO fault_notes (company_id, body) VALUES (?, ?) RETURNING id',
        [ctx.principal.company_id, a.big ? a.body.repeat(100_000) : a.body],
      );
      return { note_id: Number(r!.id) };
    },
  }),
  defineVerb<{ body: string }>({
    name: 'fault.slow_note_add',
    description: 'Add a note, then wait for the test (a slow write: holds its transaction).',
    shape: 'receipt',
    category: 'test',
    input: {
      type: 'object',
      properties: { body: { type: 'string' } },
      required: ['body'],
      additionalProperties: false,
    },
    delegateConsent: async () => ({
      consentClass: null,
      roleFloor: 'employee',
      summary: 'Add a note slowly.',
    }),
    async handler(ctx, a) {
      const r = await ctx.db.get<{ id: number }>(
        'INSERT INTO fault_notes (company_id, body) VALUES (?, ?) RETURNING id',
        [ctx.principal.company_id, a.body],
      );
      await gate.pass();
      return { note_id: Number(r!.id) };
    },
  }),
  defineVerb({
    name: 'fault.notes_count',
    description: 'Count the tenant’s notes.',
    shape: 'aggregate',
    category: 'test',
    input: { type: 'object', properties: {}, additionalProperties: false },
    async handler(ctx) {
      const r = await ctx.db.get<{ n: number }>(
        'SELECT COUNT(*) AS n FROM fault_notes WHERE company_id = ?',
        [ctx.principal.company_id],
      );
      return { entity_id: ctx.principal.company_id, data: { notes: Number(r!.n) } };
    },
  }),
  defineVerb({
    name: 'fault.slow_count',
    description: 'Count the tenant’s notes, then wait for the test (a slow read).',
    shape: 'aggregate',
    category: 'test',
    input: { type: 'object', properties: {}, additionalProperties: false },
    async handler(ctx) {
      const r = await ctx.db.get<{ n: number }>(
        'SELECT COUNT(*) AS n FROM fault_notes WHERE company_id = ?',
        [ctx.principal.company_id],
      );
      await gate.pass();
      return { entity_id: ctx.principal.company_id, data: { notes: Number(r!.n) } };
    },
  }),
];

async function setup(t: TestContext, engine: 'sqlite' | 'postgres' = 'sqlite'): Promise<TestRuntime> {
  const h = await createTestRuntime(t, { engine, maintenanceIntervalMs: 0 });
  await h.rt.store.migrate('fault-tests', NOTES);
  h.rt.register(...verbs);
  return h;
}

const call = (
  h: TestRuntime,
  verb: string,
  args: Record<string, unknown> = {},
  company = h.companyId,
): Promise<Envelope> =>
  h.rt.dispatch({ principal: h.principal('owner', company), surface: 'http' }, verb, args);

async function notesIn(h: TestRuntime): Promise<number> {
  return Number(
    (await h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM fault_notes')))!.n,
  );
}

/** The database file is intact: SQLite's integrity check and the full audit verification pass. */
async function assertIntact(h: TestRuntime): Promise<void> {
  await h.rt.auditBuffer.flush();
  const file = new Database(h.dbPath, { readonly: true });
  try {
    assert.equal(file.pragma('integrity_check', { simple: true }), 'ok');
  } finally {
    file.close();
  }
  const report = await verifyDatabaseFile(h.dbPath);
  assert.equal(report.ok, true, JSON.stringify(report.tenants.flatMap((x) => x.findings).slice(0, 3)));
}

describe('store faults answer store_unavailable and corrupt nothing', () => {
  for (const fault of ['disk full', 'read-only database'] as const) {
    it(`${fault}: writes answer store_unavailable (HTTP 503) with nothing written, reads still answer, recovery after`, async (t) => {
      const h = await setup(t);
      const raw = (h.rt.store as SqliteStore).rawDatabase;
      assert.equal((await call(h, 'fault.note_add', { body: 'before' })).ok, true);
      await h.rt.auditBuffer.flush();
      const app = createHttpServer(h.rt, { logger: false });
      t.after(() => app.close());
      const before = await notesIn(h);

      if (fault === 'disk full')
        raw.pragma(`max_page_count = ${Number(raw.pragma('page_count', { simple: true }))}`);
      else raw.pragma('query_only = 1');

      const env = await call(h, 'fault.note_add', { body: 'x', big: true });
      assert.equal(env.ok, false);
      assert.equal(env.error!.reason, 'store_unavailable', JSON.stringify(env.error));
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/agent/dispatch/fault.note_add',
        headers: { authorization: `Bearer ${h.keys.owner}`, 'content-type': 'application/json' },
        payload: { args: { body: 'y', big: true } },
      });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().error.reason, 'store_unavailable');
      assert.equal(await notesIn(h), before, 'nothing was written');
      // Reads answer from the reader connection meanwhile.
      const read = await call(h, 'fault.notes_count');
      assert.equal(read.ok, true);
      assert.deepEqual((read.result as { data: unknown }).data, { notes: before });

      if (fault === 'disk full') raw.pragma('max_page_count = 1073741823');
      else raw.pragma('query_only = 0');
      assert.equal(
        (await call(h, 'fault.note_add', { body: 'after', big: true })).ok,
        true,
        'writes work again',
      );
      const after = await app.inject({
        method: 'POST',
        url: '/api/v1/agent/dispatch/fault.note_add',
        headers: { authorization: `Bearer ${h.keys.owner}`, 'content-type': 'application/json' },
        payload: { args: { body: 'after http' } },
      });
      assert.equal(after.statusCode, 200);
      assert.equal(await notesIn(h), before + 2);
      await assertIntact(h);
    });
  }
});

describe('a slow verb of one tenant', () => {
  it('a slow read does not block other tenants’ reads, nor writes', async (t) => {
    const h = await setup(t);
    gate = new Gate();
    const slow = call(h, 'fault.slow_count');
    await gate.entered;
    const other = await call(h, 'fault.notes_count', {}, h.otherCompanyId);
    assert.equal(other.ok, true);
    const write = await call(h, 'fault.note_add', { body: 'meanwhile' }, h.otherCompanyId);
    assert.equal(write.ok, true);
    gate.open();
    assert.equal((await slow).ok, true);
  });

  for (const engine of ['sqlite', 'postgres'] as const) {
    it(
      `${engine}: a slow write does not block other tenants’ reads; ${engine === 'sqlite' ? 'other writes wait for it (single writer)' : 'other writes run meanwhile and the chain stays gap-free'}`,
      { skip: engine === 'postgres' && TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false },
      async (t) => {
        const h = await setup(t, engine);
        gate = new Gate();
        const slow = call(h, 'fault.slow_note_add', { body: 'slow' });
        await gate.entered; // the slow write is inside its transaction now
        const read = await call(h, 'fault.notes_count', {}, h.otherCompanyId);
        assert.equal(read.ok, true, 'another tenant reads while the write is open');
        const sameRead = await call(h, 'fault.notes_count');
        assert.deepEqual(
          (sameRead.result as { data: unknown }).data,
          { notes: 0 },
          'reads see only committed data',
        );

        const order: string[] = [];
        const otherWrite = call(h, 'fault.note_add', { body: 'other tenant' }, h.otherCompanyId).then((e) => {
          order.push('other tenant write');
          return e;
        });
        if (engine === 'postgres') {
          // The reads above left read-audit rows of both tenants in the buffer: flushing them now must
          // not make the other tenant's write wait for this tenant's open transaction. The chain head is
          // locked when a row is appended, not while a handler runs, so the same tenant's next write
          // runs too; the chain stays gap-free (checked below).
          const flushed = h.rt.auditBuffer.flush();
          const sameWrite = call(h, 'fault.note_add', { body: 'same tenant' });
          assert.equal((await otherWrite).ok, true, 'another tenant writes while the slow write is open');
          assert.equal((await sameWrite).ok, true, 'the same tenant writes while the slow handler runs');
          await flushed;
          order.push('slow write released');
        } else {
          // Give the queued write every chance to run; it cannot while the slow one holds the writer.
          for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
          order.push('slow write released');
        }
        gate.open();
        assert.equal((await slow).ok, true);
        assert.equal((await otherWrite).ok, true);
        assert.deepEqual(
          order,
          engine === 'postgres'
            ? ['other tenant write', 'slow write released']
            : ['slow write released', 'other tenant write'],
        );
        await h.rt.auditBuffer.flush();
        const report = await verifyStoreChain(h.rt.store);
        assert.equal(report.ok, true, JSON.stringify(report.tenants.flatMap((x) => x.findings).slice(0, 3)));
      },
    );
  }
});
