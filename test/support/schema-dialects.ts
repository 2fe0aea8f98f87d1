/**
 * Checkers of the function-schema dialects of model providers, written from their documented
 * rules (research/hosts-2026.md "Schema dialects of model providers"), independently of the
 * server's own conversion (src/transports/mcp/schema-profiles.ts): a tool these checkers reject
 * is one the provider would refuse.
 *
 * OpenAI strict function calling / structured outputs ("Supported schemas"): the root is an
 * object (not anyOf); every object has `additionalProperties: false` and lists every property in
 * `required`; only the documented keywords (type, properties, required, additionalProperties,
 * items, enum, const, anyOf, $ref/$defs, description, title; strings: pattern, format; numbers:
 * multipleOf, maximum, exclusiveMaximum, minimum, exclusiveMinimum; arrays: minItems, maxItems) —
 * so no allOf, not, oneOf, if/then/else, dependent*, minLength, default…; formats date-time,
 * time, date, duration, email, hostname, ipv4, ipv6, uuid; every schema typed; at most 5000
 * properties, 10 levels of nesting, 1000 enum values; names `^[a-zA-Z0-9_-]{1,64}$`.
 *
 * Gemini function declarations (OpenAPI 3.0 Schema subset): fields type (one string), format,
 * title, description, nullable, enum (strings, on a string), maxItems, minItems, properties,
 * required, minProperties, maxProperties, minLength, maxLength, pattern, example, anyOf,
 * propertyOrdering, default, items, minimum, maximum; no additionalProperties; formats
 * string: enum, date-time; number: float, double; integer: int32, int64; an object below the
 * root needs properties, an array needs items; names `^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`.
 */

type Node = Record<string, unknown>;

const isObject = (x: unknown): x is Node => typeof x === 'object' && x !== null && !Array.isArray(x);

const OPENAI_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  '$ref',
  '$defs',
  'description',
  'title',
  'pattern',
  'format',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'minItems',
  'maxItems',
]);
const OPENAI_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
const OPENAI_FORMATS = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uuid',
]);

const GEMINI_KEYWORDS = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'anyOf',
  'propertyOrdering',
  'default',
  'items',
  'minimum',
  'maximum',
]);
const GEMINI_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);
const GEMINI_FORMATS: Record<string, Set<string>> = {
  string: new Set(['enum', 'date-time']),
  number: new Set(['float', 'double']),
  integer: new Set(['int32', 'int64']),
};

/** Why OpenAI strict mode would refuse this function (empty: accepted). */
export function openAiStrictProblems(name: string, schema: unknown): string[] {
  const problems: string[] = [];
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) problems.push(`name ${name}`);
  if (!isObject(schema) || schema.type !== 'object') problems.push('root is not an object');
  let properties = 0;
  const walk = (s: unknown, at: string, depth: number): void => {
    if (!isObject(s)) {
      problems.push(`${at}: not a schema object`);
      return;
    }
    if (depth > 10) problems.push(`${at}: nested deeper than 10`);
    for (const k of Object.keys(s)) if (!OPENAI_KEYWORDS.has(k)) problems.push(`${at}: keyword ${k}`);
    const types = Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type];
    for (const t of types) if (!OPENAI_TYPES.has(String(t))) problems.push(`${at}: type ${String(t)}`);
    if (
      types.length === 0 &&
      s.anyOf === undefined &&
      s.enum === undefined &&
      s.const === undefined &&
      s.$ref === undefined
    )
      problems.push(`${at}: no type`);
    if (s.format !== undefined && !OPENAI_FORMATS.has(String(s.format)))
      problems.push(`${at}: format ${String(s.format)}`);
    if (Array.isArray(s.enum) && s.enum.length > 1000) problems.push(`${at}: enum of ${s.enum.length}`);
    if (types.includes('object') || s.properties !== undefined) {
      if (s.additionalProperties !== false) problems.push(`${at}: additionalProperties is not false`);
      const props = isObject(s.properties) ? s.properties : undefined;
      if (props === undefined) problems.push(`${at}: object without properties`);
      const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
      for (const [k, sub] of Object.entries(props ?? {})) {
        properties++;
        if (!required.has(k)) problems.push(`${at}/${k}: not required`);
        walk(sub, `${at}/${k}`, depth + 1);
      }
      for (const k of required)
        if (props?.[k] === undefined) problems.push(`${at}: required ${k} not a property`);
    }
    if (types.includes('array') && s.items === undefined) problems.push(`${at}: array without items`);
    if (s.items !== undefined) walk(s.items, `${at}/items`, depth + 1);
    if (Array.isArray(s.anyOf)) s.anyOf.forEach((b, i) => walk(b, `${at}/anyOf/${i}`, depth + 1));
    if (isObject(s.$defs))
      for (const [k, d] of Object.entries(s.$defs)) walk(d, `${at}/$defs/${k}`, depth + 1);
  };
  if (isObject(schema)) {
    if (schema.anyOf !== undefined) problems.push('root is anyOf');
    walk(schema, '', 0);
  }
  if (properties > 5000) problems.push(`${properties} properties`);
  return problems;
}

/** Why a Gemini function declaration with these parameters would be refused (empty: accepted). */
export function geminiProblems(name: string, schema: unknown): string[] {
  const problems: string[] = [];
  if (!/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/.test(name)) problems.push(`name ${name}`);
  if (!isObject(schema) || schema.type !== 'object') problems.push('root is not an object');
  const walk = (s: unknown, at: string, root: boolean): void => {
    if (!isObject(s)) {
      problems.push(`${at}: not a schema object`);
      return;
    }
    for (const k of Object.keys(s)) if (!GEMINI_KEYWORDS.has(k)) problems.push(`${at}: keyword ${k}`);
    const t = s.type;
    if (t !== undefined && (typeof t !== 'string' || !GEMINI_TYPES.has(t)))
      problems.push(`${at}: type ${JSON.stringify(t)}`);
    if (t === undefined && s.anyOf === undefined) problems.push(`${at}: no type`);
    if (s.format !== undefined && GEMINI_FORMATS[String(t)]?.has(String(s.format)) !== true)
      problems.push(`${at}: format ${String(s.format)} on ${String(t)}`);
    if (
      s.enum !== undefined &&
      (t !== 'string' || !Array.isArray(s.enum) || !s.enum.every((e) => typeof e === 'string'))
    )
      problems.push(`${at}: enum not of strings on a string`);
    if (t === 'object') {
      const props = isObject(s.properties) ? s.properties : {};
      if (!root && Object.keys(props).length === 0) problems.push(`${at}: object without properties`);
      for (const [k, sub] of Object.entries(props)) walk(sub, `${at}/${k}`, false);
      if (s.required !== undefined)
        for (const k of s.required as string[])
          if (props[k] === undefined) problems.push(`${at}: required ${k} not a property`);
    }
    if (t === 'array') {
      if (s.items === undefined) problems.push(`${at}: array without items`);
      else walk(s.items, `${at}/items`, false);
    }
    if (Array.isArray(s.anyOf)) s.anyOf.forEach((b, i) => walk(b, `${at}/anyOf/${i}`, false));
  };
  if (isObject(schema)) walk(schema, '', true);
  return problems;
}

/** The tools a dialect refuses, with the reasons of each. */
export function rejections(
  tools: readonly { name: string; inputSchema: unknown }[],
  dialect: 'openai-strict' | 'gemini',
): Map<string, string[]> {
  const check = dialect === 'openai-strict' ? openAiStrictProblems : geminiProblems;
  const out = new Map<string, string[]>();
  for (const t of tools) {
    const p = check(t.name, t.inputSchema);
    if (p.length > 0) out.set(t.name, p);
  }
  return out;
}
