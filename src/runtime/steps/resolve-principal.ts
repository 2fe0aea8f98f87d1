/**
 * Step 1, resolve-principal: the principal from the transport's authentication, or the read-only
 * sandbox principal for a keyless call (auth_required when no sandbox is configured). A bad key
 * was refused before the pipeline (Runtime.dispatch: auth_invalid, audited).
 * Spec: spec/transports.md §auth, spec/envelope.md §tenant.
 */
import type { Call, Step } from './call.ts';

export const resolvePrincipal: Step<Call> = {
  name: 'resolve-principal',
  run(c) {
    const given = c.caller.principal;
    if (given !== undefined && given !== null) {
      c.principal = given;
      return undefined;
    }
    return c.rt.sandboxPrincipal().then((p) => {
      c.principal = p;
      return undefined;
    });
  },
};
