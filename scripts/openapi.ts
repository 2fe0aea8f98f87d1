/**
 * `npm run lint:openapi`: write the OpenAPI document `solid serve --demo` serves (the demo and
 * conformance packs, every HTTP mount) and lint it with Redocly (0 errors required; CI runs it).
 *
 *   node --import tsx scripts/openapi.ts             write it to a temp file and run `redocly lint`
 *                                                    on it (exit code: Redocly's, 1 on any error)
 *   node --import tsx scripts/openapi.ts out.json    only write the document
 *
 * `demoOpenApi()` is what the code-generation test (test/transports/http/openapi-codegen.test.ts)
 * reads: the same document, built in-process on a throwaway database (no socket, no seed).
 * Spec: spec/transports.md §http-openapi.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openLocal } from '../src/transports/cli/local.ts';
import { loadHttpMounts } from '../src/transports/server/http-mounts.ts';
import { createHttpServer } from '../src/transports/http/server.ts';

/**
 * The demo server's /openapi.json, parsed. `publicUrl` is passed as an allowed origin
 * (the document's `servers`). Throws when a mount fails to load.
 */
export async function demoOpenApi(publicUrl = 'http://localhost:4400'): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-openapi-'));
  const local = await openLocal({
    db: join(dir, 'demo.db'),
    create: true,
    packs: ['demo', 'conformance'],
    logLevel: 'silent',
  });
  try {
    const plugins = await loadHttpMounts((name, err) => {
      throw new Error(`transport ${name} not mounted: ${(err as Error).message}`);
    });
    const app = createHttpServer(local.rt, { plugins, logger: false, allowedOrigins: [publicUrl] });
    try {
      const res = await app.inject({ method: 'GET', url: '/openapi.json' });
      if (res.statusCode !== 200) throw new Error(`/openapi.json answered ${res.statusCode}`);
      return res.json() as Record<string, unknown>;
    } finally {
      await app.close();
    }
  } finally {
    await local.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const doc = `${JSON.stringify(await demoOpenApi(), null, 2)}\n`;
  if (process.argv[2] !== undefined) writeFileSync(process.argv[2], doc);
  else {
    const dir = mkdtempSync(join(tmpdir(), 'solid-openapi-'));
    const file = join(dir, 'openapi.json');
    writeFileSync(file, doc);
    const cli = createRequire(import.meta.url)
      .resolve('@redocly/cli/package.json')
      .replace(/package\.json$/, 'bin/cli.js');
    const run = spawnSync(process.execPath, [cli, 'lint', file], {
      stdio: 'inherit',
      // Offline and quiet in CI: no telemetry, no update check.
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    rmSync(dir, { recursive: true, force: true });
    process.exitCode = run.status ?? 1;
  }
}
