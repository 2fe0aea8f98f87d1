/**
 * `npm run fuzz -- [--runs N] [--seed S] [--only http,webmcp,mcp,ucp] [--path P] [--engine E]`:
 * the fuzz and invariant suite (test/fuzz/invariants.test.ts) with a bigger budget than CI's.
 *
 *   --runs N     generated cases per transport (SOLID_FUZZ_RUNS; CI runs the default, 650)
 *   --seed S     base seed (SOLID_FUZZ_SEED; transport i uses S + i) — replay a reported failure
 *   --only X     only these transports, comma-separated (SOLID_FUZZ_ONLY)
 *   --path P     fast-check replay path of a reported counterexample (SOLID_FUZZ_PATH)
 *   --engine E   sqlite, postgres or both (default: both when SOLID_TEST_DATABASE_URL is set,
 *                see .ci/postgres.sh, else sqlite)
 *
 * Runs the suite once per engine, without a test timeout, and exits non-zero when a run failed.
 */
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    seed: { type: 'string' },
    only: { type: 'string' },
    path: { type: 'string' },
    engine: { type: 'string' },
  },
});

for (const [name, v] of [
  ['runs', values.runs],
  ['seed', values.seed],
] as const) {
  if (v !== undefined && !/^\d+$/.test(v)) {
    console.error(`npm run fuzz: --${name} must be a whole number (got ${JSON.stringify(v)})`);
    process.exit(2);
  }
}
const hasPg = Boolean(process.env.SOLID_TEST_DATABASE_URL);
const engine = values.engine ?? (hasPg ? 'both' : 'sqlite');
if (!['sqlite', 'postgres', 'both'].includes(engine)) {
  console.error(`npm run fuzz: --engine must be sqlite, postgres or both (got ${JSON.stringify(engine)})`);
  process.exit(2);
}
if (engine !== 'sqlite' && !hasPg) {
  console.error(
    'npm run fuzz: PostgreSQL needs SOLID_TEST_DATABASE_URL (run `source .ci/postgres.sh` first)',
  );
  process.exit(2);
}

const env: NodeJS.ProcessEnv = { ...process.env };
if (values.runs !== undefined) env.SOLID_FUZZ_RUNS = values.runs;
if (values.seed !== undefined) env.SOLID_FUZZ_SEED = values.seed;
if (values.only !== undefined) env.SOLID_FUZZ_ONLY = values.only;
if (values.path !== undefined) env.SOLID_FUZZ_PATH = values.path;

let failed = false;
for (const e of engine === 'both' ? ['sqlite', 'postgres'] : [engine]) {
  console.log(`== fuzz on ${e}`);
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-reporter=spec', 'test/fuzz/invariants.test.ts'],
    { stdio: 'inherit', env: { ...env, SOLID_TEST_ENGINE: e } },
  );
  if (r.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
