/**
 * Step 1, resolve-principal: the principal from the transport's authentication, or the read-only
 * sandbox principal for a keyless call (auth_required when no sandbox is configured). A bad key
 * was refused before the pipeline (Runtime.dispatch: auth_invalid, audited).
 *
 * A tenant its platform suspended (spec/platform.md §lifecycle) is refused here, whatever the
 * credential — API key, OAuth token, signed-in person's session: `tenant_suspended`, audited in
 * the tenant's own chain by `fail`. The tenant is read from the tenants cache (no store read while
 * it is fresh, 5 s; the process that suspends drops its cache at once).
 * Spec: spec/transports.md §auth, spec/envelope.md §tenant.
 */
import type { Principal } from '../../spec/types.ts';
import { VerbError } from '../errors.ts';
import type { Tenant } from '../tenants.ts';
import type { Call, Step } from './call.ts';

function refuseSuspended(t: Tenant | undefined): undefined {
  if (t === undefined || t.status === 'active') return undefined;
  throw new VerbError(
    'tenant_suspended',
    t.status === 'deleted'
      ? 'This business was deleted by the platform that hosted it.'
      : 'This business is suspended by the platform that hosts it: no credential of it acts until it is resumed.',
    {
      hint: 'Ask the platform that hosts this business (its support), not the agent: nothing here can resume it.',
    },
  );
}

function checkTenant(c: Call, p: Principal): undefined | Promise<undefined> {
  const cached = c.rt.tenants.peek(p.company_id);
  if (cached !== undefined) return refuseSuspended(cached);
  return c.rt.tenants.get(p.company_id).then(refuseSuspended);
}

export const resolvePrincipal: Step<Call> = {
  name: 'resolve-principal',
  run(c) {
    const given = c.caller.principal;
    if (given !== undefined && given !== null) {
      c.principal = given;
      return checkTenant(c, given);
    }
    return c.rt.sandboxPrincipal().then((p) => {
      c.principal = p;
      return checkTenant(c, p);
    });
  },
};
