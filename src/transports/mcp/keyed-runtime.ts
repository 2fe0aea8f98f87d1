/**
 * The runtime as one MCP request holding an API key sees it: every dispatch and every refusal
 * first authenticates the key through src/identity (api-key-auth.ts), so a bad key answers the
 * audited auth_invalid of the verb it tried, as on every transport. Without a key the runtime is
 * returned as it is (the principal, if any, came with the credentials; none: the sandbox). A
 * remote runtime (`withApiKey`: the `solid mcp --remote` bridge) sends the key to its server instead.
 *
 * Spec: spec/transports.md §auth, §mcp-stdio.
 */
import type { McpRuntime } from '../runtime-surface.ts';
import { dispatchWithKey, refuseWithKey } from '../../identity/api-key-auth.ts';
import { VerbError } from '../../runtime/errors.ts';

/** `rt` with dispatch and recordRefusal authenticating `apiKey` first (none: `rt` itself). */
export function keyedRuntime(rt: McpRuntime, apiKey: string | null | undefined): McpRuntime {
  if (apiKey == null || apiKey === '') return rt;
  if (rt.withApiKey !== undefined) return rt.withApiKey(apiKey);
  const tenants = rt.tenants;
  if (tenants === undefined)
    throw new Error('An API key is checked by a local runtime only (the remote bridge sends its own).');
  const auth = { tenants, recordRefusal: rt.recordRefusal.bind(rt) };
  const local = { ...auth, dispatch: rt.dispatch.bind(rt) };
  return {
    registry: rt.registry,
    logger: rt.logger,
    tenants,
    dispatch: (caller, verb, args, options) => dispatchWithKey(local, caller, apiKey, verb, args, options),
    recordRefusal: (caller, verb, err) =>
      err instanceof VerbError
        ? refuseWithKey(auth, caller, apiKey, verb, err)
        : rt.recordRefusal(caller, verb, err),
  };
}
