/**
 * The remote MCP bridge (`solid mcp --url …`): the same tools and the same answers as the embedded
 * stdio server (list, read, confirmation by _meta, typed phrase by elicitation, a declined form,
 * refused tools); the manifest cache (ETag/304, a verb added on the server appears within one
 * refresh with list_changed, an invalid manifest is rejected and the last good one kept); and
 * outages (calls answer upstream_unavailable instead of hanging, the tools stay listed, calls work
 * again when the server is back). Spec: spec/transports.md §remote-mcp.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { normalize, remoteFixture, runCliCaptured, type RemoteFixture } from './support.ts';
import { openLocal } from '../../src/transports/cli/local.ts';
import { createMcpServer } from '../../src/transports/mcp/mcp-server.ts';
import { ToolCatalog } from '../../src/transports/mcp/tool-catalog.ts';
import { RemoteManifest, serveMcpBridge } from '../../src/remote-client/mcp-bridge.ts';
import { ApiClient } from '../../src/remote-client/api-client.ts';
import { META } from '../../src/transports/mcp/meta-keys.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import type { McpRuntime as Runtime } from '../../src/transports/runtime-surface.ts';
import type { TestContext } from 'node:test';
import { listAllTools, resultOf } from '../support/mcp.ts';
import { errorEnvelopeOf } from '../../src/transports/mcp/envelope-map.ts';

const BIN = fileURLToPath(new URL('../../bin/solid.js', import.meta.url));

type Elicit = (message: string) => ElicitResult;

/** An SDK Client (with form elicitation answered by `elicit`) connected in-process to a server on `rt`. */
async function connect(
  t: TestContext,
  rt: Runtime,
  apiKey: string,
  elicit: { answer: Elicit },
): Promise<Client> {
  const server = createMcpServer(rt, { catalog: new ToolCatalog(rt), credentials: () => ({ apiKey }) });
  const client = new Client(
    { name: 'parity', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (req) => elicit.answer(req.params.message));
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  await client.connect(b);
  t.after(() => client.close());
  return client;
}

function silentLogger(lines: string[] = []) {
  return pino({ level: 'warn' }, { write: (s: string) => void lines.push(s) });
}

test(
  'the bridge lists the same tools and answers the same results as the embedded MCP server',
  { timeout: 240_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const fx = f.facts.fixtures!;
    const local = await openLocal({ db: f.localDb, logLevel: 'silent' });
    t.after(() => local.close());
    const client = new ApiClient({ baseUrl: f.baseUrl, apiKey: f.keys.admin, surface: 'mcp_stdio' });
    t.after(() => client.close());
    const manifest = new RemoteManifest(client, silentLogger());
    assert.equal(await manifest.refresh(), 'changed');
    const elicit = { answer: ((): ElicitResult => ({ action: 'decline' })) as Elicit };
    const embedded = await connect(t, local.rt, f.keys.admin, elicit);
    const bridged = await connect(t, manifest.runtime, f.keys.admin, elicit);

    await t.test('tools/list is identical (names, schemas, annotations, _meta)', async () => {
      const [a, b] = [await listAllTools(embedded), await listAllTools(bridged)];
      assert.ok(a.length > 50);
      assert.deepEqual(b, a);
    });

    const same = async (
      name: string,
      args: Record<string, unknown>,
      meta?: Record<string, unknown>,
    ): Promise<CallToolResult> => {
      const call = { name, arguments: args, ...(meta !== undefined ? { _meta: meta } : {}) };
      const a = (await embedded.callTool(call)) as CallToolResult;
      const b = (await bridged.callTool(call)) as CallToolResult;
      assert.deepEqual(normalize(b), normalize(a), `${name} ${JSON.stringify(args)}`);
      return b;
    };

    await t.test('a read, a refusal, and an unknown or non-MCP tool', async () => {
      assert.equal(
        (await same('customer__full_context', { customer_id: fx.customer_id })).isError,
        undefined,
      );
      assert.equal((await same('customer__full_context', { customer_id: 'x' })).isError, true);
      for (const name of ['no_such_tool', 'approvals__approve']) {
        const errors = await Promise.all(
          [embedded, bridged].map((c) =>
            c.callTool({ name, arguments: {} }).then(
              () => assert.fail('must throw'),
              (err: { code: number; data?: unknown }) => err,
            ),
          ),
        );
        assert.equal(errors[0]!.code, -32602);
        assert.deepEqual(normalize(errors[1]!.data), normalize(errors[0]!.data));
      }
      // tools/call without a name is refused by the MCP layer before dispatch: the bridge answers
      // it too (it once reached rt.refuse, which the bridge's runtime lacked: -32603).
      const nameless = await Promise.all(
        [embedded, bridged].map((c) =>
          c.request({ method: 'tools/call', params: { arguments: {} } } as never, CallToolResultSchema).then(
            () => assert.fail('must throw'),
            (err: { code: number; message: string; data?: { envelope?: { error?: { reason?: string } } } }) =>
              err,
          ),
        ),
      );
      for (const err of nameless) {
        assert.equal(err.code, -32602, err.message);
        assert.equal(err.data?.envelope?.error?.reason, 'invalid_request');
      }
    });

    await t.test('a confirmation: pending, then _meta confirm + nonce', async () => {
      const args = { contact_id: fx.customer_id, title: 'MCP parity', amount_cents: 777 };
      const pendingA = (await embedded.callTool({ name: 'deals_create', arguments: args })) as CallToolResult;
      const pendingB = (await bridged.callTool({ name: 'deals_create', arguments: args })) as CallToolResult;
      assert.deepEqual(normalize(pendingB), normalize(pendingA));
      const nonceOf = (r: CallToolResult) => errorEnvelopeOf(r)!.consent!.nonce;
      const a = (await embedded.callTool({
        name: 'deals_create',
        arguments: args,
        _meta: { [META.confirm]: true, [META.nonce]: nonceOf(pendingA) },
      })) as CallToolResult;
      const b = (await bridged.callTool({
        name: 'deals_create',
        arguments: args,
        _meta: { [META.confirm]: true, [META.nonce]: nonceOf(pendingB) },
      })) as CallToolResult;
      assert.equal(b.isError, undefined, JSON.stringify(b));
      assert.deepEqual(normalize(b), normalize(a));
    });

    await t.test('a typed phrase through elicitation: typed, and declined', async () => {
      // Form elicitation is offered only where the owner lets agents type phrases (the client
      // software answers it): this part compares the two servers under that explicit choice.
      for (const rt of [local.rt, f.server.rt]) {
        const { company_id } = await rt.tenants.authenticate(f.keys.admin);
        await rt.store.write((tx) =>
          tx.run(
            `UPDATE tenants SET settings = json_set(COALESCE(settings, '{}'), '$.phrase_channel', 'any') WHERE company_id = ?`,
            [company_id],
          ),
        );
        rt.tenants.invalidate();
      }
      const phrases: string[] = [];
      elicit.answer = (message) => {
        const phrase = /type exactly:\n\n {4}(.+)\n/.exec(message)![1]!;
        phrases.push(phrase);
        return { action: 'accept', content: { typed_phrase: phrase } };
      };
      const paid = await same('charge_invoice', {
        invoice_number: fx.open_invoice.number,
        amount_cents: 400,
      });
      assert.equal(paid.isError, undefined, JSON.stringify(paid));
      assert.deepEqual(phrases, [
        `CHARGE $4.00 to invoice #${fx.open_invoice.number}`,
        `CHARGE $4.00 to invoice #${fx.open_invoice.number}`,
      ]);
      elicit.answer = () => ({ action: 'decline' });
      const declined = await same('charge_invoice', {
        invoice_number: fx.open_invoice.number,
        amount_cents: 450,
      });
      assert.equal(errorEnvelopeOf(declined)!.error!.reason, 'approval_superseded');
    });
  },
);

test(
  'the bridge picks up a verb added on the server within one refresh, and rides out an outage',
  { timeout: 240_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, '--url', f.baseUrl, 'mcp', '--refresh-seconds', '0.3'],
      env: {
        ...getDefaultEnvironment(),
        SOLID_API_KEY: f.keys.owner,
        XDG_CONFIG_HOME: f.configHome,
        SOLID_LOG_LEVEL: 'silent',
      },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'bridge-test', version: '1.0.0' });
    let changed = 0;
    let notified!: () => void;
    const listChanged = new Promise<void>((r) => (notified = r));
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changed++;
      notified();
    });
    await client.connect(transport);
    t.after(() => client.close());
    const before = await listAllTools(client);
    assert.equal(
      before.some((x) => x.name === 'bridge_test__ping'),
      false,
    );

    f.server.rt.register(
      defineVerb({
        name: 'bridge_test.ping',
        title: 'Ping',
        description: 'Answer pong (a verb registered while the bridge runs).',
        shape: 'aggregate',
        category: 'test',
        input: { type: 'object', properties: {}, additionalProperties: false },
        async handler() {
          return { entity_id: 'ping', entity_type: 'ping', data: { pong: true } };
        },
      }),
    );
    await listChanged;
    assert.equal(changed, 1);
    const after = await listAllTools(client);
    assert.ok(
      after.some((x) => x.name === 'bridge_test__ping'),
      'the new verb is a tool',
    );
    const pong = (await client.callTool({ name: 'bridge_test__ping', arguments: {} })) as CallToolResult;
    assert.deepEqual((resultOf(pong) as { data: unknown }).data, { pong: true });

    // Server down: the tools stay listed, a call answers upstream_unavailable (no hang).
    await f.stop();
    await new Promise((r) => setTimeout(r, 700)); // a few refreshes fail meanwhile
    const down = (await client.callTool({ name: 'bridge_test__ping', arguments: {} })) as CallToolResult;
    assert.equal(down.isError, true);
    const env = errorEnvelopeOf(down)!;
    assert.equal(env.error!.reason, 'upstream_unavailable');
    assert.match(env.error!.message, /connection refused/);
    assert.deepEqual(
      (await listAllTools(client)).map((x) => x.name),
      after.map((x) => x.name),
      'the last good manifest is still served',
    );
    assert.equal(changed, 1, 'an outage is not a change of tools');

    await f.start();
    const back = (await client.callTool({ name: 'bridge_test__ping', arguments: {} })) as CallToolResult;
    assert.equal(back.isError, undefined, JSON.stringify(back));
  },
);

/** A fake server whose manifest the test controls (no verb hints: an older server). */
async function fakeManifestServer(t: TestContext) {
  const state = {
    verbs: [] as unknown[],
    etag: '"v1"',
    requests: [] as { url: string; inm: string | undefined }[],
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    state.requests.push({ url: req.url ?? '', inm: req.headers['if-none-match'] as string | undefined });
    if (req.url?.startsWith('/api/v1/agent/verbs?')) {
      if (req.headers['if-none-match'] === state.etag) return res.writeHead(304, { etag: state.etag }).end();
      return res
        .writeHead(200, { 'content-type': 'application/json', etag: state.etag })
        .end(JSON.stringify({ verbs: state.verbs, total: state.verbs.length }));
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        ok: false,
        verb: '',
        error: { reason: 'not_found', message: `No route ${req.method} ${req.url}.` },
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  return { state, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const pingRecord = (name: string) => ({
  name,
  description: 'Ping.',
  shape: 'aggregate',
  side_effects: 'read',
  input_schema: { type: 'object', properties: {} },
  surfaces: ['mcp_stdio'],
  requires_consent: false,
  tier_floor: 'starter',
});

test('the manifest cache: 304 costs nothing; an invalid manifest is rejected with its reason and the last good one kept', async (t) => {
  const fake = await fakeManifestServer(t);
  fake.state.verbs = [pingRecord('fake.ping')];
  const logs: string[] = [];
  const client = new ApiClient({ baseUrl: fake.url, surface: 'mcp_stdio', retries: 0 });
  t.after(() => client.close());
  const manifest = new RemoteManifest(client, silentLogger(logs));
  let notified = 0;
  manifest.registry.onChange(() => notified++);
  assert.equal(await manifest.refresh(), 'changed');
  assert.deepEqual(
    manifest.registry.all().map((v) => v.name),
    ['fake.ping'],
  );
  assert.equal(await manifest.refresh(), 'unchanged');
  const manifestCalls = fake.state.requests.filter((r) => r.url.startsWith('/api/v1/agent/verbs?'));
  assert.equal(manifestCalls.at(-1)!.inm, '"v1"', 'revalidated with If-None-Match');

  fake.state.verbs = [pingRecord('fake.ping'), { ...pingRecord('fake.broken'), input_schema: undefined }];
  fake.state.etag = '"v2"';
  assert.equal(await manifest.refresh(), 'rejected');
  assert.deepEqual(
    manifest.registry.all().map((v) => v.name),
    ['fake.ping'],
    'the last good manifest stays',
  );
  assert.match(manifest.lastFailure!, /entry 1 \(fake\.broken\) is not a valid VerbRecord/);
  assert.ok(
    logs.some((l) => /rejected/.test(l) && /fake\.broken/.test(l)),
    'the reason is logged',
  );

  fake.state.verbs = [pingRecord('fake.ping'), pingRecord('fake_ping')].map((r, i) =>
    i === 1 ? { ...r, name: 'fake__ping' } : r,
  );
  fake.state.etag = '"v3"';
  assert.equal(await manifest.refresh(), 'rejected');
  assert.match(manifest.lastFailure!, /same tool name/);

  fake.state.verbs = [pingRecord('fake.ping'), pingRecord('fake.pong')];
  fake.state.etag = '"v4"';
  assert.equal(await manifest.refresh(), 'changed');
  assert.equal(notified, 2);
  assert.equal(manifest.lastFailure, undefined);
});

test('startup needs a good manifest: an invalid one, or an unreachable server, is a clear error and exit 8', async (t) => {
  const fake = await fakeManifestServer(t);
  fake.state.verbs = [{ name: 'no description', shape: 'aggregate' }];
  const client = new ApiClient({ baseUrl: fake.url, surface: 'mcp_stdio', retries: 0 });
  t.after(() => client.close());
  await assert.rejects(
    serveMcpBridge({ client, logger: silentLogger() }),
    (err: { reason: string; message: string }) =>
      err.reason === 'upstream_unavailable' && /not a valid VerbRecord/.test(err.message),
  );
  const cli = await runCliCaptured(['--url', fake.url, 'mcp'], {
    env: { SOLID_API_KEY: undefined, SOLID_LOG_LEVEL: 'silent' },
  });
  assert.equal(cli.code, 8);
  assert.match(cli.stderr, /solid mcp cannot start: .*manifest was rejected/);
});

test('solid mcp --url with a refused key exits 3 before serving', { timeout: 120_000 }, async (t) => {
  const f: RemoteFixture = await remoteFixture(t);
  const r = await f.cli('remote', ['mcp'], {
    env: { SOLID_API_KEY: 'sk_solid_000000000000_notarealkeynotarealkey', SOLID_LOG_LEVEL: 'silent' },
  });
  assert.equal(r.code, 3);
  assert.match(r.stderr, /auth_invalid/);
});
