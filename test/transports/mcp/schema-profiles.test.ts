/**
 * Served schema profiles (spec/transports.md §mcp-schema-profiles): every tool of the demo
 * catalogue, the conformance pack and the test packs passes the OpenAI strict and Gemini
 * checkers (test/support/schema-dialects.ts, written from the providers' documented rules) under
 * its profile, while the default profile fails them (so the checkers can fail); the server still
 * enforces what a dialect could only say in words; null means "not sent" under openai-strict
 * only where the verb lets the caller leave the property out; properties that accept null
 * declare it in every profile.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernHttpTransport,
} from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { JsonSchema } from '../../../src/spec/types.ts';
import { openLocal } from '../../../src/transports/cli/local.ts';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import { createMcpHttpPlugin } from '../../../src/transports/mcp/http-plugin.ts';
import { errorEnvelopeOf } from '../../../src/transports/mcp/envelope-map.ts';
import { META } from '../../../src/transports/mcp/meta-keys.ts';
import {
  SET_NULL,
  profileInputSchema,
  type SchemaProfile,
} from '../../../src/transports/mcp/schema-profiles.ts';
import { toPortableSchema } from '../../../src/transports/mcp/portable-schema.ts';
import { ToolCatalog, verbArgsOf } from '../../../src/transports/mcp/tool-catalog.ts';
import type { McpRuntime } from '../../../src/transports/runtime-surface.ts';
import { COUNTER_VERBS } from '../../support/counter-verbs.ts';
import { cliHarness } from '../../support/cli.ts';
import { schemaProfileFlag } from '../../../src/transports/cli/commands/mcp.ts';
import { openDemoRuntime } from '../../support/demo.ts';
import { listAllTools, resultOf } from '../../support/mcp.ts';
import { rejections } from '../../support/schema-dialects.ts';
import { createMcpRuntime, connectInMemory } from './harness.ts';

const BIN = fileURLToPath(new URL('../../../bin/solid.js', import.meta.url));
const PROFILES: readonly SchemaProfile[] = ['default', 'openai-strict', 'gemini'];

async function demoCatalog(t: TestContext): Promise<{ catalog: ToolCatalog; rt: McpRuntime }> {
  const dir = mkdtempSync(join(tmpdir(), 'solid-profiles-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const local = await openLocal({ db: join(dir, 'demo.db'), create: true, packs: ['demo', 'conformance'] });
  t.after(() => local.close());
  const catalog = new ToolCatalog(local.rt);
  t.after(() => catalog.dispose());
  return { catalog, rt: local.rt };
}

function toolsOf(catalog: ToolCatalog, profile: SchemaProfile): Tool[] {
  return catalog.entriesOf(profile).map((e) => e.tool);
}

test('rejections per dialect: 0 under each profile for the demo catalogue and the test packs; the default profile fails both checkers', async (t) => {
  const { catalog } = await demoCatalog(t);
  const h = await createMcpRuntime(t);
  h.rt.register(...COUNTER_VERBS);
  const testCatalog = new ToolCatalog(h.rt);
  t.after(() => testCatalog.dispose());
  const counts: string[] = [];
  for (const profile of PROFILES) {
    const tools = [...toolsOf(catalog, profile), ...toolsOf(testCatalog, profile)];
    const strict = rejections(tools, 'openai-strict');
    const gemini = rejections(tools, 'gemini');
    const bytes = Buffer.byteLength(JSON.stringify(toolsOf(catalog, profile)));
    counts.push(
      `${profile}: openai-strict rejects ${strict.size}/${tools.length}, gemini ${gemini.size}/${tools.length}; demo tools ${bytes} bytes`,
    );
    if (profile === 'openai-strict')
      assert.deepEqual([...strict], [], 'openai-strict passes the strict checker');
    if (profile === 'gemini') assert.deepEqual([...gemini], [], 'gemini passes the Gemini checker');
    if (profile === 'default') {
      // The checkers can fail: the portable schemas break both dialects' rules.
      assert.ok(strict.size > tools.length / 2, `default: ${strict.size} strict rejections`);
      const demo = toolsOf(catalog, profile);
      assert.equal(
        rejections(demo, 'gemini').size,
        demo.length,
        'every default demo tool has additionalProperties, which Gemini refuses',
      );
    }
  }
  t.diagnostic(counts.join('\n'));
});

test('every property that accepts null declares it, in every profile (a client validating arguments lets null through)', async (t) => {
  const { catalog } = await demoCatalog(t);
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  for (const profile of PROFILES) {
    let nullable = 0;
    for (const e of catalog.entriesOf(profile)) {
      const own = (e.verb.inputSchema.properties ?? {}) as Record<string, JsonSchema>;
      const served = (e.tool.inputSchema.properties ?? {}) as Record<string, JsonSchema>;
      for (const [key, sub] of Object.entries(own)) {
        if (!ajv.validate(sub, null)) continue;
        nullable++;
        // Gemini's `nullable: true` is OpenAPI's spelling; read it as JSON Schema's null branch.
        const s = served[key]!;
        const asJsonSchema =
          s.nullable === true ? { anyOf: [{ ...s, nullable: undefined }, { type: 'null' }] } : s;
        assert.ok(ajv.validate(asJsonSchema, null), `${profile} ${e.tool.name}/${key} refuses null`);
      }
    }
    assert.ok(nullable >= 36, `${profile}: the CRM "null clears it" properties and others (${nullable})`);
  }
});

test('openai-strict: null means "not sent" only for optional properties; _set_null clears; JSON text is parsed back', async (t) => {
  const { catalog } = await demoCatalog(t);
  const update = catalog.lookup('crm_contact_update', 'openai-strict')!;
  const props = update.tool.inputSchema.properties as Record<string, JsonSchema>;
  assert.deepEqual(update.tool.inputSchema.required, Object.keys(props), 'every property is required');
  const everyNull = Object.fromEntries(Object.keys(props).map((k) => [k, null]));
  assert.deepEqual(
    verbArgsOf(update, { ...everyNull, contact_id: 7, name: 'Ann', [SET_NULL]: ['/city'] }),
    { contact_id: 7, name: 'Ann', city: null },
    'nulls are left out; the listed property is set to null',
  );
  assert.deepEqual(
    verbArgsOf(update, { ...everyNull, contact_id: 7, [SET_NULL]: ['/contact_id'] }),
    { contact_id: 7, [SET_NULL]: ['/contact_id'] },
    'a pointer _set_null does not offer is left for the pipeline to refuse',
  );
  const append = catalog.lookup('transaction.append', 'openai-strict')!;
  const argsSchema = (append.tool.inputSchema.properties as Record<string, JsonSchema>).args!;
  assert.deepEqual(argsSchema.type, ['string', 'null'], 'JSON text, optional');
  assert.match(String(argsSchema.description), /JSON text/);
  assert.deepEqual(
    verbArgsOf(append, { transaction_id: 't', verb: 'v', args: '{"a":1}' }),
    { transaction_id: 't', verb: 'v', args: { a: 1 } },
    'a free-form object travels as JSON text',
  );
  assert.deepEqual(verbArgsOf(append, { transaction_id: 't', verb: 'v', args: '{a' }).args, '{a');
  // A property the verb REQUIRES that admits null keeps null as a value (test.echo's note).
  const h = await createMcpRuntime(t);
  const testCatalog = new ToolCatalog(h.rt);
  t.after(() => testCatalog.dispose());
  const echo = testCatalog.lookup('test.echo', 'openai-strict')!;
  const echoProps = echo.tool.inputSchema.properties as Record<string, JsonSchema>;
  assert.equal(echoProps[SET_NULL], undefined, 'nothing for _set_null to clear');
  assert.deepEqual(verbArgsOf(echo, { text: 'a', note: null, tags: null }), { text: 'a', note: null });
});

test('under openai-strict the server still enforces the constraints it moved into words, and null-filled calls work', async (t) => {
  const d = await openDemoRuntime(t);
  const client = await connectInMemory(t, d, {
    apiKey: d.keys.owner,
    server: { schemaProfile: 'openai-strict' },
  });
  const tools = new Map((await listAllTools(client)).map((x) => [x.name, x]));
  const search = tools.get('crm_contacts_search')!;
  assert.match(
    String((search.inputSchema.properties as Record<string, JsonSchema>).query!.description),
    /\(min 1 chars\)/,
    'minLength is said in words; the free-text cap (maxLength 200) is left out of the projection and still enforced below',
  );
  const nulls = (tool: Tool) =>
    Object.fromEntries(Object.keys(tool.inputSchema.properties ?? {}).map((k) => [k, null]));
  const tooLong = (await client.callTool({
    name: 'crm_contacts_search',
    arguments: { ...nulls(search), query: 'x'.repeat(201) },
  })) as CallToolResult;
  const refused = errorEnvelopeOf(tooLong)!;
  assert.equal(refused.error?.reason, 'invalid_input');
  assert.equal(refused.error?.path, '/query');
  const found = (await client.callTool({
    name: 'crm_contacts_search',
    arguments: { ...nulls(search), limit: 2 },
  })) as CallToolResult;
  assert.equal(found.isError, undefined, JSON.stringify(found.content));

  // A strict model fills every property: nothing is cleared unless listed in _set_null.
  const update = tools.get('crm_contact_update')!;
  const id = d.fixtures.customer_id;
  type ContactView = { email: unknown; name: unknown; address: Record<string, unknown> };
  const contactOf = async (): Promise<ContactView> => {
    const page = await d.call('owner', 'crm_contacts_search', { limit: 200 });
    const items = (page.result as { data: { items: (ContactView & { id: number })[] } }).data.items;
    return items.find((c) => c.id === id)!;
  };
  const before = await contactOf();
  assert.ok(before.email !== null && before.address.postal_code !== null, 'the seeded customer has both');
  const args = { ...nulls(update), contact_id: id, city: 'Provo', [SET_NULL]: ['/postal_code'] };
  const first = (await client.callTool({ name: 'crm_contact_update', arguments: args })) as CallToolResult;
  const pending = errorEnvelopeOf(first)!;
  assert.equal(pending.error?.reason, 'dispatch_pending');
  const done = (await client.callTool({
    name: 'crm_contact_update',
    arguments: args,
    _meta: { [META.confirm]: true, [META.nonce]: pending.consent!.nonce },
  })) as CallToolResult;
  assert.equal(done.isError, undefined, JSON.stringify(done.content));
  const contact = await contactOf();
  assert.equal(contact.address.city, 'Provo');
  assert.equal(contact.address.postal_code, null, '_set_null cleared it');
  assert.equal(contact.email, before.email, 'an email sent as null was left as it was');
  assert.equal(contact.name, before.name);
});

test('over HTTP a client picks its profile with ?schema_profile=; an unknown one is refused', async (t) => {
  const d = await openDemoRuntime(t);
  const app = createHttpServer(d.rt, { plugins: [createMcpHttpPlugin({})] });
  t.after(() => app.close());
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`;
  const list = async (query: string) => {
    const client = new Client({ name: 'profiles', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(base + query)));
    t.after(() => client.close());
    return listAllTools(client);
  };
  const gemini = await list('?schema_profile=gemini');
  assert.deepEqual([...rejections(gemini, 'gemini')], []);
  const plain = await list('');
  assert.equal(rejections(plain, 'gemini').size, plain.length);
  const res = await fetch(`${base}?schema_profile=nope`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    }),
  });
  assert.equal(res.status, 400);
  assert.match(await res.text(), /schema_profile/);
});

test('under gemini the server still enforces what the dialect lacks, and JSON text reaches the verb as a value', async (t) => {
  const h = await createMcpRuntime(t);
  const d = await openDemoRuntime(t);
  const client = await connectInMemory(t, d, { apiKey: d.keys.owner, server: { schemaProfile: 'gemini' } });
  const tools = new Map((await listAllTools(client)).map((x) => [x.name, x]));
  const email = (tools.get('crm_contact_create')!.inputSchema.properties as Record<string, JsonSchema>)
    .email!;
  assert.equal(email.format, undefined, 'Gemini has no email format');
  assert.equal(email.nullable, true);
  assert.match(String(email.description), /format "email"/);
  const bad = (await client.callTool({
    name: 'crm_contact_create',
    arguments: { name: 'Gem Ini', email: 'not an email' },
  })) as CallToolResult;
  const env = errorEnvelopeOf(bad)!;
  assert.equal(env.error?.reason, 'invalid_input', 'the format moved into words is still enforced');
  assert.equal(env.error?.path, '/email');
  // test.echo's tags has no items schema: sent as JSON text, parsed back before validation.
  const echoClient = await connectInMemory(t, h, { server: { schemaProfile: 'gemini' } });
  const echoTools = new Map((await listAllTools(echoClient)).map((x) => [x.name, x]));
  const tags = (echoTools.get('test__echo')!.inputSchema.properties as Record<string, JsonSchema>).tags!;
  assert.deepEqual((tags.items as JsonSchema).type, 'string', 'an item of any type travels as JSON text');
  const echoed = (await echoClient.callTool({
    name: 'test__echo',
    arguments: { text: 'hi', note: null, tags: ['{"a":1}', '2'] },
  })) as CallToolResult;
  assert.equal(echoed.isError, undefined, JSON.stringify(echoed.content));
  assert.deepEqual((resultOf(echoed) as { data: { tags?: unknown } }).data.tags, [{ a: 1 }, 2]);
});

test('solid mcp --schema-profile serves the profile over stdio; an unknown profile exits 2 (flag or SOLID_MCP_SCHEMA_PROFILE)', async (t) => {
  assert.equal(schemaProfileFlag(undefined, {}), 'default');
  assert.equal(schemaProfileFlag('gemini', { SOLID_MCP_SCHEMA_PROFILE: 'openai-strict' }), 'gemini');
  assert.equal(schemaProfileFlag(undefined, { SOLID_MCP_SCHEMA_PROFILE: 'openai-strict' }), 'openai-strict');
  const cli = cliHarness(t);
  assert.equal((await cli.run(['init', '--json'])).code, 0);
  const bad = await cli.run(['mcp', '--schema-profile', 'nope']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /unknown schema profile "nope": use one of default, openai-strict, gemini/);
  assert.equal(bad.stdout, '', 'nothing on stdout (it carries only JSON-RPC)');
  const badEnv = await cli.run(['serve', '--port', '0'], { env: { SOLID_MCP_SCHEMA_PROFILE: 'nope' } });
  assert.equal(badEnv.code, 2);
  assert.match(badEnv.stderr, /unknown schema profile "nope"/);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', '--db', cli.db, '--schema-profile', 'openai-strict'],
    env: getDefaultEnvironment(),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'strict-host', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  const tools = await listAllTools(client);
  assert.ok(tools.length > 20);
  assert.deepEqual([...rejections(tools, 'openai-strict')], []);
});

test('MCP 2026-07-28 (stateless) serves the profile a request asks for and maps its arguments back', async (t) => {
  const d = await openDemoRuntime(t);
  const app = createHttpServer(d.rt, { plugins: [createMcpHttpPlugin({})] });
  t.after(() => app.close());
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = new URL(
    `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp?schema_profile=openai-strict`,
  );
  const client = new ModernClient(
    { name: 'modern', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new ModernHttpTransport(url));
  t.after(() => client.close().catch(() => {}));
  const tools: { name: string; inputSchema: unknown }[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  assert.ok(tools.length > 100);
  assert.deepEqual([...rejections(tools, 'openai-strict')], []);
  const search = tools.find((x) => x.name === 'crm_contacts_search')!;
  const nulls = Object.fromEntries(
    Object.keys((search.inputSchema as JsonSchema).properties as object).map((k) => [k, null]),
  );
  const found = (await client.callTool({
    name: 'crm_contacts_search',
    arguments: { ...nulls, limit: 1 },
  })) as CallToolResult;
  assert.notEqual(found.isError, true, JSON.stringify(found.content));
});

test('keywords neither dialect has (allOf, oneOf, not, const, integer enums, maps, any-typed items) still give accepted schemas, with the constraint in words', () => {
  const schema: JsonSchema = {
    type: 'object',
    properties: {
      mode: { const: 'fast' },
      level: { type: 'integer', enum: [1, 2, 3], description: 'Level.' },
      pick: {
        oneOf: [
          { type: 'string', format: 'uri' },
          { type: 'integer', multipleOf: 5 },
        ],
      },
      both: { allOf: [{ type: 'string', minLength: 2 }, { maxLength: 9 }] },
      notx: { type: 'string', not: { const: 'x' } },
      map: { type: 'object', additionalProperties: { type: 'integer' } },
      rows: {
        type: 'array',
        uniqueItems: true,
        items: {
          type: 'object',
          properties: { a: { type: ['string', 'null'] }, b: { type: 'number', exclusiveMinimum: 0 } },
          required: ['b'],
        },
      },
      deep: { type: 'object', properties: { x: { type: 'string', nullable: true } } },
    },
    required: ['mode'],
  };
  const portable = toPortableSchema(schema, 'input');
  for (const profile of ['openai-strict', 'gemini'] as const) {
    const served = profileInputSchema(portable.schema, profile, portable.nullFill).schema;
    assert.deepEqual([...rejections([{ name: 'hard_case', inputSchema: served }], profile)], [], profile);
    const text = JSON.stringify(served);
    assert.match(text, /min 2 chars/, `${profile}: allOf's first part a schema, the others in words`);
    assert.match(text, /must also match \{\\"maxLength\\":9\}/, `${profile}: allOf's other parts in words`);
    assert.match(text, /must not match/, `${profile}: not in words`);
    assert.match(text, /format \\"uri\\"/, `${profile}: a format the dialect lacks in words`);
  }
  const strict = profileInputSchema(portable.schema, 'openai-strict', portable.nullFill);
  assert.deepEqual(
    strict.settable,
    ['/deep/x'],
    'a nullable optional reached through properties can be cleared',
  );
  const args = {
    mode: 'fast',
    level: null,
    pick: null,
    both: null,
    notx: null,
    map: '{"k":1}',
    rows: [{ a: null, b: 1 }],
    deep: { x: null },
    [SET_NULL]: ['/deep/x'],
  };
  const entry = { input: strict, nullFill: portable.nullFill } as unknown as Parameters<typeof verbArgsOf>[0];
  assert.deepEqual(
    verbArgsOf(entry, args),
    {
      mode: 'fast',
      map: { k: 1 },
      rows: [{ a: null, b: 1 }],
      deep: { x: null },
    },
    'inside arrays a nullable optional keeps null; through properties null is "not sent" and _set_null sets it',
  );
});
