/**
 * Section `shapes`: for each of the 13 shapes the server offers on http, one call whose result
 * validates against the shape's schema (schema/shapes/<shape>.json) and the record's own
 * output_schema (both: an output_schema may narrow the shape's contract, never replace it). Reads are called with arguments built from their input schema (args.ts); the
 * write shapes receipt and revert use the run's declared test write (with --allow-writes).
 * A shape whose every verb needs real ids (or arguments the kit cannot build) is skipped with the
 * reason. At most 4 verbs are tried per shape.
 * Spec: spec/shapes.md (one section per shape).
 */
import { synthesizeArgs } from '../args.ts';
import { isReadRecord, type KitContext, type KitEnvelope, type KitRecord } from '../context.ts';
import { Fail, Skip, fail, pass, skip } from '../outcome.ts';
import { errorLines, validateOurs } from '../schemas.ts';
import type { Check, Evidence, Outcome } from '../types.ts';
import { VALID_SHAPES, type Shape } from '../../spec/types.ts';
import { committedWrite, reasonOf, revertedWrite } from '../writes.ts';

const TRIES_PER_SHAPE = 4;

/** Validate a result against the shape schema and the record's output_schema. */
function validateResult(
  ctx: KitContext,
  shape: Shape,
  record: KitRecord | undefined,
  result: unknown,
  evidence: Evidence,
  label: string,
): Outcome {
  const errors = validateOurs(`shapes/${shape}.json`, result);
  if (errors.length > 0)
    return fail(`${label}: the result is invalid against schema/shapes/${shape}.json: ${errors[0]}`, {
      ...evidence,
      answer: { errors, result: evidence.answer },
    });
  if (record?.output_schema !== undefined) {
    const v = ctx.compile(record.output_schema);
    if (typeof v !== 'string' && !v(result))
      return fail(
        `${label}: the result is invalid against its record's output_schema: ${errorLines(v.errors)[0]}`,
        {
          ...evidence,
          answer: { errors: errorLines(v.errors) },
        },
      );
  }
  return pass(`${label}: valid ${shape}`);
}

async function readShape(ctx: KitContext, shape: Shape): Promise<Outcome> {
  const { records } = await ctx.records('?surface=http');
  const ofShape = records.filter((r) => r.shape === shape);
  if (ofShape.length === 0) return skip(`the server offers no ${shape} verb on http`);
  const reads = ofShape
    .filter(isReadRecord)
    .sort((a, b) => required(a) - required(b) || (a.name < b.name ? -1 : 1));
  const notes: string[] = [];
  for (const r of reads.slice(0, TRIES_PER_SHAPE)) {
    const s = synthesizeArgs(r.input_schema, ctx.compile);
    if (!s.ok) {
      notes.push(`${r.name}: ${s.reason}`);
      continue;
    }
    const d = await ctx.dispatch(r.name, { args: s.args });
    if (d.env?.ok === true)
      // The shape's schema decides, whatever the record's own output_schema allows (spec/shapes.md
      // §overview: a verb may narrow its shape's contract, never leave it).
      return validateResult(ctx, shape, r, d.env.result, ctx.ev(d.answer, d.env.result), r.name);
    if (d.answer.status >= 500)
      return fail(
        `${r.name} answered HTTP ${d.answer.status} to arguments its schema accepts`,
        ctx.ev(d.answer),
      );
    const reason = reasonOf(d.env) ?? `HTTP ${d.answer.status}`;
    notes.push(
      reason === 'not_found' ||
        d.answer.status === 404 ||
        (s.idProperties.length > 0 && d.answer.status === 422)
        ? `${r.name} needs real ids (${s.idProperties.join(', ') || 'its arguments'}): ${reason}`
        : `${r.name}: ${reason}`,
    );
  }
  if (reads.length === 0)
    return skip(
      `every ${shape} verb writes (${ofShape
        .map((r) => r.name)
        .slice(0, 3)
        .join(', ')}); the kit only writes with declared test verbs`,
    );
  return skip(`no ${shape} verb could be called without real data: ${notes.join('; ')}`);
}

function required(r: KitRecord): number {
  return Array.isArray(r.input_schema?.required) ? (r.input_schema.required as unknown[]).length : 0;
}

async function writeShape(ctx: KitContext, shape: 'receipt' | 'revert'): Promise<Outcome> {
  const { records } = await ctx.records('?surface=http');
  if (!records.some((r) => r.shape === shape)) return skip(`the server offers no ${shape} verb on http`);
  if (!ctx.allowWrites || !ctx.hasKey)
    return skip(
      `${shape} results come from a write: pass --api-key and --allow-writes (declared test verbs only)`,
    );
  let env: KitEnvelope | undefined;
  let evidence: Evidence;
  let label: string;
  let record: KitRecord | undefined;
  try {
    if (shape === 'receipt') {
      const w = await committedWrite(ctx);
      env = w.confirmed.env;
      evidence = ctx.ev(w.confirmed.answer, env?.result);
      label = w.tv.verb;
      record = records.find((r) => r.name === w.tv.verb);
    } else {
      const rv = await revertedWrite(ctx);
      env = rv.revert.final.env;
      evidence = ctx.ev(rv.revert.final.answer, env?.result);
      label = 'audit.revert';
      record = records.find((r) => r.name === 'audit.revert');
    }
  } catch (err) {
    if (!(err instanceof Fail)) throw err;
    throw new Skip(
      `the test ${shape === 'receipt' ? 'write' : 'revert'} did not complete (see receipts.${shape === 'receipt' ? 'fields' : 'revert'})`,
    );
  }
  if (env?.ok !== true)
    return skip(
      `the test ${shape} did not succeed (see receipts.${shape === 'receipt' ? 'fields' : 'revert'})`,
    );
  return validateResult(ctx, shape, record, env.result, evidence, label);
}

/** The members of a preview's `current` that its `projected` says would change (the whole value when not objects). */
function changing(current: unknown, projected: unknown): string[] {
  const isObj = (x: unknown): x is Record<string, unknown> =>
    x !== null && typeof x === 'object' && !Array.isArray(x);
  if (!isObj(current) || !isObj(projected))
    return JSON.stringify(current) === JSON.stringify(projected) ? [] : [''];
  return Object.keys(projected).filter(
    (k) => k in current && JSON.stringify(current[k]) !== JSON.stringify(projected[k]),
  );
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/;

/** JSON of a value with its ISO time stamps blanked (a read may say when it was made). */
function untimed(x: unknown): string {
  return JSON.stringify(x, (_k, v: unknown) => (typeof v === 'string' && TIMESTAMP.test(v) ? '<time>' : v));
}

function member(x: unknown, k: string): unknown {
  return k === '' ? x : (x as Record<string, unknown> | null)?.[k];
}

/**
 * shapes.preview_read_only: a preview changes nothing. Black-box: a preview verb is called twice
 * with the same arguments; the members its first answer projects to change (all of `current`,
 * time stamps aside, when it shares none with `projected`) must read the same the second time (a
 * preview that commits its change shows the projected value).
 */
async function previewReadOnly(ctx: KitContext): Promise<Outcome> {
  const { records } = await ctx.records('?surface=http');
  const previews = records
    .filter((r) => r.shape === 'preview' && isReadRecord(r))
    .sort((a, b) => required(a) - required(b) || (a.name < b.name ? -1 : 1));
  if (previews.length === 0) return skip('the server offers no preview verb on http');
  const notes: string[] = [];
  for (const r of previews.slice(0, TRIES_PER_SHAPE)) {
    const s = synthesizeArgs(r.input_schema, ctx.compile);
    if (!s.ok) {
      notes.push(`${r.name}: ${s.reason}`);
      continue;
    }
    const first = await ctx.dispatch(r.name, { args: s.args });
    if (first.env?.ok !== true) {
      notes.push(`${r.name}: ${reasonOf(first.env) ?? `HTTP ${first.answer.status}`}`);
      continue;
    }
    const { current, projected } = (first.env.result ?? {}) as { current?: unknown; projected?: unknown };
    if (JSON.stringify(current) === JSON.stringify(projected)) {
      notes.push(`${r.name} projects no change for these arguments`);
      continue;
    }
    // The members it projects to change; when it shares none with current (a create), all of
    // current, time stamps aside.
    const common = changing(current, projected);
    const keys = common.length > 0 ? common : [''];
    const second = await ctx.dispatch(r.name, { args: s.args });
    if (second.env?.ok !== true)
      return fail(
        `${r.name} answered ${reasonOf(second.env) ?? `HTTP ${second.answer.status}`} the second time: the first call changed something`,
        ctx.ev(first.answer, first.env.result),
        ctx.ev(second.answer),
      );
    const again = (second.env.result as { current?: unknown } | undefined)?.current;
    const moved = keys.filter((k) => untimed(member(again, k)) !== untimed(member(current, k)));
    if (moved.length > 0)
      return fail(
        `${r.name} wrote: called again with the same arguments, current${moved[0] ? `.${moved[0]}` : ''} is ${JSON.stringify(member(again, moved[0]!))}, was ${JSON.stringify(member(current, moved[0]!))} (projected ${JSON.stringify(member(projected, moved[0]!))})`,
        ctx.ev(first.answer, { current, projected }),
        ctx.ev(second.answer, { current: again }),
      );
    return pass(`${r.name}: the same current twice (${keys.join(', ') || 'all of it'} unchanged)`);
  }
  return skip(`no preview verb could be called to project a change: ${notes.join('; ')}`);
}

export const shapeChecks: Check[] = [
  ...VALID_SHAPES.map((shape): Check => ({
    id: `shapes.${shape}`,
    section: 'shapes',
    requirement: `One call of a ${shape} verb answers a result valid against schema/shapes/${shape}.json and its record's output_schema.`,
    spec: `spec/shapes.md §${shape}`,
    run: (ctx) =>
      shape === 'receipt' || shape === 'revert' ? writeShape(ctx, shape) : readShape(ctx, shape),
  })),
  {
    id: 'shapes.preview_read_only',
    section: 'shapes',
    requirement:
      'A preview changes nothing: called twice with the same arguments, it answers the same current for every member it projects to change.',
    spec: 'spec/shapes.md §preview',
    run: previewReadOnly,
  },
];
