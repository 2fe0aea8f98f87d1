/**
 * PostgreSQL test support: a fresh schema per store on the throwaway cluster named by
 * SOLID_TEST_DATABASE_URL (.ci/postgres.sh), dropped in t.after, so tests stay independent.
 */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import pg from 'pg';
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.ts';

/** The test cluster URL, or undefined when PostgreSQL tests are skipped. */
export const TEST_DATABASE_URL: string | undefined = process.env.SOLID_TEST_DATABASE_URL || undefined;

/** Reason shown for skipped PostgreSQL tests. */
export const PG_SKIP_REASON =
  'SOLID_TEST_DATABASE_URL is not set (run `source .ci/postgres.sh` to start a throwaway PostgreSQL 15)';

/** A new unique schema name (t_<hex>). */
export function freshSchemaName(): string {
  return `t_${randomBytes(6).toString('hex')}`;
}

/** Run one statement on the test cluster with a short-lived client. */
export async function adminQuery(
  sql: string,
  params: unknown[] = [],
  url = TEST_DATABASE_URL,
): Promise<pg.QueryResult> {
  if (url === undefined) throw new Error(PG_SKIP_REASON);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(sql, params);
  } finally {
    await c.end();
  }
}

/** Drop a test schema (and everything in it). */
export async function dropSchema(schema: string): Promise<void> {
  await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
}

/**
 * A PostgresStore on a fresh schema of the test cluster (created by the first migrate). The
 * schema is dropped after the test unless `keep` (another store of the same test shares it).
 */
export function createTestPostgresStore(
  t: TestContext | undefined,
  options: Partial<PostgresStoreOptions> & { schema?: string; keep?: boolean } = {},
): PostgresStore {
  if (TEST_DATABASE_URL === undefined) throw new Error(PG_SKIP_REASON);
  const schema = options.schema ?? freshSchemaName();
  const store = new PostgresStore({ connectionString: TEST_DATABASE_URL, poolMax: 4, ...options, schema });
  if (!options.keep) {
    t?.after(async () => {
      await store.close().catch(() => {});
      await dropSchema(schema);
    });
  }
  return store;
}
