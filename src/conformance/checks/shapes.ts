/**
 * Section `shapes`: for each of the 13 shapes the server offers on http, one call whose result
 * validates against the shape's schema (schema/shapes/<shape>.json) and the record's own
 * output_schema. Reads are called with arguments built from their input schema (args.ts); the
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

/** Errors of a result against the record's own output_schema (empty when valid or none). */
function ownSchemaErrors(ctx: KitContext, record: KitRecord, result: unknown): string[] {
  if (record.output_schema === undefined) return [];
  const v = ctx.compile(record.output_schema);
  return typeof v === 'string' || v(result) ? [] : errorLines(v.errors);
}

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
    if (d.env?.ok === true) {
      // A verb may answer a form of its own (macros.list: a listing), declared as its output_schema:
      // valid against that, it does not decide the shape; another verb may.
      const own = ownSchemaErrors(ctx, r, d.env.result);
      if (
        own.length > 0 ||
        r.output_schema === undefined ||
        validateOurs(`shapes/${shape}.json`, d.env.result).length === 0
      )
        return validateResult(ctx, shape, r, d.env.result, ctx.ev(d.answer, d.env.result), r.name);
      notes.push(`${r.name} answers its own output_schema, not the ${shape} shape`);
      continue;
    }
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

export const shapeChecks: Check[] = VALID_SHAPES.map((shape): Check => ({
  id: `shapes.${shape}`,
  section: 'shapes',
  requirement: `One call of a ${shape} verb answers a result valid against schema/shapes/${shape}.json and its record's output_schema.`,
  spec: `spec/shapes.md §${shape}`,
  run: (ctx) => (shape === 'receipt' || shape === 'revert' ? writeShape(ctx, shape) : readShape(ctx, shape)),
}));
