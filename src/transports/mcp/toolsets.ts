/**
 * MCP toolsets (spec/transports.md §mcp-toolsets): the verb categories an MCP server exposes.
 *
 *   toolset        a verb's `category` (crm, payments, audit, system, …), among the verbs whose
 *                  surfaces include mcp_stdio; every such verb is in exactly one toolset
 *   `all`          every toolset (the default; also what an empty selection means)
 *   core verbs     CORE_VERBS (verbs.list: discovery; audit.revert: every write receipt points to
 *                  it) are reachable whatever toolsets are chosen
 *
 * `resolveToolsets(rt, spec)` checks the names against the registry once, at start: an unknown
 * name throws ToolsetError listing the valid names (the CLI exits non-zero). The selection rides
 * on every MCP call (`Caller.toolsets`): tools/list lists only the admitted verbs, and the
 * pipeline's surface step refuses any other verb with `surface_denied` (audited), so a verb
 * outside the enabled toolsets never runs through this server, by tool name or through call_verb.
 */
import type { ToolsetSelection } from '../../runtime/core.ts';
import type { CompiledVerb } from '../../runtime/verb.ts';
import { scopeAdmits } from '../../runtime/verb-checks.ts';
import type { Principal } from '../../spec/types.ts';
import type { McpRuntime as Runtime } from '../runtime-surface.ts';
import { MCP_SURFACE } from './tool-catalog.ts';
import { ALL_TOOLSETS, parseToolsetNames, toolsetSelection } from '../../runtime/toolsets.ts';

/** Thrown for a toolset name that no verb on MCP has as its category. */
export class ToolsetError extends Error {
  override readonly name = 'ToolsetError';
  constructor(
    message: string,
    readonly valid: readonly string[],
  ) {
    super(message);
  }
}

/** One toolset: its name (a category) and its verbs (names, sorted). */
export interface ToolsetInfo {
  name: string;
  verbs: string[];
}

/** Every toolset of the verbs on MCP right now, sorted by name. */
export function listToolsets(rt: Runtime): ToolsetInfo[] {
  const by = new Map<string, string[]>();
  for (const v of rt.registry.all()) {
    if (!v.surfaces.includes(MCP_SURFACE)) continue;
    const list = by.get(v.category) ?? [];
    list.push(v.name);
    by.set(v.category, list);
  }
  return [...by.keys()].sort().map((name) => ({ name, verbs: by.get(name)!.sort() }));
}

/**
 * The selection for `spec` (comma-separated names, or a list), checked against the toolsets of
 * the registry now. Undefined for every toolset (no spec, empty, or `all` among the names).
 * Throws ToolsetError for a name that is not a toolset, listing the valid ones.
 */
export function resolveToolsets(
  rt: Runtime,
  spec: string | readonly string[] | undefined,
): ToolsetSelection | undefined {
  const names = parseToolsetNames(spec);
  if (names.length === 0 || names.includes(ALL_TOOLSETS)) return undefined;
  const valid = listToolsets(rt).map((t) => t.name);
  const unknown = names.filter((n) => !valid.includes(n));
  if (unknown.length > 0) {
    throw new ToolsetError(
      `Unknown toolset${unknown.length > 1 ? 's' : ''}: ${unknown.map((n) => JSON.stringify(n.slice(0, 64))).join(', ')}. ` +
        `Valid toolsets: ${ALL_TOOLSETS}, ${valid.join(', ')}.`,
      valid,
    );
  }
  return toolsetSelection(names.sort());
}

/** A selection as given (already resolved), or resolveToolsets of the names. Throws ToolsetError. */
export function selectionOf(
  rt: Runtime,
  toolsets: string | readonly string[] | ToolsetSelection | undefined,
): ToolsetSelection | undefined {
  if (typeof toolsets === 'object' && 'admits' in toolsets) return toolsets;
  return resolveToolsets(rt, toolsets);
}

/**
 * What one request narrows the server to (spec/transports.md §mcp-narrowing): `X-MCP-Toolsets`
 * (toolset names, checked like --toolsets) and `X-MCP-Readonly` (`1` / `true`). Narrows, never
 * widens: the pipeline applies it on top of the server's toolsets and the credential's scope.
 */
export interface McpNarrowing {
  toolsets?: ToolsetSelection;
  readOnly?: boolean;
}

/** Header names of the narrowing. */
export const NARROWING_HEADERS = { toolsets: 'x-mcp-toolsets', readOnly: 'x-mcp-readonly' } as const;

/**
 * The narrowing a request's headers ask for (empty when none). Throws ToolsetError for an unknown
 * toolset name; `X-MCP-Readonly` is on for `1`, `true` or `yes` (any case), off otherwise.
 */
export function narrowingOf(
  rt: Runtime,
  headers: Record<string, string | string[] | undefined>,
): McpNarrowing {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(',') : v);
  const ts = one(headers[NARROWING_HEADERS.toolsets]);
  const ro = one(headers[NARROWING_HEADERS.readOnly]);
  const toolsets = ts === undefined ? undefined : resolveToolsets(rt, ts);
  return {
    ...(toolsets !== undefined ? { toolsets } : {}),
    ...(ro !== undefined && /^\s*(1|true|yes)\s*$/i.test(ro) ? { readOnly: true } : {}),
  };
}

/** Both selections at once (a verb both admit); either alone when the other is undefined. */
export function narrowSelection(
  base: ToolsetSelection | undefined,
  by: ToolsetSelection | undefined,
): ToolsetSelection | undefined {
  if (by === undefined) return base;
  if (base === undefined) return { ...by, byRequest: true };
  return {
    names: base.names.filter((n) => by.names.includes(n)),
    admits: (v) => base.admits(v) && by.admits(v),
    byRequest: true,
  };
}

/**
 * What tools/list shows one caller: the verbs the (narrowed) toolsets admit, no write verb for a
 * read-only session or key, and only what the credential's allow-list reaches. Undefined: all.
 */
export function listFilter(
  toolsets: ToolsetSelection | undefined,
  readOnly: boolean | undefined,
  principal: Principal | null | undefined,
): ((verb: CompiledVerb) => boolean) | undefined {
  const scope = principal?.scope;
  const ro = readOnly === true || scope?.read_only === true;
  if (toolsets === undefined && !ro && scope === undefined) return undefined;
  return (v) => (toolsets === undefined || toolsets.admits(v)) && !(ro && v.isWrite) && scopeAdmits(scope, v);
}
