/**
 * `solid init`: create a database (migrations, keyfile with the nonce secret and master key, mode
 * 0600), a sandbox tenant (company 1, keyless reads) and your tenant with an owner API key printed
 * once. `solid init --pack NAME [--dir DIR]` instead writes a starter project for a pack of your
 * own (pack-template.ts). Spec: spec/transports.md §cli.
 */
import type { Command } from 'commander';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { RESERVED_SCOPES } from '../../../runtime/pack.ts';
import type { Envelope } from '../../../spec/types.ts';
import type { Tier } from '../../../spec/types.ts';
import { TIERS } from '../../../spec/types.ts';
import { databaseUrlOf, dbPathOf, localOptionsOf, openLocal, keyfileOf } from '../local.ts';
import type { Io } from '../output.ts';
import { printEnvelope } from '../output.ts';
import { STARTER_NAME, starterFiles } from '../pack-template.ts';
import { countTenants } from '../../../runtime/tenants.ts';

/** This package's version (package.json, three folders up from src/ and from dist/ alike). */
function ownVersion(): string {
  return (
    JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;
}

/**
 * `solid init --pack NAME [--dir DIR]`: write the starter project of {@link starterFiles} into DIR
 * (default ./NAME), its solid-verbs dependency `^<this version>`. Returns the exit code.
 * Refuses, with an `invalid_input` envelope (exit 2) and nothing written: more than one --pack, a
 * NAME that is not `[a-z][a-z0-9_]{0,39}` or is a reserved scope, a DIR that is a file or a
 * non-empty folder.
 */
export function scaffoldPack(
  io: Io,
  names: readonly string[],
  dir: string | undefined,
  json: boolean,
): number {
  const refuse = (message: string, hint: string): number =>
    printEnvelope(
      io,
      { ok: false, verb: 'init', error: { reason: 'invalid_input', message, hint } } as Envelope,
      json,
    );
  if (names.length !== 1)
    return refuse('solid init takes one --pack NAME.', 'Run `solid init --pack shop` once per pack.');
  const name = names[0]!;
  if (!STARTER_NAME.test(name) || RESERVED_SCOPES.has(name))
    return refuse(
      `${JSON.stringify(name)} is not a pack name solid init can use.`,
      'Use 1-40 lower case letters, digits and _, starting with a letter (it names the verbs and the table), and not runtime, webmcp or cli-login.',
    );
  const target = resolve(dir ?? name);
  if (existsSync(target) && (!statSync(target).isDirectory() || readdirSync(target).length > 0))
    return refuse(`${target} exists and is not an empty folder.`, 'Pass --dir with a new or empty folder.');
  const files = starterFiles(name, `^${ownVersion()}`);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(target, path)), { recursive: true });
    writeFileSync(join(target, path), text, { flag: 'wx' });
  }
  if (json) {
    io.out(
      JSON.stringify(
        { ok: true, verb: 'init', result: { pack: name, dir: target, files: Object.keys(files) } },
        null,
        2,
      ),
    );
  } else {
    io.out(
      [
        `✓ wrote the ${name} pack in ${target}`,
        ...Object.keys(files).map((f) => `  ${f}`),
        ``,
        `  cd ${dir ?? name}`,
        `  npm install && npm start   # solid init once, then solid serve --pack ./pack.mjs`,
        `  npm test`,
      ].join('\n'),
    );
  }
  return 0;
}

export function registerInit(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('init')
    .description(
      'Create a solid database with a sandbox tenant and your tenant; prints an owner API key once',
    )
    .option('--name <name>', 'your tenant name', 'My Company')
    .option('--tier <tier>', `subscription tier (${TIERS.join(', ')})`, 'starter')
    .option('--json', 'print machine-readable JSON')
    .option('--dir <dir>', 'with --pack NAME: the folder of the starter project (default ./NAME)')
    .addHelpText(
      'after',
      '\n  solid init --pack NAME [--dir DIR]   write a starter project for your own pack instead',
    )
    .action(async (opts: { name: string; tier: string; json?: boolean; dir?: string }) => {
      const g = program.opts<{ db?: string; pack?: string[] }>();
      if (g.pack !== undefined) {
        setExit(scaffoldPack(io, g.pack, opts.dir, opts.json === true));
        return;
      }
      if (opts.dir !== undefined) {
        io.err('✗ --dir goes with --pack NAME (solid init --pack shop --dir ./shop)');
        setExit(2);
        return;
      }
      const dbPath = dbPathOf(g.db);
      if (!(TIERS as readonly string[]).includes(opts.tier)) {
        io.err(`✗ --tier must be one of ${TIERS.join(', ')}`);
        setExit(2);
        return;
      }
      const existed = databaseUrlOf(g.db) !== undefined || existsSync(dbPath); // PostgreSQL: the database exists; check its tenants
      const local = await openLocal({ ...localOptionsOf(program), create: true });
      try {
        const count = await local.rt.store.read((q) => countTenants(q));
        if (existed && count > 0) {
          io.err(
            `✗ ${dbPath} is already initialised (${count} tenants). Use \`solid api-keys create\` for another key.`,
          );
          setExit(6);
          return;
        }
        await local.rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
        const t = await local.rt.createTenant({ name: opts.name, tier: opts.tier as Tier });
        const key = await local.rt.createApiKey({
          company_id: t.company_id,
          user_id: 1,
          role: 'owner',
          agent_type: 'cli',
          name: 'owner (solid init)',
        });
        if (opts.json) {
          io.out(
            JSON.stringify(
              { db: dbPath, keyfile: keyfileOf(dbPath), company_id: t.company_id, owner_api_key: key },
              null,
              2,
            ),
          );
        } else {
          io.out(
            [
              `✓ created ${dbPath}`,
              `  secrets: ${keyfileOf(dbPath)} (mode 0600; or set SOLID_NONCE_SECRET and SOLID_MASTER_KEY)`,
              `  tenant ${t.company_id} "${t.name}" (${t.tier}) and a sandbox tenant (1) for keyless reads`,
              ``,
              `  owner API key (shown once, store it now):`,
              `  ${key}`,
              ``,
              `  export SOLID_API_KEY=${key}`,
            ].join('\n'),
          );
        }
      } finally {
        await local.close();
      }
    });
}
