/**
 * Section `parity`: every transport lists exactly the verbs whose records name it in `surfaces`
 * (absent: all five): the http manifest and /openapi.json, MCP tools/list (stdio command or
 * Streamable HTTP) with the same arguments and annotations that agree with the records, the
 * WebMCP manifests of the five page surfaces, the UCP profile's
 * capabilities. Read-only. The cli surface has no wire to check from outside.
 * Spec: spec/transports.md (intro), §http-openapi, §mcp-tools, §mcp-results, §webmcp-manifest,
 * §ucp-profile.
 */
import { McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { isReadRecord, surfacesOf, type KitContext, type KitRecord } from '../context.ts';
import { fail, pass, skip } from '../outcome.ts';
import type { Check } from '../types.ts';
import { WEBMCP_SURFACES } from '../../spec/types.ts';
import { expectedOn, setDiff, toolNameOf } from './manifest.ts';
import { probeRead } from './envelope.ts';

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const META_VERB = 'dev.solid-verbs/verb';

/** The verb a tool stands for: its `_meta` verb name, else the tool name with __ as dots. */
function verbOfTool(tool: { name: string; _meta?: Record<string, unknown> }, known: Set<string>): string {
  const meta = tool._meta?.[META_VERB];
  if (typeof meta === 'string') return meta;
  if (known.has(tool.name)) return tool.name;
  return tool.name.replace(/__/g, '.');
}

type Schema = Record<string, unknown>;

/** True when `content` is one text block holding a JSON object (a tool result without structuredContent). */
function jsonObjectText(content: unknown): boolean {
  if (!Array.isArray(content) || content.length !== 1) return false;
  const block = content[0] as { type?: unknown; text?: unknown };
  if (block?.type !== 'text' || typeof block.text !== 'string') return false;
  try {
    const v = JSON.parse(block.text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
}

/** A schema node's JSON types, `null` left out (a projection may drop or add it); undefined when it names none. */
function typesOf(node: Schema): string[] | undefined {
  const t = node.type;
  const list = typeof t === 'string' ? [t] : Array.isArray(t) ? t.filter((x) => typeof x === 'string') : [];
  const types = (list as string[]).filter((x) => x !== 'null').sort();
  return types.length > 0 ? types : undefined;
}

function isSchema(x: unknown): x is Schema {
  return x !== null && typeof x === 'object' && !Array.isArray(x);
}

/**
 * Where the arguments two schemas take differ (the manifest's `http` against the MCP tool's
 * `mcp`): property names, required names and JSON types, through nested objects and array items
 * (4 levels). A node with a `$ref` or without a type on either side is not compared further (the
 * MCP projection may inline references and drop keywords a host rejects); descriptions, formats
 * and value constraints are not compared.
 */
export function argumentDiff(http: unknown, mcp: unknown, at = '', depth = 0): string[] {
  if (!isSchema(http) || !isSchema(mcp) || depth > 4 || '$ref' in http || '$ref' in mcp) return [];
  const out: string[] = [];
  const ht = typesOf(http);
  const mt = typesOf(mcp);
  if (ht !== undefined && mt !== undefined && ht.join() !== mt.join())
    out.push(`${at || '/'}: type ${ht.join('|')} over HTTP, ${mt.join('|')} over MCP`);
  const hp = isSchema(http.properties) ? http.properties : undefined;
  const mp = isSchema(mcp.properties) ? mcp.properties : undefined;
  if (hp !== undefined || mp !== undefined) {
    const hk = Object.keys(hp ?? {});
    const mk = Object.keys(mp ?? {});
    for (const k of hk) if (!mk.includes(k)) out.push(`${at}/${k}: over HTTP only`);
    for (const k of mk) if (!hk.includes(k)) out.push(`${at}/${k}: over MCP only`);
    for (const k of hk)
      if (mk.includes(k)) out.push(...argumentDiff(hp![k], mp![k], `${at}/${k}`, depth + 1));
  }
  const hr = (Array.isArray(http.required) ? (http.required as string[]) : []).slice().sort();
  const mr = (Array.isArray(mcp.required) ? (mcp.required as string[]) : []).slice().sort();
  if (hr.join() !== mr.join())
    out.push(`${at || '/'}: required [${hr.join(', ')}] over HTTP, [${mr.join(', ')}] over MCP`);
  if (isSchema(http.items) && isSchema(mcp.items))
    out.push(...argumentDiff(http.items, mcp.items, `${at}/items`, depth + 1));
  return out;
}

/** The MCP tools of the run with the manifest record of each one's verb (tools without one are parity.mcp_tools'). */
async function toolsWithRecords(ctx: KitContext): Promise<{
  label: string;
  pairs: Array<{ tool: Tool; record: KitRecord }>;
}> {
  const mcp = await ctx.mcp();
  const records = await ctx.allRecords();
  const byName = new Map(records.map((r) => [r.name, r]));
  const known = new Set(byName.keys());
  const pairs: Array<{ tool: Tool; record: KitRecord }> = [];
  for (const tool of await mcp.listAllTools()) {
    const record = byName.get(verbOfTool(tool as never, known));
    if (record !== undefined) pairs.push({ tool, record });
  }
  return { label: mcp.label, pairs };
}

export const parityChecks: Check[] = [
  {
    id: 'parity.openapi',
    section: 'parity',
    requirement: '/openapi.json documents POST /api/v1/agent/dispatch/<verb> for exactly the verbs on http.',
    spec: 'spec/transports.md §http-openapi',
    async run(ctx) {
      const answer = await ctx.http.get('/openapi.json', { key: false });
      const paths = (answer.json as { paths?: Record<string, unknown> } | undefined)?.paths;
      if (answer.status !== 200 || paths === undefined)
        return fail(`GET /openapi.json answered HTTP ${answer.status} without paths`, ctx.ev(answer));
      const prefix = '/api/v1/agent/dispatch/';
      const documented = Object.keys(paths)
        .filter((p) => p.startsWith(prefix) && p !== `${prefix}{verb}`)
        .map((p) => decodeURIComponent(p.slice(prefix.length)));
      const diff = setDiff(await expectedOn(ctx, 'http'), documented);
      if (diff.missing.length + diff.unexpected.length > 0)
        return fail('the OpenAPI operations are not the http verbs', ctx.ev(answer, diff));
      return pass(`${documented.length} operations`);
    },
  },
  {
    id: 'parity.mcp_tools',
    section: 'parity',
    requirement:
      'MCP tools/list (every page) lists exactly the verbs whose surfaces include mcp_stdio, each under a tool name matching ^[a-zA-Z0-9_-]{1,64}$.',
    spec: 'spec/transports.md §mcp-tools',
    needs: { mcp: true },
    async run(ctx) {
      const mcp = await ctx.mcp();
      const expected = await expectedOn(ctx, 'mcp_stdio');
      const tools = await mcp.listAllTools();
      const known = new Set(expected);
      const badNames = tools.filter((t) => !TOOL_NAME.test(t.name)).map((t) => t.name);
      if (badNames.length > 0)
        return fail(`tool names outside ^[a-zA-Z0-9_-]{1,64}$: ${badNames.slice(0, 3).join(', ')}`, {
          request: `MCP tools/list (${mcp.label})`,
          answer: badNames,
        });
      const listed = tools.map((t) => verbOfTool(t as never, known));
      const diff = setDiff(expected, listed);
      if (diff.missing.length + diff.unexpected.length > 0)
        return fail(
          `tools/list differs from the verbs on mcp_stdio (${diff.missing.length} missing, ${diff.unexpected.length} unexpected)`,
          { request: `MCP tools/list (${mcp.label})`, answer: diff },
        );
      const renamed = tools
        .filter((t) => t.name !== toolNameOf(verbOfTool(t as never, known)))
        .map((t) => t.name);
      if (renamed.length > 0)
        return fail(`tools not named by the projection (. as __): ${renamed.slice(0, 3).join(', ')}`, {
          request: `MCP tools/list (${mcp.label})`,
          answer: renamed,
        });
      return pass(`${tools.length} tools (${mcp.label})`);
    },
  },
  {
    id: 'parity.mcp_schemas',
    section: 'parity',
    requirement:
      "Each MCP tool's inputSchema takes the same arguments as its verb's input_schema in the HTTP manifest: the same property names, required names and JSON types (null aside), at every level.",
    spec: 'spec/transports.md §mcp-tools',
    needs: { mcp: true },
    async run(ctx) {
      const { label, pairs } = await toolsWithRecords(ctx);
      if (pairs.length === 0) return skip('no MCP tool stands for a verb of the manifest');
      const diffs: Record<string, string[]> = {};
      for (const { tool, record } of pairs) {
        const d = argumentDiff(record.input_schema, tool.inputSchema);
        if (d.length > 0) diffs[tool.name] = d;
      }
      const bad = Object.keys(diffs);
      if (bad.length > 0)
        return fail(
          `${bad.length} tools take other arguments than their verbs over HTTP: ${bad[0]} (${diffs[bad[0]!]![0]})`,
          { request: `MCP tools/list (${label}) against GET /api/v1/agent/verbs`, answer: diffs },
        );
      return pass(`${pairs.length} tools take their verbs' arguments (${label})`);
    },
  },
  {
    id: 'parity.mcp_annotations',
    section: 'parity',
    requirement:
      "Each MCP tool's annotations agree with its verb's record: readOnlyHint true exactly when the record only reads (side_effects read, no consent), and never destructiveHint false on a verb whose record says side_effects write (it cannot be reverted).",
    spec: 'spec/transports.md §mcp-tools',
    needs: { mcp: true },
    async run(ctx) {
      const { label, pairs } = await toolsWithRecords(ctx);
      if (pairs.length === 0) return skip('no MCP tool stands for a verb of the manifest');
      const wrong: Record<string, string> = {};
      for (const { tool, record } of pairs) {
        const a = tool.annotations ?? {};
        const readOnly = a.readOnlyHint === true;
        if (readOnly !== isReadRecord(record))
          wrong[tool.name] = readOnly
            ? `readOnlyHint true, but the record says side_effects ${String(record.side_effects)}, requires_consent ${String(record.requires_consent)}`
            : 'the record only reads, but readOnlyHint is not true';
        else if (!readOnly && record.side_effects === 'write' && a.destructiveHint === false)
          wrong[tool.name] = 'destructiveHint false, but the record says side_effects write (no revert)';
      }
      const bad = Object.keys(wrong);
      if (bad.length > 0)
        return fail(
          `${bad.length} tools are annotated against their records: ${bad[0]} (${wrong[bad[0]!]})`,
          {
            request: `MCP tools/list (${label}) against GET /api/v1/agent/verbs`,
            answer: wrong,
          },
        );
      return pass(`${pairs.length} tools annotated as their records say (${label})`);
    },
  },
  {
    id: 'parity.mcp_call',
    section: 'parity',
    requirement:
      'tools/call of a read verb answers its result as JSON (structuredContent, or a text block holding the JSON object), not isError.',
    spec: 'spec/transports.md §mcp-results',
    needs: { mcp: true },
    async run(ctx) {
      const mcp = await ctx.mcp();
      const probe = await probeRead(ctx);
      if (!surfacesOf(probe.record).includes('mcp_stdio'))
        return skip(`the probe read ${probe.record.name} is not on mcp_stdio`);
      const tool = toolNameOf(probe.record.name);
      const result = await mcp.callTool(tool, probe.args);
      const request = `MCP tools/call ${tool} ${JSON.stringify(probe.args)} (${mcp.label})`;
      if (result.isError === true)
        return fail(`${tool} answered isError`, {
          request,
          answer: result.structuredContent ?? result.content,
        });
      if (result.structuredContent !== null && typeof result.structuredContent === 'object')
        return pass(`${tool}: structuredContent`, { request, answer: { isError: false } });
      if (jsonObjectText(result.content))
        return pass(`${tool}: the result as JSON text`, { request, answer: { isError: false } });
      return fail(`${tool} answered neither structuredContent nor a JSON text block`, {
        request,
        answer: result,
      });
    },
  },
  {
    id: 'parity.mcp_unknown',
    section: 'parity',
    requirement:
      'tools/call of an unknown tool answers JSON-RPC error -32602 whose data.envelope is the audited unknown_verb answer.',
    spec: 'spec/transports.md §mcp-results',
    needs: { mcp: true },
    async run(ctx) {
      const mcp = await ctx.mcp();
      const request = `MCP tools/call conformance__no_such_tool (${mcp.label})`;
      try {
        const result = await mcp.callTool('conformance__no_such_tool', {});
        return fail('an unknown tool answered a result instead of a JSON-RPC error', {
          request,
          answer: result,
        });
      } catch (err) {
        if (!(err instanceof McpError)) throw err;
        const envelope = (err.data as { envelope?: { error?: { reason?: unknown } } } | undefined)?.envelope;
        if (err.code !== -32602 || envelope?.error?.reason !== 'unknown_verb')
          return fail(`answered JSON-RPC ${err.code} with ${JSON.stringify(envelope?.error?.reason)}`, {
            request,
            answer: { code: err.code, message: err.message, data: err.data },
          });
        return pass('-32602 with unknown_verb', {
          request,
          answer: { code: err.code, reason: 'unknown_verb' },
        });
      }
    },
  },
  {
    id: 'parity.webmcp',
    section: 'parity',
    requirement:
      'The WebMCP manifests of the five page surfaces together list exactly the verbs whose surfaces include webmcp, each tool named by the projection.',
    spec: 'spec/transports.md §webmcp-manifest',
    async run(ctx) {
      const expected = await expectedOn(ctx, 'webmcp');
      const listed = new Set<string>();
      const evidence = [];
      for (const s of WEBMCP_SURFACES) {
        const answer = await ctx.http.get(`/api/v1/webmcp/manifest?surface=${s}`, { key: false });
        if (answer.status === 404 && expected.length === 0)
          return skip('no verb is on webmcp and the server has no WebMCP manifest');
        const tools = (answer.json as { tools?: Array<{ name?: unknown; verb?: unknown }> } | undefined)
          ?.tools;
        if (answer.status !== 200 || !Array.isArray(tools))
          return fail(
            `GET /api/v1/webmcp/manifest?surface=${s} answered HTTP ${answer.status} without tools`,
            ctx.ev(answer),
          );
        for (const t of tools) {
          const verb = typeof t.verb === 'string' ? t.verb : String(t.name).replace(/__/g, '.');
          if (t.name !== toolNameOf(verb))
            return fail(
              `the ${s} tool ${String(t.name)} is not named by the projection of ${verb}`,
              ctx.ev(answer, t),
            );
          listed.add(verb);
        }
        evidence.push(`${s} ${tools.length}`);
      }
      const diff = setDiff(expected, [...listed]);
      if (diff.missing.length + diff.unexpected.length > 0)
        return fail('the WebMCP manifests differ from the verbs on webmcp', {
          request: 'GET /api/v1/webmcp/manifest?surface=… (all five)',
          answer: diff,
        });
      return pass(`${listed.size} verbs (${evidence.join(', ')})`);
    },
  },
  {
    id: 'parity.ucp',
    section: 'parity',
    requirement: '/.well-known/ucp has one capability per verb whose surfaces include ucp (its config.verb).',
    spec: 'spec/transports.md §ucp-profile',
    async run(ctx) {
      const expected = await expectedOn(ctx, 'ucp');
      const answer = await ctx.http.get('/.well-known/ucp', { key: false });
      if (answer.status === 404 && expected.length === 0)
        return skip('no verb is on ucp and the server has no UCP profile');
      const caps = (answer.json as { ucp?: { capabilities?: Record<string, unknown> } } | undefined)?.ucp
        ?.capabilities;
      if (answer.status !== 200 || caps === undefined || caps === null || typeof caps !== 'object')
        return fail(
          `GET /.well-known/ucp answered HTTP ${answer.status} without ucp.capabilities`,
          ctx.ev(answer),
        );
      const verbs: string[] = [];
      for (const [name, entries] of Object.entries(caps)) {
        const verb = Array.isArray(entries)
          ? (entries[0] as { config?: { verb?: unknown } })?.config?.verb
          : undefined;
        if (typeof verb !== 'string')
          return fail(`capability ${name} names no config.verb`, ctx.ev(answer, { [name]: entries }));
        verbs.push(verb);
      }
      const diff = setDiff(expected, verbs);
      if (diff.missing.length + diff.unexpected.length > 0)
        return fail('the UCP capabilities differ from the verbs on ucp', ctx.ev(answer, diff));
      return pass(`${verbs.length} capabilities`);
    },
  },
  {
    id: 'parity.surface_denied',
    section: 'parity',
    requirement:
      'A read verb not projected on http is refused there with 403 surface_denied (and one not on mcp_stdio is an unknown tool over MCP).',
    spec: 'spec/reasons.md §auth',
    async run(ctx) {
      const all = await ctx.allRecords();
      const offHttp = all.find((r) => isReadRecord(r) && !surfacesOf(r).includes('http'));
      const offMcp = all.find((r) => isReadRecord(r) && !surfacesOf(r).includes('mcp_stdio'));
      if (offHttp === undefined && (offMcp === undefined || ctx.options.mcp === undefined))
        return skip('every read verb is on http (and on MCP); the kit calls no write it was not given');
      const evidence = [];
      if (offHttp !== undefined) {
        const d = await ctx.dispatch(offHttp.name, { args: {} });
        if (d.answer.status !== 403 || d.env?.error?.reason !== 'surface_denied')
          return fail(
            `${offHttp.name} (not on http) answered HTTP ${d.answer.status} ${String(d.env?.error?.reason ?? '')}`,
            ctx.ev(d.answer),
          );
        evidence.push(ctx.ev(d.answer));
      }
      if (offMcp !== undefined && ctx.options.mcp !== undefined) {
        const mcp = await ctx.mcp();
        const request = `MCP tools/call ${toolNameOf(offMcp.name)} (${mcp.label})`;
        try {
          const r = await mcp.callTool(toolNameOf(offMcp.name), {});
          return fail(`${offMcp.name} (not on mcp_stdio) answered a result over MCP`, { request, answer: r });
        } catch (err) {
          if (!(err instanceof McpError) || err.code !== -32602) throw err;
          evidence.push({ request, answer: { code: err.code } });
        }
      }
      return pass('refused where not projected', ...evidence);
    },
  },
];
