/**
 * View "Agents & verbs": the reliability scoreboard (verbs.reputation, 24 h). Success rate counts
 * only the verb's own failures (spec/shapes.md §reputation); refusals and caller mistakes have
 * their own columns. The dashboard's own reads (system verbs) are left out unless nothing else ran.
 */
import { byId, el } from './element.ts';
import { describeError, type DashboardContext } from './dashboard-context.ts';
import { latencyChart } from './dashboard-charts.ts';

/** One score of the reputation shape (spec/shapes.md §reputation). */
export interface Score {
  verb: string;
  invocations: number;
  successes?: number;
  failures?: number;
  denials?: number;
  caller_errors?: number;
  success_rate: number | null;
  p50_ms?: number | null;
  p95_ms?: number | null;
  star_rating?: number | null;
}

function num(v: number | null | undefined): string {
  return v === null || v === undefined ? '—' : String(Math.round(v * 10) / 10);
}

function rate(v: number | null): string {
  return v === null ? 'not run yet' : `${Math.round(v * 1000) / 10} %`;
}

/** (Re)load the scoreboard. */
export async function loadReputation(ctx: DashboardContext): Promise<void> {
  const status = byId('reputation-status');
  const table = byId<HTMLTableElement>('reputation-table');
  if (!ctx.canUse('verbs.reputation')) {
    table.hidden = true;
    status.textContent = 'Reliability figures are not available to your role on this server.';
    return;
  }
  const { envelope } = await ctx.call('verbs.reputation', { window: '24h' });
  if (!envelope.ok) {
    status.textContent = `Could not load reliability figures: ${describeError(envelope)}`;
    return;
  }
  const system = new Set(ctx.catalog.filter((v) => isSystem(v.name)).map((v) => v.name));
  const all = (envelope.result as { scores?: Score[] }).scores ?? [];
  const business = all.filter((s) => !system.has(s.verb));
  const scores = (business.length > 0 ? business : all).sort(
    (a, b) => b.invocations - a.invocations || a.verb.localeCompare(b.verb),
  );
  if (scores.length === 0) {
    table.hidden = true;
    status.textContent = 'No verb has been called in the last 24 hours. Figures appear after the first call.';
    return;
  }
  table.tBodies[0]!.replaceChildren(
    ...scores.map((s) =>
      el(
        'tr',
        { 'data-verb': s.verb },
        el('th', { scope: 'row' }, ctx.title(s.verb), el('br'), el('code', {}, s.verb)),
        el('td', {}, String(s.invocations)),
        el(
          'td',
          {
            class:
              s.success_rate === null
                ? ''
                : s.success_rate >= 0.95
                  ? 'good'
                  : s.success_rate >= 0.8
                    ? 'fair'
                    : 'poor',
          },
          rate(s.success_rate),
        ),
        el('td', {}, String(s.failures ?? 0)),
        el('td', {}, String(s.denials ?? 0)),
        el('td', {}, String(s.caller_errors ?? 0)),
        el('td', {}, num(s.p50_ms)),
        el('td', {}, num(s.p95_ms)),
      ),
    ),
  );
  table.hidden = false;
  latencyChart(ctx, scores);
  status.textContent = `${scores.length} verb${scores.length === 1 ? '' : 's'} called in the last 24 hours${
    business.length > 0 && business.length < all.length ? ' (system verbs left out)' : ''
  }.`;
}

/** System verbs (src/verbs): the runtime's own, not the business's. */
export function isSystem(verb: string): boolean {
  return /^(audit|approvals|verbs|tenant|events|macros|transaction|system|agent)\./.test(verb);
}
