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
import { openLocal } from '../src/transports/cli/local.ts';
import { DEMO_TENANTS } from '../src/business/pack.ts';
import { setTenantSetting } from '../src/runtime/tenants.ts';
import type { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { generateAuditChain } from './ledger.ts';
import type { BenchResult } from './harness.ts';

const BIN = resolve(fileURLToPath(new URL('../bin/solid.js', import.meta.url)));
/** Whether `npm run build` output is there (then the served process runs it: SOLID_RUN=dist). */
const BUILT = existsSync(fileURLToPath(new URL('../dist/transports/cli/main.js', import.meta.url)));

export interface ServeRssOptions {
  /** Extra audit rows in the large database (default 1,000,000). */
  rows?: number;
  /** Seconds of load after the warm-up (default 10). */
  loadSeconds?: number;
}

/** Resident set size of a process in MiB (Linux /proc). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Start `solid serve` on a database; resolves with the child and its base URL once ready. */
export async function startServe(
  db: string,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; base: string; stdout: () => string; stderr: () => string }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--db', db, ...extra], {
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
  const pid = child.pid!;
  try {
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
  } finally {
    await stopServe(child);
  }
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
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rows = Number(process.argv[2]) || undefined;
  console.log(JSON.stringify(await benchServeRss({ rows }), null, 2));
}
