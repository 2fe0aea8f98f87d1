/**
 * Startup cost of the built CLI (issue 16): `solid --version`, `solid verbs list --json` and the
 * first answer of `solid mcp` (MCP `initialize` over stdio), each timed as wall-clock ms from spawn
 * to the answer, against `node` importing bare the same packages that command of the built CLI
 * imports (recorded per command with a module resolve hook: every bare specifier a file in dist/
 * resolves, in order; plus for MCP an SDK stdio server answering `initialize`) in the same run,
 * ABBA rounds (≥ 5; bench/harness.ts `abba`), ratio min/median/max in the notes. Target: ratio ≤ 2 (the CLI costs at most twice its bare imports).
 *
 * Against baselines that import only what the command needs (issue 36; target ratio ≤ 1.5):
 * `startup.mcp_vs_sdk` — `solid mcp` to its `initialize` answer vs a plain MCP server on the
 * SDK's McpServer over stdio; `startup.verbs_list` — `solid verbs list --json` vs a script
 * opening the database with better-sqlite3, one query, the JSON printed.
 * (`startup.verbs_list_imports` keeps the comparison with every package the command imports.)
 *
 *   npm run bench -- --only startup        (builds dist/ first when it is missing)
 *
 * The CLI runs the build (SOLID_RUN=dist); the sources through tsx are timed once for the notes.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { abba, abbaNote, type AbbaFigure, type BenchResult } from './harness.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BIN = join(ROOT, 'bin', 'solid.js');

const INITIALIZE =
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
  }) + '\n';

/** Spawn `node args`, optionally write `input`, resolve with ms until `done(stdout)` (or exit). */
function timeRun(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; done?: (out: string) => boolean } = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, SOLID_LOG_LEVEL: 'silent', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let settled = false;
    const finish = (ms: number) => {
      if (settled) return;
      settled = true;
      resolve(ms);
    };
    child.stdout.on('data', (d: Buffer) => {
      out += String(d);
      if (options.done?.(out)) {
        finish(performance.now() - t0);
        child.kill();
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += String(d)));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (settled) return;
      if (options.done !== undefined || code !== 0)
        reject(new Error(`node ${args.join(' ')} exited ${code}: ${err.slice(0, 500)}`));
      else finish(performance.now() - t0);
    });
    if (options.input !== undefined) child.stdin.write(options.input);
    else child.stdin.end();
  });
}

/**
 * A `--import` module registering a resolve hook that appends to $SOLID_RECORD_IMPORTS every bare
 * package specifier (not node:, not a builtin, not relative) a file under dist/ resolves.
 */
function writeRecorder(dir: string): string {
  const hooks = join(dir, 'record-hooks.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
let out;
export function initialize(data) { out = data.out; }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (out && /^[@a-z]/i.test(specifier) && !isBuiltin(specifier) && (context.parentURL ?? '').includes('/dist/'))
    appendFileSync(out, specifier + '\\n');
  return r;
}
`,
  );
  const recorder = join(dir, 'record-imports.mjs');
  writeFileSync(
    recorder,
    `import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(hooks).href)}, { data: { out: process.env.SOLID_RECORD_IMPORTS } });
`,
  );
  return recorder;
}

/** Run the built CLI once with the recorder; the distinct package specifiers it imported, in order. */
async function recordImports(
  recorder: string,
  args: string[],
  options: { input?: string; done?: (out: string) => boolean },
): Promise<string[]> {
  const out = join(dirname(recorder), `imports-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(out, '');
  await timeRun(['--import', pathToFileURL(recorder).href, ...args], {
    ...options,
    env: { SOLID_RUN: 'dist', SOLID_RECORD_IMPORTS: out },
  });
  const seen = [
    ...new Set(
      readFileSync(out, 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    ),
  ];
  if (seen.length === 0) throw new Error(`recorded no imports for node ${args.join(' ')}`);
  return seen;
}

/**
 * System and baseline timed in ABBA rounds (bench/harness.ts `abba`, one warm-up run of each
 * first): per-round ratio system ms ÷ baseline ms, so lower is better here.
 */
async function paired(runs: number, system: () => Promise<number>, bare: () => Promise<number>) {
  await system();
  await bare();
  return abba(system, bare, runs);
}

function result(id: string, what: string, p: AbbaFigure, notes: string, max = 2) {
  const r: BenchResult = {
    id,
    what,
    value: Math.round(p.value),
    baseline: Math.round(p.baseline),
    ratio: Number(p.ratio.toFixed(2)),
    unit: 'ms',
    target: `ratio ≤ ${max}`,
    met: p.ratio <= max,
    notes: `${abbaNote(p)}; ${notes}`,
  };
  return r;
}

export async function benchStartup(options: { runs?: number } = {}): Promise<BenchResult[]> {
  const runs = Math.max(5, options.runs ?? 9);
  if (!existsSync(join(ROOT, 'dist', 'transports', 'cli', 'main.js')))
    execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'build.ts')], {
      cwd: ROOT,
      stdio: 'ignore',
    });
  const dir = mkdtempSync(join(tmpdir(), 'solid-startup-'));
  const cleanup = [dir];
  try {
    const db = join(dir, 'bench.db');
    execFileSync(process.execPath, [BIN, 'init', '--db', db], {
      env: { ...process.env, SOLID_RUN: 'dist', SOLID_LOG_LEVEL: 'silent' },
      stdio: 'ignore',
    });
    // The bare scripts live under node_modules/ so they resolve the repository's dependencies.
    const bareDir = mkdtempSync(join(ROOT, 'node_modules', '.solid-startup-'));
    cleanup.push(bareDir);
    const recorder = writeRecorder(bareDir);
    const dist = { SOLID_RUN: 'dist' };
    const answered = (out: string) => out.includes('"id":1');
    const versionArgs = [BIN, '--version'];
    const listArgs = [BIN, 'verbs', 'list', '--json', '--db', db];
    const mcpArgs = [BIN, 'mcp', '--db', db];
    const versionDeps = await recordImports(recorder, versionArgs, {});
    const listDeps = await recordImports(recorder, listArgs, {});
    const mcpDeps = await recordImports(recorder, mcpArgs, { input: INITIALIZE, done: answered });
    const importsOf = (deps: string[]) => deps.map((d) => `await import(${JSON.stringify(d)});`).join('\n');
    const bareVersion = join(bareDir, 'bare-version.mjs');
    writeFileSync(bareVersion, `${importsOf(versionDeps)}\n`);
    const bareList = join(bareDir, 'bare-list.mjs');
    writeFileSync(bareList, `${importsOf(listDeps)}\n`);
    const bareMcp = join(bareDir, 'bare-mcp.mjs');
    writeFileSync(
      bareMcp,
      `${importsOf(mcpDeps)}
const { Server } = await import('@modelcontextprotocol/sdk/server/index.js');
const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
const server = new Server({ name: 'bare', version: '1' }, { capabilities: { tools: {} } });
await server.connect(new StdioServerTransport());
`,
    );
    // Baselines that import only what the command needs (issue 36): an MCP server on the SDK's own
    // McpServer over stdio (one tool) answering initialize; and a verbs list as a script would do
    // it: better-sqlite3 opening the database, one query, the JSON printed.
    const sdkMcp = join(bareDir, 'sdk-mcp.mjs');
    writeFileSync(
      sdkMcp,
      `const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
const server = new McpServer({ name: 'sdk', version: '1' });
server.registerTool('ping', { description: 'ping' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
await server.connect(new StdioServerTransport());
`,
    );
    const scriptList = join(bareDir, 'script-list.mjs');
    writeFileSync(
      scriptList,
      `const { default: Database } = await import('better-sqlite3');
const db = new Database(${JSON.stringify(db)}, { readonly: true });
const rows = db.prepare("SELECT name, type FROM sqlite_master ORDER BY name").all();
process.stdout.write(JSON.stringify({ verbs: rows }) + '\\n');
db.close();
`,
    );
    const nodePath = {};
    const bare = (file: string) => () => timeRun([file], { env: nodePath });
    const notes = (deps: string[]) =>
      `wall-clock ms from spawn to the answer; baseline: node importing bare the ${deps.length} packages this command of the built CLI imports (${deps.join(', ')})`;

    const version = await paired(runs, () => timeRun(versionArgs, { env: dist }), bare(bareVersion));
    const list = await paired(runs, () => timeRun(listArgs, { env: dist }), bare(bareList));
    const listVsScript = await paired(runs, () => timeRun(listArgs, { env: dist }), bare(scriptList));
    const mcpVsSdk = await paired(
      runs,
      () => timeRun(mcpArgs, { env: dist, input: INITIALIZE, done: answered }),
      () => timeRun([sdkMcp], { env: nodePath, input: INITIALIZE, done: answered }),
    );
    const mcp = await paired(
      runs,
      () => timeRun(mcpArgs, { env: dist, input: INITIALIZE, done: answered }),
      () => timeRun([bareMcp], { env: nodePath, input: INITIALIZE, done: answered }),
    );
    const fromSources = await timeRun([BIN, '--version'], { env: { SOLID_RUN: 'src' } });
    return [
      result(
        'startup.version',
        '`solid --version` (built)',
        version,
        `${notes(versionDeps)}; from the sources through tsx: ${Math.round(fromSources)} ms`,
      ),
      result(
        'startup.verbs_list',
        '`solid verbs list --json` on an initialised database (built) vs a script doing the same with only what it needs: better-sqlite3 opening the database, one query, the JSON printed',
        listVsScript,
        'wall-clock ms from spawn to exit (medians)',
        1.5,
      ),
      result(
        'startup.verbs_list_imports',
        '`solid verbs list --json` (built) vs node importing bare every package it imports',
        list,
        notes(listDeps),
      ),
      result(
        'startup.mcp_vs_sdk',
        '`solid mcp` (built): spawn to the `initialize` answer over stdio, vs a plain MCP server on the SDK (McpServer, one tool, StdioServerTransport: only those imports)',
        mcpVsSdk,
        'wall-clock ms from spawn to the answer (medians)',
        1.5,
      ),
      result(
        'startup.mcp_initialize',
        '`solid mcp`: spawn to the `initialize` answer over stdio (built)',
        mcp,
        `${notes(mcpDeps)}, plus an SDK stdio Server answering initialize`,
      ),
    ];
  } finally {
    for (const d of cleanup) rmSync(d, { recursive: true, force: true });
  }
}
