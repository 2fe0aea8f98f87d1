/**
 * Step 4, auth: `auth_required` when a keyless (sandbox) caller asks for a write.
 * Spec: spec/transports.md §auth.
 */
import { HOW_TO_PASS_A_KEY, VerbError, WHERE_KEYS_COME_FROM } from '../errors.ts';
import type { Resolved, Step } from './call.ts';

export const auth: Step<Resolved> = {
  name: 'auth',
  run(c) {
    if (c.principal.sandbox && c.verb.isWrite) {
      throw new VerbError(
        'auth_required',
        `${c.verb.name} changes data and needs an API key; without a key only read verbs run (sandbox tenant).`,
        {
          hint: `${HOW_TO_PASS_A_KEY} ${WHERE_KEYS_COME_FROM}`,
        },
      );
    }
    return undefined;
  },
};
