/**
 * Daily caps: how many writes of each consent class a tenant may run per business day (the
 * calendar day in the tenant's time zone, business-day.ts; UTC when it set none). Counted inside
 * the write's own transaction, after its handler (the counter row is locked as late as possible),
 * so a write over the cap rolls back whole.
 *
 * Spec: spec/consent.md §caps.
 */
import type { VerbClass } from '../../spec/types.ts';
import type { Queryable, StoreTx } from '../../store/store.ts';
import { refuse } from '../refusals.ts';
import { businessDay } from './business-day.ts';

/** What the caps read of the tenant's settings: its caps and its time zone (IANA; default UTC). */
export interface CapSettings {
  caps?: Partial<Record<VerbClass, number>>;
  time_zone?: string;
}

/** Default daily caps per consent class (spec/consent.md §caps). */
export const DEFAULT_DAILY_CAPS: Readonly<
  Record<'WRITE_REVERSIBLE' | 'WRITE_FINANCIAL' | 'IRREVERSIBLE', number>
> = {
  WRITE_REVERSIBLE: 100,
  WRITE_FINANCIAL: 25,
  IRREVERSIBLE: 10,
};

/** The tenant's cap of `cls` (its setting, else the default); undefined when the class is not capped. */
function capOf(caps: Partial<Record<VerbClass, number>> | undefined, cls: VerbClass): number | undefined {
  return caps?.[cls] ?? DEFAULT_DAILY_CAPS[cls as keyof typeof DEFAULT_DAILY_CAPS];
}

/**
 * Count one write of class `cls` against the tenant's cap for `now`'s business day, inside `tx`.
 * `settings` holds the tenant's caps (else the defaults; a class with neither is not capped) and
 * time zone. Throws daily_cap_exceeded (details: cap, consent_class, resets_at: the tenant's next
 * midnight). Resolves to the day's count after this write, the cap and the day (YYYY-MM-DD in the
 * tenant's zone), or undefined when the class is not capped: `count === cap` is the write that
 * reached the cap (the `cap.reached` webhook).
 */
export async function countDailyCap(
  tx: StoreTx,
  settings: CapSettings | undefined,
  companyId: number,
  cls: VerbClass,
  now: Date,
): Promise<{ count: number; cap: number; day: string } | undefined> {
  const cap = capOf(settings?.caps, cls);
  if (cap === undefined) return undefined;
  const bd = businessDay(now, settings?.time_zone);
  const day = bd.day;
  // One statement: the first write of the day inserts 1, a later one adds 1 only while the count
  // is below the cap (the row lock orders concurrent writers on PostgreSQL); no row returned =
  // over the cap, and the write rolls back.
  const counted =
    cap >= 1
      ? await tx.get<{ count: number }>(
          `INSERT INTO daily_counts (company_id, consent_class, day, count) VALUES (?, ?, ?, 1)
           ON CONFLICT (company_id, consent_class, day) DO UPDATE SET count = daily_counts.count + 1
           WHERE daily_counts.count < ? RETURNING count`,
          [companyId, cls, day, Math.floor(cap)],
        )
      : undefined;
  if (counted === undefined) throw refuse.capExceeded(cap, cls, bd.end, bd.time_zone);
  return { count: Number(counted.count), cap: Math.floor(cap), day };
}

/**
 * Refuse up front a write whose cap is already used up today (a cap of 0 included), so no nonce,
 * approval or typed phrase is asked for a write that could not run. Read-only (one indexed
 * SELECT on `q`): the write is still counted for real, atomically, in its own transaction
 * (countDailyCap), so a cap used up between the preflight and the confirm still refuses there.
 * Same arguments as countDailyCap. Throws daily_cap_exceeded (details: cap, consent_class,
 * resets_at). Spec: spec/consent.md §caps.
 */
export async function assertDailyCapOpen(
  q: Queryable,
  settings: CapSettings | undefined,
  companyId: number,
  cls: VerbClass,
  now: Date,
): Promise<void> {
  const cap = capOf(settings?.caps, cls);
  if (cap === undefined) return;
  const bd = businessDay(now, settings?.time_zone);
  if (cap >= 1) {
    const row = await q.get<{ count: number }>(
      'SELECT count FROM daily_counts WHERE company_id = ? AND consent_class = ? AND day = ?',
      [companyId, cls, bd.day],
    );
    if (row === undefined || Number(row.count) < Math.floor(cap)) return;
  }
  throw refuse.capExceeded(cap, cls, bd.end, bd.time_zone);
}
