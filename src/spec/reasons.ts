/**
 * The one table of envelope reason codes: HTTP status, CLI exit code, whether a retry of the
 * same request may succeed, and what kind of outcome it is. spec/reasons.md documents every entry
 * (a test checks both directions).
 *
 * `Reason` is the type of `VerbError.reason`: a core reason of this table, or a pack's own reason
 * (a {@link PackReason}). Business packs declare their snake_case reasons (e.g. `out_of_stock`) in
 * `definePack({ reasons })`; `installPack` stores them on the runtime's registry (a
 * {@link ReasonTable}), so transports answer them with the declared status. A reason nobody
 * declared maps to 422 / exit 1.
 */

export type ReasonKind =
  | 'ok'
  | 'pending'
  | 'input'
  | 'auth'
  | 'denied'
  | 'conflict'
  | 'not_found'
  | 'limit'
  | 'unavailable'
  | 'internal'
  | 'domain';

export interface ReasonInfo {
  status: number;
  /** CLI exit code: 2 input, 3 denied/auth, 4 pending, 5 not found, 6 conflict, 7 limit, 8 unavailable, 1 other. */
  exit: number;
  retryable: boolean;
  kind: ReasonKind;
  /** Is this a safety-layer denial (counts as a denial in reputation/telemetry)? */
  denial: boolean;
  summary: string;
}

const r = (
  status: number,
  exit: number,
  kind: ReasonKind,
  summary: string,
  opts: { retryable?: boolean; denial?: boolean } = {},
): ReasonInfo => ({
  status,
  exit,
  kind,
  summary,
  retryable: opts.retryable ?? false,
  denial: opts.denial ?? false,
});

/** The core reason table: every reason code the runtime answers with, its HTTP status, CLI exit code, kind and summary. spec/reasons.md */
export const REASONS = {
  // resolution and input
  unknown_verb: r(404, 5, 'not_found', 'No verb of that name is registered.'),
  invalid_input: r(400, 2, 'input', 'The arguments do not satisfy the verb input_schema.'),
  invalid_args: r(400, 2, 'input', 'The arguments are not valid JSON.'),
  identity_override: r(
    400,
    2,
    'input',
    'company_id or user_id appeared in the arguments; the runtime sets them from authentication.',
    { denial: true },
  ),
  invalid_request: r(400, 2, 'input', 'The request itself is malformed (options, headers, body).'),
  payload_too_large: r(413, 2, 'input', 'The request body exceeds the size limit.'),
  unsupported_media_type: r(415, 2, 'input', 'The request body is not JSON.'),
  headers_too_large: r(431, 2, 'input', 'The request headers exceed the size limit.'),
  // authentication and authorization
  auth_required: r(401, 3, 'auth', 'This verb needs an API key; the keyless sandbox may only read.'),
  auth_invalid: r(401, 3, 'auth', 'The credentials are unknown, revoked or malformed.'),
  key_expired: r(401, 3, 'auth', 'The API key has passed its expiry.'),
  session_invalid: r(401, 3, 'auth', 'The browser session is missing or expired.'),
  signin_failed: r(401, 3, 'auth', 'A passkey or authenticator-code sign-in did not verify.'),
  enrolment_invalid: r(
    401,
    3,
    'auth',
    'The enrolment link is unknown, used, expired, or its user is disabled.',
  ),
  passkey_unavailable: r(
    400,
    2,
    'input',
    'Passkeys need the server reached by a host name (WebAuthn refuses an IP address as relying party).',
  ),
  session_requires_human: r(
    403,
    3,
    'denied',
    'A browser session is opened only by a person signing in; an API key cannot open one.',
    { denial: true },
  ),
  csrf_failed: r(403, 3, 'denied', 'The CSRF token is missing or does not match the session.', {
    denial: true,
  }),
  origin_denied: r(403, 3, 'denied', 'The request Origin or Host is not allowed.', { denial: true }),
  tier_denied: r(403, 3, 'denied', "The tenant's subscription tier is below the verb's tier floor.", {
    denial: true,
  }),
  role_denied: r(403, 3, 'denied', "The caller's role is below the verb's role floor.", { denial: true }),
  blocked_verb: r(403, 3, 'denied', 'The verb name is on the blocklist and is never executed.', {
    denial: true,
  }),
  surface_denied: r(403, 3, 'denied', 'The verb is not exposed on this surface.', { denial: true }),
  scope_denied: r(403, 3, 'denied', "The verb is outside what the caller's credential is limited to.", {
    denial: true,
  }),
  tenant_suspended: r(
    403,
    3,
    'denied',
    'The tenant is suspended by its platform: none of its credentials acts until it is resumed.',
    { denial: true },
  ),
  platform_credential_required: r(
    403,
    3,
    'denied',
    'Provisioning takes a platform credential (pk_solid_…), and a platform credential acts only on provisioning.',
    { denial: true },
  ),
  export_required: r(
    409,
    6,
    'conflict',
    "A tenant is deleted only after an export that covers its audit chain's current head.",
  ),
  // consent
  dispatch_pending: r(
    202,
    4,
    'pending',
    'Human consent is needed; confirm with the nonce (and typed phrase).',
  ),
  phrase_mismatch: r(403, 3, 'denied', 'The typed phrase does not match the phrase shown, byte for byte.', {
    denial: true,
  }),
  nonce_required: r(400, 3, 'denied', 'confirm was sent without the nonce from the pending answer.', {
    denial: true,
  }),
  nonce_invalid: r(
    403,
    3,
    'denied',
    'The nonce is forged, tampered, for another tenant/user, or the arguments changed.',
    { denial: true },
  ),
  nonce_expired: r(403, 3, 'denied', 'The nonce is older than its time to live.', { denial: true }),
  nonce_replayed: r(403, 3, 'denied', 'The nonce was already used; each confirmation works once.', {
    denial: true,
  }),
  approval_rejected: r(403, 3, 'denied', 'A human rejected this pending dispatch.', { denial: true }),
  phrase_channel_human: r(
    403,
    3,
    'denied',
    'This tenant counts a typed phrase only from a channel a human types into; approve the pending approval there.',
    { denial: true },
  ),
  approval_superseded: r(
    409,
    6,
    'conflict',
    'The approval answered an attempt that is over: the same action completed by another path, or the call was withdrawn.',
    { denial: true },
  ),
  human_required: r(
    403,
    3,
    'denied',
    "Only a signed-in human may do this (approve, change consent settings); an agent's credential cannot.",
    { denial: true },
  ),
  approval_not_found: r(404, 5, 'not_found', 'No pending approval with that id for this tenant.'),
  approval_not_pending: r(409, 6, 'conflict', 'The approval was already decided or has expired.'),
  daily_cap_exceeded: r(429, 7, 'limit', "The tenant's daily cap for this consent class is used up.", {
    denial: true,
  }),
  // idempotency
  idempotency_key_invalid: r(
    400,
    2,
    'input',
    'The idempotency key is empty, too long or not printable ASCII.',
  ),
  idempotency_key_reused: r(
    422,
    6,
    'conflict',
    'The idempotency key was used with another verb or other arguments.',
  ),
  idempotency_key_in_use: r(409, 6, 'conflict', 'A request with this idempotency key is still running.', {
    retryable: true,
  }),
  // ledger
  not_found: r(404, 5, 'not_found', 'The entity does not exist for this tenant.'),
  already_reverted: r(409, 6, 'conflict', 'The action was already reverted.'),
  changed_since: r(
    409,
    6,
    'conflict',
    'The entity changed after the action being undone; revert the later change first or force.',
  ),
  not_revertible: r(409, 6, 'conflict', 'The audit row is not a completed write that can be reverted.'),
  revert_failed: r(
    409,
    6,
    'conflict',
    'The revert handler could not undo the action; manual intervention needed.',
  ),
  rollback_handle_invalid: r(
    400,
    3,
    'denied',
    'The rollback_handle is forged, altered or for another tenant.',
    { denial: true },
  ),
  transaction_not_found: r(404, 5, 'not_found', 'No such transaction for this tenant.'),
  transaction_not_open: r(409, 6, 'conflict', 'The transaction is committed, aborted or expired.'),
  transaction_expired: r(409, 6, 'conflict', 'The open transaction expired before commit.'),
  transaction_step_refused: r(
    422,
    2,
    'input',
    'The step cannot be appended (irreversible step not last, nested transaction, read verb).',
  ),
  transaction_step_failed: r(422, 1, 'domain', 'A step failed at commit; nothing was applied.'),
  // observe-and-learn
  cursor_invalid: r(400, 2, 'input', 'The cursor is forged, altered or belongs to another tenant.'),
  cursor_expired: r(410, 2, 'input', 'The cursor is older than the event retention.'),
  subscription_not_found: r(404, 5, 'not_found', 'No such subscription for this tenant.'),
  macro_not_found: r(404, 5, 'not_found', 'No such macro for this tenant.'),
  macro_invalid: r(
    400,
    2,
    'input',
    'The macro references a missing step, an unresolvable path or a blocked verb.',
  ),
  macro_step_failed: r(422, 1, 'domain', 'A macro step failed; the run stopped there.'),
  // infrastructure
  store_unavailable: r(
    503,
    8,
    'unavailable',
    'The database is unreachable, read-only or full; nothing was written.',
    { retryable: true },
  ),
  server_closing: r(
    503,
    8,
    'unavailable',
    'The server is shutting down; retry on another node or once it is back.',
    {
      retryable: true,
    },
  ),
  upstream_unavailable: r(502, 8, 'unavailable', 'The remote solid server could not be reached.', {
    retryable: true,
  }),
  cancelled: r(499, 1, 'internal', 'The caller cancelled the request.'),
  rate_limited: r(429, 7, 'limit', 'Too many requests; slow down.', { retryable: true }),
  result_too_large: r(
    422,
    7,
    'limit',
    "The verb's result exceeds what the transport sends in one message (MCP: 4 MiB); ask for less (filters, paging). A write refused so never commits.",
  ),
  internal_error: r(500, 1, 'internal', 'An unexpected error; it was logged with the audit id.', {
    retryable: true,
  }),
} as const satisfies Record<string, ReasonInfo>;

/** A reason code of the core table (REASONS). spec/reasons.md */
export type CoreReason = keyof typeof REASONS;

/**
 * A reason a business pack declared (e.g. `out_of_stock`): a string branded at the type level so a
 * typo in a core reason is a compile error while a pack's own reasons stay open. Make one with
 * {@link packReason} or take it from `packRefusals(table)` (src/runtime/refusals.ts).
 */
export type PackReason<N extends string = string> = N & { readonly [packReasonBrand]: true };
declare const packReasonBrand: unique symbol;

/** What `VerbError.reason` holds: a core reason of {@link REASONS} or a pack's declared reason. */
export type Reason = CoreReason | PackReason;

/** The kinds a pack reason may declare (never a safety-layer kind: auth, denied, pending). */
export type PackReasonKind = 'domain' | 'conflict' | 'not_found' | 'input' | 'limit';
const PACK_KINDS: ReadonlySet<string> = new Set(['domain', 'conflict', 'not_found', 'input', 'limit']);
const KIND_EXIT: Record<PackReasonKind, number | undefined> = {
  domain: undefined,
  conflict: 6,
  not_found: 5,
  input: 2,
  limit: 7,
};

/**
 * One reason a pack declares: HTTP status (default 422), kind (default `domain`), a one-sentence
 * summary (OpenAPI, docs), an optional default hint (used by `packRefusals`), an optional CLI exit
 * code (default from the kind, else 5 for 404, 6 for 409, 1 otherwise).
 */
export interface PackReasonSpec {
  status?: number;
  kind?: PackReasonKind;
  summary: string;
  hint?: string;
  exit?: number;
}

/** Is `name` a core reason of the runtime's table? */
export function isCoreReason(name: string): name is CoreReason {
  return Object.hasOwn(REASONS, name);
}

/** A pack reason by name, typed as such (no check at run time: the pack's table declares it). */
export function packReason<N extends string>(name: N): PackReason<N> {
  return name as PackReason<N>;
}

/**
 * Why a pack reason declaration is refused, or undefined when it is fine: not snake_case, a core
 * reason other than `not_found` redefined, no summary, a status outside 400–599, an unknown kind.
 */
export function packReasonProblem(name: string, spec: unknown): string | undefined {
  if (!/^[a-z][a-z0-9_]*$/.test(name)) return 'is not a snake_case reason code';
  if (isCoreReason(name) && REASONS[name].kind !== 'domain' && name !== 'not_found')
    return 'is a core reason of the runtime and cannot be redefined';
  const s = spec as Partial<PackReasonSpec> | null;
  if (s === null || typeof s !== 'object' || typeof s.summary !== 'string') return 'needs a summary';
  if (s.status !== undefined && !(Number.isInteger(s.status) && s.status >= 400 && s.status <= 599))
    return 'status must be an HTTP error status (400–599)';
  if (s.kind !== undefined && !PACK_KINDS.has(s.kind))
    return `kind must be one of ${[...PACK_KINDS].join(', ')}`;
  return undefined;
}

function packReasonInfo(spec: PackReasonSpec): ReasonInfo {
  const status = spec.status ?? 422;
  const kind = spec.kind ?? 'domain';
  const exit = spec.exit ?? KIND_EXIT[kind] ?? (status === 404 ? 5 : status === 409 ? 6 : 1);
  return r(status, exit, kind, spec.summary);
}

const UNKNOWN_DOMAIN: ReasonInfo = r(422, 1, 'domain', 'A domain rule refused the action.');

/** Reasons declared with the deprecated process-global {@link defineReasons}. */
const legacyReasons = new Map<string, ReasonInfo>();

/**
 * The reasons one runtime knows: the core table, then the reasons its packs declared
 * (`rt.registry.reasons`), then the deprecated global {@link defineReasons}. Two runtimes in one
 * process do not see each other's pack reasons.
 */
export class ReasonTable {
  readonly #declared = new Map<string, { info: ReasonInfo; owner: string; spec: PackReasonSpec }>();

  /**
   * Declare a pack's reasons. Throws TypeError on a bad declaration (see `packReasonProblem` in src/spec/reasons.ts)
   * or a reason another owner already declared differently. `not_found` is skipped (core).
   */
  declare(owner: string, reasons: Readonly<Record<string, PackReasonSpec>>): void {
    for (const [name, spec] of Object.entries(reasons)) {
      const problem = packReasonProblem(name, spec);
      if (problem !== undefined) throw new TypeError(`reason "${name}" ${problem}`);
      if (isCoreReason(name)) continue;
      const other = this.#declared.get(name);
      if (other !== undefined && other.owner !== owner && !sameDeclaration(other.spec, spec))
        throw new TypeError(`reason "${name}" is already declared differently by ${other.owner}`);
      this.#declared.set(name, { info: packReasonInfo(spec), owner, spec });
    }
  }

  /** Look up a reason: core table, declared pack reasons, the global legacy ones, the 422 default. */
  info(reason: string): ReasonInfo {
    return (
      (isCoreReason(reason) ? REASONS[reason] : undefined) ??
      this.#declared.get(reason)?.info ??
      legacyReasons.get(reason) ??
      UNKNOWN_DOMAIN
    );
  }

  /** Was `reason` declared by a pack of this runtime (or globally)? Core reasons are not. */
  has(reason: string): boolean {
    return this.#declared.has(reason) || legacyReasons.has(reason);
  }

  /** The owner (pack name) that declared `reason`, if any. */
  ownerOf(reason: string): string | undefined {
    return this.#declared.get(reason)?.owner;
  }

  /** Every declared (non-core) reason with its info, for docs and the OpenAPI document. */
  domain(): ReadonlyMap<string, ReasonInfo> {
    const out = new Map(legacyReasons);
    for (const [name, d] of this.#declared) out.set(name, d.info);
    return out;
  }

  /** How many non-core reasons are declared (part of the OpenAPI ETag). */
  get size(): number {
    return this.domain().size;
  }
}

function sameDeclaration(a: PackReasonSpec, b: PackReasonSpec): boolean {
  const x = packReasonInfo(a);
  const y = packReasonInfo(b);
  return x.status === y.status && x.kind === y.kind && x.exit === y.exit;
}

/**
 * Deprecated: declare domain reasons process-wide (every runtime of the process sees them). Packs
 * declare theirs in `definePack({ reasons })` instead, which `installPack` stores on the runtime.
 * Kept for code written against it. Throws if a name is not snake_case or collides with a core
 * reason.
 */
export function defineReasons(reasons: Record<string, PackReasonSpec>): void {
  for (const [name, info] of Object.entries(reasons)) {
    const problem = packReasonProblem(name, info);
    if (problem !== undefined) throw new TypeError(`reason "${name}" ${problem}`);
    if (isCoreReason(name)) continue;
    legacyReasons.set(name, packReasonInfo(info));
  }
}

/**
 * Look up a reason: core table, then `table` (a runtime's declared reasons) when given, then the
 * global legacy declarations, then the 422 default. Without a table only core and legacy reasons
 * are known: pass `rt.registry.reasons` wherever a runtime is at hand.
 */
export function reasonInfo(reason: string, table?: ReasonTable): ReasonInfo {
  if (table !== undefined) return table.info(reason);
  return (isCoreReason(reason) ? REASONS[reason] : undefined) ?? legacyReasons.get(reason) ?? UNKNOWN_DOMAIN;
}

/** Deprecated: the reasons declared with the global {@link defineReasons}; use `rt.registry.reasons.domain()`. */
export function domainReasonTable(): ReadonlyMap<string, ReasonInfo> {
  return legacyReasons;
}
