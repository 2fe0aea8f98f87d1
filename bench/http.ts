/**
 * HTTP benchmark (issues 8, 21, 36), on the built package (dist/): `POST
 * /api/v1/agent/dispatch/<read verb>` on the server `solid serve` runs (createServeApp: every
 * http mount — WebMCP, dashboard, MCP, UCP —, the request log at info, rate limits, JSON parser,
 * envelope mapping, the bearer API key authenticated on every request, the whole dispatch
 * pipeline with its buffered read audit row) against what a user writes instead: a bare Fastify
 * route with the same logger running the same SQL on a raw better-sqlite3 prepared statement (its
 * own connection to the same file) and answering the same envelope shape. Both log at info to /dev/null (serialised like serve's stderr lines, not kept). The rate
 * limits count every call as serve's do, with limits too high to refuse any. autocannon runs in
 * its own child process (bench/autocannon-child.mjs), so its CPU is not counted against either
 * side: 10 connections, ~5 s each, after a short warm-up of each, in ABBA rounds (≥ 5; min /
 * median / max of the per-round ratios). Returns req/s of both and their ratio (target ≥ 0.85); the
 * notes add this process's CPU per answered request on each side (process.cpuUsage over each run:
 * only one side is loaded at a time and the load generator is another process), which a busy
 * machine disturbs less than req/s.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import pino from 'pino';
import Database from 'better-sqlite3';
import { abba, abbaNote, fromDist, type BenchResult, type Solid } from './harness.ts';
import { SEARCH_SQL, seedContactsBench } from './contacts.ts';

const { createRuntime, SqliteStore } = await fromDist<Solid>('index.js');
const { createServeApp } = await fromDist<typeof import('../src/transports/cli/commands/serve.ts')>(
  'transports/cli/commands/serve.js',
);
const { DEFAULT_RATE_LIMITS } = await fromDist<typeof import('../src/transports/http/rate-limit.ts')>(
  'transports/http/rate-limit.js',
);

export interface HttpBenchOptions {
  /** Seconds per measured autocannon run (default 5). */
  durationSeconds?: number;
  /** Seconds of warm-up per target before measuring (default 1). */
  warmupSeconds?: number;
  /** Concurrent connections (default 10). */
  connections?: number;
  /** ABBA rounds (at least 5, the default); the figures are medians. */
  runs?: number;
}

const CHILD = fileURLToPath(new URL('./autocannon-child.mjs', import.meta.url));

/** One autocannon run in a child process (bench/autocannon-child.mjs); `duration` in seconds. */
export function measure(
  url: string,
  body: string,
  headers: Record<string, string>,
  connections: number,
  duration: number,
): Promise<{ rps: number; total: number; non2xx: number; errors: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [CHILD, JSON.stringify({ url, method: 'POST', body, headers, connections, duration })],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`autocannon child exited with ${code}`));
      try {
        resolve(JSON.parse(out) as { rps: number; total: number; non2xx: number; errors: number });
      } catch (err) {
        reject(err as Error);
      }
    });
  });
}

/** Run the HTTP benchmark; returns one BenchResult (id "http.dispatch_read"). */
export async function benchHttp(options: HttpBenchOptions = {}): Promise<BenchResult[]> {
  const duration = options.durationSeconds ?? 5;
  const warmup = options.warmupSeconds ?? 1;
  const connections = options.connections ?? 10;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-http-'));
  const store = new SqliteStore({ path: join(dir, 'bench.db') });
  // serve's logger (openLocal: pino at info) writing to /dev/null instead of stderr.
  const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
  const rt = await createRuntime({ store, logger, sandboxCompanyId: 1 });
  const high = 1_000_000_000;
  const api = await createServeApp(rt, {
    onMountError: (name, err) => {
      throw new Error(`transport ${name} not mounted: ${(err as Error).message}`);
    },
    http: { rateLimits: { ...DEFAULT_RATE_LIMITS, perKey: high, perSession: high, perAddress: high } },
  });
  const bare = Fastify({ loggerInstance: logger.child({ transport: 'bare' }) });
  let raw: Database.Database | undefined;
  try {
    const key = await seedContactsBench(rt);
    raw = new Database(join(dir, 'bench.db'), { readonly: true });
    const search = raw.prepare(SEARCH_SQL);
    bare.post('/bare/search', async (req) => {
      const q = ((req.body as { args?: { q?: string } } | undefined)?.args?.q ?? '') as string;
      const rows = search.all(2, `%${q}%`);
      return {
        ok: true,
        verb: 'bench.search',
        result: { entity_id: 2, data: { matches: rows.length, contacts: rows } },
      };
    });
    await api.listen({ port: 0, host: '127.0.0.1' });
    await bare.listen({ port: 0, host: '127.0.0.1' });
    const apiUrl = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}/api/v1/agent/dispatch/bench.search`;
    const bareUrl = `http://127.0.0.1:${(bare.server.address() as AddressInfo).port}/bare/search`;
    const body = JSON.stringify({ args: { q: 'smith' } });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };

    await measure(bareUrl, body, headers, connections, warmup);
    await measure(apiUrl, body, headers, connections, warmup);
    let failures = 0;
    let apiFailures = 0;
    const cpu = { api: [] as number[], bare: [] as number[] };
    const run = async (url: string, isApi: boolean) => {
      const before = process.cpuUsage();
      const m = await measure(url, body, headers, connections, duration);
      const used = process.cpuUsage(before);
      if (m.total > 0) (isApi ? cpu.api : cpu.bare).push((used.user + used.system) / m.total);
      failures += m.non2xx + m.errors;
      if (isApi) apiFailures += m.non2xx + m.errors;
      return m.rps;
    };
    const rounds = Math.max(5, options.runs ?? 5);
    const fig = await abba(
      () => run(apiUrl, true),
      () => run(bareUrl, false),
      rounds,
    );
    const { value, baseline, ratio } = fig;
    return [
      {
        id: 'http.dispatch_read',
        what: `POST /api/v1/agent/dispatch/<read verb> (contact search, bearer API key authenticated per request) on solid serve's server (dist/; every mount, request log at info, rate limits counting) vs a bare Fastify route with the same logger running the same SQL on a raw better-sqlite3 prepared statement; autocannon in its own process, ${connections} connections, ${duration} s each, loopback`,
        value,
        baseline,
        ratio,
        min: fig.min,
        max: fig.max,
        unit: 'req/s',
        target: 'ratio ≥ 0.85',
        met: ratio >= 0.85 && failures === 0,
        notes: `${abbaNote(fig)}; server CPU per request ${median(cpu.api).toFixed(0)} µs vs ${median(cpu.bare).toFixed(0)} µs bare (medians)${failures > 0 ? `; ${failures} non-2xx or failed requests (api ${apiFailures}, bare ${failures - apiFailures})` : ''}`,
      },
    ];
  } finally {
    await api.close();
    await bare.close();
    raw?.close();
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)]!;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchHttp(), null, 2));
}
