/**
 * The catalogue of refusals: one constructor per refusal the runtime raises from more than one
 * place, in the manner of Fastify's lib/errors.js. Each entry fixes the reason (its HTTP status,
 * exit code and kind come from the reason table, src/spec/reasons.ts), the message template and
 * the hint, so two call sites cannot drift apart. A refusal raised from one place only may stay an
 * inline `new VerbError(reason, …)`; its reason is type-checked all the same.
 *
 * Packs get the same for their own reasons with {@link packRefusals}.
 *
 * Spec: spec/reasons.md (§catalogue), spec/envelope.md §error.
 */
import { VerbError, type VerbErrorOptions } from './errors.ts';
import type { CoreReason, PackReason, PackReasonSpec } from '../spec/reasons.ts';

/** `No <what> <id> exists for this tenant.` — the tenant-scoped not-found of every registry. */
function noSuch(
  reason: CoreReason,
  what: string,
  id: unknown,
  tail: string,
  hint: string | undefined,
): VerbError {
  return new VerbError(reason, `No ${what} ${String(id)} ${tail}.`, hint === undefined ? {} : { hint });
}

/** How the pipeline tells a caller to find verbs (unknown_verb). */
const VERBS_LIST = {
  withClosest: 'List verbs with verbs.list.',
  alone: 'List the available verbs with verbs.list.',
};
const NONCE_HINT =
  'Call the verb again without confirm to get a fresh nonce, then confirm with exactly the same arguments.';
const TRUST_PROXY_HINT =
  'Pass nothing (trust the proxy in front) or its addresses/CIDRs: 127.0.0.1,10.0.0.0/8.';
const SAME_PAGE_HINT = 'Call this endpoint from a page served by this server.';

/** Constructors of the runtime's common refusals (`refuse.notFound('contact', 7)`): each returns a VerbError with the reason, message and hint the runtime uses itself. spec/reasons.md */
export const refuse = {
  /**
   * `not_found`: `No <what> <id> exists for this tenant.` (e.g. `refuse.notFound('audit row', 7,
   * hint)`). Ids are stringified as given; cut long ones before.
   */
  notFound(what: string, id: unknown, hint?: string): VerbError {
    return noSuch('not_found', what, id, 'exists for this tenant', hint);
  },

  /** `approval_not_found`: no approval with that id in this tenant (approvals.approve / reject). */
  approvalNotFound(id: string): VerbError {
    return noSuch(
      'approval_not_found',
      'approval',
      id,
      'exists for this tenant',
      'List the open approvals with approvals.list (`solid approvals list`); approval ids come from dispatch_pending answers.',
    );
  },

  /** `macro_not_found`: no macro with that id in this tenant (the id is cut at 64 characters). */
  macroNotFound(id: string): VerbError {
    return noSuch(
      'macro_not_found',
      'macro',
      id.slice(0, 64),
      'exists for this tenant',
      'List the saved macros with macros.list.',
    );
  },

  /**
   * `subscription_not_found`: `tail` says whose subscriptions were searched (`exists for this
   * tenant (…)`, `of yours exists for this tenant`); the id is cut at 64 characters.
   */
  subscriptionNotFound(id: string, tail: string, hint: string): VerbError {
    return noSuch('subscription_not_found', 'subscription', id.slice(0, 64), tail, hint);
  },

  /** `not_found`: the caller's tenant row is gone (`Tenant <id> does not exist.`), e.g. deleted mid-call. */
  tenantNotFound(companyId: number): VerbError {
    return new VerbError('not_found', `Tenant ${companyId} does not exist.`, {
      hint: 'The tenant of this key was removed; use a key of an existing tenant.',
    });
  },

  /**
   * `not_found`: no tenant signing key `kid` (spec/transports.md §ucp-keys); `companyId` names the tenant in
   * the message (the CLI), else "this tenant".
   */
  signingKeyNotFound(kid: string, companyId?: number): VerbError {
    const tenant = companyId === undefined ? 'this tenant' : `tenant ${companyId}`;
    return new VerbError('not_found', `No signing key ${kid} for ${tenant}.`, {
      hint: 'List keys with `solid keys list`.',
    });
  },

  /**
   * `unknown_verb`: `No verb named "<name>" is registered.` with the closest names as the hint and
   * in `details.closest`. `list` says how this surface finds verbs: `withClosest` follows the
   * suggestion (omitted: the suggestion alone), `alone` is the hint when nothing is close. Cut long
   * names before.
   */
  unknownVerb(
    name: string,
    closest: readonly string[],
    list: { withClosest?: string; alone: string } = VERBS_LIST,
    options: { path?: string; details?: false } = {},
  ): VerbError {
    const hint =
      closest.length > 0
        ? `Did you mean ${closest.join(', ')}?${list.withClosest !== undefined ? ` ${list.withClosest}` : ''}`
        : list.alone;
    return new VerbError('unknown_verb', `No verb named "${name}" is registered.`, {
      hint,
      ...(options.path !== undefined ? { path: options.path } : {}),
      ...(options.details !== false ? { details: { closest: [...closest] } } : {}),
    });
  },

  /**
   * `store_unavailable`: the database is down, nothing was written (a StoreError met while
   * answering); `hint` defaults to retry-then-check.
   */
  storeUnavailable(
    hint = 'Retry shortly; if it persists, check the database (disk, permissions, connection).',
  ): VerbError {
    return new VerbError('store_unavailable', 'The database is unavailable; nothing was written.', { hint });
  },

  /** `auth_invalid`: the API key is malformed, unknown, wrong or revoked (never saying which). */
  authInvalid(): VerbError {
    return new VerbError('auth_invalid', 'The API key is not valid.', {
      hint: 'Use a key printed by `solid init` / `solid api-keys create` (format sk_solid_…); keys are shown once.',
    });
  },

  /**
   * `role_denied`: `<what> needs the <floor> role or higher; this key has <has>.` (spec/consent.md
   * §role-floors).
   */
  roleDenied(what: string, floor: string, has: string): VerbError {
    return new VerbError('role_denied', `${what} needs the ${floor} role or higher; this key has ${has}.`, {
      hint: `Ask a user with the ${floor} role to run it or to approve it.`,
    });
  },

  /**
   * `nonce_invalid` with the one hint of every nonce refusal; `why` says what does not match,
   * `verb` (when known) is named in the hint instead of "the verb".
   */
  nonceInvalid(why: string, verb?: string): VerbError {
    return new VerbError('nonce_invalid', why, {
      hint: verb === undefined ? NONCE_HINT : NONCE_HINT.replace('the verb', verb),
    });
  },

  /**
   * `already_reverted`: `<label> was already reverted`, naming the reverting audit row when known.
   * `details` carries `audit_id` (and `revert_audit_id`).
   */
  alreadyReverted(label: string, auditId: number, by?: number): VerbError {
    return new VerbError(
      'already_reverted',
      by === undefined
        ? `${label} was already reverted.`
        : `${label} was already reverted (by audit row ${by}).`,
      {
        hint: 'Nothing to do. To redo the action, call its verb again.',
        details: by === undefined ? { audit_id: auditId } : { audit_id: auditId, revert_audit_id: by },
      },
    );
  },

  /**
   * `macro_invalid`: a macro that cannot be saved or run (missing step, unresolvable `$from`
   * path, blocked verb, stale resume token); `path` is the JSON Pointer at fault.
   */
  macroInvalid(message: string, path?: string, hint?: string): VerbError {
    return new VerbError('macro_invalid', message, {
      ...(path !== undefined ? { path } : {}),
      hint: hint ?? 'Fix the macro definition (macros.save) and try again.',
    });
  },

  /**
   * `invalid_input` at a JSON Pointer: `<pointer> <why>.` (`/limit is required.`; the root is
   * called "arguments"), `path` set to the pointer, the hint naming the verb whose input_schema
   * it breaks. The form of the dispatch input check (src/runtime/dispatch.ts), for verbs and
   * steps that check arguments themselves.
   */
  invalidInput(pointer: string, why: string, verb: string, details?: Record<string, unknown>): VerbError {
    return new VerbError('invalid_input', `${pointer || 'arguments'} ${why}.`, {
      path: pointer,
      hint: `Fix the argument at ${pointer || '/'} to match the input_schema of ${verb}.`,
      ...(details !== undefined ? { details } : {}),
    });
  },

  /**
   * `idempotency_key_in_use`: another request with this key is running (this process or another
   * node); retrying the same request later receives its result.
   */
  idempotencyKeyInUse(): VerbError {
    return new VerbError('idempotency_key_in_use', 'A request with this idempotency key is still running.', {
      hint: 'Wait for the first request to finish, then retry with the same key to receive its result.',
    });
  },

  /**
   * `daily_cap_exceeded`: the tenant's daily cap of `cls` actions is used up; `resetsAt` (ISO) is
   * the tenant's next midnight in `timeZone` (IANA), also in `details.resets_at` (HTTP
   * Retry-After) and `details.time_zone`. Spec: consent.md §caps.
   */
  capExceeded(cap: number, cls: string, resetsAt: string, timeZone = 'UTC'): VerbError {
    return new VerbError(
      'daily_cap_exceeded',
      `This tenant reached its daily cap of ${cap} ${cls} actions.`,
      {
        hint: `The cap resets at ${resetsAt} (the business's midnight, time zone ${timeZone}). An owner can raise it in the tenant settings.`,
        details: { cap, consent_class: cls, resets_at: resetsAt, time_zone: timeZone },
      },
    );
  },

  /** `invalid_request`: a `--trust-proxy` value the server cannot use; `message` says which. */
  trustProxy(message: string): VerbError {
    return new VerbError('invalid_request', message, { hint: TRUST_PROXY_HINT });
  },

  /** `origin_denied`: a browser request from another site (spec/transports.md §webmcp). */
  crossSite(message: string): VerbError {
    return new VerbError('origin_denied', message, { hint: SAME_PAGE_HINT });
  },
} as const;

/** The constructors `packRefusals` makes: one per declared reason, keyed by it. */
export type PackRefusals<T> = {
  readonly [K in keyof T & string]: ((message: string, options?: VerbErrorOptions) => VerbError) & {
    readonly reason: PackReason<K>;
  };
};

/**
 * A pack's own catalogue: for each reason of the pack's `reasons` table, a constructor that makes
 * the VerbError with that (typed) reason and, unless the call gives one, the declared hint.
 *
 * ```ts
 * const reasons = { out_of_stock: { status: 409, kind: 'conflict', summary: 'No copies left.', hint: 'Order it.' } };
 * const refuse = packRefusals(reasons);
 * throw refuse.out_of_stock(`"${title}" is out of stock.`);   // 409 on HTTP once the pack is installed
 * definePack({ …, reasons });
 * ```
 */
export function packRefusals<const T extends Readonly<Record<string, PackReasonSpec>>>(
  table: T,
): PackRefusals<T> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(table)) {
    const make = (message: string, options: VerbErrorOptions = {}) =>
      new VerbError(name as PackReason, message, {
        ...(spec.hint !== undefined ? { hint: spec.hint } : {}),
        ...options,
      });
    out[name] = Object.assign(make, { reason: name });
  }
  return Object.freeze(out) as PackRefusals<T>;
}
