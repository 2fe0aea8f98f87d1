/**
 * Harness of the multi-node and fault tests: a private PostgreSQL cluster that a test may kill
 * and restart, node processes (node-main.ts) serving one schema over HTTP, a small HTTP client,
 * and the exact checks (audit chain recomputed row by row, event sequence, effects vs receipts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestContext } from 'node:test';
import pg from 'pg';
import pino from 'pino';
import { createRuntime } from '../../src/runtime/runtime.ts';
import { loadSecrets } from '../../src/runtime/secrets.ts';
import { hashAuditRow, toAuditRow, AUDIT_COLUMNS } from '../../src/runtime/ledger/write/audit.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { systemVerbs } from '../../src/verbs/index.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { LOAD_MIGRATIONS, loadVerbs } from './load-pack.ts';
import { startCluster, type Cluster } from '../../bench/pg-cluster.ts';

const ROOT = resolve(import.meta.dirname, '../..');

/** PostgreSQL server binaries (.ci/postgres.sh exports SOLID_TEST_PG_BIN). */
export const PG_BIN = process.env.SOLID_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** A private throwaway cluster (bench/pg-cluster.ts) that the test owns: kill() and start() at will. */
export type PrivateCluster = Cluster;

/** Start a private cluster on PG_BIN; destroyed after the test. */
export async function privateCluster(t: TestContext): Promise<PrivateCluster> {
  const cluster = await startCluster({ pgBin: PG_BIN });
  t.after(() => cluster.destroy());
  return cluster;
}

/** Secrets every node of one database shares. */
export function sharedSecretsEnv(): Record<string, string> {
  return {
    SOLID_NONCE_SECRET: randomBytes(32).toString('hex'),
    SOLID_MASTER_KEY: randomBytes(32).toString('hex'),
  };
}

export interface Deployment {
  url: string;
  schema: string;
  env: Record<string, string>;
  companyId: number;
  ownerKey: string;
}

/** Migrate a fresh schema, create the sandbox and tenant 2 (with `caps`) and an owner key. */
export async function deploy(
  url: string,
  schema: string,
  caps: Record<string, number> = {},
): Promise<Deployment> {
  const env = sharedSecretsEnv();
  const store = new PostgresStore({ connectionString: url, schema, poolMax: 2 });
  const rt = await createRuntime({
    store,
    secrets: loadSecrets({ env }).secrets,
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
  });
  try {
    rt.register(...systemVerbs, ...loadVerbs);
    await store.migrate('load', LOAD_MIGRATIONS);
    await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
    // The load agent types its payout phrases itself: the owner's explicit phrase_channel any
    // (the default counts a phrase only from a human; spec/consent.md §channels).
    await rt.createTenant({
      company_id: 2,
      name: 'Load Co',
      tier: 'enterprise',
      settings: { caps, phrase_channel: 'any' },
    });
    const ownerKey = await rt.createApiKey({ company_id: 2, user_id: 1, role: 'owner', agent_type: 'load' });
    return { url, schema, env, companyId: 2, ownerKey };
  } finally {
    await rt.close();
  }
}

export interface NodeProcess {
  url: string;
  proc: ChildProcess;
  stderr(): string;
  stop(): Promise<void>;
}

/** Start `n` node processes on the deployment; stopped after the test. */
export async function startNodes(t: TestContext, d: Deployment, n: number): Promise<NodeProcess[]> {
  const nodes = await Promise.all(Array.from({ length: n }, () => startNode(d)));
  t.after(async () => {
    await Promise.all(nodes.map((x) => x.stop()));
  });
  return nodes;
}

/** Start `n` real `solid serve --database-url …` processes (system verbs only); stopped after the test. */
export async function startServes(t: TestContext, d: Deployment, n: number): Promise<NodeProcess[]> {
  const cwd = mkdtempSync(join(tmpdir(), 'solid-serve-'));
  const nodes = await Promise.all(
    Array.from({ length: n }, () =>
      startNode(
        d,
        [join(ROOT, 'bin/solid.js'), 'serve', '--port', '0', '--database-url', d.url],
        cwd,
        /solid serve: ready on (http:\/\/\S+)/,
      ),
    ),
  );
  t.after(async () => {
    await Promise.all(nodes.map((x) => x.stop()));
    rmSync(cwd, { recursive: true, force: true });
  });
  return nodes;
}

function startNode(
  d: Deployment,
  args = ['--import', 'tsx', 'test/postgres/node-main.ts'],
  cwd = ROOT,
  readyLine = /ready (http:\/\/\S+)/,
): Promise<NodeProcess> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...d.env,
    SOLID_DATABASE_URL: d.url,
    SOLID_DB_SCHEMA: d.schema,
    SOLID_DB_POOL_MAX: '6',
  };
  delete env.SOLID_DB;
  const proc = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (b: Buffer) => {
    err = (err + b.toString()).slice(-8000);
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return new Promise((resolveNode, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`node did not start in 90 s: ${err}`));
    }, 90_000);
    let out = '';
    proc.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = readyLine.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolveNode({
          url: m[1]!,
          proc,
          stderr: () => err,
          async stop() {
            if (proc.exitCode === null && proc.signalCode === null) {
              proc.kill('SIGTERM');
              const t2 = setTimeout(() => proc.kill('SIGKILL'), 5000);
              await exited;
              clearTimeout(t2);
            }
          },
        });
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`node exited with ${code} before ready: ${err}`));
    });
  });
}

export interface Answer {
  status: number;
  body: Envelope;
}

/** POST /api/v1/agent/dispatch/{verb}. Network failures come back as status 0. */
export async function dispatchHttp(
  node: NodeProcess,
  apiKey: string,
  verb: string,
  body: Record<string, unknown>,
  idempotencyKey?: string,
): Promise<Answer> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    authorization: `Bearer ${apiKey}`,
  };
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
  try {
    const res = await fetch(`${node.url}/api/v1/agent/dispatch/${verb}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
    return { status: res.status, body: (await res.json()) as Envelope };
  } catch (err) {
    return { status: 0, body: { ok: false, verb, error: { reason: 'network', message: String(err) } } };
  }
}

/** Run `tasks` with at most `limit` in flight. */
export async function pool<T>(limit: number, tasks: Array<() => Promise<T>>): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) {
        const i = next++;
        out[i] = await tasks[i]!();
      }
    }),
  );
  return out;
}

/** A client on the deployment's schema for the checks. */
export async function inspect<T>(d: Deployment, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: d.url, options: `-c search_path=${d.schema}` });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * Check a tenant's audit chain exactly: seq 1..n without gaps, each prev_hash the previous
 * row_hash, each row_hash recomputed from the stored columns, the head row pointing at the last.
 * Returns the number of rows. Throws with the first broken link.
 */
export async function verifyChain(c: pg.Client, companyId: number): Promise<number> {
  const rows = (
    await c.query(`SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log WHERE company_id = $1 ORDER BY seq`, [
      companyId,
    ])
  ).rows.map((r) =>
    toAuditRow({ ...r, audit_id: Number(r.audit_id), company_id: Number(r.company_id), seq: Number(r.seq) }),
  );
  let prev = '0'.repeat(64);
  rows.forEach((row, i) => {
    if (row.seq !== i + 1)
      throw new Error(`tenant ${companyId}: seq ${row.seq} at position ${i + 1} (gap or duplicate)`);
    if (row.prev_hash !== prev)
      throw new Error(`tenant ${companyId}: seq ${row.seq} prev_hash does not link to seq ${row.seq - 1}`);
    const { row_hash, ...rest } = row;
    if (hashAuditRow(rest) !== row_hash)
      throw new Error(`tenant ${companyId}: seq ${row.seq} row_hash does not match its columns`);
    prev = row_hash;
  });
  const head = (
    await c.query('SELECT audit_seq, audit_hash FROM tenant_heads WHERE company_id = $1', [companyId])
  ).rows[0];
  if (Number(head?.audit_seq ?? 0) !== rows.length || (rows.length > 0 && head.audit_hash !== prev))
    throw new Error(`tenant ${companyId}: head does not point at the last row`);
  return rows.length;
}

/** Events of a tenant numbered 1..n without gaps, and the head's event_seq = n. */
export async function verifyEvents(c: pg.Client, companyId: number): Promise<number> {
  const seqs = (
    await c.query('SELECT seq FROM events WHERE company_id = $1 ORDER BY seq', [companyId])
  ).rows.map((r) => Number(r.seq));
  seqs.forEach((s, i) => {
    if (s !== i + 1) throw new Error(`tenant ${companyId}: event seq ${s} at position ${i + 1}`);
  });
  const head = (await c.query('SELECT event_seq FROM tenant_heads WHERE company_id = $1', [companyId]))
    .rows[0];
  if (Number(head?.event_seq ?? 0) !== seqs.length)
    throw new Error(`tenant ${companyId}: head event_seq ${head?.event_seq} ≠ ${seqs.length}`);
  return seqs.length;
}
