/**
 * Business packs: a named bundle of migrations, verbs, domain reasons, outbox handlers and an
 * optional seed. A database remembers which built-in packs it serves (runtime_meta "packs"), so
 * every process opening it (`solid serve`, `solid agent dispatch`, `solid mcp`) registers the same
 * verbs; a team's own packs come from `solid.config.js` or `--pack` (src/transports/cli/packs.ts).
 *
 * Loading is all-or-nothing (spec/manifest.md §packs): {@link checkPacks} refuses a bad pack —
 * a malformed field, a verb the registry refuses, a verb or table another pack (or the runtime)
 * already owns — before {@link installPack} migrates anything.
 *
 * Spec: spec/manifest.md §packs.
 */
import { StoreError, type Migration, type Store } from '../store/store.ts';
import type { VerbDefinition } from './verb.ts';
import type { OutboxHandler, PackRuntime } from './core.ts';
import { Registry, RegistrationError } from './registry.ts';
import { packReasonProblem, type PackReasonSpec } from '../spec/reasons.ts';

/** Options of a pack's `seed`: the instant to seed at, and a progress callback. */
export interface SeedOptions {
  now?: Date;
  /** Called as rows are seeded: how many are done out of the total. */
  onProgress?: (done: number, total: number) => void;
}

/** A business pack (pass it to `definePack`): name, description, migrations, verbs, and optionally reasons, outbox handlers and a seed. spec/manifest.md §packs */
export interface Pack {
  /** Lower-case name, also the migration scope of the pack's tables (e.g. `bookshop`). */
  name: string;
  description: string;
  migrations: readonly Migration[];
  verbs: readonly VerbDefinition[];
  /**
   * The pack's own reasons: `{ out_of_stock: { status: 409, kind: 'conflict', summary, hint? } }`
   * (status default 422, kind default `domain`). installPack stores them on the runtime's registry
   * so transports answer them with that status; `packRefusals(reasons)` makes typed constructors.
   */
  reasons?: Readonly<Record<string, PackReasonSpec>>;
  outboxHandlers?: Record<string, OutboxHandler>;
  /** Fill a fresh database with data (demo). Returns facts to print (keys, URLs…). */
  seed?: (rt: PackRuntime, options: SeedOptions) => Promise<Record<string, unknown>>;
}

/** One problem of a pack: the member at fault, what is wrong, how to fix it. */
export interface PackProblem {
  field: string;
  detail: string;
  hint?: string;
}

/**
 * A pack that cannot be loaded. `pack` names it (its name, or the file it came from), `field` the
 * member at fault (`verbs[2].input`, `migrations[0].sqlite`, …); the message says what is wrong
 * and `hint` how to fix it. `problems` holds every problem found in the pack (the first is also
 * `field`/`detail`/`hint`): a pack with several mistakes is refused once, listing them all.
 * `solid serve` / `solid mcp` print it and exit 2, nothing migrated.
 */
export class PackError extends Error {
  override readonly name = 'PackError';
  /** Every problem found (at least one). */
  readonly problems: readonly PackProblem[];
  constructor(
    readonly pack: string,
    readonly field: string,
    /** What is wrong, without the pack and field. */
    readonly detail: string,
    readonly hint?: string,
    /** What `pack` names: a pack, or the config file that lists packs. */
    readonly subject: 'pack' | 'config' = 'pack',
    problems?: readonly PackProblem[],
  ) {
    const all = problems !== undefined && problems.length > 0 ? problems : [{ field, detail, hint }];
    super(
      all.length === 1
        ? `${subject} "${pack}": ${field}: ${detail}`
        : `${subject} "${pack}": ${all.length} problems:\n${all
            .map((p) => `  - ${p.field}: ${p.detail}${p.hint ? ` (${p.hint})` : ''}`)
            .join('\n')}`,
    );
    this.problems = all;
    // With several problems each carries its own hint in the message.
    if (all.length > 1) this.hint = undefined;
  }
}

/** Collects a pack's problems; `done()` throws one PackError holding them all. */
class Problems {
  readonly list: PackProblem[] = [];
  constructor(readonly label: string) {}
  add(field: string, detail: string, hint?: string): void {
    this.list.push(hint === undefined ? { field, detail } : { field, detail, hint });
  }
  done(): void {
    const [first] = this.list;
    if (first !== undefined)
      throw new PackError(this.label, first.field, first.detail, first.hint, 'pack', this.list);
  }
}

const PACK_NAME = /^[a-z][a-z0-9_-]{0,63}$/;
const PACK_KEYS = new Set([
  'name',
  'description',
  'migrations',
  'verbs',
  'reasons',
  'outboxHandlers',
  'seed',
]);
/** Migration scopes the runtime and its transports use; a pack may not take one as its name. */
export const RESERVED_SCOPES: ReadonlySet<string> = new Set(['runtime', 'webmcp', 'cli-login']);

/**
 * Declare a pack: checks its shape and returns it unchanged (frozen), so a mistake shows where the
 * pack is written, not at the first dispatch. Verbs are checked as the registry would check them.
 *
 * Throws PackError naming the pack and the field: a name that is not lower-case
 * `[a-z][a-z0-9_-]*` (it is the migration scope), an unknown member, migrations without both a
 * `version` and an `sqlite` or `postgres` form, a duplicated migration version, a verb the
 * registry refuses (the RegistrationError's verb and field are kept), a verb named twice.
 *
 * Spec: spec/manifest.md §packs.
 */
export function definePack(pack: Pack): Pack {
  validatePack(pack, typeof pack?.name === 'string' ? pack.name : '(unnamed)');
  return Object.freeze(pack);
}

/** Shape checks of one pack (definePack, and checkPacks for packs built without it): every problem at once. */
function validatePack(pack: Pack, label: string): void {
  if (pack === null || typeof pack !== 'object' || Array.isArray(pack))
    throw new PackError(
      label,
      '(pack)',
      'is not an object',
      'Export `definePack({ name, description, migrations, verbs })`.',
    );
  const p = new Problems(label);
  for (const key of Object.keys(pack))
    if (!PACK_KEYS.has(key)) p.add(key, 'is not a pack member', `A pack has ${[...PACK_KEYS].join(', ')}.`);
  if (typeof pack.name !== 'string' || !PACK_NAME.test(pack.name))
    p.add(
      'name',
      `${JSON.stringify(pack.name)} is not a pack name`,
      'Use lower case letters, digits, - and _ (it names the migration scope of the pack).',
    );
  else if (RESERVED_SCOPES.has(pack.name))
    p.add('name', `"${pack.name}" is reserved by the runtime`, 'Pick another name.');
  if (typeof pack.description !== 'string' || pack.description.trim() === '')
    p.add('description', 'is missing', 'Say in one sentence what business the pack serves.');
  if (!Array.isArray(pack.migrations))
    p.add('migrations', 'is not an array', 'Use [] for a pack without tables of its own.');
  else {
    const versions = new Set<number>();
    pack.migrations.forEach((m, i) => {
      const at = `migrations[${i}]`;
      if (m === null || typeof m !== 'object') return p.add(at, 'is not an object');
      if (!Number.isInteger(m.version) || m.version < 1)
        p.add(
          `${at}.version`,
          'is not a positive integer',
          'Number migrations 1, 2, 3… and never reuse one.',
        );
      else if (versions.has(m.version)) p.add(`${at}.version`, `version ${m.version} appears twice`);
      versions.add(m.version);
      if (typeof m.name !== 'string' || m.name === '') p.add(`${at}.name`, 'is missing');
      if (typeof m.sqlite !== 'string' && typeof m.postgres !== 'string')
        p.add(
          at,
          'has neither an `sqlite` nor a `postgres` form',
          'Write the SQL for the engines you run on.',
        );
    });
  }
  if (!Array.isArray(pack.verbs) || pack.verbs.length === 0)
    p.add('verbs', 'is empty or not an array', 'A pack serves at least one verb (defineVerb).');
  else {
    const scratch = new Registry();
    const names = new Set<string>();
    pack.verbs.forEach((v, i) => {
      const at = `verbs[${i}]`;
      if (v === null || typeof v !== 'object')
        return p.add(at, 'is not a verb definition', 'Use defineVerb({ … }).');
      if (names.has(v.name)) return p.add(`${at}.name`, `verb "${v.name}" is defined twice`);
      names.add(v.name);
      try {
        scratch.register(v);
      } catch (err) {
        if (err instanceof RegistrationError)
          for (const problem of err.problems) p.add(`${at} "${err.verb}" ${problem.field}`, problem.message);
        else p.add(at, (err as Error).message);
      }
    });
  }
  for (const key of ['reasons', 'outboxHandlers'] as const) {
    const value = pack[key];
    if (value !== undefined && (value === null || typeof value !== 'object' || Array.isArray(value)))
      p.add(key, 'is not an object');
  }
  const reasons = pack.reasons !== null && typeof pack.reasons === 'object' ? pack.reasons : {};
  for (const [reason, info] of Object.entries(reasons)) {
    const problem = packReasonProblem(reason, info);
    if (problem === undefined) continue;
    const hint = problem.startsWith('is a core reason')
      ? 'Throw it as it is, or name a reason of your own.'
      : problem === 'needs a summary'
        ? "{ status: 409, kind: 'conflict', summary: 'What went wrong, in one sentence.' }"
        : undefined;
    p.add(`reasons.${reason}`, problem, hint);
  }
  if (pack.seed !== undefined && typeof pack.seed !== 'function') p.add('seed', 'is not a function');
  p.done();
}

/** Table names a migration's SQL creates (`CREATE [TEMP] TABLE [IF NOT EXISTS] name`), lower case. */
export function tablesOf(migrations: readonly Migration[]): Set<string> {
  const tables = new Set<string>();
  const re =
    /\bCREATE\s+(?:(?:TEMP|TEMPORARY|UNLOGGED)\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:[A-Za-z_][\w$]*\s*\.\s*)?["`[]?([A-Za-z_][\w$]*)/gi;
  for (const m of migrations)
    for (const sql of [m.sqlite, m.postgres])
      for (const match of (sql ?? '').matchAll(re)) tables.add(match[1]!.toLowerCase());
  return tables;
}

/** Options of `checkPacks`: what the runtime already owns (verbs, tables) and how to label packs in errors. */
export interface CheckPacksOptions {
  /** Verb names already registered (system verbs): a pack may not replace one. */
  registered?: Iterable<string>;
  /** Migrations of the runtime and its transports, whose tables a pack may not create. */
  reservedMigrations?: readonly Migration[];
  /** The label of each pack in errors (e.g. the file it came from), by index. */
  labels?: readonly string[];
  /** Which packs to shape-check (default all); false for packs already checked or built in. */
  validate?: (index: number) => boolean;
}

/**
 * Check packs to be loaded together, before anything is migrated: each pack's shape (as
 * {@link definePack}), pack names unique, no verb name (or its tool-name projection) owned by two
 * packs or by an already registered verb, no table created by two packs or by the runtime.
 *
 * Throws PackError naming the pack (its label), the field and the other owner.
 *
 * Spec: spec/manifest.md §packs.
 */
export function checkPacks(packs: readonly Pack[], options: CheckPacksOptions = {}): void {
  const label = (i: number) =>
    options.labels?.[i] ?? (typeof packs[i]?.name === 'string' ? packs[i]!.name : `#${i + 1}`);
  const verbOwner = new Map<string, string>();
  for (const name of options.registered ?? []) verbOwner.set(name, 'the runtime');
  const tableOwner = new Map<string, string>();
  for (const t of tablesOf(options.reservedMigrations ?? [])) tableOwner.set(t, 'the runtime');
  tableOwner.set('schema_migrations', 'the runtime');
  const packNames = new Map<string, string>();
  const reasonOwner = new Map<string, { pack: string; status: number; kind: string }>();
  packs.forEach((pack, i) => {
    if (options.validate?.(i) ?? true) validatePack(pack, label(i));
    const other = packNames.get(pack.name);
    if (other !== undefined)
      throw new PackError(
        label(i),
        'name',
        `"${pack.name}" is also the name of ${other}`,
        'Each pack needs its own name.',
      );
    packNames.set(pack.name, label(i));
    pack.verbs.forEach((v, j) => {
      const owner = verbOwner.get(v.name);
      if (owner !== undefined)
        throw new PackError(
          label(i),
          `verbs[${j}].name`,
          `verb "${v.name}" is already served by ${owner}`,
          'Prefix your verbs with your business (e.g. bookshop.order_place).',
        );
      verbOwner.set(v.name, `pack "${pack.name}"`);
    });
    for (const [reason, spec] of Object.entries(pack.reasons ?? {})) {
      const mine = { pack: pack.name, status: spec.status ?? 422, kind: spec.kind ?? 'domain' };
      const other = reasonOwner.get(reason);
      if (other !== undefined && (other.status !== mine.status || other.kind !== mine.kind))
        throw new PackError(
          label(i),
          `reasons.${reason}`,
          `is also declared by pack "${other.pack}" with status ${other.status} (${other.kind})`,
          'Declare a shared reason the same way in both packs, or name your own.',
        );
      reasonOwner.set(reason, mine);
    }
    for (const t of tablesOf(pack.migrations)) {
      const owner = tableOwner.get(t);
      if (owner !== undefined)
        throw new PackError(
          label(i),
          'migrations',
          `table "${t}" is already created by ${owner}`,
          'Prefix your tables with your pack name.',
        );
      tableOwner.set(t, `pack "${pack.name}"`);
    }
  });
}

/** runtime_meta key prefix recording which pack created a table: `pack_table:<table>` → pack name. */
const TABLE_OWNER_KEY = 'pack_table:';

/** The packs recorded as owning `tables` (table → pack), read from the database. */
async function tableOwners(store: Store, tables: readonly string[]): Promise<Map<string, string>> {
  if (tables.length === 0) return new Map();
  const rows = await store.read((q) =>
    q.all<{ key: string; value: string }>(
      `SELECT key, value FROM runtime_meta WHERE key IN (${tables.map(() => '?').join(', ')})`,
      tables.map((t) => TABLE_OWNER_KEY + t),
    ),
  );
  return new Map(rows.map((r) => [r.key.slice(TABLE_OWNER_KEY.length), r.value]));
}

/**
 * Install one checked pack on a runtime: its migrations (scope = pack name), its domain reasons
 * (on `rt.registry.reasons`, seen by this runtime only), its verbs, its outbox handlers. Call
 * {@link checkPacks} first for the whole set.
 *
 * The database records which pack created each table (runtime_meta `pack_table:<name>`), so on
 * every run a pack whose migrations create a table another pack created — in this run or any
 * earlier one, `CREATE TABLE IF NOT EXISTS` included — is refused naming the owner, before any of
 * its migrations runs. The pack's pending migrations apply together or not at all (Store.migrate).
 *
 * Throws PackError: a table owned by another pack (field `migrations`, one problem per table); a
 * migration that fails (field `migrations[i]`, naming the version and its name, with the
 * database's message; nothing of the pack migrated). StoreError `unavailable` passes through.
 * Spec: spec/manifest.md §packs.
 */
export async function installPack(rt: PackRuntime, pack: Pack): Promise<void> {
  const tables = [...tablesOf(pack.migrations)];
  const owners = await tableOwners(rt.store, tables);
  const p = new Problems(pack.name);
  for (const [table, owner] of owners)
    if (owner !== pack.name)
      p.add(
        'migrations',
        `table "${table}" belongs to pack "${owner}" (it created it in this database)`,
        "Prefix your tables with your pack name; a pack never shares another pack's table.",
      );
  p.done();
  try {
    await rt.store.migrate(pack.name, pack.migrations);
  } catch (err) {
    if (!(err instanceof StoreError) || err.code !== 'migration_failed') throw err;
    const m = /#(\d+) \(([^)]*)\) (?:failed: )?(.*)$/s.exec(err.message);
    const version = m ? Number(m[1]) : undefined;
    const i = pack.migrations.findIndex((x) => x.version === version);
    throw new PackError(
      pack.name,
      i >= 0 ? `migrations[${i}]` : 'migrations',
      `version ${version ?? '?'} (${m?.[2] ?? '?'}) failed on ${rt.store.engine === 'postgres' ? 'PostgreSQL' : 'SQLite'}: ${m?.[3] ?? err.message}; nothing of pack "${pack.name}" was migrated`,
      'Fix the SQL of that migration and start again: the versions not yet applied run together or not at all.',
    );
  }
  const unowned = tables.filter((t) => !owners.has(t));
  if (unowned.length > 0)
    await rt.store.write(async (tx) => {
      for (const t of unowned)
        await tx.run('INSERT INTO runtime_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING', [
          TABLE_OWNER_KEY + t,
          pack.name,
        ]);
    });
  if (pack.reasons) rt.registry.reasons.declare(pack.name, pack.reasons);
  rt.register(...pack.verbs);
  for (const [kind, h] of Object.entries(pack.outboxHandlers ?? {})) rt.outboxHandlers.set(kind, h);
}
