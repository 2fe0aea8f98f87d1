/**
 * Dashboard panel: the reputation scoreboard (verbs.reputation → scores[]) as a table and an SVG
 * bar chart of success rates. Degrades to a message when the verb is not registered.
 */
import { byId, el } from './element.ts';
import { describeError, type DashboardContext } from './dashboard-context.ts';

/** One score of the reputation shape (spec/shapes.md §reputation). */
export interface Score {
  verb: string;
  invocations: number;
  success_rate: number;
  p50_ms?: number | null;
  p95_ms?: number | null;
  star_rating?: number | null;
}

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function chart(scores: Score[]): SVGElement {
  const labelWidth = 220;
  const barWidth = 320;
  const rowHeight = 24;
  const height = scores.length * rowHeight + 8;
  const root = svg('svg', {
    viewBox: `0 0 ${labelWidth + barWidth + 90} ${height}`,
    width: '100%',
    role: 'img',
    'aria-label': `Success rate of ${scores.length} verb${scores.length === 1 ? '' : 's'}`,
    class: 'chart',
  });
  scores.forEach((s, i) => {
    const y = i * rowHeight + 4;
    const rate = Math.max(0, Math.min(1, Number(s.success_rate) || 0));
    root.append(
      svg('text', { x: labelWidth - 8, y: y + 15, 'text-anchor': 'end', class: 'chart-label' }, s.verb),
    );
    root.append(
      svg('rect', { x: labelWidth, y, width: barWidth, height: rowHeight - 6, class: 'chart-track' }),
    );
    root.append(
      svg('rect', {
        x: labelWidth,
        y,
        width: Math.round(barWidth * rate),
        height: rowHeight - 6,
        class: rate >= 0.95 ? 'chart-bar good' : rate >= 0.8 ? 'chart-bar fair' : 'chart-bar poor',
      }),
    );
    root.append(
      svg(
        'text',
        { x: labelWidth + barWidth + 8, y: y + 15, class: 'chart-value' },
        `${Math.round(rate * 100)}% [${s.invocations}]`,
      ),
    );
  });
  return root;
}

function num(v: number | null | undefined): string {
  return v === null || v === undefined ? '' : String(Math.round(v * 10) / 10);
}

/** (Re)load the scoreboard. */
export async function loadReputation(ctx: DashboardContext): Promise<void> {
  const status = byId('reputation-status');
  const figure = byId('reputation-figure');
  const table = byId<HTMLTableElement>('reputation-table');
  if (!ctx.has('verbs.reputation')) {
    figure.hidden = true;
    table.hidden = true;
    status.textContent =
      'Reputation scores are not available on this server (verbs.reputation is not registered).';
    return;
  }
  const { envelope } = await ctx.call('verbs.reputation', {});
  if (!envelope.ok) {
    status.textContent = `Could not load reputation: ${describeError(envelope)}`;
    return;
  }
  const scores = [...((envelope.result as { scores?: Score[] }).scores ?? [])].sort(
    (a, b) => b.invocations - a.invocations || a.verb.localeCompare(b.verb),
  );
  if (scores.length === 0) {
    figure.hidden = true;
    table.hidden = true;
    status.textContent = 'No verb has been called yet in this window.';
    return;
  }
  byId('reputation-chart').replaceChildren(chart(scores.slice(0, 20)));
  table.tBodies[0]!.replaceChildren(
    ...scores.map((s) =>
      el(
        'tr',
        {},
        el('th', { scope: 'row' }, el('code', {}, s.verb)),
        el('td', {}, String(s.invocations)),
        el('td', {}, `${Math.round((Number(s.success_rate) || 0) * 1000) / 10}%`),
        el('td', {}, num(s.p50_ms)),
        el('td', {}, num(s.p95_ms)),
        el(
          'td',
          {},
          s.star_rating === null || s.star_rating === undefined ? '' : `${num(s.star_rating)} / 5`,
        ),
      ),
    ),
  );
  figure.hidden = false;
  table.hidden = false;
  status.textContent = `${scores.length} verb${scores.length === 1 ? '' : 's'} scored.`;
}
