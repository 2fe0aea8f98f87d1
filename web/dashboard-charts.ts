/**
 * Activity over time on the Activity view: actions, refusals and requests that waited for consent
 * per hour over the last 24 hours, drawn with uPlot (bundled; no CDN). The figures come from the
 * business rows of audit.trail (`scope: 'business'`, up to 1,000 rows); the chart has a text
 * summary for screen readers and resizes with its container.
 */
import uPlot from 'uplot';
import { byId, el } from './element.ts';
import type { DashboardContext } from './dashboard-context.ts';
import type { TrailEntry } from './dashboard-trail.ts';

const HOUR_MS = 3600_000;
const MAX_PAGES = 5;

let plot: uPlot | undefined;
let observer: ResizeObserver | undefined;

/** Hourly counts [hours (unix s), actions, refusals, waited] of `entries` over the 24 h ending `now`. */
export function hourly(entries: TrailEntry[], now: number): [number[], number[], number[], number[]] {
  const first = Math.floor(now / HOUR_MS) * HOUR_MS - 23 * HOUR_MS;
  const hours = Array.from({ length: 24 }, (_, i) => (first + i * HOUR_MS) / 1000);
  const actions = new Array<number>(24).fill(0);
  const refusals = new Array<number>(24).fill(0);
  const waited = new Array<number>(24).fill(0);
  for (const e of entries) {
    const i = Math.floor((Date.parse(e.timestamp) - first) / HOUR_MS);
    if (i < 0 || i >= 24) continue;
    if (e.status === 'denied') refusals[i]!++;
    else if (e.status === 'pending') waited[i]!++;
    else actions[i]!++;
  }
  return [hours, actions, refusals, waited];
}

/** (Re)draw the activity chart. */
export async function loadCharts(ctx: DashboardContext): Promise<void> {
  const box = byId('charts');
  if (!ctx.canUse('audit.trail')) {
    box.replaceChildren();
    return;
  }
  const now = Date.now();
  const entries: TrailEntry[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const args: Record<string, unknown> = {
      scope: 'business',
      from: new Date(now - 24 * HOUR_MS).toISOString(),
      limit: 200,
    };
    if (cursor !== null) args.cursor = cursor;
    const { envelope } = await ctx.call('audit.trail', args);
    if (!envelope.ok) break;
    const r = envelope.result as { entries: TrailEntry[]; next_cursor: string | null };
    entries.push(...r.entries);
    cursor = r.next_cursor;
    if (cursor === null) break;
  }
  const data = hourly(entries, now);
  const sum = (a: number[]): number => a.reduce((x, y) => x + y, 0);
  const summary = `Last 24 hours: ${sum(data[1])} actions done, ${sum(data[2])} refused, ${sum(data[3])} waited for consent.`;
  const target = el('div', { class: 'chart', role: 'img', 'aria-label': summary });
  box.replaceChildren(el('figure', {}, target, el('figcaption', { id: 'chart-summary' }, summary)));
  plot?.destroy();
  observer?.disconnect();
  const width = Math.max(280, box.clientWidth);
  plot = new uPlot(
    {
      width,
      height: 180,
      legend: { show: true },
      cursor: { show: true },
      scales: { x: { time: true } },
      axes: [{ stroke: '#1b1f24' }, { stroke: '#1b1f24', size: 40 }],
      series: [
        {},
        { label: 'Actions', stroke: '#0a58ca', width: 2, fill: 'rgba(10,88,202,0.08)' },
        { label: 'Refused', stroke: '#cf222e', width: 2 },
        { label: 'Waited for consent', stroke: '#9a6700', width: 2, dash: [6, 4] },
      ],
    },
    data,
    target,
  );
  observer = new ResizeObserver(() => plot?.setSize({ width: Math.max(280, box.clientWidth), height: 180 }));
  observer.observe(box);
}
