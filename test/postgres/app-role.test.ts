/**
 * `solid db migrate --app-role`: the role the nodes connect as runs the whole runtime but can
 * only SELECT and INSERT on audit_log — UPDATE, DELETE and TRUNCATE are refused by privilege
 * even with the append-only trigger disabled (spec/store.md §app-role).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { createRuntime } from '../../src/runtime/runtime.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { StoreError } from '../../src/store/store.ts';
import { systemVerbs } from '../../src/verbs/index.ts';
import {
  adminQuery,
  dropSchema,
  freshSchemaName,
  PG_SKIP_REASON,
  TEST_DATABASE_URL,
} from '../support/postgres.ts';
import { cliHarness } from '../support/cli.ts';
import { dispatchAs } from '../support/keyed.ts';

describe('solid db migrate', { skip: TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false }, () => {
  it('migrates idempotently and grants the app role everything but changing the audit log', async (t) => {
    const schema = freshSchemaName();
    const role = `solid_app_${randomBytes(4).toString('hex')}`;
    await adminQuery(`CREATE ROLE ${role} LOGIN`);
    t.after(async () => {
      await dropSchema(schema);
      await adminQuery(`DROP OWNED BY ${role}`);
      await adminQuery(`DROP ROLE ${role}`);
    });
    const cli = cliHarness(t);
    const env = { SOLID_DB_SCHEMA: schema, SOLID_DATABASE_URL: undefined };
    const first = await cli.run(
      ['db', 'migrate', '--database-url', TEST_DATABASE_URL!, '--app-role', role, '--json'],
      { env },
    );
    assert.equal(first.code, 0, first.stderr);
    const out = first.json<{
      engine: string;
      applied: Array<{ scope: string; version: number }>;
      app_role: { role: string; schema: string };
    }>();
    assert.equal(out.engine, 'postgres');
    assert.ok(out.applied.some((m) => m.scope === 'runtime' && m.version === 1));
    assert.deepEqual(out.app_role, { role, schema });
    const again = await cli.run(['--database-url', TEST_DATABASE_URL!, 'db', 'migrate', '--json'], { env });
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(again.json<{ applied: unknown[] }>().applied, [], 'nothing left to apply');

    // The nodes connect as the app role: the runtime works (no DDL needed once migrated)…
    const url = new URL(TEST_DATABASE_URL!);
    url.username = role;
    const store = new PostgresStore({ connectionString: url.toString(), schema });
    const rt = await createRuntime({ store, logger: pino({ level: 'silent' }), sandboxCompanyId: 1 });
    t.after(() => rt.close());
    rt.register(...systemVerbs);
    await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
    await rt.createTenant({ company_id: 2, name: 'Co', tier: 'professional' });
    const key = await rt.createApiKey({ company_id: 2, user_id: 1, role: 'owner' });
    const env1 = await dispatchAs(rt, { apiKey: key, surface: 'internal' }, 'verbs.list', {});
    assert.equal(env1.ok, true);
    await rt.auditBuffer.flush();
    const rows = Number(
      (await store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM audit_log')))!.n,
    );
    assert.ok(rows >= 1, 'the app role appends audit rows');

    // …but even with the trigger switched off, the role cannot rewrite history.
    await adminQuery(`ALTER TABLE ${schema}.audit_log DISABLE TRIGGER USER`);
    const appendOnly = (e: unknown) => e instanceof StoreError && e.code === 'append_only';
    await assert.rejects(
      store.write((tx) => tx.run(`UPDATE audit_log SET status = 'failed'`)),
      appendOnly,
    );
    await assert.rejects(
      store.write((tx) => tx.run('DELETE FROM audit_log')),
      appendOnly,
    );
    await assert.rejects(
      store.write((tx) => tx.run('TRUNCATE audit_log')),
      appendOnly,
    );
    await assert.rejects(
      store.write((tx) => tx.run(`DELETE FROM schema_migrations`)),
      appendOnly,
    );
    assert.equal(
      Number((await store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM audit_log')))!.n),
      rows,
    );
  });
});

describe('solid db migrate without PostgreSQL', () => {
  it('refuses --app-role on SQLite with a usage error', async (t) => {
    const cli = cliHarness(t);
    const r = await cli.run(['db', 'migrate', '--app-role', 'x'], { env: { SOLID_DATABASE_URL: undefined } });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /PostgreSQL/);
  });

  it('migrates a SQLite database too', async (t) => {
    const cli = cliHarness(t);
    const r = await cli.run(['db', 'migrate', '--json'], { env: { SOLID_DATABASE_URL: undefined } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json<{ engine: string }>().engine, 'sqlite');
  });

  it('answers store_unavailable (exit 8) when the server is down', async (t) => {
    const cli = cliHarness(t);
    const r = await cli.run(['db', 'migrate', '--database-url', 'postgres://solid@127.0.0.1:1/nowhere'], {
      env: { SOLID_DB_CONNECT_TIMEOUT_MS: '1000' },
    });
    assert.equal(r.code, 8);
    assert.match(r.stderr, /store_unavailable/);
  });
});
