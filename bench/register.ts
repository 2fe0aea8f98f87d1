/**
 * Registration benchmark (issue 15): how long a runtime takes to register the 26 system verbs
 * (`rt.register(...systemVerbs)`, what every test runtime and every `openLocal` does), against
 * the same registration compiling every input and output schema in a fresh Ajv, as each
 * `Registry` did before the shared schema compiler (src/runtime/schema-compiler.ts).
 *
 * `register.system_verbs` is a runtime after the process's first (the compiled schemas are shared);
 * `register.first_in_process` is the first one, which compiles them (a cost paid once per process).
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { median, type BenchResult, fromDist } from './harness.ts';

const { Registry } = await fromDist<typeof import('../src/runtime/registry.ts')>('runtime/registry.js');
const { systemVerbs } = await fromDist<typeof import('../src/verbs/index.ts')>('verbs/index.js');

const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;

function ms(fn: () => void): number {
  const t = performance.now();
  fn();
  return performance.now() - t;
}

/** The registration as it was: the shared one plus a fresh Ajv compiling every schema again. */
function registerWithFreshAjv(): void {
  const registry = new Registry();
  registry.registerAll(systemVerbs);
  const input = new Ajv2020({ strict: false, useDefaults: true, allowUnionTypes: true });
  const output = new Ajv2020({ strict: false, allErrors: true, allowUnionTypes: true });
  addFormats(input);
  addFormats(output);
  for (const v of registry.all()) {
    input.compile(v.inputSchema);
    output.compile(v.outputSchema);
  }
}

export async function benchRegister(options: { runs?: number } = {}): Promise<BenchResult[]> {
  const runs = options.runs ?? 30;
  const first = ms(() => new Registry().registerAll(systemVerbs));
  const shared: number[] = [];
  const fresh: number[] = [];
  for (let i = 0; i < runs; i++) {
    shared.push(ms(() => new Registry().registerAll(systemVerbs)));
    fresh.push(ms(registerWithFreshAjv));
  }
  const value = median(shared);
  const baseline = median(fresh);
  return [
    {
      id: 'register.system_verbs',
      what: `a runtime registering the ${systemVerbs.length} system verbs (median of ${runs}) vs the same compiling its schemas in a fresh Ajv`,
      value: Math.round(value * 10) / 10,
      baseline: Math.round(baseline * 10) / 10,
      ratio: Math.round((value / baseline) * 1000) / 1000,
      unit: 'ms',
    },
    {
      id: 'register.first_in_process',
      what: 'the first registration in a process (compiles the shared schemas once)',
      value: Math.round(first * 10) / 10,
      unit: 'ms',
    },
  ];
}
