/**
 * `solid init`: create a database (migrations, keyfile with the nonce secret and master key, mode
 * 0600), a sandbox tenant (company 1, keyless reads) and your tenant with an owner API key printed
 * once. `solid init --starter NAME [--dir DIR]` instead writes a starter project for a pack of your
 * own (pack-template.ts). `--pack` means a pack module or built-in pack here as on every command
 * (the database is created serving it); `solid init --pack NAME` with a bare NAME that is neither
 * still writes the starter, with a deprecation notice naming `--starter`. Spec: spec/transports.md §cli.
 */
import type { Command } from 'commander';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RESERVED_SCOPES } from '../../../runtime/pack.ts';
import { KNOWN_PACKS } from '../../../packs.ts';
import type { Envelope } from '../../../spec/types.ts';
import type { Tier } from '../../../spec/types.ts';
import { TIERS } from '../../../spec/types.ts';
import { databaseUrlOf, dbPathOf, localOptionsOf, openLocal, keyfileOf } from '../local.ts';
import type { Io } from '../output.ts';
import { printEnvelope } from '../output.ts';
import { STARTER_NAME, starterFiles } from '../pack-template.ts';
import { countTenants } from '../../../runtime/tenants.ts';
import { enrolmentUrl } from '../../../identity/enrolment.ts';
import { ownerEnrolmentLink } from '../../../identity/invite.ts';
import { linkBaseOf } from './users.ts';

/** This package's version (package.json, three folders up from src/ and from dist/ alike). */
function ownVersion(): string {
  return (
    JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;
}

/** This package's root folder (package.json's), from src/ and from dist/ alike. */
function ownRoot(): string {
  return fileURLToPath(new URL('../../../../', import.meta.url)).replace(/[\\/]$/, '');
}

/** A path or word as a POSIX shell reads it (quoted only when it must be). */
function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`;
}

/** Where a starter project gets solid-verbs from, and what to run before its `npm install`. */
export interface StarterSource {
  /** The package.json spec: always a `file:` tarball (relative to the project), never a registry range. */
  dependency: string;
  /** Commands to run first (from the folder `solid init` ran in), e.g. the `npm pack` that makes the tarball. */
  before: string[];
}

/**
 * Where the starter project takes solid-verbs from. solid-verbs is not on the npm registry, and a
 * registry range (`^0.1.0`) in a generated package.json would install whatever someone later
 * publishes under that unclaimed name (dependency confusion), so the dependency is always a
 * `file:` tarball:
 *
 * - `root` is installed from a tarball (`<host>/node_modules/solid-verbs`, and the host's
 *   package.json names a `file:….tgz` that exists): that tarball, relative to `target`; nothing to
 *   run first.
 * - `root` is a checkout (it has src/ or .git): `file:solid-verbs-<version>.tgz` in the project,
 *   made first by `npm pack --pack-destination DIR` in the checkout.
 * - otherwise: the same `file:` name, and the tarball to copy into the project first.
 *
 * `dirArg` is the project folder as the user named it, `cwd` the folder the commands run from.
 * Never throws (an unreadable host package.json is the third case). Spec: spec/transports.md §cli.
 */
export function starterSource(o: {
  root: string;
  version: string;
  target: string;
  dirArg: string;
  cwd: string;
}): StarterSource {
  const tarball = `solid-verbs-${o.version}.tgz`;
  const inProject: StarterSource = { dependency: `file:${tarball}`, before: [] };
  if (basename(o.root) === 'solid-verbs' && basename(dirname(o.root)) === 'node_modules') {
    const host = dirname(dirname(o.root));
    try {
      const pkg = JSON.parse(readFileSync(join(host, 'package.json'), 'utf8')) as Record<
        string,
        Record<string, unknown> | undefined
      >;
      const spec = pkg.dependencies?.['solid-verbs'] ?? pkg.devDependencies?.['solid-verbs'];
      if (typeof spec === 'string' && spec.startsWith('file:') && spec.endsWith('.tgz')) {
        const file = resolve(host, spec.slice('file:'.length));
        if (existsSync(file) && statSync(file).isFile())
          return { dependency: `file:${relative(o.target, file).split(sep).join('/')}`, before: [] };
      }
    } catch {
      /* no readable host package.json: ask for the tarball below */
    }
  }
  const dest = o.dirArg.endsWith('/') ? o.dirArg : `${o.dirArg}/`;
  if (existsSync(join(o.root, 'src')) || existsSync(join(o.root, '.git'))) {
    inProject.before.push(
      resolve(o.cwd) === resolve(o.root)
        ? `npm pack --pack-destination ${shellWord(o.dirArg)}`
        : `(cd ${shellWord(o.root)} && npm pack --pack-destination ${shellWord(o.target)})`,
    );
  } else {
    inProject.before.push(`cp /path/to/${tarball} ${shellWord(dest)}`);
  }
  return inProject;
}

/**
 * `solid init --starter NAME [--dir DIR]`: write the starter project of {@link starterFiles} into DIR
 * (default ./NAME), its solid-verbs dependency a `file:` tarball ({@link starterSource}: never the
 * npm registry, where solid-verbs is not published), and print the exact commands to run next
 * (`--json`: `result.dependency` and `result.next`). Returns the exit code.
 * Refuses, with an `invalid_input` envelope (exit 2) and nothing written: more than one name, a
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
    return refuse('solid init takes one --starter NAME.', 'Run `solid init --starter shop` once per pack.');
  const name = names[0]!;
  if (!STARTER_NAME.test(name) || RESERVED_SCOPES.has(name))
    return refuse(
      `${JSON.stringify(name)} is not a pack name solid init can use.`,
      'Use 1-40 lower case letters, digits and _, starting with a letter (it names the verbs and the table), and not runtime, webmcp or cli-login.',
    );
  const target = resolve(dir ?? name);
  if (existsSync(target) && (!statSync(target).isDirectory() || readdirSync(target).length > 0))
    return refuse(`${target} exists and is not an empty folder.`, 'Pass --dir with a new or empty folder.');
  const version = ownVersion();
  const dirArg = dir ?? name;
  const source = starterSource({ root: ownRoot(), version, target, dirArg, cwd: process.cwd() });
  const files = starterFiles(name, source.dependency);
  const next = [...source.before, `cd ${shellWord(dirArg)}`, 'npm install && npm start', 'npm test'];
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(target, path)), { recursive: true });
    writeFileSync(join(target, path), text, { flag: 'wx' });
  }
  if (json) {
    io.out(
      JSON.stringify(
        {
          ok: true,
          verb: 'init',
          result: { pack: name, dir: target, files: Object.keys(files), dependency: source.dependency, next },
        },
        null,
        2,
      ),
    );
  } else {
    const why: Record<string, string> = {
      'npm install && npm start':
        '# solid init once (prints an owner key), then solid serve --pack ./pack.mjs',
      'npm test': "# the pack's tests (node --test, solid-verbs/testing)",
    };
    const beforeWhy = source.before[0]?.startsWith('cp ')
      ? '# the tarball you installed solid-verbs from'
      : '# a tarball of this solid-verbs checkout, into the project';
    const width = Math.max(...next.map((l) => l.length));
    io.out(
      [
        `✓ wrote the ${name} pack in ${target}`,
        ...Object.keys(files).map((f) => `  ${f}`),
        ``,
        `solid-verbs is not on the npm registry: package.json takes it from ${source.dependency}. Next:`,
        ...next.map((l) => {
          const note = source.before.includes(l) ? beforeWhy : why[l];
          return note === undefined ? `  ${l}` : `  ${l.padEnd(width)}   ${note}`;
        }),
      ].join('\n'),
    );
  }
  return 0;
}

/** A `--pack` value that can only be the old starter name: bare, no such file, not a built-in pack. */
function isStarterName(value: string): boolean {
  return !/[/.]/.test(value) && KNOWN_PACKS[value] === undefined && !existsSync(value);
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
    .option(
      '--starter <name>',
      'write a starter project for your own pack named NAME instead (a folder; see --dir)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--dir <dir>', 'with --starter NAME: the folder of the starter project (default ./NAME)')
    .addHelpText(
      'after',
      '\n  solid init --starter NAME [--dir DIR]   write a starter project for your own pack instead',
    )
    .action(
      async (opts: { name: string; tier: string; json?: boolean; dir?: string; starter?: string[] }) => {
        const g = program.opts<{ db?: string; pack?: string[] }>();
        if (opts.starter !== undefined) {
          setExit(scaffoldPack(io, opts.starter, opts.dir, opts.json === true));
          return;
        }
        // `--pack` names a pack module or a built-in pack, as on every command. The old meaning
        // here (a starter's name) still works for a bare name that is neither, with a notice.
        if (g.pack !== undefined && g.pack.every(isStarterName)) {
          io.err(
            `! solid init --pack ${g.pack.join(' --pack ')} is deprecated: use solid init --starter ${g.pack[0]} (--pack names a pack module or a built-in pack on every command).`,
          );
          setExit(scaffoldPack(io, g.pack, opts.dir, opts.json === true));
          return;
        }
        if (opts.dir !== undefined) {
          io.err('✗ --dir goes with --starter NAME (solid init --starter shop --dir ./shop)');
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
          // The owner signs in as a human (passkey or TOTP) from this one-time link; the API key is
          // for agents. spec/consent.md §human-sign-in
          const owner = await ownerEnrolmentLink(local.rt.store, t.company_id, local.rt.clock());
          const enrolUrl =
            owner === undefined ? undefined : enrolmentUrl(linkBaseOf(undefined), owner.link.token);
          if (opts.json) {
            io.out(
              JSON.stringify(
                {
                  db: dbPath,
                  keyfile: keyfileOf(dbPath),
                  company_id: t.company_id,
                  owner_api_key: key,
                  ...(enrolUrl !== undefined ? { owner_enrolment_url: enrolUrl } : {}),
                },
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
                ...(enrolUrl !== undefined
                  ? [
                      ``,
                      `  the owner's enrolment link (one use, 24 h; \`solid serve\` prints a fresh one until you enrol):`,
                      `  ${enrolUrl}`,
                      `  open it once the server runs and register a passkey: you approve agents' actions as a signed-in human`,
                    ]
                  : []),
              ].join('\n'),
            );
          }
        } finally {
          await local.close();
        }
      },
    );
}
