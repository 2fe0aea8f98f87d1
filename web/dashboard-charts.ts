/**
 * Charts, drawn with uPlot (bundled; no CDN), each with a text alternative for screen readers:
 *
 * - Activity over time (Activity view, #charts): actions, refusals and requests that waited for
 *   consent per hour over the last 24 hours, from the business rows of audit.trail
 *   (`scope: 'business'`, up to 1,000 rows); a summary sentence.
 * - Money today (Activity view, #money-chart): charged, refunded and net over the business day in
 *   the tenant's time zone (audit.money_moved; the zone named in the heading), charged and
 *   refunded per hour, a summary sentence and a table per kind of action.
 * - Latency per verb (Agents & verbs, #latency-chart): p50 and p95 in ms of the most-called verbs
 *   (verbs.reputation, 24 h); the scoreboard table below it has the same figures for every verb.
 *
 * Each chart resizes with its container.
 */
import uPlot from 'uplot';
import { byId, el } from './element.ts';
import type { DashboardContext } from './dashboard-context.ts';
import type { TrailEntry } from './dashboard-trail.ts';
import type { Score } from './dashboard-reputation.ts';
import { money, setBusinessTimeZone, shownTimeZone } from './dashboard-words.ts';
import { describeError } from './dashboard-context.ts';

const HOUR_MS = 3600_000;
const MAX_PAGES = 5;
const HEIGHT = 180;
/** The page's text colour (light or dark scheme), for the axes drawn on canvas. */
function ink(): string {
  return getComputedStyle(document.documentElement).getPropertyValue('--fg').trim() || '#1b1f24';
}

interface Drawn {
  plot: uPlot;
  observer: ResizeObserver;
}
const drawn = new Map<string, Drawn>();

/** Draw (or redraw) the chart `key` into a new element in `box`; it follows `box`'s width. */
function draw(
  key: string,
  box: HTMLElement,
  target: HTMLElement,
  opts: Omit<uPlot.Options, 'width' | 'height'>,
  data: uPlot.AlignedData,
): void {
  const old = drawn.get(key);
  old?.plot.destroy();
  old?.observer.disconnect();
  const width = (): number => Math.max(260, box.clientWidth);
  const plot = new uPlot({ ...opts, width: width(), height: HEIGHT }, data, target);
  const observer = new ResizeObserver(() => plot.setSize({ width: width(), height: HEIGHT }));
  observer.observe(box);
  drawn.set(key, { plot, observer });
}

/** The 24 hour starts (unix s) of the day ending at `now`'s hour. */
function hoursEnding(now: number): { first: number; hours: number[] } {
  const first = Math.floor(now / HOUR_MS) * HOUR_MS - 23 * HOUR_MS;
  return { first, hours: Array.from({ length: 24 }, (_, i) => (first + i * HOUR_MS) / 1000) };
}

/** Hourly counts [hours (unix s), actions, refusals, waited] of `entries` over the 24 h ending `now`. */
export function hourly(entries: TrailEntry[], now: number): [number[], number[], number[], number[]] {
  const { first, hours } = hoursEnding(now);
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

/** One financial action of audit.money_moved. */
export interface MoneyAction {
  timestamp: string;
  verb: string;
  cents: number | null;
  /** in: charged, out: refunded, other. */
  flow?: 'in' | 'out' | 'other';
}

/** (Re)draw the Activity view's charts. */
export async function loadCharts(ctx: DashboardContext): Promise<void> {
  await Promise.all([activityChart(ctx), moneyChart(ctx)]);
  byId('activity-zone').textContent = `Times are in ${shownTimeZone()}, the business's time zone.`;
}

async function activityChart(ctx: DashboardContext): Promise<void> {
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
  box.replaceChildren(
    el(
      'figure',
      {},
      el('h2', {}, 'Actions per hour'),
      target,
      el('figcaption', { id: 'chart-summary' }, summary),
    ),
  );
  draw(
    'activity',
    box,
    target,
    {
      legend: { show: true },
      cursor: { show: true },
      scales: { x: { time: true } },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), shownTimeZone()),
      axes: [{ stroke: ink() }, { stroke: ink(), size: 40 }],
      series: [
        {},
        { label: 'Actions', stroke: '#0a58ca', width: 2, fill: 'rgba(10,88,202,0.08)' },
        { label: 'Refused', stroke: '#cf222e', width: 2 },
        { label: 'Waited for consent', stroke: '#9a6700', width: 2, dash: [6, 4] },
      ],
    },
    data,
  );
}

/** audit.money_moved's answer, as the dashboard reads it. */
interface MoneyDay {
  currency: string;
  time_zone: string;
  business_day?: { day: string; start: string; end: string };
  actions: MoneyAction[];
  totals: Array<{ verb: string; flow: 'in' | 'out' | 'other'; count: number; cents: number }>;
  charged_cents: number;
  refunded_cents: number;
  other_cents: number;
  net_cents: number;
  truncated: boolean;
}

/** Hourly sums [hours (unix s), charged, refunded] of `actions` over the day from `startMs` to `endMs`. */
export function hourlyMoneyOfDay(
  actions: MoneyAction[],
  startMs: number,
  endMs: number,
): [number[], number[], number[]] {
  const n = Math.max(1, Math.round((endMs - startMs) / HOUR_MS));
  const hours = Array.from({ length: n }, (_, i) => (startMs + i * HOUR_MS) / 1000);
  const charged = new Array<number>(n).fill(0);
  const refunded = new Array<number>(n).fill(0);
  for (const a of actions) {
    const i = Math.floor((Date.parse(a.timestamp) - startMs) / HOUR_MS);
    if (i < 0 || i >= n) continue;
    if (a.flow === 'out') refunded[i]! += a.cents ?? 0;
    else charged[i]! += a.cents ?? 0;
  }
  return [hours, charged, refunded];
}

const FLOW_WORDS: Readonly<Record<string, string>> = { in: 'charged', out: 'refunded', other: 'moved' };

async function moneyChart(ctx: DashboardContext): Promise<void> {
  const box = byId('money-chart');
  if (!ctx.canUse('audit.money_moved')) {
    box.replaceChildren();
    return;
  }
  box.setAttribute('aria-busy', 'true');
  box.replaceChildren(el('p', { class: 'muted loading' }, 'Loading the money moved today…'));
  const { envelope } = await ctx.call('audit.money_moved', {});
  box.removeAttribute('aria-busy');
  if (!envelope.ok) {
    box.replaceChildren(
      el(
        'p',
        { class: 'error', role: 'alert' },
        `Could not load the money moved: ${describeError(envelope)}`,
      ),
    );
    return;
  }
  const d = (envelope.result as { data: MoneyDay }).data;
  setBusinessTimeZone(d.time_zone);
  const fmt = (cents: number): string => money(cents, d.currency);
  const day = d.business_day;
  const dayWords = day === undefined ? 'Today' : `Today, ${dayLabel(day.start, d.time_zone)}`;
  const summary =
    d.actions.length === 0
      ? `${dayWords} (${d.time_zone}): no money moved yet. Charges and refunds appear here once approved.`
      : `${dayWords} (${d.time_zone}): ${fmt(d.charged_cents)} charged, ${fmt(d.refunded_cents)} refunded, net ${fmt(d.net_cents)}${d.other_cents !== 0 ? `; ${fmt(d.other_cents)} in other money actions` : ''}${d.truncated ? ' (the first 1,000 actions counted)' : ''}.`;
  const target = el('div', { class: 'chart', role: 'img', 'aria-label': summary });
  const sums = el(
    'dl',
    { id: 'money-sums', class: 'sums' },
    el('div', {}, el('dt', {}, 'Charged'), el('dd', { 'data-sum': 'charged' }, fmt(d.charged_cents))),
    el('div', {}, el('dt', {}, 'Refunded'), el('dd', { 'data-sum': 'refunded' }, fmt(d.refunded_cents))),
    el('div', {}, el('dt', {}, 'Net'), el('dd', { 'data-sum': 'net' }, fmt(d.net_cents))),
  );
  const table =
    d.totals.length === 0
      ? null
      : el(
          'div',
          { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Money today by action' },
          el(
            'table',
            { id: 'money-table' },
            el('caption', {}, `Money per kind of action, today (${d.time_zone})`),
            el(
              'thead',
              {},
              el(
                'tr',
                {},
                ...['Action', 'Direction', 'Count', 'Amount'].map((h) => el('th', { scope: 'col' }, h)),
              ),
            ),
            el(
              'tbody',
              {},
              ...d.totals.map((t) =>
                el(
                  'tr',
                  { 'data-verb': t.verb, 'data-flow': t.flow },
                  el(
                    'th',
                    { scope: 'row' },
                    t.verb === 'audit.revert' ? 'Undone actions' : ctx.title(t.verb),
                  ),
                  el('td', {}, FLOW_WORDS[t.flow] ?? t.flow),
                  el('td', {}, String(t.count)),
                  el('td', {}, fmt(t.cents)),
                ),
              ),
            ),
          ),
        );
  box.replaceChildren(
    el(
      'figure',
      {},
      el('h2', {}, `Money today (${d.time_zone})`),
      sums,
      target,
      el('figcaption', { id: 'money-summary' }, summary),
    ),
    ...(table === null ? [] : [table]),
  );
  const now = Date.now();
  const startMs = day !== undefined ? Date.parse(day.start) : now - 24 * HOUR_MS;
  const endMs = day !== undefined ? Date.parse(day.end) : now;
  draw(
    'money',
    box,
    target,
    {
      legend: { show: true },
      cursor: { show: true },
      // Half an hour of room each side, so the first and last hours' bars are drawn whole.
      scales: { x: { time: true, range: (_u, min, max) => [min - 1800, max + 1800] } },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), d.time_zone),
      axes: [
        { stroke: ink() },
        { stroke: ink(), size: 70, values: (_u, splits) => splits.map((v) => fmt(v)) },
      ],
      series: [
        {},
        {
          label: 'Charged',
          stroke: '#1a7f37',
          width: 2,
          fill: 'rgba(26,127,55,0.25)',
          paths: uPlot.paths.bars!({ size: [0.4, 30], align: -1 }),
          value: (_u, v) => (v === null ? '—' : fmt(v)),
        },
        {
          label: 'Refunded',
          stroke: '#cf222e',
          width: 2,
          fill: 'rgba(207,34,46,0.25)',
          paths: uPlot.paths.bars!({ size: [0.4, 30], align: 1 }),
          value: (_u, v) => (v === null ? '—' : fmt(v)),
        },
      ],
    },
    hourlyMoneyOfDay(d.actions, startMs, endMs),
  );
}

/** "Mon 7 Dec" of the day starting at `startIso`, in `zone`. */
function dayLabel(startIso: string, zone: string): string {
  try {
    return new Date(startIso).toLocaleDateString(undefined, {
      weekday: 'short',
      day: 'numeric',
      month: 'short',
      timeZone: zone,
    });
  } catch {
    return startIso.slice(0, 10);
  }
}

/** Draw p50/p95 latency of the most-called verbs (at most 8) on the Agents & verbs view. */
export function latencyChart(ctx: DashboardContext, scores: Score[]): void {
  const box = byId('latency-chart');
  const top = scores.filter((s) => s.p50_ms !== null && s.p50_ms !== undefined).slice(0, 8);
  if (top.length === 0) {
    box.replaceChildren();
    return;
  }
  const slowest = [...top].sort((a, b) => (b.p95_ms ?? 0) - (a.p95_ms ?? 0))[0]!;
  const summary = `Response time of the ${top.length} most-called verb${top.length === 1 ? '' : 's'}, last 24 hours. Slowest at p95: ${ctx.title(slowest.verb)}, ${Math.round(slowest.p95_ms ?? 0)} ms. The table below lists every verb's p50 and p95.`;
  const target = el('div', { class: 'chart', role: 'img', 'aria-label': summary });
  box.replaceChildren(
    el(
      'figure',
      {},
      el('h2', {}, 'Response time per verb'),
      target,
      el('figcaption', { id: 'latency-summary' }, summary),
    ),
  );
  const names = top.map((s) => s.verb.split('.').pop() ?? s.verb);
  const bars = (offset: number): uPlot.Series.PathBuilder =>
    uPlot.paths.bars!({ size: [0.35, 30], align: offset as 1 | -1 });
  draw(
    'latency',
    box,
    target,
    {
      legend: { show: true },
      cursor: { show: true },
      scales: { x: { time: false, range: [-0.6, top.length - 0.4] } },
      axes: [
        {
          stroke: ink(),
          splits: () => top.map((_, i) => i),
          values: (_u, splits) => splits.map((i) => names[i] ?? ''),
          rotate: top.length > 3 ? -35 : 0,
          size: top.length > 3 ? 70 : 40,
        },
        { stroke: ink(), size: 50, values: (_u, splits) => splits.map((v) => `${v} ms`) },
      ],
      series: [
        { label: 'Verb', value: (_u, i) => (i === null ? '' : (top[i]?.verb ?? '')) },
        { label: 'p50 ms', stroke: '#0a58ca', fill: 'rgba(10,88,202,0.5)', paths: bars(-1) },
        { label: 'p95 ms', stroke: '#9a6700', fill: 'rgba(154,103,0,0.5)', paths: bars(1) },
      ],
    },
    [top.map((_, i) => i), top.map((s) => s.p50_ms ?? null), top.map((s) => s.p95_ms ?? null)],
  );
}
