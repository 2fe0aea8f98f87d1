/**
 * The portable JSON Schema subset of the MCP projection: what hosts forward to OpenAI-, Claude-
 * and Gemini-style model APIs without refusing the tool (research: mcp-webmcp.md §1.4, §9).
 *
 * `toPortableSchema(schema, mode)` rewrites a verb's schema (JSON Schema 2020-12, as registered)
 * into that subset. The rewrite only ever LOOSENS a schema: the runtime still validates every
 * call against the verb's own schema, so nothing the projection drops is lost, and an output
 * that the runtime accepts always passes the projected outputSchema.
 *
 *   $ref (local `#/$defs/…`, or to our schema ids)  inlined; a recursive ref becomes `{}` (any)
 *                                                   below its first expansion; an unresolvable
 *                                                   ref is dropped (any)
 *   $schema $id $defs definitions $comment $anchor  dropped
 *   $dynamicRef $dynamicAnchor $vocabulary
 *   if/then/else, unevaluated*, dependent*,         dropped (not in the subset; still enforced
 *   dependencies, min/maxContains, contentSchema    by the runtime)
 *   prefixItems, array-form items                   items: { anyOf: [each position…, rest] }
 *   array without items                             items: {}
 *   type: [a, b]                                    anyOf: [{type: a}, {type: b}]
 *   null: nullable: true, "null" in a type array,   anyOf: [<schema>, {type: "null"}] (null is
 *   null in an enum, a {type: "null"} branch of     declared: clients that validate arguments
 *   anyOf/oneOf                                     accept it); input: a required one also
 *                                                   becomes optional (removed from `required`)
 *                                                   and its absence is mapped back to null on
 *                                                   the call (`nullFill`)
 *   pattern beside format date-time                 dropped (the format says it; both enforced)
 *   input maxLength ≥ 100 (a free-text cap)         dropped (enforced by the runtime)
 *   root                                            type "object", `properties` always present
 *
 * Spec: spec/transports.md §mcp-schemas.
 */
import type { JsonSchema } from '../../spec/types.ts';
import { envelopeSchema, shapeSchemas, verbRecordSchema } from '../../spec/validators.ts';
import { VALID_SHAPES, type Shape } from '../../spec/types.ts';

export type SchemaMode = 'input' | 'output';

export interface PortableSchema {
  schema: JsonSchema;
  /**
   * Input mode: argument paths (through `properties` only) that the verb's schema requires but
   * allows null, projected as optional. `restoreNulls` maps their absence back to null.
   */
  nullFill: string[][];
}

const ROOT_BASE = 'urn:solid-verbs:schema';

/** An input `maxLength` at or above this is a cap on free text, left out of the projection. */
export const LONG_TEXT_CAP = 100;

/** Keywords that never reach the projection. */
const DROPPED = new Set([
  '$schema',
  '$id',
  '$defs',
  'definitions',
  '$comment',
  '$anchor',
  '$dynamicAnchor',
  '$dynamicRef',
  '$vocabulary',
  'if',
  'then',
  'else',
  'unevaluatedProperties',
  'unevaluatedItems',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  'minContains',
  'maxContains',
  'contentSchema',
  'nullable',
]);

/** Keywords that only annotate: a `$ref` with only these beside it merges them into the target. */
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
]);

/** Keywords holding one subschema / an array of them / a map of them. */
const ONE = ['additionalProperties', 'contains', 'propertyNames', 'not'];
const MANY = ['allOf', 'anyOf', 'oneOf'];
const MAP = ['patternProperties'];

let knownResources: Map<string, JsonSchema> | undefined;

/** Our own schemas by $id (a verb's output schema may reference them). */
function known(): Map<string, JsonSchema> {
  if (knownResources === undefined) {
    knownResources = new Map();
    for (const s of [verbRecordSchema, envelopeSchema, ...VALID_SHAPES.map((sh) => shapeSchemas[sh])]) {
      if (typeof s.$id === 'string') knownResources.set(stripHash(s.$id), s);
    }
  }
  return knownResources;
}

function stripHash(url: string): string {
  const i = url.indexOf('#');
  return i < 0 ? url : url.slice(0, i);
}

function resolveUrl(ref: string, base: string): string | undefined {
  try {
    return new URL(ref, base).href;
  } catch {
    return undefined;
  }
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Follow a JSON Pointer fragment (`#/$defs/x`) inside a document. */
function pointer(doc: unknown, fragment: string): unknown {
  if (fragment === '' || fragment === '#') return doc;
  const raw = fragment.startsWith('#') ? fragment.slice(1) : fragment;
  if (!raw.startsWith('/')) return undefined; // plain-name anchors are not resolved
  let node: unknown = doc;
  for (const part of raw.slice(1).split('/')) {
    const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) node = node[Number(key)];
    else if (isObject(node)) node = node[key];
    else return undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

class Rewriter {
  readonly nullFill: string[][] = [];
  readonly #docs = new Map<string, JsonSchema>(known());

  constructor(
    readonly mode: SchemaMode,
    root: JsonSchema,
  ) {
    this.#register(root, ROOT_BASE);
  }

  /** Index every embedded resource ($id) so refs to it resolve. */
  #register(node: unknown, base: string): void {
    if (Array.isArray(node)) {
      for (const n of node) this.#register(n, base);
      return;
    }
    if (!isObject(node)) return;
    let b = base;
    if (typeof node.$id === 'string') {
      const url = resolveUrl(node.$id, base);
      if (url !== undefined) {
        b = stripHash(url);
        this.#docs.set(b, node as JsonSchema);
      }
    } else if (base === ROOT_BASE && !this.#docs.has(ROOT_BASE)) {
      this.#docs.set(ROOT_BASE, node as JsonSchema);
    }
    for (const v of Object.values(node)) this.#register(v, b);
  }

  #lookup(url: string): { node: unknown; base: string } | undefined {
    const docUrl = stripHash(url);
    const doc = this.#docs.get(docUrl);
    if (doc === undefined) return undefined;
    const hash = url.slice(docUrl.length);
    const node = pointer(doc, hash);
    return node === undefined ? undefined : { node, base: docUrl };
  }

  /**
   * Rewrite one node. `path` is the argument path while only `properties` were crossed (null
   * after an array, a combinator, etc.). Returns the rewritten node and whether it admitted null.
   */
  walk(
    node: unknown,
    base: string,
    refs: readonly string[],
    path: string[] | null,
  ): { out: unknown; nullable: boolean } {
    if (typeof node === 'boolean') return { out: node, nullable: false };
    if (!isObject(node)) return { out: {}, nullable: false };
    const here = typeof node.$id === 'string' ? (resolveUrl(node.$id, base) ?? base) : base;

    if (typeof node.$ref === 'string') {
      const { $ref, ...siblings } = node;
      const url = resolveUrl($ref, here);
      const target = url === undefined || refs.includes(url) ? undefined : this.#lookup(url);
      const rest = this.walk(siblings, here, refs, path);
      if (target === undefined) return rest; // recursive or unresolvable: the ref itself is dropped (any)
      const t = this.walk(target.node, target.base, [...refs, url!], path);
      const restObj = rest.out as Record<string, unknown>;
      const restKeys = Object.keys(restObj);
      if (restKeys.length === 0) return t;
      if (isObject(t.out) && restKeys.every((k) => ANNOTATIONS.has(k)))
        return { out: { ...t.out, ...restObj }, nullable: t.nullable || rest.nullable };
      return { out: { allOf: [t.out, restObj] }, nullable: t.nullable && rest.nullable };
    }

    let nullable = node.nullable === true;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      if (DROPPED.has(k)) continue;
      // A bound at the largest safe integer says nothing to a model (JSON numbers past it are not exact anyway).
      if (k === 'maximum' && typeof v === 'number' && v >= Number.MAX_SAFE_INTEGER) continue;
      // A cap on free text (a name, a note, a cursor) is a guard against abuse, not something a
      // model writes near: input schemas leave it out (§mcp-tool-budget); the runtime enforces it.
      if (k === 'maxLength' && this.mode === 'input' && typeof v === 'number' && v >= LONG_TEXT_CAP) continue;
      // A pattern beside format date-time repeats the format (RFC 3339: offset included); the
      // runtime still checks both, and the bytes go to the null branches (§mcp-tool-budget).
      if (k === 'pattern' && node.format === 'date-time') continue;
      out[k] = v;
    }

    // type arrays and null types
    if (Array.isArray(out.type)) {
      const types = (out.type as unknown[]).filter((t) => t !== 'null');
      if (types.length < (out.type as unknown[]).length) nullable = true;
      if (types.length === 0) out.type = 'null';
      else if (types.length === 1) out.type = types[0];
      else {
        delete out.type;
        const anyOfTypes = types.map((t) => ({ type: t }));
        if (out.anyOf !== undefined) {
          out.allOf = [...((out.allOf as unknown[]) ?? []), { anyOf: anyOfTypes }, { anyOf: out.anyOf }];
          delete out.anyOf;
        } else out.anyOf = anyOfTypes;
      }
    }
    if (Array.isArray(out.enum) && out.enum.includes(null)) {
      nullable = true;
      const rest = out.enum.filter((e) => e !== null);
      if (rest.length === 0) delete out.enum;
      else out.enum = rest;
    }

    // subschemas
    if (isObject(out.properties)) {
      const props: Record<string, unknown> = {};
      const nullKeys = new Set<string>();
      for (const [key, sub] of Object.entries(out.properties)) {
        const r = this.walk(sub, here, refs, path === null ? null : [...path, key]);
        props[key] = r.out;
        if (r.nullable && this.mode === 'input') nullKeys.add(key);
      }
      out.properties = props;
      if (nullKeys.size > 0 && Array.isArray(out.required)) {
        const required = (out.required as string[]).filter((k) => !nullKeys.has(k));
        if (path !== null)
          for (const k of out.required as string[]) if (nullKeys.has(k)) this.nullFill.push([...path, k]);
        if (required.length > 0) out.required = required;
        else delete out.required;
      }
    }
    for (const k of MAP) {
      if (isObject(out[k]))
        out[k] = Object.fromEntries(
          Object.entries(out[k] as object).map(([p, s]) => [p, this.walk(s, here, refs, null).out]),
        );
    }
    for (const k of ONE) {
      if (out[k] !== undefined) out[k] = this.walk(out[k], here, refs, null).out;
    }
    for (const k of MANY) {
      if (!Array.isArray(out[k])) continue;
      const branches: unknown[] = [];
      for (const b of out[k] as unknown[]) {
        const r = this.walk(b, here, refs, null);
        if ((k === 'anyOf' || k === 'oneOf') && isNullOnly(r.out)) nullable = true;
        else branches.push(r.out);
      }
      if (branches.length === 0) delete out[k];
      else out[k] = branches;
    }
    // A combinator reduced to one branch by dropping null: fold the branch in when it does not clash.
    for (const k of ['anyOf', 'oneOf']) {
      const b = out[k];
      if (
        Array.isArray(b) &&
        b.length === 1 &&
        isObject(b[0]) &&
        Object.keys(b[0]).every((key) => !(key in out) || key === k)
      ) {
        delete out[k];
        Object.assign(out, b[0]);
      }
    }

    // arrays
    const prefix = Array.isArray(out.prefixItems)
      ? (out.prefixItems as unknown[])
      : Array.isArray(out.items)
        ? (out.items as unknown[])
        : undefined;
    if (prefix !== undefined) {
      // Positional schemas are not portable: every item may be any of them (or of the rest).
      const rest = Array.isArray(out.items) ? (out.additionalItems ?? true) : (out.items ?? true);
      if (rest === true) out.items = {};
      else {
        const branches = prefix.map((p) => this.walk(p, here, refs, null).out);
        if (rest !== false) branches.push(this.walk(rest, here, refs, null).out);
        out.items = branches.length === 0 ? {} : { anyOf: branches };
      }
      delete out.prefixItems;
      delete out.additionalItems;
    } else if (out.items !== undefined) {
      out.items = this.walk(out.items, here, refs, null).out;
    }
    if ((out.type === 'array' || hasType(out, 'array')) && out.items === undefined) out.items = {};

    if (nullable && out.type !== 'null') return { out: withNull(out), nullable: true };
    return { out, nullable };
  }
}

/**
 * A schema that also admits null, without a type array: `anyOf: [<schema>, {type: "null"}]`
 * with the title and description kept on the outside (a bare anyOf gains the null branch).
 */
function withNull(out: Record<string, unknown>): Record<string, unknown> {
  const annotations: Record<string, unknown> = {};
  for (const k of ['title', 'description']) {
    if (out[k] !== undefined) {
      annotations[k] = out[k];
      delete out[k];
    }
  }
  if (Object.keys(out).length === 1 && Array.isArray(out.anyOf))
    return { ...annotations, anyOf: [...(out.anyOf as unknown[]), { type: 'null' }] };
  return { ...annotations, anyOf: [out, { type: 'null' }] };
}

function isNullOnly(s: unknown): boolean {
  return isObject(s) && s.type === 'null' && Object.keys(s).every((k) => k === 'type' || ANNOTATIONS.has(k));
}

function hasType(s: Record<string, unknown>, t: string): boolean {
  return Array.isArray(s.anyOf) && (s.anyOf as unknown[]).some((b) => isObject(b) && b.type === t);
}

/**
 * Rewrite `schema` into the portable subset (see the header). Pure; call it once per
 * registration (the tool catalog caches the result).
 */
export function toPortableSchema(schema: JsonSchema, mode: SchemaMode): PortableSchema {
  const rw = new Rewriter(mode, schema);
  const base = typeof schema.$id === 'string' ? stripHash(schema.$id) : ROOT_BASE;
  const { out } = rw.walk(schema, base, [], []);
  const root = (isObject(out) ? out : {}) as JsonSchema;
  if (root.type === undefined) root.type = 'object';
  if (root.properties === undefined && mode === 'input') root.properties = {};
  return { schema: root, nullFill: rw.nullFill };
}

/**
 * Input mode's inverse: set null where the verb's schema requires a nullable property that the
 * caller (told it was optional) left out. Returns a new object when anything changed.
 */
export function restoreNulls(
  args: Record<string, unknown>,
  nullFill: readonly (readonly string[])[],
): Record<string, unknown> {
  if (nullFill.length === 0) return args;
  let root = args;
  for (const path of nullFill) {
    const parents: Record<string, unknown>[] = [root];
    let node: unknown = root;
    for (const key of path.slice(0, -1)) {
      node = isObject(node) ? node[key] : undefined;
      if (!isObject(node)) break;
      parents.push(node);
    }
    if (parents.length !== path.length) continue;
    const last = path[path.length - 1]!;
    if (last in parents[parents.length - 1]!) continue;
    // copy the chain (never mutate the caller's object)
    const copies = parents.map((p) => ({ ...p }));
    for (let i = 0; i < copies.length - 1; i++) copies[i]![path[i]!] = copies[i + 1];
    copies[copies.length - 1]![last] = null;
    root = copies[0]!;
  }
  return root;
}

/** What `compactOutputSchema` removes: annotations and validation-only constraints. */
const OUTPUT_NOISE = new Set([
  ...ANNOTATIONS,
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  // An output's `format` (date-time, email…) only asserts what the runtime already validated; a
  // model reads the values themselves in the result.
  'format',
]);

/**
 * The success result's schema as MCP lists it: the portable output schema (toPortableSchema
 * 'output') reduced to its structure — types, properties, required, items, enum/const,
 * additionalProperties when it is a schema — without titles, descriptions, examples,
 * value constraints (length, range, pattern, format) or boolean additionalProperties, and with an `anyOf` nested directly in another flattened. Only ever
 * LOOSENS: a result the runtime accepted (it validates every output against the verb's full
 * schema) still passes. What the shapes mean is said once, in the server instructions, instead
 * of in every tool (spec/transports.md §mcp-tool-budget).
 */
export function compactOutputSchema(schema: JsonSchema, shape?: Shape): JsonSchema {
  const out = compactNode(schema);
  const root = (isObject(out) ? out : { type: 'object' }) as JsonSchema;
  // Shared fields may be left out only where extra properties are allowed.
  return shape === undefined || schema.additionalProperties === false
    ? root
    : withoutSharedFields(root, shape);
}

const shapeBases = new Map<Shape, Record<string, string>>();

/**
 * The shared part of a shape, not repeated: a root property that the shape's own schema declares
 * identically, that the verb does not require, is dropped when the root admits extra properties
 * (so the result still validates). E.g. a receipt keeps status and audit_id (required) and its
 * own fields; rollback_handle, idempotency_key, timestamp, replayed and attestation are
 * described once, in the server instructions.
 */
function withoutSharedFields(root: JsonSchema, shape: Shape): JsonSchema {
  const props = root.properties;
  if (!isObject(props)) return root;
  let base = shapeBases.get(shape);
  if (base === undefined) {
    const b = compactNode(toPortableSchema(shapeSchemas[shape], 'output').schema) as JsonSchema;
    base = Object.fromEntries(
      Object.entries(isObject(b.properties) ? b.properties : {}).map(([k, v]) => [k, JSON.stringify(v)]),
    );
    shapeBases.set(shape, base);
  }
  const required = new Set(Array.isArray(root.required) ? (root.required as string[]) : []);
  const kept: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(props)) {
    if (!required.has(k) && base[k] !== undefined && base[k] === JSON.stringify(v)) continue;
    kept[k] = v;
  }
  return { ...root, properties: kept };
}

function compactNode(node: unknown): unknown {
  if (!isObject(node)) return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (OUTPUT_NOISE.has(k)) continue;
    if (k === 'additionalProperties' && typeof v === 'boolean') continue;
    if ((k === 'properties' || k === 'patternProperties') && isObject(v))
      out[k] = Object.fromEntries(Object.entries(v).map(([p, sub]) => [p, compactNode(sub)]));
    else if (ONE.includes(k) || k === 'items') out[k] = compactNode(v);
    else if (MANY.includes(k) && Array.isArray(v)) {
      const branches: unknown[] = [];
      for (const b of v.map(compactNode)) {
        // anyOf: [{anyOf: [a, b]}, c] → anyOf: [a, b, c]
        if (k === 'anyOf' && isObject(b) && Object.keys(b).length === 1 && Array.isArray(b.anyOf))
          branches.push(...(b.anyOf as unknown[]));
        else branches.push(b);
      }
      out[k] = branches;
    } else out[k] = v;
  }
  return out;
}
