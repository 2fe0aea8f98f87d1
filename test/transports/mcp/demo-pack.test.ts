/**
 * Every verb of the demo business pack through MCP (when the pack is installed): listed exactly
 * when projected onto mcp_stdio, and each called with arguments built from its own input schema
 * by the SDK Client on the seeded demo. Each answer must be a tool result the client accepts
 * (ok results validate against the tool's outputSchema), never a protocol error or an
 * internal_error. Spec: spec/transports.md §mcp.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { KNOWN_PACKS } from '../../../src/packs.ts';
import { defineReasons, reasonInfo } from '../../../src/spec/reasons.ts';
import type { Envelope, JsonSchema } from '../../../src/spec/types.ts';
import { createTestRuntime } from '../../support/runtime.ts';
import { connectInMemory } from './harness.ts';

/** A value satisfying the simple constraints of `schema` (defaults, examples, enums, minimums). */
function sample(schema: unknown, depth = 0): unknown {
  if (schema === null || typeof schema !== 'object' || depth > 6) return undefined;
  const s = schema as JsonSchema;
  if ('default' in s) return s.default;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum)) return s.enum.find((e) => e !== null);
  for (const k of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(s[k])) return sample((s[k] as JsonSchema[]).find((b) => b.type !== 'null'), depth + 1);
  }
  const type = Array.isArray(s.type) ? (s.type as string[]).find((x) => x !== 'null') : (s.type as string | undefined);
  switch (type ?? (s.properties ? 'object' : undefined)) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const props = (s.properties ?? {}) as Record<string, unknown>;
      for (const k of (s.required as string[] | undefined) ?? []) out[k] = sample(props[k], depth + 1);
      return out;
    }
    case 'array':
      return Array.from({ length: Number(s.minItems ?? 0) }, () => sample(s.items, depth + 1));
    case 'integer':
    case 'number':
      return Math.max(1, Number(s.minimum ?? 1));
    case 'boolean':
      return false;
    case 'string':
      if (s.format === 'date-time') return '2026-06-01T09:00:00Z';
      if (s.format === 'date') return '2026-06-01';
      if (s.format === 'email') return 'someone@example.com';
      return 'x'.repeat(Math.max(1, Number(s.minLength ?? 1)));
    default:
      return undefined;
  }
}

test('every demo verb projected onto MCP is listed and answers a well-formed tool result', async (t) => {
  const load = KNOWN_PACKS.demo;
  if (load === undefined) return t.skip('no demo pack in this build');
  const pack = await load();
  const h = await createTestRuntime(t, { validateOutputs: false });
  await h.rt.store.migrate(pack.name, pack.migrations);
  if (pack.reasons) defineReasons(pack.reasons);
  h.rt.register(...pack.verbs);
  const facts = (await pack.seed?.(h.rt, {})) ?? {};
  const key = (facts.owner_api_key as string | undefined) ?? h.keys.owner;
  const client = await connectInMemory(t, h, { apiKey: key });
  const listed = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    for (const x of page.tools) listed.add(x.name);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  const demo = pack.verbs.map((v) => h.rt.registry.get(v.name)!);
  for (const v of demo) assert.equal(listed.has(v.toolName), v.surfaces.includes('mcp_stdio'), v.name);
  let ok = 0;
  for (const v of demo.filter((x) => x.surfaces.includes('mcp_stdio'))) {
    const args = (sample(v.inputSchema) ?? {}) as Record<string, unknown>;
    const r = (await client.callTool({ name: v.toolName, arguments: args })) as CallToolResult;
    if (!r.isError) {
      ok++;
      continue;
    }
    const env = r.structuredContent as unknown as Envelope;
    assert.equal(env.ok, false, v.name);
    assert.notEqual(env.error!.reason, 'internal_error', `${v.name} ${JSON.stringify(args)}: ${env.error!.message}`);
    assert.ok(reasonInfo(env.error!.reason).kind !== 'internal', `${v.name}: ${env.error!.reason}`);
  }
  t.diagnostic(`${ok} of ${demo.length} demo verbs answered ok with schema-built arguments; the others answered an envelope (consent, not_found, domain rules)`);
});
