/**
 * Startup cost of the built CLI (issue 16): `solid --version`, `solid verbs list --json` and the
 * first answer of `solid mcp` (MCP `initialize` over stdio), each timed as wall-clock ms from spawn
 * to the answer, against `node` importing the same runtime dependencies bare (package.json
 * `dependencies`, plus for MCP an SDK stdio server answering `initialize`) in the same run,
 * alternating pairs, medians. Target: ratio ≤ 2 (the CLI costs at most twice its bare imports).
 *
 *   npm run bench -- --only startup        (builds dist/ first when it is missing)
 *
 * The CLI runs the build (SOLID_RUN=dist); the sources through tsx are timed once for the notes.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { median, type BenchResult } from './harness.ts';

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

/** Median ms of system and baseline over `runs` alternating pairs. */
async function paired(runs: number, system: () => Promise<number>, bare: () => Promise<number>) {
  const s: number[] = [];
  const b: number[] = [];
  const ratios: number[] = [];
  await system();
  await bare();
  for (let i = 0; i < runs; i++) {
    const x = await system();
    const y = await bare();
    s.push(x);
    b.push(y);
    ratios.push(x / y);
  }
  return { value: median(s), baseline: median(b), ratio: median(ratios) };
}

function result(
  id: string,
  what: string,
  p: { value: number; baseline: number; ratio: number },
  notes: string,
) {
  const r: BenchResult = {
    id,
    what,
    value: Math.round(p.value),
    baseline: Math.round(p.baseline),
    ratio: Number(p.ratio.toFixed(2)),
    unit: 'ms',
    target: 'ratio ≤ 2',
    met: p.ratio <= 2,
    notes,
  };
  return r;
}

export async function benchStartup(options: { runs?: number } = {}): Promise<BenchResult[]> {
  const runs = options.runs ?? 9;
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
    const deps = Object.keys(
      (
        JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
          dependencies: Record<string, string>;
        }
      ).dependencies,
    );
    const imports = deps.map(
      (d) =>
        `await import(${JSON.stringify(d === '@modelcontextprotocol/sdk' ? `${d}/server/index.js` : d)});`,
    );
    // The bare scripts live under node_modules/ so they resolve the repository's dependencies.
    const bareDir = mkdtempSync(join(ROOT, 'node_modules', '.solid-startup-'));
    cleanup.push(bareDir);
    const bareImports = join(bareDir, 'bare-imports.mjs');
    writeFileSync(bareImports, `${imports.join('\n')}\n`);
    const bareMcp = join(bareDir, 'bare-mcp.mjs');
    writeFileSync(
      bareMcp,
      `${imports.join('\n')}
const { Server } = await import('@modelcontextprotocol/sdk/server/index.js');
const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
const server = new Server({ name: 'bare', version: '1' }, { capabilities: { tools: {} } });
await server.connect(new StdioServerTransport());
`,
    );
    const nodePath = {};
    const dist = { SOLID_RUN: 'dist' };
    const bare = (file: string) => () => timeRun([file], { env: nodePath });
    const answered = (out: string) => out.includes('"id":1');
    const notes = `median of ${runs} alternating pairs, wall-clock ms from spawn to the answer; baseline: node importing the ${deps.length} runtime dependencies bare`;

    const version = await paired(runs, () => timeRun([BIN, '--version'], { env: dist }), bare(bareImports));
    const list = await paired(
      runs,
      () => timeRun([BIN, 'verbs', 'list', '--json', '--db', db], { env: dist }),
      bare(bareImports),
    );
    const mcp = await paired(
      runs,
      () => timeRun([BIN, 'mcp', '--db', db], { env: dist, input: INITIALIZE, done: answered }),
      () => timeRun([bareMcp], { env: nodePath, input: INITIALIZE, done: answered }),
    );
    const fromSources = await timeRun([BIN, '--version'], { env: { SOLID_RUN: 'src' } });
    return [
      result(
        'startup.version',
        '`solid --version` (built)',
        version,
        `${notes}; from the sources through tsx: ${Math.round(fromSources)} ms`,
      ),
      result(
        'startup.verbs_list',
        '`solid verbs list --json` on an initialised database (built)',
        list,
        notes,
      ),
      result(
        'startup.mcp_initialize',
        '`solid mcp`: spawn to the `initialize` answer over stdio (built)',
        mcp,
        `${notes}, plus an SDK stdio Server answering initialize`,
      ),
    ];
  } finally {
    for (const d of cleanup) rmSync(d, { recursive: true, force: true });
  }
}
