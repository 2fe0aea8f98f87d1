/**
 * Analytics verbs (category `analytics`, tier_floor professional): revenue by month, the sales
 * pipeline, technician utilisation and receivables aging — each one tenant-scoped read in the
 * aggregate shape, computed from the business tables at call time. Money in integer cents;
 * months are business-local (UTC−6).
 *
 * Reasons: invalid_input (a range that ends before it starts or spans more than 3 years),
 * tier_denied (starter tenants). Spec: spec/shapes.md §aggregate, spec/manifest.md §record (tier_floor).
 */
import { formatCents } from '../../runtime/consent/typed-phrase.ts';
import { invalidInput } from '../data/domain-error.ts';
import { DAY_MS, normalizeTime } from '../data/iso-time.ts';
import { num } from '../data/row-values.ts';
import { listAllStageHistories } from '../data/deals.ts';
import { listEmployees } from '../data/team.ts';
import { DEAL_STAGES, OPEN_DEAL_STAGES, type DealStage } from '../schema.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { businessTime } from './business-time.ts';
import { ratio } from './confidence-band.ts';
import { objectSchema, timeProp } from './input-schema.ts';

const MAX_RANGE_MS = 3 * 366 * DAY_MS;

/** The [from, to) range of a report in canonical UTC, defaulting to the `days` before now. */
function range(args: { from?: string; to?: string }, now: Date, days: number): { from: string; to: string } {
  const to = args.to !== undefined ? normalizeTime(args.to, 'to') : now.toISOString();
  const from =
    args.from !== undefined
      ? normalizeTime(args.from, 'from')
      : new Date(Date.parse(to) - days * DAY_MS).toISOString();
  if (Date.parse(to) <= Date.parse(from)) throw invalidInput('to', 'must be after from');
  if (Date.parse(to) - Date.parse(from) > MAX_RANGE_MS)
    throw invalidInput('from', 'a report covers at most 3 years');
  return { from, to };
}

const rangeInput = (days: number) =>
  objectSchema({
    from: timeProp(`Start of the period (default: ${days} days before "to").`),
    to: timeProp('End of the period (default: now).'),
  });

const month = (iso: string): string => businessTime(iso).slice(0, 7);

export const analyticsRevenueSummary = defineBusinessVerb<{ from?: string; to?: string }>({
  name: 'analytics.revenue_summary',
  title: 'Revenue summary',
  description:
    'Money in over a period (default the last 365 days): captured, refunded, processing fees and net in integer cents, payment and refund counts, average ticket, failed payments, and the same figures per business-local month. Professional tier.',
  shape: 'aggregate',
  category: 'analytics',
  tier_floor: 'professional',
  input: rangeInput(365),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const r = range(args, ctx.now, 365);
    const pays = await ctx.db.all<{
      amount_cents: unknown;
      fee_cents: unknown;
      status: string;
      created_at: string;
    }>(
      'SELECT amount_cents, fee_cents, status, created_at FROM payments WHERE company_id = ? AND created_at >= ? AND created_at < ?',
      [c, r.from, r.to],
    );
    const refunds = await ctx.db.all<{
      amount_cents: unknown;
      fee_refunded_cents: unknown;
      created_at: string;
    }>(
      'SELECT amount_cents, fee_refunded_cents, created_at FROM refunds WHERE company_id = ? AND created_at >= ? AND created_at < ?',
      [c, r.from, r.to],
    );
    const months = new Map<
      string,
      {
        month: string;
        captured_cents: number;
        refunded_cents: number;
        fees_cents: number;
        net_cents: number;
        payments: number;
      }
    >();
    const bucket = (m: string) => {
      let b = months.get(m);
      if (b === undefined) {
        b = { month: m, captured_cents: 0, refunded_cents: 0, fees_cents: 0, net_cents: 0, payments: 0 };
        months.set(m, b);
      }
      return b;
    };
    let captured = 0;
    let fees = 0;
    let count = 0;
    let failed = 0;
    for (const p of pays) {
      if (p.status === 'failed') {
        failed++;
        continue;
      }
      const b = bucket(month(p.created_at));
      b.captured_cents += num(p.amount_cents);
      b.fees_cents += num(p.fee_cents);
      b.payments++;
      captured += num(p.amount_cents);
      fees += num(p.fee_cents);
      count++;
    }
    let refunded = 0;
    let feesBack = 0;
    for (const f of refunds) {
      const b = bucket(month(f.created_at));
      b.refunded_cents += num(f.amount_cents);
      b.fees_cents -= num(f.fee_refunded_cents);
      refunded += num(f.amount_cents);
      feesBack += num(f.fee_refunded_cents);
    }
    for (const b of months.values()) b.net_cents = b.captured_cents - b.refunded_cents - b.fees_cents;
    const net = captured - refunded - (fees - feesBack);
    return {
      entity_id: 'revenue',
      entity_type: 'report',
      data: {
        from: r.from,
        to: r.to,
        captured_cents: captured,
        refunded_cents: refunded,
        fees_cents: fees - feesBack,
        net_cents: net,
        payments: count,
        failed_payments: failed,
        refunds: refunds.length,
        average_ticket_cents: count === 0 ? 0 : Math.round(captured / count),
        by_month: [...months.values()].sort((a, b) => a.month.localeCompare(b.month)),
        summary: `${formatCents(captured)} captured in ${count} payments, ${formatCents(refunded)} refunded, ${formatCents(fees - feesBack)} in fees: ${formatCents(net)} net.`,
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export const analyticsPipelineReport = defineBusinessVerb<{ from?: string; to?: string }>({
  name: 'analytics.pipeline_report',
  title: 'Pipeline report',
  description:
    'The sales pipeline now and over a period (default the last 180 days): open deals and their value per stage, deals won and lost in the period with values, win rate, average days from creation to close, and the median days deals stay in each stage. Professional tier.',
  shape: 'aggregate',
  category: 'analytics',
  tier_floor: 'professional',
  input: rangeInput(180),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const r = range(args, ctx.now, 180);
    const deals = await ctx.db.all<{
      stage: string;
      amount_cents: unknown;
      created_at: string;
      closed_at: string | null;
    }>('SELECT stage, amount_cents, created_at, closed_at FROM deals WHERE company_id = ?', [c]);
    const byStage = Object.fromEntries(
      OPEN_DEAL_STAGES.map((s) => [s, { deals: 0, amount_cents: 0 }]),
    ) as Record<string, { deals: number; amount_cents: number }>;
    let won = 0;
    let lost = 0;
    let wonCents = 0;
    let lostCents = 0;
    let closeDays = 0;
    for (const d of deals) {
      if (byStage[d.stage] !== undefined) {
        byStage[d.stage]!.deals++;
        byStage[d.stage]!.amount_cents += num(d.amount_cents);
      } else if (d.closed_at !== null && d.closed_at >= r.from && d.closed_at < r.to) {
        if (d.stage === 'won') {
          won++;
          wonCents += num(d.amount_cents);
        } else {
          lost++;
          lostCents += num(d.amount_cents);
        }
        closeDays += (Date.parse(d.closed_at) - Date.parse(d.created_at)) / DAY_MS;
      }
    }
    const histories = await listAllStageHistories(ctx.db, c);
    const dwell = new Map<DealStage, number[]>();
    for (let i = 0; i < histories.length - 1; i++) {
      const h = histories[i]!;
      const next = histories[i + 1]!;
      if (h.deal_id !== next.deal_id) continue;
      const list = dwell.get(h.to_stage) ?? [];
      list.push((Date.parse(next.changed_at) - Date.parse(h.changed_at)) / DAY_MS);
      dwell.set(h.to_stage, list);
    }
    const median = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return s.length === 0
        ? null
        : Math.round(
            (s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) * 10,
          ) / 10;
    };
    const openValue = Object.values(byStage).reduce((s, x) => s + x.amount_cents, 0);
    return {
      entity_id: 'pipeline',
      entity_type: 'report',
      data: {
        from: r.from,
        to: r.to,
        open_by_stage: byStage,
        open_deals: Object.values(byStage).reduce((s, x) => s + x.deals, 0),
        open_value_cents: openValue,
        won: { deals: won, amount_cents: wonCents },
        lost: { deals: lost, amount_cents: lostCents },
        win_rate: ratio(won, won + lost),
        average_days_to_close: won + lost === 0 ? null : Math.round((closeDays / (won + lost)) * 10) / 10,
        median_days_in_stage: Object.fromEntries(
          DEAL_STAGES.filter((s) => dwell.has(s)).map((s) => [s, median(dwell.get(s)!)]),
        ),
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

/** Bookable hours per technician per day: four two-hour visit windows. */
export const BOOKABLE_HOURS_PER_DAY = 8;

export const analyticsTechnicianUtilization = defineBusinessVerb<{ from?: string; to?: string }>({
  name: 'analytics.technician_utilization',
  title: 'Technician utilisation',
  description: `How busy each active technician was over a period (default the last 30 days): booked hours of non-cancelled visits against ${BOOKABLE_HOURS_PER_DAY} bookable hours a day, visits completed, no-shows and cancellations, and the completion rate. Professional tier.`,
  shape: 'aggregate',
  category: 'analytics',
  tier_floor: 'professional',
  input: rangeInput(30),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const r = range(args, ctx.now, 30);
    const techs = await listEmployees(ctx.db, c, { title: 'technician', active: true });
    const rows = await ctx.db.all<{
      technician_user_id: unknown;
      status: string;
      starts_at: string;
      ends_at: string;
    }>(
      'SELECT technician_user_id, status, starts_at, ends_at FROM appointments WHERE company_id = ? AND starts_at >= ? AND starts_at < ?',
      [c, r.from, r.to],
    );
    const days = (Date.parse(r.to) - Date.parse(r.from)) / DAY_MS;
    const available = Math.round(days * BOOKABLE_HOURS_PER_DAY * 10) / 10;
    const items = techs.map((t) => {
      const mine = rows.filter((a) => num(a.technician_user_id) === t.user_id);
      const booked = mine
        .filter((a) => a.status !== 'cancelled')
        .reduce((s, a) => s + (Date.parse(a.ends_at) - Date.parse(a.starts_at)) / 3_600_000, 0);
      const completed = mine.filter((a) => a.status === 'completed').length;
      const noShows = mine.filter((a) => a.status === 'no_show').length;
      const cancelled = mine.filter((a) => a.status === 'cancelled').length;
      return {
        user_id: t.user_id,
        name: t.name,
        booked_hours: Math.round(booked * 10) / 10,
        available_hours: available,
        utilization: ratio(booked, available),
        visits: mine.length,
        completed,
        no_shows: noShows,
        cancelled,
        completion_rate: ratio(completed, completed + noShows + cancelled),
      };
    });
    const totalBooked = items.reduce((s, x) => s + x.booked_hours, 0);
    return {
      entity_id: 'technician_utilization',
      entity_type: 'report',
      data: {
        from: r.from,
        to: r.to,
        technicians: items,
        team_utilization: ratio(totalBooked, available * Math.max(1, items.length)),
      },
      relations: items.map((x) => ({
        type: 'technician',
        id: x.user_id,
        name: x.name,
        utilization: x.utilization,
      })),
      fetched_at: ctx.now.toISOString(),
    };
  },
});

const AGING_BUCKETS = [
  { key: 'current', max: 0 },
  { key: '1_30', max: 30 },
  { key: '31_60', max: 60 },
  { key: '61_90', max: 90 },
  { key: 'over_90', max: Number.POSITIVE_INFINITY },
] as const;

export const analyticsArAging = defineBusinessVerb<Record<string, never>>({
  name: 'analytics.ar_aging',
  title: 'Receivables aging',
  description:
    'What customers owe now, by how overdue it is (not yet due, 1-30, 31-60, 61-90, over 90 days past due): invoice counts and balances in cents per bucket, plus the ten largest debtors with ready-to-use follow-ups (invoices.send_reminder). Professional tier.',
  shape: 'aggregate',
  category: 'analytics',
  tier_floor: 'professional',
  input: objectSchema({}),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx) {
    const c = ctx.principal.company_id;
    const rows = await ctx.db.all<{
      id: unknown;
      number: unknown;
      contact_id: unknown;
      name: string;
      amount_cents: unknown;
      paid_cents: unknown;
      due_at: string | null;
    }>(
      `SELECT i.id, i.number, i.contact_id, ct.name, i.amount_cents, i.paid_cents, i.due_at FROM invoices i
         JOIN contacts ct ON ct.company_id = i.company_id AND ct.id = i.contact_id
        WHERE i.company_id = ? AND i.status IN ('open', 'partially_paid')`,
      [c],
    );
    const buckets = Object.fromEntries(
      AGING_BUCKETS.map((b) => [b.key, { invoices: 0, balance_cents: 0 }]),
    ) as Record<string, { invoices: number; balance_cents: number }>;
    const debtors = new Map<
      number,
      {
        contact_id: number;
        name: string;
        balance_cents: number;
        oldest_invoice_id: number;
        days_overdue: number;
      }
    >();
    for (const r of rows) {
      const balance = num(r.amount_cents) - num(r.paid_cents);
      const overdue = r.due_at === null ? 0 : Math.floor((ctx.now.getTime() - Date.parse(r.due_at)) / DAY_MS);
      const b = AGING_BUCKETS.find((x) => overdue <= x.max)!;
      buckets[b.key]!.invoices++;
      buckets[b.key]!.balance_cents += balance;
      const id = num(r.contact_id);
      const d = debtors.get(id) ?? {
        contact_id: id,
        name: r.name,
        balance_cents: 0,
        oldest_invoice_id: num(r.id),
        days_overdue: overdue,
      };
      d.balance_cents += balance;
      if (overdue >= d.days_overdue) {
        d.days_overdue = overdue;
        d.oldest_invoice_id = num(r.id);
      }
      debtors.set(id, d);
    }
    const top = [...debtors.values()].sort((a, b) => b.balance_cents - a.balance_cents).slice(0, 10);
    return {
      entity_id: 'ar_aging',
      entity_type: 'report',
      data: {
        as_of: ctx.now.toISOString(),
        outstanding_cents: rows.reduce((s, r) => s + num(r.amount_cents) - num(r.paid_cents), 0),
        open_invoices: rows.length,
        buckets,
        top_debtors: top.map((d) => ({
          ...d,
          follow_up:
            d.days_overdue > 0
              ? { verb: 'invoices.send_reminder', args: { invoice_id: d.oldest_invoice_id } }
              : null,
        })),
      },
      relations: top.map((d) => ({
        type: 'customer',
        id: d.contact_id,
        name: d.name,
        balance_cents: d.balance_cents,
      })),
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export const analyticsVerbs = [
  analyticsRevenueSummary,
  analyticsPipelineReport,
  analyticsTechnicianUtilization,
  analyticsArAging,
];
