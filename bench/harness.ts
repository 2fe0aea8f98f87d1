/**
 * Benchmark helpers: timed loops, ABBA rounds, medians over runs, the built package's loader and
 * the result row every bench module returns. Figures are always ratios against a bare baseline
 * measured in the same run.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const DIST = new URL('../dist/', import.meta.url);

/**
 * Import a module of the built package (`dist/<rel>`, e.g. 'index.js'), what users install: every
 * bench module runs dist/, never the TypeScript sources (bench/run.ts builds first). Typed by the
 * caller as its source module (`fromDist<typeof import('../src/index.ts')>('index.js')`, a type
 * only, erased at run time), so the suite typechecks on a fresh clone before any build.
 * Throws when dist/ has no such file (run `npm run build`).
 */
export async function fromDist<T>(rel: string): Promise<T> {
  const url = new URL(rel, DIST);
  if (!existsSync(fileURLToPath(url)))
    throw new Error(`the bench runs the built package and dist/${rel} is missing: run \`npm run build\``);
  return (await import(url.href)) as T;
}

/** The package's entry point, dist/index.js. */
export type Solid = typeof import('../src/index.ts');

export interface BenchResult {
  /** Short id, e.g. "core.read". */
  id: string;
  /** What is measured, in words. */
  what: string;
  /** The measured figure of the system under test (ops/s unless `unit` says otherwise). */
  value: number;
  /** The bare baseline in the same run, when there is one. */
  baseline?: number;
  /** value / baseline (or the figure the target is about); the median of ABBA rounds' ratios. */
  ratio?: number;
  /** Smallest and largest per-round ratio of an ABBA measurement (`abba`). */
  min?: number;
  max?: number;
  unit: string;
  /** The target stated in the issues, e.g. "ratio ≥ 0.8". */
  target?: string;
  /** Did the figure meet the target? */
  met?: boolean;
  notes?: string;
}

/**
 * The BenchResult of a measurement whose target is a minimum ratio (system ÷ bare ≥ `min`); an
 * `abba` figure's min/max go with it.
 */
export function ratioResult(
  id: string,
  what: string,
  p: { value: number; baseline: number; ratio: number; min?: number; max?: number },
  unit: string,
  min: number,
  notes?: string,
): BenchResult {
  const r: BenchResult = {
    id,
    what,
    value: p.value,
    baseline: p.baseline,
    ratio: p.ratio,
    unit,
    target: `ratio ≥ ${min}`,
    met: p.ratio >= min,
  };
  if (p.min !== undefined) r.min = p.min;
  if (p.max !== undefined) r.max = p.max;
  if (notes !== undefined) r.notes = notes;
  return r;
}

/** Run `fn` repeatedly for about `ms` milliseconds (after a warm-up) and return ops/s. */
export async function opsPerSecond(fn: () => Promise<unknown>, ms = 1500, warmupMs = 300): Promise<number> {
  const warmEnd = performance.now() + warmupMs;
  while (performance.now() < warmEnd) await fn();
  let n = 0;
  const start = performance.now();
  const end = start + ms;
  while (performance.now() < end) {
    await fn();
    n++;
  }
  return (n * 1000) / (performance.now() - start);
}

/** Run `fn` with `concurrency` callers for about `ms` and return ops/s. */
export async function opsPerSecondConcurrent(
  fn: () => Promise<unknown>,
  concurrency: number,
  ms = 1500,
): Promise<number> {
  let n = 0;
  const start = performance.now();
  const end = start + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await fn();
        n++;
      }
    }),
  );
  return (n * 1000) / (performance.now() - start);
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Measure a system and its bare baseline alternately `runs` times (so drift hits both), and
 * return the medians and the median of the per-run ratios.
 */
export async function paired(
  system: () => Promise<number>,
  bare: () => Promise<number>,
  runs = 3,
): Promise<{ value: number; baseline: number; ratio: number }> {
  const v: number[] = [];
  const b: number[] = [];
  const r: number[] = [];
  for (let i = 0; i < runs; i++) {
    const bi = await bare();
    const vi = await system();
    v.push(vi);
    b.push(bi);
    r.push(vi / bi);
  }
  return { value: median(v), baseline: median(b), ratio: median(r) };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** PostgreSQL server binaries: SOLID_TEST_PG_BIN, or /usr/lib/postgresql/<v>/bin (newest first). */
export function findPgBin(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const given = env.SOLID_TEST_PG_BIN || env.PG_BIN;
  if (given) return existsSync(join(given, 'pg_ctl')) ? given : undefined;
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(join(base, v, 'bin', 'pg_ctl'))) return join(base, v, 'bin');
  return undefined;
}

/** Why bench/pg-faults.ts cannot run here (no PostgreSQL server binaries), or undefined. */
export function pgFaultsSkipReason(): string | undefined {
  return findPgBin() === undefined
    ? 'no PostgreSQL server binaries (pg_ctl) in SOLID_TEST_PG_BIN or /usr/lib/postgresql/*/bin: apt-get install postgresql'
    : undefined;
}

/** A ratio measured in ABBA rounds: the median, the extremes and every round's ratio. */
export interface AbbaFigure {
  /** Median of the system's figures over the rounds. */
  value: number;
  /** Median of the baseline's figures over the rounds. */
  baseline: number;
  /** Median of the per-round ratios (system ÷ baseline). */
  ratio: number;
  /** Smallest and largest per-round ratio. */
  min: number;
  max: number;
  /** Every round's ratio, in order. */
  ratios: number[];
}

/**
 * Measure a system (A) against its bare baseline (B) in ABBA order for `rounds` rounds (≥ 5 for a
 * published figure): even rounds run the baseline first, odd rounds the system first, so warm-up,
 * drift and the order of a pair hit both sides alike. Each side's function returns one figure
 * (ops/s or the like, higher is better); the per-round ratio is system ÷ baseline.
 */
export async function abba(
  system: () => Promise<number>,
  bare: () => Promise<number>,
  rounds = 5,
): Promise<AbbaFigure> {
  const v: number[] = [];
  const b: number[] = [];
  const r: number[] = [];
  for (let i = 0; i < rounds; i++) {
    let vi: number;
    let bi: number;
    if (i % 2 === 0) {
      bi = await bare();
      vi = await system();
    } else {
      vi = await system();
      bi = await bare();
    }
    v.push(vi);
    b.push(bi);
    r.push(vi / bi);
  }
  return {
    value: median(v),
    baseline: median(b),
    ratio: median(r),
    min: Math.min(...r),
    max: Math.max(...r),
    ratios: r,
  };
}

/** "min / median / max" of an ABBA figure's ratios, for a result's notes. */
export function abbaNote(f: AbbaFigure): string {
  const x = (n: number) => n.toFixed(2);
  return `ratio min/median/max ${x(f.min)} / ${x(f.ratio)} / ${x(f.max)} over ${f.ratios.length} ABBA rounds`;
}
