/**
 * Step 8, scope: what the credential is limited to beyond its role (a least-privilege API key's
 * verb/toolset allow-list, read-only flag and expiry; an MCP session's `X-MCP-Readonly` and
 * `X-MCP-Toolsets`). After floors, so a delegated verb (audit.revert, transaction.append,
 * macros.run) has named the verbs it reaches (`DelegatedConsent.targets`): each of them must be
 * within the same limits, so a revert, a transaction step or a macro step never reaches what the
 * credential could not call itself. Refusals: `scope_denied`, `key_expired` (audited by `fail`).
 * Spec: spec/consent.md §api-keys.
 */
import { reachDenied } from '../verb-checks.ts';
import type { Resolved, Step } from './call.ts';

export const scope: Step<Resolved> = {
  name: 'scope',
  run(c) {
    const reach = { principal: c.principal, toolsets: c.caller.toolsets, readOnly: c.caller.readOnly };
    if (c.principal.scope === undefined && reach.readOnly !== true && reach.toolsets === undefined)
      return undefined;
    const denied = reachDenied(reach, c.verb, c.now);
    if (denied !== undefined) throw denied;
    for (const name of c.delegated?.targets ?? []) {
      const target = c.rt.registry.get(name);
      if (target === undefined) continue;
      const no = reachDenied(reach, target, c.now, c.verb.name);
      if (no !== undefined) throw no;
    }
    return undefined;
  },
};
