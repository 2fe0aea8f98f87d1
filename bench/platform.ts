/**
 * One runtime, many businesses (issue 37 item 1): what a call and the background signing cost at
 * 1,000 tenants made through the provisioning API, against one tenant, on the built package
 * (dist/).
 *
 * - `platform.per_call_1k`: process CPU (µs) per dispatch on a runtime holding 1,000 provisioned
 *   tenants, each call by the next tenant's own agent key in turn (round robin: every call finds
 *   another tenant's key, tenant and chain head), vs the same calls by one tenant's key on a
 *   runtime holding that one tenant. The call: `tenant.settings` (a read: key, tenant cache,
 *   daily counts, a buffered audit row). Median of 5 alternating runs.
 * - `platform.checkpoint_pass_1k`: wall ms of the checkpointer's timer pass after 10 of the 1,000
 *   tenants were active (the pass reads only those) vs the full pass over every tenant's head
 *   (what the timer did before: `checkpointAll(true)`), both after the same activity and signing
 *   the same 10 heads; alternating rounds, median of 5 each.
 *
 * Run alone: npm run build && npm run bench -- --only platform
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { fromDist, median, type BenchResult } from './harness.ts';

type RuntimeMod = typeof import('../src/runtime/runtime.ts');
type StoreMod = typeof import('../src/store/sqlite/sqlite-store.ts');
type VerbsMod = typeof import('../src/verbs/index.ts');
type KeysMod = typeof import('../src/platform/platform-keys.ts');
type ProvMod = typeof import('../src/platform/provisioning.ts');
type AuthMod = typeof import('../src/identity/api-key-auth.ts');

/** The built package's modules (dist/, never the sources: bench/run.ts builds first). */
async function load() {
  return {
    runtime: await fromDist<RuntimeMod>('runtime/runtime.js'),
    store: await fromDist<StoreMod>('store/sqlite/sqlite-store.js'),
    verbs: await fromDist<VerbsMod>('verbs/index.js'),
    keys: await fromDist<KeysMod>('platform/platform-keys.js'),
    prov: await fromDist<ProvMod>('platform/provisioning.js'),
    auth: await fromDist<AuthMod>('identity/api-key-auth.js'),
  };
}

type Loaded = Awaited<ReturnType<typeof load>>;
type Rt = Awaited<ReturnType<RuntimeMod['createRuntime']>>;

/** A runtime with `n` tenants made through provisioning, and one admin agent key per tenant. */
async function provisioned(m: Loaded, n: number): Promise<{ rt: Rt; keys: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-platform-'));
  const rt = await m.runtime.createRuntime({
    store: new m.store.SqliteStore({ path: join(dir, 'bench.db') }),
    logger: pino({ level: 'silent' }),
    checkpointIntervalMs: 3_600_000,
  });
  rt.register(...m.verbs.systemVerbs);
  const { key } = await m.keys.createPlatformKey(rt.store, 'bench', rt.clock());
  const keys: string[] = [];
  const opts = { publicUrl: 'http://localhost:4400' };
  for (let i = 0; i < n; i++) {
    const ext = `acct_${i}`;
    const made = await m.prov.callPlatform(
      rt,
      key,
      'platform.tenants.create',
      { external_id: ext, name: `B${i}`, tier: 'professional' },
      opts,
    );
    if (!made.ok) throw new Error(JSON.stringify(made.error));
    const k = await m.prov.callPlatform(
      rt,
      key,
      'platform.api_keys.create',
      { external_id: ext, role: 'admin' },
      opts,
    );
    keys.push(String(k.secret?.api_key));
  }
  return { rt, keys };
}

/** CPU µs per dispatch of `calls` tenant.settings calls, round robin over `keys`. */
async function callRun(m: Loaded, rt: Rt, keys: string[], calls: number): Promise<number> {
  const c = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    // As a transport does: the key resolves through identity, then the call runs (spec: API-key auth).
    const env = await m.auth.dispatchWithKey(
      rt,
      { surface: 'cli' },
      keys[i % keys.length]!,
      'tenant.settings',
      {},
    );
    if (!env.ok) throw new Error(JSON.stringify(env.error));
  }
  const u = process.cpuUsage(c);
  await rt.auditBuffer.flush();
  return (u.user + u.system) / calls;
}

export async function benchPlatform(
  options: { runs?: number; calls?: number; tenants?: number } = {},
): Promise<BenchResult[]> {
  const runs = options.runs ?? 5;
  const calls = options.calls ?? 2000;
  const n = options.tenants ?? 1000;
  const m = await load();
  const one = await provisioned(m, 1);
  const many = await provisioned(m, n);
  // Warm-up: every key once (caches, statements, JIT), then alternate.
  await callRun(m, one.rt, one.keys, calls);
  await callRun(m, many.rt, many.keys, Math.max(calls, n));
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < runs; r++) {
    a.push(await callRun(m, one.rt, one.keys, calls));
    b.push(await callRun(m, many.rt, many.keys, calls));
  }
  // The timer's pass after the same activity (10 tenants of n) each round: the pass reading only
  // the active tenants vs the full pass over every head; both sign the same 10 heads.
  await many.rt.checkpoints.checkpointAll(true);
  await many.rt.checkpoints.checkpointAll(); // drains what provisioning and the warm-up touched
  const active: number[] = [];
  const full: number[] = [];
  for (let r = 0; r < runs * 2; r++) {
    for (let i = 0; i < 10; i++)
      await m.auth.dispatchWithKey(
        many.rt,
        { surface: 'cli' },
        many.keys[(r * 97 + i * 101) % n]!,
        'tenant.settings',
        {},
      );
    await many.rt.auditBuffer.flush();
    const t0 = performance.now();
    await many.rt.checkpoints.checkpointAll(r % 2 === 1);
    (r % 2 === 1 ? full : active).push(performance.now() - t0);
    await many.rt.checkpoints.checkpointAll(); // the full pass does not drain: start the next round clean
  }
  await one.rt.close();
  await many.rt.close();
  const where = 'the built package (dist/)';
  const perCall = median(b);
  const perCallOne = median(a);
  return [
    {
      id: 'platform.per_call_1k',
      what: `CPU per dispatch (tenant.settings, an agent key) round robin over ${n.toLocaleString('en')} tenants made through provisioning vs one tenant`,
      value: perCall,
      unit: 'µs',
      baseline: perCallOne,
      ratio: perCall / perCallOne,
      notes: `median of ${runs} alternating runs of ${calls} calls; runs at ${n}: ${b.map((x) => x.toFixed(0)).join(', ')} µs; at 1: ${a.map((x) => x.toFixed(0)).join(', ')} µs; SQLite; ${where}`,
    },
    {
      id: 'platform.checkpoint_pass_1k',
      what: `wall ms of the checkpointer's timer pass after 10 of ${n.toLocaleString('en')} tenants were active (only those are read) vs the full pass over every tenant's head (the pass before), both signing the same 10 heads`,
      value: median(active),
      unit: 'ms',
      baseline: median(full),
      ratio: median(active) / median(full),
      notes: `median of ${runs}; active-only: ${active.map((x) => x.toFixed(1)).join(', ')} ms; full: ${full.map((x) => x.toFixed(1)).join(', ')} ms; SQLite; ${where}`,
    },
  ];
}
