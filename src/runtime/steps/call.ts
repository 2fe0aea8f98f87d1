/**
 * One call as it goes through the pipeline: the mutable context every step reads and enriches
 * (built once per dispatch, one object), the typed views of it after the steps that establish a
 * field (`Resolved`: principal and verb are known), the `Step` contract, and the helpers the steps
 * share to audit and report an outcome.
 *
 * Spec: spec/envelope.md, spec/audit.md.
 */
import { performance } from 'node:perf_hooks';
import type { Envelope, Principal, VerbClass } from '../../spec/types.ts';
import type { CompiledVerb, DelegatedConsent } from '../verb.ts';
import type { Caller, DispatchOptions, DispatchOutcome, RuntimeCore } from '../core.ts';
import { redact, type AuditEntry, type AuditStatus } from '../ledger/write/audit.ts';
import { newEntry, type Consent } from '../ledger/write/execute.ts';
import { reasonInfo } from '../../spec/reasons.ts';
import { MAX_ARGS_DEPTH } from '../input-walk.ts';

/** Longest verb name echoed into messages and the audit log. */
export const MAX_NAME_IN_AUDIT = 200;

/**
 * The call's context. Fields marked "step" are set by that step; the typed views below make them
 * non-optional for the steps that run after it.
 */
export interface Call {
  readonly rt: RuntimeCore;
  readonly caller: Caller;
  /** The args as the transport passed them (untrusted). */
  readonly input: unknown;
  readonly options: DispatchOptions;
  /** The verb name asked for; the registered name after resolve-verb. */
  name: string;
  /** What was attempted (for a denial's audit row) until the input step; then the checked args. */
  args: Record<string, unknown>;
  /** Set by the input step: `args` passed the one walk and the input schema. */
  argsChecked: boolean;
  consentClass: VerbClass | null;
  /** resolve-principal */
  principal: Principal | undefined;
  /** resolve-verb */
  verb: CompiledVerb | undefined;
  /** floors: the consent a delegated verb resolved from its target. */
  delegated: DelegatedConsent | undefined;
  /** idempotency: the caller's key (callerKey) or a generated one. */
  idempotencyKey: string | undefined;
  callerKey: boolean;
  /** idempotency: the in-flight scope held while a caller-keyed write runs (released by the runner). */
  inflight: string | undefined;
  /** consent: what the execute step must burn or record. */
  consent: Consent | undefined;
  readonly t0: number;
  readonly now: Date;
  // The outcome the observe step reports (set by the step that answered, or by `fail`).
  ok: boolean;
  reason: string | null;
  latency: number;
  auditId: number | null;
  /** The answer is a stored receipt replayed (observers see surface `replay`). */
  replay: boolean;
}

/** After resolve-principal. */
export type WithPrincipal = Call & { principal: Principal };
/** After resolve-verb. */
export type Resolved = WithPrincipal & { verb: CompiledVerb };
/** After idempotency (writes). */
export type Keyed = Resolved & { idempotencyKey: string };
/** After consent (writes that may run). */
export type Consented = Keyed & { consent: Consent };

/** What a step gives back: nothing (go on) or the call's answer, now or later. */
export type StepResult = Envelope | undefined | Promise<Envelope | undefined>;

/**
 * One pipeline step. `run` is a method on purpose: a step typed on a later view (`Step<Resolved>`)
 * fits in the runner's `Step[]`, whose order is what establishes the view's fields. A step throws
 * VerbError to refuse; `always` steps run after the answer too (observe).
 */
export interface Step<C extends Call = Call> {
  readonly name: string;
  readonly always?: boolean;
  run(c: C): StepResult;
}

/** The context of a fresh call. One object literal with every field, so its shape never changes. */
export function newCall(
  rt: RuntimeCore,
  caller: Caller,
  verbName: unknown,
  input: unknown,
  options: DispatchOptions,
): Call {
  return {
    rt,
    caller,
    input,
    options,
    // A tool name is recorded as its verb's name from the first step on (even a refusal before resolve-verb).
    name: rt.registry.verbNameOf(typeof verbName === 'string' ? verbName : String(verbName)),
    args:
      input !== null && typeof input === 'object' && !Array.isArray(input)
        ? (input as Record<string, unknown>)
        : {},
    argsChecked: false,
    consentClass: null,
    principal: undefined,
    verb: undefined,
    delegated: undefined,
    idempotencyKey: undefined,
    callerKey: false,
    inflight: undefined,
    consent: undefined,
    t0: performance.now(),
    now: rt.clock(),
    ok: false,
    reason: null,
    latency: 0,
    auditId: null,
    replay: false,
  };
}

/**
 * The consent class whose daily cap a write counts against: a delegated verb's target's, none for
 * a cap-exempt verb, else the call's own class (READ and BLOCKED are never capped). Spec:
 * spec/consent.md §caps.
 */
export function capClassOf(c: Resolved): VerbClass | null {
  return c.delegated?.capClass ?? (c.verb.definition.cap_exempt === true ? null : c.consentClass);
}

/** Record the call's outcome for the observe step. */
export function settle(
  c: Call,
  ok: boolean,
  reason: string | null,
  latency: number,
  auditId: number | null,
): void {
  c.ok = ok;
  c.reason = reason;
  c.latency = latency;
  c.auditId = auditId;
}

/** The observers' view of a settled call. */
export function outcomeOf(c: Call): DispatchOutcome {
  const p = c.principal;
  return {
    verb: c.name,
    shape: c.verb?.shape ?? null,
    consent_class: c.consentClass ?? c.verb?.consentClass ?? null,
    company_id: p?.company_id ?? 0,
    user_id: p?.user_id ?? null,
    agent_type: p?.agent_type ?? null,
    ok: c.ok,
    reason: c.reason,
    denial: c.reason !== null && reasonInfo(c.reason, c.rt.registry.reasons).denial,
    latency_ms: c.latency,
    audit_id: c.auditId,
    surface: c.replay ? 'replay' : c.caller.surface,
    at: Date.now(),
  };
}

/** The audit entry of this call's outcome (the principal is known: a WithPrincipal call). */
export function entryFor(
  c: WithPrincipal,
  status: AuditStatus,
  reason: string | null,
  latency: number,
  extra: { entity?: { type: string; id: string }; parentId?: number | null; requiresApproval?: boolean } = {},
): AuditEntry {
  const verb = c.verb;
  const args = c.argsChecked ? c.args : attempted(c.args);
  const e = newEntry(
    c.name,
    verb,
    c.principal,
    c.now,
    status,
    reason,
    verb ? redact(args, verb.secretPaths) : attemptedArgs(args),
    latency,
  );
  if (c.consentClass !== null) e.consent_class = c.consentClass;
  if (extra.entity !== undefined) {
    e.entity_type = extra.entity.type;
    e.entity_id = extra.entity.id;
  }
  if (c.idempotencyKey !== undefined) e.idempotency_key = c.idempotencyKey;
  if (extra.parentId !== undefined) e.parent_id = extra.parentId;
  if (extra.requiresApproval) e.requires_approval = 1;
  return e;
}

const TOO_DEEP_MARKER: Record<string, unknown> = {
  '[TRUNCATED]': `arguments nested deeper than ${MAX_ARGS_DEPTH} levels`,
};

/**
 * The unchecked args of a call refused before (or at) the input step, as audited: a marker when
 * they are nested deeper than MAX_ARGS_DEPTH (walked only on this refusal path, iteratively, so
 * hostile input cannot overflow the stack).
 */
function attempted(args: Record<string, unknown>): Record<string, unknown> {
  const stack: Array<[unknown, number]> = [[args, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > MAX_ARGS_DEPTH) return TOO_DEEP_MARKER;
    for (const x of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>))
      if (x !== null && typeof x === 'object') stack.push([x, d + 1]);
  }
  return args;
}

/** Keys whose values are never stored for a name with no registered verb (its secret_fields are unknown). */
const SECRET_LOOKING_KEY = /pass|secret|token|api_?key|card|cvv|cvc|iban|ssn|private/i;
const MAX_ATTEMPTED_ARGS_BYTES = 16_384;

/**
 * The args of an attempt on an unregistered (e.g. blocked, hallucinated) name, as audited:
 * secret-looking keys redacted at any depth, and at most 16 KiB of JSON (else a size marker).
 * spec/consent.md §audit
 */
function attemptedArgs(args: Record<string, unknown>): Record<string, unknown> {
  const walk = (v: unknown, depth: number): unknown => {
    if (v === null || typeof v !== 'object') return v;
    if (depth > 8) return '[TRUNCATED]';
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v))
      out[k] = SECRET_LOOKING_KEY.test(k) ? '[REDACTED]' : walk(x, depth + 1);
    return out;
  };
  let out: Record<string, unknown>;
  try {
    out = walk(args, 0) as Record<string, unknown>;
    const size = Buffer.byteLength(JSON.stringify(out));
    if (size > MAX_ATTEMPTED_ARGS_BYTES) return { _truncated: true, bytes: size };
  } catch {
    return { _unserializable: true };
  }
  return out;
}
