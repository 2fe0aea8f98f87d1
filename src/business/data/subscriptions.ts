/**
 * The tenant's own subscription to the platform (one per company): tier, status, seats and
 * renewal date; and the tier change. Prices come from `TIERS` (schema.ts).
 */
import type { Queryable } from '../../store/store.ts';
import { SUBSCRIPTION_TIERS, TIERS, type SubscriptionStatus, type SubscriptionTier } from '../schema.ts';
import { DomainError, invalidInput, notFound } from './domain-error.ts';
import { isoTime } from './iso-time.ts';
import { num } from './row-values.ts';

export interface Subscription {
  id: number;
  company_id: number;
  tier: SubscriptionTier;
  status: SubscriptionStatus;
  seats: number;
  /** seats × the tier's seat price, cents per month. */
  monthly_price_cents: number;
  started_at: string;
  renews_at: string;
  updated_at: string;
}

const SUBSCRIPTION_COLUMNS = 'id, company_id, tier, status, seats, started_at, renews_at, updated_at';

function toSubscription(row: Record<string, unknown>): Subscription {
  const tier = row.tier as SubscriptionTier;
  const seats = num(row.seats);
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    tier,
    status: row.status as SubscriptionStatus,
    seats,
    monthly_price_cents: seats * TIERS[tier].seat_price_cents,
    started_at: String(row.started_at),
    renews_at: String(row.renews_at),
    updated_at: String(row.updated_at),
  };
}

/** The company's subscription, or undefined. */
export async function getSubscription(q: Queryable, companyId: number): Promise<Subscription | undefined> {
  const row = await q.get(`SELECT ${SUBSCRIPTION_COLUMNS} FROM plan_subscriptions WHERE company_id = ?`, [
    companyId,
  ]);
  return row === undefined ? undefined : toSubscription(row);
}

/**
 * Move the subscription to another tier, effective immediately; returns the previous tier and
 * whether it is an upgrade. Throws `invalid_input` (unknown tier), `not_found` (no
 * subscription), `same_tier`, `seats_exceed_tier` (a downgrade below the current seat count).
 */
export async function changeTier(
  tx: Queryable,
  companyId: number,
  tier: SubscriptionTier,
  now: Date,
): Promise<{
  previous_tier: SubscriptionTier;
  direction: 'upgrade' | 'downgrade';
  subscription: Subscription;
}> {
  if (!(SUBSCRIPTION_TIERS as readonly unknown[]).includes(tier))
    throw invalidInput('tier', `must be one of ${SUBSCRIPTION_TIERS.join(', ')}`);
  const current = await getSubscription(tx, companyId);
  if (current === undefined) throw notFound('subscription', companyId, 'The company has no subscription.');
  if (current.tier === tier)
    throw new DomainError(
      'same_tier',
      `the subscription is already on the ${tier} tier`,
      'Pick another tier.',
    );
  const max = TIERS[tier].max_seats;
  if (max !== null && current.seats > max) {
    throw new DomainError(
      'seats_exceed_tier',
      `the subscription has ${current.seats} seats; ${tier} allows ${max}`,
      'Remove seats before downgrading.',
    );
  }
  const row = await tx.get(
    `UPDATE plan_subscriptions SET tier = ?, updated_at = ? WHERE company_id = ? RETURNING ${SUBSCRIPTION_COLUMNS}`,
    [tier, isoTime(now), companyId],
  );
  const direction =
    SUBSCRIPTION_TIERS.indexOf(tier) > SUBSCRIPTION_TIERS.indexOf(current.tier) ? 'upgrade' : 'downgrade';
  return { previous_tier: current.tier, direction, subscription: toSubscription(row!) };
}
