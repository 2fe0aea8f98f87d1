/**
 * Malformed tools/call requests through the SDK's own Client (in-memory pair): whatever the
 * params hold, the call is one audited attempt in the caller's tenant and answers an envelope —
 * an isError result for a known tool, JSON-RPC -32602 carrying the envelope otherwise — never
 * -32603 and never an unaudited refusal. Found by the fuzz suite (test/fuzz/).
 * Spec: spec/transports.md §mcp-results, §bad-input.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallToolResultSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { connectInMemory, createMcpRuntime, type McpHarness } from './harness.ts';
import { errorEnvelopeOf } from '../../../src/transports/mcp/envelope-map.ts';
import type { Envelope } from '../../../src/spec/types.ts';

async function rows(
  h: McpHarness,
): Promise<Array<{ company_id: number; action_type: string; reason: string }>> {
  await h.rt.auditBuffer.flush();
  return h.rt.store.read((q) =>
    q.all<{ company_id: number; action_type: string; reason: string }>(
      'SELECT company_id, action_type, reason FROM audit_log ORDER BY audit_id',
    ),
  );
}

const NOT_OBJECTS: unknown[] = [[], [1, 2], 'x', '', 42, 0, true, false];

test('tools/call with arguments that are not an object: an audited invalid_input isError result, nothing runs', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h, { apiKey: h.keys.owner });
  for (const name of ['test__echo', 'test__note_add', 'test__charge']) {
    for (const args of NOT_OBJECTS) {
      const before = (await rows(h)).length;
      const r = (await client.request(
        { method: 'tools/call', params: { name, arguments: args as Record<string, unknown> } },
        CallToolResultSchema,
      )) as CallToolResult;
      const env = errorEnvelopeOf(r);
      assert.ok(env, `${name} ${JSON.stringify(args)}: an isError result with the envelope`);
      assert.equal(env.error!.reason, 'invalid_input', JSON.stringify(env));
      assert.equal(env.error!.path, '');
      const added = (await rows(h)).slice(before);
      assert.equal(added.length, 1, `one audit row for ${name} ${JSON.stringify(args)}`);
      assert.equal(added[0]!.company_id, h.companyId);
      assert.equal(added[0]!.reason, 'invalid_input');
    }
  }
  assert.deepEqual(h.runs, { note: 0, charge: 0, purge: 0 });
});

test('tools/call without a usable tool name: JSON-RPC -32602 carrying an audited invalid_request envelope', async (t) => {
  const h = await createMcpRuntime(t);
  for (const [key, tenant] of [
    [h.keys.owner, h.companyId],
    [null, h.sandboxId],
  ] as const) {
    const client = await connectInMemory(t, h, { apiKey: key });
    for (const params of [{}, { name: 42 }, { name: null }, { name: ['test__echo'] }, { arguments: {} }]) {
      const before = (await rows(h)).length;
      const err = await client.request({ method: 'tools/call', params } as never, CallToolResultSchema).then(
        () => assert.fail('expected a JSON-RPC error'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof McpError, String(err));
      assert.equal(err.code, -32602, err.message);
      const env = (err.data as { envelope?: Envelope } | undefined)?.envelope;
      assert.equal(env?.error?.reason, 'invalid_request', JSON.stringify(params));
      const added = (await rows(h)).slice(before);
      assert.equal(added.length, 1, `one audit row for ${JSON.stringify(params)}`);
      assert.equal(added[0]!.company_id, tenant);
      assert.equal(added[0]!.action_type, 'tools/call');
    }
  }
});
