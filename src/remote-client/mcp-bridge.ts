/**
 * The remote MCP bridge: `solid mcp` with `--url` / SOLID_API_URL serves, over stdio, the tools of
 * a running `solid serve` — the thin bridge of the specification. It holds no database: it
 * fetches the manifest (`GET /api/v1/agent/verbs?surface=mcp_stdio`) and the verb hints
 * (`GET /api/v1/agent/verb-hints`), and dispatches every tools/call over HTTP
 * (`POST /api/v1/agent/dispatch/{verb}` with `Solid-Surface: mcp_stdio`).
 *
 * No MCP code is duplicated: the bridge hands the MCP transport's own ToolCatalog, createMcpServer
 * and serveStdio a remote runtime — a registry of the fetched verbs (each a CompiledVerb rebuilt
 * from its VerbRecord and hints, so `projectVerb` yields the very tool the embedded server lists)
 * and a `dispatch` that calls the HTTP client. Consent therefore works as in embedded mode:
 * confirmations by `_meta`, typed phrases by form elicitation (the pending envelope comes back
 * over HTTP, the human types the phrase, the bridge dispatches again with confirm + nonce +
 * phrase) or by the out-of-band approval whose hint names `solid approvals approve <id>` and the
 * dashboard (`$SOLID_DASHBOARD_URL`, default the server URL).
 *
 * Manifest cache: refreshed every `refreshMs` (default 5 min) with If-None-Match (a 304 costs
 * nothing); a changed tool set reaches the client as notifications/tools/list_changed. A refresh
 * that fails (server unreachable) or a manifest that fails validation (validateVerbRecord per
 * entry, unique tool names) is logged with its reason and the last good manifest kept. While the
 * server is unreachable, calls answer an `upstream_unavailable` isError result within the
 * client's timeouts (connect 10 s), never hang. Startup needs one good manifest.
 *
 * Spec: spec/transports.md §remote-mcp.
 */
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { Caller, DispatchOptions } from '../runtime/core.ts';
import { NameIndex, inlineSchema, toToolName } from '../runtime/registry.ts';
import type { McpRuntime } from '../transports/runtime-surface.ts';
import { ROLE_FLOOR_OF_CLASS, type CompiledVerb, type VerbDefinition } from '../runtime/verb.ts';
import { VerbError } from '../runtime/errors.ts';
import { refuse } from '../runtime/refusals.ts';
import { validateVerbRecord, shapeSchemas } from '../spec/validators.ts';
import { VALID_SURFACES, type Envelope, type VerbClass, type VerbRecord } from '../spec/types.ts';
import type { ApiClient } from './api-client.ts';
import { hintsProblem, type VerbHints } from '../runtime/verb-hints.ts';
import { serveStdio, DEFAULT_REFRESH_MS, type StdioServer } from '../transports/mcp/stdio.ts';
import { MCP_SURFACE } from '../transports/mcp/tool-catalog.ts';
import type { SchemaProfile } from '../transports/mcp/schema-profiles.ts';

/** The parts of a Runtime the MCP transport uses; the bridge implements exactly these. */
export type McpRuntimeSurface = McpRuntime;

/** Outcome of one refresh. */
export type RefreshOutcome = 'changed' | 'unchanged' | 'unreachable' | 'rejected';

/**
 * A CompiledVerb rebuilt from a VerbRecord and its hints (pure). Without hints (an older server)
 * the facts are derived conservatively: a write is taken as IRREVERSIBLE (destructiveHint) and
 * revertible when its side effects are "mixed".
 */
export function remoteVerb(record: VerbRecord, hints: VerbHints | undefined): CompiledVerb {
  const write = record.side_effects !== undefined && record.side_effects !== 'read';
  const consentClass: VerbClass = hints?.consent_class ?? (write ? 'IRREVERSIBLE' : 'READ');
  const delegated = hints?.delegated ?? false;
  // The record's description ends with "No consent gate: <why>" for an ungated write (the
  // registry adds it): split it back so the tool reads as the embedded server's.
  const ungated = / No consent gate: (.+)$/s.exec(record.description);
  const definition: VerbDefinition = {
    name: record.name,
    description: ungated === null ? record.description : record.description.slice(0, ungated.index),
    ...(ungated !== null ? { ungated: ungated[1]! } : {}),
    ...(hints?.title !== undefined ? { title: hints.title } : {}),
    shape: record.shape,
    category: hints?.category ?? 'remote',
    input: record.input_schema,
    ...(record.output_schema !== undefined ? { output: record.output_schema } : {}),
    ...(hints?.idempotent === true ? { idempotent: true } : {}),
    ...(hints?.open_world === true ? { open_world: true } : {}),
    ...(hints?.cli !== undefined ? { cli: hints.cli } : {}),
    handler: async () => {
      throw new VerbError('internal_error', 'A remote verb runs on its server, never in the bridge.');
    },
  };
  return Object.freeze({
    definition,
    name: record.name,
    shape: record.shape,
    category: definition.category,
    consentClass,
    delegated,
    isWrite: consentClass !== 'READ' || delegated,
    roleFloor: hints?.role_floor ?? ROLE_FLOOR_OF_CLASS[consentClass],
    tierFloor: hints?.tier_floor ?? (record.tier_floor as CompiledVerb['tierFloor'] | undefined) ?? 'starter',
    surfaces: Object.freeze([...(record.surfaces ?? VALID_SURFACES)]),
    webmcpSurfaces: Object.freeze([]),
    inputSchema: record.input_schema,
    outputSchema: record.output_schema ?? inlineSchema(shapeSchemas[record.shape]),
    record,
    toolName: toToolName(record.name),
    validate: () => true,
    validateErrors: () => null,
    validateOutput: () => true,
    outputErrors: () => null,
    secretPaths: Object.freeze([]),
    revertible: hints?.revertible ?? record.side_effects === 'mixed',
  });
}

/** The registry of a remote manifest (the slice of Registry the MCP transport reads). */
export class RemoteRegistry {
  #verbs: CompiledVerb[] = [];
  #byName = new Map<string, CompiledVerb>();
  /** Verbs known only from hints (not on this surface), so `get` can still answer for them. */
  #others = new Map<string, CompiledVerb>();
  #signature = '';
  #index: NameIndex | undefined;
  readonly #listeners = new Set<() => void>();

  all(): CompiledVerb[] {
    return this.#verbs;
  }

  get(name: string): CompiledVerb | undefined {
    return this.#byName.get(name) ?? this.#others.get(name);
  }

  /** Up to `n` served names closest to `name` (the unknown_verb hint of dynamic mode's call_verb). */
  closest(name: string, n = 3): string[] {
    return (this.#index ??= new NameIndex(this.#verbs.map((v) => v.name))).closest(name, n);
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Replace the content; listeners hear about it only when something changed. Returns whether it did. */
  replace(verbs: CompiledVerb[], others: CompiledVerb[], signature: string): boolean {
    if (signature === this.#signature) return false;
    this.#signature = signature;
    this.#index = undefined;
    this.#verbs = [...verbs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.#byName = new Map();
    for (const v of this.#verbs) {
      this.#byName.set(v.name, v);
      this.#byName.set(v.toolName, v);
    }
    this.#others = new Map(others.map((v) => [v.name, v]));
    for (const l of this.#listeners) l();
    return true;
  }
}

/** Why a manifest is refused, or undefined when every entry is usable. */
export function manifestProblem(verbs: unknown[]): string | undefined {
  const tools = new Map<string, string>();
  for (const [i, v] of verbs.entries()) {
    const check = validateVerbRecord(v);
    const name = (v as { name?: unknown } | null)?.name;
    if (!check.valid)
      return `entry ${i}${typeof name === 'string' ? ` (${name.slice(0, 64)})` : ''} is not a valid VerbRecord: ${check.errors.slice(0, 3).join('; ')}`;
    const record = v as VerbRecord;
    const tool = toToolName(record.name);
    const clash = tools.get(tool);
    if (clash !== undefined)
      return `verbs "${clash}" and "${record.name}" project onto the same tool name "${tool}"`;
    tools.set(tool, record.name);
  }
  return undefined;
}

/**
 * The remote runtime of the bridge: a RemoteRegistry kept up to date by `refresh()`, and a
 * dispatch over the client. Pass `runtime` where the MCP transport wants a Runtime.
 */
export class RemoteManifest {
  readonly registry = new RemoteRegistry();
  readonly #client: ApiClient;
  readonly #logger: Logger;
  #manifestEtag: string | undefined;
  #hintsEtag: string | undefined;
  #records: VerbRecord[] | undefined;
  #hints: Record<string, VerbHints> = {};
  #hintsMissing = false;
  #lastFailure: string | undefined;

  constructor(client: ApiClient, logger: Logger) {
    this.#client = client;
    this.#logger = logger;
  }

  /** Has a good manifest been loaded? */
  get loaded(): boolean {
    return this.#records !== undefined;
  }

  /** The reason of the last failed or rejected refresh (cleared by a good one). */
  get lastFailure(): string | undefined {
    return this.#lastFailure;
  }

  /** The runtime facade for ToolCatalog / createMcpServer / serveStdio (`apiKey`: sent instead of the client's own). */
  runtimeWith(apiKey?: string): McpRuntime {
    return {
      registry: this.registry,
      logger: this.#logger,
      dispatch: (caller, verb, args, options) => this.dispatch(caller, verb, args, options, apiKey),
      // A call the MCP layer refuses before dispatch (tools/call without a name) never reaches the
      // server, so there is nothing to audit there: the bridge answers the same envelope locally.
      recordRefusal: async (_caller, verb, err) => ({
        ok: false,
        verb,
        error: (err instanceof VerbError ? err : refuse.storeUnavailable()).toEnvelopeError(),
      }),
      // The server authenticates a key: the bridge only sends it.
      withApiKey: (key) => this.runtimeWith(key),
    };
  }

  /** The runtime facade with the client's own key (see runtimeWith). */
  get runtime(): McpRuntime {
    return this.runtimeWith();
  }

  /** One tools/call over HTTP (with `apiKey`, else the client's key): reads (and keyed writes) may be retried; the caller's signal cancels. */
  dispatch(
    caller: Caller,
    verb: string,
    args?: unknown,
    options: DispatchOptions = {},
    apiKey?: string,
  ): Promise<Envelope> {
    const v = this.registry.get(verb);
    return this.#client.dispatch(verb, args, options, {
      idempotent: v !== undefined && !v.isWrite,
      signal: caller.signal,
      ...(apiKey !== undefined ? { apiKey } : {}),
      // The bridge's own calls (recording a declined form as approvals.reject) are plain HTTP.
      surface: caller.surface === MCP_SURFACE ? MCP_SURFACE : 'http',
    });
  }

  /** Fetch the manifest (and hints) if they changed; never throws (see RefreshOutcome). */
  async refresh(): Promise<RefreshOutcome> {
    let manifest;
    try {
      manifest = await this.#client.manifest(
        MCP_SURFACE,
        this.#records !== undefined ? this.#manifestEtag : undefined,
      );
    } catch (err) {
      return this.#fail('unreachable', `the manifest could not be fetched: ${(err as Error).message}`);
    }
    const hintsChanged = await this.#refreshHints();
    if (manifest.notModified && !hintsChanged) {
      this.#lastFailure = undefined;
      return 'unchanged';
    }
    if (!manifest.notModified) {
      const problem = manifestProblem(manifest.verbs);
      if (problem !== undefined)
        return this.#fail(
          'rejected',
          `the server's manifest was rejected (${problem}); serving the last good one`,
        );
      this.#records = manifest.verbs as VerbRecord[];
      this.#manifestEtag = manifest.etag;
    }
    this.#lastFailure = undefined;
    return this.#publish() ? 'changed' : 'unchanged';
  }

  /** Refresh the hints; true when they changed. Failures keep the previous hints. */
  async #refreshHints(): Promise<boolean> {
    if (this.#hintsMissing) return false;
    try {
      const answer = await this.#client.hints(this.#hintsEtag);
      if (answer.notModified) return false;
      const good: Record<string, VerbHints> = {};
      for (const [name, h] of Object.entries(answer.hints)) {
        const problem = hintsProblem(h);
        if (problem === undefined) good[name] = h as VerbHints;
        else this.#logger.warn({ verb: name, problem }, 'mcp bridge: ignoring malformed verb hints');
      }
      this.#hints = good;
      this.#hintsEtag = answer.etag;
      return true;
    } catch (err) {
      if (err instanceof VerbError && /does not serve/.test(err.message)) {
        this.#hintsMissing = true;
        this.#logger.warn(
          'mcp bridge: the server has no verb hints route (older solid); tool annotations are derived from the records',
        );
      }
      return false;
    }
  }

  #publish(): boolean {
    const records = this.#records ?? [];
    const verbs = records.map((r) => remoteVerb(r, this.#hints[r.name]));
    const listed = new Set(records.map((r) => r.name));
    const others: CompiledVerb[] = [];
    for (const [name, h] of Object.entries(this.#hints)) {
      if (listed.has(name)) continue;
      others.push(
        remoteVerb(
          {
            name,
            description: name,
            shape: h.shape,
            side_effects: h.consent_class === 'READ' && !h.delegated ? 'read' : 'write',
            input_schema: { type: 'object' },
            surfaces: h.surfaces,
            tier_floor: h.tier_floor,
          },
          h,
        ),
      );
    }
    const signature = JSON.stringify({ records, hints: this.#hints });
    return this.registry.replace(verbs, others, signature);
  }

  #fail(outcome: 'unreachable' | 'rejected', reason: string): RefreshOutcome {
    if (reason !== this.#lastFailure) this.#logger.warn({ reason }, `mcp bridge: ${reason}`);
    this.#lastFailure = reason;
    return outcome;
  }
}

export interface BridgeOptions {
  client: ApiClient;
  logger: Logger;
  /** Refresh interval in ms (default 300 000). */
  refreshMs?: number;
  input?: Readable;
  output?: Writable;
  /** Where a pending approval can be approved (hints). Default: the server's dashboard. */
  approvalUrl?: (approvalId: string) => string | undefined;
  elicitationTimeoutMs?: number;
  pageSize?: number;
  /** The dialect of the served input schemas (schema-profiles.ts). Default 'default'. */
  schemaProfile?: SchemaProfile;
}

/**
 * Serve the bridge on stdio (serveStdio over the remote runtime). Resolves once listening.
 * @throws VerbError upstream_unavailable when the first manifest cannot be fetched or is invalid
 */
export async function serveMcpBridge(
  options: BridgeOptions,
): Promise<StdioServer & { manifest: RemoteManifest }> {
  const manifest = new RemoteManifest(options.client, options.logger);
  const first = await manifest.refresh();
  if (!manifest.loaded) {
    throw new VerbError('upstream_unavailable', `solid mcp cannot start: ${manifest.lastFailure ?? first}.`, {
      hint: 'Check --url / SOLID_API_URL (the base URL `solid serve` prints) and that the server is running.',
    });
  }
  const base = options.client.baseUrl;
  // No apiKey here: the client sends its own key, and the server authenticates it.
  const served = await serveStdio(manifest.runtime, {
    refresh: async () => {
      await manifest.refresh();
    },
    refreshMs: options.refreshMs ?? DEFAULT_REFRESH_MS,
    approvalUrl: options.approvalUrl ?? (() => `${base}/#approvals`),
    ...(options.schemaProfile !== undefined ? { schemaProfile: options.schemaProfile } : {}),
    ...(options.input !== undefined ? { input: options.input } : {}),
    ...(options.output !== undefined ? { output: options.output } : {}),
    ...(options.elicitationTimeoutMs !== undefined
      ? { elicitationTimeoutMs: options.elicitationTimeoutMs }
      : {}),
    ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
  });
  return { ...served, manifest };
}
