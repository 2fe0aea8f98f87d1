/**
 * Each check added for issue 33 item 4 against a small third-party-style server with that one
 * break planted (./planted-server.ts): the kit fails exactly the check that owns the break, with
 * evidence naming it. Against the unbroken demo the same checks pass (kit-demo.test.ts).
 * Spec: spec/conformance.md §outcomes.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { exitCodeOf, runConformance, type ConformanceReport } from '../../src/conformance/index.ts';
import { CAUGHT_BY, startPlantedServer } from './planted-server.ts';
import { idsWith } from './harness.ts';

function result(report: ConformanceReport, id: string) {
  const r = report.results.find((x) => x.id === id);
  assert.ok(r, `${id} ran`);
  return r;
}

const failures = (report: ConformanceReport) =>
  JSON.stringify(
    report.results.filter((r) => r.status === 'fail'),
    null,
    1,
  );

describe('the kit catches each planted break', () => {
  test('success envelopes without ok fail the default run (no key, no writes)', async (t) => {
    const server = await startPlantedServer(t, 'no_ok');
    const report = await runConformance({ baseUrl: server.base });
    assert.equal(exitCodeOf(report), 1);
    const failed = idsWith(report, 'fail');
    for (const id of CAUGHT_BY.no_ok) assert.ok(failed.includes(id), `${id} failed: ${failed.join(', ')}`);
    assert.match(result(report, 'envelope.success').message, /with ok undefined, not true/);
    assert.match(result(report, 'envelope.error_fields').message, /an envelope has no ok \(HTTP 200\)/);
  });

  test("a result valid against the verb's own output_schema but not its shape fails shapes.<shape>", async (t) => {
    const server = await startPlantedServer(t, 'off_shape');
    const report = await runConformance({ baseUrl: server.base, only: ['shapes'] });
    assert.deepEqual(idsWith(report, 'fail'), CAUGHT_BY.off_shape, failures(report));
    assert.match(
      result(report, 'shapes.aggregate').message,
      /acme\.widgets_list: the result is invalid against schema\/shapes\/aggregate\.json/,
    );
  });

  test('a preview that commits what it previews fails shapes.preview_read_only', async (t) => {
    const server = await startPlantedServer(t, 'preview_writes');
    const report = await runConformance({ baseUrl: server.base, only: ['shapes'] });
    assert.deepEqual(idsWith(report, 'fail'), CAUGHT_BY.preview_writes, failures(report));
    const r = result(report, 'shapes.preview_read_only');
    // shapes.preview called it once already: each call raises the price by 10.
    const m = /acme\.price_preview wrote: .*current\.price is (\d+), was (\d+) \(projected (\d+)\)/.exec(
      r.message,
    );
    assert.ok(m, r.message);
    assert.equal(Number(m[1]), Number(m[2]) + 10);
    assert.equal(m[1], m[3], 'the second call shows what the first projected');
    assert.equal(r.evidence.length, 2, 'both calls are the evidence');
  });

  test('an MCP tool that takes other arguments than its verb over HTTP fails parity.mcp_schemas', async (t) => {
    const server = await startPlantedServer(t, 'mcp_schema');
    const report = await runConformance({
      baseUrl: server.base,
      apiKey: server.ownerKey,
      only: ['parity'],
      mcp: `${server.base}/mcp`,
    });
    assert.deepEqual(idsWith(report, 'fail'), CAUGHT_BY.mcp_schema, failures(report));
    const r = result(report, 'parity.mcp_schemas');
    assert.match(
      r.message,
      /^1 tools take other arguments than their verbs over HTTP: verbs__list \(\/\w+: over HTTP only\)/,
    );
    assert.equal(result(report, 'parity.mcp_tools').status, 'pass', 'the names alone still agree');
  });

  test('MCP annotations that contradict the records fail parity.mcp_annotations', async (t) => {
    const server = await startPlantedServer(t, 'mcp_annotations');
    const report = await runConformance({
      baseUrl: server.base,
      apiKey: server.ownerKey,
      only: ['parity'],
      mcp: `${server.base}/mcp`,
    });
    assert.deepEqual(idsWith(report, 'fail'), CAUGHT_BY.mcp_annotations, failures(report));
    const r = result(report, 'parity.mcp_annotations');
    assert.match(
      r.message,
      /tools are annotated against their records: \w+ \(readOnlyHint true, but the record says side_effects (write|mixed)/,
    );
    assert.equal(result(report, 'parity.mcp_schemas').status, 'pass');
  });
});
