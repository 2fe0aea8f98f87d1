/**
 * The kit's pure parts: arguments built from a published input schema, the --mcp command line,
 * the run id in declared arguments, the declaration schema, the reports (summary line, JUnit XML
 * escaping and counts), and the CLI's refusals of bad usage (exit 2).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  formatHuman,
  formatJunit,
  packDeclaration,
  runConformance,
  splitCommand,
  summaryLine,
  synthesizeArgs,
  withRunId,
  xmlEscape,
  type ConformanceReport,
} from '../../src/conformance/index.ts';
import { publishedCompiler, validateOurs } from '../../src/conformance/schemas.ts';
import { forgeNonce } from '../../src/conformance/checks/consent.ts';
import { identityPaths } from '../../src/conformance/checks/manifest.ts';
import { runCli } from '../../src/transports/cli/main.ts';

describe('synthesizeArgs', () => {
  const compile = publishedCompiler();
  const now = new Date('2026-05-23T14:00:00Z');

  it('prefers a valid example of the schema', () => {
    const s = synthesizeArgs(
      {
        type: 'object',
        properties: { customer_id: { type: 'integer' } },
        required: ['customer_id'],
        examples: [{ customer_id: 'not valid' }, { customer_id: 42 }],
      },
      compile,
    );
    assert.deepEqual(s, {
      ok: true,
      args: { customer_id: 42 },
      source: 'examples',
      idProperties: ['customer_id'],
    });
  });

  it('builds every required property from enum, format, bounds and nesting, and validates the result', () => {
    const s = synthesizeArgs(
      {
        type: 'object',
        properties: {
          tier: { type: 'string', enum: ['starter', 'enterprise'] },
          from: { type: 'string', format: 'date-time' },
          day: { type: 'string', format: 'date' },
          email: { type: 'string', format: 'email' },
          code: { type: 'string', minLength: 14, maxLength: 20 },
          qty: { type: 'integer', minimum: 3, maximum: 9 },
          ratio: { type: 'number', exclusiveMinimum: 0.5 },
          tags: { type: 'array', minItems: 2, items: { type: 'string' } },
          filter: { type: 'object', properties: { on: { type: 'boolean' } }, required: ['on'] },
          maybe: { anyOf: [{ type: 'null' }, { type: 'integer', minimum: 7 }] },
          optional: { type: 'string' },
        },
        required: ['tier', 'from', 'day', 'email', 'code', 'qty', 'ratio', 'tags', 'filter', 'maybe'],
        additionalProperties: false,
      },
      compile,
      now,
    );
    assert.equal(s.ok, true, JSON.stringify(s));
    if (!s.ok) return;
    assert.deepEqual(s.args, {
      tier: 'starter',
      from: '2026-05-23T14:00:00.000Z',
      day: '2026-05-23',
      email: 'conformance@example.com',
      code: 'conformancexxx',
      qty: 3,
      ratio: 1.5,
      tags: ['conformance', 'conformance'],
      filter: { on: false },
      maybe: 7,
    });
    assert.deepEqual(s.idProperties, []);
  });

  it('says why when it cannot build arguments the schema accepts', () => {
    const s = synthesizeArgs(
      {
        type: 'object',
        properties: { ref: { type: 'string', pattern: '^ch_[A-Za-z0-9]{24}$' } },
        required: ['ref'],
      },
      compile,
    );
    assert.equal(s.ok, false);
    assert.match((s as { reason: string }).reason, /refused by the input schema: \/ref must match pattern/);
    assert.deepEqual(synthesizeArgs({ type: 'object', required: ['x'] }, compile), {
      ok: false,
      reason: 'the kit cannot build a value for the required argument x',
    });
  });
});

describe('splitCommand', () => {
  it('splits like a shell: quotes, escapes, no expansion', () => {
    assert.deepEqual(splitCommand('solid mcp'), ['solid', 'mcp']);
    assert.deepEqual(splitCommand(`"/opt/my node/node" '/a b/solid.js' mcp --db\\ x $HOME`), [
      '/opt/my node/node',
      '/a b/solid.js',
      'mcp',
      '--db x',
      '$HOME',
    ]);
    assert.deepEqual(splitCommand('a "" b'), ['a', '', 'b']);
    assert.throws(() => splitCommand('solid "mcp'), /unterminated " quote/);
  });
});

describe('declaration', () => {
  it('{run} becomes the run id in every string, deeply', () => {
    assert.deepEqual(withRunId({ a: 'kit-{run}', b: [{ c: '{run}{run}' }], n: 1, z: null }, 'ab12cd34'), {
      a: 'kit-ab12cd34',
      b: [{ c: 'ab12cd34ab12cd34' }],
      n: 1,
      z: null,
    });
  });

  it('the schema refuses a declaration with an unknown member, one argument set, or an unknown gate', () => {
    const good = packDeclaration(() => true)!;
    assert.deepEqual(validateOurs('conformance-declaration.json', good), []);
    const tv = good.test_verbs[0]!;
    const bad = (test_verbs: unknown[], extra: Record<string, unknown> = {}) =>
      validateOurs('conformance-declaration.json', { ...good, ...extra, test_verbs });
    assert.match(bad([{ ...tv, x_safe: true }]).join(), /additional properties \(x_safe\)/);
    assert.match(
      bad([{ ...tv, args: [tv.args[0]] }]).join(),
      /\/test_verbs\/0\/args must NOT have fewer than 2 items/,
    );
    assert.match(bad([{ ...tv, gate: 'none' }]).join(), /gate must be equal to one of the allowed values/);
    assert.match(bad([tv], { solid_verbs_conformance: 2 }).join(), /must be equal to constant/);
    assert.equal(
      packDeclaration(() => false),
      undefined,
      'no pack verb served: no declaration',
    );
  });
});

describe('checks helpers', () => {
  it('a forged nonce differs in exactly one character of its MAC', () => {
    const nonce = 'n1.kid.payload.abcdefghijklmnopAAAAA';
    const forged = forgeNonce(nonce);
    assert.equal(forged.length, nonce.length);
    assert.equal([...forged].filter((c, i) => c !== nonce[i]).length, 1);
    assert.ok(forged.startsWith('n1.kid.payload.'));
  });

  it('identity properties are found at any depth, never in examples or defaults', () => {
    assert.deepEqual(
      identityPaths(
        {
          properties: {
            filter: { type: 'object', properties: { user_id: { type: 'integer' } } },
            list: { type: 'array', items: { anyOf: [{ properties: { company_id: {} } }] } },
          },
          examples: [{ properties: { company_id: 1 } }],
        },
        '/input_schema',
      ),
      [
        '/input_schema/properties/filter/properties/user_id',
        '/input_schema/properties/list/items/anyOf/0/properties/company_id',
      ],
    );
  });
});

function report(results: ConformanceReport['results']): ConformanceReport {
  const count = (rs: typeof results) => ({
    passed: rs.filter((r) => r.status === 'pass').length,
    failed: rs.filter((r) => r.status === 'fail').length,
    skipped: rs.filter((r) => r.status === 'skip').length,
  });
  return {
    kit: { name: 'solid-verbs conformance', version: '0.0.0' },
    target: 'http://127.0.0.1:4400',
    run_id: 'ab12cd34',
    started_at: '2026-05-23T14:00:00.000Z',
    duration_ms: 1500,
    options: { key: true, allow_writes: false, mcp: null, ucp: false, sections: ['manifest'] },
    requests: 3,
    summary: count(results),
    sections: [{ id: 'manifest', title: 'the manifest', summary: count(results) }],
    results,
  };
}

describe('reports', () => {
  const results: ConformanceReport['results'] = [
    {
      id: 'manifest.list',
      section: 'manifest',
      requirement: 'r1',
      spec: 'spec/a.md §x',
      status: 'pass',
      message: 'ok',
      evidence: [],
      duration_ms: 5,
    },
    {
      id: 'manifest.records',
      section: 'manifest',
      requirement: 'Every record <is> valid & "whole"',
      spec: 'spec/manifest.md §record',
      status: 'fail',
      message: 'x-test-safe <extra> & \u0001bell',
      evidence: [{ request: 'GET /api/v1/agent/verbs', status: 200, answer: { bad: ['/ must NOT'] } }],
      duration_ms: 12,
    },
    {
      id: 'manifest.etag',
      section: 'manifest',
      requirement: 'r3',
      spec: 'spec/a.md §y',
      status: 'skip',
      message: "can't",
      evidence: [],
      duration_ms: 0,
    },
  ];

  it('the human report ends with the summary line and shows a failure with its requirement and evidence', () => {
    const text = formatHuman(report(results));
    assert.equal(summaryLine({ passed: 1, failed: 1, skipped: 1 }), '1 passed, 1 failed, 1 skipped');
    assert.match(text, /\n1 passed, 1 failed, 1 skipped$/);
    assert.match(text, /FAIL {2}manifest\.records +x-test-safe/);
    assert.match(text, /requirement: Every record <is> valid & "whole" \(spec\/manifest\.md §record\)/);
    assert.match(
      text,
      /request: GET \/api\/v1\/agent\/verbs\n +status: {2}200\n +answer: {2}\{"bad":\["\/ must NOT"\]\}/,
    );
    assert.doesNotMatch(text, /requirement: r1/, 'passing checks show no evidence unless --verbose');
  });

  it('JUnit XML escapes text, drops characters XML forbids, and counts per suite', () => {
    assert.equal(xmlEscape(`a<b>&"c'\u0001\u0008d\t`), 'a&lt;b&gt;&amp;&quot;c&apos;d\t');
    const xml = formatJunit(report(results));
    assert.match(
      xml,
      /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites name="solid-verbs conformance" tests="3" failures="1" skipped="1" errors="0" time="1\.500">/,
    );
    assert.match(
      xml,
      /<testsuite name="manifest" tests="3" failures="1" skipped="1" errors="0" time="0\.017" timestamp="2026-05-23T14:00:00" hostname="127\.0\.0\.1:4400">/,
    );
    assert.match(
      xml,
      /<failure message="x-test-safe &lt;extra&gt; &amp; bell" type="manifest\.records">Every record &lt;is&gt; valid &amp; &quot;whole&quot;/,
    );
    assert.match(xml, /<skipped message="can&apos;t"\/>/);
    assert.ok(
      ![...xml].some((c) => c.charCodeAt(0) >= 1 && c.charCodeAt(0) <= 8),
      'no C0 control characters',
    );
    assert.equal((xml.match(/<testcase /g) ?? []).length, 3);
    assert.equal((xml.match(/<\/testcase>/g) ?? []).length, 3);
  });
});

describe('usage', () => {
  it('refuses a base URL that is not http(s) and an unknown section', async () => {
    await assert.rejects(runConformance({ baseUrl: 'ftp://x' }), /not an http\(s\) URL/);
    await assert.rejects(
      runConformance({ baseUrl: 'http://127.0.0.1:9', only: ['nope' as never] }),
      /unknown section "nope"/,
    );
  });

  it('the command exits 2 on bad usage, with the reason on stderr', async () => {
    for (const [args, message] of [
      [['--only', 'manifest,nope'], /--only: unknown section "nope"/],
      [['--mcp-env', 'NOEQUALS'], /--mcp-env "NOEQUALS" must be KEY=VALUE/],
      [['--timeout-ms', '0'], /--timeout-ms must be a positive integer/],
      [['--ucp-key', '/nonexistent/key.json'], /--ucp-key \/nonexistent\/key\.json/],
    ] as const) {
      const err: string[] = [];
      const code = await runCli(['conformance', 'http://127.0.0.1:9', ...args], {
        out: () => {},
        err: (s) => err.push(s),
        isTTY: false,
      });
      assert.equal(code, 2, args.join(' '));
      assert.match(err.join('\n'), message);
    }
  });
});
