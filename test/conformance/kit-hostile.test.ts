/**
 * The conformance kit against servers that are not there, not solid-verbs, or hostile, and bad
 * command lines: a server it cannot reach (a refused port, a port fetch blocks, a server that
 * never answers) and a key the server refuses are one preflight error and exit 2, not a failure
 * per check; every answer is bounded in size after decompression (a huge body, a gzip bomb); what
 * a server says cannot drive the terminal; --junit to a path it cannot write is refused before
 * the run. Spec: spec/conformance.md §outcomes, §safety, §reports.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConformanceNotRun, formatHuman, runConformance } from '../../src/conformance/index.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import { startBrokenServer } from './broken-server.ts';
import { closedPort, startHostileServer } from './hostile-server.ts';

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(['conformance', ...args], {
    out: (s) => out.push(s),
    err: (s) => err.push(s),
    isTTY: false,
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'solid-conformance-hostile-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('a server the kit cannot reach', () => {
  test('a refused port and a blocked port: one error naming the URL and the cause, exit 2', async () => {
    const refused = `http://127.0.0.1:${await closedPort()}`;
    for (const [url, cause] of [
      [refused, /ECONNREFUSED/],
      ['http://127.0.0.1:1', /bad port/],
    ] as const) {
      const r = await cli([url]);
      assert.equal(r.code, 2, url);
      assert.equal(r.out, '', 'no report, no FAIL per check');
      assert.equal(r.err.split('\n').filter((l) => l.startsWith('✗')).length, 1, r.err);
      assert.match(r.err, new RegExp(`✗ cannot reach ${url.replace(/[.]/g, '\\.')}: `));
      assert.match(r.err, cause);
      assert.match(r.err, /hint: check the base URL/);
    }
    await assert.rejects(
      runConformance({ baseUrl: refused }),
      (err: unknown) =>
        err instanceof ConformanceNotRun && err.reason === 'unreachable' && err.target === refused,
    );
  });

  test('--json prints the error as JSON and --junit writes a parsable report with one error', async (t) => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const file = join(tempDir(t), 'report.xml');
    const r = await cli([url, '--json', '--junit', file]);
    assert.equal(r.code, 2);
    const doc = JSON.parse(r.out) as {
      target: string;
      error: { reason: string; message: string; hint: string };
    };
    assert.equal(doc.target, url);
    assert.equal(doc.error.reason, 'unreachable');
    assert.match(doc.error.message, /ECONNREFUSED/);
    const xml = readFileSync(file, 'utf8');
    assert.match(xml, /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites [^>]*errors="1"/);
    assert.match(
      xml,
      /<testcase classname="conformance\.run" name="run\.preflight"[^>]*>\s*<error message="cannot reach/,
    );
    assert.equal((xml.match(/<testcase /g) ?? []).length, (xml.match(/<\/testcase>/g) ?? []).length);
  });

  test('a server that never answers is unreachable within the per-request timeout', async (t) => {
    const base = await startHostileServer(t, 'silent');
    await assert.rejects(
      runConformance({ baseUrl: base, timeoutMs: 200 }),
      (err: unknown) =>
        err instanceof ConformanceNotRun && /did not answer GET \/api\/v1\/agent\/verbs/.test(err.message),
    );
  });
});

describe('a server that is not solid-verbs, or hostile', () => {
  test('HTML 404 everywhere: the checks fail (exit 1), they do not crash', async (t) => {
    const base = await startHostileServer(t, 'html404');
    const r = await cli([base, '--only', 'manifest']);
    assert.equal(r.code, 1);
    assert.match(r.out, /FAIL {2}manifest\.list +answered HTTP 404/);
  });

  for (const mode of ['huge', 'gzip-bomb'] as const) {
    test(`${mode}: an answer past the size limit fails its check and is not read further`, async (t) => {
      const base = await startHostileServer(t, mode);
      const report = await runConformance({ baseUrl: base, only: ['manifest'], maxResponseBytes: 1 << 20 });
      const list = report.results.find((r) => r.id === 'manifest.list')!;
      assert.equal(list.status, 'fail');
      assert.match(list.message, /larger than the run's limit of 1048576 bytes/);
      assert.equal(list.evidence[0]?.request, 'GET /api/v1/agent/verbs');
    });
  }

  test('what a server answers cannot drive the terminal or fake a line of the report', async (t) => {
    const base = await startHostileServer(t, 'escapes');
    const report = await runConformance({ baseUrl: base, only: ['manifest'] });
    const text = formatHuman(report, { verbose: true });
    assert.doesNotMatch(
      text,
      // eslint-disable-next-line no-control-regex
      /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/,
      'no control character but new lines',
    );
    assert.doesNotMatch(text, /^ {2}PASS {2}manifest\.list {2}forged/m);
    assert.match(text, /\\u001b\[2J/, 'shown escaped');
  });
});

describe('bad command lines', () => {
  test('--junit to a path it cannot write, an empty --only, a URL without a scheme: exit 2 before the run', async (t) => {
    const dir = tempDir(t);
    for (const [args, message] of [
      [
        ['--junit', join(dir, 'no-such-dir', 'r.xml')],
        /--junit .*: cannot write the report there: the directory .* does not exist/,
      ],
      [['--junit', dir], /--junit .*: cannot write the report there: it is a directory/],
      [['--only', ''], /--only needs at least one section/],
      [['--only', ','], /--only needs at least one section/],
    ] as const) {
      const r = await cli(['http://127.0.0.1:9', ...args]);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.err, message);
      assert.doesNotMatch(r.err, /cannot reach/, 'refused before any request');
    }
    const bare = await cli(['127.0.0.1:4400']);
    assert.equal(bare.code, 2);
    assert.match(bare.err, /not an http\(s\) URL \(did you mean http:\/\/127\.0\.0\.1:4400\?\)/);
  });

  test('a key the server refuses is one error (exit 2); a missing or dying --mcp command says why', async (t) => {
    const server = await startBrokenServer(t);
    const r = await cli([
      server.base,
      '--api-key',
      'sk_solid_000000000000_notakeyofthisserver00000000',
      '--only',
      'envelope',
    ]);
    assert.equal(r.code, 2);
    assert.equal(r.out, '');
    assert.match(r.err, /refused the API key: HTTP 401 auth_invalid/);
    assert.match(r.err, /hint: check --api-key/);

    const missing = await runConformance({
      baseUrl: server.base,
      only: ['parity'],
      mcp: 'solid-no-such-command-xyz mcp',
    });
    assert.match(
      missing.results.find((x) => x.id === 'parity.mcp_tools')!.message,
      /the command "solid-no-such-command-xyz" was not found/,
    );
    const dying = await runConformance({
      baseUrl: server.base,
      only: ['parity'],
      mcp: `${JSON.stringify(process.execPath)} -e "console.error('no database here'); process.exit(3)"`,
    });
    assert.match(
      dying.results.find((x) => x.id === 'parity.mcp_tools')!.message,
      /its stderr: no database here/,
    );
  });
});
