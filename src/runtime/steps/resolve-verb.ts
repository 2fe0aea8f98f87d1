/**
 * Step 3, resolve-verb: the registered verb (`unknown_verb` with the closest names as the hint;
 * `blocked_verb` for a verb declared BLOCKED). From here on the call is `Resolved`.
 * Spec: spec/envelope.md, spec/consent.md §blocklist.
 */
import { VerbError } from '../errors.ts';
import { refuse } from '../refusals.ts';
import { MAX_NAME_IN_AUDIT, type Step, type WithPrincipal } from './call.ts';

export const resolveVerb: Step<WithPrincipal> = {
  name: 'resolve-verb',
  run(c) {
    const verb = c.rt.registry.get(c.name);
    if (verb === undefined) {
      const closest = c.rt.registry.closest(c.name);
      throw refuse.unknownVerb(c.name.slice(0, MAX_NAME_IN_AUDIT), closest);
    }
    c.verb = verb;
    c.name = verb.name;
    c.consentClass = verb.consentClass;
    if (verb.consentClass === 'BLOCKED') {
      throw new VerbError(
        'blocked_verb',
        `The verb "${verb.name}" is declared BLOCKED and is never executed.`,
        { hint: 'Use a safe alternative listed by verbs.list.' },
      );
    }
    return undefined;
  },
};
