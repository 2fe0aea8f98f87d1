/**
 * The cost of a refused worst-case body (issue 30 row 6): a 540 KB body of 50,000 keys used to
 * hold the event loop for about a second (parse, validation, the refusal's audit row). Bodies are
 * now bounded before they are parsed (src/spec/strict-json.ts checkJsonBounds: 1,000 keys per
 * object, 10,000 values), so a refusal costs one linear scan. Figures, each the median wall time
 * of one `POST /api/v1/agent/dispatch/bench.search` through the server `solid serve` runs
 * (createServeApp, Fastify inject: no socket), authenticated, on a file database:
 *
 *   body.refused_50k_keys      540 KB, 50,000 keys in `args` → 400 invalid_request (too_many_keys)
 *   body.refused_10k_values    the largest shape the bounds let through to the pipeline (10 objects
 *                              × 998 keys) → refused by the verb's input schema (invalid_input)
 *
 * Target: ≤ 20 ms each (the row's bound). Run alone: node --import tsx bench/body-bounds.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { createRuntime } from '../src/runtime/runtime.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { createServeApp } from '../src/transports/cli/commands/serve.ts';
import { median, type BenchResult } from './harness.ts';
import { seedContactsBench } from './contacts.ts';

export interface BodyBoundsOptions {
  /** Timed requests per body (default 30, after 5 of warm-up). */
  requests?: number;
}

/** The 540 KB body of issue 30 row 6: `{"args":{"a0":0,…}}` with 50,000 keys. */
export function fiftyThousandKeys(): string {
  const parts: string[] = [];
  for (let i = 0; i < 50_000; i++) parts.push(`"a${i}":0`);
  return `{"args":{${parts.join(',')}}}`;
}

/** The largest body the default bounds pass on: 10 objects of 998 keys (9,994 values). */
export function largestAdmitted(): string {
  const objects: string[] = [];
  for (let o = 0; o < 10; o++) {
    const keys: string[] = [];
    for (let i = 0; i < 998; i++) keys.push(`"k${i}":${i}`);
    objects.push(`{${keys.join(',')}}`);
  }
  return `{"args":{"q":"smith","rows":[${objects.join(',')}]}}`;
}

/** Run the bench; two BenchResults in ms per refused request (lower is better). */
export async function benchBodyBounds(options: BodyBoundsOptions = {}): Promise<BenchResult[]> {
  const n = options.requests ?? 30;
  const dir = mkdtempSync(join(tmpdir(), 'solid-bench-body-'));
  const store = new SqliteStore({ path: join(dir, 'bench.db') });
  const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
  const rt = await createRuntime({ store, logger, sandboxCompanyId: 1 });
  const app = await createServeApp(rt, {
    onMountError: (name, err) => {
      throw new Error(`transport ${name} not mounted: ${(err as Error).message}`);
    },
    http: {},
  });
  try {
    const key = await seedContactsBench(rt);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const time = async (payload: string, reason: string): Promise<number> => {
      const ms: number[] = [];
      for (let i = 0; i < n + 5; i++) {
        const t0 = performance.now();
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/agent/dispatch/bench.search',
          payload,
          headers,
        });
        const took = performance.now() - t0;
        const got = (res.json() as { error?: { reason?: string } }).error?.reason;
        if (got !== reason)
          throw new Error(`expected ${reason}, got ${res.statusCode} ${res.body.slice(0, 200)}`);
        if (i >= 5) ms.push(took);
      }
      return median(ms);
    };
    const big = fiftyThousandKeys();
    const wide = largestAdmitted();
    const a = await time(big, 'invalid_request');
    const b = await time(wide, 'invalid_input');
    const row = (id: string, what: string, value: number, bytes: number): BenchResult => ({
      id,
      what,
      value: Math.round(value * 100) / 100,
      unit: 'ms per refused request',
      target: '≤ 20 ms',
      met: value <= 20,
      notes: `${Math.round(bytes / 1024)} KB body, median of ${n}`,
    });
    return [
      row(
        'body.refused_50k_keys',
        'a 540 KB body of 50,000 keys, refused before it is parsed',
        a,
        big.length,
      ),
      row(
        'body.refused_10k_values',
        'the largest body the bounds admit, refused by the input schema',
        b,
        wide.length,
      ),
    ];
  } finally {
    await app.close();
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const r of await benchBodyBounds()) console.log(JSON.stringify(r));
}
