/**
 * The predict category of the demo business (src/business/verbs/predict.ts): a forecast learned
 * from the caller's own visits, never another tenant's. Runs on SQLite, and on PostgreSQL with
 * SOLID_TEST_ENGINE=postgres.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fitLine } from '../../src/business/verbs/predict.ts';
import { openDemoRuntime, type DemoRuntime } from '../support/demo.ts';

const WEEK = 7 * 86_400_000;

async function completedSince(d: DemoRuntime, companyId: number, weeks: number): Promise<number> {
  const now = d.rt.clock().getTime();
  const row = await d.rt.store.read((q) =>
    q.get<{ n: unknown }>(
      `SELECT COUNT(*) AS n FROM appointments WHERE company_id = ? AND status = 'completed' AND starts_at >= ? AND starts_at < ?`,
      [companyId, new Date(now - weeks * WEEK).toISOString(), new Date(now).toISOString()],
    ),
  );
  return Number(row!.n);
}

test('fitLine recovers a line and its scatter', () => {
  const exact = fitLine([3, 5, 7, 9]);
  assert.deepEqual([exact.intercept, exact.slope, exact.residual_sd], [3, 2, 0]);
  const flat = fitLine([4, 6, 4, 6]);
  assert.ok(Math.abs(flat.slope - 0.4) < 1e-9);
  assert.ok(flat.residual_sd > 0);
});

test('predict.weekly_visits learns from the company’s own completed visits and projects them', async (t) => {
  const d = await openDemoRuntime(t);
  // The clock moves with real time; freeze nothing, but compare against the same window.
  const env = await d.call('read_only', 'predict.weekly_visits', { history_weeks: 12, weeks_ahead: 4 });
  assert.equal(env.ok, true, JSON.stringify(env.error));
  const data = env.result!.data as {
    history: Array<{ visits: number }>;
    forecast: Array<{ expected: number; low: number; high: number }>;
    sample_size: number;
  };
  assert.equal(data.history.length, 12);
  assert.equal(data.forecast.length, 4);
  assert.equal(
    data.history.reduce((s, w) => s + w.visits, 0),
    data.sample_size,
  );
  assert.equal(data.sample_size, await completedSince(d, d.companyId, 12));
  assert.ok(data.sample_size > 0, 'the demo has visit history');
  for (const f of data.forecast) assert.ok(f.low <= f.expected && f.expected <= f.high && f.low >= 0);

  const theirs = await d.call({ apiKey: d.secondOwnerKey }, 'predict.weekly_visits', { history_weeks: 12 });
  assert.equal(theirs.ok, true, JSON.stringify(theirs.error));
  assert.equal(
    (theirs.result!.data as { sample_size: number }).sample_size,
    await completedSince(d, d.secondCompanyId, 12),
    'the other business’s forecast counts only its own visits',
  );
});
