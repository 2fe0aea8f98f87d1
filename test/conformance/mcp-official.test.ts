/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, a devDependency pinned
 * in package.json) against `solid serve --demo`'s `/mcp` (2025-11-25), every server scenario:
 * each one must pass with no FAILURE and no WARNING, except those listed with their reason in
 * mcp-official-not-applicable.json (a listed one that starts passing fails too, so the list stays
 * true). The suite needs Node 22: `bash scripts/node-line.sh 22` installs it from the npm registry
 * (CI does, .ci/run); without it this test skips and says so.
 *
 * The suite cannot send an API key, so it runs keyless (the sandbox tenant, reads only) against a
 * test deployment whose per-address rate limit is off (`--rate-limit-address 0`): it opens a
 * session per scenario, beyond the default 60 keyless calls a minute. docs/mcp.md §conformance.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { node22, NODE22_MISSING } from '../support/node-lines.ts';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '../../bin/solid.js');

interface NotApplicable {
  suite: string;
  scenarios: Record<string, string>;
}
interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

/** The suite's entry point and version, when the devDependency is installed. */
function suite(): { entry: string; version: string } | undefined {
  try {
    const pkgPath = createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json');
    const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { version: string; bin: Record<string, string> };
    return { entry: join(dirname(pkgPath), pkg.bin.conformance!), version: pkg.version };
  } catch {
    return undefined;
  }
}

const NA = JSON.parse(readFileSync(join(here, 'mcp-official-not-applicable.json'), 'utf8')) as NotApplicable;

test('every applicable server scenario of the official MCP conformance suite passes on /mcp', async (t) => {
  const node = node22();
  if (node === undefined) {
    t.skip(NODE22_MISSING);
    return;
  }
  const s = suite();
  if (s === undefined) {
    t.skip('@modelcontextprotocol/conformance is not installed (npm ci installs the devDependency)');
    return;
  }
  assert.equal(
    `@modelcontextprotocol/conformance@${s.version}`,
    NA.suite,
    'the suite changed version: re-read every entry of mcp-official-not-applicable.json, then update its "suite"',
  );
  for (const [name, reason] of Object.entries(NA.scenarios))
    assert.ok(reason.trim().length > 20, `${name}: a reason is required`);

  const dir = mkdtempSync(join(tmpdir(), 'solid-mcp-conformance-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--demo', '--port', '0', '--db', join(dir, 'solid.db'), '--rate-limit-address', '0'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SOLID_API_KEY: '', SOLID_LOG_LEVEL: 'warn' },
    },
  );
  // A guard so a broken server cannot hang the suite; not a timing assertion.
  const guard = setTimeout(() => child.kill('SIGKILL'), 240_000);
  t.after(() => {
    clearTimeout(guard);
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const base = await new Promise<string>((resolveBase, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /solid serve: ready on (http:\/\/\S+)/.exec(stdout);
      if (m) resolveBase(m[1]!);
    });
    void exited.then((code) =>
      reject(new Error(`serve exited (${code}) before ready:\n${stdout}\n${stderr}`)),
    );
  });

  const out = join(dir, 'results');
  // Exit code 1 whenever a scenario fails, which the listed ones do: the results decide.
  await run(node, [s.entry, 'server', '--url', `${base}/mcp`, '--suite', 'all', '-o', out], {
    maxBuffer: 64 * 1024 * 1024,
  }).catch((err: { stdout?: string }) => {
    if (typeof err.stdout !== 'string' || !err.stdout.includes('SUMMARY')) throw err;
  });

  const results = new Map<string, Check[]>();
  for (const entry of readdirSync(out)) {
    const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry);
    assert.ok(m, `unexpected result folder ${entry}`);
    results.set(m[1]!, JSON.parse(readFileSync(join(out, entry, 'checks.json'), 'utf8')) as Check[]);
  }
  assert.ok(results.size > 20, `the suite ran its scenarios (${results.size})`);
  for (const name of Object.keys(NA.scenarios))
    assert.ok(results.has(name), `${name} is listed as not applicable but the suite has no such scenario`);

  const problems: string[] = [];
  let passed = 0;
  for (const [name, checks] of results) {
    const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    if (NA.scenarios[name] !== undefined) {
      if (bad.length === 0) problems.push(`${name} now passes: take it off mcp-official-not-applicable.json`);
      continue;
    }
    if (!checks.some((c) => c.status === 'SUCCESS')) problems.push(`${name}: no check succeeded`);
    for (const c of bad) problems.push(`${name}: ${c.status} ${c.id}: ${c.errorMessage ?? ''}`);
    if (bad.length === 0) passed++;
  }
  assert.deepEqual(problems, [], problems.join('\n'));
  t.diagnostic(`${passed} applicable scenarios passed; ${Object.keys(NA.scenarios).length} not applicable`);

  child.kill('SIGTERM');
  assert.equal(await exited, 0, stderr);
});
