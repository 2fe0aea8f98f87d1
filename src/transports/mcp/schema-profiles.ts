/**
 * Served schema profiles: the MCP input schemas rewritten for the function-calling dialect of a
 * model provider, so a host can hand every tool to that provider as it is
 * (spec/transports.md §mcp-schema-profiles).
 *
 *   default        the portable subset (portable-schema.ts), unchanged
 *   openai-strict  OpenAI strict function calling / structured outputs: every object has
 *                  `additionalProperties: false` and lists every property in `required`; a
 *                  property the verb lets the caller leave out is a union with null, and null
 *                  there means "not sent"; only the documented keywords and formats
 *   gemini         Gemini function declarations (a subset of OpenAPI 3.0): one `type` per
 *                  schema, `nullable: true` instead of a null branch, enums of strings only, no
 *                  `additionalProperties`, formats from its short list
 *
 * What a dialect cannot say moves into the description (`minLength 1`, `default 25`, `at least
 * 2 properties`, a format it lacks…); the Gemini profile also repeats the value constraints it
 * keeps (range, length, pattern, item count) there, because common Gemini host adapters strip
 * those keywords. A value a dialect cannot type at all — a free-form object, an object map, a
 * schema without a type — is sent as JSON text (a string), and `toVerbArgs` parses it back.
 *
 * The projection may only loosen: the runtime validates every call against the verb's own
 * schema, so a constraint moved into words is still enforced (invalid_input, audited).
 *
 * `toVerbArgs(args)` maps what a client sent under the profile back to the verb's arguments
 * before the pipeline sees them (a new object; the client's is not mutated):
 *   - JSON text of an encoded value → the parsed value (text that does not parse stays text, so
 *     the pipeline refuses it with invalid_input and its JSON Pointer);
 *   - openai-strict: null for a property the verb's schema lets the caller leave out → the
 *     property left out; the pointers listed in the root `_set_null` array → null there (how a
 *     strict caller clears a property whose null has a meaning, e.g. crm "null clears it").
 *     A property the verb REQUIRES that admits null keeps null as a value (nothing to map).
 *     Inside arrays a nullable optional property keeps null as a value (no pointer reaches it).
 */
import type { JsonSchema } from '../../spec/types.ts';

/** The profiles a server can serve. */
export const SCHEMA_PROFILES = ['default', 'openai-strict', 'gemini'] as const;
export type SchemaProfile = (typeof SCHEMA_PROFILES)[number];

/** Whether `x` names a profile. */
export function isSchemaProfile(x: unknown): x is SchemaProfile {
  return typeof x === 'string' && (SCHEMA_PROFILES as readonly string[]).includes(x);
}

/** The root property of an openai-strict schema listing the properties to set to null. */
export const SET_NULL = '_set_null';

/** Formats OpenAI strict mode accepts on strings. */
export const OPENAI_FORMATS: ReadonlySet<string> = new Set([
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

/** Formats Gemini function declarations accept, by type. */
export const GEMINI_FORMATS: Readonly<Record<string, ReadonlySet<string>>> = {
  string: new Set(['enum', 'date-time']),
  number: new Set(['float', 'double']),
  integer: new Set(['int32', 'int64']),
};

/** How to turn a client's arguments back into the verb's (see the header). */
export interface ArgPlan {
  /** The value was sent as JSON text. */
  json?: true;
  /** openai-strict: keys whose null means "not sent". */
  nullIsAbsent?: string[];
  props?: Record<string, ArgPlan>;
  items?: ArgPlan;
}

export interface ProfiledInput {
  schema: JsonSchema;
  /** Undefined when nothing needs mapping back. */
  plan?: ArgPlan;
  /** openai-strict: the JSON Pointers `_set_null` may list. */
  settable?: string[];
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** `{type: "null"}`, possibly with annotations. */
function isNullBranch(s: unknown): boolean {
  return isObject(s) && s.type === 'null';
}

const KEEP_OPENAI = new Set([
  'type',
  'description',
  'enum',
  'const',
  'pattern',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'minItems',
  'maxItems',
]);

const KEEP_GEMINI = new Set([
  'type',
  'description',
  'enum',
  'pattern',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'default',
]);

/** Keywords that annotate only: dropped where a dialect lacks them (the description stays). */
const ANNOTATION_ONLY = new Set(['title', 'examples', 'deprecated', 'readOnly', 'writeOnly', '$comment']);

/** Value constraints Gemini keeps that its host adapters are known to strip: repeated in words. */
const GEMINI_REPEAT = ['minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'minItems', 'maxItems'];

const json = (v: unknown) => JSON.stringify(v);

/** One constraint in words (short: it rides in every listing). */
function note(key: string, value: unknown): string | undefined {
  switch (key) {
    case 'minLength':
      return `min length ${json(value)}`;
    case 'maxLength':
      return `max length ${json(value)}`;
    case 'minimum':
      return `minimum ${json(value)}`;
    case 'maximum':
      return `maximum ${json(value)}`;
    case 'exclusiveMinimum':
      return `greater than ${json(value)}`;
    case 'exclusiveMaximum':
      return `less than ${json(value)}`;
    case 'multipleOf':
      return `multiple of ${json(value)}`;
    case 'pattern':
      return `pattern ${json(value)}`;
    case 'format':
      return `format ${json(value)}`;
    case 'default':
      return `default ${json(value)}`;
    case 'minItems':
      return `min items ${json(value)}`;
    case 'maxItems':
      return `max items ${json(value)}`;
    case 'uniqueItems':
      return value === true ? 'items unique' : undefined;
    case 'minProperties':
      return `at least ${json(value)} properties given`;
    case 'maxProperties':
      return `at most ${json(value)} properties given`;
    case 'enum':
      return `one of ${json(value)}`;
    case 'const':
      return `exactly ${json(value)}`;
    case 'propertyNames':
      return `keys: ${json(value)}`;
    case 'dependentRequired':
      return Object.entries(value as Record<string, string[]>)
        .map(([k, needs]) => `${k} needs ${needs.join(', ')}`)
        .join('; ');
    case 'not':
      return `must not match ${json(value)}`;
    default:
      return `${key} ${json(value)}`;
  }
}

/** Bounds said once per pair: "min length 1; max length 200" → "1..200 chars". */
function compact(notes: string[]): string[] {
  const pairs: [string, string, (a?: string, b?: string) => string][] = [
    [
      'min length ',
      'max length ',
      (a, b) => (a && b ? `${a}..${b} chars` : a ? `min ${a} chars` : `max ${b} chars`),
    ],
    ['minimum ', 'maximum ', (a, b) => (a && b ? `${a}..${b}` : a ? `min ${a}` : `max ${b}`)],
    [
      'min items ',
      'max items ',
      (a, b) => (a && b ? `${a}..${b} items` : a ? `min ${a} items` : `max ${b} items`),
    ],
  ];
  let out = notes;
  for (const [lo, hi, say] of pairs) {
    const a = out.find((n) => n.startsWith(lo));
    const b = out.find((n) => n.startsWith(hi));
    if (a === undefined && b === undefined) continue;
    const words = say(a?.slice(lo.length), b?.slice(hi.length));
    out = out.filter((n) => n !== a && n !== b);
    out.push(words);
  }
  return out;
}

function withNotes(description: unknown, all: string[]): string | undefined {
  const base = typeof description === 'string' ? description : '';
  // What the description already says ("1..200, default 25") is not said twice.
  const said = (n: string) => {
    const core = n.replace(/ (chars|items)$/, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return new RegExp(`(?<![\\w.])${core}(?![\\w.]*\\d)`).test(base);
  };
  const notes = all.filter((n) => !said(n));
  if (notes.length === 0) return base === '' ? undefined : base;
  const words = `(${notes.join('; ')})`;
  return base === '' ? words : `${base} ${words}`;
}

/** A schema that says nothing about the type: any JSON value. */
function isUntyped(s: Record<string, unknown>): boolean {
  return ['type', 'anyOf', 'oneOf', 'allOf', 'enum', 'const'].every((k) => s[k] === undefined);
}

/** An object schema without listed properties (a map or any object): not expressible in either dialect. */
function isFreeObject(s: Record<string, unknown>): boolean {
  return (
    s.type === 'object' &&
    (!isObject(s.properties) || Object.keys(s.properties).length === 0) &&
    s.additionalProperties !== false
  );
}

class Converter {
  /** openai-strict: pointers of optional properties whose null has a meaning. */
  readonly settable: string[] = [];

  constructor(
    readonly profile: 'openai-strict' | 'gemini',
    /** Pointers (through properties) whose absence the server maps to null (portable-schema nullFill). */
    readonly nullFill: ReadonlySet<string>,
  ) {}

  /**
   * Convert one node. `pointer` is the JSON Pointer while only `properties` were crossed (null
   * after an array or a combinator).
   */
  node(input: unknown, pointer: string | null, root = false): { schema: JsonSchema; plan?: ArgPlan } {
    const s: Record<string, unknown> = isObject(input) ? { ...input } : {};
    // Values no dialect can type: sent as JSON text.
    if (!root && (isUntyped(s) || isFreeObject(s))) return this.#asJsonText(s);

    if (Array.isArray(s.anyOf) || Array.isArray(s.oneOf) || Array.isArray(s.allOf)) return this.#union(s);

    const keep = this.profile === 'openai-strict' ? KEEP_OPENAI : KEEP_GEMINI;
    const out: Record<string, unknown> = {};
    const notes: string[] = [];
    let plan: ArgPlan | undefined;
    const type = s.type;
    for (const [k, v] of Object.entries(s)) {
      if (k === 'properties' || k === 'required' || k === 'additionalProperties' || k === 'items') continue;
      if (ANNOTATION_ONLY.has(k)) continue;
      if (k === 'format') {
        const ok =
          this.profile === 'openai-strict'
            ? type === 'string' && OPENAI_FORMATS.has(String(v))
            : GEMINI_FORMATS[String(type)]?.has(String(v)) === true;
        if (ok) out.format = v;
        else notes.push(note(k, v)!);
        continue;
      }
      if (
        k === 'enum' &&
        this.profile === 'gemini' &&
        !(type === 'string' && (v as unknown[]).every((e) => typeof e === 'string'))
      ) {
        notes.push(note(k, v)!);
        continue;
      }
      if (k === 'const' && this.profile === 'gemini') {
        if (typeof v === 'string' && type === 'string') out.enum = [v];
        else notes.push(note(k, v)!);
        continue;
      }
      if (keep.has(k)) {
        out[k] = v;
        if (this.profile === 'gemini' && GEMINI_REPEAT.includes(k)) notes.push(note(k, v)!);
        continue;
      }
      const words = note(k, v);
      if (words !== undefined) notes.push(words);
    }
    // Gemini needs a type: an untyped enum or const takes its values' type.
    if (out.type === undefined && this.profile === 'gemini') {
      const first = Array.isArray(s.enum) ? (s.enum as unknown[])[0] : s.const;
      out.type =
        typeof first === 'number'
          ? Number.isInteger(first)
            ? 'integer'
            : 'number'
          : typeof first === 'boolean'
            ? 'boolean'
            : 'string';
    }

    if (type === 'object' || isObject(s.properties)) {
      out.type = 'object';
      const r = this.#object(s, pointer);
      Object.assign(out, r.fields);
      plan = r.plan;
    } else if (type === 'array') {
      const r = this.node(s.items ?? {}, null);
      out.items = r.schema;
      if (r.plan !== undefined) plan = { items: r.plan };
    }
    const description = withNotes(s.description, compact(notes));
    if (description !== undefined) out.description = description;
    else delete out.description;
    return { schema: out as JsonSchema, ...(plan !== undefined ? { plan } : {}) };
  }

  #object(
    s: Record<string, unknown>,
    pointer: string | null,
  ): { fields: Record<string, unknown>; plan?: ArgPlan } {
    const props = isObject(s.properties) ? s.properties : {};
    const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    const outProps: Record<string, unknown> = {};
    const plan: ArgPlan = {};
    const nullIsAbsent: string[] = [];
    for (const [key, sub] of Object.entries(props)) {
      const childPointer = pointer === null ? null : `${pointer}/${escapePointer(key)}`;
      const r = this.node(sub, childPointer);
      let schema = r.schema as Record<string, unknown>;
      const optional = !required.has(key);
      if (this.profile === 'openai-strict' && optional) {
        const filled = childPointer !== null && this.nullFill.has(childPointer);
        if (admitsNull(sub)) {
          // null has a meaning here: null means "not sent" and _set_null carries the meaning.
          if (!filled) {
            if (childPointer !== null) {
              this.settable.push(childPointer);
              nullIsAbsent.push(key);
              schema = {
                ...schema,
                description: joinWords(
                  schema.description as string | undefined,
                  `(null: not sent; to clear, use ${SET_NULL})`,
                ),
              };
            }
          }
        } else {
          schema = orNull(schema);
          nullIsAbsent.push(key);
        }
      }
      outProps[key] = schema;
      if (r.plan !== undefined) (plan.props ??= {})[key] = r.plan;
    }
    const fields: Record<string, unknown> = { properties: outProps };
    if (this.profile === 'openai-strict') {
      fields.required = Object.keys(outProps);
      fields.additionalProperties = false;
      if (nullIsAbsent.length > 0) plan.nullIsAbsent = nullIsAbsent;
    } else if (required.size > 0) fields.required = [...required].filter((k) => k in outProps);
    return { fields, ...(plan.props !== undefined || plan.nullIsAbsent !== undefined ? { plan } : {}) };
  }

  #union(s: Record<string, unknown>): { schema: JsonSchema; plan?: ArgPlan } {
    const { anyOf, oneOf, allOf, ...rest } = s;
    const notes: string[] = [];
    let branches = [...((anyOf as unknown[]) ?? []), ...((oneOf as unknown[]) ?? [])];
    if (Array.isArray(allOf)) {
      // No dialect has allOf: the first part stays a schema, the others become words.
      const [first, ...others] = allOf as unknown[];
      if (branches.length === 0) branches = [first];
      else Object.assign(rest, isObject(first) ? first : {});
      for (const o of others) notes.push(`must also match ${json(o)}`);
    }
    const nullable = branches.some(isNullBranch);
    const typed = branches.filter((b) => !isNullBranch(b));
    // Keywords beside the union apply to every branch.
    const siblings = Object.fromEntries(
      Object.entries(rest).filter(([k]) => k !== 'description' && k !== 'title' && !ANNOTATION_ONLY.has(k)),
    );
    const converted = typed.map((b) => this.node({ ...siblings, ...(isObject(b) ? b : {}) }, null));
    // One branch: its words join the union's description (one place for the model to read).
    let inner: string | undefined;
    if (converted.length === 1 && typeof converted[0]!.schema.description === 'string') {
      const { description: d, ...schema } = converted[0]!.schema;
      inner = d as string;
      converted[0] = { ...converted[0]!, schema: schema as JsonSchema };
    }
    const plans = converted.map((c) => c.plan).filter((p) => p !== undefined);
    const plan = plans.length === 1 ? plans[0] : undefined;
    const description = joinWords(withNotes(rest.description, notes), inner);
    let out: Record<string, unknown>;
    if (this.profile === 'gemini') {
      out = converted.length === 1 ? { ...converted[0]!.schema } : { anyOf: converted.map((c) => c.schema) };
      if (nullable) out.nullable = true;
    } else {
      const all = converted.map((c) => c.schema as Record<string, unknown>);
      if (nullable && all.length === 1) out = orNull(all[0]!);
      else {
        if (nullable) all.push({ type: 'null' });
        out = all.length === 1 ? { ...all[0]! } : { anyOf: all };
      }
    }
    if (description !== undefined) out.description = description;
    return { schema: out as JsonSchema, ...(plan !== undefined ? { plan } : {}) };
  }

  #asJsonText(s: Record<string, unknown>): { schema: JsonSchema; plan: ArgPlan } {
    const { description, title, ...shape } = s;
    void title;
    const what = Object.keys(shape).length === 0 ? 'any JSON value' : `JSON matching ${json(shape)}`;
    const text = `${typeof description === 'string' ? `${description} ` : ''}(send as JSON text: ${what})`;
    return { schema: { type: 'string', description: text }, plan: { json: true } };
  }
}

function joinWords(a: string | undefined, b: string | undefined): string | undefined {
  return a === undefined ? b : b === undefined ? a : `${a} ${b}`;
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function admitsNull(s: unknown): boolean {
  if (!isObject(s)) return false;
  if (s.type === 'null' || (Array.isArray(s.type) && s.type.includes('null')) || s.nullable === true)
    return true;
  return Array.isArray(s.anyOf) && (s.anyOf as unknown[]).some(isNullBranch);
}

/**
 * openai-strict: `s` or null. A single-typed schema gets `type: [t, "null"]` (and null in its
 * enum), the shortest form OpenAI documents; anything else a `{type: "null"}` branch.
 */
function orNull(s: Record<string, unknown>): Record<string, unknown> {
  const { description, ...rest } = s;
  const words = description !== undefined ? { description } : {};
  if (typeof rest.type === 'string' && rest.anyOf === undefined && rest.const === undefined) {
    const out: Record<string, unknown> = { ...rest, type: [rest.type, 'null'] };
    if (Array.isArray(rest.enum) && !rest.enum.includes(null)) out.enum = [...(rest.enum as unknown[]), null];
    return { ...out, ...words };
  }
  const branches =
    Array.isArray(rest.anyOf) && Object.keys(rest).length === 1 ? (rest.anyOf as unknown[]) : [rest];
  return { ...words, anyOf: [...branches, { type: 'null' }] };
}

/**
 * Rewrite a portable input schema (toPortableSchema 'input') for `profile`. `nullFill` are the
 * portable projection's argument paths whose absence the server maps to null. Pure; the tool
 * catalog caches the result per verb and profile.
 */
export function profileInputSchema(
  portable: JsonSchema,
  profile: SchemaProfile,
  nullFill: readonly (readonly string[])[] = [],
): ProfiledInput {
  if (profile === 'default') return { schema: portable };
  const fill = new Set(nullFill.map((p) => p.map((k) => `/${escapePointer(k)}`).join('')));
  const c = new Converter(profile, fill);
  const { schema, plan } = c.node(portable, '', true);
  if (profile === 'openai-strict' && c.settable.length > 0) {
    const props = schema.properties as Record<string, unknown>;
    if (props[SET_NULL] === undefined) {
      props[SET_NULL] = {
        type: 'array',
        items: { type: 'string', enum: c.settable },
        description:
          'Properties to set to null (to clear them); [] for none. A property sent as null counts as not sent.',
      };
      (schema.required as string[]).push(SET_NULL);
      return { schema, ...(plan !== undefined ? { plan } : {}), settable: c.settable };
    }
  }
  return { schema, ...(plan !== undefined ? { plan } : {}) };
}

/**
 * Map a client's arguments sent under a profile back to the verb's (see the header). Returns
 * `args` itself when nothing applies, else a new object.
 */
export function toVerbArgs(args: Record<string, unknown>, input: ProfiledInput): Record<string, unknown> {
  if (input.plan === undefined && input.settable === undefined) return args;
  let out = input.plan === undefined ? { ...args } : (applyPlan(args, input.plan) as Record<string, unknown>);
  if (out === args) out = { ...args };
  if (input.settable !== undefined && SET_NULL in out) {
    const list = out[SET_NULL];
    if (
      list === null ||
      (Array.isArray(list) && list.every((p) => typeof p === 'string' && input.settable!.includes(p)))
    ) {
      delete out[SET_NULL];
      for (const p of (list ?? []) as string[]) setAt(out, p);
    }
    // Anything else stays, so the pipeline refuses the unknown property with its pointer.
  }
  return out;
}

function applyPlan(value: unknown, plan: ArgPlan): unknown {
  let v = value;
  if (plan.json === true && typeof v === 'string') {
    try {
      v = JSON.parse(v) as unknown;
    } catch {
      return v; // refused by the pipeline: a string where the verb wants something else
    }
  }
  if (plan.items !== undefined && Array.isArray(v)) return v.map((item) => applyPlan(item, plan.items!));
  if ((plan.props !== undefined || plan.nullIsAbsent !== undefined) && isObject(v)) {
    const o: Record<string, unknown> = { ...v };
    for (const k of plan.nullIsAbsent ?? []) if (o[k] === null) delete o[k];
    for (const [k, sub] of Object.entries(plan.props ?? {})) if (k in o) o[k] = applyPlan(o[k], sub);
    return o;
  }
  return v;
}

function setAt(root: Record<string, unknown>, pointer: string): void {
  const keys = pointer
    .split('/')
    .slice(1)
    .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
  let node: Record<string, unknown> = root;
  for (const k of keys.slice(0, -1)) {
    const next = node[k];
    if (!isObject(next)) return;
    node[k] = { ...next };
    node = node[k] as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = null;
}
