/**
 * The MCP projection of the registry: one `Tool` per verb whose surfaces include `mcp_stdio`,
 * computed once per registry change (registry.onChange) and shared by every MCP server of the
 * process (stdio, every Streamable HTTP session). Never computed per call.
 *
 *   name          the registry's tool name (`verb.toolName`: dots → "__"; the registry refuses
 *                 collisions, so the projection is reversible; tools/call accepts both forms)
 *   title         the verb's title, only when it says more than the name (a title whose words
 *                 all appear in the name, "Search contacts" for crm_contacts_search, is left out:
 *                 hosts show the name then)
 *   description   the verb's description
 *   inputSchema   the verb's input schema in the portable subset (portable-schema.ts), or in
 *                 the dialect of a schema profile (schema-profiles.ts: openai-strict, gemini;
 *                 each profile projected once per verb, on first use)
 *   outputSchema  none: MCP never requires one, and without it the answer is the compact JSON
 *                 text alone (envelope-map.ts); the shape's output schema is the manifest's
 *                 (verbs.list, describe_verb)
 *   annotations   only the hints that differ from MCP's defaults:
 *                 readOnlyHint: true    class READ and consent not delegated
 *                 destructiveHint: false  a write that is none of: WRITE_FINANCIAL,
 *                                  IRREVERSIBLE, without a revert handler, delegated
 *                 idempotentHint: true  a write that declares `idempotent`
 *                 openWorldHint: false  unless the verb declares `open_world`
 *   _meta         dev.solid-verbs/{consent_class on writes (a read's is READ: readOnlyHint); role_floor when not the class default,
 *                 tier_floor above starter, revertible on writes} (meta-keys.ts), left out when
 *                 empty (a read at the starter tier with its class's floor); the verb name
 *                 is the tool name with "__" as "." (or the name itself when it has no dot)

 * tools/list is paginated with an opaque cursor (the last tool name of the previous page,
 * base64url), so a page boundary survives verbs being added or removed between pages.
 *
 * Spec: spec/transports.md §mcp-tools.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpRuntime as Runtime } from '../runtime-surface.ts';
import type { JsonSchema } from '../../spec/types.ts';
import { ROLE_FLOOR_OF_CLASS, type CompiledVerb } from '../../runtime/verb.ts';
import { META } from './meta-keys.ts';
import { restoreNulls, toPortableSchema } from './portable-schema.ts';
import { profileInputSchema, toVerbArgs, type ProfiledInput, type SchemaProfile } from './schema-profiles.ts';

/** The surface a verb must list to be projected onto MCP (stdio and Streamable HTTP alike). */
export const MCP_SURFACE = 'mcp_stdio';

/** Default tools/list page size. */
export const DEFAULT_PAGE_SIZE = 100;

/** One projected verb: the wire Tool plus what tools/call needs. */
export interface CatalogEntry {
  tool: Tool;
  verb: CompiledVerb;
  /** Argument paths mapped back to null (portable-schema.ts, restoreNulls). */
  nullFill: string[][];
  /** The served profile of `tool.inputSchema` and how its arguments map back (schema-profiles.ts). */
  profile: SchemaProfile;
  input: ProfiledInput;
  /** A preview's write whose arguments it takes (its argument descriptions are that tool's). */
  argumentsOf?: CompiledVerb;
}

/**
 * The verb's arguments from what a client sent against `entry.tool.inputSchema`: the profile's
 * mapping (schema-profiles.ts toVerbArgs), then required nullables left out → null
 * (restoreNulls). Anything but an object is returned as sent (the pipeline refuses it).
 */
export function verbArgsOf(entry: CatalogEntry, args: Record<string, unknown>): Record<string, unknown> {
  return restoreNulls(toVerbArgs(args, entry.input), entry.nullFill);
}

interface Snapshot {
  version: number;
  entries: CatalogEntry[];
  byName: Map<string, CatalogEntry>;
  /** Sorted tool names, for stable pages and the change check. */
  signature: string;
}

/** Thrown for a cursor that is not one of ours (the server answers JSON-RPC -32602). */
export class CursorError extends Error {
  override readonly name = 'CursorError';
}

/**
 * The cached projection. Subscribe with `onChange` to learn when the SET of tools (or any tool's
 * definition) changed; `dispose` stops listening to the registry.
 */
export class ToolCatalog {
  readonly #rt: Runtime;
  readonly #pageSize: number;
  readonly #listeners = new Set<() => void>();
  readonly #unsubscribe: () => void;
  /** Projections by profile and compiled verb (a re-registered verb is a new object, so it is re-projected). */
  readonly #projected = new Map<SchemaProfile, WeakMap<CompiledVerb, CatalogEntry>>();
  /** Snapshots by profile; the default one decides versions and change notifications. */
  readonly #snapshots = new Map<SchemaProfile, Snapshot>();
  #version = 0;
  #lastSignature: string | undefined;
  #notifiedSignature: string;
  #checkScheduled = false;

  constructor(rt: Runtime, options: { pageSize?: number } = {}) {
    this.#rt = rt;
    this.#pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
    if (!Number.isInteger(this.#pageSize) || this.#pageSize < 1)
      throw new RangeError('pageSize must be a positive integer');
    this.#unsubscribe = rt.registry.onChange(() => this.#invalidate());
    this.#notifiedSignature = this.#current().signature;
  }

  /** Every projected tool, sorted by name (the default profile). */
  get entries(): readonly CatalogEntry[] {
    return this.#current().entries;
  }

  /** Every projected tool under a schema profile, sorted by name. */
  entriesOf(profile: SchemaProfile): readonly CatalogEntry[] {
    return this.#current(profile).entries;
  }

  /** Increases whenever the projection is recomputed after a change that affected it. */
  get version(): number {
    return this.#current().version;
  }

  /**
   * Look a tool up by its tool name or by its verb name (both forms are accepted). Undefined when
   * no verb of that name is projected onto MCP.
   */
  lookup(name: string, profile: SchemaProfile = 'default'): CatalogEntry | undefined {
    const snap = this.#current(profile);
    const direct = snap.byName.get(name);
    if (direct !== undefined) return direct;
    const verb = this.#rt.registry.get(name);
    return verb === undefined ? undefined : snap.byName.get(verb.toolName);
  }

  /**
   * One page of tools/list; with `admits`, only the verbs it admits (a toolset selection,
   * toolsets.ts); with `profile`, input schemas in that dialect (schema-profiles.ts). Throws
   * CursorError for a cursor we did not issue.
   */
  page(
    cursor: string | undefined,
    admits?: (verb: CompiledVerb) => boolean,
    profile: SchemaProfile = 'default',
  ): { tools: Tool[]; nextCursor?: string } {
    const all = this.#current(profile).entries;
    const entries = admits === undefined ? all : all.filter((e) => admits(e.verb));
    let start = 0;
    if (cursor !== undefined) {
      const after = decodeCursor(cursor);
      start = entries.findIndex((e) => e.tool.name > after);
      if (start < 0) start = entries.length;
    }
    const slice = entries.slice(start, start + this.#pageSize);
    const more = start + this.#pageSize < entries.length;
    return {
      tools: slice.map((e) => e.tool),
      ...(more ? { nextCursor: encodeCursor(slice[slice.length - 1]!.tool.name) } : {}),
    };
  }

  /**
   * Called (once per burst of registrations, on the next turn of the event loop) after what MCP
   * clients see changed; the servers send notifications/tools/list_changed. Returns an unsubscribe.
   */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stop following the registry and drop the listeners. */
  dispose(): void {
    this.#unsubscribe();
    this.#listeners.clear();
  }

  #invalidate(): void {
    this.#snapshots.clear();
    if (this.#checkScheduled) return;
    this.#checkScheduled = true;
    setImmediate(() => {
      this.#checkScheduled = false;
      const { signature } = this.#current();
      if (signature === this.#notifiedSignature) return;
      this.#notifiedSignature = signature;
      for (const l of this.#listeners) {
        try {
          l();
        } catch (err) {
          this.#rt.logger.error({ err }, 'tool catalog listener failed');
        }
      }
    });
  }

  #current(profile: SchemaProfile = 'default'): Snapshot {
    const cached = this.#snapshots.get(profile);
    if (cached !== undefined) return cached;
    // The default snapshot first: it counts versions (a profile changes only with it).
    const version = profile === 'default' ? undefined : this.#current().version;
    let projected = this.#projected.get(profile);
    if (projected === undefined) this.#projected.set(profile, (projected = new WeakMap()));
    const entries: CatalogEntry[] = [];
    const verbs = this.#rt.registry.all().filter((v) => v.surfaces.includes(MCP_SURFACE));
    const writeOf = previewWrites(verbs);
    for (const v of verbs) {
      const argumentsOf = writeOf.get(v);
      let e = projected.get(v);
      if (e === undefined || e.argumentsOf !== argumentsOf) {
        e = projectVerb(v, profile, argumentsOf);
        projected.set(v, e);
      }
      entries.push(e);
    }
    entries.sort((a, b) => (a.tool.name < b.tool.name ? -1 : a.tool.name > b.tool.name ? 1 : 0));
    const signature = JSON.stringify(entries.map((e) => e.tool));
    if (version === undefined) {
      if (signature !== this.#lastSignature) this.#version++;
      this.#lastSignature = signature;
    }
    const snap = {
      version: version ?? this.#version,
      entries,
      byName: new Map(entries.map((e) => [e.tool.name, e])),
      signature,
    };
    this.#snapshots.set(profile, snap);
    return snap;
  }
}

/**
 * Each preview verb (shape `preview`) whose input schema is exactly that of one write on MCP,
 * mapped to that write: the preview's tool says its arguments once, by naming the write's tool.
 */
function previewWrites(verbs: readonly CompiledVerb[]): Map<CompiledVerb, CompiledVerb> {
  const writes = new Map<string, CompiledVerb[]>();
  for (const v of verbs) {
    if (!v.isWrite) continue;
    const key = JSON.stringify(v.inputSchema);
    writes.set(key, [...(writes.get(key) ?? []), v]);
  }
  const out = new Map<CompiledVerb, CompiledVerb>();
  for (const v of verbs) {
    if (v.shape !== 'preview' || v.isWrite) continue;
    const same = writes.get(JSON.stringify(v.inputSchema));
    if (same?.length === 1) out.set(v, same[0]!);
  }
  return out;
}

/**
 * Project one compiled verb onto an MCP Tool, its input schema in `profile`'s dialect (pure).
 * With `argumentsOf` (a preview's write taking the same arguments): the input schema carries no
 * descriptions, and the description says whose arguments they are (unless it names that tool).
 */
export function projectVerb(
  verb: CompiledVerb,
  profile: SchemaProfile = 'default',
  argumentsOf?: CompiledVerb,
): CatalogEntry {
  const def = verb.definition;
  const input = toPortableSchema(verb.inputSchema, 'input');
  const portable = argumentsOf === undefined ? input.schema : withoutDescriptions(input.schema);
  const served = profileInputSchema(portable, profile, input.nullFill);
  let description = def.description;
  if (
    argumentsOf !== undefined &&
    !description.includes(argumentsOf.name) &&
    !description.includes(argumentsOf.toolName)
  )
    description += ` Arguments as ${argumentsOf.toolName}.`;
  const readOnly = !verb.isWrite;
  const destructive =
    !readOnly &&
    (verb.delegated ||
      verb.consentClass === 'WRITE_FINANCIAL' ||
      verb.consentClass === 'IRREVERSIBLE' ||
      !verb.revertible);
  const title = def.title !== undefined && !repeatsName(def.title, verb.name) ? def.title : undefined;
  const tool: Tool = {
    name: verb.toolName,
    ...(title !== undefined ? { title } : {}),
    description,
    inputSchema: served.schema as Tool['inputSchema'],
    annotations: annotationsOf(readOnly, destructive, def.idempotent === true, def.open_world === true),
  };
  const meta = toolMeta(verb);
  if (Object.keys(meta).length > 0) tool._meta = meta;
  const entry: CatalogEntry = { tool, verb, nullFill: input.nullFill, profile, input: served };
  if (argumentsOf !== undefined) entry.argumentsOf = argumentsOf;
  return entry;
}

/**
 * The hints, each only when it differs from MCP's default (2025-11-25 ToolAnnotations:
 * readOnlyHint false, destructiveHint true, idempotentHint false, openWorldHint true;
 * destructiveHint and idempotentHint are meaningful only when readOnlyHint is false). A read:
 * { readOnlyHint: true, openWorldHint: false }.
 */
function annotationsOf(
  readOnly: boolean,
  destructive: boolean,
  idempotent: boolean,
  openWorld: boolean,
): NonNullable<Tool['annotations']> {
  const a: NonNullable<Tool['annotations']> = {};
  if (readOnly) a.readOnlyHint = true;
  else {
    if (!destructive) a.destructiveHint = false;
    if (idempotent) a.idempotentHint = true;
  }
  if (!openWorld) a.openWorldHint = false;
  return a;
}

/**
 * The tool's `_meta`: the consent class unless READ (a read says it once: readOnlyHint true);
 * role_floor only when it differs from the consent class's default floor, tier_floor only above
 * starter, revertible only on writes. The full record (shape and side_effects included) is the
 * manifest's (verbs.list, GET /verbs).
 */
function toolMeta(verb: CompiledVerb): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  if (verb.isWrite) meta[META.consentClass] = verb.delegated ? 'delegated' : verb.consentClass;
  if (verb.delegated || verb.roleFloor !== ROLE_FLOOR_OF_CLASS[verb.consentClass])
    meta[META.roleFloor] = verb.roleFloor;
  if (verb.tierFloor !== 'starter') meta[META.tierFloor] = verb.tierFloor;
  if (verb.isWrite) meta[META.revertible] = verb.revertible;
  return meta;
}

/** `schema` without `description` keywords (a property named "description" stays). */
function withoutDescriptions(schema: unknown): JsonSchema {
  if (Array.isArray(schema)) return schema.map(withoutDescriptions) as unknown as JsonSchema;
  if (schema === null || typeof schema !== 'object') return schema as JsonSchema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'description') continue;
    out[k] =
      (k === 'properties' || k === 'patternProperties') && v !== null && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([p, sub]) => [p, withoutDescriptions(sub)]))
        : withoutDescriptions(v);
  }
  return out as JsonSchema;
}

/** Words a title may add without saying more than the name. */
const FILLER = new Set(['a', 'an', 'the', 'of', 'to', 'by', 'for']);

/**
 * True when every word of `title` (articles and short prepositions aside) is a word of the verb
 * name: "Search contacts" repeats crm_contacts_search, "Receivables aging" says more than
 * analytics.ar_aging.
 */
export function repeatsName(title: string, name: string): boolean {
  const words = new Set(name.toLowerCase().split(/[._]+/));
  for (const w of title.toLowerCase().match(/[a-z0-9]+/g) ?? [])
    if (!FILLER.has(w) && !words.has(w)) return false;
  return true;
}

function encodeCursor(lastName: string): string {
  return Buffer.from(`t:${lastName}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  const text = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!text.startsWith('t:') || !/^t:[a-zA-Z0-9_-]{1,64}$/.test(text))
    throw new CursorError('The cursor is not one issued by tools/list; list again without a cursor.');
  return text.slice(2);
}
