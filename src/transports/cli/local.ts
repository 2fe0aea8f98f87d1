/**
 * Opening the local (embedded) runtime for CLI commands: the database path (`--db` /
 * `SOLID_DB`, default `.solid/solid.db`), its keyfile, the packs it serves, the sandbox tenant.
 *
 * Engine selection: a PostgreSQL URL — `--database-url`, `--db postgres://…` or
 * `SOLID_DATABASE_URL` — opens a PostgresStore (pool settings from SOLID_DB_POOL_MAX,
 * SOLID_DB_STATEMENT_TIMEOUT_MS, SOLID_DB_CONNECT_TIMEOUT_MS; spec/store.md §operations); every
 * node of one database needs the same SOLID_NONCE_SECRET and SOLID_MASTER_KEY (or keyfile).
 *
 * Spec: spec/transports.md §cli.
 */
import { oauthMigrations } from '../../oauth/migrations.ts';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { stderrLogger } from '../../runtime/lazy-logger.ts';
import { createRuntime, type Runtime } from '../../runtime/runtime.ts';
import { SecretsError, loadSecrets, type Secrets } from '../../runtime/secrets.ts';
import { SqliteStore } from '../../store/sqlite/sqlite-store.ts';
import { describeUrl } from '../../store/postgres/options.ts';
import type { Durability, Store } from '../../store/store.ts';
import { StoreError } from '../../store/store.ts';
import { systemVerbs } from '../../verbs/index.ts';
import { KNOWN_PACKS } from '../../packs.ts';
import { PackError, checkPacks, installPack, type Pack } from '../../runtime/pack.ts';
import { RUNTIME_MIGRATION_SCOPES } from '../../runtime/migration-scopes.ts';
import { webSessionMigrations } from '../../identity/session-store.ts';
import { cliLoginMigrations } from '../../identity/cli-login-store.ts';
import { loadPackSources, type PackSource } from './packs.ts';
import type { Command } from 'commander';
import { VerbError } from '../../runtime/errors.ts';
import { recordedPublicUrl } from '../../identity/public-url.ts';
import { readServedPacks, recordServedPacks } from '../../runtime/served-packs.ts';

export const DEFAULT_DB = '.solid/solid.db';

export interface LocalOptions {
  db?: string;
  /** Create the database and keyfile when missing (init, serve --demo). */
  create?: boolean;
  durability?: Durability;
  /** Extra built-in packs to enable (and remember) on this database. */
  packs?: string[];
  /** A team's own packs for this process (`--pack`): module paths or built-in names (packs.ts). */
  packFiles?: string[];
  /** `--config`: the config file naming more packs; default: solid.config.(js|mjs) if present. */
  config?: string;
  logLevel?: string;
  /** Open a store built elsewhere (PostgreSQL engine). */
  store?: Store;
}

export interface Local {
  rt: Runtime;
  dbPath: string;
  packs: Pack[];
  /** Names of the packs this process brought (config, --pack): not the database's to remove. */
  ownPacks: ReadonlySet<string>;
  close(): Promise<void>;
}

/** The local options every command takes from the global flags: --db, --pack, --config. */
export function localOptionsOf(program: Command): Pick<LocalOptions, 'db' | 'packFiles' | 'config'> {
  const o = program.opts<{ db?: string; pack?: string[]; config?: string }>();
  return { db: o.db, packFiles: o.pack, config: o.config };
}

/** Tables of the runtime and its transports: no pack may create one. */
const RESERVED_MIGRATIONS = [
  ...RUNTIME_MIGRATION_SCOPES.flatMap(([, migrations]) => migrations),
  ...webSessionMigrations,
  ...cliLoginMigrations,
  ...oauthMigrations,
];

const PG_URL = /^postgres(ql)?:\/\//i;

/** The PostgreSQL URL selected by `--db postgres://…` (or `--database-url`) or SOLID_DATABASE_URL; undefined for SQLite. */
export function databaseUrlOf(db?: string): string | undefined {
  if (db !== undefined) return PG_URL.test(db) ? db : undefined;
  const env = process.env.SOLID_DATABASE_URL;
  return env !== undefined && env !== '' ? env : undefined;
}

/**
 * SOLID_WRITE_BUDGET_MS: the time budget (ms) of a write body inside its transaction
 * (spec/store.md §time-limits); undefined = the store's default (5000), 0 = none.
 * @throws StoreError unavailable — not a whole number ≥ 0.
 */
export function writeBudgetOf(env: NodeJS.ProcessEnv): number | undefined {
  const v = env.SOLID_WRITE_BUDGET_MS;
  if (v === undefined || v.trim() === '') return undefined;
  if (!/^\d+$/.test(v.trim()))
    throw new StoreError(
      'unavailable',
      `SOLID_WRITE_BUDGET_MS must be a whole number of ms (got ${JSON.stringify(v)})`,
    );
  return Number(v);
}

/** Resolve the database path from the option, SOLID_DB, or the default (PostgreSQL: the URL without secrets). */
export function dbPathOf(db?: string): string {
  const url = databaseUrlOf(db);
  if (url !== undefined) return describeUrl(url);
  return resolve(db ?? process.env.SOLID_DB ?? DEFAULT_DB);
}

/** The keyfile of a database (PostgreSQL: SOLID_KEYFILE or .solid/postgres.keys.json). */
export function keyfileOf(dbPath: string): string {
  if (PG_URL.test(dbPath)) return resolve(process.env.SOLID_KEYFILE ?? '.solid/postgres.keys.json');
  return `${dbPath}.keys.json`;
}

/**
 * Open the runtime on a local database. Without `create`, a missing database is an error with a
 * hint (`solid init`), never a silently created empty file.
 */
export async function openLocal(options: LocalOptions = {}): Promise<Local> {
  // A team's packs are loaded and checked before the database is opened: a broken pack stops the
  // command with the file, verb and field named, and nothing is created or migrated.
  const own = await loadPackSources({ packFiles: options.packFiles, config: options.config });
  const systemNames = systemVerbs.map((v) => v.name);
  if (own.length > 0)
    checkPacks(
      own.map((s) => s.pack),
      {
        registered: systemNames,
        reservedMigrations: RESERVED_MIGRATIONS,
        labels: own.map((s) => s.label),
        validate: (i) => own[i]!.builtin === undefined,
      },
    );
  const url = options.store === undefined ? databaseUrlOf(options.db) : undefined;
  const dbPath = dbPathOf(options.db);
  const logger = stderrLogger(options.logLevel ?? process.env.SOLID_LOG_LEVEL ?? 'warn');
  if (url === undefined && options.store === undefined && !options.create && !existsSync(dbPath)) {
    throw new VerbError('store_unavailable', `No solid database at ${dbPath}.`, {
      hint: 'Run `solid init` (or `solid serve --demo`) first, or pass --db / SOLID_DB.',
    });
  }
  // The PostgreSQL driver is imported only when a PostgreSQL URL is given (issue 36: start-up).
  const pg =
    url !== undefined && options.store === undefined
      ? await import('../../store/postgres/postgres-store.ts')
      : undefined;
  let store: Store;
  try {
    // PostgreSQL keeps synchronous_commit on whatever --durability says (spec/store.md §durability).
    store =
      options.store ??
      (pg !== undefined && url !== undefined
        ? new pg.PostgresStore({
            ...pg.postgresOptionsFromEnv(url),
            onError: (err, where) => logger.warn({ err, where }, 'postgres: background connection problem'),
          })
        : new SqliteStore({
            path: dbPath,
            durability: options.durability,
            writeBudgetMs: writeBudgetOf(process.env),
          }));
  } catch (err) {
    if (err instanceof StoreError)
      throw new VerbError('store_unavailable', err.message, {
        hint: 'Check the path and its permissions (--db / SOLID_DB).',
      });
    throw err;
  }
  // SQLite: createRuntime keeps the secrets in the key file beside the database (runtimeSecrets).
  // PostgreSQL: the environment, or the key file SOLID_KEYFILE / .solid/postgres.keys.json.
  let secrets: Secrets | undefined;
  if (url !== undefined && !options.store) {
    const keyfilePath = keyfileOf(dbPath);
    if (options.create) mkdirSync(dirname(keyfilePath), { recursive: true, mode: 0o700 });
    secrets = loadSecrets({ keyfilePath, create: options.create }).secrets;
  }
  let rt: Runtime;
  try {
    const publicUrl = publicUrlOf(process.env.SOLID_PUBLIC_URL);
    rt = await createRuntime({
      store,
      secrets,
      logger,
      sandboxCompanyId: 1,
      ...(publicUrl !== undefined ? { publicUrl } : {}),
      // Retention policies archive here before they prune (spec/audit.md §retention).
      ...(process.env.SOLID_AUDIT_ARCHIVE_DIR
        ? { auditArchiveDir: resolve(process.env.SOLID_AUDIT_ARCHIVE_DIR) }
        : {}),
    });
  } catch (err) {
    await store.close().catch(() => {});
    if (err instanceof SecretsError)
      throw new VerbError('store_unavailable', err.message, {
        hint: 'The key file beside the database (<db>.keys.json) must be the one `solid init` wrote for it.',
      });
    if (err instanceof StoreError)
      throw new VerbError('store_unavailable', `The database at ${dbPath} cannot be used: ${err.message}`, {
        hint: 'Is it a solid database? Check the path (--db / SOLID_DB) and permissions.',
      });
    throw err;
  }
  // Pending answers link the approval page where `solid serve` last said people reach it.
  if (rt.options.publicUrl === undefined) {
    const recorded = await recordedPublicUrl(rt.store).catch(() => undefined);
    if (recorded !== undefined) rt.options.publicUrl = recorded;
  }
  rt.register(...systemVerbs);
  const enabled = new Set<string>(await readPacks(rt));
  for (const p of options.packs ?? []) enabled.add(p);
  const sources: PackSource[] = [];
  for (const name of enabled) {
    const load = KNOWN_PACKS[name];
    if (load === undefined || own.some((s) => s.builtin === name)) continue;
    sources.push({ pack: await load(), label: name, builtin: name });
  }
  sources.push(...own);
  try {
    if (own.length > 0) {
      checkPacks(
        sources.map((s) => s.pack),
        {
          registered: systemNames,
          reservedMigrations: RESERVED_MIGRATIONS,
          labels: sources.map((s) => s.label),
          validate: () => false,
        },
      );
      if (url === undefined && options.store === undefined) await dryRunMigrations(sources);
    }
    for (const s of sources) await installPack(rt, s.pack);
  } catch (err) {
    await rt.close().catch(() => {});
    throw err;
  }
  const packs = sources.map((s) => s.pack);
  if ((options.packs ?? []).length > 0) await writePacks(rt, [...enabled]);
  return {
    rt,
    dbPath,
    packs,
    ownPacks: new Set(own.filter((s) => s.builtin === undefined).map((s) => s.pack.name)),
    async close() {
      await rt.close();
    },
  };
}

/**
 * Apply the runtime's and every pack's SQLite migrations to a scratch in-memory database first, so
 * a pack whose SQL fails stops the start before the real database sees any of its migrations.
 * Throws PackError naming the pack and the migration.
 */
async function dryRunMigrations(sources: readonly PackSource[]): Promise<void> {
  const scratch = new SqliteStore({ path: ':memory:' });
  try {
    for (const [scope, migrations] of RUNTIME_MIGRATION_SCOPES) await scratch.migrate(scope, migrations);
    for (const s of sources) {
      try {
        await scratch.migrate(s.pack.name, s.pack.migrations);
      } catch (err) {
        const m = /#(\d+)/.exec((err as Error).message);
        const i = m ? s.pack.migrations.findIndex((x) => x.version === Number(m[1])) : -1;
        throw new PackError(
          s.label,
          i >= 0 ? `migrations[${i}]` : 'migrations',
          (err as Error).message,
          'Fix the SQL; nothing was migrated on the database.',
        );
      }
    }
  } finally {
    await scratch.close();
  }
}

async function readPacks(rt: Runtime): Promise<string[]> {
  return readServedPacks(rt.store);
}

async function writePacks(rt: Runtime, packs: string[]): Promise<void> {
  await recordServedPacks(rt.store, packs);
}

/**
 * A public base URL as the runtime takes it (`http(s)://host[:port][/path]`, no trailing slash,
 * no query or fragment), from `--public-url` or SOLID_PUBLIC_URL; undefined when unset or empty.
 * @throws VerbError invalid_request naming the value when it is not such a URL.
 */
export function publicUrlOf(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    url = new URL('invalid:');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '')
    throw new VerbError('invalid_request', `The public URL "${value}" is not an http(s) base URL.`, {
      hint: 'Pass --public-url (or SOLID_PUBLIC_URL) like http://localhost:4400 or https://ops.example.com.',
    });
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}
