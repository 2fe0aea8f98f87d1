/**
 * The restricted runtime role for PostgreSQL (spec/store.md §app-role, spec/audit.md): the
 * migrating owner keeps DDL; the role the nodes connect as gets SELECT/INSERT/UPDATE/DELETE on
 * every table of the schema EXCEPT audit_log, where it gets SELECT and INSERT only — so the audit
 * log stays append-only even if its trigger were dropped — plus USAGE on the sequences and
 * SELECT only on schema_migrations. Default privileges extend the grant to tables created by
 * later migrations; re-run `solid db migrate --app-role <role>` after an upgrade anyway.
 */
import pg from 'pg';
import { StoreError } from '../store.ts';
import type { PostgresStore } from './postgres-store.ts';

/** The statements granting `role` the runtime's privileges on `schema` (identifiers quoted). */
export function appRoleStatements(role: string, schema: string): string[] {
  const r = pg.escapeIdentifier(role);
  const s = pg.escapeIdentifier(schema);
  return [
    `GRANT USAGE ON SCHEMA ${s} TO ${r}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${s} TO ${r}`,
    `REVOKE UPDATE, DELETE, TRUNCATE ON ${s}.audit_log FROM ${r}`,
    `REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON ${s}.schema_migrations FROM ${r}`,
    `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${s} TO ${r}`,
    `ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${r}`,
    `ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT USAGE, SELECT ON SEQUENCES TO ${r}`,
  ];
}

/**
 * Grant the runtime role its privileges on the store's schema, in one transaction. The role must
 * exist (`CREATE ROLE solid_app LOGIN PASSWORD '…'`, by a DBA). Throws StoreError
 * ('migration_failed' when the role is missing or a grant fails, 'unavailable' when the database is down).
 * Returns the schema and the statements run.
 */
export async function grantAppRole(
  store: PostgresStore,
  role: string,
): Promise<{ schema: string; statements: string[] }> {
  const client = await store.pool.connect().catch((err: unknown) => {
    throw new StoreError('unavailable', `the database cannot be reached: ${(err as Error).message}`, {
      cause: err,
    });
  });
  try {
    const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
    if (exists.rowCount === 0) {
      throw new StoreError(
        'migration_failed',
        `role ${JSON.stringify(role)} does not exist; create it first: CREATE ROLE ${pg.escapeIdentifier(role)} LOGIN PASSWORD '…'`,
      );
    }
    const schema = (await client.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]!.s;
    const statements = appRoleStatements(role, schema);
    await client.query('BEGIN');
    try {
      for (const sql of statements) await client.query(sql);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw new StoreError('migration_failed', `granting ${role} failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
    return { schema, statements };
  } finally {
    client.release();
  }
}
