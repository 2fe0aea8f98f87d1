/**
 * Subscription verbs (category `subscriptions`): the company's own plan with this platform.
 * subscription.status reads it; subscription_upgrade_tier (WRITE_FINANCIAL, owner, typed phrase
 * "UPGRADE to PROFESSIONAL tier immediately") moves it up a tier with immediate effect — also
 * the runtime tenant's tier, so verbs with a higher tier_floor open at once — and is reversible
 * (the revert downgrades back, with the phrase "DOWNGRADE to STARTER tier immediately").
 * subscription_cancel_immediate is registered BLOCKED: it is listed so agents see it exists and
 * is never executed, whatever the role or confirmation (the spec's blocklist example).
 *
 * Reasons: not_found ("subscription 2 not found"), same_tier, not_an_upgrade, seats_exceed_tier
 * (revert), blocked_verb. Spec: spec/consent.md §classes §blocklist, spec/manifest.md §record (tier_floor).
 */
import { formatCents } from '../../runtime/consent/typed-phrase.ts';
import { VerbError } from '../../runtime/errors.ts';
import type { VerbContext } from '../../runtime/verb.ts';
import { TIER_RANK } from '../../runtime/verb.ts';
import { DomainError, notFound } from '../data/domain-error.ts';
import { changeTier, getSubscription, type Subscription } from '../data/subscriptions.ts';
import { TIERS, type SubscriptionTier } from '../schema.ts';
import { valueWords } from './change-words.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { subscriptionView } from './entity-views.ts';
import { enumProp, objectSchema } from './input-schema.ts';

async function requireSubscription(ctx: VerbContext): Promise<Subscription> {
  const sub = await getSubscription(ctx.db, ctx.principal.company_id);
  if (sub === undefined)
    throw notFound('subscription', ctx.principal.company_id, 'The company has no subscription.');
  return sub;
}

/** Set the runtime tenant's tier in this write (tier floors follow the plan) and drop cached principals after commit. */
async function setTenantTier(ctx: VerbContext, tier: SubscriptionTier): Promise<void> {
  await ctx.db.run('UPDATE tenants SET tier = ? WHERE company_id = ?', [tier, ctx.principal.company_id]);
  ctx.principalsChanged();
}

export const subscriptionStatus = defineBusinessVerb<Record<string, never>>({
  name: 'subscription.status',
  title: 'Subscription status',
  description:
    "The company's own plan with this platform: tier (starter, professional, enterprise), status, seats, monthly price in cents, renewal date, and the tiers above it with their seat prices.",
  shape: 'aggregate',
  category: 'subscriptions',
  input: objectSchema({}),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx) {
    const sub = await requireSubscription(ctx);
    ctx.setEntity('subscription', sub.id);
    const above = (Object.keys(TIERS) as SubscriptionTier[]).filter(
      (t) => TIER_RANK[t] > TIER_RANK[sub.tier],
    );
    return {
      entity_id: sub.id,
      entity_type: 'subscription',
      data: {
        ...subscriptionView(sub),
        seat_price_cents: TIERS[sub.tier].seat_price_cents,
        max_seats: TIERS[sub.tier].max_seats,
      },
      relations: above.map((t) => ({
        type: 'tier',
        id: t,
        seat_price_cents: TIERS[t].seat_price_cents,
        max_seats: TIERS[t].max_seats,
        monthly_price_cents: TIERS[t].seat_price_cents * sub.seats,
      })),
      fetched_at: ctx.now.toISOString(),
    };
  },
});

interface UpgradeArgs {
  tier: 'professional' | 'enterprise';
}

const upgradeInput = objectSchema(
  { tier: enumProp(['professional', 'enterprise'], 'The tier to move up to.') },
  ['tier'],
);

function checkUpgrade(sub: Subscription, tier: SubscriptionTier): void {
  if (sub.tier === tier)
    throw new DomainError(
      'same_tier',
      `the subscription is already on the ${tier} tier`,
      'Pick another tier.',
    );
  if (TIER_RANK[tier] < TIER_RANK[sub.tier])
    throw new DomainError(
      'not_an_upgrade',
      `${tier} is below the current ${sub.tier} tier`,
      'Downgrades are handled by the account owner with support.',
    );
}

export const subscriptionUpgradeTier = defineBusinessVerb<UpgradeArgs>({
  name: 'subscription_upgrade_tier',
  title: 'Upgrade the subscription tier',
  description:
    'Move the company\'s own plan up to the professional or enterprise tier, effective immediately (billing changes at once: seats × the new seat price). Only the owner, with the typed phrase, e.g. "UPGRADE to PROFESSIONAL tier immediately". Verbs that need the higher tier become available right away. Reversible: audit.revert downgrades back. Preview with subscription.preview_tier_change.',
  shape: 'receipt',
  category: 'subscriptions',
  consent: 'WRITE_FINANCIAL',
  role_floor: 'owner',
  preview: 'subscription.preview_tier_change',
  input: upgradeInput,
  open_world: true,
  phrase: (a) => `UPGRADE to ${a.tier.toUpperCase()} tier immediately`,
  summary: (a) => `Upgrade the company's plan to ${a.tier}, effective immediately.`,
  async handler(ctx, args) {
    const before = await requireSubscription(ctx);
    checkUpgrade(before, args.tier);
    const { previous_tier, subscription } = await changeTier(
      ctx.db,
      ctx.principal.company_id,
      args.tier,
      ctx.now,
    );
    await setTenantTier(ctx, subscription.tier);
    ctx.setEntity('subscription', subscription.id);
    ctx.emit({
      type: 'subscription.tier_changed',
      entity_type: 'subscription',
      entity_id: subscription.id,
      payload: {
        previous_tier,
        tier: subscription.tier,
        seats: subscription.seats,
        previous_monthly_price_cents: before.monthly_price_cents,
        monthly_price_cents: subscription.monthly_price_cents,
      },
    });
    ctx.setRollback(`subscription:tier:${previous_tier}`, { previous_tier });
    return {
      status: 'upgraded',
      previous_tier,
      tier: subscription.tier,
      seats: subscription.seats,
      previous_monthly_price_cents: before.monthly_price_cents,
      monthly_price_cents: subscription.monthly_price_cents,
    };
  },
  revert: {
    describe: ({ rollback, args }) =>
      `Subscription tier: ${valueWords('tier', rollback.previous_tier)} → ${valueWords('tier', args.tier)}`,
    phrase: (original) =>
      `DOWNGRADE to ${String(original.rollback.previous_tier).toUpperCase()} tier immediately`,
    async handler(ctx, original) {
      const previous = original.rollback.previous_tier as SubscriptionTier;
      const before = await requireSubscription(ctx);
      const { subscription } = await changeTier(ctx.db, ctx.principal.company_id, previous, ctx.now);
      await setTenantTier(ctx, subscription.tier);
      ctx.emit({
        type: 'subscription.tier_changed',
        entity_type: 'subscription',
        entity_id: subscription.id,
        payload: {
          previous_tier: before.tier,
          tier: subscription.tier,
          seats: subscription.seats,
          revert_of: original.audit_id,
        },
      });
      return { revert_action: `moved the plan back from ${before.tier} to ${subscription.tier}` };
    },
  },
});

export const subscriptionPreviewTierChange = defineBusinessVerb<UpgradeArgs>({
  name: 'subscription.preview_tier_change',
  title: 'Preview a tier upgrade',
  description:
    'Show the plan before and after subscription_upgrade_tier with the same arguments — tier, monthly price in cents, and the verbs that become available — without changing anything.',
  shape: 'preview',
  category: 'subscriptions',
  input: upgradeInput,
  role_floor: 'admin',
  idempotent: true,
  async handler(ctx, args) {
    const sub = await requireSubscription(ctx);
    checkUpgrade(sub, args.tier);
    const max = TIERS[args.tier].max_seats;
    if (max !== null && sub.seats > max)
      throw new DomainError(
        'seats_exceed_tier',
        `the subscription has ${sub.seats} seats; ${args.tier} allows ${max}`,
      );
    const price = sub.seats * TIERS[args.tier].seat_price_cents;
    const unlocked = ctx
      .manifest()
      .filter(
        (v) =>
          TIER_RANK[(v.tier_floor ?? 'starter') as keyof typeof TIER_RANK] > TIER_RANK[ctx.principal.tier] &&
          TIER_RANK[(v.tier_floor ?? 'starter') as keyof typeof TIER_RANK] <= TIER_RANK[args.tier],
      )
      .map((v) => v.name);
    return {
      current: { tier: sub.tier, seats: sub.seats, monthly_price_cents: sub.monthly_price_cents },
      projected: { tier: args.tier, seats: sub.seats, monthly_price_cents: price },
      delta: { monthly_price_change_cents: price - sub.monthly_price_cents, verbs_unlocked: unlocked },
      reversible: subscriptionUpgradeTier.revert !== undefined,
      notes: `Billing changes immediately by ${formatCents(price - sub.monthly_price_cents)} per month. The owner must type the confirmation phrase shown to them.`,
    };
  },
});

export const subscriptionCancelImmediate = defineBusinessVerb<Record<string, never>>({
  name: 'subscription_cancel_immediate',
  title: 'Cancel the subscription immediately (blocked)',
  description:
    'BLOCKED: cancelling the subscription immediately would shut the business down mid-day; this verb is never executed, whatever the role or confirmation, and answers blocked_verb. It is listed so agents learn it exists and is refused. Talk to the account owner instead.',
  shape: 'receipt',
  category: 'subscriptions',
  consent: 'BLOCKED',
  input: objectSchema({}),
  webmcp_surfaces: ['dashboard'],
  async handler() {
    throw new VerbError('blocked_verb', 'subscription_cancel_immediate is blocked and never executed.');
  },
});

export const subscriptionVerbs = [
  subscriptionStatus,
  subscriptionUpgradeTier,
  subscriptionPreviewTierChange,
  subscriptionCancelImmediate,
];
