/**
 * macros.save / macros.record / macros.list / macros.run (shape macro): a saved chain of verb calls,
 * replayed as one call. Later steps may take values from earlier steps' outputs with
 * `{"$from": "<JSON Pointer>"}` placeholders, the pointer read against the array of step records
 * (`/0/result/deal_id` = the deal_id field of step 0's result; `/1/audit_id`).
 *
 * A macro never bypasses a gate: macros.run dispatches every step through the full pipeline with
 * the caller's principal and transport surface (blocklist, surface, input, floors, consent, caps,
 * idempotency). A step that needs consent stops the run with status "pending", that step's
 * consent request and a `resume` token (HMAC-sealed, bound to tenant, user, run, step and attempt);
 * `macros.run { macro_id, resume }` continues from that step, confirmed with the call's own
 * consent options (confirm, nonce; a typed phrase only from the human through the transport, or an
 * out-of-band approval — never from arguments, so a model cannot type it over MCP). A step
 * that fails stops the run: the answer is ok=false, reason macro_step_failed, with error.details
 * holding the macro output (status "failed", failed_step, the per-step records, a resume token to
 * retry that step).
 *
 * Consent of the macro verbs themselves: save and record store runtime metadata only (employee
 * floor, no gate: running the macro re-gates every step); run delegates with class null (each step
 * is gated itself) and is detached (VerbDefinition.detached), so its steps run in their own store
 * transactions; list is READ.
 *
 * Reasons: macro_invalid (unknown or blocked verb, a macro verb as a step, a $from reference to a
 * step that does not run before it or a path that cannot resolve, redacted arguments in a recorded
 * trail, a stale or forged resume token), macro_not_found, macro_step_failed.
 * Spec: spec/shapes.md §macro.
 */
import { randomBytes } from 'node:crypto';
import type { Envelope, Principal } from '../spec/types.ts';
import type { Queryable } from '../store/store.ts';
import { parseJson } from '../store/store.ts';
import { defineSystemVerb, type CompiledVerb, type SystemVerbContext } from '../runtime/verb.ts';
import { VerbError } from '../runtime/errors.ts';
import type { RuntimeCore as Runtime } from '../runtime/core.ts';

/** Most steps in one macro. */
export const MAX_MACRO_STEPS = 50;
/** How long a paused or failed run can be resumed (seconds). */
export const MACRO_RUN_TTL_SECONDS = 24 * 3600;
/** Shapes never recorded from a trail (orientation calls, macros themselves). */
const NOT_RECORDED: ReadonlySet<string> = new Set(['macro', 'discovery', 'suggest']);
/** Members of a step record a $from pointer may start with. */
const STEP_MEMBERS: ReadonlySet<string> = new Set([
  'verb',
  'ok',
  'status',
  'audit_id',
  'result',
  'idempotency_key',
  'rollback_handle',
]);

export interface MacroStep {
  verb: string;
  args?: Record<string, unknown>;
}

export interface Macro {
  macro_id: string;
  name: string;
  description: string;
  steps: MacroStep[];
  version: number;
  created_by: number;
  created_at: string;
  updated_at: string;
}

/** One step of a run, as returned in `steps` (and as read by $from pointers). */
export interface StepRecord {
  index: number;
  verb: string;
  ok: boolean;
  status?: string;
  audit_id?: number;
  idempotency_key?: string;
  rollback_handle?: string;
  result?: Record<string, unknown>;
  error?: { reason: string; message: string; hint?: string; details?: Record<string, unknown> };
  consent?: Envelope['consent'];
}

const invalid = (message: string, path?: string, hint?: string) =>
  new VerbError('macro_invalid', message, {
    ...(path !== undefined ? { path } : {}),
    hint: hint ?? 'Fix the macro definition (macros.save) and try again.',
  });

/** Split an RFC 6901 JSON Pointer into unescaped tokens; undefined when malformed. */
export function pointerTokens(pointer: string): string[] | undefined {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return undefined;
  const tokens = pointer.slice(1).split('/');
  for (const t of tokens) if (/~[^01]|~$/.test(t)) return undefined;
  return tokens.map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Resolve a pointer against a document; `found: false` when a token does not exist. */
export function resolvePointer(doc: unknown, tokens: readonly string[]): { found: boolean; value?: unknown } {
  let cur: unknown = doc;
  for (const t of tokens) {
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9]\d*)$/.test(t) || Number(t) >= cur.length) return { found: false };
      cur = cur[Number(t)];
    } else if (cur !== null && typeof cur === 'object' && Object.prototype.hasOwnProperty.call(cur, t)) {
      cur = (cur as Record<string, unknown>)[t];
    } else {
      return { found: false };
    }
  }
  return { found: true, value: cur };
}

function isRef(v: unknown): v is { $from: string } {
  return (
    v !== null &&
    typeof v === 'object' &&
    !Array.isArray(v) &&
    Object.keys(v).length === 1 &&
    typeof (v as { $from?: unknown }).$from === 'string'
  );
}

/** Every $from placeholder in a value, with the JSON Pointer of its place in the args. */
function refsIn(
  value: unknown,
  at: string,
  out: Array<{ at: string; pointer: string }> = [],
): Array<{ at: string; pointer: string }> {
  if (isRef(value)) out.push({ at, pointer: value.$from });
  else if (Array.isArray(value)) value.forEach((v, i) => refsIn(v, `${at}/${i}`, out));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value))
      refsIn(v, `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, out);
  return out;
}

/** Replace $from placeholders with values from the step records; throws macro_invalid when one does not resolve. */
export function substitute(
  value: unknown,
  records: readonly StepRecord[],
  stepIndex: number,
  at = '',
): unknown {
  if (isRef(value)) {
    const r = resolvePointer(records, pointerTokens(value.$from) ?? ['\u0000']);
    if (!r.found || r.value === undefined) {
      throw invalid(
        `Step ${stepIndex}: the reference ${value.$from} does not resolve against the earlier steps' outputs.`,
        `/steps/${stepIndex}/args${at}`,
        'Point at a member the earlier step really returns (see its output in the steps of a previous run).',
      );
    }
    return r.value;
  }
  if (Array.isArray(value)) return value.map((v, i) => substitute(v, records, stepIndex, `${at}/${i}`));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substitute(v, records, stepIndex, `${at}/${k}`);
    return out;
  }
  return value;
}

/** Does a schema declare, for sure, that `tokens` cannot exist? (closed objects only) */
function schemaExcludes(schema: unknown, tokens: readonly string[]): boolean {
  let cur = schema as Record<string, unknown> | undefined;
  for (const t of tokens) {
    if (cur === undefined || cur === null || typeof cur !== 'object') return false;
    const props = cur.properties as Record<string, unknown> | undefined;
    if (props !== undefined && Object.prototype.hasOwnProperty.call(props, t)) {
      cur = props[t] as Record<string, unknown>;
      continue;
    }
    return props !== undefined && cur.additionalProperties === false && cur.patternProperties === undefined;
  }
  return false;
}

/**
 * Check a chain before it is stored: every verb registered, not blocked, not a macro verb; every
 * $from pointer well formed, naming an earlier step and a member a step record has (and, when the
 * earlier verb's output schema is closed, a field it declares). Throws macro_invalid.
 */
export async function validateChain(
  rt: Runtime,
  companyId: number,
  steps: readonly MacroStep[],
): Promise<void> {
  const verbs: CompiledVerb[] = [];
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i]!;
    if (await rt.isBlocked(step.verb, companyId))
      throw invalid(
        `Step ${i}: ${step.verb} is a blocked verb; a macro may not include it.`,
        `/steps/${i}/verb`,
      );
    const verb = rt.registry.get(step.verb);
    if (verb === undefined)
      throw invalid(
        `Step ${i}: no verb named ${step.verb.slice(0, 200)} is registered.`,
        `/steps/${i}/verb`,
        'List the verbs with verbs.list.',
      );
    if (verb.consentClass === 'BLOCKED')
      throw invalid(
        `Step ${i}: ${verb.name} is declared BLOCKED; a macro may not include it.`,
        `/steps/${i}/verb`,
      );
    if (verb.shape === 'macro')
      throw invalid(`Step ${i}: ${verb.name} is a macro verb; macros do not nest.`, `/steps/${i}/verb`);
    verbs.push(verb);
    for (const ref of refsIn(step.args ?? {}, '')) {
      const at = `/steps/${i}/args${ref.at}`;
      const tokens = pointerTokens(ref.pointer);
      if (tokens === undefined || tokens.length < 2)
        throw invalid(
          `Step ${i}: "${ref.pointer}" is not a JSON Pointer of the form /<step>/<member>/….`,
          at,
        );
      const [first, member, ...rest] = tokens as [string, string, ...string[]];
      if (!/^(0|[1-9]\d*)$/.test(first) || Number(first) >= i) {
        throw invalid(
          `Step ${i}: ${ref.pointer} refers to step ${first}, which does not run before step ${i}.`,
          at,
          'A step may only use the outputs of the steps before it.',
        );
      }
      if (!STEP_MEMBERS.has(member) || (member !== 'result' && rest.length > 0)) {
        throw invalid(
          `Step ${i}: ${ref.pointer} names "${member}", which a step record does not have (${[...STEP_MEMBERS].join(', ')}).`,
          at,
        );
      }
      if (
        member === 'result' &&
        rest.length > 0 &&
        schemaExcludes(verbs[Number(first)]!.outputSchema, rest)
      ) {
        throw invalid(
          `Step ${i}: ${ref.pointer} does not resolve: ${verbs[Number(first)]!.name}'s output has no /${rest.join('/')}.`,
          at,
        );
      }
    }
  }
}

function toMacro(r: Record<string, unknown>): Macro {
  return {
    macro_id: r.macro_id as string,
    name: r.name as string,
    description: r.description as string,
    steps: parseJson<MacroStep[]>(r.steps) ?? [],
    version: Number(r.version),
    created_by: Number(r.created_by),
    created_at: r.created_at as string,
    updated_at: r.updated_at as string,
  };
}

/** Load a macro of a tenant; throws macro_not_found. */
export async function getMacro(q: Queryable, companyId: number, macroId: string): Promise<Macro> {
  const r = await q.get<Record<string, unknown>>(
    'SELECT * FROM macros WHERE macro_id = ? AND company_id = ?',
    [macroId, companyId],
  );
  if (r === undefined)
    throw new VerbError('macro_not_found', `No macro ${macroId.slice(0, 64)} exists for this tenant.`, {
      hint: 'List the saved macros with macros.list.',
    });
  return toMacro(r);
}

/** Insert or replace (by name) a macro inside a write transaction. */
async function storeMacro(
  ctx: SystemVerbContext,
  name: string,
  description: string,
  steps: MacroStep[],
): Promise<Macro> {
  const p = ctx.principal;
  const now = ctx.now.toISOString();
  const existing = await ctx.db.get<Record<string, unknown>>(
    'SELECT * FROM macros WHERE company_id = ? AND name = ?',
    [p.company_id, name],
  );
  if (existing !== undefined) {
    const m = toMacro(existing);
    await ctx.db.run(
      'UPDATE macros SET description = ?, steps = ?, version = ?, updated_at = ? WHERE macro_id = ?',
      [description, JSON.stringify(steps), m.version + 1, now, m.macro_id],
    );
    return { ...m, description, steps, version: m.version + 1, updated_at: now };
  }
  const m: Macro = {
    macro_id: `mac_${randomBytes(9).toString('base64url')}`,
    name,
    description,
    steps,
    version: 1,
    created_by: p.user_id,
    created_at: now,
    updated_at: now,
  };
  await ctx.db.run(
    'INSERT INTO macros (macro_id, company_id, name, description, steps, version, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    [
      m.macro_id,
      p.company_id,
      m.name,
      m.description,
      JSON.stringify(m.steps),
      m.version,
      m.created_by,
      m.created_at,
      m.updated_at,
    ],
  );
  return m;
}

function savedOutput(m: Macro): Record<string, unknown> {
  return {
    macro_id: m.macro_id,
    status: 'saved',
    steps: [],
    name: m.name,
    description: m.description,
    version: m.version,
    chain: m.steps,
  };
}

const NAME = {
  type: 'string',
  minLength: 1,
  maxLength: 100,
  pattern: '^[A-Za-z0-9][A-Za-z0-9 _.:-]*$',
} as const;

const noGate = (roleFloor: 'employee' | 'read_only', summary: string) => ({
  consentClass: null,
  roleFloor,
  summary,
});

export const macrosSave = defineSystemVerb<{ name: string; description?: string; steps: MacroStep[] }>({
  name: 'macros.save',
  title: 'Save a macro',
  description:
    'Save a named chain of verb calls to replay later with macros.run. Each step is {verb, args}; a later step can take a value from an earlier step\'s output with {"$from": "/<step>/result/<field>"} (a JSON Pointer into the list of step records, e.g. "/0/result/deal_id"). Saving under an existing name replaces that macro (its version goes up). Blocked verbs and references to steps that do not run earlier are refused (macro_invalid).',
  shape: 'macro',
  category: 'macros',
  input: {
    type: 'object',
    properties: {
      name: NAME,
      description: { type: 'string', maxLength: 1000 },
      steps: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_MACRO_STEPS,
        items: {
          type: 'object',
          properties: { verb: { type: 'string', minLength: 1, maxLength: 200 }, args: { type: 'object' } },
          required: ['verb'],
          additionalProperties: false,
        },
      },
    },
    required: ['name', 'steps'],
    additionalProperties: false,
  },
  delegateConsent: async (_ctx, args) =>
    noGate('employee', `Save the macro "${args.name}" (${args.steps.length} steps).`),
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    await validateChain(ctx.runtime, ctx.principal.company_id, args.steps);
    const m = await storeMacro(
      ctx,
      args.name,
      args.description ?? '',
      args.steps.map((s) => ({ verb: s.verb, args: s.args ?? {} })),
    );
    ctx.setEntity('macro', m.macro_id);
    return savedOutput(m);
  },
});

function hasRedacted(v: unknown): boolean {
  if (v === '[REDACTED]') return true;
  if (Array.isArray(v)) return v.some(hasRedacted);
  if (v !== null && typeof v === 'object') return Object.values(v).some(hasRedacted);
  return false;
}

export const macrosRecord = defineSystemVerb<{
  name: string;
  description?: string;
  from_audit_id: number;
  to_audit_id: number;
}>({
  name: 'macros.record',
  title: 'Record a macro',
  description:
    'Save, as a macro, the calls you yourself completed from one audit row to another (inclusive, in trail order; take the ids from audit.trail). Only completed calls are kept, in order, with the arguments they were made with; refused, failed and pending attempts, orientation calls (verbs.list, suggest) and transaction steps are skipped. Refused when an argument was redacted as secret (it cannot be replayed) or when the range holds none of your completed calls.',
  shape: 'macro',
  category: 'macros',
  input: {
    type: 'object',
    properties: {
      name: NAME,
      description: { type: 'string', maxLength: 1000 },
      from_audit_id: { type: 'integer', minimum: 1 },
      to_audit_id: { type: 'integer', minimum: 1 },
    },
    required: ['name', 'from_audit_id', 'to_audit_id'],
    additionalProperties: false,
  },
  delegateConsent: async (_ctx, args) =>
    noGate(
      'employee',
      `Record the macro "${args.name}" from audit rows ${args.from_audit_id}–${args.to_audit_id}.`,
    ),
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const p = ctx.principal;
    // The range is read in trail order, (created_at, audit_id): a read's row gets its audit_id when
    // the read-audit buffer flushes, its created_at when it ran.
    const bound = async (auditId: number, path: string) => {
      const b = await ctx.db.get<{ created_at: string }>(
        'SELECT created_at FROM audit_log WHERE audit_id = ? AND company_id = ?',
        [auditId, p.company_id],
      );
      if (b === undefined)
        throw invalid(
          `No audit row ${auditId} exists for this tenant.`,
          path,
          'Take both ids from audit.trail.',
        );
      return b.created_at;
    };
    const fromAt = await bound(args.from_audit_id, '/from_audit_id');
    const toAt = await bound(args.to_audit_id, '/to_audit_id');
    const rows = await ctx.db.all<Record<string, unknown>>(
      `SELECT audit_id, action_type, shape, request_data FROM audit_log
       WHERE company_id = ? AND user_id = ? AND created_at >= ? AND created_at <= ?
         AND (created_at > ? OR audit_id >= ?) AND (created_at < ? OR audit_id <= ?)
         AND status = 'completed' AND shape IS NOT NULL AND parent_id IS NULL AND transaction_id IS NULL
       ORDER BY created_at, audit_id LIMIT ?`,
      [
        p.company_id,
        p.user_id,
        fromAt,
        toAt,
        fromAt,
        args.from_audit_id,
        toAt,
        args.to_audit_id,
        MAX_MACRO_STEPS * 4,
      ],
    );
    const steps: MacroStep[] = [];
    for (const r of rows) {
      if (NOT_RECORDED.has(r.shape as string)) continue;
      const data = parseJson<Record<string, unknown>>(r.request_data) ?? {};
      if (hasRedacted(data)) {
        throw invalid(
          `Audit row ${Number(r.audit_id)} (${r.action_type as string}) had secret arguments, which were redacted and cannot be replayed.`,
          undefined,
          'Record a range without that call, or save the macro with macros.save and supply the secret at run time with override_args.',
        );
      }
      steps.push({ verb: r.action_type as string, args: data });
    }
    if (steps.length === 0) {
      throw invalid(
        `No completed call of yours lies between audit rows ${args.from_audit_id} and ${args.to_audit_id}.`,
        undefined,
        'Find your own calls with audit.trail (actor = your user id).',
      );
    }
    if (steps.length > MAX_MACRO_STEPS)
      throw invalid(
        `The range holds ${steps.length} calls; a macro has at most ${MAX_MACRO_STEPS}.`,
        undefined,
        'Record a narrower range.',
      );
    await validateChain(ctx.runtime, p.company_id, steps);
    const m = await storeMacro(
      ctx,
      args.name,
      args.description ?? `Recorded from audit rows ${args.from_audit_id}–${args.to_audit_id}.`,
      steps,
    );
    ctx.setEntity('macro', m.macro_id);
    return {
      ...savedOutput(m),
      recorded_from: {
        from_audit_id: args.from_audit_id,
        to_audit_id: args.to_audit_id,
        calls: steps.length,
      },
    };
  },
});

export const macrosList = defineSystemVerb<{ limit?: number }>({
  name: 'macros.list',
  title: 'List macros',
  description:
    "List this tenant's saved macros: id, name, description, version and the verbs of each step, newest first. Run one with macros.run.",
  shape: 'macro',
  category: 'macros',
  consent: 'READ',
  input: {
    type: 'object',
    properties: { limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
    additionalProperties: false,
  },
  output: {
    type: 'object',
    description: "The tenant's saved macros (the listing form of the macro shape).",
    properties: {
      macros: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            macro_id: { type: 'string' },
            name: { type: 'string' },
            description: { type: 'string' },
            version: { type: 'integer', minimum: 1 },
            verbs: { type: 'array', items: { type: 'string' } },
            created_by: { type: 'integer' },
            updated_at: { type: 'string', format: 'date-time' },
          },
          required: ['macro_id', 'name', 'version', 'verbs'],
        },
      },
      total: { type: 'integer', minimum: 0 },
    },
    required: ['macros', 'total'],
  },
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const rows = await ctx.db.all<Record<string, unknown>>(
      'SELECT * FROM macros WHERE company_id = ? ORDER BY updated_at DESC, macro_id LIMIT ?',
      [ctx.principal.company_id, args.limit ?? 50],
    );
    const total = await ctx.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM macros WHERE company_id = ?', [
      ctx.principal.company_id,
    ]);
    return {
      macros: rows.map(toMacro).map((m) => ({
        macro_id: m.macro_id,
        name: m.name,
        description: m.description,
        version: m.version,
        verbs: m.steps.map((s) => s.verb),
        created_by: m.created_by,
        updated_at: m.updated_at,
      })),
      total: Number(total?.n ?? 0),
    };
  },
});

interface RunArgs {
  macro_id: string;
  override_args?: Record<string, Record<string, unknown>>;
  resume?: string;
}

interface RunState {
  run_id: string;
  version: number;
  next_step: number;
  attempt: number;
  records: StepRecord[];
  overrides: Record<string, Record<string, unknown>>;
  created_at: string;
}

interface ResumePayload {
  c: number;
  u: number;
  r: string;
  i: number;
  a: number;
}

function sealResume(rt: Runtime, p: Principal, run: RunState): string {
  return rt.secrets.sealToken('cursor', 'mr1', {
    c: p.company_id,
    u: p.user_id,
    r: run.run_id,
    i: run.next_step,
    a: run.attempt,
  } satisfies ResumePayload as unknown as Record<string, unknown>);
}

async function openResume(
  rt: Runtime,
  q: Queryable,
  p: Principal,
  macro: Macro,
  token: string,
  nowIso: string,
): Promise<RunState> {
  const t = rt.secrets.openToken<ResumePayload>('cursor', 'mr1', token);
  const stale = () =>
    invalid(
      'The resume token is not valid for this macro, tenant and user, or the run already moved on.',
      '/resume',
      'Use the resume token of the latest macros.run answer for this run, or start a new run without resume.',
    );
  if (t === undefined || t.c !== p.company_id || t.u !== p.user_id || typeof t.r !== 'string') throw stale();
  const r = await q.get<Record<string, unknown>>(
    'SELECT * FROM macro_runs WHERE run_id = ? AND company_id = ? AND user_id = ?',
    [t.r, p.company_id, p.user_id],
  );
  if (
    r === undefined ||
    r.macro_id !== macro.macro_id ||
    r.status === 'completed' ||
    Number(r.next_step) !== t.i ||
    Number(r.attempt) !== t.a ||
    (r.expires_at as string) <= nowIso
  )
    throw stale();
  if (Number(r.version) !== macro.version)
    throw invalid(
      `The macro changed (version ${macro.version}) since this run paused at version ${Number(r.version)}.`,
      '/resume',
      'Start a new run.',
    );
  return {
    run_id: r.run_id as string,
    version: Number(r.version),
    next_step: Number(r.next_step),
    attempt: Number(r.attempt),
    records: parseJson<StepRecord[]>(r.outputs) ?? [],
    overrides: parseJson<Record<string, Record<string, unknown>>>(r.override_args) ?? {},
    created_at: r.created_at as string,
  };
}

async function saveRun(
  rt: Runtime,
  p: Principal,
  macro: Macro,
  run: RunState,
  status: 'pending' | 'failed',
  now: Date,
): Promise<void> {
  const nowIso = now.toISOString();
  const expires = new Date(now.getTime() + MACRO_RUN_TTL_SECONDS * 1000).toISOString();
  await rt.store.write(
    (tx) =>
      tx.run(
        `INSERT INTO macro_runs (run_id, company_id, user_id, macro_id, version, status, next_step, attempt, outputs, override_args, created_at, updated_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, next_step = excluded.next_step, attempt = excluded.attempt,
           outputs = excluded.outputs, updated_at = excluded.updated_at, expires_at = excluded.expires_at`,
        [
          run.run_id,
          p.company_id,
          p.user_id,
          macro.macro_id,
          macro.version,
          status,
          run.next_step,
          run.attempt,
          JSON.stringify(run.records),
          JSON.stringify(run.overrides),
          run.created_at,
          nowIso,
          expires,
        ],
      ),
    { label: 'macros.run' },
  );
}

function recordOf(index: number, verb: string, env: Envelope): StepRecord {
  const rec: StepRecord = { index, verb, ok: env.ok };
  const result = env.result as Record<string, unknown> | undefined;
  if (typeof result?.status === 'string') rec.status = result.status;
  if (env.audit_id !== undefined) rec.audit_id = env.audit_id;
  if (env.idempotency_key !== undefined) rec.idempotency_key = env.idempotency_key;
  if (env.rollback_handle !== undefined) rec.rollback_handle = env.rollback_handle;
  if (result !== undefined) rec.result = result;
  if (env.error !== undefined) rec.error = env.error;
  if (env.consent !== undefined) rec.consent = env.consent;
  return rec;
}

export const macrosRun = defineSystemVerb<RunArgs>({
  name: 'macros.run',
  title: 'Run a macro',
  description:
    'Run a saved macro: every step goes through the full pipeline as if you called it (role, consent, caps…), and the answer lists one record per step (its receipt or output). override_args replaces arguments per step: {"<step index>": {arg: value}}. When a step needs human consent the run pauses with status "pending", that step\'s consent request (summary, nonce, typed_phrase, approval_id) and resume.token: call macros.run again with macro_id and resume (the token), confirming the paused step the way you confirm any verb (confirm + nonce in the call options; a typed phrase comes from the human — the CLI prompt, MCP elicitation — or from an out-of-band approval of approval_id, never from your arguments). A failing step stops the run (reason macro_step_failed; error.details.failed_step says which, error.details.resume.token retries it).',
  shape: 'macro',
  category: 'macros',
  input: {
    type: 'object',
    properties: {
      macro_id: { type: 'string', minLength: 1, maxLength: 64 },
      override_args: {
        type: 'object',
        propertyNames: { pattern: '^(0|[1-9][0-9]?)$' },
        additionalProperties: { type: 'object' },
        description: 'Arguments to replace, per step index.',
      },
      resume: {
        type: 'string',
        minLength: 1,
        maxLength: 2000,
        description: 'resume.token of a paused or failed run.',
      },
    },
    required: ['macro_id'],
    additionalProperties: false,
  },
  delegateConsent: async (_ctx, args) =>
    noGate('read_only', `Run the macro ${args.macro_id}; each step asks for its own consent.`),
  detached: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const rt = ctx.runtime;
    const p = ctx.principal;
    const macro = await getMacro(ctx.db, p.company_id, args.macro_id);
    ctx.setEntity('macro', macro.macro_id);
    let run: RunState;
    if (args.resume !== undefined) {
      run = await openResume(rt, ctx.db, p, macro, args.resume, ctx.now.toISOString());
      if (args.override_args !== undefined)
        throw new VerbError(
          'invalid_input',
          'override_args are fixed when a run starts; a resumed run keeps them.',
          { path: '/override_args' },
        );
      run.records = run.records.slice(0, run.next_step);
    } else {
      const overrides = args.override_args ?? {};
      for (const k of Object.keys(overrides)) {
        if (Number(k) >= macro.steps.length)
          throw invalid(
            `override_args names step ${k}; the macro has ${macro.steps.length} steps.`,
            `/override_args/${k}`,
          );
      }
      run = {
        run_id: `mr_${randomBytes(9).toString('base64url')}`,
        version: macro.version,
        next_step: 0,
        attempt: 0,
        records: [],
        overrides,
        created_at: ctx.now.toISOString(),
      };
    }
    const caller = {
      principal: p,
      surface: ctx.surface ?? ('internal' as const),
      signal: ctx.signal,
      ...(ctx.webmcpSurface !== undefined ? { webmcpSurface: ctx.webmcpSurface } : {}),
      // The consent reply relayed below came through this call's own transport: same channel.
      ...(ctx.phraseChannel !== undefined ? { phraseChannel: ctx.phraseChannel } : {}),
    };
    const start = run.next_step;
    for (let i = start; i < macro.steps.length; i++) {
      const step = macro.steps[i]!;
      let env: Envelope;
      try {
        const stepArgs = substitute(
          { ...(step.args ?? {}), ...(run.overrides[String(i)] ?? {}) },
          run.records,
          i,
        );
        const options = {
          idempotency_key: `${run.run_id}.${i}`,
          // The paused step is confirmed with the consent reply of THIS call (transport options,
          // never arguments): a phrase reaches it only from the human (spec/consent.md §protocol).
          ...(i === start && args.resume !== undefined && ctx.consentReply !== undefined
            ? ctx.consentReply
            : {}),
        };
        env = await rt.dispatch(caller, step.verb, stepArgs, options);
      } catch (err) {
        if (!(err instanceof VerbError)) throw err;
        env = { ok: false, verb: step.verb, error: err.toEnvelopeError() };
      }
      const rec = recordOf(i, step.verb, env);
      run.records.push(rec);
      if (env.ok) continue;
      run.next_step = i;
      run.attempt += 1;
      const pending = env.error?.reason === 'dispatch_pending';
      await saveRun(rt, p, macro, run, pending ? 'pending' : 'failed', ctx.now);
      const resume = {
        token: sealResume(rt, p, run),
        run_id: run.run_id,
        step: i,
        verb: step.verb,
        ...(env.consent !== undefined ? { consent: env.consent } : {}),
        send: pending
          ? {
              macro_id: macro.macro_id,
              resume: '<token>',
              options: {
                confirm: true,
                nonce: env.consent?.nonce,
                ...(env.consent?.typed_phrase !== undefined
                  ? { typed_phrase: '<typed by the human, or omit after approval>' }
                  : {}),
              },
            }
          : { macro_id: macro.macro_id, resume: '<token>' },
      };
      const output = {
        macro_id: macro.macro_id,
        run_id: run.run_id,
        name: macro.name,
        version: macro.version,
        status: pending ? 'pending' : 'failed',
        steps: run.records,
        ...(pending ? {} : { failed_step: i }),
        resume,
      };
      if (pending) return output;
      throw new VerbError(
        'macro_step_failed',
        `Step ${i} (${step.verb}) of macro "${macro.name}" failed: ${env.error?.reason ?? 'unknown'} — ${env.error?.message ?? ''}`.trim(),
        {
          hint: `Fix the cause, then retry from step ${i} with macros.run { macro_id, resume: error.details.resume.token } (steps before it are not run again).`,
          details: output,
        },
      );
    }
    if (args.resume !== undefined)
      await rt.store.write((tx) => tx.run('DELETE FROM macro_runs WHERE run_id = ?', [run.run_id]), {
        label: 'macros.run',
      });
    return {
      macro_id: macro.macro_id,
      run_id: run.run_id,
      name: macro.name,
      version: macro.version,
      status: 'completed',
      steps: run.records,
    };
  },
});

export const macroVerbs = [macrosSave, macrosRecord, macrosList, macrosRun];
