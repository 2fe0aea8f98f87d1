/**
 * Who am I: the principal an API key resolves to (tenant, user, role, tier), for `solid whoami`
 * and `solid login` (which verifies a pasted key with it).
 *
 *   GET  /api/v1/whoami                  Authorization: Bearer sk_solid_… (absent: the sandbox)
 *        → 200 { ok: true, verb: "whoami", result: WhoAmI }
 *        → 401 auth_invalid (audited, like any failed authentication)
 *   POST /api/v1/whoami/revoke-key       revokes the very key that authenticates the request
 *        (`solid logout --revoke`); audited in the key's tenant → 200 { revoked: true, key_id }
 *
 * `whoAmI(rt, apiKey)` is the one function behind both the route (src/transports/http/whoami-routes.ts)
 * and the embedded `solid whoami`.
 * Spec: spec/transports.md §remote-login.
 */
import type { IdentityRuntime as Runtime } from './runtime-view.ts';
import type { Envelope, Principal } from '../spec/types.ts';
import { authFailure } from './api-key-auth.ts';

export const WHOAMI_PATH = '/api/v1/whoami';
export const REVOKE_KEY_PATH = '/api/v1/whoami/revoke-key';

/** What `whoami` answers. */
export interface WhoAmI extends Record<string, unknown> {
  company_id: number;
  tenant_name: string;
  user_id: number;
  role: string;
  tier: string;
  agent_type: string;
  key_id: string | null;
  /** True for the keyless sandbox principal (reads only). */
  sandbox: boolean;
}

async function describe(rt: Runtime, p: Principal): Promise<WhoAmI> {
  const tenant = await rt.tenants.get(p.company_id);
  return {
    company_id: p.company_id,
    tenant_name: tenant?.name ?? '',
    user_id: p.user_id,
    role: p.role,
    tier: p.tier,
    agent_type: p.agent_type,
    key_id: p.key_id ?? null,
    sandbox: p.sandbox === true,
  };
}

/**
 * The envelope of "who am I" for an API key (null/empty: the sandbox principal). A bad key answers
 * the audited auth_invalid envelope; no sandbox tenant answers auth_required.
 */
export async function whoAmI(
  rt: Runtime,
  apiKey: string | null,
  surface: 'http' | 'cli' = 'http',
): Promise<Envelope> {
  let principal: Principal;
  try {
    principal =
      apiKey === null || apiKey === '' ? await rt.sandboxPrincipal() : await rt.tenants.authenticate(apiKey);
  } catch (err) {
    return { ...(await authFailure(rt, { surface }, 'whoami', err)), verb: 'whoami' };
  }
  return { ok: true, verb: 'whoami', result: await describe(rt, principal) };
}
