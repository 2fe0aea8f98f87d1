/**
 * What only the PostgreSQL engine does (spec/store.md): placeholder translation, type parsing,
 * transparent re-runs after a deadlock, refusing to commit after a swallowed failed statement,
 * timeouts, an unreachable server, wake-ups across nodes and across a server restart.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { translatePlaceholders, StatementCache } from '../../src/store/postgres/statements.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { codeOfSqlState } from '../../src/store/postgres/postgres-errors.ts';
import { StoreError, type Migration } from '../../src/store/store.ts';
import { runtimeMigrations } from '../../src/store/migrations/runtime.ts';
import { createTestPostgresStore, PG_SKIP_REASON, TEST_DATABASE_URL } from '../support/postgres.ts';
import { PG_BIN, privateCluster } from './harness.ts';

const skip = TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false;
const isStoreError = (code: string) => (e: unknown) => e instanceof StoreError && e.code === code;

const ROWS: Migration[] = [
  {
    version: 1,
    name: 'rows',
    postgres: `CREATE TABLE r (id INT PRIMARY KEY, v BIGINT NOT NULL, big NUMERIC); INSERT INTO r (id, v) VALUES (1, 0), (2, 0);`,
  },
];

describe('placeholder translation', () => {
  it('numbers `?` in order and leaves literals, quoted names, comments and dollar quotes alone', () => {
    const sql = `SELECT '?', "a?b", E'it\\'s ?', $$ ? $$, $t$?$t$ FROM x -- why?\nWHERE a = ? /* ? */ AND b IN (?, ?) AND c = 'x''?'`;
    const { text, params } = translatePlaceholders(sql);
    assert.equal(params, 3);
    assert.equal(
      text,
      `SELECT '?', "a?b", E'it\\'s ?', $$ ? $$, $t$?$t$ FROM x -- why?\nWHERE a = $1 /* ? */ AND b IN ($2, $3) AND c = 'x''?'`,
    );
  });

  it('refuses jsonb `?|` / `?&` operators outside literals (not portable SQL)', () => {
    assert.throws(
      () => translatePlaceholders(`SELECT 1 WHERE tags ?| ?`),
      (e: unknown) => e instanceof StoreError,
    );
  });

  it('names each distinct statement once and stops naming past its bound', () => {
    const cache = new StatementCache({ maxNamed: 2, maxEntries: 3 });
    const a = cache.get('SELECT ?');
    assert.equal(cache.get('SELECT ?'), a);
    assert.ok(a.name);
    assert.ok(cache.get('SELECT ?, ?').name);
    assert.equal(cache.get('SELECT 3').name, undefined);
    assert.notEqual(a.name, cache.get('SELECT ?, ?').name);
  });
});

describe('SQLSTATE mapping', () => {
  it('data exceptions of a caller value are invalid_value, not an outage', () => {
    for (const state of ['22003', '22P02', '22001', '22021', '22007', '22008'])
      assert.equal(codeOfSqlState(state), 'invalid_value', state);
    assert.equal(codeOfSqlState('08006'), 'unavailable');
  });
});

describe('PostgresStore', { skip }, () => {
  it('returns int8 beyond 2^53 and non-exact numerics as strings, never a rounded number', async (t) => {
    const store = createTestPostgresStore(t);
    const row = await store.read((q) =>
      q.get<Record<string, unknown>>(
        `SELECT 9007199254740993::int8 AS big, 42::int8 AS small, 1.5::numeric AS half, 0.1::numeric + 0.2::numeric AS exact, 12345678901234567890.5::numeric AS huge`,
      ),
    );
    assert.deepEqual(
      { ...row },
      { big: '9007199254740993', small: 42, half: 1.5, exact: 0.3, huge: '12345678901234567890.5' },
    );
  });

  it('lets several nodes migrate one empty schema at the same time: each version applies once', async (t) => {
    const first = createTestPostgresStore(t);
    const others = [1, 2, 3].map(() => createTestPostgresStore(t, { schema: first.schema, keep: true }));
    t.after(() => Promise.all(others.map((o) => o.close())));
    await Promise.all([first, ...others].map((s) => s.migrate('runtime', runtimeMigrations)));
    const rows = await first.read((q) =>
      q.all<{ version: number }>(
        `SELECT version FROM schema_migrations WHERE scope = 'runtime' ORDER BY version`,
      ),
    );
    assert.deepEqual(
      rows.map((r) => r.version),
      runtimeMigrations.map((m) => m.version),
    );
  });

  it('re-runs a write that lost a deadlock, transparently', async (t) => {
    const store = createTestPostgresStore(t);
    await store.migrate('rows', ROWS);
    let runs = 0;
    let bothLocked!: () => void;
    let lockedOne = 0;
    const barrier = new Promise<void>((r) => (bothLocked = r));
    const body =
      (first: number, second: number) => async (tx: import('../../src/store/store.ts').StoreTx) => {
        runs++;
        await tx.run('UPDATE r SET v = v + 1 WHERE id = ?', [first]);
        if (++lockedOne === 2) bothLocked();
        await Promise.race([barrier, new Promise((r) => setTimeout(r, 2000))]);
        await tx.run('UPDATE r SET v = v + 1 WHERE id = ?', [second]);
      };
    await Promise.all([store.write(body(1, 2)), store.write(body(2, 1))]);
    assert.ok(runs >= 3, 'the deadlock victim ran again');
    const rows = await store.read((q) => q.all<{ id: number; v: number }>('SELECT id, v FROM r ORDER BY id'));
    assert.deepEqual(
      rows.map((r) => r.v),
      [2, 2],
      'each write applied exactly once',
    );
  });

  it('refuses to report success when a failed statement was swallowed inside the write', async (t) => {
    const store = createTestPostgresStore(t);
    await store.migrate('rows', ROWS);
    await assert.rejects(
      store.write(async (tx) => {
        await tx.run('UPDATE r SET v = 10 WHERE id = 1');
        await tx.run('INSERT INTO r (id, v) VALUES (1, 0)').catch(() => undefined);
        return 'ok';
      }),
      isStoreError('unknown'),
    );
    assert.equal((await store.read((q) => q.get<{ v: number }>('SELECT v FROM r WHERE id = 1')))!.v, 0);
  });

  it('maps a statement timeout to busy', async (t) => {
    const store = createTestPostgresStore(t, { statementTimeoutMs: 100 });
    await assert.rejects(
      store.read((q) => q.get('SELECT pg_sleep(2)')),
      isStoreError('busy'),
    );
    await store.ping();
  });

  it('fails fast with unavailable when the server cannot be reached', async () => {
    const store = new PostgresStore({
      connectionString: 'postgres://solid@127.0.0.1:1/nowhere',
      connectTimeoutMs: 1000,
    });
    try {
      await assert.rejects(store.ping(), isStoreError('unavailable'));
      await assert.rejects(
        store.write((tx) => tx.run('SELECT 1')),
        isStoreError('unavailable'),
      );
      await assert.rejects(
        store.read((q) => q.get('SELECT 1')),
        isStoreError('unavailable'),
      );
      await assert.rejects(store.migrate('x', ROWS), isStoreError('unavailable'));
    } finally {
      await store.close();
    }
  });

  it('wakes a waiter on another node (LISTEN/NOTIFY), and only on its own schema', async (t) => {
    const a = createTestPostgresStore(t);
    const b = createTestPostgresStore(t, { schema: a.schema, keep: true });
    const elsewhere = createTestPostgresStore(t);
    t.after(() => b.close());
    await b.waitFor('warm-up', 5000); // the first LISTEN wakes waiters once
    await elsewhere.waitFor('warm-up', 5000);
    const woken = b.waitFor('events:9', 10_000);
    const notWoken = elsewhere.waitFor('events:9', 300);
    a.notify('events:9');
    assert.equal(await woken, true);
    assert.equal(await notWoken, false);
  });

  it(
    're-establishes LISTEN after a server restart, and the pool reconnects',
    { skip: existsSync(join(PG_BIN, 'pg_ctl')) ? false : `no pg_ctl in ${PG_BIN}` },
    async (t) => {
      const cluster = await privateCluster(t);
      const a = new PostgresStore({ connectionString: cluster.url, connectTimeoutMs: 1000 });
      const b = new PostgresStore({ connectionString: cluster.url, connectTimeoutMs: 1000 });
      t.after(async () => {
        await a.close();
        await b.close();
      });
      await b.waitFor('warm-up', 5000);
      assert.equal(b.listening, true);
      cluster.kill();
      await assert.rejects(a.ping(), isStoreError('unavailable'));
      cluster.start();
      for (let i = 0; i < 100 && !b.listening; i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(b.listening, true, 'LISTEN connection re-opened');
      await a.ping();
      const woken = b.waitFor('events:2', 10_000);
      a.notify('events:2');
      assert.equal(await woken, true);
    },
  );
});
