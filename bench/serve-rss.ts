/**
 * Memory of `solid serve` on a large audit log (issue 11): resident set size (RSS, MiB) of the
 * real server process on the seeded demo database with `rows` extra audit rows (default 1M,
 * generated with generateAuditChain from bench/ledger.ts into the main demo tenant), against the
 * same server on the same seeded database without them (the baseline), in the same run.
 *
 * Per database: start `solid serve --db … --port 0` (bin/solid.js, a separate process), wait for
 * its ready line, warm up (verbs.list, audit.trail pages, a contact search), then load it with
 * autocannon for `loadSeconds` (10 connections, a mix of reads and audit.trail pages), sampling
 * the process's RSS (/proc/<pid>/status VmRSS) every 250 ms. Reported: RSS after warm-up, peak
 * during load, and after load; the figure is the peak with the large log ÷ the peak without
 * (ratio ≈ 1: the server's memory does not grow with the log; no stated target).
 *
 * The server runs the built package (dist/, `npm run build`) when it is there, as users run it:
 * from the sources, bin/solid.js loads tsx, whose compiler and per-module source maps add ≈ 40
 * MiB that no installed server has (the figure's notes say which one ran).
 *
 * Run alone: node --import tsx bench/serve-rss.ts [rows]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import type { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { abba, abbaNote, median, type BenchResult } from './harness.ts';
import { built } from './built.ts';

type LocalModule = typeof import('../src/transports/cli/local.ts');
/** The built package's openLocal, DEMO_TENANTS and setTenantSetting (dist/). */
const dist = async () => ({
  openLocal: (await built<LocalModule>('transports/cli/local.js')).openLocal,
  DEMO_TENANTS: (await built<typeof import('../src/business/pack.ts')>('business/pack.js')).DEMO_TENANTS,
  setTenantSetting: (await built<typeof import('../src/runtime/tenants.ts')>('runtime/tenants.js'))
    .setTenantSetting,
});

const BIN = resolve(fileURLToPath(new URL('../bin/solid.js', import.meta.url)));
/** Whether `npm run build` output is there (then the served process runs it: SOLID_RUN=dist). */
const BUILT = existsSync(fileURLToPath(new URL('../dist/transports/cli/main.js', import.meta.url)));

export interface ServeRssOptions {
  /** Extra audit rows in the large database (default 1,000,000). */
  rows?: number;
  /** Seconds of load after the warm-up (default 10). */
  loadSeconds?: number;
  /** serve.rss_vs_fastify: seconds of load per side and round (default 5, or loadSeconds when less). */
  fastifyLoadSeconds?: number;
  /** serve.rss_vs_fastify: ABBA rounds (default 5; 2 when loadSeconds < 5). */
  rounds?: number;
}

/** Resident set size of a process in MiB (Linux /proc). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

/**
 * Start `solid serve` on a database (`nodeArgs`: node's own flags, e.g. --cpu-prof); resolves
 * with the child and its base URL once ready.
 */
export async function startServe(
  db: string,
  extra: string[] = [],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<{ child: ChildProcess; base: string; stdout: () => string; stderr: () => string }> {
  const child = spawn(process.execPath, [...nodeArgs, BIN, 'serve', '--port', '0', '--db', db, ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SOLID_API_KEY: '', SOLID_LOG_LEVEL: 'error', ...env },
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const base = await new Promise<string>((ok, fail) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /solid serve: ready on (http:\/\/\S+)/.exec(out);
      if (m) ok(m[1]!);
    });
    child.once('exit', (code) =>
      fail(new Error(`solid serve exited (${code}) before ready:\n${out}\n${err}`)),
    );
  });
  return { child, base, stdout: () => out, stderr: () => err };
}

/** Stop a served child with SIGTERM (SIGKILL after 10 s) and wait for its exit. */
export async function stopServe(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(t);
}

/** Seed a demo database at `db` and create an owner key for the main tenant. */
export async function seedDemo(db: string): Promise<string> {
  return (await seedDemoFacts(db)).key;
}

/** seedDemo, with the main tenant's fixture customer (a contact id write verbs can use). */
export async function seedDemoFacts(db: string): Promise<{ key: string; customerId: number }> {
  const { openLocal, DEMO_TENANTS } = await dist();
  const local = await openLocal({ db, create: true, packs: ['demo'], logLevel: 'error' });
  try {
    const pack = local.packs.find((p) => p.name === 'demo');
    if (pack?.seed === undefined) throw new Error('the demo pack is not available');
    const facts = (await pack.seed(local.rt, {})) as { fixtures?: { customer_id?: number } };
    const customerId = facts.fixtures?.customer_id;
    if (customerId === undefined) throw new Error('the demo seed returned no fixture customer');
    const key = await local.rt.createApiKey({
      company_id: DEMO_TENANTS.main.company_id,
      user_id: 1,
      role: 'owner',
      agent_type: 'bench',
    });
    return { key, customerId };
  } finally {
    await local.close();
  }
}

/**
 * Raise a tenant's daily caps the way its operator would, straight in the database file (the
 * caps verbs refuse a loosening from an agent's key: spec/consent.md §channels). A server already
 * running on the file sees the change within its 5 s settings cache.
 */
export async function raiseCaps(
  db: string,
  companyId: number,
  caps: Partial<Record<'WRITE_REVERSIBLE' | 'WRITE_FINANCIAL' | 'IRREVERSIBLE', number>>,
): Promise<void> {
  const { openLocal, setTenantSetting } = await dist();
  const local = await openLocal({ db, logLevel: 'error' });
  try {
    await local.rt.store.write(async (tx) => {
      const row = await tx.get<{ settings: unknown }>('SELECT settings FROM tenants WHERE company_id = ?', [
        companyId,
      ]);
      const parsed = (
        typeof row?.settings === 'string' ? JSON.parse(row.settings) : (row?.settings ?? {})
      ) as {
        caps?: Record<string, number>;
      };
      await setTenantSetting(tx, companyId, 'caps', { ...parsed.caps, ...caps });
    });
  } finally {
    await local.close();
  }
}

async function addRows(db: string, rows: number): Promise<void> {
  const { openLocal, DEMO_TENANTS } = await dist();
  const { generateAuditChain } = await import('./ledger.ts');
  const local = await openLocal({ db, logLevel: 'error' });
  try {
    await local.rt.auditBuffer.flush();
    await generateAuditChain(local.rt, local.rt.store as SqliteStore, DEMO_TENANTS.main.company_id, rows, {
      startMs: Date.parse('2025-01-01T00:00:00.000Z'),
    });
  } finally {
    await local.close();
  }
}

interface Sampled {
  afterWarmup: number;
  peak: number;
  afterLoad: number;
  rps: number;
  non2xx: number;
}

async function measureServe(db: string, key: string, loadSeconds: number): Promise<Sampled> {
  // serve's rate limits stay on (counting every call) but never refuse the load's one key.
  const { child, base } = await startServe(db, ['--rate-limit-key', '1000000000'], {
    SOLID_RUN: BUILT ? 'dist' : 'src',
  });
  try {
    return await loadAndSample(child.pid!, base, key, loadSeconds);
  } finally {
    await stopServe(child);
  }
}

/**
 * Warm a server up (verbs.list and audit.trail pages through POST /api/v1/agent/dispatch, each
 * answered 200), then load it with autocannon for `loadSeconds` (10 connections) while sampling
 * its RSS every 250 ms.
 */
async function loadAndSample(pid: number, base: string, key: string, loadSeconds: number): Promise<Sampled> {
  {
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const post = (verb: string, args: object) =>
      fetch(`${base}/api/v1/agent/dispatch/${verb}`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ args }),
      });
    for (let i = 0; i < 50; i++) {
      for (const [verb, args] of [
        ['verbs.list', {}],
        ['audit.trail', { limit: 50 }],
        ['audit.trail', { status: 'denied', limit: 50 }],
      ] as const) {
        const r = await post(verb, args);
        if (r.status !== 200) throw new Error(`${verb} answered ${r.status}: ${await r.text()}`);
      }
    }
    await new Promise((r) => setTimeout(r, 500));
    const afterWarmup = rssMiB(pid);
    let peak = afterWarmup;
    const timer = setInterval(() => {
      const v = rssMiB(pid);
      if (v > peak) peak = v;
    }, 250);
    const result = await autocannon({
      url: base,
      connections: 10,
      duration: loadSeconds,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/agent/dispatch/audit.trail',
          headers,
          body: JSON.stringify({ args: { limit: 50 } }),
        },
        {
          method: 'POST',
          path: '/api/v1/agent/dispatch/audit.trail',
          headers,
          body: JSON.stringify({ args: { verb: 'charge_invoice', limit: 50 } }),
        },
        { method: 'POST', path: '/api/v1/agent/dispatch/verbs.list', headers, body: '{"args":{}}' },
      ],
    });
    clearInterval(timer);
    await new Promise((r) => setTimeout(r, 1000));
    const afterLoad = rssMiB(pid);
    return {
      afterWarmup,
      peak: Math.max(peak, afterLoad),
      afterLoad,
      rps: result.requests.average,
      non2xx: result.non2xx + result.errors,
    };
  }
}

/**
 * serve.rss_vs_fastify: RSS of `solid serve` (dist) on the seeded demo database ÷ a bare Fastify
 * (bench/peer-server.mjs fastify-bare: the same routes, one SELECT of 50 audit rows on a copy of
 * the same file, the same bearer key checked) under the same load, in ABBA rounds: a fresh process
 * of each per round. Idle = after the warm-up; peak = the largest sample during the load.
 */
async function rssVsFastify(
  seeded: string,
  key: string,
  dir: string,
  loadSeconds: number,
  rounds: number,
): Promise<BenchResult> {
  const { startPeer } = await import('./peers.ts');
  const solidIdle: number[] = [];
  const bareIdle: number[] = [];
  const notes: string[] = [];
  const fastifyDb = join(dir, 'fastify.db');
  cpSync(seeded, fastifyDb);
  const { DEMO_TENANTS } = await dist();
  const f = await abba(
    async () => {
      const s = await measureServe(seeded, key, loadSeconds);
      solidIdle.push(s.afterWarmup);
      notes.push(`solid ${s.afterWarmup.toFixed(0)}/${s.peak.toFixed(0)} MiB ${Math.round(s.rps)} req/s`);
      return s.peak;
    },
    async () => {
      const peer = await startPeer('fastify-bare', fastifyDb, key, { company: DEMO_TENANTS.main.company_id });
      try {
        const s = await loadAndSample(peer.pid, peer.url, key, loadSeconds);
        bareIdle.push(s.afterWarmup);
        notes.push(`fastify ${s.afterWarmup.toFixed(0)}/${s.peak.toFixed(0)} MiB ${Math.round(s.rps)} req/s`);
        return s.peak;
      } finally {
        await peer.stop();
      }
    },
    rounds,
  );
  const idleRatios = solidIdle.map((x, i) => x / bareIdle[i]!);
  return {
    id: 'serve.rss_vs_fastify',
    what: `peak RSS (MiB) of \`solid serve\` (dist) on the seeded demo database ÷ a bare Fastify server (same routes and bearer key, one SELECT of 50 audit rows) under the same ${loadSeconds} s autocannon load (10 connections: audit.trail pages, verbs.list)`,
    value: Math.round(f.value * 10) / 10,
    baseline: Math.round(f.baseline * 10) / 10,
    ratio: f.ratio,
    unit: 'MiB',
    target: 'ratio ≤ 1.25 (peak)',
    met: f.ratio <= 1.25,
    notes: `peak ${abbaNote(f)}; idle (after warm-up) ratio median ${median(idleRatios).toFixed(2)}; rounds idle/peak: ${notes.join(', ')}`,
  };
}

/** RSS of `solid serve` on the demo database with `rows` extra audit rows vs without them. */
export async function benchServeRss(options: ServeRssOptions = {}): Promise<BenchResult[]> {
  const rows = options.rows ?? 1_000_000;
  const loadSeconds = options.loadSeconds ?? 10;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-rss-'));
  try {
    const small = join(dir, 'seeded.db');
    const large = join(dir, 'large.db');
    const key = await seedDemo(small);
    cpSync(small, large);
    cpSync(`${small}.keys.json`, `${large}.keys.json`);
    await addRows(large, rows);
    // A short run (loadSeconds < 5: --quick) measures the comparison briefly too.
    const vsFastify = await rssVsFastify(
      small,
      key,
      dir,
      options.fastifyLoadSeconds ?? Math.min(5, loadSeconds),
      options.rounds ?? (loadSeconds < 5 ? 2 : 5),
    );
    const a = await measureServe(small, key, loadSeconds);
    const b = await measureServe(large, key, loadSeconds);
    const mib = (x: number) => Math.round(x * 10) / 10;
    return [
      {
        id: 'serve.rss',
        what: `peak RSS (MiB) of \`solid serve\` on the seeded demo database with ${rows.toLocaleString('en-US')} extra audit rows vs without them, during ${loadSeconds} s of load (10 connections: audit.trail pages, verbs.list)`,
        value: mib(b.peak),
        baseline: mib(a.peak),
        ratio: Math.round((b.peak / a.peak) * 100) / 100,
        unit: 'MiB',
        notes: `with the rows: ${mib(b.afterWarmup)} MiB after warm-up, ${mib(b.peak)} peak, ${mib(b.afterLoad)} after load, ${Math.round(b.rps)} req/s; without: ${mib(a.afterWarmup)} / ${mib(a.peak)} / ${mib(a.afterLoad)} MiB, ${Math.round(a.rps)} req/s; ${BUILT ? 'the built server (dist/)' : 'from the sources through tsx (no dist/: npm run build first for the shipped figure)'}${a.non2xx + b.non2xx > 0 ? `; ${a.non2xx + b.non2xx} failed requests` : ''}`,
      },
      vsFastify,
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rows = Number(process.argv[2]) || undefined;
  console.log(JSON.stringify(await benchServeRss({ rows }), null, 2));
}
