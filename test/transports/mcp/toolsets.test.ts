/**
 * MCP toolsets and dynamic mode through the SDK's own Client (in-memory linked pair): listing per
 * toolset, parity with the manifest (every MCP verb in exactly one toolset), an unknown toolset
 * refused at start (library and CLI), a verb outside the enabled toolsets refused and audited;
 * dynamic mode's meta tools — search, describe (the HTTP manifest's VerbRecord), call a read, a
 * confirmed write and a typed-phrase write through call_verb (audited under the real verb).
 * Spec: spec/transports.md §mcp-toolsets, §mcp-dynamic.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { connectInMemory, createMcpRuntime, phraseShown, type McpHarness } from './harness.ts';
import { listAllTools, resultOf } from '../../support/mcp.ts';
import { cliHarness } from '../../support/cli.ts';
import { errorEnvelopeOf } from '../../../src/transports/mcp/envelope-map.ts';
import { createMcpServer } from '../../../src/transports/mcp/mcp-server.ts';
import { META } from '../../../src/transports/mcp/meta-keys.ts';
import { ToolsetError, listToolsets, resolveToolsets } from '../../../src/transports/mcp/toolsets.ts';
import { CORE_VERBS } from '../../../src/runtime/toolsets.ts';
import { toolsetFlags } from '../../../src/transports/cli/commands/mcp.ts';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import type { Envelope } from '../../../src/spec/types.ts';

function envelopeOf(r: CallToolResult): Envelope {
  assert.equal(r.isError, true, JSON.stringify(r));
  return errorEnvelopeOf(r)!;
}

async function auditRows(h: McpHarness, verb: string): Promise<Array<Record<string, unknown>>> {
  await h.rt.auditBuffer.flush();
  return h.rt.store.read((q) =>
    q.all<Record<string, unknown>>('SELECT * FROM audit_log WHERE action_type = ? ORDER BY audit_id', [verb]),
  );
}

const mcpVerbs = (h: McpHarness) => h.rt.registry.all().filter((v) => v.surfaces.includes('mcp_stdio'));

test('toolsets are the categories of the MCP verbs: every verb in exactly one, none empty, none off-MCP', async (t) => {
  const h = await createMcpRuntime(t);
  const sets = listToolsets(h.rt);
  const seen = new Map<string, string>();
  for (const s of sets) {
    assert.ok(s.verbs.length > 0, s.name);
    for (const v of s.verbs) {
      assert.ok(!seen.has(v), `${v} is in ${seen.get(v)} and ${s.name}`);
      seen.set(v, s.name);
      assert.equal(h.rt.registry.get(v)!.category, s.name);
    }
  }
  assert.deepEqual(
    [...seen.keys()].sort(),
    mcpVerbs(h)
      .map((v) => v.name)
      .sort(),
  );
  assert.ok(!seen.has('test.http_only'), 'a verb off MCP is in no toolset');
  assert.ok(sets.some((s) => s.name === 'test') && sets.some((s) => s.name === 'audit'));
});

test('--toolsets test lists exactly the test verbs plus the core verbs; all (or nothing) lists every verb', async (t) => {
  const h = await createMcpRuntime(t);
  const one = await connectInMemory(t, h, { server: { toolsets: 'test' } });
  const names = (await listAllTools(one)).map((x) => x.name).sort();
  const expected = mcpVerbs(h)
    .filter((v) => v.category === 'test' || CORE_VERBS.includes(v.name))
    .map((v) => v.toolName)
    .sort();
  assert.deepEqual(names, expected);
  assert.ok(names.includes('test__echo') && names.includes('verbs__list') && names.includes('audit__revert'));
  assert.ok(!names.includes('audit__trail'));

  const two = await connectInMemory(t, h, { server: { toolsets: [' Test ', 'audit', 'test'] } });
  const both = (await listAllTools(two)).map((x) => x.name);
  assert.ok(both.includes('audit__trail') && both.includes('test__charge'));

  const everything = mcpVerbs(h)
    .map((v) => v.toolName)
    .sort();
  for (const toolsets of ['all', 'test,all', '', undefined]) {
    const c = await connectInMemory(t, h, { server: { toolsets } });
    assert.deepEqual((await listAllTools(c)).map((x) => x.name).sort(), everything, String(toolsets));
  }
});

test('an unknown toolset is an error at start naming the valid toolsets, never an empty list', async (t) => {
  const h = await createMcpRuntime(t);
  assert.throws(
    () => resolveToolsets(h.rt, 'test,nope'),
    (err: unknown) => {
      assert.ok(err instanceof ToolsetError);
      assert.match(err.message, /Unknown toolset: "nope"/);
      assert.match(err.message, /Valid toolsets: all, .*audit.*test/);
      assert.ok(err.valid.includes('test'));
      return true;
    },
  );
  assert.throws(() => createMcpServer(h.rt, { toolsets: ['crm'] }), ToolsetError);
});

test('solid mcp and solid serve refuse an unknown toolset (flag or SOLID_TOOLSETS) with exit 2 and the valid names', async (t) => {
  const cli = cliHarness(t);
  assert.equal((await cli.run(['init', '--json'])).code, 0);
  const mcp = await cli.run(['mcp', '--toolsets', 'crm,nope']);
  assert.equal(mcp.code, 2);
  assert.match(mcp.stderr, /Unknown toolsets: "crm", "nope"\. Valid toolsets: all, .*audit/);
  assert.equal(mcp.stdout, '', 'nothing on stdout (it carries only JSON-RPC)');
  const env = await cli.run(['mcp'], { env: { SOLID_TOOLSETS: 'nope' } });
  assert.equal(env.code, 2);
  assert.match(env.stderr, /Unknown toolset: "nope"/);
  const bridge = await cli.run(['--url', 'http://127.0.0.1:9', 'mcp', '--dynamic-toolsets']);
  assert.equal(bridge.code, 2, 'the bridge refuses toolset options');
  assert.match(bridge.stderr, /apply to a local database/);
  const serve = await cli.run(['serve', '--port', '0', '--toolsets', 'nope']);
  assert.equal(serve.code, 2);
  assert.match(serve.stderr, /Unknown toolset: "nope"\. Valid toolsets: all, /);
});

test('toolsetFlags: the flag wins over SOLID_TOOLSETS; SOLID_DYNAMIC_TOOLSETS=1|true|yes turns dynamic mode on', () => {
  assert.deepEqual(toolsetFlags({ toolsets: 'crm' }, { SOLID_TOOLSETS: 'payments' }), {
    toolsets: 'crm',
    dynamic: false,
  });
  assert.deepEqual(toolsetFlags({}, { SOLID_TOOLSETS: 'payments' }), {
    toolsets: 'payments',
    dynamic: false,
  });
  assert.deepEqual(toolsetFlags({}, { SOLID_TOOLSETS: ' ' }), { toolsets: undefined, dynamic: false });
  for (const v of ['1', 'true', 'YES'])
    assert.equal(toolsetFlags({}, { SOLID_DYNAMIC_TOOLSETS: v }).dynamic, true);
  assert.equal(toolsetFlags({}, { SOLID_DYNAMIC_TOOLSETS: '0' }).dynamic, false);
  assert.equal(toolsetFlags({ dynamicToolsets: true }, {}).dynamic, true);
});

test('a verb outside the enabled toolsets is refused (surface_denied, audited) by its tool name; nothing runs', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h, { apiKey: h.keys.owner, server: { toolsets: 'audit' } });
  const r = envelopeOf(
    (await client.callTool({ name: 'test__note_add', arguments: { text: 'x' } })) as CallToolResult,
  );
  assert.equal(r.error!.reason, 'surface_denied');
  assert.match(r.error!.message, /toolset "test".*enabled: audit/);
  assert.match(r.error!.hint!, /--toolsets audit,test/);
  assert.equal(h.runs.note, 0);
  const rows = await auditRows(h, 'test.note_add');
  assert.deepEqual(
    rows.map((x) => [x.status, x.reason]),
    [['denied', 'surface_denied']],
  );
  const core = (await client.callTool({ name: 'verbs__list', arguments: {} })) as CallToolResult;
  assert.equal(core.isError, undefined, 'a core verb runs whatever the toolsets');
});

test('dynamic mode lists only search_verbs, describe_verb and call_verb, each with an object inputSchema', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h, { server: { dynamic: true } });
  const tools = await listAllTools(client);
  assert.deepEqual(tools.map((x) => x.name).sort(), ['call_verb', 'describe_verb', 'search_verbs']);
  for (const tool of tools) assert.equal(tool.inputSchema.type, 'object');
  assert.equal(
    tools.find((x) => x.name === 'call_verb')!.outputSchema,
    undefined,
    'call_verb answers any verb result',
  );
});

test('search_verbs: every query word must match; name, shape, consent class and one line per verb; toolsets with counts; bad input is invalid_input', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h, { server: { dynamic: true } });
  const search = async (args: Record<string, unknown>) =>
    (await client.callTool({ name: 'search_verbs', arguments: args })) as CallToolResult;
  const found = resultOf(await search({ query: 'charge invoice' })) as {
    verbs: Array<Record<string, unknown>>;
    total: number;
    toolsets: Array<{ name: string; verbs: number }>;
  };
  assert.deepEqual(found.verbs[0], {
    name: 'test.charge',
    tool: 'test__charge',
    toolset: 'test',
    shape: 'receipt',
    consent_class: 'WRITE_FINANCIAL',
    description: 'Charge an invoice (WRITE_FINANCIAL, test).',
  });
  assert.ok(found.verbs.every((v) => v.name !== 'test.echo'));
  const counts = Object.fromEntries(found.toolsets.map((s) => [s.name, s.verbs]));
  for (const s of listToolsets(h.rt)) assert.equal(counts[s.name], s.verbs.length, s.name);

  const all = resultOf(await search({ limit: 50 })) as { verbs: unknown[]; total: number };
  assert.equal(all.total, mcpVerbs(h).length, 'no query: every MCP verb');
  assert.ok(!JSON.stringify(all).includes('test.http_only'));
  const scoped = resultOf(await search({ toolset: 'test', limit: 2 })) as {
    verbs: Array<{ toolset: string }>;
    total: number;
  };
  assert.equal(scoped.verbs.length, 2);
  assert.ok(scoped.verbs.every((v) => v.toolset === 'test'));
  assert.equal(scoped.total, listToolsets(h.rt).find((s) => s.name === 'test')!.verbs.length);
  assert.equal(envelopeOf(await search({ limit: 0 })).error!.path, '/limit');
  assert.equal(envelopeOf(await search({ toolset: 'nope' })).error!.reason, 'invalid_input');

  const narrowed = await connectInMemory(t, h, { server: { dynamic: true, toolsets: 'audit' } });
  const only = resultOf(
    (await narrowed.callTool({ name: 'search_verbs', arguments: { limit: 50 } })) as CallToolResult,
  ) as { verbs: Array<{ name: string }> };
  assert.ok(only.verbs.every((v) => v.name.startsWith('audit.') || CORE_VERBS.includes(v.name)));
});

test('describe_verb answers the VerbRecord of GET /api/v1/agent/verbs/{name}; unknown and off-MCP verbs are refused', async (t) => {
  const h = await createMcpRuntime(t);
  const app = createHttpServer(h.rt, { logger: false });
  t.after(() => app.close());
  const client = await connectInMemory(t, h, { server: { dynamic: true } });
  for (const name of ['test.charge', 'test.echo', 'verbs.list']) {
    const r = (await client.callTool({ name: 'describe_verb', arguments: { name } })) as CallToolResult;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const http = await app.inject({ method: 'GET', url: `/api/v1/agent/verbs/${name}` });
    assert.equal(http.statusCode, 200);
    assert.deepEqual(resultOf(r), http.json(), name);
  }
  const unknown = envelopeOf(
    (await client.callTool({ name: 'describe_verb', arguments: { name: 'test.chrage' } })) as CallToolResult,
  );
  assert.equal(unknown.error!.reason, 'unknown_verb');
  assert.match(unknown.error!.hint!, /test\.charge/);
  const off = envelopeOf(
    (await client.callTool({
      name: 'describe_verb',
      arguments: { name: 'test.http_only' },
    })) as CallToolResult,
  );
  assert.equal(off.error!.reason, 'surface_denied');
  assert.equal(
    envelopeOf((await client.callTool({ name: 'describe_verb', arguments: {} })) as CallToolResult).error!
      .path,
    '/name',
  );
});

test('call_verb runs a read and answers exactly what the verb’s own tool answers', async (t) => {
  const h = await createMcpRuntime(t);
  const dynamic = await connectInMemory(t, h, { server: { dynamic: true } });
  const plain = await connectInMemory(t, h);
  const args = { text: 'hi', note: null, count: 2 };
  const viaMeta = (await dynamic.callTool({
    name: 'call_verb',
    arguments: { name: 'test.echo', arguments: args },
  })) as CallToolResult;
  const direct = (await plain.callTool({ name: 'test__echo', arguments: args })) as CallToolResult;
  assert.equal(viaMeta.isError, undefined, JSON.stringify(viaMeta));
  assert.deepEqual(resultOf(viaMeta), resultOf(direct));
  const rows = await auditRows(h, 'test.echo');
  assert.equal(rows.length, 2, 'both calls audited under the verb');
  assert.equal((await auditRows(h, 'call_verb')).length, 0, 'never under the meta tool');
  const bad = envelopeOf(
    (await dynamic.callTool({
      name: 'call_verb',
      arguments: { name: 'test.echo', arguments: { text: 1, note: null } },
    })) as CallToolResult,
  );
  assert.equal(bad.error!.reason, 'invalid_input', 'the pipeline validates the verb arguments');
  assert.equal(bad.error!.path, '/text');
});

test('call_verb: a confirmation write goes pending → confirmed with the nonce in _meta; audited under the verb; replays by idempotency key', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h, { apiKey: h.keys.employee, server: { dynamic: true } });
  const call = { name: 'test.note_add', arguments: { text: 'via meta' } };
  const key = { [META.idempotencyKey]: 'meta-key-1' };
  const pending = envelopeOf(
    (await client.callTool({ name: 'call_verb', arguments: call, _meta: key })) as CallToolResult,
  );
  assert.equal(pending.error!.reason, 'dispatch_pending');
  assert.equal(pending.verb, 'test.note_add');
  assert.equal(h.runs.note, 0);
  const done = (await client.callTool({
    name: 'call_verb',
    arguments: call,
    _meta: { ...key, [META.confirm]: true, [META.nonce]: pending.consent!.nonce },
  })) as CallToolResult;
  assert.equal(done.isError, undefined, JSON.stringify(done));
  assert.equal((resultOf(done) as { status: string }).status, 'added');
  assert.equal(h.runs.note, 1);
  const replay = (await client.callTool({
    name: 'call_verb',
    arguments: call,
    _meta: key,
  })) as CallToolResult;
  assert.equal((resultOf(replay) as { replayed?: boolean }).replayed, true);
  assert.equal(h.runs.note, 1);
  const rows = await auditRows(h, 'test.note_add');
  assert.deepEqual(
    rows.map((x) => x.status),
    ['pending', 'completed', 'replayed'],
  );
  assert.equal((await auditRows(h, 'call_verb')).length, 0);
});

test('call_verb: a typed-phrase write is confirmed by the human through elicitation, as on its own tool', async (t) => {
  const h = await createMcpRuntime(t);
  const seen: string[] = [];
  const client = await connectInMemory(t, h, {
    apiKey: h.keys.owner,
    server: { dynamic: true },
    elicit: (req) => {
      seen.push(req.params.message);
      return { action: 'accept', content: { typed_phrase: phraseShown(req) } };
    },
  });
  const r = (await client.callTool({
    name: 'call_verb',
    arguments: { name: 'test.charge', arguments: { invoice_id: 7, amount_cents: 1200 } },
  })) as CallToolResult;
  assert.equal(r.isError, undefined, JSON.stringify(r));
  assert.equal((resultOf(r) as { status: string }).status, 'charged');
  assert.equal(h.runs.charge, 1);
  assert.ok(seen[0]!.includes('CHARGE $12.00 to invoice #7'), seen[0]);
  assert.deepEqual(
    (await auditRows(h, 'test.charge')).map((x) => x.status),
    ['pending', 'completed'],
  );
});

test('call_verb refuses, and audits, unknown verbs, verbs off MCP and verbs outside the toolsets; a bad name is invalid_input', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h, {
    apiKey: h.keys.owner,
    server: { dynamic: true, toolsets: 'audit' },
  });
  const call = async (args: Record<string, unknown>) =>
    envelopeOf((await client.callTool({ name: 'call_verb', arguments: args })) as CallToolResult);
  assert.equal((await call({ name: 'test.nope' })).error!.reason, 'unknown_verb');
  assert.equal((await call({ name: 'test.http_only' })).error!.reason, 'surface_denied');
  const outside = await call({ name: 'test.note_add', arguments: { text: 'x' } });
  assert.equal(outside.error!.reason, 'surface_denied');
  assert.match(outside.error!.message, /toolset "test"/);
  assert.equal(h.runs.note, 0);
  assert.deepEqual(
    (await auditRows(h, 'test.note_add')).map((x) => x.reason),
    ['surface_denied'],
  );
  assert.equal((await auditRows(h, 'test.http_only')).length, 1);
  assert.equal((await call({ name: 42 })).error!.path, '/name');
  assert.equal((await call({ name: 'audit.trail', arguments: [1] })).error!.path, '/arguments');
});
