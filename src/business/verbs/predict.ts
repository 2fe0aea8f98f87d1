/**
 * Predict verbs (category `predict`): forecasts computed at call time from the tenant's own
 * history, never canned. `predict.weekly_visits` fits a least-squares line to the company's
 * completed visits per 7-day week over the last `history_weeks` weeks and projects it
 * `weeks_ahead` weeks forward, with a band of ±1 standard deviation of the residuals (floored at
 * 0) and the sample it learned from. Weeks end at the call time (`ctx.now`), so the latest week
 * is the 7 days before it.
 *
 * Reasons: invalid_input (schema). Spec: spec/shapes.md §aggregate.
 */
import { DAY_MS } from '../data/iso-time.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { objectSchema } from './input-schema.ts';

const WEEK_MS = 7 * DAY_MS;

/** Least-squares line y = a + b·x over x = 0..n-1, and the residuals' standard deviation. */
export function fitLine(ys: readonly number[]): { intercept: number; slope: number; residual_sd: number } {
  const n = ys.length;
  const mx = (n - 1) / 2;
  const my = ys.reduce((s, y) => s + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  ys.forEach((y, x) => {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
  });
  const slope = sxx === 0 ? 0 : sxy / sxx;
  const intercept = my - slope * mx;
  const sse = ys.reduce((s, y, x) => s + (y - (intercept + slope * x)) ** 2, 0);
  return { intercept, slope, residual_sd: n > 2 ? Math.sqrt(sse / (n - 2)) : 0 };
}

const round1 = (v: number) => Math.round(v * 10) / 10;

export const predictWeeklyVisits = defineBusinessVerb<{ history_weeks?: number; weeks_ahead?: number }>({
  name: 'predict.weekly_visits',
  description:
    "Forecast completed visits per week from the company's own history: a trend line over the last weeks, projected ahead with a ±1 sd band and the sample size.",
  shape: 'aggregate',
  category: 'predict',
  input: objectSchema({
    history_weeks: {
      type: 'integer',
      minimum: 4,
      maximum: 52,
      default: 12,
      description: 'Weeks to learn from.',
    },
    weeks_ahead: { type: 'integer', minimum: 1, maximum: 12, default: 4, description: 'Weeks to forecast.' },
  }),
  idempotent: true,
  async handler(ctx, args) {
    const history = args.history_weeks ?? 12;
    const ahead = args.weeks_ahead ?? 4;
    const end = ctx.now.getTime();
    const start = end - history * WEEK_MS;
    const rows = await ctx.db.all<{ starts_at: string }>(
      `SELECT starts_at FROM appointments WHERE company_id = ? AND status = 'completed' AND starts_at >= ? AND starts_at < ?`,
      [ctx.principal.company_id, new Date(start).toISOString(), new Date(end).toISOString()],
    );
    const counts = new Array<number>(history).fill(0);
    for (const r of rows) counts[Math.floor((Date.parse(String(r.starts_at)) - start) / WEEK_MS)]! += 1;
    const fit = fitLine(counts);
    const forecast = Array.from({ length: ahead }, (_, i) => {
      const x = history + i;
      const expected = Math.max(0, fit.intercept + fit.slope * x);
      return {
        week_starting: new Date(end + i * WEEK_MS).toISOString(),
        expected: round1(expected),
        low: round1(Math.max(0, expected - fit.residual_sd)),
        high: round1(expected + fit.residual_sd),
      };
    });
    return {
      entity_id: 'weekly_visits',
      entity_type: 'forecast',
      data: {
        history: counts.map((visits, i) => ({
          week_starting: new Date(start + i * WEEK_MS).toISOString(),
          visits,
        })),
        forecast,
        trend_per_week: round1(fit.slope),
        sample_size: rows.length,
        method: 'least-squares line over weekly completed visits; band = ±1 residual standard deviation',
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export const predictVerbs = [predictWeeklyVisits];
