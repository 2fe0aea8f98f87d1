/**
 * audit.money_moved (shape aggregate): the money the tenant's financial verbs moved, per business
 * day in the tenant's time zone, from the audit log — every completed WRITE_FINANCIAL action with
 * its amount and direction, what was charged, what was refunded and the net, per day and in all.
 *
 * - The range: `day` (a business day, YYYY-MM-DD in the tenant's time zone), or `from`/`to`
 *   (instants); neither → today's business day. The answer names the time zone (`time_zone`).
 * - The amount of an action is its `amount_cents` argument, or else its one argument named
 *   `cents` or `*_cents` (amountOf); a revert of a financial action moves its original's amount
 *   back (a reverted charge counts as refunded).
 * - The direction is the verb's `money_flow`: `in` (a charge) is charged, `out` (a refund) is
 *   refunded; a financial verb that declares none counts as `other` (moved, not in the net).
 *   `net_cents` = charged − refunded; `total_cents` = everything moved (charged + refunded + other).
 * - Amounts are integer cents of the business currency (USD, as the typed phrases show them).
 * - `key_id`: only the actions made with that credential (one agent's money; the per-agent view).
 *
 * Cost: one index range scan (company_id, created_at) that stops after `limit` rows, plus one
 * lookup per revert row; `truncated` says more actions are in the range. Reasons: invalid_input
 * (from after to, a malformed day, day together with from/to).
 * Spec: spec/shapes.md §aggregate, spec/audit.md §dashboard-reads, spec/consent.md §caps (the day).
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import { VerbError } from '../runtime/errors.ts';
import { parseJson } from '../store/store.ts';
import { businessDay, businessDayOf, type BusinessDay } from '../runtime/consent/business-day.ts';

/** The currency of every amount (the runtime's phrases format cents as US dollars). */
export const BUSINESS_CURRENCY = 'USD';

/** The amount of one financial action's arguments in cents, or null when it names none. */
export function amountOf(args: Record<string, unknown>): number | null {
  const a = args.amount_cents;
  if (typeof a === 'number' && Number.isSafeInteger(a)) return a;
  const cents = Object.entries(args).filter(([k, v]) => /(^|_)cents$/.test(k) && typeof v === 'number');
  if (cents.length !== 1 || !Number.isSafeInteger(cents[0]![1])) return null;
  return cents[0]![1] as number;
}

/** Which way an action moved money: charged (`in`), refunded (`out`), or `other`. */
export type MoneyFlow = 'in' | 'out' | 'other';

/** One business day's sums, in cents. */
export interface DayMoney {
  day: string;
  charged_cents: number;
  refunded_cents: number;
  other_cents: number;
  net_cents: number;
  count: number;
}

interface Args {
  day?: string;
  from?: string;
  to?: string;
  key_id?: string;
  limit?: number;
}

export const auditMoneyMoved = defineSystemVerb<Args>({
  name: 'audit.money_moved',
  title: 'Money moved',
  description:
    "The money this tenant's financial verbs (charges, refunds, payouts: consent class WRITE_FINANCIAL) moved per business day in the tenant's time zone (data.time_zone): what was charged, what was refunded and the net, per day (data.days) and in all, with each completed action (time, verb, amount in cents, direction). Give `day` (YYYY-MM-DD, a business day) or `from`/`to`; neither: today. Amounts in the business currency (data.currency).",
  shape: 'aggregate',
  category: 'audit',
  input: {
    type: 'object',
    properties: {
      day: {
        type: 'string',
        pattern: '^\\d{4}-\\d{2}-\\d{2}$',
        description: "A business day (YYYY-MM-DD) in the tenant's time zone; not with from/to.",
      },
      from: {
        type: 'string',
        format: 'date-time',
        description: 'Start (inclusive); default: the start of the business day holding `to`.',
      },
      to: { type: 'string', format: 'date-time', description: 'End (exclusive); default now.' },
      key_id: {
        type: 'string',
        maxLength: 100,
        description:
          "Only money moved with this credential (an API key's key_id, or grant:<id>): one agent's money, as audit.trail's key_id shows its actions.",
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 5000,
        default: 1000,
        description: 'Most actions listed.',
      },
    },
    additionalProperties: false,
  },
  idempotent: true,
  // A chart feed for the owner's dashboard, not an agent tool: agents read the trail (MCP tool budget).
  surfaces: ['http', 'webmcp', 'cli'],
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const companyId = ctx.principal.company_id;
    const zone = (await ctx.runtime.tenants.get(companyId))?.settings.time_zone;
    let asked: BusinessDay | undefined;
    let from: Date;
    let to: Date;
    if (args.day !== undefined) {
      if (args.from !== undefined || args.to !== undefined)
        throw new VerbError('invalid_input', 'Give either day or from/to, not both.', {
          hint: 'day names one business day (YYYY-MM-DD); from/to name any range of instants.',
          path: '/day',
        });
      asked = businessDayOf(args.day, zone);
      if (asked === undefined)
        throw new VerbError('invalid_input', `${args.day} is not a calendar date.`, {
          hint: 'Give the business day as YYYY-MM-DD, e.g. 2026-12-07.',
          path: '/day',
        });
      from = new Date(asked.start);
      to = new Date(asked.end);
    } else {
      to = args.to !== undefined ? new Date(args.to) : ctx.now;
      if (args.from !== undefined) from = new Date(args.from);
      else {
        asked = businessDay(args.to !== undefined ? new Date(to.getTime() - 1) : ctx.now, zone);
        from = new Date(asked.start);
        if (args.to === undefined) to = new Date(asked.end);
      }
    }
    if (from.getTime() > to.getTime())
      throw new VerbError('invalid_input', 'from must not be after to.', {
        hint: 'Give from earlier than to (ISO 8601), or leave both out for today.',
        path: '/from',
      });
    const limit = args.limit ?? 1000;
    const rows = await ctx.db.all<{
      audit_id: unknown;
      created_at: string;
      action_type: string;
      request_data: unknown;
      parent_id: unknown;
    }>(
      `SELECT audit_id, created_at, action_type, request_data, parent_id FROM audit_log
       WHERE company_id = ? AND created_at >= ? AND created_at < ? AND consent_class = 'WRITE_FINANCIAL' AND status = 'completed'${args.key_id !== undefined ? ' AND key_id = ?' : ''}
       ORDER BY created_at, audit_id LIMIT ?`,
      [
        companyId,
        from.toISOString(),
        to.toISOString(),
        ...(args.key_id !== undefined ? [args.key_id] : []),
        limit + 1,
      ],
    );
    const page = rows.slice(0, limit);
    const flowOf = (verb: string): MoneyFlow =>
      ctx.runtime.registry.get(verb)?.definition.money_flow ?? 'other';
    const actions: Array<{
      audit_id: number;
      timestamp: string;
      day: string;
      verb: string;
      cents: number | null;
      flow: MoneyFlow;
      reverts?: number;
    }> = [];
    for (const r of page) {
      let verb = r.action_type;
      let cents = amountOf(parseJson<Record<string, unknown>>(r.request_data) ?? {});
      let flow = flowOf(verb);
      let reverts: number | undefined;
      if (r.action_type === 'audit.revert' && r.parent_id !== null && r.parent_id !== undefined) {
        // An undo moves its original's money back: a reverted charge is money refunded.
        const original = await ctx.db.get<{ action_type: string; request_data: unknown }>(
          'SELECT action_type, request_data FROM audit_log WHERE company_id = ? AND audit_id = ?',
          [companyId, Number(r.parent_id)],
        );
        if (original !== undefined) {
          const back = flowOf(original.action_type);
          cents = amountOf(parseJson<Record<string, unknown>>(original.request_data) ?? {});
          flow = back === 'in' ? 'out' : back === 'out' ? 'in' : 'other';
          reverts = Number(r.parent_id);
          verb = r.action_type;
        }
      }
      actions.push({
        audit_id: Number(r.audit_id),
        timestamp: r.created_at,
        day: businessDay(new Date(r.created_at), zone).day,
        verb,
        cents,
        flow,
        ...(reverts !== undefined ? { reverts } : {}),
      });
    }
    const byVerb = new Map<string, { verb: string; flow: MoneyFlow; count: number; cents: number }>();
    const byDay = new Map<string, DayMoney>();
    const sum = { charged_cents: 0, refunded_cents: 0, other_cents: 0 };
    const add = (
      m: { charged_cents: number; refunded_cents: number; other_cents: number },
      a: (typeof actions)[0],
    ) => {
      const c = a.cents ?? 0;
      if (a.flow === 'in') m.charged_cents += c;
      else if (a.flow === 'out') m.refunded_cents += c;
      else m.other_cents += c;
    };
    for (const a of actions) {
      const key = `${a.verb}\u0000${a.flow}`;
      const t = byVerb.get(key) ?? { verb: a.verb, flow: a.flow, count: 0, cents: 0 };
      t.count++;
      t.cents += a.cents ?? 0;
      byVerb.set(key, t);
      const d = byDay.get(a.day) ?? {
        day: a.day,
        charged_cents: 0,
        refunded_cents: 0,
        other_cents: 0,
        net_cents: 0,
        count: 0,
      };
      add(d, a);
      d.count++;
      d.net_cents = d.charged_cents - d.refunded_cents;
      byDay.set(a.day, d);
      add(sum, a);
    }
    return {
      entity_type: 'tenant',
      entity_id: companyId,
      data: {
        currency: BUSINESS_CURRENCY,
        time_zone: asked?.time_zone ?? businessDay(ctx.now, zone).time_zone,
        ...(asked !== undefined ? { business_day: asked } : {}),
        from: from.toISOString(),
        to: to.toISOString(),
        actions,
        days: [...byDay.values()].sort((a, b) => a.day.localeCompare(b.day)),
        totals: [...byVerb.values()].sort((a, b) => b.cents - a.cents || a.verb.localeCompare(b.verb)),
        charged_cents: sum.charged_cents,
        refunded_cents: sum.refunded_cents,
        other_cents: sum.other_cents,
        net_cents: sum.charged_cents - sum.refunded_cents,
        total_cents: sum.charged_cents + sum.refunded_cents + sum.other_cents,
        truncated: rows.length > limit,
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});
