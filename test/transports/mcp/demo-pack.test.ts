/**
 * Every verb of the demo business pack through MCP, with the SDK Client as the agent and a
 * "human" answering its forms: listed exactly when projected onto mcp_stdio, and each called with
 * the pack's own working sample arguments (test/business/verbs/sample-calls.ts) on a seeded demo
 * — in-process and over Streamable HTTP. Reads answer ok (the runtime validates each result:
 * validateOutputs is on); writes go through their gate the MCP way: a confirmation is
 * sent back in `_meta` with the nonce, a typed phrase is typed by the human in the elicitation
 * form; then they answer ok with a receipt. Over a real stdio subprocess, `solid mcp` on a
 * database with the demo pack lists every demo tool and runs the reads.
 * Spec: spec/transports.md §mcp.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { demoPack, type DemoSeedFacts } from '../../../src/business/pack.ts';
import { DEMO_FIXTURES } from '../../../src/business/seed.ts';
import { openLocal } from '../../../src/transports/cli/local.ts';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import { createMcpHttpPlugin } from '../../../src/transports/mcp/http-plugin.ts';
import { META } from '../../../src/transports/mcp/meta-keys.ts';
import { openDemoRuntime, type DemoRuntime } from '../../support/demo.ts';
import { cliHarness } from '../../support/cli.ts';
import { afterSample, SAMPLES, type SampleState } from '../../business/verbs/sample-calls.ts';
import { connectInMemory, phraseShown } from './harness.ts';
import { listAllTools, resultOf } from '../../support/mcp.ts';
import { errorEnvelopeOf } from '../../../src/transports/mcp/envelope-map.ts';
import { operatorAtTerminal } from '../../../src/identity/principal.ts';

const BIN = fileURLToPath(new URL('../../../bin/solid.js', import.meta.url));

/** The agent's side of a call: the first call, and the `_meta` confirmation round trip when pending. */
async function callLikeAnAgent(
  client: Client,
  tool: string,
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  const first = (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
  const env = errorEnvelopeOf(first)!;
  if (!first.isError || env.error?.reason !== 'dispatch_pending' || env.consent?.gate !== 'confirmation')
    return first;
  return (await client.callTool({
    name: tool,
    arguments: args,
    _meta: { [META.confirm]: true, [META.nonce]: env.consent.nonce },
  })) as CallToolResult;
}

/** Call every sampled demo verb through `client`; every one must answer ok. */
async function callEveryVerb(
  d: DemoRuntime,
  client: Client,
): Promise<{ reads: number; writes: number; phrases: number }> {
  const tools = new Map((await listAllTools(client)).map((x) => [x.name, x]));
  for (const v of demoPack.verbs) {
    const compiled = d.rt.registry.get(v.name)!;
    assert.equal(
      tools.has(compiled.toolName),
      compiled.surfaces.includes('mcp_stdio'),
      `${v.name} is listed exactly when projected onto MCP`,
    );
  }
  const state: SampleState = {};
  const counts = { reads: 0, writes: 0, phrases: 0 };
  for (const [name, sample] of Object.entries(SAMPLES)) {
    const verb = d.rt.registry.get(name)!;
    const args = await sample(d, state);
    if (!verb.surfaces.includes('mcp_stdio')) {
      // Not an MCP tool: still run it (later samples may depend on it), the way a human would.
      const env = verb.isWrite ? await d.commit('owner', name, args) : await d.call('owner', name, args);
      if (env.ok) afterSample(name, env.result!, state);
      continue;
    }
    const r = await callLikeAnAgent(client, verb.toolName, structuredClone(args));
    assert.equal(r.isError, undefined, `${name} through MCP: ${JSON.stringify(resultOf(r)).slice(0, 400)}`);
    const result = resultOf(r) as Record<string, unknown>;
    if (verb.isWrite) {
      counts.writes++;
      if (verb.consentClass === 'WRITE_FINANCIAL' || verb.consentClass === 'IRREVERSIBLE') counts.phrases++;
      assert.equal(typeof result.audit_id, 'number', `${name} receipt`);
    } else counts.reads++;
    afterSample(name, result, state);
  }
  return counts;
}

/** The "human" at the client: types exactly the phrase the form shows. */
/**
 * The owner's explicit choice `phrase_channel: any` (spec/consent.md §channels): an MCP form is
 * the client's, so it is offered only where agents may type phrases; these tests cover every demo
 * verb through MCP, not the channel rule (test/identity/requirements.test.ts does).
 */
async function allowAgentPhrases(d: DemoRuntime): Promise<void> {
  const settings = (await d.rt.tenants.get(d.companyId))?.settings ?? {};
  await d.rt.store.write((tx) =>
    tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
      JSON.stringify({ ...settings, phrase_channel: 'any' }),
      d.companyId,
    ]),
  );
  d.rt.tenants.invalidate();
}

function humanTypesThePhrase(client: Client): void {
  client.setRequestHandler(ElicitRequestSchema, async (req) => ({
    action: 'accept',
    content: { typed_phrase: phraseShown(req) },
  }));
}

test('every demo verb through MCP in-process: listed by surface, reads ok, writes through _meta confirmation or the human-typed phrase', async (t) => {
  const d = await openDemoRuntime(t);
  await allowAgentPhrases(d);
  let forms = 0;
  const client = await connectInMemory(t, d, {
    apiKey: d.keys.owner,
    elicit: (req) => {
      forms++;
      return { action: 'accept', content: { typed_phrase: phraseShown(req) } };
    },
  });
  const counts = await callEveryVerb(d, client);
  assert.ok(counts.reads > 0 && counts.writes > 0 && counts.phrases > 0, JSON.stringify(counts));
  assert.ok(
    forms >= counts.phrases,
    `every typed-phrase write asked the human (${forms} forms for ${counts.phrases})`,
  );
  t.diagnostic(
    `in-process: ${counts.reads} reads, ${counts.writes} writes (${counts.phrases} typed phrases by elicitation)`,
  );
});

test('every demo verb through MCP over Streamable HTTP, with elicitation on the session', async (t: TestContext) => {
  const d = await openDemoRuntime(t);
  await allowAgentPhrases(d);
  const app = createHttpServer(d.rt, { logger: false, plugins: [createMcpHttpPlugin()] });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  const client = new Client(
    { name: 'demo-http', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } } },
  );
  humanTypesThePhrase(client);
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`),
      { requestInit: { headers: { Authorization: `Bearer ${d.keys.owner}` } } },
    ),
  );
  t.after(() => client.close());
  const counts = await callEveryVerb(d, client);
  assert.ok(counts.phrases > 0);
  t.diagnostic(
    `over HTTP: ${counts.reads} reads, ${counts.writes} writes (${counts.phrases} typed phrases by elicitation)`,
  );
});

test('solid mcp over a real stdio pipe on a demo database: every demo tool listed, the reads run, a typed phrase approved out of band with the CLI', async (t) => {
  const cli = cliHarness(t);
  const local = await openLocal({ db: cli.db, create: true, packs: ['demo'] });
  const facts = (await demoPack.seed!(local.rt, {})) as DemoSeedFacts;
  const expected = local.rt.registry
    .all()
    .filter((v) => v.surfaces.includes('mcp_stdio'))
    .map((v) => v.toolName)
    .sort();
  await local.close();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', '--db', cli.db],
    env: {
      ...getDefaultEnvironment(),
      SOLID_API_KEY: facts.owner_api_key!,
      SOLID_DASHBOARD_URL: 'http://127.0.0.1:4400/',
    },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'demo-stdio', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  const names = (await listAllTools(client)).map((x) => x.name).sort();
  assert.deepEqual(names, expected);
  // Reads whose sample needs only the seeded fixtures (DEMO_FIXTURES hold on a fresh seed).
  const stub = { fixtures: DEMO_FIXTURES, rt: { clock: () => new Date() } } as unknown as DemoRuntime;
  let reads = 0;
  for (const [name, sample] of Object.entries(SAMPLES)) {
    const v = demoPack.verbs.find((x) => x.name === name)!;
    if (
      (v.consent ?? 'READ') !== 'READ' ||
      v.delegateConsent !== undefined ||
      (v.surfaces && !v.surfaces.includes('mcp_stdio'))
    )
      continue;
    let args: Record<string, unknown>;
    try {
      args = await sample(stub, {});
    } catch {
      continue; // the sample needs an in-process runtime
    }
    if (Object.values(args).some((x) => x === undefined)) continue; // needs state from earlier writes
    const r = (await client.callTool({ name: name.replace(/\./g, '__'), arguments: args })) as CallToolResult;
    assert.equal(r.isError, undefined, `${name}: ${JSON.stringify(resultOf(r)).slice(0, 300)}`);
    reads++;
  }
  assert.ok(reads > 10, `ran ${reads} reads`);

  // A typed-phrase write from a client without elicitation fails closed; the operator approves it
  // at the terminal of the database (another process), and the agent's re-call with the nonce runs.
  const args = { invoice_number: DEMO_FIXTURES.open_invoice.number, amount_cents: 5000 };
  const pending = (await client.callTool({ name: 'charge_invoice', arguments: args })) as CallToolResult;
  const env = errorEnvelopeOf(pending)!;
  assert.equal(env.error?.reason, 'dispatch_pending');
  assert.ok(
    env.error!.hint!.includes(`solid approvals approve ${env.consent!.approval_id}`) &&
      env.error!.hint!.includes(`http://127.0.0.1:4400/approvals/${env.consent!.approval_id}`),
    env.error!.hint,
  );
  assert.equal(env.consent!.typed_phrase, undefined, 'the agent is not shown the phrase');
  // A --phrase flag is a script's, an agent's: it does not approve.
  const scripted = await cli.run(
    ['approvals', 'approve', String(env.consent!.approval_id), '--phrase', 'CHARGE $50.00', '--json'],
    { env: { SOLID_API_KEY: facts.owner_api_key! } },
  );
  assert.notEqual(scripted.code, 0, scripted.stdout);
  const operator = await openLocal({ db: cli.db });
  try {
    const principal = operatorAtTerminal(await operator.rt.tenants.authenticate(facts.owner_api_key!));
    const approved = await operator.rt.dispatch({ surface: 'cli', principal }, 'approvals.approve', {
      approval_id: String(env.consent!.approval_id),
      typed_phrase: `CHARGE $50.00 to invoice #${DEMO_FIXTURES.open_invoice.number}`,
    });
    assert.equal(approved.ok, true, JSON.stringify(approved.error));
  } finally {
    await operator.close();
  }
  const done = (await client.callTool({
    name: 'charge_invoice',
    arguments: args,
    _meta: { [META.confirm]: true, [META.nonce]: env.consent!.nonce },
  })) as CallToolResult;
  assert.equal(done.isError, undefined, JSON.stringify(resultOf(done)));
  assert.equal(typeof (resultOf(done) as { audit_id?: unknown }).audit_id, 'number');
});
