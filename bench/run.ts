/**
 * `npm run bench` — the whole benchmark suite as one run (issue 11).
 *
 *   npm run bench [-- --only core,http,… ] [--quick] [--write] [--no-build] [--max-load 1.5] [--max-wait-min 60]
 *
 * The runner first builds the package (`npm run build`, once; `--no-build` skips it when dist/ is
 * known fresh): every module benches the built dist/ (what users install), so no figure can come
 * from a stale build. Every module runs in its own child process (fresh heap and JIT, a crash stops only that module)
 * and returns figures measured against a bare baseline in the same run; modules whose figure is a
 * single measurement run `repeat` times and the runner takes the medians (value, baseline, and the
 * median of the per-run ratios). The runner normalises the modules' result shapes (extra fields go
 * into the notes), checks each figure against the target stated in the issues (TARGETS below),
 * prints a summary table, and with `--write` regenerates the results section of BENCHMARKS.md
 * (between the `bench:results` markers; figures of modules not run now are kept with their own
 * date and load, so a module can be re-measured alone). `--quick` runs every module briefly (to
 * check the suite works; the figures are not the ones to publish). `--max-load X` waits before each
 * module until the 1-minute load average is below X (others share this machine), up to
 * `--max-wait-min` minutes, and records the load at the start and end of each module.
 *
 * Modules (MODULES below is the list that runs): core register readcost bodybounds consent replay
 * verify export retention trail trailfilters http toolslist mcp ucp observe durable faults pgfaults
 * postgres platform scale startup rss profile
 * (postgres only when SOLID_BENCH_DATABASE_URL or SOLID_TEST_DATABASE_URL is set; pgfaults starts
 * its own throwaway cluster and is skipped without PostgreSQL server binaries). `profile`
 * (bench/profile.ts) records a CPU profile of the system side of each figure that can miss and
 * says where its time goes by layer; with `--write` it regenerates its own section of
 * BENCHMARKS.md (between the `bench:profiles` markers) and leaves the section alone when it did
 * not run.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, pgFaultsSkipReason, type BenchResult } from './harness.ts';
import { PROFILES_END, PROFILES_START, renderProfileSection, type ProfileDetail } from './profile.ts';

/** One figure as the runner reports it (the modules' rows, normalised). */
export type Figure = BenchResult & { module: string };

interface ModuleRun {
  module: string;
  started_at: string;
  seconds: number;
  load_start: number;
  load_end: number;
  repeat: number;
  quick: boolean;
  error?: string;
}

interface Target {
  on: 'ratio' | 'value';
  op: '>=' | '<=';
  x: number;
  text: string;
}

const t = (on: Target['on'], op: Target['op'], x: number, text: string): Target => ({ on, op, x, text });

/** The targets stated in the issues, by figure id (prefix match when the id ends with '*'). */
export const TARGETS: Record<string, Target> = {
  'core.read_keyed': t('ratio', '>=', 0.9, 'ratio ≥ 0.9'),
  'core.write_confirmed_vs_careful': t('ratio', '>=', 0.5, 'ratio ≥ 0.5'),
  'core.write_wal_frames': t('value', '<=', 10, '≤ 10 frames'),
  'register.system_verbs': t('value', '<=', 100, '≤ 100 ms'),
  'read.demo_full_context': t('ratio', '>=', 0.8, 'ratio ≥ 0.8'),
  'read.without_audit_row': t('ratio', '>=', 0.8, 'ratio ≥ 0.8 (diagnostic)'),
  'body.refused_*': t('value', '<=', 20, '≤ 20 ms'),
  'consent.gate': t('ratio', '>=', 0.8, 'ratio ≥ 0.8'),
  'ledger.verify': t('value', '>=', 100_000, '≥ 100,000 rows/s'),
  'ledger.trail.p95': t('ratio', '<=', 1.5, 'ratio ≤ 1.5'),
  'trail.worst_filter_1m': t('ratio', '>=', 0.7, 'ratio ≥ 0.7'),
  'trail.max_call_cpu_1m': t('value', '<=', 20, '≤ 20 ms'),
  'http.dispatch_read': t('ratio', '>=', 0.85, 'ratio ≥ 0.85'),
  'mcp.tools_list_bytes': t('value', '<=', 110_000, '≤ 110,000 bytes'),
  'mcp.tools_list_bytes_2026': t('value', '<=', 110_000, '≤ 110,000 bytes'),
  'mcp.tools_list_bytes_*': t('value', '<=', 150_000, '≤ 150,000 bytes'),
  'mcp.answer_bytes_vs_http': t('ratio', '<=', 1.3, 'ratio ≤ 1.3'),
  'mcp.*': t('ratio', '>=', 0.8, 'ratio ≥ 0.8'),
  'ucp.verify_share_*': t('value', '<=', 20, '≤ 20 %'),
  'observe.read': t('ratio', '>=', 0.9, 'overhead ≤ 10 % (ratio ≥ 0.9)'),
  'observe.write': t('ratio', '>=', 0.9, 'overhead ≤ 10 % (ratio ≥ 0.9)'),
  'observe.hooks': t('ratio', '<=', 0.1, 'ratio ≤ 0.1'),
  'durable.full_vs_normal': t('ratio', '>=', 1, 'ratio ≥ 1.0'),
  'durable.normal_group_commit_p99': t('ratio', '<=', 1, 'ratio ≤ 1.0'),
  'startup.mcp_vs_sdk': t('ratio', '<=', 1.5, 'ratio ≤ 1.5'),
  'startup.verbs_list': t('ratio', '<=', 1.5, 'ratio ≤ 1.5'),
  'startup.*': t('ratio', '<=', 2, 'ratio ≤ 2'),
  'scale.unknown_verb_10k': t('ratio', '<=', 2, 'ratio ≤ 2'),
  'serve.rss': t('value', '<=', 150, '≤ 150 MiB'),
  'faults.refused_body_*': t('value', '<=', 20, '≤ 20 ms'),
  'faults.stall_p99': t('value', '<=', 10_000, '≤ 10,000 ms (the request deadline)'),
  'faults.stall_read_p99': t('value', '<=', 500, '≤ 500 ms'),
  'faults.pg_*': t(
    'value',
    '<=',
    10_100,
    '≤ 10,100 ms (the 10 s request deadline + 1 %: the deadline answers)',
  ),
  'scale.register_10k': t('value', '<=', 1000, '≤ 1,000 ms'),
  'platform.per_call_1k': t('ratio', '<=', 1.2, 'ratio ≤ 1.2 (flat)'),
  'mcp.read_vs_sdk': t('ratio', '>=', 0.9, 'ratio ≥ 0.9'),
  'mcp.write_vs_sdk_careful': t('ratio', '>=', 0.5, 'ratio ≥ 0.5'),
  'mcp.adapter_in_memory': t('ratio', '>=', 0.8, 'ratio ≥ 0.8 (diagnostic)'),
  'peers.read.*': t('ratio', '>=', 0.9, 'ratio ≥ 0.9'),
  'peers.write.*': t('ratio', '>=', 0.5, 'ratio ≥ 0.5'),
  'serve.rss_vs_fastify': t('ratio', '<=', 1.25, 'ratio ≤ 1.25 (peak)'),
  'pg.one_tenant_two_nodes': t('ratio', '>=', 1.6, 'ratio ≥ 1.6'),
};

export function targetOf(id: string): Target | undefined {
  if (TARGETS[id] !== undefined) return TARGETS[id];
  for (const [k, v] of Object.entries(TARGETS))
    if (k.endsWith('*') && id.startsWith(k.slice(0, -1))) return v;
  return undefined;
}

function meets(f: Figure, target: Target): boolean | undefined {
  const x = target.on === 'ratio' ? f.ratio : f.value;
  if (x === undefined || !Number.isFinite(x)) return undefined;
  return target.op === '>=' ? x >= target.x : x <= target.x;
}

interface ModuleSpec {
  /** How many times the runner repeats the module (full run); medians are taken over them. */
  repeat: number;
  run(quick: boolean): Promise<unknown>;
  /** Why the module is skipped in this environment, if it is. */
  skip?(): string | undefined;
}

const pgUrl = () => process.env.SOLID_BENCH_DATABASE_URL ?? process.env.SOLID_TEST_DATABASE_URL;

/** The modules, in run order. Each is imported in its child process only. */
export const MODULES: Record<string, ModuleSpec> = {
  core: {
    repeat: 1,
    run: async (q) => (await import('./core.ts')).benchCore(q ? { ms: 500, runs: 1 } : { ms: 1500, runs: 5 }),
  },
  register: {
    repeat: 3,
    run: async (q) => (await import('./register.ts')).benchRegister(q ? { runs: 5 } : {}),
  },
  readcost: {
    repeat: 1,
    run: async (q) => (await import('./read-cost.ts')).benchReadCost(q ? { ms: 500, runs: 1 } : {}),
  },
  bodybounds: {
    repeat: 1,
    run: async (q) => (await import('./body-bounds.ts')).benchBodyBounds(q ? { requests: 10 } : {}),
  },
  consent: {
    repeat: 1,
    run: async (q) => (await import('./consent.ts')).benchConsent(q ? { batch: 100, rounds: 2 } : {}),
  },
  replay: {
    repeat: 3,
    run: async (q) => (await import('./ledger.ts')).benchIdempotentReplay(q ? { ms: 500 } : { ms: 2000 }),
  },
  verify: {
    repeat: 3,
    run: async (q) => (await import('./ledger.ts')).benchAuditVerify(q ? { rows: 100_000 } : {}),
  },
  export: {
    repeat: 1,
    run: async (q) => (await import('./ledger.ts')).benchAuditExport(q ? { rows: 20_000 } : {}),
  },
  retention: {
    repeat: 1,
    // SOLID_BENCH_RETENTION_ROWS: a smaller log on a machine too loaded for 1M rows (say so).
    run: async (q) =>
      (await import('./ledger.ts')).benchAuditRetention(
        q ? { rows: 100_000 } : { rows: Number(process.env.SOLID_BENCH_RETENTION_ROWS ?? 1_000_000) },
      ),
  },
  trail: {
    repeat: 1,
    run: async (q) =>
      (await import('./ledger.ts')).benchTrail(q ? { large: 100_000, samplesPerQuery: 50 } : {}),
  },
  trailfilters: {
    repeat: 1,
    run: async (q) =>
      (await import('./trail-filters.ts')).benchTrailFilters(q ? { large: 100_000, samples: 5 } : {}),
  },
  http: {
    repeat: 1,
    run: async (q) => (await import('./http.ts')).benchHttp(q ? { durationSeconds: 1, runs: 5 } : {}),
  },
  toolslist: {
    repeat: 1,
    run: async () => (await import('./tools-list.ts')).benchToolsList(),
  },
  mcp: { repeat: 1, run: async (q) => (await import('./mcp.ts')).benchMcp(q ? { ms: 500, runs: 1 } : {}) },
  peers: {
    repeat: 1,
    run: async (q) =>
      (await import('./peers.ts')).benchPeers(q ? { ms: 500, rounds: 2, profile: false } : {}),
  },
  ucp: {
    repeat: 3,
    run: async (q) => (await import('./ucp.ts')).benchUcp(q ? { requests: 300, warmup: 50 } : {}),
  },
  observe: {
    repeat: 1,
    run: async (q) => (await import('./observe.ts')).benchObserve(q ? { ms: 500, runs: 1 } : {}),
  },
  durable: {
    repeat: 1,
    run: async (q) => (await import('./durable.ts')).benchDurable(q ? { ms: 1000, runs: 1 } : {}),
  },
  faults: {
    repeat: 1,
    run: async (q) =>
      (await import('./faults.ts')).benchFaults(q ? { ms: 1000, runs: 1, bodies: 3, stallMs: 6000 } : {}),
  },
  pgfaults: {
    repeat: 1,
    skip: () => pgFaultsSkipReason(),
    run: async (q) =>
      (await import('./pg-faults.ts')).benchPgFaults(
        q ? { calmMs: 3000, frozenMs: 10_000, stallMs: 10_000 } : {},
      ),
  },
  pgnodes: {
    repeat: 1,
    skip: () => pgFaultsSkipReason(),
    run: async (q) =>
      (await import('./postgres.ts')).benchPgNodes(q ? { ms: 2000, rounds: 2, concurrency: 4 } : {}),
  },
  postgres: {
    repeat: 1,
    skip: () =>
      pgUrl() === undefined
        ? 'no PostgreSQL URL (set SOLID_BENCH_DATABASE_URL or SOLID_TEST_DATABASE_URL; `source .ci/postgres.sh` starts a throwaway server)'
        : undefined,
    run: async (q) =>
      (await import('./postgres.ts')).benchPostgres({ url: pgUrl(), ...(q ? { ms: 3000 } : {}) }),
  },
  platform: {
    repeat: 1,
    run: async (q) =>
      (await import('./platform.ts')).benchPlatform(q ? { runs: 3, calls: 500, tenants: 200 } : {}),
  },
  scale: {
    repeat: 1,
    run: async (q) => (await import('./scale.ts')).benchScale(q ? { runs: 3, calls: 100 } : {}),
  },
  startup: {
    repeat: 1,
    run: async (q) => (await import('./startup.ts')).benchStartup(q ? { runs: 5 } : {}),
  },
  rss: {
    repeat: 1,
    run: async (q) =>
      (await import('./serve-rss.ts')).benchServeRss(q ? { rows: 100_000, loadSeconds: 3 } : {}),
  },
  profile: {
    repeat: 1,
    run: async (q) => (await import('./profile.ts')).benchProfile({ quick: q }),
  },
};

// `detail`: a module's structured extra (the profile module's attribution), kept out of the notes.
const KNOWN = new Set([
  'id',
  'what',
  'value',
  'baseline',
  'ratio',
  'min',
  'max',
  'unit',
  'target',
  'met',
  'notes',
  'detail',
]);

/** The `detail` fields of a module's raw rows (the profile module's ProfileDetail). */
export function detailsOf(raw: unknown): ProfileDetail[] {
  const rows = (Array.isArray(raw) ? raw : [raw]) as Array<{ detail?: ProfileDetail }>;
  return rows.map((r) => r.detail).filter((d): d is ProfileDetail => d !== undefined);
}

/** Normalise whatever a module returned (a row or rows, extra fields) into Figures. */
export function normalise(module: string, raw: unknown): Figure[] {
  const rows = (Array.isArray(raw) ? raw : [raw]) as Array<Record<string, unknown>>;
  return rows.map((r) => {
    const extras = Object.entries(r).filter(([k]) => !KNOWN.has(k));
    const extraText = extras
      .map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
      .join('; ');
    const notes = [r.notes as string | undefined, extraText || undefined].filter(Boolean).join('; ');
    const f: Figure = {
      id: String(r.id),
      module,
      what: String(r.what ?? ''),
      value: Number(r.value),
      unit: String(r.unit ?? ''),
    };
    if (typeof r.baseline === 'number') f.baseline = r.baseline;
    if (typeof r.ratio === 'number') f.ratio = r.ratio;
    if (typeof r.min === 'number') f.min = r.min;
    if (typeof r.max === 'number') f.max = r.max;
    if (notes) f.notes = notes;
    const target = targetOf(f.id);
    if (target !== undefined) {
      f.target = target.text;
      f.met = meets(f, target);
    } else if (typeof r.target === 'string') {
      f.target = r.target;
      if (typeof r.met === 'boolean') f.met = r.met;
    }
    return f;
  });
}

/** Medians of repeated runs of one module, figure by figure. */
export function mergeRuns(runs: Figure[][]): Figure[] {
  if (runs.length === 1) return runs[0]!;
  const first = runs[0]!;
  return first.map((f) => {
    const same = runs.map((r) => r.find((x) => x.id === f.id)).filter((x): x is Figure => x !== undefined);
    const out: Figure = { ...f, value: median(same.map((x) => x.value)) };
    if (f.baseline !== undefined) out.baseline = median(same.map((x) => x.baseline!));
    if (f.ratio !== undefined) out.ratio = median(same.map((x) => x.ratio!));
    // The extremes over every run's rounds.
    const mins = same.map((x) => x.min).filter((x): x is number => x !== undefined);
    const maxs = same.map((x) => x.max).filter((x): x is number => x !== undefined);
    if (mins.length > 0) out.min = Math.min(...mins);
    if (maxs.length > 0) out.max = Math.max(...maxs);
    const target = targetOf(f.id);
    if (target !== undefined) out.met = meets(out, target);
    const spread = same.map((x) => fmt(x.ratio ?? x.value, x.ratio !== undefined ? '' : x.unit)).join(', ');
    out.notes = `median of ${same.length} runs (${f.ratio !== undefined ? 'ratios' : 'values'}: ${spread})${f.notes ? `; first run: ${f.notes}` : ''}`;
    return out;
  });
}

export function fmt(x: number | undefined, unit: string): string {
  if (x === undefined || !Number.isFinite(x)) return '–';
  if (unit === '' || unit === '×') return x.toFixed(Math.abs(x) >= 10 ? 1 : 2);
  if (/MiB|%/.test(unit)) return x.toFixed(1);
  if (unit === 'ms' || unit === 'µs') return x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(2) : x.toFixed(3);
  return Math.round(x).toLocaleString('en-US');
}

/** "min / **median** / max" when the figure has ABBA extremes, else the ratio alone. */
export function ratioCell(f: Pick<Figure, 'ratio' | 'min' | 'max'>, bold = true): string {
  if (f.ratio === undefined) return '';
  const m = fmt(f.ratio, '');
  if (f.min === undefined || f.max === undefined) return m;
  return `${fmt(f.min, '')} / ${bold ? `**${m}**` : m} / ${fmt(f.max, '')}`;
}

function shortUnit(unit: string): string {
  return unit.startsWith('%') ? '%' : unit;
}

// ---------------------------------------------------------------------------------------------
// Child: run one module and print its figures as one JSON line.

const MARK = 'BENCH_JSON:';

async function child(module: string, quick: boolean): Promise<void> {
  const spec = MODULES[module];
  if (spec === undefined) throw new Error(`unknown module ${module}`);
  const raw = await spec.run(quick);
  process.stdout.write(`${MARK}${JSON.stringify(raw)}\n`);
}

function runChild(module: string, quick: boolean): Promise<unknown> {
  const self = fileURLToPath(import.meta.url);
  return new Promise((ok, fail) => {
    const c = spawn(
      process.execPath,
      ['--import', 'tsx', self, '--child', module, ...(quick ? ['--quick'] : [])],
      { stdio: ['ignore', 'pipe', 'inherit'], env: process.env },
    );
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const guard = setTimeout(() => c.kill('SIGKILL'), 40 * 60_000);
    c.on('exit', (code, sig) => {
      clearTimeout(guard);
      const line = out.split('\n').find((l) => l.startsWith(MARK));
      if (code === 0 && line !== undefined) ok(JSON.parse(line.slice(MARK.length)));
      else
        fail(
          new Error(
            `module ${module} exited ${code ?? sig}${out.trim() ? `: ${out.trim().slice(-500)}` : ''}`,
          ),
        );
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Parent.

interface Args {
  only?: string[];
  quick: boolean;
  write: boolean;
  build: boolean;
  maxLoad?: number;
  maxWaitMin: number;
  file: string;
}

function parseArgs(argv: string[]): Args {
  const a: Args = {
    quick: false,
    write: false,
    build: true,
    maxWaitMin: 60,
    file: resolve(fileURLToPath(new URL('../BENCHMARKS.md', import.meta.url))),
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!;
    const v = () => {
      const x = argv[++i];
      if (x === undefined) throw new Error(`${k} needs a value`);
      return x;
    };
    if (k === '--only')
      a.only = v()
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    else if (k === '--quick') a.quick = true;
    else if (k === '--write') a.write = true;
    else if (k === '--no-build') a.build = false;
    else if (k === '--max-load') a.maxLoad = Number(v());
    else if (k === '--max-wait-min') a.maxWaitMin = Number(v());
    else if (k === '--file') a.file = resolve(v());
    else throw new Error(`unknown option ${k} (see the header of bench/run.ts)`);
  }
  for (const m of a.only ?? [])
    if (MODULES[m] === undefined)
      throw new Error(`unknown module ${m}; known: ${Object.keys(MODULES).join(', ')}`);
  return a;
}

/** `npm run build` in the repository, once before the modules; throws when it fails. */
function build(): Promise<void> {
  const root = fileURLToPath(new URL('../', import.meta.url));
  return new Promise((ok, fail) => {
    const c = spawn('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    c.on('error', fail);
    c.on('exit', (code, sig) =>
      code === 0
        ? ok()
        : fail(new Error(`npm run build exited ${code ?? sig}: no figure from a stale dist/`)),
    );
  });
}

const load1 = () => Math.round(loadavg()[0]! * 100) / 100;

async function waitForLoad(max: number | undefined, maxWaitMin: number): Promise<void> {
  if (max === undefined) return;
  const until = Date.now() + maxWaitMin * 60_000;
  let said = false;
  while (load1() >= max && Date.now() < until) {
    if (!said) process.stderr.write(`bench: load ${load1()} ≥ ${max}, waiting…\n`);
    said = true;
    await new Promise((r) => setTimeout(r, 15_000));
  }
  if (load1() >= max)
    process.stderr.write(`bench: load still ${load1()} after ${maxWaitMin} min; measuring anyway\n`);
}

export function machine(): { cpu: string; cores: number; memory_gib: number; node: string } {
  const c = cpus();
  return {
    cpu: c[0]?.model.trim() ?? 'unknown',
    cores: c.length,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  };
}

interface Stored {
  figures: Figure[];
  runs: ModuleRun[];
  machine: ReturnType<typeof machine>;
  command: string;
}

const START = '<!-- bench:results:start -->';
const END = '<!-- bench:results:end -->';
const DATA = /<!-- bench:data (.*?) -->/s;

function readStored(file: string): Stored | undefined {
  if (!existsSync(file)) return undefined;
  const m = DATA.exec(readFileSync(file, 'utf8'));
  if (m === null) return undefined;
  try {
    return JSON.parse(m[1]!.replace(/\\u002d\\u002d/g, '--')) as Stored;
  } catch {
    return undefined;
  }
}

function table(figures: Figure[], runs: ModuleRun[]): string {
  const lines = [
    '| figure | value | baseline | ratio (min / median / max) | target | met? | load |',
    '|---|---:|---:|---:|---|:---:|---:|',
  ];
  for (const f of figures) {
    const r = runs.find((x) => x.module === f.module);
    const load = r ? `${r.load_start.toFixed(1)}→${r.load_end.toFixed(1)}` : '';
    const met = f.met === undefined ? '' : f.met ? 'yes' : '**no**';
    lines.push(
      `| \`${f.id}\` | ${fmt(f.value, f.unit)} ${shortUnit(f.unit)} | ${f.baseline === undefined ? '' : `${fmt(f.baseline, f.unit)}`} | ${ratioCell(f)} | ${f.target ?? ''} | ${met} | ${load} |`,
    );
  }
  return lines.join('\n');
}

export function renderSection(s: Stored): string {
  const m = s.machine;
  const runs = [...s.runs].sort(
    (a, b) => Object.keys(MODULES).indexOf(a.module) - Object.keys(MODULES).indexOf(b.module),
  );
  const figures = [...s.figures].sort(
    (a, b) => Object.keys(MODULES).indexOf(a.module) - Object.keys(MODULES).indexOf(b.module),
  );
  const out: string[] = [
    START,
    '## Results (generated by `npm run bench -- --write`)',
    '',
    `Machine: **${m.cpu}, ${m.cores} cores** (os.cpus()), ${m.memory_gib} GiB, Node ${m.node}, Linux. Command of the last run: \`${s.command}\`.`,
    'Each module ran in its own process; "load" is the 1-minute load average at the start → end of its module (other work shares this machine; above ~1.5 on 2 cores wall-clock figures are noisy). Ratios are system ÷ bare baseline measured in the same run unless the notes say otherwise.',
    '',
    table(figures, runs),
    '',
    '| module | measured at (UTC) | seconds | repeats | load start → end |',
    '|---|---|---:|---:|---|',
    ...runs.map(
      (r) =>
        `| ${r.module} | ${r.started_at.replace('T', ' ').slice(0, 16)}${r.quick ? ' (quick)' : ''} | ${Math.round(r.seconds)} | ${r.repeat} | ${r.load_start.toFixed(2)} → ${r.load_end.toFixed(2)}${r.error ? ` — **failed**: ${r.error.replace(/\|/g, '/').slice(0, 200)}` : ''} |`,
    ),
    '',
    '<details><summary>What each figure measures, and the notes of its run</summary>',
    '',
    ...figures.map(
      (f) => `- \`${f.id}\` (${f.unit}) — ${f.what}.${f.notes ? ` ${f.notes.replace(/\n/g, ' ')}` : ''}`,
    ),
    '',
    '</details>',
    '',
    `<!-- bench:data ${JSON.stringify(s).replace(/--/g, '\\u002d\\u002d')} -->`,
    END,
  ];
  return out.join('\n');
}

function writeSection(file: string, section: string): void {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  let next: string;
  if (a >= 0 && b > a) next = text.slice(0, a) + section + text.slice(b + END.length);
  else {
    // After the title paragraph.
    const firstSection = text.indexOf('\n## ');
    next =
      firstSection >= 0
        ? `${text.slice(0, firstSection + 1)}${section}\n\n${text.slice(firstSection + 1)}`
        : `${text.trimEnd()}\n\n${section}\n`;
  }
  writeFileSync(file, next);
}

/** Replace the profiles section of `file` (or insert it after the results section). */
function writeProfiles(file: string, section: string): void {
  const text = readFileSync(file, 'utf8');
  const a = text.indexOf(PROFILES_START);
  const b = text.indexOf(PROFILES_END);
  let next: string;
  if (a >= 0 && b > a) next = text.slice(0, a) + section + text.slice(b + PROFILES_END.length);
  else {
    const r = text.indexOf(END);
    next =
      r >= 0
        ? `${text.slice(0, r + END.length)}\n\n${section}${text.slice(r + END.length)}`
        : `${text.trimEnd()}\n\n${section}\n`;
  }
  writeFileSync(file, next);
}

async function main(argv: string[]): Promise<void> {
  const ci = argv.indexOf('--child');
  if (ci >= 0) return child(argv[ci + 1]!, argv.includes('--quick'));
  const args = parseArgs(argv);
  const command = `npm run bench${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`;
  const selected = args.only ?? Object.keys(MODULES);
  const figures: Figure[] = [];
  const runs: ModuleRun[] = [];
  const skipped: string[] = [];
  let profiles: { details: ProfileDetail[]; run: ModuleRun } | undefined;
  process.stderr.write(
    `bench: ${machine().cpu}, ${machine().cores} cores, Node ${process.version}; modules: ${selected.join(', ')}${args.quick ? ' (quick)' : ''}\n`,
  );
  if (args.build) {
    process.stderr.write('bench: npm run build (the modules bench dist/; --no-build skips this)\n');
    await build();
  }
  for (const module of selected) {
    const spec = MODULES[module]!;
    const why = spec.skip?.();
    if (why !== undefined) {
      skipped.push(`${module}: ${why}`);
      process.stderr.write(`bench: skip ${module} — ${why}\n`);
      continue;
    }
    await waitForLoad(args.maxLoad, args.maxWaitMin);
    const repeat = args.quick ? 1 : spec.repeat;
    const started = new Date();
    const loadStart = load1();
    process.stderr.write(`bench: ${module} (×${repeat}, load ${loadStart})…\n`);
    const t0 = Date.now();
    const per: Figure[][] = [];
    let error: string | undefined;
    let details: ProfileDetail[] = [];
    for (let i = 0; i < repeat; i++) {
      try {
        const raw = await runChild(module, args.quick);
        if (i === 0) details = detailsOf(raw);
        per.push(normalise(module, raw));
      } catch (err) {
        error = (err as Error).message;
        process.stderr.write(`bench: ${module} failed: ${error}\n`);
        break;
      }
    }
    if (per.length > 0) figures.push(...mergeRuns(per));
    const run: ModuleRun = {
      module,
      started_at: started.toISOString(),
      seconds: (Date.now() - t0) / 1000,
      load_start: loadStart,
      load_end: load1(),
      repeat: per.length,
      quick: args.quick,
      ...(error ? { error } : {}),
    };
    runs.push(run);
    if (details.length > 0 && error === undefined) profiles = { details, run };
    for (const f of figures.filter((x) => x.module === module)) {
      process.stderr.write(
        `  ${f.id.padEnd(32)} ${fmt(f.value, f.unit).padStart(10)} ${shortUnit(f.unit).padEnd(8)} base ${fmt(f.baseline, f.unit).padStart(9)}  ratio ${ratioCell(f, false).padStart(6)}  ${f.target ?? ''} ${f.met === undefined ? '' : f.met ? 'MET' : 'NOT MET'}\n`,
      );
    }
  }

  console.log(
    `\nMachine: ${machine().cpu}, ${machine().cores} cores, Node ${process.version}; ${new Date().toISOString()}; ${command}\n`,
  );
  console.log(table(figures, runs));
  for (const s of skipped) console.log(`\nskipped ${s}`);

  if (args.write) {
    const prior = readStored(args.file);
    const kept = prior ? prior.figures.filter((f) => !selected.includes(f.module)) : [];
    const keptRuns = prior ? prior.runs.filter((r) => !selected.includes(r.module)) : [];
    const stored: Stored = {
      figures: [...kept, ...figures],
      runs: [...keptRuns, ...runs],
      machine: machine(),
      command,
    };
    writeSection(args.file, renderSection(stored));
    console.log(`\nwrote the results section of ${args.file}`);
    if (profiles !== undefined) {
      writeProfiles(
        args.file,
        renderProfileSection(profiles.details, {
          command,
          at: profiles.run.started_at,
          load: `${profiles.run.load_start.toFixed(2)} → ${profiles.run.load_end.toFixed(2)}`,
          quick: profiles.run.quick,
          machine: machine(),
        }),
      );
      console.log(`wrote the profiles section of ${args.file}`);
    }
  }
  if (runs.some((r) => r.error)) process.exitCode = 1;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main(process.argv.slice(2));
}
