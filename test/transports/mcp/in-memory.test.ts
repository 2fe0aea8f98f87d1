/**
 * The MCP server through the SDK's own Client over an in-memory linked pair: the projection
 * (parity, portable schemas, annotations, pagination), tools/call → dispatch (results, errors,
 * unknown tools, consent round trips, typed phrase by elicitation, out-of-band approval,
 * idempotency, progress, cancellation, large outputs) and list_changed.
 * Spec: spec/transports.md §mcp.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { allKeys, connectInMemory, createMcpRuntime, phraseShown, slowState, subschemas } from './harness.ts';
import { ToolCatalog } from '../../../src/transports/mcp/tool-catalog.ts';
import { META } from '../../../src/transports/mcp/meta-keys.ts';
import { defineVerb } from '../../../src/runtime/verb.ts';
import type { Envelope } from '../../../src/spec/types.ts';
import type { McpHarness } from './harness.ts';
import { listAllTools, resultOf } from '../../support/mcp.ts';
import { errorEnvelopeOf } from '../../../src/transports/mcp/envelope-map.ts';

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

async function rejectsWith(p: Promise<unknown>, code: number): Promise<McpError> {
  const err = await p.then(
    () => assert.fail('expected a JSON-RPC error'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof McpError, String(err));
  assert.equal(err.code, code, err.message);
  return err;
}

test('tools/list lists exactly the verbs whose surfaces include mcp_stdio (parity), by tool name', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  const names = (await listAllTools(client)).map((x) => x.name);
  const expected = h.rt.registry
    .all()
    .filter((v) => v.surfaces.includes('mcp_stdio'))
    .map((v) => v.toolName)
    .sort();
  assert.deepEqual([...names].sort(), expected);
  assert.ok(names.includes('test__echo') && names.includes('verbs__list'));
  assert.ok(!names.includes('test__http_only'), 'a verb without mcp_stdio is not listed');
  assert.equal(new Set(names).size, names.length, 'no duplicates');
});

test('every tool is portable: name pattern, object root with properties, no $ref/$schema/$id/nullable/type arrays, arrays with items', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  const tools = await listAllTools(client);
  assert.ok(tools.length >= 8);
  for (const tool of tools) {
    assert.match(tool.name, /^[a-zA-Z0-9_-]{1,64}$/);
    assert.equal(typeof tool.description, 'string');
    assert.equal(tool.outputSchema, undefined, `${tool.name}: no outputSchema (the answer is JSON text)`);
    for (const [which, schema] of [['inputSchema', tool.inputSchema]] as const) {
      assert.ok(schema, `${tool.name} ${which}`);
      assert.equal(schema.type, 'object', `${tool.name} ${which} root`);
      const keys = new Set(allKeys(schema));
      for (const bad of ['$ref', '$schema', '$id', '$defs', 'definitions', 'nullable', 'prefixItems', 'if']) {
        assert.ok(!keys.has(bad), `${tool.name} ${which} has ${bad}`);
      }
      for (const s of subschemas(schema)) {
        assert.ok(!Array.isArray(s.type), `${tool.name} ${which}: type array ${JSON.stringify(s)}`);
        if (s.type === 'array')
          assert.ok(s.items !== undefined, `${tool.name} ${which}: array without items`);
      }
    }
    assert.equal(typeof tool.inputSchema.properties, 'object', `${tool.name} inputSchema.properties`);
  }
  const echo = tools.find((x) => x.name === 'test__echo')!;
  const props = echo.inputSchema.properties as Record<string, Record<string, unknown>>;
  assert.deepEqual(
    props.note!.anyOf,
    [{ type: 'string' }, { type: 'null' }],
    'type ["string","null"] → a null branch: null is declared, without a type array',
  );
  assert.deepEqual(echo.inputSchema.required, ['text'], 'the nullable required property became optional');
  assert.deepEqual(props.tags!.items, {});
});

test('annotations and _meta are truthful to the consent class, revert handler, idempotency and open world', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  const tools = new Map((await listAllTools(client)).map((x) => [x.name, x]));
  const a = (n: string) => tools.get(n)!.annotations!;
  assert.deepEqual(
    { ...a('test__echo') },
    { readOnlyHint: true, openWorldHint: false },
    'only hints that differ from MCP defaults; destructive/idempotent are meaningful only for writes',
  );
  // MCP defaults: readOnlyHint false, destructiveHint true, idempotentHint false, openWorldHint true.
  const hint = (n: string) => {
    const x = a(n);
    return {
      r: x.readOnlyHint ?? false,
      d: x.destructiveHint ?? true,
      i: x.idempotentHint ?? false,
      o: x.openWorldHint ?? true,
    };
  };
  assert.deepEqual(
    hint('test__note_add'),
    { r: false, d: false, i: false, o: false },
    'a reversible write with a revert handler is not destructive',
  );
  assert.equal(hint('test__charge').d, true);
  assert.equal(hint('test__charge').o, true);
  assert.equal(hint('test__purge').d, true);
  assert.equal(hint('audit__revert').r, false, 'delegated consent is not read-only');
  assert.equal(hint('audit__revert').d, true);
  const meta = tools.get('test__charge')!._meta!;
  assert.equal(meta['dev.solid-verbs/verb'], undefined, 'the verb name is the tool name with "__" as "."');
  assert.equal(meta['dev.solid-verbs/shape'], undefined, "the shape is the manifest's");
  assert.equal(meta[META.consentClass], 'WRITE_FINANCIAL');
  assert.equal(meta[META.roleFloor], undefined, 'the class default floor (admin) is not repeated');
  assert.equal(meta[META.revertible], false);
  assert.equal(meta['dev.solid-verbs/side_effects'], undefined, "side_effects is the manifest's");
  assert.equal(tools.get('test__echo')!._meta?.[META.revertible], undefined, 'revertible only on writes');
  assert.equal(
    tools.get('test__echo')!._meta?.[META.consentClass],
    undefined,
    'a read says its class once: readOnlyHint',
  );
  assert.equal(tools.get('audit__revert')!._meta![META.consentClass], 'delegated');
  assert.equal(tools.get('test__charge')!.title, 'Charge an invoice');
});

test('tools/list pages with an opaque cursor; a forged cursor is a -32602 error', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h, { server: { catalog: new ToolCatalog(h.rt, { pageSize: 3 }) } });
  const first = await client.listTools();
  assert.equal(first.tools.length, 3);
  assert.equal(typeof first.nextCursor, 'string');
  const all = await listAllTools(client);
  const full = new ToolCatalog(h.rt).entries.map((e) => e.tool.name);
  assert.deepEqual(
    all.map((x) => x.name),
    full,
  );
  await rejectsWith(client.listTools({ cursor: 'not-ours' }), -32602);
  await rejectsWith(client.listTools({ cursor: Buffer.from('x:verbs__list').toString('base64url') }), -32602);
});

test('the projection is computed once per registry change, not per call', async (t) => {
  const h = await createMcpRuntime(t);
  const catalog = new ToolCatalog(h.rt);
  const before = catalog.entries;
  assert.equal(catalog.entries, before, 'same array while nothing changed');
  const v0 = catalog.version;
  h.rt.register(
    defineVerb({
      name: 'test.added',
      description: 'Added later.',
      shape: 'aggregate',
      category: 'test',
      input: { type: 'object', properties: {} },
      handler: async () => ({ entity_id: 1, data: {} }),
    }),
  );
  assert.notEqual(catalog.entries, before);
  assert.ok(catalog.version > v0);
  const echoBefore = before.find((e) => e.tool.name === 'test__echo')!;
  assert.equal(
    catalog.entries.find((e) => e.tool.name === 'test__echo'),
    echoBefore,
    'unchanged verbs keep their projection',
  );
  catalog.dispose();
});

test('tools/call runs the verb: one text block holds the result as JSON, no structuredContent; both name forms work', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  await client.listTools();
  for (const name of ['test__echo', 'test.echo']) {
    const r = (await client.callTool({ name, arguments: { text: 'hi', count: 2 } })) as CallToolResult;
    assert.equal(r.isError, undefined);
    const sc = resultOf(r) as { data: Record<string, unknown> };
    assert.deepEqual(
      sc.data,
      { text: 'hi', count: 2, note: null },
      'absent required-nullable property mapped back to null',
    );
    assert.equal(r.content.length, 1);
    assert.equal(r.content[0]!.type, 'text');
    assert.equal(r.structuredContent, undefined, 'one copy of the result (spec/transports.md §mcp-results)');
  }
});

test('an unknown tool is JSON-RPC -32602 carrying the envelope; the attempt is audited (a blocked name as blocked)', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  const err = await rejectsWith(client.callTool({ name: 'test__ech', arguments: {} }), -32602);
  assert.match(err.message, /Unknown tool: test__ech/);
  assert.match(err.message, /test\.echo/, 'the closest verb is suggested');
  assert.equal((err.data as { envelope: Envelope }).envelope.error!.reason, 'unknown_verb');
  const blocked = await rejectsWith(
    client.callTool({ name: 'customer_delete', arguments: { id: 1 } }),
    -32602,
  );
  assert.equal((blocked.data as { envelope: Envelope }).envelope.error!.reason, 'blocked_verb');
  const rows = await auditRows(h, 'customer_delete');
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.reason, 'blocked_verb');
  const hidden = await rejectsWith(client.callTool({ name: 'test__http_only', arguments: {} }), -32602);
  assert.equal(
    (hidden.data as { envelope: Envelope }).envelope.error!.reason,
    'surface_denied',
    'a verb not on mcp_stdio does not run',
  );
});

test('invalid arguments are an isError result with the envelope and the failing path, never a protocol error', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  await client.listTools();
  const r = (await client.callTool({
    name: 'test__echo',
    arguments: { text: 'x', count: -1 },
  })) as CallToolResult;
  const env = envelopeOf(r);
  assert.equal(env.ok, false);
  assert.equal(env.error!.reason, 'invalid_input');
  assert.equal(env.error!.path, '/count');
  const text = (r.content[0] as { text: string }).text;
  assert.match(text, /^invalid_input: .* — /);
  assert.ok(!text.includes('\n'), 'one line');
  const missing = envelopeOf(
    (await client.callTool({ name: 'test__echo', arguments: {} })) as CallToolResult,
  );
  assert.equal(missing.error!.path, '/text');
});

test('without a key reads run on the sandbox and writes answer auth_required; company_id is never an input', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  await client.listTools();
  const read = (await client.callTool({ name: 'test__echo', arguments: { text: 'x' } })) as CallToolResult;
  assert.equal(read.isError, undefined);
  const write = envelopeOf(
    (await client.callTool({ name: 'test__note_add', arguments: { text: 'x' } })) as CallToolResult,
  );
  assert.equal(write.error!.reason, 'auth_required');
  assert.equal(h.runs.note, 0);
  const smuggled = envelopeOf(
    (await client.callTool({
      name: 'test__echo',
      arguments: { text: 'x', company_id: 3 },
    })) as CallToolResult,
  );
  assert.equal(smuggled.error!.reason, 'identity_override');
});

test('without a key every answer names the sandbox tenant (_meta on success, the envelope on errors); not_found says how to pass a key', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  await client.listTools();
  const marker = { id: h.sandboxId, sandbox: true };
  const read = (await client.callTool({ name: 'test__echo', arguments: { text: 'x' } })) as CallToolResult;
  assert.equal(read.isError, undefined);
  assert.deepEqual(read._meta?.[META.tenant], marker);
  const missing = envelopeOf(
    (await client.callTool({
      name: 'audit__explain',
      arguments: { entity_type: 'note', entity_id: 987654 },
    })) as CallToolResult,
  );
  assert.equal(missing.error!.reason, 'not_found');
  assert.deepEqual(missing.tenant, marker);
  assert.match(missing.error!.hint!, /sandbox tenant/);
  assert.match(missing.error!.hint!, /SOLID_API_KEY/);
  const write = envelopeOf(
    (await client.callTool({ name: 'test__note_add', arguments: { text: 'x' } })) as CallToolResult,
  );
  assert.equal(write.error!.reason, 'auth_required');
  assert.deepEqual(write.tenant, marker);
  assert.match(write.error!.hint!, /solid serve --demo/);
  const keyed = await connectInMemory(t, h, { apiKey: h.keys.read_only });
  await keyed.listTools();
  const own = (await keyed.callTool({ name: 'test__echo', arguments: { text: 'x' } })) as CallToolResult;
  assert.equal(own._meta?.[META.tenant], undefined, 'a keyed call carries no sandbox marker');
});

test('WRITE_REVERSIBLE: pending with a nonce, then confirmed through _meta confirm + nonce; the nonce works once', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h, { apiKey: h.keys.employee });
  await client.listTools();
  const args = { text: 'call back Tuesday' };
  const pending = (await client.callTool({ name: 'test__note_add', arguments: args })) as CallToolResult;
  const env = envelopeOf(pending);
  assert.equal(env.error!.reason, 'dispatch_pending');
  assert.equal(env.consent!.gate, 'confirmation');
  assert.ok(
    env.error!.hint!.includes(META.nonce) && env.error!.hint!.includes(env.consent!.nonce),
    env.error!.hint,
  );
  assert.match((pending.content[0] as { text: string }).text, /^dispatch_pending: /);
  assert.equal(h.runs.note, 0);
  const meta = { [META.confirm]: true, [META.nonce]: env.consent!.nonce };
  const done = (await client.callTool({
    name: 'test__note_add',
    arguments: args,
    _meta: meta,
  })) as CallToolResult;
  assert.equal(done.isError, undefined, JSON.stringify(done));
  const receipt = resultOf(done) as { status: string; audit_id: number; rollback_handle?: string };
  assert.equal(receipt.status, 'added');
  assert.equal(done._meta![META.auditId], receipt.audit_id);
  assert.equal(typeof receipt.rollback_handle, 'string');
  assert.equal(h.runs.note, 1);
  const again = envelopeOf(
    (await client.callTool({ name: 'test__note_add', arguments: args, _meta: meta })) as CallToolResult,
  );
  assert.equal(again.error!.reason, 'nonce_replayed');
  const changed = envelopeOf(
    (await client.callTool({
      name: 'test__note_add',
      arguments: { text: 'other' },
      _meta: meta,
    })) as CallToolResult,
  );
  assert.equal(changed.error!.reason, 'nonce_invalid', 'the nonce is bound to the arguments');
  assert.equal(h.runs.note, 1);
});

test('an idempotency key in _meta replays the stored receipt without running again', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h, { apiKey: h.keys.employee });
  await client.listTools();
  const args = { text: 'once' };
  const key = { [META.idempotencyKey]: 'mcp-test-key-1' };
  const pending = envelopeOf(
    (await client.callTool({ name: 'test__note_add', arguments: args, _meta: key })) as CallToolResult,
  );
  const first = (await client.callTool({
    name: 'test__note_add',
    arguments: args,
    _meta: { ...key, [META.confirm]: true, [META.nonce]: pending.consent!.nonce },
  })) as CallToolResult;
  assert.equal(first.isError, undefined);
  assert.equal(first._meta![META.idempotencyKey], 'mcp-test-key-1');
  const replay = (await client.callTool({
    name: 'test__note_add',
    arguments: args,
    _meta: key,
  })) as CallToolResult;
  assert.equal(replay.isError, undefined);
  assert.equal((resultOf(replay) as { replayed?: boolean }).replayed, true);
  assert.equal(replay._meta![META.replayed], true);
  assert.equal(
    (resultOf(replay) as { audit_id: number }).audit_id,
    (resultOf(first) as { audit_id: number }).audit_id,
  );
  assert.equal(h.runs.note, 1);
  const bad = envelopeOf(
    (await client.callTool({
      name: 'test__note_add',
      arguments: args,
      _meta: { [META.idempotencyKey]: '' },
    })) as CallToolResult,
  );
  assert.equal(bad.error!.reason, 'idempotency_key_invalid');
});

test('typed phrase approved by the human through form elicitation: the form shows the summary and exact phrase', async (t) => {
  const h = await createMcpRuntime(t);
  const seen: string[] = [];
  const client = await connectInMemory(t, h, {
    apiKey: h.keys.owner,
    elicit: (req) => {
      seen.push(req.params.message);
      return { action: 'accept', content: { typed_phrase: phraseShown(req) } };
    },
  });
  await client.listTools();
  const r = (await client.callTool({
    name: 'test__charge',
    arguments: { invoice_id: 4242, amount_cents: 5000 },
  })) as CallToolResult;
  assert.equal(r.isError, undefined, JSON.stringify(r));
  assert.equal((resultOf(r) as { status: string }).status, 'charged');
  assert.equal(h.runs.charge, 1);
  assert.equal(seen.length, 1);
  assert.ok(seen[0]!.includes('CHARGE $50.00 to invoice #4242'), seen[0]);
  assert.ok(seen[0]!.includes('Charge $50.00 to invoice #4242.'), 'the summary is shown');
  const rows = await auditRows(h, 'test.charge');
  assert.deepEqual(
    rows.map((x) => x.status),
    ['pending', 'completed'],
  );
});

test('typed phrase: a wrong phrase from the human is phrase_mismatch, audited, nothing runs; the model never types it', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h, {
    apiKey: h.keys.owner,
    elicit: (req) => ({ action: 'accept', content: { typed_phrase: phraseShown(req).toLowerCase() } }),
  });
  await client.listTools();
  const r = (await client.callTool({ name: 'test__purge', arguments: { contact_id: 7 } })) as CallToolResult;
  const env = envelopeOf(r);
  assert.equal(env.error!.reason, 'phrase_mismatch');
  assert.equal(h.runs.purge, 0);
  const rows = await auditRows(h, 'test.purge');
  assert.equal(rows.at(-1)!.reason, 'phrase_mismatch');
  assert.equal(rows.at(-1)!.status, 'denied');
});

for (const action of ['decline', 'cancel'] as const) {
  test(`typed phrase: a ${action === 'decline' ? 'declined' : 'cancelled'} form withdraws the request (approval_superseded), audited; a form is no human's rejection`, async (t) => {
    const h = await createMcpRuntime(t);
    const client = await connectInMemory(t, h, { apiKey: h.keys.owner, elicit: () => ({ action }) });
    await client.listTools();
    const args = { invoice_id: 9, amount_cents: 1999 };
    const env = envelopeOf(
      (await client.callTool({ name: 'test__charge', arguments: args })) as CallToolResult,
    );
    assert.equal(env.error!.reason, 'approval_superseded');
    assert.equal(h.runs.charge, 0);
    const approvals = await h.rt.store.read((q) =>
      q.all<Record<string, unknown>>(
        "SELECT status, decision_note FROM approvals WHERE verb = 'test.charge'",
      ),
    );
    assert.equal(approvals.length, 1);
    assert.equal(approvals[0]!.status, 'superseded');
    const rows = await auditRows(h, 'test.charge');
    assert.deepEqual(
      rows.map((x) => [x.status, x.reason]),
      [
        ['pending', 'dispatch_pending'],
        ['denied', 'approval_superseded'],
      ],
    );
    assert.equal((await auditRows(h, 'approvals.reject')).length, 0, 'the client software rejects nothing');
    assert.equal((await auditRows(h, 'approvals.withdraw')).length, 1, 'the withdrawal is an audited action');
  });
}

test('typed phrase without elicitation fails closed; a phrase from the model is ignored; approved out of band, the re-call with the nonce runs', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h, {
    apiKey: h.keys.owner,
    server: { approvalUrl: (id) => `http://127.0.0.1:4400/approvals/${id}` },
  });
  await client.listTools();
  const args = { invoice_id: 4242, amount_cents: 5000 };
  const phrase = 'CHARGE $50.00 to invoice #4242';
  const pending = envelopeOf(
    (await client.callTool({ name: 'test__charge', arguments: args })) as CallToolResult,
  );
  assert.equal(pending.error!.reason, 'dispatch_pending');
  assert.equal(pending.consent!.gate, 'typed_phrase');
  const approvalId = String(pending.consent!.approval_id);
  assert.ok(pending.error!.hint!.includes(`solid approvals approve ${approvalId}`), pending.error!.hint);
  assert.ok(pending.error!.hint!.includes(`http://127.0.0.1:4400/approvals/${approvalId}`));
  assert.ok(pending.error!.hint!.includes(pending.consent!.nonce));
  const meta = { [META.confirm]: true, [META.nonce]: pending.consent!.nonce };
  // The model "types" the phrase: in _meta and in the arguments. Neither is consent.
  const byModel = envelopeOf(
    (await client.callTool({
      name: 'test__charge',
      arguments: args,
      _meta: { ...meta, 'dev.solid-verbs/typed_phrase': phrase, typed_phrase: phrase },
    })) as CallToolResult,
  );
  assert.equal(byModel.error!.reason, 'dispatch_pending', 'still waiting for a human');
  const inArgs = envelopeOf(
    (await client.callTool({
      name: 'test__charge',
      arguments: { ...args, typed_phrase: phrase },
      _meta: meta,
    })) as CallToolResult,
  );
  assert.equal(inArgs.error!.reason, 'invalid_input');
  assert.equal(h.runs.charge, 0);
  // A human approves out of band (approvals.approve, as `solid approvals approve` does).
  const approved = await h.rt.dispatch({ surface: 'cli', principal: h.human('admin') }, 'approvals.approve', {
    approval_id: approvalId,
    typed_phrase: phrase,
  });
  assert.equal(approved.ok, true, JSON.stringify(approved));
  const done = (await client.callTool({
    name: 'test__charge',
    arguments: args,
    _meta: meta,
  })) as CallToolResult;
  assert.equal(done.isError, undefined, JSON.stringify(done));
  assert.equal(h.runs.charge, 1);
  const rows = await auditRows(h, 'test.charge');
  assert.equal(rows.at(-1)!.status, 'completed');
  assert.equal(rows.at(-1)!.approved_by, 2, 'the approver is recorded');
});

test('progress notifications reach a request with a progressToken, strictly increasing', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  await client.listTools();
  const seen: number[] = [];
  const r = (await client.callTool({ name: 'test__slow', arguments: { steps: 5, delay_ms: 1 } }, undefined, {
    onprogress: (p) => void seen.push(p.progress),
  })) as CallToolResult;
  assert.equal(r.isError, undefined);
  assert.deepEqual(seen, [1, 2, 3, 4, 5]);
});

test('cancelling the request aborts the verb through its signal', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  await client.listTools();
  slowState.lastAborted = false;
  const ac = new AbortController();
  const call = client.callTool({ name: 'test__slow', arguments: { steps: 10_000, delay_ms: 2 } }, undefined, {
    signal: ac.signal,
    onprogress: (p) => {
      if (p.progress === 3) ac.abort('changed my mind');
    },
  });
  await assert.rejects(call);
  for (let i = 0; i < 200 && !slowState.lastAborted; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(slowState.lastAborted, true, 'the handler saw ctx.signal aborted');
});

test('large outputs: a result under the limit arrives whole, an oversize one is answered as result_too_large', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  await client.listTools();
  const two = (await client.callTool({
    name: 'test__blob',
    arguments: { bytes: 2 * 1024 * 1024 },
  })) as CallToolResult;
  assert.equal(two.isError, undefined);
  assert.equal(
    (resultOf(two) as { data: { blob: string } }).data.blob.length,
    2 * 1024 * 1024,
    'the text holds the complete result',
  );
  const big = envelopeOf(
    (await client.callTool({
      name: 'test__blob',
      arguments: { bytes: 9.5 * 1024 * 1024 },
    })) as CallToolResult,
  );
  assert.equal(big.error!.reason, 'result_too_large');
  assert.ok((big.error!.details!.bytes as number) > 9.5 * 1024 * 1024);
  assert.match(big.error!.hint!, /page|filter/);
});

test('registering a verb projected onto MCP sends notifications/tools/list_changed; an http-only verb does not', async (t) => {
  const h = await createMcpRuntime(t);
  const client = await connectInMemory(t, h);
  let changes = 0;
  let notified!: () => void;
  const got = new Promise<void>((r) => (notified = r));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes++;
    notified();
  });
  await client.listTools();
  h.rt.register(
    defineVerb({
      name: 'test.hidden',
      description: 'HTTP only.',
      shape: 'aggregate',
      category: 'test',
      surfaces: ['http'],
      input: { type: 'object', properties: {} },
      handler: async () => ({ entity_id: 1, data: {} }),
    }),
  );
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  h.rt.register(
    defineVerb({
      name: 'test.late',
      description: 'Added later.',
      shape: 'aggregate',
      category: 'test',
      input: { type: 'object', properties: {} },
      handler: async () => ({ entity_id: 1, data: {} }),
    }),
  );
  await got;
  assert.equal(changes, 1);
  const names = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(names.includes('test__late') && !names.includes('test__hidden'));
});
