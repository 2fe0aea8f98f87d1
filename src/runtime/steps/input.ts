/**
 * Step 6, input: the one walk over the untrusted args (depth, lone surrogates, NUL, non-finite and
 * unsafe numbers, prototype keys: input-walk.ts), `identity_override` for company_id/user_id, then
 * the verb's compiled input schema. `invalid_input` carries the JSON Pointer that failed.
 * Spec: spec/transports.md §bad-input, spec/envelope.md §error, spec/reasons.md §resolution.
 */
import { VerbError } from '../errors.ts';
import type { CompiledVerb } from '../verb.ts';
import { describeIssue, issuePath, scanArgs } from '../input-walk.ts';
import { schemaIssue } from '../verb-checks.ts';
import type { Resolved, Step } from './call.ts';

export const input: Step<Resolved> = {
  name: 'input',
  run(c) {
    c.args = checkArgs(c.verb, c.input);
    c.argsChecked = true;
    return undefined;
  },
};

function checkArgs(verb: CompiledVerb, args: unknown): Record<string, unknown> {
  const a = args === undefined || args === null ? {} : args;
  if (typeof a !== 'object' || Array.isArray(a)) {
    throw new VerbError('invalid_input', 'The arguments must be a JSON object.', {
      path: '',
      hint: `See the input_schema of ${verb.name} (verbs.list or GET /api/v1/agent/verbs/${verb.name}).`,
    });
  }
  const issue = scanArgs(a);
  if (issue !== undefined) {
    const path = issuePath(a, issue);
    const { message, hint } = describeIssue(issue, path);
    throw new VerbError('invalid_input', message, { path, hint, details: { issue } });
  }
  const obj = a as Record<string, unknown>;
  for (const k of ['company_id', 'user_id'] as const) {
    if (k in obj) {
      throw new VerbError(
        'identity_override',
        `${k} may not be passed as an argument: the runtime sets it from your credentials.`,
        {
          path: `/${k}`,
          hint: `Remove ${k} from the arguments; to act for another tenant, use that tenant's API key.`,
        },
      );
    }
  }
  if (!verb.validate(obj)) {
    const { path, what, details } = schemaIssue(verb);
    throw new VerbError('invalid_input', `${path || 'arguments'} ${what}.`, {
      path,
      hint: `Fix the argument at ${path || '/'} to match the input_schema of ${verb.name}.`,
      details,
    });
  }
  return obj;
}
