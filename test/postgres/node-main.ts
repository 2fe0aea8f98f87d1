/**
 * One node of the multi-node tests: the runtime on PostgreSQL (SOLID_DATABASE_URL +
 * SOLID_DB_SCHEMA, secrets from SOLID_NONCE_SECRET / SOLID_MASTER_KEY shared by every node) with
 * the system verbs and the load verbs, served by the real HTTP transport (createHttpServer, as
 * `solid serve` does). Prints `ready <url>` on stdout; SIGTERM closes it.
 *
 *   node --import tsx test/postgres/node-main.ts
 */
import pino from 'pino';
import { createRuntime } from '../../src/runtime/runtime.ts';
import { loadSecrets } from '../../src/runtime/secrets.ts';
import { PostgresStore, postgresOptionsFromEnv } from '../../src/store/postgres/postgres-store.ts';
import { systemVerbs } from '../../src/verbs/index.ts';
import { createHttpServer } from '../../src/transports/http/server.ts';
import { LOAD_MIGRATIONS, loadVerbs } from './load-pack.ts';

const url = process.env.SOLID_DATABASE_URL;
if (url === undefined) throw new Error('SOLID_DATABASE_URL is required');
const logger = pino({ level: process.env.SOLID_TEST_LOG ?? 'silent' }, pino.destination(2));
const store = new PostgresStore({
  ...postgresOptionsFromEnv(url),
  connectTimeoutMs: 1000,
  onError: (err, where) => logger.warn({ err, where }, 'postgres background'),
});
const { secrets, persisted } = loadSecrets({});
if (!persisted)
  throw new Error('SOLID_NONCE_SECRET and SOLID_MASTER_KEY are required (shared by every node)');
const rt = await createRuntime({ store, secrets, logger, sandboxCompanyId: 1 });
rt.register(...systemVerbs, ...loadVerbs);
await store.migrate('load', LOAD_MIGRATIONS);
const app = createHttpServer(rt, { logger: false });
await app.listen({ port: 0, host: '127.0.0.1' });
const addr = app.server.address() as import('node:net').AddressInfo;
process.stdout.write(`ready http://127.0.0.1:${addr.port}\n`);
process.on('SIGTERM', () => {
  void (async () => {
    await app.close();
    await rt.close();
    process.exit(0);
  })();
});
