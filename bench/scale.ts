/**
 * Scale with the catalogue (issue 21 item 7): an unknown verb name's cost and registration time
 * against the number of registered verbs.
 *
 * - `scale.unknown_verb_<N>`: process CPU (µs) per dispatch of an unknown verb name (a typo of a
 *   registered one, so the closest-name hint has work to do) on a runtime with N extra verbs, vs
 *   the same on a runtime with none beyond the system verbs; median of 5 runs of 400 calls.
 * - `scale.register_10k`: wall time (ms) to register 10,000 verbs on a fresh runtime, median of 3.
 *
 * Run alone: node --import tsx bench/run.ts --only scale
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { Runtime } from '../src/runtime/runtime.ts';
import type { VerbDefinition } from '../src/runtime/verb.ts';
import { median, type BenchResult, fromDist } from './harness.ts';

const { SqliteStore } = await fromDist<typeof import('../src/store/sqlite/sqlite-store.ts')>(
  'store/sqlite/sqlite-store.js',
);
const { createRuntime } = await fromDist<typeof import('../src/runtime/runtime.ts')>('runtime/runtime.js');
const { defineVerb } = await fromDist<typeof import('../src/runtime/verb.ts')>('runtime/verb.js');

function scaleVerbs(n: number): VerbDefinition[] {
  const out: VerbDefinition[] = [];
  for (let i = 0; i < n; i++) {
    out.push(
      defineVerb({
        name: `scale.verb_${String(i).padStart(5, '0')}`,
        description: 'A read of the scale catalogue.',
        shape: 'aggregate',
        category: 'scale',
        input: { type: 'object', properties: { q: { type: 'string' } }, additionalProperties: false },
        handler: async () => ({ entity_id: 1, data: {} }),
      }) as VerbDefinition,
    );
  }
  return out;
}

async function runtime(): Promise<Runtime> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-scale-'));
  return createRuntime({
    store: new SqliteStore({ path: join(dir, 'bench.db') }),
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
  });
}

/** CPU µs of `calls` unknown-verb dispatches (names that are typos of registered ones). */
async function unknownVerbRun(rt: Runtime, calls: number): Promise<number> {
  const caller = { surface: 'cli' as const };
  const c = process.cpuUsage();
  for (let i = 0; i < calls; i++) await rt.dispatch(caller, `scale.verb_0${i % 10}23x`, {});
  const u = process.cpuUsage(c);
  await rt.auditBuffer.flush();
  return (u.user + u.system) / calls;
}

export async function benchScale(options: { runs?: number; calls?: number } = {}): Promise<BenchResult[]> {
  const runs = options.runs ?? 5;
  const calls = options.calls ?? 400;
  const out: BenchResult[] = [];
  const sizes = [0, 100, 1000, 10_000];
  const rts: Runtime[] = [];
  for (const n of sizes) {
    const rt = await runtime();
    if (n > 0) rt.register(...scaleVerbs(n));
    await unknownVerbRun(rt, calls); // warm-up (JIT, statements, the hint index)
    rts.push(rt);
  }
  // Runs alternate between the catalogue sizes, so drift and JIT state hit every size alike.
  const per: number[][] = sizes.map(() => []);
  for (let r = 0; r < runs; r++)
    for (let i = 0; i < rts.length; i++) per[i]!.push(await unknownVerbRun(rts[i]!, calls));
  for (const rt of rts) await rt.close();
  const baseline = median(per[0]!);
  sizes.forEach((n, i) => {
    if (n === 0) return;
    const value = median(per[i]!);
    out.push({
      id: n === 10_000 ? 'scale.unknown_verb_10k' : `scale.unknown_verb_${n}`,
      what: `CPU per dispatch of an unknown verb name (a typo of a registered one) with ${n.toLocaleString('en')} extra verbs vs none`,
      value: Math.round(value * 10) / 10,
      baseline: Math.round(baseline * 10) / 10,
      ratio: Math.round((value / baseline) * 100) / 100,
      unit: 'µs',
      notes: `median of ${runs} alternating runs of ${calls} calls; the closest-name hint reads a trigram index (bounded work per call)`,
    });
  });
  const times: number[] = [];
  const verbs = scaleVerbs(10_000);
  for (let r = 0; r < 3; r++) {
    const rt = await runtime();
    const t = performance.now();
    rt.register(...verbs);
    times.push(performance.now() - t);
    await rt.close();
  }
  out.push({
    id: 'scale.register_10k',
    what: 'wall time to register 10,000 verbs on a fresh runtime (median of 3)',
    value: Math.round(median(times)),
    unit: 'ms',
    notes: `runs: ${times.map((x) => Math.round(x)).join(', ')} ms`,
  });
  return out;
}
