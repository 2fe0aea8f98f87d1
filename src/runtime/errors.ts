/**
 * VerbError: the one error class of the runtime. A pipeline step or a handler throws it; dispatch
 * (the one place errors become envelopes) turns it into `{ ok: false, error: { reason, message,
 * hint } }` and audits it. Any other throw becomes `internal_error` with its cause logged only.
 *
 * Spec: spec/envelope.md §error, spec/reasons.md.
 */
import type { EnvelopeError } from '../spec/types.ts';
import type { Reason } from '../spec/reasons.ts';
import type { StoreTx } from '../store/store.ts';
import type { AuditRow } from './ledger/write/audit.ts';

/**
 * Runtime-internal: what dispatch records with the failure's own audit row, in the same store
 * write, after the failed transaction rolled back (transaction.commit records its steps this way).
 * Never on the wire.
 */
export interface FailureAudit {
  /** transaction_id stamped on the failure row. */
  transaction_id?: string;
  /** Extra writes in the failure row's store transaction (e.g. child rows pointing at `row`). */
  record?: (tx: StoreTx, row: AuditRow) => Promise<void>;
}

/**
 * Runtime-internal: the tenant a refused credential belongs to, when the presented API key names a
 * key id that exists (wrong secret or revoked key). That tenant then also gets an audit row of the
 * refusal, so its owner sees attempts with its keys (spec/audit.md §auth-failures). Never on the wire.
 */
export interface KeyAttribution {
  company_id: number;
  key_id: string;
  revoked: boolean;
  /** The secret was right but the key passed its expiry (owner's row `api_key.expired`). */
  expired?: boolean;
}

export interface VerbErrorOptions {
  hint?: string;
  path?: string;
  details?: Record<string, unknown>;
  cause?: unknown;
}

/**
 * The reason a VerbError may be built with. A literal must be a {@link Reason} (a core reason of
 * src/spec/reasons.ts or a pack's declared `PackReason`), so `new VerbError('not_fund', …)` does
 * not compile; a reason computed at run time (type `string`: relayed from a server, a step's
 * stored result) cannot be checked statically and passes as it is.
 */
export type ReasonArg<R extends string> = string extends R ? R : R extends Reason ? R : Reason;

/**
 * The runtime's error: `reason` (spec/reasons.md), a model-safe `message`, and optionally `hint`
 * (the next step), `path` (JSON Pointer of the argument at fault) and `details`. Refusals that
 * recur are built by the catalogue in src/runtime/refusals.ts (`refuse.*`).
 */
export class VerbError<R extends string = Reason> extends Error {
  override readonly name = 'VerbError';
  readonly reason: Reason;
  readonly hint?: string;
  readonly path?: string;
  readonly details?: Record<string, unknown>;
  /** Runtime-internal (see FailureAudit); set by the ledger, never serialized. */
  failureAudit?: FailureAudit;
  /** Runtime-internal (see KeyAttribution); set by authentication, never serialized. */
  keyAttribution?: KeyAttribution;

  constructor(reason: ReasonArg<R>, message: string, options: VerbErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason as Reason;
    if (options.hint !== undefined) this.hint = options.hint;
    if (options.path !== undefined) this.path = options.path;
    if (options.details !== undefined) this.details = options.details;
  }

  /** The wire form: reason, message, hint, path, details. Never the cause or the stack. */
  toEnvelopeError(): EnvelopeError {
    const e: EnvelopeError = { reason: this.reason, message: this.message };
    if (this.hint !== undefined) e.hint = this.hint;
    if (this.path !== undefined) e.path = this.path;
    if (this.details !== undefined) e.details = this.details;
    return e;
  }
}

/** True when `err` is a VerbError (also across module copies). */
export function isVerbError(err: unknown): err is VerbError {
  return (
    err instanceof VerbError ||
    (typeof err === 'object' &&
      err !== null &&
      (err as { name?: unknown }).name === 'VerbError' &&
      typeof (err as { reason?: unknown }).reason === 'string')
  );
}

/** How a caller passes an API key, on each transport (hints of auth_required and sandbox answers). */
export const HOW_TO_PASS_A_KEY =
  'Send an API key: Authorization: Bearer sk_solid_… over HTTP (REST and MCP), SOLID_API_KEY for `solid mcp`, --api-key or SOLID_API_KEY for the CLI, a dashboard login for WebMCP.';

/** Where API keys come from (hints of auth_required and sandbox answers). */
export const WHERE_KEYS_COME_FROM =
  'Keys are printed once, by `solid init` and by the first `solid serve --demo` (`npm start`); make another with `solid api-keys create --tenant <company_id> --user <user_id> --role <role>`.';
