/**
 * Observe benchmark (issue 6): what the observe hooks (reputation from audit rows, telemetry and
 * OpenTelemetry spans from dispatch outcomes; no SDK installed) cost a dispatch, and what an empty
 * events.poll costs.
 *
 * - observe.read / observe.write: dispatches/s of a read verb and of an ungated write verb with the
 *   hooks attached, against the same runtime with them detached, measured alternately (paired
 *   medians). Target: overhead ≤ 10 %, i.e. ratio ≥ 0.9. The reputation flush (one batched write
 *   per second) runs during the measurement and is part of the cost.
 * - observe.empty_poll: events.poll answers/s when nothing is new (no wait), against a trivial read
 *   verb through the same pipeline (ratio = how close an empty poll is to the cheapest read).
 * - observe.hooks: the hooks alone, called directly per dispatch (µs), as a share of a read
 *   dispatch without them — a steadier figure than the paired rates on a busy machine.
 *
 * Run alone: node --import tsx bench/observe.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import type { Runtime } from '../src/runtime/runtime.ts';
import type { Principal } from '../src/spec/types.ts';
import { abba, opsPerSecond, type BenchResult, fromDist } from './harness.ts';

const { createRuntime } = await fromDist<typeof import('../src/runtime/runtime.ts')>('runtime/runtime.js');
const { SqliteStore } = await fromDist<typeof import('../src/store/sqlite/sqlite-store.ts')>(
  'store/sqlite/sqlite-store.js',
);
const { defineVerb } = await fromDist<typeof import('../src/runtime/verb.ts')>('runtime/verb.js');
const { systemVerbs } = await fromDist<typeof import('../src/verbs/index.ts')>('verbs/index.js');

async function setup(dir: string): Promise<{ rt: Runtime; principal: Principal }> {
  const store = new SqliteStore({ path: join(dir, 'bench.db') });
  const rt = await createRuntime({
    store,
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
    observe: { maintenanceIntervalMs: 0 },
  });
  rt.register(...systemVerbs);
  await store.migrate('bench-observe', [
    {
      version: 1,
      name: 'counters',
      sqlite:
        'CREATE TABLE bench_counters (company_id INTEGER NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL, PRIMARY KEY (company_id, name))',
    },
  ]);
  await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
  await rt.createTenant({ company_id: 2, name: 'Bench', tier: 'enterprise' });
  const principal = await rt.tenants.authenticate(
    await rt.createApiKey({ company_id: 2, user_id: 1, role: 'owner', agent_type: 'bench' }),
  );
  rt.register(
    defineVerb<{ name: string }>({
      name: 'bench.counter_get',
      description: 'Read a counter.',
      shape: 'aggregate',
      category: 'bench',
      input: {
        type: 'object',
        properties: { name: { type: 'string' } },
        required: ['name'],
        additionalProperties: false,
      },
      async handler(ctx, a) {
        const r = await ctx.db.get<{ value: number }>(
          'SELECT value FROM bench_counters WHERE company_id = ? AND name = ?',
          [ctx.principal.company_id, a.name],
        );
        return { entity_id: a.name, data: { value: r?.value ?? 0 } };
      },
    }),
    defineVerb<{ name: string }>({
      name: 'bench.counter_bump',
      description: 'Bump a counter (no gate at this level).',
      shape: 'receipt',
      category: 'bench',
      input: {
        type: 'object',
        properties: { name: { type: 'string' } },
        required: ['name'],
        additionalProperties: false,
      },
      delegateConsent: async () => ({ consentClass: null, roleFloor: 'employee', summary: 'Bump.' }),
      async handler(ctx, a) {
        await ctx.db.run(
          `INSERT INTO bench_counters (company_id, name, value) VALUES (?, ?, 1) ON CONFLICT (company_id, name) DO UPDATE SET value = bench_counters.value + 1`,
          [ctx.principal.company_id, a.name],
        );
        return { name: a.name };
      },
    }),
  );
  return { rt, principal };
}

/** Dispatch cost with and without the observe hooks, and the empty-poll rate. */
export async function benchObserve(options: { ms?: number; runs?: number } = {}): Promise<BenchResult[]> {
  const ms = options.ms ?? 1500;
  const runs = Math.max(5, options.runs ?? 5);
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-observe-'));
  const { rt, principal } = await setup(dir);
  const caller = { principal, surface: 'cli' as const };
  const withHooks = (fn: () => Promise<unknown>) => async () => {
    rt.observers.attach();
    return opsPerSecond(fn, ms);
  };
  const withoutHooks = (fn: () => Promise<unknown>) => async () => {
    rt.observers.detach();
    return opsPerSecond(fn, ms);
  };
  try {
    const results: BenchResult[] = [];
    const read = () => rt.dispatch(caller, 'bench.counter_get', { name: 'a' });
    const r = await abba(withHooks(read), withoutHooks(read), runs);
    results.push({
      id: 'observe.read',
      what: 'read dispatches/s with observe hooks vs without',
      ...r,
      unit: 'ops/s',
      target: 'ratio ≥ 0.9 (overhead ≤ 10 %)',
      met: r.ratio >= 0.9,
    });
    let i = 0;
    const write = () => rt.dispatch(caller, 'bench.counter_bump', { name: `c${i++ % 16}` });
    const w = await abba(withHooks(write), withoutHooks(write), runs);
    results.push({
      id: 'observe.write',
      what: 'ungated write dispatches/s with observe hooks vs without',
      ...w,
      unit: 'ops/s',
      target: 'ratio ≥ 0.9 (overhead ≤ 10 %)',
      met: w.ratio >= 0.9,
    });
    // The hooks alone, per dispatch: one outcome (telemetry + span check) and one audit row (reputation).
    const outcome = {
      verb: 'bench.counter_get',
      shape: 'aggregate',
      consent_class: 'READ',
      company_id: 2,
      user_id: 1,
      agent_type: 'bench',
      ok: true,
      reason: null,
      denial: false,
      latency_ms: 0.2,
      audit_id: null,
      surface: 'cli',
      at: Date.now(),
    };
    const row = {
      company_id: 2,
      created_at: new Date().toISOString(),
      agent_type: 'bench',
      action_type: 'bench.counter_get',
      shape: 'aggregate',
      status: 'completed',
      reason: null,
      latency_ms: 0.2,
    } as unknown as Parameters<typeof rt.observers.reputation.record>[0];
    const hookOps = await opsPerSecond(async () => {
      for (let k = 0; k < 100; k++) {
        rt.observers.telemetry.record(outcome);
        rt.observers.spans.record(outcome);
        rt.observers.reputation.record(row);
      }
    }, ms);
    const hookUs = 1e6 / (hookOps * 100);
    const readUs = 1e6 / r.baseline;
    results.push({
      id: 'observe.hooks',
      what: 'cost of the hooks per dispatch (µs), as a share of a read dispatch without them',
      value: hookUs,
      baseline: readUs,
      ratio: hookUs / readUs,
      unit: 'µs',
      target: 'ratio ≤ 0.1',
      met: hookUs / readUs <= 0.1,
    });
    rt.observers.attach();
    const sub = await rt.dispatch(caller, 'events.subscribe', {});
    if (!sub.ok) throw new Error(`events.subscribe failed: ${JSON.stringify(sub.error)}`);
    const cursor = (sub.result as { cursor: string }).cursor;
    const poll = () => rt.dispatch(caller, 'events.poll', { cursor });
    const p = await abba(
      () => opsPerSecond(poll, ms),
      () => opsPerSecond(read, ms),
      runs,
    );
    results.push({
      id: 'observe.empty_poll',
      what: 'empty events.poll answers/s vs a one-row read verb',
      ...p,
      unit: 'polls/s',
      notes: 'no writes by the poll itself; its read-audit row is buffered like any read',
    });
    return results;
  } finally {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const results = await benchObserve();
  for (const r of results) {
    const f = (x: number | undefined) => (x === undefined ? '-' : x >= 100 ? x.toFixed(0) : x.toFixed(2));
    console.log(
      `${r.id.padEnd(20)} ${f(r.value).padStart(8)} ${r.unit}  baseline ${f(r.baseline)}  ratio ${r.ratio?.toFixed(3) ?? '-'}  ${r.target ?? ''} ${r.met === undefined ? '' : r.met ? 'MET' : 'NOT MET'}`,
    );
  }
}
