/**
 * Daily caps: how many writes of each consent class a tenant may run per UTC day. Counted inside
 * the write's own transaction, after its handler (the counter row is locked as late as possible),
 * so a write over the cap rolls back whole.
 *
 * Spec: spec/consent.md §caps.
 */
import type { VerbClass } from '../../spec/types.ts';
import type { StoreTx } from '../../store/store.ts';
import { refuse } from '../refusals.ts';

/** Default daily caps per consent class (spec/consent.md §caps). */
export const DEFAULT_DAILY_CAPS: Readonly<
  Record<'WRITE_REVERSIBLE' | 'WRITE_FINANCIAL' | 'IRREVERSIBLE', number>
> = {
  WRITE_REVERSIBLE: 100,
  WRITE_FINANCIAL: 25,
  IRREVERSIBLE: 10,
};

/**
 * Count one write of class `cls` against the tenant's cap for `now`'s UTC day, inside `tx`.
 * `caps` is the tenant's setting (else the defaults; a class with neither is not capped).
 * Throws daily_cap_exceeded (details: cap, consent_class, resets_at).
 */
export async function countDailyCap(
  tx: StoreTx,
  caps: Partial<Record<VerbClass, number>> | undefined,
  companyId: number,
  cls: VerbClass,
  now: Date,
): Promise<void> {
  const cap = caps?.[cls] ?? DEFAULT_DAILY_CAPS[cls as keyof typeof DEFAULT_DAILY_CAPS];
  if (cap === undefined) return;
  const day = now.toISOString().slice(0, 10);
  // One statement, no RETURNING: the first write of the day inserts 1, a later one adds 1 only
  // while the count is below the cap (the row lock orders concurrent writers on PostgreSQL); no
  // row changed = over the cap, and the write rolls back.
  const counted =
    cap >= 1 &&
    (
      await tx.run(
        `INSERT INTO daily_counts (company_id, consent_class, day, count) VALUES (?, ?, ?, 1)
           ON CONFLICT (company_id, consent_class, day) DO UPDATE SET count = daily_counts.count + 1
           WHERE daily_counts.count < ?`,
        [companyId, cls, day, Math.floor(cap)],
      )
    ).changes > 0;
  if (!counted) {
    const reset = new Date(
      Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1),
    ).toISOString();
    throw refuse.capExceeded(cap, cls, reset);
  }
}
