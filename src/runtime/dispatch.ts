/**
 * THE pipeline. Every transport turns its request into one `dispatch(caller, verb, args,
 * options)` call and the envelope back into its own reply. The steps run in this fixed order
 * (ARCHITECTURE.md draws the same list; a test keeps them in sync):
 *
 *   1. resolve-principal  credentials → principal, or the sandbox for keyless reads
 *   2. blocklist          blocked_verb (global and tenant list, registered or not)
 *   3. resolve-verb       unknown_verb (hint: closest names)
 *   4. auth               auth_required (keyless caller, write verb)
 *   5. surface            surface_denied
 *   6. input              identity_override, invalid_input (with the JSON Pointer that failed)
 *   7. floors             tier_denied, role_denied (checked at preflight and again at execution)
 *   8. read               READ verbs run here against committed data; audit row buffered
 *   9. idempotency        idempotency_key_invalid / _reused / _in_use, or the stored receipt
 *  10. consent            dispatch_pending, nonce_required, nonce_invalid, nonce_expired,
 *                         phrase_mismatch, approval_rejected
 *  11. execute            ONE store transaction: nonce burn (nonce_replayed), daily cap
 *                         (daily_cap_exceeded), handler, audit row, events, outbox, revert data,
 *                         idempotency claim, signed receipt
 *  12. observe            hooks (reputation, telemetry); cannot change the outcome
 *
 * Any VerbError becomes `{ ok: false, error }`; any other throw becomes internal_error with the
 * cause logged only. Every outcome leaves an audit row. Spec: spec/envelope.md, spec/consent.md,
 * spec/receipts.md, spec/idempotency.md, spec/audit.md.
 */
import { performance } from 'node:perf_hooks';
import type {
  Envelope,
  EnvelopeError,
  Principal,
  Receipt,
  Role,
  Surface,
  VerbClass,
  WebmcpSurface,
} from '../spec/types.ts';
import type { Queryable, StoreTx } from '../store/store.ts';
import { StoreError } from '../store/store.ts';
import { reasonInfo } from '../spec/reasons.ts';
import { HOW_TO_PASS_A_KEY, VerbError, WHERE_KEYS_COME_FROM, isVerbError } from './errors.ts';
import type { CompiledVerb, DelegatedConsent, EmittedEvent, SystemVerbContext, VerbContext } from './verb.ts';
import { ROLE_RANK, TIER_RANK, runtimeContextMembers } from './verb.ts';
import type { Runtime } from './runtime.ts';
import {
  appendAudit,
  auditEntry,
  redact,
  wellFormedDeep,
  wellFormedText,
  type AuditEntry,
  type AuditRow,
  type AuditStatus,
} from './ledger/audit.ts';
import { appendEvents, eventsChannel } from './ledger/events.ts';
import {
  argsHash,
  checkIdempotencyKey,
  claimIdempotency,
  findIdempotency,
  fingerprint,
  generateIdempotencyKey,
} from './ledger/idempotency.ts';
import { sealRollbackHandle } from './ledger/rollback-handle.ts';
import { chainReceipt, signChainedReceipt } from './ledger/receipts.ts';
import { issueNonce, verifyNonce, type NoncePayload } from './consent/nonce.ts';
import { phraseHash, phrasesMatch } from './consent/typed-phrase.ts';
import { MAX_ARGS_DEPTH, describeIssue, issuePath, scanArgs } from './input-walk.ts';

/** Who calls and how: built by the transport from its own authentication. */
export interface Caller {
  /** The authenticated principal; undefined/null → the sandbox principal (reads only). */
  principal?: Principal | null;
  /** The transport surface, or 'internal' for runtime-internal calls (macros, tests). */
  surface: Surface | 'internal';
  /** WebMCP only: the page surface the call came from; the verb must list it in webmcp_surfaces (spec/transports.md §webmcp). */
  webmcpSurface?: WebmcpSurface;
  /** MCP only: the toolsets the server was started with; a verb they do not admit is surface_denied (spec/transports.md §mcp-toolsets). */
  toolsets?: ToolsetSelection;
  /**
   * Where a typed phrase in this call was typed, decided by the transport's own code — never read
   * from a request's args, body or headers: `human` for a channel a human types into (MCP
   * elicitation answered by the client's user, the dashboard session, the CLI's terminal prompt,
   * the WebMCP in-page dialog); absent = `agent`. Under the tenant setting `phrase_channel:
   * human` only a `human` call may carry a typed phrase and see one in a pending answer.
   * spec/consent.md §phrase-channel
   */
  phraseChannel?: PhraseChannel;
  signal?: AbortSignal;
  onProgress?: (done: number, total?: number, message?: string) => void;
  /**
   * The client address the transport saw (HTTP: `req.ip`, which honours `trustProxy`). Only
   * used to group repeated unauthenticated failures into one audit window (spec/audit.md
   * §auth-failure-windows); never part of authentication.
   */
  address?: string;
}

/** The verb categories (toolsets) an MCP server exposes; built by src/transports/mcp/toolsets.ts. */
export interface ToolsetSelection {
  /** The enabled toolset names, sorted. */
  readonly names: readonly string[];
  /** Is this verb reachable (its category is enabled, or it is a core verb)? */
  admits(verb: CompiledVerb): boolean;
}

/** Which kind of channel a call came through (Caller.phraseChannel). */
export type PhraseChannel = 'human' | 'agent';

/**
 * The phrase of a typed-phrase pending answer, for the transport that must show it to a human
 * (MCP elicitation) even when the answer withholds it from the agent (`phrase_channel: human`).
 * Held beside the envelope's `consent` object, never in it: it is lost in any serialisation, so
 * only in-process transport code can read it. spec/consent.md §phrase-channel
 */
const PENDING_PHRASES = new WeakMap<object, string>();

/** The phrase of a pending answer's typed-phrase gate (in-process only; see PENDING_PHRASES). */
export function pendingPhrase(envelope: Envelope): string | undefined {
  const c = envelope.consent;
  if (c === undefined) return undefined;
  return PENDING_PHRASES.get(c) ?? c.typed_phrase;
}

/** Per-call options beside the args (spec/consent.md §protocol, spec/idempotency.md). */
export interface DispatchOptions {
  confirm?: boolean;
  nonce?: string;
  typed_phrase?: string;
  idempotency_key?: string;
}

/** Names of the steps, in order (exported for the docs test). */
export const PIPELINE_STEPS = [
  'resolve-principal',
  'blocklist',
  'resolve-verb',
  'auth',
  'surface',
  'input',
  'floors',
  'read',
  'idempotency',
  'consent',
  'execute',
  'observe',
] as const;

/** What the observe hooks receive after every dispatch. */
export interface DispatchOutcome {
  verb: string;
  shape: string | null;
  consent_class: string | null;
  company_id: number;
  user_id: number | null;
  agent_type: string | null;
  ok: boolean;
  reason: string | null;
  denial: boolean;
  latency_ms: number;
  audit_id: number | null;
  surface: string;
  at: number;
}

interface State {
  name: string;
  verb?: CompiledVerb;
  principal?: Principal;
  args: Record<string, unknown>;
  consentClass: VerbClass | null;
  delegated?: DelegatedConsent;
  idempotencyKey?: string;
  callerKey: boolean;
  t0: number;
  now: Date;
}

const MAX_NAME_IN_AUDIT = 200;

/** Blocked names refused whatever the role or confirmation (spec/consent.md §blocklist). */
export { DEFAULT_BLOCKLIST } from './consent/blocklist.ts';

/**
 * Dispatch one verb call. Returns an envelope for every domain outcome; throws only for
 * programmer errors (never for bad input, denials or handler failures).
 */
export async function dispatch(
  rt: Runtime,
  caller: Caller,
  verbName: unknown,
  args: unknown,
  options: DispatchOptions = {},
): Promise<Envelope> {
  const st: State = {
    name: typeof verbName === 'string' ? verbName : String(verbName),
    // What was attempted, for the audit row of a denial before the input step (replaced by the checked args).
    args:
      args !== null && typeof args === 'object' && !Array.isArray(args)
        ? tooDeep(args)
          ? TOO_DEEP_MARKER
          : (args as Record<string, unknown>)
        : {},
    consentClass: null,
    callerKey: false,
    t0: performance.now(),
    now: rt.clock(),
  };
  const env = await runSteps(rt, st, caller, args, options);
  return st.principal?.sandbox === true ? sandboxAnswer(env, st.principal) : env;
}

/** Steps 1-12 (see the header); every failure through `fail`. */
async function runSteps(
  rt: Runtime,
  st: State,
  caller: Caller,
  args: unknown,
  options: DispatchOptions,
): Promise<Envelope> {
  try {
    // 1. resolve-principal
    st.principal = caller.principal ?? (await rt.sandboxPrincipal());
    // 2. blocklist
    if (await rt.isBlocked(st.name, st.principal.company_id)) {
      throw new VerbError(
        'blocked_verb',
        `The verb "${st.name.slice(0, MAX_NAME_IN_AUDIT)}" is blocked and is never executed, whatever the role or confirmation.`,
        {
          hint: 'Look for a deliberately named safe alternative with verbs.list (e.g. gdpr_delete_contact instead of customer_delete).',
        },
      );
    }
    // 3. resolve-verb
    const verb = rt.registry.get(st.name);
    if (verb === undefined) {
      const closest = rt.registry.closest(st.name);
      throw new VerbError(
        'unknown_verb',
        `No verb named "${st.name.slice(0, MAX_NAME_IN_AUDIT)}" is registered.`,
        {
          hint:
            closest.length > 0
              ? `Did you mean ${closest.join(', ')}? List verbs with verbs.list.`
              : 'List the available verbs with verbs.list.',
          details: { closest },
        },
      );
    }
    st.verb = verb;
    st.name = verb.name;
    st.consentClass = verb.consentClass;
    if (verb.consentClass === 'BLOCKED') {
      throw new VerbError(
        'blocked_verb',
        `The verb "${verb.name}" is declared BLOCKED and is never executed.`,
        { hint: 'Use a safe alternative listed by verbs.list.' },
      );
    }
    // 4. auth
    if (st.principal.sandbox && verb.isWrite) {
      throw new VerbError(
        'auth_required',
        `${verb.name} changes data and needs an API key; without a key only read verbs run (sandbox tenant).`,
        {
          hint: `${HOW_TO_PASS_A_KEY} ${WHERE_KEYS_COME_FROM}`,
        },
      );
    }
    // 5. surface
    const denied = surfaceDenied(verb, caller.surface, caller.webmcpSurface);
    if (denied !== undefined) throw denied;
    if (caller.toolsets !== undefined && !caller.toolsets.admits(verb)) {
      throw new VerbError(
        'surface_denied',
        `${verb.name} is in the toolset "${verb.category}", which this MCP server does not expose (enabled: ${caller.toolsets.names.join(', ')}).`,
        {
          hint: `Start the server with --toolsets ${[...caller.toolsets.names, verb.category].join(',')} (or SOLID_TOOLSETS), or --toolsets all.`,
          details: { toolset: verb.category, enabled: [...caller.toolsets.names] },
        },
      );
    }
    // 6. input
    st.args = checkArgs(verb, args);
    // 7. floors (and delegated consent resolution)
    if (verb.delegated) {
      st.delegated = await verb.definition.delegateConsent!(readContext(rt, st, caller), st.args);
      st.consentClass = st.delegated.consentClass;
    }
    checkFloors(st);
    // The tenant's buffered read rows go to the log before a write's rows and before a trail
    // reads it: audit_id order is answer order within a tenant (spec/audit.md §read-rows).
    if (verb.isWrite || verb.definition.shape === 'trail')
      await rt.auditBuffer.flushTenant(st.principal.company_id);
    // 8. read (detached verbs run here too, outside any store transaction: spec/shapes.md §macro, §subscribe)
    if (verb.definition.detached === true) return await runDetached(rt, st, caller, options);
    if (!verb.isWrite) return await runRead(rt, st, caller);
    // 9. idempotency
    const replay = await checkIdempotency(rt, st, options);
    if (replay !== undefined) return replay;
    return await runWrite(rt, st, caller, options);
  } catch (err) {
    return fail(rt, st, caller, err);
  }
}

/**
 * Mark an envelope answered under the keyless (sandbox) principal: `tenant: { id, sandbox: true }`
 * on every outcome, and on a tenant-scoped not-found (`not_found`, `approval_not_found`, … every
 * reason of kind not_found but unknown_verb) a hint saying that the sandbox, not the caller's business,
 * was read and how to pass a key. Pure. Spec: spec/envelope.md §tenant.
 */
export function sandboxAnswer(env: Envelope, sandbox: Principal): Envelope {
  const out: Envelope = { ...env, tenant: { id: sandbox.company_id, sandbox: true } };
  const reason = env.error?.reason;
  if (reason !== undefined && reason !== 'unknown_verb' && reasonInfo(reason).kind === 'not_found') {
    const read =
      `This call carried no API key, so it read the sandbox tenant (company ${sandbox.company_id}), not your business: ids of your data are not found there. ` +
      `${HOW_TO_PASS_A_KEY} ${WHERE_KEYS_COME_FROM}`;
    out.error = { ...env.error!, hint: env.error!.hint ? `${env.error!.hint} ${read}` : read };
  }
  return out;
}

export { MAX_ARGS_DEPTH };
const TOO_DEEP_MARKER: Record<string, unknown> = {
  '[TRUNCATED]': `arguments nested deeper than ${MAX_ARGS_DEPTH} levels`,
};

/** Is `value` nested deeper than MAX_ARGS_DEPTH? Iterative, so hostile input cannot overflow the stack. */
function tooDeep(value: unknown): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > MAX_ARGS_DEPTH) return true;
    for (const x of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>))
      if (x !== null && typeof x === 'object') stack.push([x, d + 1]);
  }
  return false;
}

/**
 * The surface_denied refusal when `verb` is not projected onto `surface` (or, on WebMCP, onto the
 * page surface `webmcpSurface`); undefined when it is. For a step of another verb, `step` ends the
 * message with why it is refused and points at its argument. Used by the pipeline's surface step
 * and by transactions.
 */
export function surfaceDenied(
  verb: CompiledVerb,
  surface: Surface | 'internal' | undefined,
  webmcpSurface: WebmcpSurface | undefined,
  step?: { context: string; path: string },
): VerbError | undefined {
  const context = step?.context ?? '';
  const at = step === undefined ? {} : { path: step.path };
  if (surface !== undefined && surface !== 'internal' && !verb.surfaces.includes(surface)) {
    return new VerbError('surface_denied', `${verb.name} is not exposed on ${surface}${context}.`, {
      ...at,
      hint: `It is available on: ${verb.surfaces.join(', ')}.`,
    });
  }
  if (surface === 'webmcp' && webmcpSurface !== undefined && !verb.webmcpSurfaces.includes(webmcpSurface)) {
    return new VerbError(
      'surface_denied',
      `${verb.name} is not exposed on the WebMCP ${webmcpSurface} surface${context}.`,
      { ...at, hint: `Its WebMCP surfaces: ${verb.webmcpSurfaces.join(', ')}.` },
    );
  }
  return undefined;
}

function checkArgs(verb: CompiledVerb, args: unknown): Record<string, unknown> {
  const a = args === undefined || args === null ? {} : args;
  if (typeof a !== 'object' || Array.isArray(a)) {
    throw new VerbError('invalid_input', 'The arguments must be a JSON object.', {
      path: '',
      hint: `See the input_schema of ${verb.name} (verbs.list or GET /api/v1/agent/verbs/${verb.name}).`,
    });
  }
  const issue = scanArgs(a);
  if (issue !== undefined) {
    const path = issuePath(a, issue);
    const { message, hint } = describeIssue(issue, path);
    throw new VerbError('invalid_input', message, { path, hint, details: { issue } });
  }
  const obj = a as Record<string, unknown>;
  for (const k of ['company_id', 'user_id'] as const) {
    if (k in obj) {
      throw new VerbError(
        'identity_override',
        `${k} may not be passed as an argument: the runtime sets it from your credentials.`,
        {
          path: `/${k}`,
          hint: `Remove ${k} from the arguments; to act for another tenant, use that tenant's API key.`,
        },
      );
    }
  }
  if (!verb.validate(obj)) {
    const e = verb.validateErrors()?.[0];
    let path = e?.instancePath ?? '';
    if (e?.keyword === 'required')
      path = `${path}/${(e.params as { missingProperty: string }).missingProperty}`;
    if (e?.keyword === 'additionalProperties')
      path = `${path}/${(e.params as { additionalProperty: string }).additionalProperty}`;
    const what =
      e?.keyword === 'required'
        ? 'is required'
        : e?.keyword === 'additionalProperties'
          ? 'is not an accepted argument'
          : (e?.message ?? 'is invalid');
    throw new VerbError('invalid_input', `${path || 'arguments'} ${what}.`, {
      path,
      hint: `Fix the argument at ${path || '/'} to match the input_schema of ${verb.name}.`,
      details: e === undefined ? undefined : { keyword: e.keyword, params: e.params },
    });
  }
  return obj;
}

function checkFloors(st: State): void {
  const p = st.principal!;
  const verb = st.verb!;
  const tierFloor = st.delegated?.tierFloor ?? verb.tierFloor;
  if (TIER_RANK[p.tier] < TIER_RANK[tierFloor]) {
    throw new VerbError(
      'tier_denied',
      `${verb.name} needs the ${tierFloor} tier; this tenant is on ${p.tier}.`,
      {
        hint: 'Upgrade the subscription tier (subscription_upgrade_tier) or use a verb available on your tier.',
      },
    );
  }
  const roleFloor = st.delegated?.roleFloor ?? verb.roleFloor;
  if (ROLE_RANK[p.role] < ROLE_RANK[roleFloor]) {
    throw new VerbError(
      'role_denied',
      `${verb.name} needs the ${roleFloor} role or higher; this key has ${p.role}.`,
      {
        hint: `Ask a user with the ${roleFloor} role to run it or to approve it.`,
      },
    );
  }
}

/** The handler context for reads (no events, no outbox). */
function readContext(rt: Runtime, st: State, caller: Caller, db: Queryable = rt.readView): SystemVerbContext {
  const verb = st.verb!;
  return {
    principal: st.principal!,
    db,
    now: st.now,
    signal: caller.signal ?? NEVER,
    ...runtimeContextMembers(rt, db),
    verb,
    emit() {
      throw new Error(`read verb ${verb.name} cannot emit events`);
    },
    outbox() {
      throw new Error(`read verb ${verb.name} cannot use the outbox`);
    },
    setRollback() {
      throw new Error(`read verb ${verb.name} cannot set a rollback`);
    },
    setEntity() {},
    surface: caller.surface,
    ...(caller.webmcpSurface !== undefined ? { webmcpSurface: caller.webmcpSurface } : {}),
    ...(caller.phraseChannel !== undefined ? { phraseChannel: caller.phraseChannel } : {}),
    progress: caller.onProgress ?? NOOP,
  };
}

const NEVER = new AbortController().signal;
const NOOP = () => {};

async function runRead(rt: Runtime, st: State, caller: Caller): Promise<Envelope> {
  const verb = st.verb!;
  let entity: { type: string; id: string } | undefined;
  const result = (await rt.store.read(async (q) => {
    const ctx = readContext(rt, st, caller, q);
    ctx.setEntity = (type, id) => {
      entity = { type, id: String(id) };
    };
    return verb.definition.handler(ctx, st.args);
  })) as Record<string, unknown>;
  rt.checkOutput(verb, result);
  const latency = performance.now() - st.t0;
  rt.auditBuffer.push(entryFor(st, 'completed', null, latency, { entity }));
  rt.observe(outcome(st, caller, true, null, latency, null));
  return { ok: true, verb: verb.name, result };
}

/**
 * A detached verb (VerbDefinition.detached) runs outside any store transaction or snapshot: it
 * may wait (long-poll) or dispatch other verbs, each of which passes every gate itself. A write
 * one must delegate consent with class null (no gate, no idempotency, no receipt at its level);
 * its audit row is written after the handler returns (a read one's is buffered like any read).
 */
async function runDetached(
  rt: Runtime,
  st: State,
  caller: Caller,
  options: DispatchOptions,
): Promise<Envelope> {
  const verb = st.verb!;
  if (verb.isWrite && st.consentClass !== null)
    throw new Error(`${verb.name}: a detached write verb must delegate consent with class null`);
  let entity: { type: string; id: string } | undefined;
  const ctx: VerbContext = {
    ...readContext(rt, st, caller),
    consentReply: { confirm: options.confirm, nonce: options.nonce, typed_phrase: options.typed_phrase },
  };
  ctx.setEntity = (type, id) => {
    entity = { type, id: String(id) };
  };
  const result = ((await verb.definition.handler(ctx, st.args)) ?? {}) as Record<string, unknown>;
  rt.checkOutput(verb, result);
  const latency = performance.now() - st.t0;
  const entry = entryFor(st, 'completed', null, latency, { entity });
  if (!verb.isWrite) {
    rt.auditBuffer.push(entry);
    rt.observe(outcome(st, caller, true, null, latency, null));
    return { ok: true, verb: verb.name, result };
  }
  const row = await rt.store.write(async (tx) => {
    const r = await appendAudit(tx, entry);
    tx.afterCommit(() => rt.afterWrite(r));
    return r;
  });
  rt.observe(outcome(st, caller, true, null, latency, row.audit_id));
  return { ok: true, verb: verb.name, result, audit_id: row.audit_id };
}

function principalScope(p: Principal): string {
  return `u:${p.user_id}`;
}

async function checkIdempotency(
  rt: Runtime,
  st: State,
  options: DispatchOptions,
): Promise<Envelope | undefined> {
  if (options.idempotency_key === undefined || options.idempotency_key === null) {
    st.idempotencyKey = generateIdempotencyKey();
    return undefined;
  }
  st.idempotencyKey = checkIdempotencyKey(options.idempotency_key);
  st.callerKey = true;
  const p = st.principal!;
  const stored = await rt.store.read((q) =>
    findIdempotency(q, p.company_id, principalScope(p), st.idempotencyKey!, st.now.toISOString()),
  );
  if (stored === undefined) return undefined;
  return signEnvelope(rt, p.company_id, replayOrRefuse(rt, st, stored));
}

/**
 * Sign the receipt in an envelope whose attestation is still unsigned (fresh writes and
 * replays). spec/receipts.md §attestation
 */
export async function signEnvelope(rt: Runtime, companyId: number, env: Envelope): Promise<Envelope> {
  const r = env.result as Receipt | undefined;
  if (r?.attestation === undefined) return env;
  const key = await rt.keys.signingKey(companyId);
  return { ...env, result: await signChainedReceipt(r, key) };
}

function replayOrRefuse(
  rt: Runtime,
  st: State,
  stored: { verb: string; fingerprint: string; audit_id: number | null; envelope: Envelope },
): Envelope {
  if (stored.fingerprint !== fingerprint(st.name, st.args)) {
    throw new VerbError(
      'idempotency_key_reused',
      `This idempotency key was already used for ${stored.verb === st.name ? 'other arguments' : `verb ${stored.verb}`}.`,
      {
        hint: 'Use a new idempotency key for a different operation; reuse a key only to retry the exact same call.',
        details: { original_audit_id: stored.audit_id },
      },
    );
  }
  const env: Envelope = { ...stored.envelope, replayed: true };
  if (env.result !== undefined) env.result = { ...env.result, replayed: true };
  const latency = performance.now() - st.t0;
  rt.auditBuffer.push(entryFor(st, 'replayed', null, latency, { parentId: stored.audit_id }));
  rt.observe({
    ...outcome(st, { surface: 'internal' }, true, null, latency, stored.audit_id),
    surface: 'replay',
  });
  return env;
}

/** The consent decision of a confirmed call (what the execute step must burn/consume). */
interface Consent {
  jti?: string;
  nonceExpires?: string;
  /**
   * Typed-phrase gate: the nonce's approvals row (created at preflight) is consumed in the
   * effect's transaction, only while still pending or approved. spec/consent.md §nonce
   */
  burnApproval?: boolean;
  approvalId?: string;
  approvedBy?: number;
  approvedAt?: string;
  requiresApproval: boolean;
}

async function consentGate(
  rt: Runtime,
  st: State,
  caller: Caller,
  options: DispatchOptions,
): Promise<Consent | Envelope> {
  const cls = st.consentClass;
  if (cls === null || cls === 'READ') return { requiresApproval: false };
  const verb = st.verb!;
  const p = st.principal!;
  const typed = cls === 'WRITE_FINANCIAL' || cls === 'IRREVERSIBLE';
  const phrase = typed ? (st.delegated ? st.delegated.phrase : verb.definition.phrase!(st.args)) : undefined;
  if (typed && (phrase === undefined || phrase === ''))
    throw new Error(`${verb.name}: typed-phrase class without a phrase`);
  // phrase_channel human: a typed phrase counts only from a human channel (spec/consent.md §phrase-channel).
  const humanOnly = typed && (await rt.phraseChannel(p.company_id)) === 'human';
  const hasNonce = options.nonce !== undefined && options.nonce !== null && options.nonce !== '';
  if (!hasNonce) {
    if (options.confirm === true) {
      throw new VerbError('nonce_required', 'confirm was sent without the nonce from the pending answer.', {
        hint: `Call ${verb.name} without confirm first; it answers dispatch_pending with a nonce. Then confirm with that nonce${typed ? ' and the typed phrase' : ''}.`,
      });
    }
    return pending(rt, st, caller, phrase, humanOnly);
  }
  if (options.confirm !== true) {
    // A nonce is the pending answer's token; only an explicit confirm=true spends it. A caller
    // sending confirm=false (or leaving it out) has not confirmed: nothing runs.
    throw new VerbError(
      'invalid_request',
      'A nonce confirms a pending call only together with confirm=true; nothing was run.',
      {
        hint: `To run ${verb.name}, call it again with the same arguments, confirm=true and the nonce${typed ? ' (and the typed phrase)' : ''}; to decline, do nothing — the nonce expires.`,
      },
    );
  }
  const payload: NoncePayload = verifyNonce(rt.secrets, options.nonce, {
    verb: verb.name,
    argsHash: argsHash(st.args),
    companyId: p.company_id,
    userId: p.user_id,
    nowMs: st.now.getTime(),
  });
  if (payload.k !== cls || (typed ? payload.p !== phraseHash(phrase!) : payload.p !== null)) {
    throw new VerbError('nonce_invalid', 'The nonce was issued for another consent gate or phrase.', {
      hint: `Call ${verb.name} again without confirm to get a fresh nonce.`,
    });
  }
  const consent: Consent = {
    jti: payload.j,
    nonceExpires: new Date(payload.e * 1000).toISOString(),
    requiresApproval: typed,
  };
  if (!typed) return consent;
  consent.burnApproval = true;
  if (options.typed_phrase === undefined || options.typed_phrase === null) {
    // No phrase: only an out-of-band decision can let this call through.
    const approval = await rt.store.read((q) =>
      q.get<Record<string, unknown>>(
        'SELECT approval_id, status, decided_by, decided_at FROM approvals WHERE jti = ? AND company_id = ?',
        [payload.j, p.company_id],
      ),
    );
    if (approval !== undefined) {
      consent.approvalId = approval.approval_id as string;
      if (approval.status === 'approved') {
        consent.approvedBy = Number(approval.decided_by);
        consent.approvedAt = approval.decided_at as string;
        return consent;
      }
      if (approval.status === 'rejected') throw approvalRejected(verb.name, consent.approvalId);
      if (approval.status === 'consumed') throw nonceReplayed(verb.name);
    }
    // Still waiting for the human: answer pending again with the same nonce — audited like the
    // first pending answer, so an agent polling for a decision leaves a row per attempt.
    const auditId = await recordPending(rt, st, caller, true);
    return pendingEnvelope(
      rt,
      st,
      caller,
      {
        class: cls,
        gate: 'typed_phrase',
        nonce: options.nonce!,
        expires_at: consent.nonceExpires!,
        summary: summaryOf(st),
        typed_phrase: phrase!,
        ...(humanOnly ? { phrase_channel: 'human' as const } : {}),
        ...(consent.approvalId ? { approval_id: consent.approvalId } : {}),
      },
      'Waiting for the typed phrase or an out-of-band approval.',
      auditId,
    );
  }
  if (humanOnly && caller.phraseChannel !== 'human') {
    // Refused whatever the phrase (matching or not: no oracle); nothing is consumed. A rejection
    // recorded by a human still wins (§approvals: deny wins).
    const approval = await rt.store.read((q) =>
      q.get<Record<string, unknown>>(
        'SELECT approval_id, status FROM approvals WHERE jti = ? AND company_id = ?',
        [payload.j, p.company_id],
      ),
    );
    const approvalId = approval?.approval_id as string | undefined;
    if (approval?.status === 'rejected') throw approvalRejected(verb.name, approvalId);
    throw phraseChannelRefusal(
      verb.name,
      st.delegated?.roleFloor ?? verb.roleFloor,
      approvalId,
      consent.nonceExpires!,
    );
  }
  if (!phrasesMatch(phrase!, options.typed_phrase)) {
    throw new VerbError(
      'phrase_mismatch',
      'The typed phrase does not match the phrase shown, character for character.',
      {
        hint: humanOnly
          ? 'Type the phrase exactly as it is shown where you type it (same case, spaces and letters).'
          : `The human must type exactly: ${phrase}`,
      },
    );
  }
  // A rejection or an earlier use of this nonce is found when the approval is consumed, in the
  // effect's own transaction (executeInTx): deny wins even against a decision made meanwhile.
  return consent;
}

/** Where a human approves an approval, in words for hints (spec/consent.md §phrase-channel). */
export function humanApprovalPlaces(approvalId: string | undefined): string {
  const id = approvalId ?? 'the pending approval';
  return `in the dashboard ("Waiting for you"), with \`solid approvals approve ${id}\` at a terminal, or in an MCP client that shows a confirmation form`;
}

/**
 * phrase_channel_human: a typed phrase arrived through an agent channel while the tenant counts
 * one only from a human channel. spec/consent.md §phrase-channel, spec/reasons.md
 */
export function phraseChannelRefusal(
  verbName: string,
  floor: string,
  approvalId: string | undefined,
  expiresAt: string,
): VerbError {
  return new VerbError(
    'phrase_channel_human',
    `This tenant counts a typed phrase only when a human types it where they approve; a phrase sent through this channel is not consent. Nothing ran${approvalId ? ` and approval ${approvalId} stays pending` : ''}.`,
    {
      hint: `Ask a user with the ${floor} role or higher to approve ${approvalId ?? 'the pending request'} ${humanApprovalPlaces(approvalId)}; then call ${verbName} again with the same arguments, confirm=true and the nonce (no typed_phrase) before ${expiresAt}.`,
      details: { ...(approvalId ? { approval_id: approvalId } : {}), expires_at: expiresAt },
    },
  );
}

function approvalRejected(verbName: string, approvalId: string | undefined): VerbError {
  return new VerbError(
    'approval_rejected',
    `A human rejected this ${verbName} request${approvalId ? ` (approval ${approvalId})` : ''}.`,
    {
      hint: 'Do not retry the same action; ask the human what they want instead.',
    },
  );
}

function nonceReplayed(verbName: string): VerbError {
  return new VerbError('nonce_replayed', 'This confirmation nonce was already used; each nonce works once.', {
    hint: `Call ${verbName} again without confirm for a new nonce.`,
  });
}

function summaryOf(st: State): string {
  const verb = st.verb!;
  if (st.delegated) return st.delegated.summary;
  return (
    verb.definition.summary?.(st.args) ??
    `Run ${verb.name} with ${JSON.stringify(redact(st.args, verb.secretPaths))}.`
  );
}

async function pending(
  rt: Runtime,
  st: State,
  caller: Caller,
  phrase: string | undefined,
  humanOnly: boolean,
): Promise<Envelope> {
  const verb = st.verb!;
  const p = st.principal!;
  const cls = st.consentClass!;
  const typed = phrase !== undefined;
  const issued = issueNonce(rt.secrets, {
    verb: verb.name,
    argsHash: argsHash(st.args),
    companyId: p.company_id,
    userId: p.user_id,
    consentClass: cls,
    phraseHash: typed ? phraseHash(phrase) : null,
    nowMs: st.now.getTime(),
    ttlSeconds: rt.options.nonceTtlSeconds,
  });
  const summary = summaryOf(st);
  // The preview runs before any consent is asked: when it finds the action impossible (an unknown
  // or foreign id, a domain rule), that answer is the call's answer — no nonce, no approval row.
  let preview: Record<string, unknown> | undefined;
  try {
    preview = await rt.previewFor(verb, st.principal!, st.args, caller);
  } catch (err) {
    const kind = isVerbError(err) ? reasonInfo(err.reason).kind : undefined;
    if (kind === 'not_found' || kind === 'domain' || kind === 'conflict') throw err;
    preview = undefined;
  }
  let approvalId: string | undefined;
  if (typed) approvalId = `apv_${issued.jti.slice(0, 16)}`;
  const consent = {
    class: cls,
    gate: typed ? ('typed_phrase' as const) : ('confirmation' as const),
    nonce: issued.nonce,
    expires_at: issued.expiresAt,
    summary,
    ...(typed ? { typed_phrase: phrase, approval_id: approvalId } : {}),
    ...(humanOnly ? { phrase_channel: 'human' as const } : {}),
    ...(preview !== undefined ? { preview } : {}),
  };
  const auditId = await recordPending(rt, st, caller, typed, async (tx) => {
    if (typed) {
      await tx.run(
        `INSERT INTO approvals (approval_id, company_id, jti, verb, args, consent_class, typed_phrase, summary, requested_by, requested_role, agent_type, status, created_at, expires_at, role_floor)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
        [
          approvalId,
          p.company_id,
          issued.jti,
          verb.name,
          JSON.stringify(redact(st.args, verb.secretPaths)),
          cls,
          phrase,
          summary,
          p.user_id,
          p.role,
          p.agent_type,
          st.now.toISOString(),
          issued.expiresAt,
          st.delegated?.roleFloor ?? verb.roleFloor,
        ],
      );
    }
  });
  return pendingEnvelope(rt, st, caller, consent, undefined, auditId);
}

/**
 * Append the `pending` / `dispatch_pending` audit row of a consent answer (after `before`, in the
 * same store transaction) and tell the observers. Returns the row's audit_id.
 */
async function recordPending(
  rt: Runtime,
  st: State,
  caller: Caller,
  typed: boolean,
  before?: (tx: StoreTx) => Promise<void>,
): Promise<number> {
  const latency = performance.now() - st.t0;
  const row = await rt.store.write(async (tx) => {
    await before?.(tx);
    const pendingRow = await appendAudit(
      tx,
      entryFor(st, 'pending', 'dispatch_pending', latency, { requiresApproval: typed }),
    );
    tx.afterCommit(() => rt.afterWrite(pendingRow));
    return pendingRow;
  });
  rt.observe(outcome(st, caller, false, 'dispatch_pending', latency, row.audit_id));
  return row.audit_id;
}

function pendingEnvelope(
  rt: Runtime,
  st: State,
  caller: Caller,
  given: NonNullable<Envelope['consent']>,
  message?: string,
  auditId?: number,
): Envelope {
  const verb = st.verb!;
  const typed = given.gate === 'typed_phrase';
  const floor = st.delegated?.roleFloor ?? verb.roleFloor;
  // phrase_channel human: an agent channel does not see the phrase (the in-process transport that
  // asks a human still can: pendingPhrase). spec/consent.md §phrase-channel
  const withheld = typed && given.phrase_channel === 'human' && caller.phraseChannel !== 'human';
  let consent = given;
  if (withheld) {
    const { typed_phrase: _hidden, ...rest } = given;
    consent = rest;
    PENDING_PHRASES.set(consent, given.typed_phrase!);
  }
  const how = withheld
    ? `This tenant counts a typed phrase only from a human where they type it, so the phrase is not shown here. Tell the human: ${consent.summary} Ask a user with the ${floor} role or higher to approve ${consent.approval_id} ${humanApprovalPlaces(consent.approval_id === undefined ? undefined : String(consent.approval_id))}; then call ${verb.name} again with the same arguments, confirm=true and the nonce (no typed_phrase).`
    : typed
      ? `Show the human this exact phrase: "${consent.typed_phrase}". When they type it, call ${verb.name} again with the same arguments, confirm=true, the nonce and typed_phrase set to what they typed. Or have a user with the ${floor} role or higher approve ${consent.approval_id} out of band (approvals.approve with the typed phrase, or \`solid approvals approve ${consent.approval_id}\`), then call ${verb.name} again with the same arguments, confirm=true and the nonce (no typed_phrase).`
      : `Ask the human to confirm: ${consent.summary} Then call ${verb.name} again with the same arguments, confirm=true and the nonce.`;
  const env: Envelope = {
    ok: false,
    verb: verb.name,
    error: {
      reason: 'dispatch_pending',
      message:
        message ??
        (typed
          ? `${verb.name} needs a human to type a confirmation phrase before it runs.`
          : `${verb.name} needs a human confirmation before it runs.`),
      hint: `${how} The nonce expires at ${consent.expires_at}.`,
    },
    consent,
  };
  if (auditId !== undefined) env.audit_id = auditId;
  void rt;
  return env;
}

async function runWrite(rt: Runtime, st: State, caller: Caller, options: DispatchOptions): Promise<Envelope> {
  const verb = st.verb!;
  const p = st.principal!;
  const scope = `${p.company_id}|${principalScope(p)}|${st.idempotencyKey}`;
  if (st.callerKey && !rt.inflight.acquire(scope)) {
    throw new VerbError('idempotency_key_in_use', 'A request with this idempotency key is still running.', {
      hint: 'Wait for the first request to finish, then retry with the same key to receive its result.',
    });
  }
  try {
    const consent = await consentGate(rt, st, caller, options);
    if ('ok' in consent) return consent;
    const committed = await rt.store.write(
      async (
        tx,
      ): Promise<
        { replay: Envelope } | { envelope: Envelope; row: AuditRow; secret?: Record<string, unknown> }
      > => {
        if (st.callerKey) {
          // Another node running the same key right now: answer in_use at once (spec/store.md §idempotency-across-nodes).
          if (tx.tryLockKey !== undefined && !(await tx.tryLockKey(scope))) {
            throw new VerbError(
              'idempotency_key_in_use',
              'A request with this idempotency key is still running.',
              {
                hint: 'Wait for the first request to finish, then retry with the same key to receive its result.',
              },
            );
          }
          const stored = await findIdempotency(
            tx,
            p.company_id,
            principalScope(p),
            st.idempotencyKey!,
            st.now.toISOString(),
          );
          if (stored !== undefined) return { replay: replayOrRefuse(rt, st, stored) };
        }
        const exec = await executeInTx(rt, tx, {
          verb,
          principal: p,
          args: st.args,
          now: st.now,
          caller,
          consentClass: st.consentClass,
          capClass: st.delegated?.capClass ?? (verb.definition.cap_exempt === true ? null : st.consentClass),
          roleFloor: st.delegated?.roleFloor ?? verb.roleFloor,
          consent,
          idempotencyKey: st.idempotencyKey!,
          t0: st.t0,
        });
        const receipt = chainReceipt(exec.receipt, exec.row);
        const envelope: Envelope = {
          ok: true,
          verb: verb.name,
          result: receipt,
          audit_id: exec.row.audit_id,
          idempotency_key: st.idempotencyKey!,
        };
        if (receipt.rollback_handle !== undefined) envelope.rollback_handle = receipt.rollback_handle;
        await claimIdempotency(tx, {
          companyId: p.company_id,
          principal: principalScope(p),
          key: st.idempotencyKey!,
          verb: verb.name,
          fingerprint: fingerprint(verb.name, st.args),
          auditId: exec.row.audit_id,
          envelope,
          nowIso: st.now.toISOString(),
          ttlSeconds: rt.options.idempotencyTtlSeconds,
        });
        return exec.secret === undefined
          ? { envelope, row: exec.row }
          : { envelope, row: exec.row, secret: exec.secret };
      },
    );
    if ('replay' in committed) return signEnvelope(rt, p.company_id, committed.replay);
    let signed = await signEnvelope(rt, p.company_id, committed.envelope);
    if (committed.secret !== undefined) signed = { ...signed, secret: committed.secret };
    const latency = performance.now() - st.t0;
    rt.observe(outcome(st, caller, true, null, latency, committed.row.audit_id));
    return signed;
  } finally {
    if (st.callerKey) rt.inflight.release(scope);
  }
}

/** Input of the shared write core (dispatch and transaction commit both use it). */
export interface ExecuteInput {
  verb: CompiledVerb;
  principal: Principal;
  args: Record<string, unknown>;
  now: Date;
  caller: Caller;
  consentClass: VerbClass | null;
  capClass: VerbClass | null;
  /** The role floor that applies (delegated floors differ from the verb's); default the verb's. Re-checked here. */
  roleFloor?: Role;
  consent: Consent;
  idempotencyKey: string | null;
  t0: number;
  transactionId?: string;
  parentId?: number;
}

export interface ExecuteResult {
  receipt: Receipt;
  row: AuditRow;
  result: Record<string, unknown>;
  /** The verb's `secret_result` members, taken out of the receipt: for this caller only, never stored. */
  secret?: Record<string, unknown>;
}

/**
 * Single use of a confirmation, inside the effect's transaction (spec/consent.md §nonce):
 * - a typed-phrase gate first consumes its approvals row, only while it is pending or approved —
 *   the row lock makes a concurrent second use or a concurrent rejection lose or win cleanly
 *   (nonce_replayed, approval_rejected); a decision recorded meanwhile becomes approved_by/at;
 * - then the nonce id goes into `nonces` (every burned nonce is there), whose primary key refuses
 *   a second use (nonce_replayed).
 */
async function burnNonce(
  tx: StoreTx,
  input: ExecuteInput,
  verbName: string,
  companyId: number,
  nowIso: string,
): Promise<void> {
  const c = input.consent;
  if (c.burnApproval) {
    const used = await tx.get<{ approval_id: string; decided_by: number | null; decided_at: string | null }>(
      `UPDATE approvals SET status = 'consumed' WHERE jti = ? AND company_id = ? AND status IN ('pending', 'approved') RETURNING approval_id, decided_by, decided_at`,
      [c.jti, companyId],
    );
    if (used !== undefined) {
      c.approvalId = used.approval_id;
      if (c.approvedBy === undefined && used.decided_by !== null && used.decided_by !== undefined) {
        c.approvedBy = Number(used.decided_by);
        c.approvedAt = used.decided_at ?? undefined;
      }
    } else {
      const row = await tx.get<{ approval_id: string; status: string }>(
        'SELECT approval_id, status FROM approvals WHERE jti = ? AND company_id = ?',
        [c.jti, companyId],
      );
      if (row?.status === 'rejected') throw approvalRejected(verbName, row.approval_id);
      if (row?.status === 'consumed') throw nonceReplayed(verbName);
      // expired by the sweep (clock skew between nodes) or never stored: the nonces row decides alone.
    }
  }
  try {
    await tx.run('INSERT INTO nonces (jti, company_id, consumed_at, expires_at) VALUES (?, ?, ?, ?)', [
      c.jti,
      companyId,
      nowIso,
      c.nonceExpires ?? nowIso,
    ]);
  } catch (err) {
    if (err instanceof StoreError && err.code === 'unique_violation') throw nonceReplayed(verbName);
    throw err;
  }
}

/**
 * Run one write inside `tx`: burn the nonce, count the daily cap, run the handler, append the
 * audit row, events, outbox and revert data. Throws VerbError on a denial or a domain failure
 * (the caller's transaction then rolls back everything).
 */
export async function executeInTx(rt: Runtime, tx: StoreTx, input: ExecuteInput): Promise<ExecuteResult> {
  const { verb, principal: p, args, now } = input;
  const nowIso = now.toISOString();
  // The role floor again, at execution (the floors step ran at preflight and at this call's start;
  // transaction commits and macros reach this point without it). spec/consent.md §role-floors
  const roleFloor = input.roleFloor ?? verb.roleFloor;
  if (ROLE_RANK[p.role] < ROLE_RANK[roleFloor]) {
    throw new VerbError(
      'role_denied',
      `${verb.name} needs the ${roleFloor} role or higher; this key has ${p.role}.`,
      {
        hint: `Ask a user with the ${roleFloor} role to run it or to approve it.`,
      },
    );
  }
  if (input.consent.jti !== undefined) await burnNonce(tx, input, verb.name, p.company_id, nowIso);
  const events: EmittedEvent[] = [];
  const outbox: Array<{ kind: string; payload: Record<string, unknown> }> = [];
  let rollback: { handle: string; data: Record<string, unknown> } | undefined;
  let entity: { type: string; id: string } | undefined;
  let link: { parent_id?: number; transaction_id?: string } = {};
  const auditId = await tx.nextAuditId();
  const ctx: SystemVerbContext & {
    setAuditLink(l: { parent_id?: number; transaction_id?: string }): void;
    auditId: number;
    tx: StoreTx;
  } = {
    principal: p,
    db: tx,
    tx,
    now,
    signal: input.caller.signal ?? NEVER,
    ...runtimeContextMembers(rt, tx),
    verb,
    idempotencyKey: input.idempotencyKey ?? undefined,
    auditId,
    emit(e) {
      events.push(e);
    },
    outbox(kind, payload) {
      outbox.push({ kind, payload });
    },
    setRollback(handle, data) {
      rollback = { handle: wellFormedText(handle), data };
    },
    setEntity(type, id) {
      entity = { type, id: String(id) };
    },
    setAuditLink(l) {
      link = l;
    },
    surface: input.caller.surface,
    ...(input.caller.webmcpSurface !== undefined ? { webmcpSurface: input.caller.webmcpSurface } : {}),
    ...(input.caller.phraseChannel !== undefined ? { phraseChannel: input.caller.phraseChannel } : {}),
    progress: input.caller.onProgress ?? NOOP,
  };
  // Well-formed text only: the receipt is signed over the RFC 8785 form of the result (which has
  // none for a lone surrogate) after the commit, and the idempotency record keeps it.
  const result = wellFormedDeep((await verb.definition.handler(ctx, args)) ?? {}) as Record<string, unknown>;
  // Secret result members (a new API key) leave the result before it is receipted, stored or
  // audited: only the envelope of this one call carries them (spec/envelope.md §secret).
  let secret: Record<string, unknown> | undefined;
  for (const k of verb.definition.secret_result ?? []) {
    if (!(k in result)) continue;
    (secret ??= {})[k] = result[k];
    delete result[k];
  }
  // The tenant-wide rows (daily counter, then the chain head) are locked as late as possible, after
  // the handler: on PostgreSQL every writer of the tenant queues on them until commit, so the
  // locked section is the tail of the transaction only. Over the cap → the whole write rolls back.
  if (input.capClass !== null && input.capClass !== 'READ' && input.capClass !== 'BLOCKED') {
    await rt.countDailyCap(tx, p.company_id, input.capClass, now);
  }
  const rollbackHandle =
    rollback !== undefined ? sealRollbackHandle(rt.secrets, rollback.handle, p.company_id, auditId) : null;
  const latency = performance.now() - input.t0;
  const entry = newEntry(verb.name, verb, p, now, 'completed', null, redact(args, verb.secretPaths), latency);
  entry.consent_class = input.consentClass;
  entry.entity_type = entity?.type ?? null;
  entry.entity_id = entity?.id ?? null;
  entry.is_reversible = rollback !== undefined && verb.revertible ? 1 : 0;
  entry.rollback_handle = rollbackHandle;
  entry.idempotency_key = input.idempotencyKey;
  entry.transaction_id = link.transaction_id ?? input.transactionId ?? null;
  entry.parent_id = link.parent_id ?? input.parentId ?? null;
  entry.requires_approval = input.consent.requiresApproval ? 1 : 0;
  entry.approved_by = input.consent.approvedBy ?? null;
  entry.approved_at = input.consent.approvedAt ?? null;
  const row = await appendAudit(tx, entry, auditId);
  if (rollback !== undefined) {
    await tx.run('INSERT INTO revert_data (audit_id, company_id, data) VALUES (?, ?, ?)', [
      auditId,
      p.company_id,
      JSON.stringify(rollback.data),
    ]);
  }
  if (events.length > 0) {
    await appendEvents(tx, p.company_id, events, { auditId, actor: actorOf(p), occurredAt: nowIso });
    tx.afterCommit(() => rt.store.notify(eventsChannel(p.company_id)));
  }
  for (const o of outbox) {
    await tx.run(
      `INSERT INTO outbox (company_id, kind, payload, audit_id, status, created_at, deliver_after) VALUES (?, ?, ?, ?, 'pending', ?, ?)`,
      [p.company_id, o.kind, JSON.stringify(o.payload), auditId, nowIso, nowIso],
    );
  }
  if (outbox.length > 0) tx.afterCommit(() => rt.kickOutbox());
  tx.afterCommit(() => rt.afterWrite(row));
  const receipt: Receipt = {
    ...result,
    status: typeof result.status === 'string' ? result.status : 'completed',
    audit_id: typeof result.audit_id === 'number' ? result.audit_id : auditId,
    timestamp: typeof result.timestamp === 'string' ? result.timestamp : nowIso,
  };
  if (input.idempotencyKey !== null) receipt.idempotency_key = input.idempotencyKey;
  if (rollbackHandle !== null) receipt.rollback_handle = rollbackHandle;
  rt.checkOutput(verb, receipt);
  return secret === undefined ? { receipt, row, result } : { receipt, row, result, secret };
}

export function actorOf(p: Principal): string {
  return `user:${p.user_id}${p.agent_type ? ` via ${p.agent_type}` : ''}`;
}

/**
 * A fresh audit entry with the attempt's identity filled in. Built as one object literal on
 * purpose: spreading large objects is a slow path in V8 (tens of µs), and this runs per dispatch.
 */
function newEntry(
  name: string,
  verb: CompiledVerb | undefined,
  p: Principal,
  now: Date,
  status: AuditStatus,
  reason: string | null,
  requestData: Record<string, unknown>,
  latency: number | null,
): AuditEntry {
  const e = auditEntry({
    company_id: p.company_id,
    now,
    action: name,
    category: verb?.category ?? 'unknown',
    status,
    principal: p,
  });
  e.shape = verb?.shape ?? null;
  e.consent_class = verb ? verb.consentClass : null;
  e.reason = reason;
  e.request_data = requestData;
  e.latency_ms = latency;
  return e;
}

function entryFor(
  st: State,
  status: AuditStatus,
  reason: string | null,
  latency: number,
  extra: { entity?: { type: string; id: string }; parentId?: number | null; requiresApproval?: boolean } = {},
): AuditEntry {
  const verb = st.verb;
  const e = newEntry(
    st.name,
    verb,
    st.principal!,
    st.now,
    status,
    reason,
    verb ? redact(st.args, verb.secretPaths) : attemptedArgs(st.args),
    latency,
  );
  if (st.consentClass !== null) e.consent_class = st.consentClass;
  if (extra.entity !== undefined) {
    e.entity_type = extra.entity.type;
    e.entity_id = extra.entity.id;
  }
  if (st.idempotencyKey !== undefined) e.idempotency_key = st.idempotencyKey;
  if (extra.parentId !== undefined) e.parent_id = extra.parentId;
  if (extra.requiresApproval) e.requires_approval = 1;
  return e;
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

function outcome(
  st: State,
  caller: Caller,
  ok: boolean,
  reason: string | null,
  latency: number,
  auditId: number | null,
): DispatchOutcome {
  const p = st.principal;
  return {
    verb: st.name,
    shape: st.verb?.shape ?? null,
    consent_class: st.consentClass ?? st.verb?.consentClass ?? null,
    company_id: p?.company_id ?? 0,
    user_id: p?.user_id ?? null,
    agent_type: p?.agent_type ?? null,
    ok,
    reason,
    denial: reason !== null && reasonInfo(reason).denial,
    latency_ms: latency,
    audit_id: auditId,
    surface: caller.surface,
    at: Date.now(),
  };
}

/** Turn any failure into an envelope and audit it. */
async function fail(rt: Runtime, st: State, caller: Caller, err: unknown): Promise<Envelope> {
  let error: EnvelopeError;
  if (isVerbError(err)) {
    error = err.toEnvelopeError();
  } else if (err instanceof StoreError && err.code === 'invalid_value') {
    // The caller's value, not the database: e.g. an id beyond PostgreSQL's bigint (spec/store.md §errors).
    error = {
      reason: 'invalid_input',
      message:
        'An argument holds a value the store cannot hold or compare (a number out of range, a malformed value); nothing was written.',
      hint: 'Check the values against the verb’s input_schema: ids are positive integers below 2^53.',
      path: '',
    };
    rt.logger.info({ err, verb: st.name }, 'store refused a value of the arguments');
  } else if (err instanceof StoreError && err.code !== 'unique_violation' && err.code !== 'append_only') {
    error = {
      reason: 'store_unavailable',
      message: 'The database is unavailable; nothing was written.',
      hint: 'Retry shortly; if it persists, check the database (disk, permissions, connection).',
    };
    rt.logger.error({ err, verb: st.name }, 'store error during dispatch');
  } else {
    error = {
      reason: 'internal_error',
      message: 'An internal error occurred; nothing was written. It has been logged.',
      hint: 'Retry later or report the audit_id to the operator.',
    };
    rt.logger.error({ err, verb: st.name }, 'internal error during dispatch');
  }
  const info = reasonInfo(error.reason);
  const status: AuditStatus =
    info.denial || info.kind === 'auth' || info.kind === 'denied'
      ? 'denied'
      : error.reason === 'approval_rejected'
        ? 'rejected'
        : 'failed';
  const latency = performance.now() - st.t0;
  let auditId: number | undefined;
  if (st.principal === undefined) {
    try {
      st.principal = await rt.sandboxPrincipal();
    } catch {
      /* no sandbox tenant: the failure is logged only */
    }
  }
  if (st.principal !== undefined && error.reason !== 'store_unavailable') {
    const entry = entryFor(st, status, error.reason, latency);
    const failureAudit = isVerbError(err) ? err.failureAudit : undefined;
    if (failureAudit?.transaction_id !== undefined) entry.transaction_id = failureAudit.transaction_id;
    try {
      if (st.verb?.isWrite || status === 'denied') {
        await rt.auditBuffer.flushTenant(st.principal.company_id);
        const row = await rt.store.write(async (tx) => {
          const row = await appendAudit(tx, entry);
          if (failureAudit?.record !== undefined) await failureAudit.record(tx, row);
          tx.afterCommit(() => rt.afterWrite(row));
          return row;
        });
        auditId = row.audit_id;
      } else {
        rt.auditBuffer.push(entry);
      }
    } catch (auditErr) {
      rt.logger.error({ err: auditErr, verb: st.name }, 'could not write the audit row of a failed dispatch');
      if (error.reason !== 'internal_error') {
        error = {
          reason: 'store_unavailable',
          message: 'The database is unavailable; nothing was written.',
          hint: 'Retry shortly.',
        };
      }
    }
  }
  rt.observe(outcome(st, caller, false, error.reason, latency, auditId ?? null));
  const env: Envelope = { ok: false, verb: st.name.slice(0, MAX_NAME_IN_AUDIT), error };
  if (auditId !== undefined) env.audit_id = auditId;
  if (st.idempotencyKey !== undefined && st.callerKey) env.idempotency_key = st.idempotencyKey;
  return env;
}
