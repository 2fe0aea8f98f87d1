/**
 * The one verb registry. Registration validates everything a dispatch needs (the input schema
 * against the 2020-12 meta-schema, output schema, tool-name projection, role/tier floors); a
 * verb's input validator is compiled on its first call (./schema-compiler.ts), so start-up
 * compiles no schema. The runtime's own verbs (defineSystemVerb) skip the meta-schema, strict
 * schema and VerbRecord checks here: test/runtime/registry.test.ts makes them on every one.
 * Every transport projects from here; `list({ surface, shape })` is the manifest.
 *
 * Registration-time errors (RegistrationError, naming the verb and field): bad name pattern,
 * unknown shape, company_id/user_id anywhere in the input schema, a write verb without a consent
 * class, a typed-phrase class without a phrase builder, a tool-name projection that collides, a
 * schema the strict check refuses (schema-check.ts: an unknown keyword or format, a keyword's
 * value of the wrong kind — every problem at once, each with its JSON Pointer). Last write wins for the same name.
 *
 * Spec: spec/manifest.md §registration, spec/manifest.md §tool-names.
 */
import { createHash } from 'node:crypto';
import type { ZodType } from 'zod';
import {
  ROLES,
  TIERS,
  VALID_SHAPES,
  VALID_SURFACES,
  VERB_CLASSES,
  WEBMCP_SURFACES,
  type JsonSchema,
  type Shape,
  type Surface,
  type VerbRecord,
} from '../spec/types.ts';
import {
  findIdentityProperties,
  shapeSchemas,
  validateVerbRecord,
  verbRecordSchema,
} from '../spec/validators.ts';
import { ROLE_FLOOR_OF_CLASS, isSystemDefinition, type CompiledVerb, type VerbDefinition } from './verb.ts';
import {
  checkSchema as checkMetaSchema,
  compileInputSchema,
  compileOutputSchema,
  type CompiledSchema,
} from './schema-compiler.ts';
import { ReasonTable } from '../spec/reasons.ts';
import { schemaProblems } from './schema-check.ts';

/**
 * A verb the registry refuses: `verb` names it, `field` the member at fault (`consent`,
 * `input_schema/properties/text/maxLenght`, …). When a schema has several problems, `problems`
 * holds every one (field and message each; the first is also `field`), so they are fixed at once.
 */
export class RegistrationError extends Error {
  override readonly name = 'RegistrationError';
  /** Every problem found (at least the one named by `field`). */
  readonly problems: readonly { field: string; message: string }[];
  constructor(
    readonly verb: string,
    readonly field: string,
    message: string,
    problems?: readonly { field: string; message: string }[],
  ) {
    super(
      problems !== undefined && problems.length > 1
        ? `verb "${verb}": ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`
        : `verb "${verb}": ${field}: ${message}`,
    );
    this.problems = problems ?? [{ field, message }];
  }
}

/** Schemas (by identity) the strict check found sound: a second registry checks nothing again. */
const SOUND_SCHEMAS = new WeakSet<object>();

/** Throw one RegistrationError holding every strict-check problem of `schema` (field prefix `at`). */
function checkSchema(verb: string, at: 'input_schema' | 'output', schema: JsonSchema): void {
  if (SOUND_SCHEMAS.has(schema)) return;
  const problems = schemaProblems(schema).map((p) => ({ field: `${at}${p.pointer}`, message: p.message }));
  if (problems.length === 0) {
    SOUND_SCHEMAS.add(schema);
    return;
  }
  throw new RegistrationError(verb, problems[0]!.field, problems[0]!.message, problems);
}

/** Shapes whose verbs change state (they need a consent class or a delegated gate). */
export const WRITE_SHAPES: ReadonlySet<Shape> = new Set<Shape>(['transaction', 'receipt', 'revert', 'macro']);

const NAME_PATTERN = /^[a-zA-Z][a-zA-Z0-9_.]*$/;
const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Project a verb name onto a tool name accepted by OpenAI, Claude and Gemini
 * (^[a-zA-Z0-9_-]{1,64}$): every "." becomes "__". Reversible for every registered verb because
 * the registry refuses collisions. spec/manifest.md §tool-names
 */
export function toToolName(verbName: string): string {
  return verbName.replace(/\./g, '__');
}

/** Inline `$ref`s to our own schemas and drop `$schema`/`$id`, for manifest and tool projections. */
export function inlineSchema(schema: JsonSchema): JsonSchema {
  const byId = new Map<string, JsonSchema>();
  byId.set(verbRecordSchema.$id as string, verbRecordSchema);
  for (const s of VALID_SHAPES) byId.set(shapeSchemas[s].$id as string, shapeSchemas[s]);
  const resolve = (ref: string, base: string | undefined): JsonSchema | undefined => {
    try {
      const url = new URL(ref, base ?? 'https://schemas.solid-verbs.dev/v1/').href;
      return byId.get(url);
    } catch {
      return undefined;
    }
  };
  const walk = (node: unknown, base: string | undefined, depth: number): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n, base, depth));
    if (node === null || typeof node !== 'object') return node;
    const obj = node as Record<string, unknown>;
    const nextBase = typeof obj.$id === 'string' ? obj.$id : base;
    if (typeof obj.$ref === 'string' && depth < 8) {
      const target = resolve(obj.$ref, nextBase);
      if (target !== undefined) {
        const { $ref: _ref, ...rest } = obj;
        return walk({ ...target, ...rest }, target.$id as string, depth + 1);
      }
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(obj)) {
      if (k === '$schema' || k === '$id') continue;
      out[k] = walk(v, nextBase, depth);
    }
    return out;
  };
  return walk(schema, schema.$id as string | undefined, 0) as JsonSchema;
}

/** The inlined output schema of each shape, built once and frozen: most verbs share their shape's. */
const SHAPE_OUTPUTS = new Map<Shape, JsonSchema>();

function shapeOutputSchema(shape: Shape): JsonSchema {
  let out = SHAPE_OUTPUTS.get(shape);
  if (out === undefined) {
    out = deepFreeze(inlineSchema(shapeSchemas[shape]));
    SHAPE_OUTPUTS.set(shape, out);
  }
  return out;
}

function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object' || Object.isFrozen(v)) continue;
    Object.freeze(v);
    for (const child of Object.values(v)) stack.push(child);
  }
  return value;
}

function isZod(x: unknown): x is ZodType {
  return typeof x === 'object' && x !== null && '_zod' in x;
}

export interface ListOptions {
  surface?: Surface | string;
  shape?: Shape | string;
}

/** The verb registry: validates and compiles verbs at registration and projects the manifest (`list`). One per runtime (`rt.registry`). spec/manifest.md §registration */
export class Registry {
  readonly #verbs = new Map<string, CompiledVerb>();
  readonly #byTool = new Map<string, CompiledVerb>();
  readonly #listeners = new Set<() => void>();
  #cache = new Map<string, VerbRecord[]>();
  #etag: string | undefined;
  #sortedNames: string[] | undefined;
  #trigrams: NameIndex | undefined;
  readonly #compileOutputs: boolean;
  /**
   * The reasons this runtime knows beyond the core table: those its packs declared
   * (`definePack({ reasons })`, stored by installPack). Transports look statuses up here.
   */
  readonly reasons = new ReasonTable();

  /**
   * `compileOutputs`: compile every verb's output schema at registration (default true; the
   * runtime passes its `validateOutputs` option, so a runtime that never checks outputs never
   * compiles them).
   */
  constructor(options: { compileOutputs?: boolean } = {}) {
    this.#compileOutputs = options.compileOutputs ?? true;
  }

  /** Register (or replace) a verb. Throws RegistrationError naming the verb and the field. */
  register(definition: VerbDefinition): CompiledVerb {
    const compiled = this.#compile(definition);
    const previous = this.#verbs.get(compiled.name);
    const clash = this.#byTool.get(compiled.toolName);
    if (clash !== undefined && clash.name !== compiled.name) {
      throw new RegistrationError(
        compiled.name,
        'name',
        `its tool name "${compiled.toolName}" collides with verb "${clash.name}"`,
      );
    }
    if (previous !== undefined) this.#byTool.delete(previous.toolName);
    this.#verbs.set(compiled.name, compiled);
    this.#byTool.set(compiled.toolName, compiled);
    this.#changed();
    return compiled;
  }

  /** Register several verbs. */
  registerAll(definitions: readonly VerbDefinition[]): void {
    for (const d of definitions) this.register(d);
  }

  /** Remove a verb (tests, hot reload). */
  unregister(name: string): boolean {
    const v = this.#verbs.get(name);
    if (v === undefined) return false;
    this.#verbs.delete(name);
    this.#byTool.delete(v.toolName);
    this.#changed();
    return true;
  }

  /** Look a verb up by its name or by its tool-name projection. */
  get(name: string): CompiledVerb | undefined {
    return this.#verbs.get(name) ?? this.#byTool.get(name);
  }

  /**
   * The name an audit row records for a requested `name`: the registered verb's name when `name`
   * is a verb or its tool-name projection (`crm__add_note` → `crm.add_note`), else `name` as
   * given. Every refusal is recorded under it — the transport's, and the pipeline's before the
   * verb is resolved — so audit.trail filtered by a verb finds each of them (spec/audit.md).
   */
  verbNameOf(name: string): string {
    return this.get(name)?.name ?? name;
  }

  /** All compiled verbs, sorted by name. */
  all(): CompiledVerb[] {
    return this.#names().map((n) => this.#verbs.get(n)!);
  }

  /** How many verbs are registered. */
  get size(): number {
    return this.#verbs.size;
  }

  /**
   * The manifest: spec-valid VerbRecords, filtered by surface and shape, sorted by name.
   * Cached until the next registration.
   */
  list(options: ListOptions = {}): VerbRecord[] {
    const key = `${options.surface ?? ''}|${options.shape ?? ''}`;
    let out = this.#cache.get(key);
    if (out === undefined) {
      out = this.all()
        .filter((v) => (options.surface ? v.surfaces.includes(options.surface as Surface) : true))
        .filter((v) => (options.shape ? v.shape === options.shape : true))
        .map((v) => v.record);
      this.#cache.set(key, out);
    }
    return out;
  }

  /** A strong ETag of the whole manifest (changes whenever any verb changes). */
  etag(): string {
    this.#etag ??= `"${createHash('sha256').update(JSON.stringify(this.list())).digest('base64url').slice(0, 27)}"`;
    return this.#etag;
  }

  /**
   * Up to `n` registered names closest to `name` (for unknown_verb hints), by edit distance.
   * Bounded work whatever the catalogue size (an unknown name is a cheap request to send): the
   * candidates are the names sharing the most trigrams with `name`, read from an index built once
   * per registry change, visiting at most CLOSEST_MAX_POSTINGS index entries; only the best
   * CLOSEST_CANDIDATES of them get an edit distance. Names longer than CLOSEST_MAX_NAME get no hint.
   */
  closest(name: string, n = 3): string[] {
    return (this.#trigrams ??= new NameIndex(this.#names())).closest(name, n);
  }

  /** Called after every change (MCP list_changed, manifest caches). Returns an unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #names(): string[] {
    this.#sortedNames ??= [...this.#verbs.keys()].sort();
    return this.#sortedNames;
  }

  #changed(): void {
    this.#cache = new Map();
    this.#etag = undefined;
    this.#sortedNames = undefined;
    this.#trigrams = undefined;
    for (const l of this.#listeners) l();
  }

  #compile(def: VerbDefinition): CompiledVerb {
    const name = def?.name;
    if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
      throw new RegistrationError(String(name), 'name', `must match ${NAME_PATTERN.source}`);
    }
    if (!(VALID_SHAPES as readonly string[]).includes(def.shape)) {
      throw new RegistrationError(
        name,
        'shape',
        `"${String(def.shape)}" must be one of: ${VALID_SHAPES.join(', ')}`,
      );
    }
    if (typeof def.description !== 'string' || def.description.trim() === '') {
      throw new RegistrationError(
        name,
        'description',
        'is required (written for an LLM: what the verb does and returns)',
      );
    }
    if (typeof def.category !== 'string' || !/^[a-z][a-z0-9_]*$/.test(def.category)) {
      throw new RegistrationError(name, 'category', 'is required and must be snake_case');
    }
    if (typeof def.handler !== 'function') throw new RegistrationError(name, 'handler', 'must be a function');

    // Input schema: zod 4 → JSON Schema 2020-12 (the schema's own method, the same output as
    // z.toJSONSchema: the runtime never imports zod, issue 36); otherwise as authored.
    let inputSchema: JsonSchema;
    if (isZod(def.input)) {
      inputSchema = def.input.toJSONSchema({ target: 'draft-2020-12' }) as JsonSchema;
      delete inputSchema.$schema;
    } else if (def.input !== null && typeof def.input === 'object' && !Array.isArray(def.input)) {
      inputSchema = def.input as JsonSchema;
    } else {
      throw new RegistrationError(name, 'input', 'must be a JSON Schema object or a zod schema');
    }
    if (inputSchema.type !== undefined && inputSchema.type !== 'object') {
      throw new RegistrationError(name, 'input_schema.type', 'the root of an input schema must be "object"');
    }
    // Strict check (a misspelt keyword, a value of the wrong kind, an unknown format): every
    // problem at once, before compiling (the compiler itself stays lenient). The runtime's own
    // verbs are checked by test/runtime/registry.test.ts instead, like the meta-schema below.
    if (!isSystemDefinition(def)) {
      checkSchema(name, 'input_schema', inputSchema);
      if (def.output !== undefined && def.output !== null && typeof def.output === 'object')
        checkSchema(name, 'output', def.output);
    }
    const identity = findIdentityProperties(inputSchema);
    if (identity.length > 0) {
      throw new RegistrationError(
        name,
        identity[0]!,
        'company_id and user_id are injected by the runtime from authentication and may never be declared',
      );
    }

    // Consent class and its consistency with the public record.
    const delegated = typeof def.delegateConsent === 'function';
    if (def.consent !== undefined && !(VERB_CLASSES as readonly string[]).includes(def.consent)) {
      throw new RegistrationError(
        name,
        'consent',
        `"${def.consent}" must be one of: ${VERB_CLASSES.join(', ')}`,
      );
    }
    const declaredWrite = def.side_effects === 'write' || def.side_effects === 'mixed';
    if ((WRITE_SHAPES.has(def.shape) || declaredWrite) && def.consent === undefined && !delegated) {
      throw new RegistrationError(
        name,
        'consent',
        `a write verb (shape ${def.shape}) must declare its consent class (WRITE_REVERSIBLE, WRITE_FINANCIAL, IRREVERSIBLE or BLOCKED)`,
      );
    }
    const consentClass = def.consent ?? 'READ';
    if (consentClass === 'READ' && declaredWrite && !delegated) {
      throw new RegistrationError(
        name,
        'side_effects',
        `a READ verb cannot declare side_effects "${def.side_effects}"`,
      );
    }
    if (consentClass !== 'READ' && def.side_effects === 'read') {
      throw new RegistrationError(
        name,
        'side_effects',
        `a ${consentClass} verb cannot declare side_effects "read"`,
      );
    }
    if (
      (consentClass === 'WRITE_FINANCIAL' || consentClass === 'IRREVERSIBLE') &&
      typeof def.phrase !== 'function'
    ) {
      throw new RegistrationError(
        name,
        'phrase',
        `${consentClass} verbs need a typed-phrase builder (e.g. "CHARGE $50.00 to invoice #4242")`,
      );
    }
    if (def.ungated !== undefined && (!delegated || typeof def.ungated !== 'string' || def.ungated === '')) {
      throw new RegistrationError(
        name,
        'ungated',
        'only a verb that delegates its consent may declare it never gates, with the reason in words',
      );
    }
    if (def.revert !== undefined && typeof def.revert.handler !== 'function') {
      throw new RegistrationError(name, 'revert.handler', 'must be a function');
    }
    const isWrite = consentClass !== 'READ' || delegated;
    const sideEffects = def.side_effects ?? (isWrite ? (def.revert ? 'mixed' : 'write') : 'read');

    const roleFloor = def.role_floor ?? ROLE_FLOOR_OF_CLASS[consentClass];
    if (!(ROLES as readonly string[]).includes(roleFloor))
      throw new RegistrationError(name, 'role_floor', `"${roleFloor}" must be one of: ${ROLES.join(', ')}`);
    if (
      def.role_floor !== undefined &&
      ROLE_RANK_OF(def.role_floor) < ROLE_RANK_OF(ROLE_FLOOR_OF_CLASS[consentClass])
    ) {
      throw new RegistrationError(
        name,
        'role_floor',
        `cannot be lower than the ${consentClass} floor (${ROLE_FLOOR_OF_CLASS[consentClass]})`,
      );
    }
    const tierFloor = def.tier_floor ?? 'starter';
    if (!(TIERS as readonly string[]).includes(tierFloor))
      throw new RegistrationError(name, 'tier_floor', `"${tierFloor}" must be one of: ${TIERS.join(', ')}`);
    const surfaces = def.surfaces ?? [...VALID_SURFACES];
    for (const s of surfaces) {
      if (!(VALID_SURFACES as readonly string[]).includes(s))
        throw new RegistrationError(name, 'surfaces', `"${s}" must be one of: ${VALID_SURFACES.join(', ')}`);
    }
    const webmcpSurfaces = def.webmcp_surfaces ?? ['dashboard'];
    for (const s of webmcpSurfaces) {
      if (!(WEBMCP_SURFACES as readonly string[]).includes(s))
        throw new RegistrationError(
          name,
          'webmcp_surfaces',
          `"${s}" must be one of: ${WEBMCP_SURFACES.join(', ')}`,
        );
    }
    const toolName = toToolName(name);
    if (!TOOL_NAME_PATTERN.test(toolName)) {
      throw new RegistrationError(
        name,
        'name',
        `its tool name "${toolName}" must match ${TOOL_NAME_PATTERN.source} (at most 64 characters after projection)`,
      );
    }

    // The agent's free-text arguments must be declared top-level properties (spec/consent.md §pending).
    for (const f of def.agent_text ?? []) {
      const props = (inputSchema as { properties?: Record<string, unknown> }).properties ?? {};
      if (!Object.hasOwn(props, f))
        throw new RegistrationError(name, 'agent_text', `"${f}" is not a top-level property of the input`);
    }
    const outputSchema = def.output !== undefined ? inlineSchema(def.output) : shapeOutputSchema(def.shape);
    const record: VerbRecord = {
      name,
      description:
        def.ungated === undefined ? def.description : `${def.description} No consent gate: ${def.ungated}`,
      shape: def.shape,
      side_effects: sideEffects,
      input_schema: inputSchema,
      output_schema: outputSchema,
      surfaces: [...surfaces],
      // A delegated verb that never gates says so (`ungated`, with why): the record says what runs.
      requires_consent: isWrite && consentClass !== 'READ' ? true : delegated && def.ungated === undefined,
      tier_floor: tierFloor,
    };
    // The runtime's own verbs (defineSystemVerb) are checked by the test suite instead, so a
    // command registering only them compiles neither the VerbRecord schema nor the meta-schema.
    const system = isSystemDefinition(def);
    if (!system) {
      const check = validateVerbRecord(record);
      if (!check.valid) throw new RegistrationError(name, 'record', check.errors.join('; '));
    }

    // The input schema is checked here (a bad pack fails at start) and compiled on the verb's first
    // validation (./schema-compiler.ts): a command that calls one verb compiles one schema.
    const invalid = system ? undefined : checkMetaSchema(inputSchema);
    if (invalid !== undefined)
      throw new RegistrationError(name, 'input_schema', `is not a valid JSON Schema: ${invalid}`);
    let validate: CompiledSchema | undefined;
    const inputValidator = (): CompiledSchema => {
      if (validate !== undefined) return validate;
      try {
        return (validate = compileInputSchema(inputSchema));
      } catch (err) {
        throw new RegistrationError(name, 'input_schema', `does not compile: ${(err as Error).message}`);
      }
    };
    // Output schemas are checked only when the runtime validates outputs (tests, development):
    // then they compile here, never at dispatch; otherwise they are not compiled at all, so a CLI
    // command or `solid mcp` does not pay ~100 output compilations at boot.
    let validateOutput: CompiledSchema | undefined;
    if (this.#compileOutputs) {
      try {
        validateOutput = compileOutputSchema(outputSchema);
      } catch (err) {
        throw new RegistrationError(name, 'output_schema', `does not compile: ${(err as Error).message}`);
      }
    }
    const outputValidator = (): CompiledSchema => (validateOutput ??= compileOutputSchema(outputSchema));

    return Object.freeze({
      definition: def,
      name,
      shape: def.shape,
      category: def.category,
      consentClass,
      delegated,
      isWrite,
      roleFloor,
      tierFloor,
      surfaces: Object.freeze([...surfaces]),
      webmcpSurfaces: Object.freeze([...webmcpSurfaces]),
      inputSchema,
      outputSchema,
      record,
      toolName,
      validate: (args: unknown) => inputValidator()(args) as boolean,
      validateErrors: () => validate?.errors,
      validateOutput: (result: unknown) => outputValidator()(result) as boolean,
      outputErrors: () => outputValidator().errors,
      secretPaths: Object.freeze((def.secret_fields ?? []).map((p) => p.split('.'))),
      revertible: def.revert !== undefined,
    });
  }
}

function ROLE_RANK_OF(role: string): number {
  return (ROLES as readonly string[]).indexOf(role);
}

/** Longest name closest() looks at (verb names are at most 64 characters after projection). */
const CLOSEST_MAX_NAME = 128;
/** Index entries closest() visits at most per call (the rarest trigrams first). */
const CLOSEST_MAX_POSTINGS = 1024;
/** Names closest() computes an edit distance for, at most. */
const CLOSEST_CANDIDATES = 16;

/**
 * The closest-name lookup over a fixed list of names: a trigram index built once, bounded work
 * per lookup (see Registry.closest). Also used by the MCP bridge's registry of a remote manifest.
 */
export class NameIndex {
  readonly #index: TrigramIndex;
  constructor(names: readonly string[]) {
    this.#index = buildTrigramIndex(names);
  }

  /** Up to `n` of the names closest to `name` by edit distance ([] for a name over 128 characters). */
  closest(name: string, n = 3): string[] {
    if (name.length > CLOSEST_MAX_NAME) return [];
    const target = name.toLowerCase().replace(/__/g, '.');
    const index = this.#index;
    const shared = new Map<number, number>();
    const postings = [...new Set(trigramsOf(target))]
      .map((g) => index.postings.get(g))
      .filter((p): p is number[] => p !== undefined)
      .sort((a, b) => a.length - b.length);
    let visited = 0;
    for (const list of postings) {
      if (visited + list.length > CLOSEST_MAX_POSTINGS) break;
      visited += list.length;
      for (const id of list) shared.set(id, (shared.get(id) ?? 0) + 1);
    }
    return [...shared]
      .sort((a, b) => b[1] - a[1] || a[0] - b[0])
      .slice(0, CLOSEST_CANDIDATES)
      .map(([id]) => {
        const cand = index.names[id]!;
        return { cand, d: distance(target, cand.toLowerCase()) };
      })
      .sort((a, b) => a.d - b.d || a.cand.localeCompare(b.cand))
      .slice(0, n)
      .filter((x) => x.d <= Math.max(4, Math.ceil(target.length / 2)))
      .map((x) => x.cand);
  }
}

interface TrigramIndex {
  names: readonly string[];
  /** Trigram → ids (indexes into names) of the names holding it. */
  postings: Map<string, number[]>;
}

/** Trigrams of a lower-cased name padded with one space each side ("ab" → " ab", "ab "). */
function trigramsOf(lower: string): string[] {
  const s = ` ${lower} `;
  const out: string[] = [];
  for (let i = 0; i + 3 <= s.length; i++) out.push(s.slice(i, i + 3));
  return out;
}

function buildTrigramIndex(names: readonly string[]): TrigramIndex {
  const postings = new Map<string, number[]>();
  names.forEach((name, id) => {
    for (const g of new Set(trigramsOf(name.toLowerCase()))) {
      const list = postings.get(g);
      if (list === undefined) postings.set(g, [id]);
      else list.push(id);
    }
  });
  return { names, postings };
}

/** Levenshtein distance (small strings). */
function distance(a: string, b: string): number {
  if (a === b) return 0;
  const prev = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length]!;
}
