/**
 * The conformance kit against a deliberately broken server (./broken-server.ts): `solid
 * conformance … --allow-writes --mcp <its /mcp>` exits non-zero and reports each planted break
 * as the failed check that owns it, with evidence naming the fault — and nothing else fails but
 * the three checks that see the same missing audit_id. Also: the budget bounds a run (a run out of
 * requests fails `run.budget` instead of passing), and read-only runs skip every write check.
 * Spec: spec/conformance.md §outcomes, §safety.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatHuman, runConformance, type ConformanceReport } from '../../src/conformance/index.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import { PLANTED, startBrokenServer } from './broken-server.ts';
import { idsWith } from './harness.ts';

/**
 * The receipt without audit_id is also invalid against the receipt shape, no longer matches its
 * signature (the attestation signs every field) and makes the replay's receipt name no audit_id.
 */
const ALSO_FAILING = ['shapes.receipt', 'receipts.attestation', 'receipts.replay'];

describe('solid conformance against a broken server', () => {
  test('exits 1 and names each planted break as its check', async (t) => {
    const server = await startBrokenServer(t);
    const out: string[] = [];
    const code = await runCli(
      [
        'conformance',
        server.base,
        '--api-key',
        server.ownerKey,
        '--allow-writes',
        '--mcp',
        `${server.base}/mcp`,
        '--json',
      ],
      { out: (s) => out.push(s), err: () => {}, isTTY: false },
    );
    const report = JSON.parse(out.join('\n')) as ConformanceReport;
    assert.equal(code, 1);
    const failed = idsWith(report, 'fail').sort();
    assert.deepEqual(
      failed,
      [...Object.keys(PLANTED), ...ALSO_FAILING].sort(),
      JSON.stringify(
        report.results.filter((r) => r.status === 'fail'),
        null,
        1,
      ),
    );

    const byId = new Map(report.results.map((r) => [r.id, r]));
    const records = byId.get('manifest.records')!;
    assert.match(records.message, /audit\.trail/);
    assert.match(JSON.stringify(records.evidence), /x-test-safe/);
    assert.match(byId.get('receipts.fields')!.message, /audit_id/);
    assert.match(byId.get('consent.replayed_nonce')!.message, /spent nonce was accepted again/);
    const mcp = byId.get('parity.mcp_tools')!;
    assert.match(mcp.message, /1 missing, 0 unexpected/);
    assert.deepEqual((mcp.evidence[0]!.answer as { missing: string[] }).missing, ['audit.trail']);

    // The table a human reads names them too, with the requirement and the evidence.
    const human = formatHuman(report);
    for (const id of Object.keys(PLANTED))
      assert.match(human, new RegExp(`FAIL  ${id.replace('.', '\\.')} `));
    assert.match(human, /requirement: Every record is valid against the VerbRecord schema/);
    assert.match(
      human,
      new RegExp(
        `\\n${report.summary.passed} passed, ${failed.length} failed, ${report.summary.skipped} skipped$`,
      ),
    );
  });

  test('a run out of budget fails run.budget, and the checks it could not run skip', async (t) => {
    const server = await startBrokenServer(t);
    const report = await runConformance({ baseUrl: server.base, only: ['manifest'], maxRequests: 3 });
    const budget = report.results.find((r) => r.id === 'run.budget');
    assert.equal(budget?.status, 'fail');
    assert.match(budget!.message, /limit of 3 requests/);
    assert.ok(report.requests <= 3);
    assert.ok(idsWith(report, 'skip').some((id) => id.startsWith('manifest.')));
  });

  test('without --allow-writes and a key, no write runs: every write check skips with what to pass', async (t) => {
    const server = await startBrokenServer(t);
    const before = await server.demo.rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM conformance_counters'),
    );
    const report = await runConformance({ baseUrl: server.base, only: ['receipts', 'consent'] });
    const after = await server.demo.rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM conformance_counters'),
    );
    assert.equal(Number(after?.n), Number(before?.n), 'no counter was written');
    for (const r of report.results.filter((x) => x.id !== 'receipts.declaration')) {
      assert.equal(r.status, 'skip', r.id);
      assert.match(r.message, /--allow-writes/, r.id);
    }
    assert.equal(report.summary.failed, 0);
  });
});
