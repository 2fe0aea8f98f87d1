/**
 * A node stuck inside its write transaction, for test/postgres/deadlines.test.ts: a PostgresStore
 * with a node's default session limits (postgresOptionsFromEnv) opens a write, locks the tenant's
 * head row (`SELECT … FOR UPDATE`, what every write of that tenant queues on), prints `locked`
 * and waits; the test then freezes it with SIGSTOP. The write budget is off: a frozen process
 * runs no timer, so only the database's own limits can cut it off.
 *
 *   SOLID_DATABASE_URL=… SOLID_DB_SCHEMA=… LOCK_COMPANY=2 node --import tsx test/postgres/lock-holder.ts
 */
import { PostgresStore, postgresOptionsFromEnv } from '../../src/store/postgres/postgres-store.ts';

const url = process.env.SOLID_DATABASE_URL;
if (url === undefined) throw new Error('SOLID_DATABASE_URL is required');
const store = new PostgresStore({ ...postgresOptionsFromEnv(url), writeBudgetMs: 0, poolMax: 1 });
await store
  .write(async (tx) => {
    await tx.lockTenantHead(Number(process.env.LOCK_COMPANY ?? '2'));
    process.stdout.write('locked\n');
    await new Promise<void>(() => {});
  })
  .catch((err: unknown) => {
    process.stderr.write(`lock holder: ${String(err)}\n`);
    process.exit(3);
  });
