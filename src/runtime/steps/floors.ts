/**
 * Step 7, floors: `tier_denied`, `role_denied`. A delegated verb (audit.revert, transaction.append,
 * macros.run) resolves its target's consent class and floors here first.
 * Spec: spec/consent.md §classes (delegated consent), §role-floors.
 */
import { VerbError } from '../errors.ts';
import { ROLE_RANK, TIER_RANK } from '../verb.ts';
import type { Resolved, Step } from './call.ts';
import { readContext } from '../verb-context.ts';
import { refuse } from '../refusals.ts';

export const floors: Step<Resolved> = {
  name: 'floors',
  run(c) {
    if (!c.verb.delegated) return checkFloors(c);
    return c.verb.definition.delegateConsent!(readContext(c), c.args).then((d) => {
      c.delegated = d;
      c.consentClass = d.consentClass;
      return checkFloors(c);
    });
  },
};

function checkFloors(c: Resolved): undefined {
  const { principal: p, verb } = c;
  const tierFloor = c.delegated?.tierFloor ?? verb.tierFloor;
  if (TIER_RANK[p.tier] < TIER_RANK[tierFloor]) {
    throw new VerbError(
      'tier_denied',
      `${verb.name} needs the ${tierFloor} tier; this tenant is on ${p.tier}.`,
      {
        hint: 'Upgrade the subscription tier (subscription_upgrade_tier) or use a verb available on your tier.',
      },
    );
  }
  const roleFloor = c.delegated?.roleFloor ?? verb.roleFloor;
  if (ROLE_RANK[p.role] < ROLE_RANK[roleFloor]) {
    throw refuse.roleDenied(verb.name, roleFloor, p.role);
  }
  return undefined;
}
