/**
 * Step 2, blocklist: `blocked_verb` for a blocked name (global list, runtime option, tenant
 * settings), registered or not, whatever the role or confirmation.
 * Spec: spec/consent.md §blocklist.
 */
import { VerbError } from '../errors.ts';
import { MAX_NAME_IN_AUDIT, type Step, type WithPrincipal } from './call.ts';

export const blocklist: Step<WithPrincipal> = {
  name: 'blocklist',
  async run(c) {
    if (await c.rt.isBlocked(c.name, c.principal.company_id)) {
      throw new VerbError(
        'blocked_verb',
        `The verb "${c.name.slice(0, MAX_NAME_IN_AUDIT)}" is blocked and is never executed, whatever the role or confirmation.`,
        {
          hint: 'Look for a deliberately named safe alternative with verbs.list (e.g. gdpr_delete_contact instead of customer_delete).',
        },
      );
    }
    return undefined;
  },
};
