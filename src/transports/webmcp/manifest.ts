/**
 * The WebMCP manifest: the verbs one page surface (dashboard, portal, developer, tenant-site,
 * public) registers with `document.modelContext.registerTool`. A verb is on a page surface when
 * its `surfaces` include `webmcp` AND its `webmcp_surfaces` include that page surface.
 *
 * Each tool carries what the browser module needs to register it and nothing it must not know:
 *   name            the tool name (`verb.toolName`, dots → `__`), what execute is called with
 *   verb            the verb name
 *   title?          the verb's short title
 *   description     the verb's description (for the model)
 *   inputSchema     the verb's input schema ($ref-free)
 *   annotations     readOnlyHint (READ), consequentialHint (any write class),
 *                   untrustedContentHint (the verb declared untrusted_content)
 *   consent_class   READ | WRITE_REVERSIBLE | WRITE_FINANCIAL | IRREVERSIBLE, or null when the
 *                   verb decides it per call from its target (audit.revert and the like)
 *   shape, category
 *
 * `?toolsets=crm,payments` trims it to those categories plus the core verbs (webmcpManifestFor).
 *
 * Spec: spec/transports.md §webmcp-manifest, research: mcp-webmcp.md §13.
 */
import { createHash } from 'node:crypto';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import type { CompiledVerb } from '../../runtime/verb.ts';
import { inlineSchema } from '../../runtime/registry.ts';
import { VerbError } from '../../runtime/errors.ts';
import { ALL_TOOLSETS, CORE_VERBS } from '../../runtime/toolsets.ts';
import {
  WEBMCP_SURFACES,
  type JsonSchema,
  type Shape,
  type VerbClass,
  type WebmcpSurface,
} from '../../spec/types.ts';

/** One tool of a WebMCP manifest (see the header). */
export interface WebmcpTool {
  name: string;
  verb: string;
  title?: string;
  description: string;
  inputSchema: JsonSchema;
  annotations: { readOnlyHint: boolean; consequentialHint: boolean; untrustedContentHint: boolean };
  consent_class: VerbClass | null;
  shape: Shape;
  category: string;
}

/** The answer of `GET /api/v1/webmcp/manifest?surface=…`. */
export interface WebmcpManifest {
  surface: WebmcpSurface;
  tools: WebmcpTool[];
}

/** Is `value` one of the five WebMCP page surfaces? */
export function isWebmcpSurface(value: unknown): value is WebmcpSurface {
  return typeof value === 'string' && (WEBMCP_SURFACES as readonly string[]).includes(value);
}

/** Is this verb exposed on that WebMCP page surface? */
export function onWebmcpSurface(verb: CompiledVerb, surface: WebmcpSurface): boolean {
  return verb.surfaces.includes('webmcp') && verb.webmcpSurfaces.includes(surface);
}

/** Project one compiled verb onto a WebMCP tool. */
export function toWebmcpTool(verb: CompiledVerb): WebmcpTool {
  const tool: WebmcpTool = {
    name: verb.toolName,
    verb: verb.name,
    description: verb.definition.description,
    inputSchema: inlineSchema(verb.inputSchema),
    annotations: {
      readOnlyHint: !verb.isWrite,
      consequentialHint: verb.isWrite,
      untrustedContentHint: verb.definition.untrusted_content === true,
    },
    consent_class: verb.delegated ? null : verb.consentClass,
    shape: verb.shape,
    category: verb.category,
  };
  if (verb.definition.title !== undefined) tool.title = verb.definition.title;
  return tool;
}

interface Cached {
  manifest: WebmcpManifest;
  etag: string;
}

const cache = new WeakMap<Runtime, Map<WebmcpSurface, Cached>>();

/**
 * The manifest of a page surface with its strong ETag (a hash of the manifest itself). Cached per
 * runtime and surface; any registration or removal clears the cache (`registry.onChange`).
 */
export function webmcpManifest(
  rt: Runtime,
  surface: WebmcpSurface,
): { manifest: WebmcpManifest; etag: string } {
  let perRt = cache.get(rt);
  if (perRt === undefined) {
    const fresh = new Map<WebmcpSurface, Cached>();
    rt.registry.onChange(() => fresh.clear());
    cache.set(rt, fresh);
    perRt = fresh;
  }
  const hit = perRt.get(surface);
  if (hit !== undefined) return hit;
  const tools = rt.registry
    .all()
    .filter((v) => onWebmcpSurface(v, surface))
    .map(toWebmcpTool);
  const manifest: WebmcpManifest = { surface, tools };
  const etag = `"${createHash('sha256').update(JSON.stringify(manifest)).digest('base64url').slice(0, 27)}"`;
  const entry: Cached = { manifest, etag };
  perRt.set(surface, entry);
  return entry;
}

/**
 * The manifest trimmed to some toolsets (verb categories) of that page surface, plus the core
 * verbs (spec/transports.md §webmcp-manifest, §mcp-toolsets), with its own strong ETag. Throws
 * VerbError invalid_request for a name that is no category of that page surface, listing the
 * valid ones. `names` empty or holding `all` → the whole manifest.
 */
export function webmcpManifestFor(
  rt: Runtime,
  surface: WebmcpSurface,
  names: readonly string[],
): { manifest: WebmcpManifest; etag: string } {
  const whole = webmcpManifest(rt, surface);
  if (names.length === 0 || names.includes(ALL_TOOLSETS)) return whole;
  const valid = [...new Set(whole.manifest.tools.map((t) => t.category))].sort();
  const unknown = names.filter((n) => !valid.includes(n));
  if (unknown.length > 0) {
    throw new VerbError(
      'invalid_request',
      `Unknown toolset${unknown.length > 1 ? 's' : ''} on the WebMCP ${surface} surface: ${unknown.map((n) => JSON.stringify(n.slice(0, 64))).join(', ')}.`,
      {
        hint: `Use ?toolsets= a comma-separated list of: ${ALL_TOOLSETS}, ${valid.join(', ')}.`,
        details: { toolsets: valid },
      },
    );
  }
  const keep = new Set(names);
  const core = new Set(CORE_VERBS);
  const manifest: WebmcpManifest = {
    surface,
    tools: whole.manifest.tools.filter((t) => keep.has(t.category) || core.has(t.verb)),
  };
  const etag = `"${createHash('sha256').update(JSON.stringify(manifest)).digest('base64url').slice(0, 27)}"`;
  return { manifest, etag };
}
