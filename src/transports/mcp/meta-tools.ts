/**
 * Dynamic mode (spec/transports.md §mcp-dynamic): instead of one tool per verb, tools/list lists
 * three meta tools, for clients with small tool limits:
 *
 *   search_verbs   { query?, toolset?, limit? } → { verbs: [{ name, tool, toolset, shape,
 *                  consent_class, description (first sentence) }], total, toolsets: [{ name,
 *                  verbs }] } — the reachable verbs whose name, title, description or toolset
 *                  hold every word of the query (no query: all), best match first
 *   describe_verb  { name } → the verb's VerbRecord, exactly as GET /api/v1/agent/verbs/{name}
 *   call_verb      { name, arguments? } → the same result the verb's own tool gives: the call
 *                  goes through mcp-server.ts's tools/call path (rt.dispatch with surface
 *                  mcp_stdio, consent options from `_meta`, typed phrases by elicitation); the
 *                  audit row names the verb, never the meta tool
 *
 * search_verbs and describe_verb read the manifest (like tools/list and GET /verbs: not audited).
 * Only verbs on mcp_stdio that the server's toolsets admit are searched, described or called.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolsetSelection } from '../../runtime/core.ts';
import type { McpRuntime as Runtime } from '../runtime-surface.ts';
import type { CompiledVerb } from '../../runtime/verb.ts';
import type { Envelope } from '../../spec/types.ts';
import type { CoreReason } from '../../spec/reasons.ts';
import { envelopeToToolResult, jsonToolResult } from './envelope-map.ts';
import { META } from './meta-keys.ts';
import { MCP_SURFACE } from './tool-catalog.ts';
import { refuse } from '../../runtime/refusals.ts';

/** The meta tool that searches the catalogue. */
export const SEARCH_VERBS = 'search_verbs';
/** The meta tool that describes one verb (its input schema). */
export const DESCRIBE_VERB = 'describe_verb';
/** The meta tool that calls a verb by name. */
export const CALL_VERB = 'call_verb';
/** The three meta tools served instead of one tool per verb for a large catalogue. */
export const META_TOOL_NAMES: readonly string[] = [SEARCH_VERBS, DESCRIBE_VERB, CALL_VERB];

/** Default and largest number of verbs search_verbs answers. */
export const SEARCH_DEFAULT_LIMIT = 20;
export const SEARCH_MAX_LIMIT = 50;

const NAME = { type: 'string', minLength: 1, maxLength: 200 } as const;

/** The meta tools as listed (fixed: computed once). */
export const META_TOOLS: readonly Tool[] = [
  {
    name: SEARCH_VERBS,
    title: 'Search verbs',
    description:
      'Search the verbs this server can run (each acts on a real business). Every word of the query must appear in the ' +
      'verb name, title, description or toolset; no query lists them all. Answers name, shape, consent class and one line ' +
      'each, best match first, and the toolsets with their verb counts. Then describe_verb for the arguments, call_verb to run it.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', maxLength: 200, description: 'Words to look for, e.g. "invoice refund".' },
        toolset: { type: 'string', maxLength: 64, description: 'Only verbs of this toolset (category).' },
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: SEARCH_MAX_LIMIT,
          description: `At most this many verbs (default ${SEARCH_DEFAULT_LIMIT}).`,
        },
      },
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    name: DESCRIBE_VERB,
    title: 'Describe a verb',
    description:
      'The full VerbRecord of one verb: description, shape, side_effects, input_schema (the arguments call_verb takes), ' +
      'output_schema, surfaces, requires_consent, tier_floor.',
    inputSchema: {
      type: 'object',
      properties: { name: { ...NAME, description: 'The verb name, e.g. "invoices.search".' } },
      required: ['name'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    name: CALL_VERB,
    title: 'Call a verb',
    description:
      "Run one verb by name with its arguments (see describe_verb for its input_schema); the answer is the verb's own " +
      'result or error envelope. Consent works as for any tool: a write needing it answers dispatch_pending; for a ' +
      `confirmation, ask the human, then call again with the same name and arguments and _meta {"${META.confirm}": true, ` +
      `"${META.nonce}": "<consent.nonce>"}. Typed phrases are confirmed by the human, never typed by you. ` +
      `To retry a write safely, send _meta {"${META.idempotencyKey}": "<uuid>"}.`,
    inputSchema: {
      type: 'object',
      properties: {
        name: { ...NAME, description: 'The verb name, e.g. "invoices.search".' },
        arguments: { type: 'object', description: "The verb's arguments (its input_schema)." },
      },
      required: ['name'],
      additionalProperties: false,
    },
  },
];

/** The verb `name` names (verb or tool name) if it is on MCP and admitted, else the refusal. */
export function reachableVerb(
  rt: Runtime,
  toolsets: ToolsetSelection | undefined,
  name: string,
  asTool: string,
): CompiledVerb | Envelope {
  const verb = rt.registry.get(name);
  if (verb === undefined) {
    const closest = rt.registry.closest(name).filter((n) => isReachable(rt.registry.get(n)!, toolsets));
    return {
      ok: false,
      verb: name.slice(0, 200),
      error: refuse
        .unknownVerb(name.slice(0, 200), closest, {
          withClosest: `Find verbs with ${SEARCH_VERBS}.`,
          alone: `Find verbs with ${SEARCH_VERBS}.`,
        })
        .toEnvelopeError(),
    };
  }
  if (!verb.surfaces.includes(MCP_SURFACE))
    return refusal(
      verb.name,
      'surface_denied',
      `${verb.name} is not exposed on MCP (surface mcp_stdio).`,
      `It is available on: ${verb.surfaces.join(', ')}.`,
    );
  if (toolsets !== undefined && !toolsets.admits(verb))
    return refusal(
      verb.name,
      'surface_denied',
      `${verb.name} is in the toolset "${verb.category}", which this MCP server does not expose (enabled: ${toolsets.names.join(', ')}).`,
      `Use ${asTool} on a verb of the enabled toolsets (${SEARCH_VERBS} lists them).`,
      { toolset: verb.category, enabled: [...toolsets.names] },
    );
  return verb;
}

/** Is this lookup answer a refusal envelope (rather than the verb)? */
export function isRefusal(x: CompiledVerb | Envelope): x is Envelope {
  return (x as Envelope).ok === false;
}

function isReachable(verb: CompiledVerb, toolsets: ToolsetSelection | undefined): boolean {
  return verb.surfaces.includes(MCP_SURFACE) && (toolsets === undefined || toolsets.admits(verb));
}

function refusal(
  verb: string,
  reason: CoreReason,
  message: string,
  hint: string,
  details?: Record<string, unknown>,
): Envelope {
  return {
    ok: false,
    verb: verb.slice(0, 200),
    error: { reason, message, hint, ...(details !== undefined ? { details } : {}) },
  };
}

/** An invalid_input answer for a meta tool's own arguments (nothing looked up or run). */
export function badMetaInput(tool: string, path: string, message: string): CallToolResult {
  return envelopeToToolResult(
    {
      ok: false,
      verb: tool,
      error: {
        reason: 'invalid_input',
        message,
        path,
        hint: `See the inputSchema of ${tool} in tools/list.`,
      },
    },
    { toolName: tool },
  );
}

/** search_verbs (see the header). */
export function searchVerbs(
  rt: Runtime,
  toolsets: ToolsetSelection | undefined,
  args: Record<string, unknown>,
): CallToolResult {
  const { query, toolset, limit } = args;
  if (query !== undefined && (typeof query !== 'string' || query.length > 200))
    return badMetaInput(SEARCH_VERBS, '/query', 'query must be a string of at most 200 characters.');
  if (toolset !== undefined && typeof toolset !== 'string')
    return badMetaInput(SEARCH_VERBS, '/toolset', 'toolset must be a string.');
  if (
    limit !== undefined &&
    !(Number.isInteger(limit) && (limit as number) >= 1 && (limit as number) <= SEARCH_MAX_LIMIT)
  )
    return badMetaInput(SEARCH_VERBS, '/limit', `limit must be an integer from 1 to ${SEARCH_MAX_LIMIT}.`);
  const reachable = rt.registry.all().filter((v) => isReachable(v, toolsets));
  const counts = new Map<string, number>();
  for (const v of reachable) counts.set(v.category, (counts.get(v.category) ?? 0) + 1);
  const sets = [...counts.keys()].sort().map((name) => ({ name, verbs: counts.get(name)! }));
  if (toolset !== undefined && !counts.has(toolset.toLowerCase()))
    return badMetaInput(
      SEARCH_VERBS,
      '/toolset',
      `Unknown toolset "${toolset.slice(0, 64)}"; the toolsets here: ${sets.map((s) => s.name).join(', ')}.`,
    );
  const words = (typeof query === 'string' ? query.toLowerCase() : '')
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
  const scored: Array<{ v: CompiledVerb; score: number }> = [];
  for (const v of reachable) {
    if (toolset !== undefined && v.category !== toolset.toLowerCase()) continue;
    const score = matchScore(v, words);
    if (score > 0) scored.push({ v, score });
  }
  scored.sort((a, b) => b.score - a.score || (a.v.name < b.v.name ? -1 : 1));
  const max = (limit as number | undefined) ?? SEARCH_DEFAULT_LIMIT;
  const verbs = scored.slice(0, max).map(({ v }) => ({
    name: v.name,
    tool: v.toolName,
    toolset: v.category,
    shape: v.shape,
    consent_class: v.delegated ? 'delegated' : v.consentClass,
    description: oneLine(v.definition.description),
  }));
  const result = { verbs, total: scored.length, toolsets: sets };
  return jsonToolResult(result);
}

/** 0 = no match; otherwise higher is better (a word in the name counts most). No words: 1. */
function matchScore(v: CompiledVerb, words: string[]): number {
  if (words.length === 0) return 1;
  const name = `${v.name} ${v.toolName}`.toLowerCase();
  const title = (v.definition.title ?? '').toLowerCase();
  const rest = `${v.category} ${v.definition.description}`.toLowerCase();
  let score = 0;
  for (const w of words) {
    if (name.includes(w)) score += 4;
    else if (title.includes(w)) score += 2;
    else if (rest.includes(w)) score += 1;
    else return 0;
  }
  return score;
}

/** The first sentence of a description, at most 160 characters. */
function oneLine(description: string): string {
  const first = /^(.+?[.!?])(\s|$)/s.exec(description)?.[1] ?? description;
  const flat = first.replace(/\s+/g, ' ').trim();
  return flat.length <= 160 ? flat : `${flat.slice(0, 159)}…`;
}

/** describe_verb (see the header). */
export function describeVerb(
  rt: Runtime,
  toolsets: ToolsetSelection | undefined,
  args: Record<string, unknown>,
): CallToolResult {
  if (typeof args.name !== 'string' || args.name === '' || args.name.length > 200)
    return badMetaInput(
      DESCRIBE_VERB,
      '/name',
      'name must be a verb name (a string of 1 to 200 characters).',
    );
  const found = reachableVerb(rt, toolsets, args.name, DESCRIBE_VERB);
  if (isRefusal(found)) return envelopeToToolResult(found, { toolName: DESCRIBE_VERB });
  const record = found.record as unknown as Record<string, unknown>;
  return jsonToolResult(record);
}
