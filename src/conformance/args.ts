/**
 * Arguments for a verb the kit knows only by its published input schema: the schema's own
 * `examples` first, else a value per required property built from its `examples`, `const`,
 * `default`, `enum`, format and bounds. The result is validated against the schema before it is
 * sent; properties that name ids (`…_id`, `id`) are reported, so a `not_found` answer can be told
 * apart from a broken verb ("needs real ids"). Spec: spec/conformance.md §shapes.
 */
import { randomUUID } from 'node:crypto';
import type { PublishedCompiler } from './schemas.ts';
import { errorLines } from './schemas.ts';

type Schema = Record<string, unknown>;

/** Arguments synthesised for a verb (from its examples or its schema), or why none could be. */
export type Synthesized =
  | { ok: true; args: Record<string, unknown>; source: 'examples' | 'schema'; idProperties: string[] }
  | { ok: false; reason: string };

const ID_NAME = /(^id$|_id$|_ids$|_number$|_ref$)/;

function isObject(v: unknown): v is Schema {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function firstType(s: Schema): string | undefined {
  if (typeof s.type === 'string') return s.type;
  if (Array.isArray(s.type)) return (s.type as string[]).find((t) => t !== 'null');
  return undefined;
}

/** A value valid for one property schema, or undefined when the kit cannot guess one. */
function valueFor(s: Schema, now: Date, depth = 0): unknown {
  if (depth > 8) return undefined;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if ('const' in s) return s.const;
  if ('default' in s && s.default !== null) return s.default;
  if (Array.isArray(s.enum)) return (s.enum as unknown[]).find((v) => v !== null) ?? s.enum[0];
  for (const k of ['anyOf', 'oneOf']) {
    if (Array.isArray(s[k])) {
      for (const branch of s[k] as unknown[]) {
        if (!isObject(branch) || branch.type === 'null') continue;
        const v = valueFor(branch, now, depth + 1);
        if (v !== undefined) return v;
      }
    }
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 0 && isObject(s.allOf[0]))
    return valueFor({ ...(s.allOf[0] as Schema), ...s, allOf: undefined }, now, depth + 1);
  const type = firstType(s) ?? (isObject(s.properties) ? 'object' : undefined);
  switch (type) {
    case 'string': {
      switch (s.format) {
        case 'date-time':
          return now.toISOString();
        case 'date':
          return now.toISOString().slice(0, 10);
        case 'time':
          return '12:00:00Z';
        case 'email':
          return 'conformance@example.com';
        case 'uri':
        case 'url':
          return 'https://example.com/';
        case 'uuid':
          return randomUUID();
      }
      const min = typeof s.minLength === 'number' ? s.minLength : 1;
      const max = typeof s.maxLength === 'number' ? s.maxLength : Math.max(min, 12);
      return 'conformance'.padEnd(min, 'x').slice(0, Math.max(min, Math.min(max, 11)));
    }
    case 'integer':
    case 'number': {
      let v =
        typeof s.minimum === 'number'
          ? s.minimum
          : typeof s.exclusiveMinimum === 'number'
            ? s.exclusiveMinimum + 1
            : 1;
      if (typeof s.maximum === 'number' && v > s.maximum) v = s.maximum;
      if (type === 'integer') v = Math.ceil(v);
      return v;
    }
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array': {
      const n = typeof s.minItems === 'number' ? s.minItems : 0;
      if (n === 0) return [];
      const item = isObject(s.items) ? valueFor(s.items, now, depth + 1) : undefined;
      return item === undefined ? undefined : Array.from({ length: n }, () => item);
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      const props = isObject(s.properties) ? s.properties : {};
      for (const name of Array.isArray(s.required) ? (s.required as string[]) : []) {
        const p = props[name];
        const v = isObject(p) ? valueFor(p, now, depth + 1) : undefined;
        if (v === undefined) return undefined;
        out[name] = v;
      }
      return out;
    }
  }
  return undefined;
}

/**
 * Arguments for an input schema (see the header). `compile` is the run's compiler of published
 * schemas; `now` the clock for date formats.
 */
export function synthesizeArgs(schema: unknown, compile: PublishedCompiler, now = new Date()): Synthesized {
  if (!isObject(schema)) return { ok: false, reason: 'the input schema is not an object' };
  const validate = compile(schema);
  if (typeof validate === 'string')
    return { ok: false, reason: `the input schema does not compile: ${validate}` };
  const props = isObject(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  const idProperties = required.filter((n) => ID_NAME.test(n));
  if (Array.isArray(schema.examples)) {
    for (const ex of schema.examples as unknown[]) {
      if (isObject(ex) && validate(ex)) return { ok: true, args: ex, source: 'examples', idProperties };
    }
  }
  const args: Record<string, unknown> = {};
  for (const name of required) {
    const p = props[name];
    const v = isObject(p) ? valueFor(p, now) : undefined;
    if (v === undefined)
      return { ok: false, reason: `the kit cannot build a value for the required argument ${name}` };
    args[name] = v;
  }
  if (!validate(args))
    return {
      ok: false,
      reason: `the arguments the kit built are refused by the input schema: ${errorLines(validate.errors, 3).join('; ')}`,
    };
  return { ok: true, args, source: 'schema', idProperties };
}
