/**
 * API-key authentication as the runtime does it for a transport that hands over the raw key
 * (`Runtime.dispatch` / `Runtime.refuse` with `caller.apiKey`): the key becomes the principal of
 * its tenant (tenants.ts `authenticate`), a bad one the audited `auth_invalid` refusal (refusal
 * rows under the sandbox tenant, plus the key owner's row when the key id exists); a call with
 * no key reads as the keyless sandbox principal.
 *
 * Spec: spec/transports.md §auth, spec/audit.md §auth-failures.
 */
import type { Envelope, Principal } from '../spec/types.ts';
import { StoreError } from '../store/store.ts';
import type { Caller } from './core.ts';
import { HOW_TO_PASS_A_KEY, VerbError, WHERE_KEYS_COME_FROM } from './errors.ts';
import type { Tenants } from './tenants.ts';
import type { RefusalRows } from './ledger/write/refusal-rows.ts';
import { agentPrincipal } from '../identity/principal.ts';

/** A caller as a transport hands it to the runtime: its principal, or the raw API key to check. */
export type KeyedCaller = Caller & { apiKey?: string | null };

/** Turns a raw API key into a principal, audits a bad one, and knows the sandbox principal. */
export class ApiKeyAuth {
  readonly #tenants: Tenants;
  readonly #refusals: RefusalRows;
  readonly #sandboxCompanyId: number | undefined;
  #sandbox: Principal | undefined;

  /** `sandboxCompanyId`: the tenant whose read_only principal a keyless call gets (none: auth_required). */
  constructor(tenants: Tenants, refusals: RefusalRows, sandboxCompanyId: number | undefined) {
    this.#tenants = tenants;
    this.#refusals = refusals;
    this.#sandboxCompanyId = sandboxCompanyId;
  }

  /**
   * The caller with its principal from `apiKey`, or the audited auth_invalid envelope (of `verb`).
   * A caller that already has a principal, or no key, is returned as is.
   */
  async authenticate(caller: KeyedCaller, verb: string): Promise<Caller | Envelope> {
    if (caller.principal != null || caller.apiKey == null || caller.apiKey === '') return caller;
    try {
      return { ...caller, principal: await this.#tenants.authenticate(caller.apiKey) };
    } catch (err) {
      return this.authFailure(caller, verb, err);
    }
  }

  /**
   * Record and answer a failed authentication (auth_invalid unless `err` is already a VerbError or
   * StoreError), audited under the sandbox tenant; when the presented key id exists (wrong secret,
   * revoked key) the tenant owning it also gets a row (`api_key.wrong_secret` / `api_key.revoked`).
   */
  authFailure(caller: Caller, verb: string, err: unknown): Promise<Envelope> {
    const e =
      err instanceof VerbError || err instanceof StoreError
        ? err
        : new VerbError('auth_invalid', 'The API key is not valid.');
    return this.#refusals.record(caller, verb, e, 'auth');
  }

  /** The keyless principal: read_only on the sandbox tenant (cached). Throws auth_required when none is configured. */
  async sandboxPrincipal(): Promise<Principal> {
    if (this.#sandbox !== undefined) return this.#sandbox;
    if (this.#sandboxCompanyId === undefined) {
      throw new VerbError('auth_required', 'An API key is required.', {
        hint: `${HOW_TO_PASS_A_KEY} ${WHERE_KEYS_COME_FROM}`,
      });
    }
    const t = await this.#tenants.get(this.#sandboxCompanyId);
    if (t === undefined)
      throw new VerbError('auth_required', 'An API key is required (no sandbox tenant exists).', {
        hint: 'Run `solid init`.',
      });
    this.#sandbox = agentPrincipal({
      company_id: t.company_id,
      user_id: 0,
      role: 'read_only',
      tier: t.tier,
      agent_type: 'sandbox',
      sandbox: true,
    });
    return this.#sandbox;
  }
}
