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
 *
 * Layout: the macro model, `$from` references and the chain check are in macro-chain.ts,
 * macros.run in macros-run.ts, the macro model in macro-chain.ts; this module defines save / record /
 * list.
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import { parseJson } from '../store/store.ts';
import { refuse } from '../runtime/refusals.ts';
import {
  MAX_MACRO_STEPS,
  NOT_RECORDED,
  noGate,
  savedOutput,
  storeMacro,
  toMacro,
  validateChain,
  type MacroStep,
} from './macro-chain.ts';
import { macrosRun } from './macros-run.ts';

const NAME = {
  type: 'string',
  minLength: 1,
  maxLength: 100,
  pattern: '^[A-Za-z0-9][A-Za-z0-9 _.:-]*$',
} as const;

/** Why saving a macro asks no consent (its VerbRecord says requires_consent false). spec/manifest.md §consistency */
const MACRO_UNGATED =
  'saving a macro stores a list of calls and runs none of them; when macros.run replays it, every step asks for its own consent as if called directly.';

export const macrosSave = defineSystemVerb<{ name: string; description?: string; steps: MacroStep[] }>({
  name: 'macros.save',
  title: 'Save a macro',
  description:
    'Save a named chain of verb calls to replay with macros.run. Each step is {verb, args}; a step can take an earlier step\'s output with {"$from": "/<step>/result/<field>"} (a JSON Pointer, e.g. "/0/result/deal_id"). Saving under an existing name replaces the macro (version + 1). Blocked verbs and references to later steps: macro_invalid.',
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
  ungated: MACRO_UNGATED,
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
    'Save, as a macro, the calls you completed between two audit rows (inclusive; ids from audit.trail), in order, with their arguments; refused, failed and pending attempts, orientation calls and transaction steps are skipped. Refused when an argument was redacted as secret or the range holds none of your completed calls.',
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
  ungated: MACRO_UNGATED,
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
        throw refuse.macroInvalid(
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
        throw refuse.macroInvalid(
          `Audit row ${Number(r.audit_id)} (${r.action_type as string}) had secret arguments, which were redacted and cannot be replayed.`,
          undefined,
          'Record a range without that call, or save the macro with macros.save and supply the secret at run time with override_args.',
        );
      }
      steps.push({ verb: r.action_type as string, args: data });
    }
    if (steps.length === 0) {
      throw refuse.macroInvalid(
        `No completed call of yours lies between audit rows ${args.from_audit_id} and ${args.to_audit_id}.`,
        undefined,
        'Find your own calls with audit.trail (actor = your user id).',
      );
    }
    if (steps.length > MAX_MACRO_STEPS)
      throw refuse.macroInvalid(
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
    "List this tenant's saved macros, newest first: id, name, description, version, step verbs. Run one with macros.run.",
  // A listing is a read of the tenant, so an aggregate (as approvals.list, webhooks.list): the
  // macro shape is the output of saving or running a chain (spec/shapes.md §macro).
  shape: 'aggregate',
  category: 'macros',
  consent: 'READ',
  input: {
    type: 'object',
    properties: { limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
    additionalProperties: false,
  },
  output: {
    type: 'object',
    description: "The tenant's saved macros: an aggregate of the tenant (entity_id is its company id).",
    properties: {
      entity_id: { type: 'integer' },
      fetched_at: { type: 'string', format: 'date-time' },
      data: {
        type: 'object',
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
              },
              // Also created_by and updated_at (left out of the schema: tools/list byte budget).
              required: ['macro_id', 'name', 'version', 'verbs'],
            },
          },
          total: { type: 'integer', minimum: 0 },
        },
        required: ['macros', 'total'],
      },
    },
    required: ['entity_id', 'data'],
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
      entity_type: 'tenant',
      entity_id: ctx.principal.company_id,
      data: {
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
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export const macroVerbs = [macrosSave, macrosRecord, macrosList, macrosRun];
