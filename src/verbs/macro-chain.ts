/**
 * The macro model shared by the macro verbs (src/verbs/macros.ts, macros-run.ts): the stored
 * macro and its step records, `{"$from": "<JSON Pointer>"}` references and their substitution,
 * the chain check every save and record runs (validateChain), and the macros table.
 *
 * Reasons: macro_invalid (refuse.macroInvalid), macro_not_found.
 * Spec: spec/shapes.md §macro.
 */
import { randomBytes } from 'node:crypto';
import type { Envelope } from '../spec/types.ts';
import type { Queryable } from '../store/store.ts';
import { parseJson } from '../store/store.ts';
import { type CompiledVerb, type SystemVerbContext } from '../runtime/verb.ts';
import type { RuntimeCore as Runtime } from '../runtime/core.ts';
import { refuse } from '../runtime/refusals.ts';

/** Most steps in one macro. */
export const MAX_MACRO_STEPS = 50;
/** How long a paused or failed run can be resumed (seconds). */
export const MACRO_RUN_TTL_SECONDS = 24 * 3600;
/** Shapes never recorded from a trail (orientation calls, macros themselves). */
export const NOT_RECORDED: ReadonlySet<string> = new Set(['macro', 'discovery', 'suggest']);
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
      throw refuse.macroInvalid(
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
      throw refuse.macroInvalid(
        `Step ${i}: ${step.verb} is a blocked verb; a macro may not include it.`,
        `/steps/${i}/verb`,
      );
    const verb = rt.registry.get(step.verb);
    if (verb === undefined)
      throw refuse.macroInvalid(
        `Step ${i}: no verb named ${step.verb.slice(0, 200)} is registered.`,
        `/steps/${i}/verb`,
        'List the verbs with verbs.list.',
      );
    if (verb.consentClass === 'BLOCKED')
      throw refuse.macroInvalid(
        `Step ${i}: ${verb.name} is declared BLOCKED; a macro may not include it.`,
        `/steps/${i}/verb`,
      );
    if (verb.shape === 'macro')
      throw refuse.macroInvalid(
        `Step ${i}: ${verb.name} is a macro verb; macros do not nest.`,
        `/steps/${i}/verb`,
      );
    verbs.push(verb);
    for (const ref of refsIn(step.args ?? {}, '')) {
      const at = `/steps/${i}/args${ref.at}`;
      const tokens = pointerTokens(ref.pointer);
      if (tokens === undefined || tokens.length < 2)
        throw refuse.macroInvalid(
          `Step ${i}: "${ref.pointer}" is not a JSON Pointer of the form /<step>/<member>/….`,
          at,
        );
      const [first, member, ...rest] = tokens as [string, string, ...string[]];
      if (!/^(0|[1-9]\d*)$/.test(first) || Number(first) >= i) {
        throw refuse.macroInvalid(
          `Step ${i}: ${ref.pointer} refers to step ${first}, which does not run before step ${i}.`,
          at,
          'A step may only use the outputs of the steps before it.',
        );
      }
      if (!STEP_MEMBERS.has(member) || (member !== 'result' && rest.length > 0)) {
        throw refuse.macroInvalid(
          `Step ${i}: ${ref.pointer} names "${member}", which a step record does not have (${[...STEP_MEMBERS].join(', ')}).`,
          at,
        );
      }
      if (
        member === 'result' &&
        rest.length > 0 &&
        schemaExcludes(verbs[Number(first)]!.outputSchema, rest)
      ) {
        throw refuse.macroInvalid(
          `Step ${i}: ${ref.pointer} does not resolve: ${verbs[Number(first)]!.name}'s output has no /${rest.join('/')}.`,
          at,
        );
      }
    }
  }
}

export function toMacro(r: Record<string, unknown>): Macro {
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
  if (r === undefined) throw refuse.macroNotFound(macroId);
  return toMacro(r);
}

/** Insert or replace (by name) a macro inside a write transaction. */
export async function storeMacro(
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

export function savedOutput(m: Macro): Record<string, unknown> {
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

export const noGate = (roleFloor: 'employee' | 'read_only', summary: string) => ({
  consentClass: null,
  roleFloor,
  summary,
});
