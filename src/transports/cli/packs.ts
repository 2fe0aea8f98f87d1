/**
 * A team's own packs for the CLI: `--pack <file|name>` (repeatable, any command that opens a
 * local database) and the config file `solid.config.js` / `solid.config.mjs` in the working
 * directory (or `--config <file>` / `SOLID_CONFIG`; `--config none` disables discovery):
 *
 *     // solid.config.js
 *     import bookshop from './bookshop-pack.js';
 *     export default { packs: [bookshop, './helpdesk-pack.js', 'demo'] };
 *
 * An entry is a pack object (definePack), a path to a module whose default export (or `pack`
 * export) is a pack or an array of packs — relative to the config file, or to the working
 * directory for `--pack` — or the name of a built-in pack (`demo`, `conformance`).
 *
 * Errors are PackError naming the file, the pack and the field; nothing is migrated (local.ts
 * checks every pack, then dry-runs the SQLite migrations, before touching the database).
 *
 * Spec: spec/manifest.md §packs, spec/transports.md §cli.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, extname, isAbsolute, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { KNOWN_PACKS } from '../../packs.ts';
import { PackError, type Pack } from '../../runtime/pack.ts';

/** A pack to load and where it came from (shown in errors). */
export interface PackSource {
  pack: Pack;
  /** `./bookshop-pack.js`, `solid.config.js packs[1]`, or a built-in name. */
  label: string;
  /** Set for a built-in pack (KNOWN_PACKS) named in the config or by --pack. */
  builtin?: string;
}

export interface PackSourceOptions {
  /** `--pack` values, in order. */
  packFiles?: readonly string[];
  /** `--config` value: a file, `none` (no config), or undefined to look for solid.config.(js|mjs). */
  config?: string;
  /** Working directory (default process.cwd()). */
  cwd?: string;
}

const CONFIG_NAMES = ['solid.config.js', 'solid.config.mjs'] as const;
const CONFIG_KEYS = new Set(['packs']);

/** The config file this invocation uses, or undefined (none found, or `none`). */
export function configPathOf(options: PackSourceOptions): string | undefined {
  const cwd = options.cwd ?? process.cwd();
  const given = options.config ?? (process.env.SOLID_CONFIG?.trim() || undefined);
  if (given === 'none') return undefined;
  if (given !== undefined) {
    const path = resolve(cwd, given);
    if (!existsSync(path))
      throw new PackError(
        given,
        '(file)',
        'does not exist',
        'Check --config / SOLID_CONFIG, or pass --config none.',
        'config',
      );
    return path;
  }
  for (const name of CONFIG_NAMES) {
    const path = resolve(cwd, name);
    if (existsSync(path)) return path;
  }
  return undefined;
}

/**
 * Load the packs of the config file and of `--pack`, in that order. Built-in names resolve to the
 * built-in pack. Throws PackError: a missing file, a module that does not load (its error
 * message kept), a module without a pack export, a config with an unknown key or no `packs` array.
 */
export async function loadPackSources(options: PackSourceOptions): Promise<PackSource[]> {
  const cwd = options.cwd ?? process.cwd();
  const out: PackSource[] = [];
  const configPath = configPathOf(options);
  if (configPath !== undefined) {
    const shown = shortPath(cwd, configPath);
    const config = exportOf(await importModule(configPath, shown, 'config'), shown, 'default');
    if (config === null || typeof config !== 'object' || Array.isArray(config))
      throw new PackError(
        shown,
        'default export',
        'is not an object',
        'export default { packs: [ … ] }',
        'config',
      );
    for (const key of Object.keys(config))
      if (!CONFIG_KEYS.has(key))
        throw new PackError(
          shown,
          key,
          'is not a config setting',
          `The config file knows: ${[...CONFIG_KEYS].join(', ')}.`,
          'config',
        );
    const packs = (config as { packs?: unknown }).packs;
    if (!Array.isArray(packs))
      throw new PackError(
        shown,
        'packs',
        'is not an array',
        'export default { packs: [myPack, "./other-pack.js"] }',
        'config',
      );
    for (const [i, entry] of packs.entries()) {
      const label = `${shown} packs[${i}]`;
      if (typeof entry === 'string') out.push(...(await fromSpec(entry, dirname(configPath), cwd, label)));
      else out.push({ pack: entry as Pack, label });
    }
  }
  for (const spec of options.packFiles ?? []) out.push(...(await fromSpec(spec, cwd, cwd, spec)));
  return dedupeBuiltins(out);
}

/** A string entry: a built-in pack name, else a module path relative to `base`. */
async function fromSpec(spec: string, base: string, cwd: string, label: string): Promise<PackSource[]> {
  const load = KNOWN_PACKS[spec];
  if (load !== undefined && !spec.includes('/') && !spec.includes('.'))
    return [{ pack: await load(), label, builtin: spec }];
  const path = isAbsolute(spec) ? spec : resolve(base, spec);
  const shown = shortPath(cwd, path);
  if (!existsSync(path))
    throw new PackError(
      shown,
      '(file)',
      'does not exist',
      `Give a path to a pack module (relative to ${base === cwd ? 'the working directory' : 'the config file'}) or a built-in pack name (${Object.keys(KNOWN_PACKS).join(', ')}).`,
    );
  const exported = exportOf(await importModule(path, shown), shown, 'pack');
  const packs = Array.isArray(exported) ? exported : [exported];
  return packs.map((pack, i) => ({ pack: pack as Pack, label: packs.length > 1 ? `${shown}[${i}]` : shown }));
}

async function importModule(
  path: string,
  shown: string,
  subject: 'pack' | 'config' = 'pack',
): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (err) {
    // definePack refused the pack while the module ran: the same error, named by its file.
    const p = err as Partial<PackError> | undefined;
    if (p?.name === 'PackError' && p.subject === 'pack')
      throw new PackError(
        shown,
        p.field ?? '(pack)',
        p.detail ?? String(p.message),
        p.hint,
        'pack',
        p.problems,
      );
    const e = err as NodeJS.ErrnoException;
    const ts = ['.ts', '.mts', '.cts'].includes(extname(path));
    const where = firstFrame(e, path);
    const missing = e.code === 'ERR_MODULE_NOT_FOUND' ? missingPackageOf(e.message) : undefined;
    throw new PackError(
      shown,
      '(module)',
      `cannot be loaded: ${e.name === 'Error' ? '' : `${e.name}: `}${e.message}${where}`,
      missing !== undefined
        ? missingPackageHint(missing, dirname(path))
        : ts && e.code === 'ERR_UNKNOWN_FILE_EXTENSION'
          ? 'Node cannot import TypeScript here: compile the pack to .js (tsc), or write it as .mjs.'
          : /Cannot use import statement|Unexpected token 'export'|require\(\) ES Module/.test(e.message)
            ? 'The file uses ES module syntax in a CommonJS scope: name it .mjs, or set "type": "module" in the nearest package.json.'
            : 'Run `node <file>` on it to see the error in full.',
      subject,
    );
  }
}

/** `pkg` of Node's `Cannot find package 'pkg' imported from …` (a bare import that did not resolve). */
function missingPackageOf(message: string): string | undefined {
  return /^Cannot find package '([^']+)'/.exec(message)?.[1];
}

/**
 * The hint for a pack whose bare import does not resolve from its folder: install the package in
 * the pack's project. For `solid-verbs` itself, also the route from a clone of this repository.
 */
function missingPackageHint(pkg: string, dir: string): string {
  if (pkg === 'solid-verbs')
    return (
      `The pack imports solid-verbs, which is not installed where the pack is: run \`npm install solid-verbs\` in ${dir} ` +
      '(or in a folder above it). From a clone of solid-verbs: `npm run build` in the clone, then ' +
      "`npm install <path-to-clone>` in the pack's project (or install the tarball `npm pack` makes)."
    );
  return `The pack imports ${pkg}, which is not installed where the pack is: run \`npm install ${pkg}\` in ${dir} (or in a folder above it).`;
}

/**
 * ` (line 3)` for a JavaScript syntax error: Node keeps the location out of the error object, so
 * ask `node --check` (only on this error path) where it is.
 */
function firstFrame(err: Error, path: string): string {
  if (err.name !== 'SyntaxError' || !['.js', '.mjs', '.cjs'].includes(extname(path))) return '';
  const check = spawnSync(process.execPath, ['--check', path], { encoding: 'utf8', timeout: 10_000 });
  const line = (check.stderr ?? '')
    .split('\n')
    .find((l) => l.endsWith(`:${l.split(':').pop()}`) && /:\d+$/.test(l));
  const m = line?.match(/:(\d+)$/);
  return m ? ` (line ${m[1]})` : '';
}

function exportOf(mod: Record<string, unknown>, shown: string, named: 'default' | 'pack'): unknown {
  const value = mod.default ?? (named === 'pack' ? mod.pack : undefined);
  if (value === undefined)
    throw new PackError(
      shown,
      '(module)',
      named === 'pack' ? 'exports no pack' : 'has no default export',
      named === 'pack' ? 'export default definePack({ … })' : 'export default { packs: [ … ] }',
      named === 'pack' ? 'pack' : 'config',
    );
  return value;
}

function shortPath(cwd: string, path: string): string {
  const rel = relative(cwd, path);
  return rel.startsWith('..') || isAbsolute(rel) ? path : `./${rel}`;
}

/** The same built-in pack named twice (config and --pack) loads once. */
function dedupeBuiltins(sources: PackSource[]): PackSource[] {
  const seen = new Set<string>();
  return sources.filter((s) => {
    if (s.builtin === undefined) return true;
    if (seen.has(s.builtin)) return false;
    seen.add(s.builtin);
    return true;
  });
}
