/**
 * The keyless principal: a call that presents no credential reads as read_only on the sandbox
 * tenant (`sandboxCompanyId`), and is refused auth_required when none is configured. What that
 * principal is (an agent, user 0, `agent_type: 'sandbox'`) is identity's rule
 * (src/identity/principal.ts `sandboxPrincipal`); which tenant it belongs to is the runtime's
 * option, looked up here once and cached.
 *
 * Spec: spec/transports.md §auth.
 */
import type { Principal } from '../spec/types.ts';
import { HOW_TO_PASS_A_KEY, VerbError, WHERE_KEYS_COME_FROM } from './errors.ts';
import type { Tenants } from './tenants.ts';
import { sandboxPrincipal } from '../identity/principal.ts';

/** Finds (and caches) the sandbox tenant's read_only principal. */
export class Sandbox {
  readonly #tenants: Pick<Tenants, 'get'>;
  readonly #companyId: number | undefined;
  #principal: Principal | undefined;

  /** `companyId`: the tenant whose read_only principal a keyless call gets (none: auth_required). */
  constructor(tenants: Pick<Tenants, 'get'>, companyId: number | undefined) {
    this.#tenants = tenants;
    this.#companyId = companyId;
  }

  /** The keyless principal (cached). Throws auth_required when no sandbox tenant is configured or exists. */
  async principal(): Promise<Principal> {
    if (this.#principal !== undefined) return this.#principal;
    if (this.#companyId === undefined) {
      throw new VerbError('auth_required', 'An API key is required.', {
        hint: `${HOW_TO_PASS_A_KEY} ${WHERE_KEYS_COME_FROM}`,
      });
    }
    const t = await this.#tenants.get(this.#companyId);
    if (t === undefined)
      throw new VerbError('auth_required', 'An API key is required (no sandbox tenant exists).', {
        hint: 'Run `solid init`.',
      });
    this.#principal = sandboxPrincipal(t);
    return this.#principal;
  }
}
