/**
 * Where the cost of a read dispatch goes (issue 11, to explain core.read): every read leaves a
 * hash-chained audit row (buffered, flushed in batches), which costs about as much as a cheap
 * handler's own query. Three figures, each measured against its bare baseline in the same run
 * (alternating pairs, medians), plus the row cost itself:
 *
 *   read.demo_full_context   customer.full_context of the seeded demo business (a realistic read:
 *                            several queries) through dispatch vs the same handler called bare on
 *                            a read snapshot (no registry, validation, floors, audit row, hooks);
 *   read.without_audit_row   the core bench's contact search through dispatch with the audit row
 *                            switched off (diagnostic only: not a configuration anyone can run) vs
 *                            the same query bare — the pipeline proper;
 *   read.audit_row           process CPU µs per buffered read-audit row (RFC 8785 material,
 *                            SHA-256, INSERT into the indexed audit_log, batch head update, the
 *                            reputation hook, the batch commit), timed on the entries of real
 *                            dispatches pushed through the buffer, vs the CPU µs of the bare query.
 *
 * Run alone: node --import tsx bench/read-cost.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import type { VerbContext } from '../src/runtime/verb.ts';
import type { DemoSeedFacts } from '../src/business/pack.ts';
import type { Queryable } from '../src/store/store.ts';
import type { Principal } from '../src/spec/types.ts';
import type { Runtime } from '../src/runtime/runtime.ts';
import { abba, abbaNote, opsPerSecond, median, ratioResult, type BenchResult, fromDist } from './harness.ts';
import { SEARCH_SQL, seedContactsBench } from './contacts.ts';

const { createRuntime } = await fromDist<typeof import('../src/runtime/runtime.ts')>('runtime/runtime.js');
const { SqliteStore } = await fromDist<typeof import('../src/store/sqlite/sqlite-store.ts')>(
  'store/sqlite/sqlite-store.js',
);
const { runtimeContextMembers } =
  await fromDist<typeof import('../src/runtime/verb-context.ts')>('runtime/verb-context.js');
const { systemVerbs } = await fromDist<typeof import('../src/verbs/index.ts')>('verbs/index.js');
const { defineReasons } = await fromDist<typeof import('../src/spec/reasons.ts')>('spec/reasons.js');
const { DEMO_TENANTS, demoPack } =
  await fromDist<typeof import('../src/business/pack.ts')>('business/pack.js');

export interface ReadCostOptions {
  ms?: number;
  runs?: number;
}

/** The handler context a bare call gets: the snapshot and the principal, nothing else. */
function bareContext(rt: Runtime, principal: Principal, verbName: string, q: Queryable): VerbContext {
  const verb = rt.registry.get(verbName)!;
  return {
    principal,
    db: q,
    now: new Date(),
    signal: new AbortController().signal,
    ...runtimeContextMembers(rt, q),
    verb,
    emit() {},
    outbox() {},
    setRollback() {},
    setEntity() {},
    progress() {},
  };
}

export async function benchReadCost(options: ReadCostOptions = {}): Promise<BenchResult[]> {
  const ms = options.ms ?? 1500;
  const runs = Math.max(5, options.runs ?? 5);
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-readcost-'));
  const logger = pino({ level: 'silent' });
  const closers: Array<() => Promise<void>> = [];
  try {
    // 1. The demo business.
    const demo = await createRuntime({
      store: new SqliteStore({ path: join(dir, 'demo.db') }),
      logger,
      sandboxCompanyId: DEMO_TENANTS.sandbox.company_id,
      maintenanceIntervalMs: 0,
    });
    closers.push(() => demo.close());
    demo.register(...systemVerbs);
    await demo.store.migrate(demoPack.name, demoPack.migrations);
    if (demoPack.reasons) defineReasons(demoPack.reasons);
    demo.register(...demoPack.verbs);
    const facts = (await demoPack.seed!(demo, {})) as DemoSeedFacts;
    await demo.auditBuffer.flush();
    const owner = await demo.tenants.authenticate((facts.keys as Record<string, string>).owner);
    const args = { customer_id: facts.fixtures!.customer_id };
    const handler = demo.registry.get('customer.full_context')!.definition.handler;
    const check = await demo.dispatch({ principal: owner, surface: 'http' }, 'customer.full_context', args);
    if (!check.ok) throw new Error(`customer.full_context: ${JSON.stringify(check.error)}`);
    const full = await abba(
      () =>
        opsPerSecond(
          () => demo.dispatch({ principal: owner, surface: 'http' }, 'customer.full_context', args),
          ms,
        ),
      () =>
        opsPerSecond(
          () =>
            demo.store.read(
              (q) => handler(bareContext(demo, owner, 'customer.full_context', q), args) as Promise<unknown>,
            ),
          ms,
        ),
      runs,
    );

    // 2. The core bench's search, with and without the audit row.
    const store = new SqliteStore({ path: join(dir, 'core.db') });
    const rt = await createRuntime({ store, logger, sandboxCompanyId: 1, maintenanceIntervalMs: 0 });
    closers.push(() => rt.close());
    const principal = await rt.tenants.authenticate(await seedContactsBench(rt));
    const caller = { principal, surface: 'cli' as const };
    const realPush = rt.auditBuffer.push.bind(rt.auditBuffer);
    const bareSearch = () => store.read((q) => q.all(SEARCH_SQL, [2, '%smith%']));
    const noAudit = await abba(
      async () => {
        (rt.auditBuffer as unknown as { push: (e: unknown) => void }).push = () => {};
        try {
          return await opsPerSecond(() => rt.dispatch(caller, 'bench.search', { q: 'smith' }), ms);
        } finally {
          (rt.auditBuffer as unknown as { push: typeof realPush }).push = realPush;
        }
      },
      () => opsPerSecond(bareSearch, ms),
      runs,
    );

    // 3. CPU per read-audit row vs CPU per bare query. The rows are the real ones: each run first
    // dispatches N searches with the buffer's push capturing their entries (untimed), then times
    // pushing those N entries through the buffer, awaiting each 256-row batch's flush as the
    // buffer's own full-batch flush would run (the batch transaction, the INSERTs, the head move,
    // the after-commit hooks). Timing only the row's own work keeps the dispatches' CPU, and its
    // noise, out of the figure (it was the difference of two dispatch loops: the same work, with
    // run-to-run spreads of ±20 µs at load).
    const cpu = async (fn: () => Promise<unknown>, n: number): Promise<number> => {
      const c0 = process.cpuUsage();
      await fn();
      const c = process.cpuUsage(c0);
      return (c.user + c.system) / n;
    };
    const rowUs: number[] = [];
    const queryUs: number[] = [];
    const N = 4096;
    const batch = 256;
    const entries = async (): Promise<unknown[]> => {
      const got: unknown[] = [];
      (rt.auditBuffer as unknown as { push: (e: unknown) => void }).push = (e) => got.push(e);
      try {
        for (let i = 0; i < N; i++) await rt.dispatch(caller, 'bench.search', { q: 'smith' });
      } finally {
        (rt.auditBuffer as unknown as { push: typeof realPush }).push = realPush;
      }
      return got;
    };
    const rowsCpu = async (): Promise<number> => {
      const got = await entries();
      return cpu(async () => {
        for (let i = 0; i < got.length; i++) {
          realPush(got[i] as Parameters<typeof realPush>[0]);
          if ((i + 1) % batch === 0) await rt.auditBuffer.flush();
        }
        await rt.auditBuffer.flush();
      }, got.length);
    };
    await rowsCpu();
    for (let r = 0; r < Math.max(runs, 7); r++) {
      queryUs.push(
        await cpu(async () => {
          for (let i = 0; i < N; i++) await bareSearch();
        }, N),
      );
      rowUs.push(await rowsCpu());
    }
    const row = median(rowUs);
    const query = median(queryUs);
    return [
      ratioResult(
        'read.demo_full_context',
        'customer.full_context on the seeded demo business (a realistic read) through dispatch vs the same handler called bare on a read snapshot',
        full,
        'ops/s',
        0.8,
        `${abbaNote(full)}, ${ms} ms each`,
      ),
      ratioResult(
        'read.without_audit_row',
        'the core read bench (contact search) through dispatch with the read-audit row switched off (diagnostic) vs the same query bare: the pipeline proper',
        noAudit,
        'ops/s',
        0.8,
        `${abbaNote(noAudit)}, ${ms} ms each`,
      ),
      {
        id: 'read.audit_row',
        what: 'process CPU per buffered read-audit row (RFC 8785 material, SHA-256, INSERT into the indexed audit_log, batched head update, reputation hook, batch commit) vs CPU of the bare contact-search query',
        value: Math.round(row * 10) / 10,
        baseline: Math.round(query * 10) / 10,
        ratio: Math.round((row / query) * 100) / 100,
        unit: 'µs',
        notes: `median of ${rowUs.length} runs of ${N} rows from real dispatches, pushed through the buffer in ${batch}-row batches (rows: ${rowUs.map((x) => x.toFixed(1)).join(', ')} µs); process CPU includes V8's background threads`,
      },
    ];
  } finally {
    for (const c of closers.reverse()) await c().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await benchReadCost(), null, 2));
}
