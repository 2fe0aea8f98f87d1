/**
 * `solid db migrate [--database-url URL] [--app-role ROLE] [--json]`: apply the runtime's
 * migrations, the WebMCP sessions table and those of every pack the database serves, on SQLite (`--db`) or PostgreSQL
 * (`--database-url`, `--db postgres://…` or SOLID_DATABASE_URL). Idempotent; safe to run from
 * several nodes at once (PostgreSQL: one migrator at a time per schema, advisory lock).
 *
 * `--app-role ROLE` (PostgreSQL): grant the role the nodes connect as DML on every table but only
 * SELECT/INSERT on audit_log (src/store/postgres/app-role.ts). The role must exist.
 *
 * The global `--database-url <url>` option (registered in main.ts) selects PostgreSQL for every command
 * (it is copied into `--db`, which local.ts reads).
 *
 * Exit codes: 0 done, 2 usage, 8 store_unavailable / migration failure. Spec: spec/store.md §operations.
 */
import type { Command } from 'commander';
import { RUNTIME_MIGRATION_SCOPES } from '../../../runtime/migration-scopes.ts';
import { PostgresStore, postgresOptionsFromEnv } from '../../../store/postgres/postgres-store.ts';
import { grantAppRole } from '../../../store/postgres/app-role.ts';
import { SqliteStore } from '../../../store/sqlite/sqlite-store.ts';
import { StoreError, type Store } from '../../../store/store.ts';
import { KNOWN_PACKS } from '../../../packs.ts';
import { webSessionMigrations } from '../../../identity/session-store.ts';
import { reasonInfo } from '../../../spec/reasons.ts';
import { databaseUrlOf, dbPathOf } from '../local.ts';
import type { Io } from '../output.ts';
import { readServedPacks } from '../../../runtime/served-packs.ts';
import { listAppliedMigrations } from '../../../store/migrations/applied.ts';

interface MigrateFlags {
  databaseUrl?: string;
  appRole?: string;
  json?: boolean;
}

export function registerDb(program: Command, io: Io, setExit: (code: number) => void): void {
  const db = program.command('db').description('Database administration (SQLite or PostgreSQL)');
  db.command('migrate')
    .description(
      'Apply pending migrations (runtime and enabled packs); PostgreSQL: optionally grant the restricted app role',
    )
    .option('--database-url <url>', 'PostgreSQL database (default: $SOLID_DATABASE_URL)')
    .option(
      '--app-role <role>',
      'PostgreSQL: grant this role DML on every table but only SELECT/INSERT on audit_log',
    )
    .option('--json', 'print machine-readable JSON')
    .action(async (flags: MigrateFlags) => {
      setExit(await runMigrate(program, io, flags));
    });
}

async function runMigrate(program: Command, io: Io, flags: MigrateFlags): Promise<number> {
  const target = flags.databaseUrl ?? program.opts<{ db?: string }>().db;
  const url = databaseUrlOf(target);
  if (flags.appRole !== undefined && url === undefined) {
    io.err(
      '✗ --app-role needs a PostgreSQL database (--database-url or SOLID_DATABASE_URL); SQLite has no roles.',
    );
    return 2;
  }
  const where = dbPathOf(target);
  let store: Store | undefined;
  try {
    store =
      url !== undefined ? new PostgresStore(postgresOptionsFromEnv(url)) : new SqliteStore({ path: where });
    const before = await listAppliedMigrations(store);
    for (const [scope, migrations] of RUNTIME_MIGRATION_SCOPES) await store.migrate(scope, migrations);
    // The browser sessions table of `solid serve` (WebMCP), so a restricted app role never needs CREATE.
    await store.migrate('webmcp', webSessionMigrations);
    const packs = await enabledPacks(store);
    for (const name of packs) {
      const load = KNOWN_PACKS[name];
      if (load === undefined) {
        io.err(
          `! pack ${name} is enabled on this database but unknown to this build; its migrations were skipped`,
        );
        continue;
      }
      const pack = await load();
      await store.migrate(pack.name, pack.migrations);
    }
    const after = await listAppliedMigrations(store);
    const fresh = after.filter((m) => !before.some((b) => b.scope === m.scope && b.version === m.version));
    let grant: { role: string; schema: string } | undefined;
    if (flags.appRole !== undefined) {
      const r = await grantAppRole(store as PostgresStore, flags.appRole);
      grant = { role: flags.appRole, schema: r.schema };
    }
    if (flags.json) {
      io.out(
        JSON.stringify(
          {
            database: where,
            engine: store.engine,
            applied: fresh,
            total: after.length,
            ...(grant ? { app_role: grant } : {}),
          },
          null,
          2,
        ),
      );
    } else {
      io.out(
        fresh.length === 0
          ? `✓ ${where}: up to date (${after.length} migrations)`
          : `✓ ${where}: applied ${fresh.map((m) => `${m.scope}#${m.version} ${m.name}`).join(', ')}`,
      );
      if (grant)
        io.out(`✓ role ${grant.role}: DML on schema ${grant.schema}, SELECT/INSERT only on audit_log`);
    }
    return 0;
  } catch (err) {
    if (err instanceof StoreError) {
      io.err(
        `✗ ${err.code === 'migration_failed' ? 'migration_failed' : 'store_unavailable'}: ${err.message}`,
      );
      io.err(
        `  hint: ${url !== undefined ? 'Check --database-url / SOLID_DATABASE_URL, that the server is up, and the role’s privileges.' : 'Check the path (--db / SOLID_DB) and its permissions.'}`,
      );
      return reasonInfo('store_unavailable').exit;
    }
    throw err;
  } finally {
    await store?.close().catch(() => {});
  }
}

function enabledPacks(store: Store): Promise<string[]> {
  return readServedPacks(store);
}
