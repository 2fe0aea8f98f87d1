/**
 * The conformance kit against our own `solid serve --demo` (real processes, ephemeral ports), on
 * SQLite and — when SOLID_TEST_DATABASE_URL is set — PostgreSQL: every section runs (key, writes,
 * MCP over the stdio `solid mcp` of the same database, UCP with a test platform the tenant lets
 * in) and nothing fails. The skips are exactly the ones the demo cannot avoid, each with its
 * reason, so a check that silently stops running is noticed. Also the command line: `solid
 * conformance` prints the table and the summary line, writes JUnit XML and exits 0.
 * Spec: spec/conformance.md; docs/conformance.md.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runConformance, SECTIONS, type ConformanceReport } from '../../src/conformance/index.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import { PG_SKIP_REASON, TEST_DATABASE_URL, dropSchema, freshSchemaName } from '../support/postgres.ts';
import { BIN, SOLID_COMMAND, failures, idsWith, serve } from './harness.ts';

const run = promisify(execFile);

/** What the demo cannot run, and why (asserted by reason, so a new skip is a test failure). */
const EXPECTED_SKIPS: Record<string, RegExp> = {
  'shapes.transaction': /transaction\.status needs real ids/,
  'shapes.macro': /every macro verb writes/,
  'ucp.untrusted': /accepts any signing platform/,
  // The demo tenant counts typed phrases only from a human (the default, spec/consent.md
  // §channels): the kit, an agent, is not shown the phrase and cannot type one that counts.
  'consent.wrong_phrase': /the pending answer showed no phrase/,
  'consent.typed_phrase': /the pending answer showed no phrase/,
};

interface Engine {
  /** --db value. */
  db: string;
  /** Environment of every process on that database. */
  env: Record<string, string>;
}

async function sqliteEngine(t: TestContext): Promise<Engine> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-conformance-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'solid.db');
  return { db, env: { SOLID_DB: db } };
}

async function postgresEngine(t: TestContext): Promise<Engine> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-conformance-pg-'));
  const schema = freshSchemaName();
  t.after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await dropSchema(schema);
  });
  const url = TEST_DATABASE_URL!;
  return {
    db: url,
    env: { SOLID_DATABASE_URL: url, SOLID_DB_SCHEMA: schema, SOLID_KEYFILE: join(dir, 'keys.json') },
  };
}

/**
 * First run seeds (and prints the keys), then the tenant lets any signing platform read over UCP,
 * then the server runs again in UCP development mode (loopback platform profiles are fetched).
 */
async function demoServer(t: TestContext, engine: Engine): Promise<{ base: string; ownerKey: string }> {
  const first = await serve(t, ['--demo', '--db', engine.db], engine.env);
  assert.ok(first.ownerKey, `the first --demo run prints the keys:\n${first.stdout}`);
  assert.match(first.stdout, /Conformance http:\/\/127\.0\.0\.1:\d+\/\.well-known\/solid-verbs-conformance/);
  assert.equal(await first.stop(), 0);
  await run(
    process.execPath,
    [
      BIN,
      '--db',
      engine.db,
      'ucp',
      'config',
      'set',
      '--tenant',
      '2',
      '--json',
      '{"any_platform":{"role":"read_only"}}',
    ],
    { env: { ...process.env, ...engine.env } },
  );
  const second = await serve(t, ['--demo', '--db', engine.db], { ...engine.env, SOLID_UCP_DEV: '1' });
  return { base: second.base, ownerKey: first.ownerKey };
}

function assertConformant(report: ConformanceReport): void {
  assert.equal(report.summary.failed, 0, failures(report));
  const skipped = report.results.filter((r) => r.status === 'skip');
  assert.deepEqual(
    skipped.map((r) => r.id).sort(),
    Object.keys(EXPECTED_SKIPS).sort(),
    JSON.stringify(skipped, null, 1),
  );
  for (const r of skipped) assert.match(r.message, EXPECTED_SKIPS[r.id]!, r.id);
  for (const s of SECTIONS) {
    const section = report.sections.find((x) => x.id === s)!;
    assert.ok(section.summary.passed > 0, `section ${s} ran`);
  }
  for (const id of ['receipts.in_flight', 'parity.mcp_tools', 'ucp.signed_call', 'ucp.replay'])
    assert.ok(idsWith(report, 'pass').includes(id), `${id} passed`);
}

async function fullRun(t: TestContext, engine: Engine): Promise<void> {
  const { base, ownerKey } = await demoServer(t, engine);
  const report = await runConformance({
    baseUrl: base,
    apiKey: ownerKey,
    allowWrites: true,
    ucp: true,
    mcp: `${SOLID_COMMAND} mcp`,
    mcpEnv: engine.env,
  });
  assertConformant(report);
  assert.ok(report.requests < 600, `bounded: ${report.requests} requests`);
}

describe('solid conformance against solid serve --demo', () => {
  test('SQLite: every section, 0 failures; the CLI prints the summary, writes JUnit, exits 0', async (t) => {
    const engine = await sqliteEngine(t);
    const { base, ownerKey } = await demoServer(t, engine);
    const report = await runConformance({
      baseUrl: base,
      apiKey: ownerKey,
      allowWrites: true,
      ucp: true,
      mcp: `${SOLID_COMMAND} mcp`,
      mcpEnv: engine.env,
    });
    assertConformant(report);

    // The command line, read-only (no --allow-writes): the write checks skip with the flag to pass.
    const out: string[] = [];
    const err: string[] = [];
    const junit = join(mkdtempSync(join(tmpdir(), 'solid-junit-')), 'conformance.xml');
    const code = await runCli(
      ['conformance', base, '--api-key', ownerKey, '--only', 'manifest,receipts', '--junit', junit],
      { out: (s) => out.push(s), err: (s) => err.push(s), isTTY: false },
    );
    const text = out.join('\n');
    assert.equal(code, 0, text);
    assert.match(text, /^manifest — /m);
    assert.match(text, /PASS {2}manifest\.records/);
    assert.match(text, /SKIP {2}receipts\.fields +writes: pass --allow-writes/);
    assert.match(text, /\n\d+ passed, 0 failed, \d+ skipped$/);
    const xml = readFileSync(junit, 'utf8');
    assert.match(
      xml,
      /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites name="solid-verbs conformance" tests="\d+" failures="0"/,
    );
    assert.match(
      xml,
      /<testcase classname="conformance\.receipts" name="receipts\.fields" time="[\d.]+">\n {6}<skipped message="writes: pass --allow-writes/,
    );
  });

  test(
    'PostgreSQL: every section, 0 failures',
    { skip: TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false },
    async (t) => {
      await fullRun(t, await postgresEngine(t));
    },
  );
});
