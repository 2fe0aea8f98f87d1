/**
 * audit.money_moved (shape aggregate): the money the tenant's financial verbs moved over a time
 * range, from the audit log — every completed WRITE_FINANCIAL action with its amount, and the
 * totals per verb. The amount of an action is its `amount_cents` argument, or else its one
 * argument named `cents` or `*_cents`; an action with none (or several) counts with
 * `cents: null` (a revert of a charge, which names the action it undoes). Amounts are integer cents of the business
 * currency (USD: the currency the typed phrases and the dashboard show). Refunds count as money
 * moved too: the totals are per verb, so a charge and a refund are never netted.
 *
 * Cost: one index range scan (company_id, created_at) that stops after `limit` rows; `truncated`
 * says more actions are in the range. Reasons: invalid_input (from after to).
 * Spec: spec/shapes.md §aggregate, spec/audit.md §dashboard-reads.
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import { VerbError } from '../runtime/errors.ts';
import { parseJson } from '../store/store.ts';

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

export const auditMoneyMoved = defineSystemVerb<{ from?: string; to?: string; limit?: number }>({
  name: 'audit.money_moved',
  title: 'Money moved',
  description:
    "The money this tenant's financial verbs (charges, refunds, payouts: consent class WRITE_FINANCIAL) moved between from and to (default: the last 24 hours): each completed action with its time, verb and amount in cents, and the totals per verb, in the business currency (data.currency). Amounts come from the action's amount_cents argument.",
  shape: 'aggregate',
  category: 'audit',
  input: {
    type: 'object',
    properties: {
      from: {
        type: 'string',
        format: 'date-time',
        description: 'Start (inclusive); default 24 h before `to`.',
      },
      to: { type: 'string', format: 'date-time', description: 'End (exclusive); default now.' },
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
    const to = args.to !== undefined ? new Date(args.to) : ctx.now;
    const from = args.from !== undefined ? new Date(args.from) : new Date(to.getTime() - 24 * 3600_000);
    if (from.getTime() > to.getTime())
      throw new VerbError('invalid_input', 'from must not be after to.', {
        hint: 'Give from earlier than to (ISO 8601), or leave both out for the last 24 hours.',
        path: '/from',
      });
    const limit = args.limit ?? 1000;
    const rows = await ctx.db.all<{
      audit_id: unknown;
      created_at: string;
      action_type: string;
      request_data: unknown;
    }>(
      `SELECT audit_id, created_at, action_type, request_data FROM audit_log
       WHERE company_id = ? AND created_at >= ? AND created_at < ? AND consent_class = 'WRITE_FINANCIAL' AND status = 'completed'
       ORDER BY created_at, audit_id LIMIT ?`,
      [companyId, from.toISOString(), to.toISOString(), limit + 1],
    );
    const page = rows.slice(0, limit);
    const actions = page.map((r) => ({
      audit_id: Number(r.audit_id),
      timestamp: r.created_at,
      verb: r.action_type,
      cents: amountOf(parseJson<Record<string, unknown>>(r.request_data) ?? {}),
    }));
    const byVerb = new Map<string, { verb: string; count: number; cents: number }>();
    for (const a of actions) {
      const t = byVerb.get(a.verb) ?? { verb: a.verb, count: 0, cents: 0 };
      t.count++;
      t.cents += a.cents ?? 0;
      byVerb.set(a.verb, t);
    }
    return {
      entity_type: 'tenant',
      entity_id: companyId,
      data: {
        currency: BUSINESS_CURRENCY,
        from: from.toISOString(),
        to: to.toISOString(),
        actions,
        totals: [...byVerb.values()].sort((a, b) => b.cents - a.cents || a.verb.localeCompare(b.verb)),
        total_cents: actions.reduce((s, a) => s + (a.cents ?? 0), 0),
        truncated: rows.length > limit,
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});
