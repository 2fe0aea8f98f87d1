/**
 * Toolsets (spec/transports.md §mcp-toolsets): a selection of verbs by category, ridden on a call
 * as `Caller.toolsets` so the pipeline's surface step refuses the verbs outside it. The names and
 * the selection are the same for every transport that offers toolsets (MCP, the WebMCP manifest);
 * which categories exist on a surface is the transport's (src/transports/mcp/toolsets.ts).
 */
import type { ToolsetSelection } from './core.ts';
import type { CompiledVerb } from './verb.ts';

/** The keyword for every toolset. */
export const ALL_TOOLSETS = 'all';

/** Verbs reachable whatever toolsets are enabled (discovery, and the undo every receipt names). */
export const CORE_VERBS: readonly string[] = ['verbs.list', 'audit.revert'];

/** "crm, payments" / ["crm", "payments"] → trimmed, lower-cased, de-duplicated names. */
export function parseToolsetNames(spec: string | readonly string[] | undefined): string[] {
  const parts = spec === undefined ? [] : typeof spec === 'string' ? spec.split(',') : spec;
  return [...new Set(parts.map((p) => p.trim().toLowerCase()).filter((p) => p !== ''))];
}

/** A selection of toolsets by name (no check against the registry; see resolveToolsets). */
export function toolsetSelection(names: readonly string[]): ToolsetSelection {
  const set = new Set(names);
  const core = new Set(CORE_VERBS);
  return {
    names: [...set].sort(),
    admits: (verb: CompiledVerb) => set.has(verb.category) || core.has(verb.name),
  };
}
