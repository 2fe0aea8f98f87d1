/**
 * The strict check of a verb's schema at registration, separate from compiling it
 * (schema-compiler.ts compiles; this module only reads): every keyword must be one JSON Schema
 * 2020-12 (or ajv-formats) knows, every `format` one the runtime validates, and every keyword's
 * value of the right kind (checked against the 2020-12 meta-schema). A misspelt keyword
 * (`maxLenght`) would otherwise be ignored by the validator and a 5,000-character string pass.
 *
 * Returns every problem at once, each with the JSON Pointer of the keyword and a sentence in plain
 * words (never Ajv's own wording), so a pack author fixes them all in one go. Vendor keywords
 * (`x-…`) are allowed and not looked into; `default`, `examples`, `const` and `enum` hold values,
 * not schemas, and are not walked.
 *
 * Spec: spec/manifest.md §registration, spec/manifest.md §packs.
 */
import type { Ajv2020, ErrorObject } from 'ajv/dist/2020.js';
import { newAjv2020 } from '../spec/ajv.ts';
import type { JsonSchema } from '../spec/types.ts';

/** One problem of a schema: where (a JSON Pointer into the schema) and what, in words. */
export interface SchemaProblem {
  /** JSON Pointer of the keyword at fault, e.g. `/properties/text/maxLenght`. */
  pointer: string;
  /** What is wrong and how to fix it, in one sentence. */
  message: string;
}

/** Keywords whose value is one schema. */
const SCHEMA_VALUED = new Set([
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
  'items',
  'additionalItems',
]);
/** Keywords whose value is a list of schemas. */
const SCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
/** Keywords whose value maps names to schemas. */
const SCHEMA_MAP = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Every other keyword the runtime knows (2020-12 vocabularies, ajv-formats' comparisons, nullable). */
const OTHER_KEYWORDS = [
  '$schema',
  '$id',
  '$ref',
  '$anchor',
  '$dynamicRef',
  '$dynamicAnchor',
  '$vocabulary',
  '$comment',
  'type',
  'enum',
  'const',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxContains',
  'minContains',
  'maxProperties',
  'minProperties',
  'required',
  'dependentRequired',
  'dependencies',
  'title',
  'description',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
  'examples',
  'format',
  'contentEncoding',
  'contentMediaType',
  'formatMinimum',
  'formatMaximum',
  'formatExclusiveMinimum',
  'formatExclusiveMaximum',
  // OpenAPI 3.0's `nullable: true`: the seed's own example uses it, and the MCP projection reads it
  // (src/transports/mcp/portable-schema.ts); the validator accepts null only where `type` says so.
  'nullable',
];
const KNOWN = new Set<string>([...SCHEMA_VALUED, ...SCHEMA_LIST, ...SCHEMA_MAP, ...OTHER_KEYWORDS]);

/** The meta-schema checker and the formats the runtime's compiler validates (built on first use). */
let checker: { meta: Ajv2020; formats: ReadonlySet<string> } | undefined;
function metaChecker(): { meta: Ajv2020; formats: ReadonlySet<string> } {
  if (checker === undefined) {
    const meta = newAjv2020({ strict: false, allErrors: true, validateFormats: true });
    checker = { meta, formats: new Set(Object.keys(meta.formats)) };
  }
  return checker;
}
const META_2020 = 'https://json-schema.org/draft/2020-12/schema';

/** `~1`/`~0` escaping of one JSON Pointer segment (RFC 6901). */
function seg(s: string | number): string {
  return String(s).replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * Every problem of `schema` (an input or output schema of a verb), in document order; [] when it
 * is sound. Pure: does not compile the schema and does not change it. Spec: spec/manifest.md
 * §registration.
 */
export function schemaProblems(schema: JsonSchema): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  walk(schema, '', problems, 0);
  // Values of the wrong kind (maxLength: "5", type: "strin", required: "id"): the meta-schema.
  // Always against 2020-12 (the dialect the compiler speaks), whatever `$schema` says.
  const { meta } = metaChecker();
  if (!meta.validate(META_2020, schema)) problems.push(...plain(schema, meta.errors ?? [], problems));
  return problems;
}

function walk(node: unknown, at: string, out: SchemaProblem[], depth: number): void {
  if (typeof node === 'boolean' || node === null || typeof node !== 'object' || Array.isArray(node)) return;
  if (depth > 64) return; // the meta-schema check reports nothing deeper; no stack for a cycle
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    const here = `${at}/${seg(key)}`;
    if (key.startsWith('x-')) continue;
    if (!KNOWN.has(key)) {
      const near = closestKeyword(key);
      out.push({
        pointer: here,
        message: `unknown keyword "${key}"${near !== undefined ? ` (did you mean "${near}"?)` : ''}: the validator would ignore it${near !== undefined ? '' : '; vendor keywords start with "x-"'}`,
      });
      continue;
    }
    const formats = key === 'format' ? metaChecker().formats : undefined;
    if (formats !== undefined && typeof value === 'string' && !formats.has(value)) {
      const near = closest(value, [...formats]);
      out.push({
        pointer: here,
        message: `unknown format "${value}"${near !== undefined ? ` (did you mean "${near}"?)` : ''}: the runtime checks ${[...formats].sort().join(', ')}`,
      });
    }
    if (SCHEMA_VALUED.has(key)) {
      if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${here}/${i}`, out, depth + 1));
      else walk(value, here, out, depth + 1);
    } else if (SCHEMA_LIST.has(key) && Array.isArray(value))
      value.forEach((v, i) => walk(v, `${here}/${i}`, out, depth + 1));
    else if (SCHEMA_MAP.has(key) && value !== null && typeof value === 'object' && !Array.isArray(value))
      for (const [k, v] of Object.entries(value)) walk(v, `${here}/${seg(k)}`, out, depth + 1);
  }
}

/** What a keyword's value must be, in words (for a meta-schema failure). */
const EXPECTED: Record<string, string> = {
  type: 'one of "string", "number", "integer", "boolean", "object", "array", "null" (or a list of them)',
  maxLength: 'a whole number (0 or more)',
  minLength: 'a whole number (0 or more)',
  maxItems: 'a whole number (0 or more)',
  minItems: 'a whole number (0 or more)',
  maxProperties: 'a whole number (0 or more)',
  minProperties: 'a whole number (0 or more)',
  maxContains: 'a whole number (0 or more)',
  minContains: 'a whole number (0 or more)',
  minimum: 'a number',
  maximum: 'a number',
  exclusiveMinimum: 'a number',
  exclusiveMaximum: 'a number',
  multipleOf: 'a number greater than 0',
  pattern: 'a regular expression, as a string',
  format: 'a format name, as a string',
  required: 'a list of distinct property names',
  enum: 'a list of the allowed values',
  uniqueItems: 'true or false',
  deprecated: 'true or false',
  readOnly: 'true or false',
  writeOnly: 'true or false',
  properties: 'an object mapping each property name to its schema',
  patternProperties: 'an object mapping each pattern to a schema',
  $defs: 'an object mapping each name to a schema',
  items: 'a schema (an object or true/false)',
  additionalProperties: 'a schema (an object or true/false)',
  allOf: 'a non-empty list of schemas',
  anyOf: 'a non-empty list of schemas',
  oneOf: 'a non-empty list of schemas',
  prefixItems: 'a non-empty list of schemas',
  title: 'a string',
  description: 'a string',
  $ref: 'a URI reference, as a string',
  examples: 'a list of example values',
};

/**
 * Meta-schema errors as one plain sentence per keyword at fault: Ajv reports several errors for
 * one bad value (`type` fails its anyOf, its enum and its array branch); keep the innermost
 * keyword of each, skipping pointers the walk already reported.
 */
function plain(
  schema: JsonSchema,
  errors: readonly ErrorObject[],
  already: readonly SchemaProblem[],
): SchemaProblem[] {
  const seen = new Set(already.map((p) => p.pointer));
  const out: SchemaProblem[] = [];
  const byPointer = new Map<string, ErrorObject[]>();
  for (const e of errors) {
    // `required: ["a", "a"]` fails at /required; `type: ["strin"]` at /type/0: name the keyword.
    let pointer = e.instancePath;
    const parts = pointer.split('/');
    if (/^\d+$/.test(parts.at(-1) ?? '') && !SCHEMA_LIST.has(parts.at(-2) ?? ''))
      pointer = parts.slice(0, -1).join('/');
    const list = byPointer.get(pointer) ?? [];
    list.push(e);
    byPointer.set(pointer, list);
  }
  for (const pointer of byPointer.keys()) {
    if (seen.has(pointer) || [...seen].some((s) => pointer.startsWith(`${s}/`))) continue;
    const keyword = unseg(pointer.split('/').pop() ?? '');
    const value = shown(valueAt(schema, pointer));
    const expected = EXPECTED[keyword];
    if (expected !== undefined)
      out.push({ pointer, message: `${keyword} is ${value}: it must be ${expected}` });
    else if (pointer === '')
      out.push({ pointer: '/', message: `the schema is ${value}: it must be an object (or true/false)` });
    else
      out.push({
        pointer,
        message: `${keyword || 'this value'} is ${value}: it is not a schema or a valid value here`,
      });
  }
  return out;
}

function unseg(s: string): string {
  return s.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** The value at a JSON Pointer of `root` (undefined when absent). */
function valueAt(root: unknown, pointer: string): unknown {
  let node = root;
  for (const s of pointer.split('/').slice(1)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[unseg(s)];
  }
  return node;
}

function shown(data: unknown): string {
  const text = JSON.stringify(data) ?? String(data);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function closestKeyword(key: string): string | undefined {
  return closest(key, [...KNOWN]);
}

/** The candidate within edit distance 2 (or one differing only in case), if any. */
function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = 3;
  for (const c of candidates) {
    const d = c.toLowerCase() === word.toLowerCase() ? 0 : distance(word, c);
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return best;
}

/** Damerau-Levenshtein (optimal string alignment) distance: a swap of two letters counts 1. */
function distance(a: string, b: string): number {
  const d: number[][] = [];
  for (let i = 0; i <= a.length; i++) d.push([i]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  return d[a.length]![b.length]!;
}
