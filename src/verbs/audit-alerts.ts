/**
 * audit.alerts (shape aggregate, admin): what the owner should see at once — the banner of the
 * dashboard. Two kinds, the same the webhooks announce:
 *
 * - `caps`: each consent class whose daily cap is used up today (the business day in the
 *   tenant's time zone): `{ consent_class, cap, used, resets_at }` (`cap.reached`).
 * - `bursts`: each agent credential (API key or OAuth grant) with at least
 *   REFUSAL_BURST.refusals refusals within one window of REFUSAL_BURST.window_minutes, in the
 *   current or the previous window: `{ key_id, key_name, agent_type, refusals, window_start,
 *   window_end, reasons }` (`refusals.burst`), most refusals first.
 *
 * Cost: one read of today's daily counts, and two grouped scans of the denied rows of two windows
 * (the status-time index). Spec: spec/audit.md §refusal-bursts, spec/consent.md §caps.
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import { businessDay } from '../runtime/consent/business-day.ts';
import { DEFAULT_DAILY_CAPS } from '../runtime/consent/daily-caps.ts';
import { burstWindow, keyName, REFUSAL_BURST } from '../runtime/ledger/write/refusal-burst.ts';

interface Burst {
  key_id: string;
  key_name: string | null;
  agent_type: string;
  refusals: number;
  window_start: string;
  window_end: string;
  reasons: Array<{ reason: string; count: number }>;
}

export const auditAlerts = defineSystemVerb<Record<string, never>>({
  name: 'audit.alerts',
  title: 'Alerts',
  description: `What needs the owner's attention now: each daily cap used up today (the business day in the tenant's time zone), and each agent credential with ${REFUSAL_BURST.refusals} or more refusals within ${REFUSAL_BURST.window_minutes} minutes (probing; current or previous window), named by its key's name. The dashboard's banner; the same events go to the cap.reached and refusals.burst webhooks. Admin role.`,
  shape: 'aggregate',
  category: 'audit',
  role_floor: 'admin',
  input: { type: 'object', properties: {}, additionalProperties: false },
  idempotent: true,
  surfaces: ['http', 'webmcp', 'cli'],
  webmcp_surfaces: ['dashboard'],
  async handler(ctx) {
    const companyId = ctx.principal.company_id;
    const settings = (await ctx.runtime.tenants.get(companyId))?.settings;
    const today = businessDay(ctx.now, settings?.time_zone);
    const used = await ctx.db.all<{ consent_class: string; count: number }>(
      'SELECT consent_class, count FROM daily_counts WHERE company_id = ? AND day = ?',
      [companyId, today.day],
    );
    const caps = [];
    for (const cls of Object.keys(DEFAULT_DAILY_CAPS) as Array<keyof typeof DEFAULT_DAILY_CAPS>) {
      const cap = settings?.caps?.[cls] ?? DEFAULT_DAILY_CAPS[cls];
      const n = Number(used.find((u) => u.consent_class === cls)?.count ?? 0);
      if (n >= cap) caps.push({ consent_class: cls, cap, used: n, resets_at: today.end });
    }
    const current = burstWindow(ctx.now);
    const previous = burstWindow(new Date(Date.parse(current.start) - 1));
    const bursts: Burst[] = [];
    for (const win of [current, previous]) {
      const rows = await ctx.db.all<{ key_id: string; agent_type: string; reason: string; n: number }>(
        `SELECT key_id, agent_type, reason, COUNT(*) AS n FROM audit_log
          WHERE company_id = ? AND status = 'denied' AND status <> 'completed' AND created_at >= ? AND created_at < ?
            AND key_id IS NOT NULL
          GROUP BY key_id, agent_type, reason`,
        [companyId, win.start, win.end],
      );
      const byKey = new Map<string, Burst>();
      for (const r of rows) {
        const b = byKey.get(r.key_id) ?? {
          key_id: r.key_id,
          key_name: null,
          agent_type: r.agent_type,
          refusals: 0,
          window_start: win.start,
          window_end: win.end,
          reasons: [],
        };
        b.refusals += Number(r.n);
        b.reasons.push({ reason: r.reason, count: Number(r.n) });
        byKey.set(r.key_id, b);
      }
      for (const b of byKey.values()) {
        if (b.refusals < REFUSAL_BURST.refusals || bursts.some((x) => x.key_id === b.key_id)) continue;
        b.key_name = await keyName(ctx.db, companyId, b.key_id);
        b.reasons.sort((x, y) => y.count - x.count || x.reason.localeCompare(y.reason));
        bursts.push(b);
      }
    }
    bursts.sort((a, b) => b.refusals - a.refusals || a.key_id.localeCompare(b.key_id));
    return {
      entity_type: 'tenant',
      entity_id: companyId,
      data: {
        time_zone: today.time_zone,
        business_day: today,
        caps,
        bursts,
        threshold: { ...REFUSAL_BURST },
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});
