/**
 * Agent frameworks complete the consent loop with no host code (issue 33 item 2): each peer's
 * own client library — OpenAI Agents JS (`@openai/agents`), the Vercel AI SDK (`@ai-sdk/mcp`),
 * LangChain (`@langchain/mcp-adapters`) — against `/mcp` on a real socket, driven by a scripted
 * "model" (no LLM: the library's own tool-invocation API, with only the arguments a model can
 * give; none of them can send request `_meta`). Each completes a read, a WRITE_REVERSIBLE write
 * (the user agrees in the conversation, the model calls again), a WRITE_FINANCIAL write (a
 * signed-in human approves on the approval page, the model calls again) and a revert; a retry
 * with other arguments, or after the approval was used, runs nothing.
 * spec/consent.md §plain-retry, docs/mcp.md §agent-frameworks.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Agent, MCPServerStreamableHttp, RunContext, getAllMcpTools } from '@openai/agents';
import { createMCPClient } from '@ai-sdk/mcp';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import {
  humanApproves,
  loop,
  pending,
  receipt,
  seen,
  serve,
  textsOf,
  type CallTool,
  type Served,
} from './peer-loop.ts';
import { dispatchAs } from '../../support/keyed.ts';

/** OpenAI Agents JS: MCPServerStreamableHttp, tools as the Agent's FunctionTools, invoked as the runner does. */
async function openAiAgents(t: TestContext, s: Served, key: string): Promise<CallTool> {
  const server = new MCPServerStreamableHttp({
    name: 'solid-verbs',
    url: s.url,
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await server.connect();
  t.after(() => server.close());
  const agent = new Agent({ name: 'scripted', mcpServers: [server] });
  const runContext = new RunContext({});
  const tools = await getAllMcpTools({ mcpServers: [server], runContext, agent });
  return async (name, args) => {
    const tool = tools.find((x) => x.name === name);
    assert.ok(tool !== undefined && tool.type === 'function', `${name} is listed`);
    return seen(textsOf(await tool.invoke(runContext, JSON.stringify(args))));
  };
}

/** Vercel AI SDK: createMCPClient over HTTP, each tool's execute() as generateText calls it. */
async function vercelAiSdk(t: TestContext, s: Served, key: string): Promise<CallTool> {
  const client = await createMCPClient({
    transport: { type: 'http', url: s.url, headers: { Authorization: `Bearer ${key}` } },
  });
  t.after(() => client.close());
  const tools = await client.tools();
  let n = 0;
  return async (name, args) => {
    const tool = tools[name];
    assert.ok(tool?.execute !== undefined, `${name} is listed`);
    const out = await tool.execute(args, { toolCallId: `call_${++n}`, messages: [] });
    return seen(textsOf(out));
  };
}

/** LangChain: MultiServerMCPClient over HTTP; a tool error is a ToolException whose message the model reads. */
async function langChain(t: TestContext, s: Served, key: string): Promise<CallTool> {
  const client = new MultiServerMCPClient({
    mcpServers: {
      solid: { transport: 'http', url: s.url, headers: { Authorization: `Bearer ${key}` } },
    },
  });
  t.after(() => client.close());
  const tools = await client.getTools();
  return async (name, args) => {
    const tool = tools.find((x) => x.name === name || x.name.endsWith(`__${name}`));
    assert.ok(tool !== undefined, `${name} is listed`);
    try {
      return seen(textsOf(await tool.invoke(args)));
    } catch (err) {
      // What LangGraph's ToolNode hands the model as the tool message.
      return seen([(err as Error).message]);
    }
  };
}

test('OpenAI Agents JS (MCPServerStreamableHttp) completes read, confirm, typed phrase via approval, revert', (t) =>
  loop(t, openAiAgents));

test('Vercel AI SDK (@ai-sdk/mcp createMCPClient) completes read, confirm, typed phrase via approval, revert', (t) =>
  loop(t, vercelAiSdk));

test('LangChain (@langchain/mcp-adapters MultiServerMCPClient) completes read, confirm, typed phrase via approval, revert', (t) =>
  loop(t, langChain));

test("another key's identical retry does not use an approval; an agent key cannot approve", async (t) => {
  const s = await serve(t);
  const { h } = s;
  const secondKey = await h.rt.createApiKey({
    company_id: h.companyId,
    user_id: 1,
    role: 'owner',
    agent_type: 'other-agent',
  });
  const call = await vercelAiSdk(t, s, h.keys.owner);
  const other = await vercelAiSdk(t, s, secondKey);
  const charge = { invoice_id: 7, amount_cents: 100 };
  const asked = pending(await call('test__charge', charge));
  // The agent's own key cannot approve, over any route it holds.
  const byAgent = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.owner }, 'approvals.approve', {
    approval_id: String(asked.approval_id),
    typed_phrase: 'CHARGE $1.00 to invoice #7',
  });
  assert.equal(byAgent.error?.reason, 'human_required', JSON.stringify(byAgent));
  await humanApproves(h, String(asked.approval_id));
  assert.notEqual(pending(await other('test__charge', charge)).approval_id, asked.approval_id);
  assert.equal(h.runs.charge, 0);
  receipt(await call('test__charge', charge));
  assert.equal(h.runs.charge, 1);
});

test('docs/mcp.md shows each framework with the connection this test opens', () => {
  const doc = readFileSync(new URL('../../../docs/mcp.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## 9. Agent frameworks'));
  const blocks = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const expected: Array<[string, RegExp]> = [
    [
      '@openai/agents',
      /new MCPServerStreamableHttp\(\{[\s\S]*requestInit: \{ headers: \{ Authorization: 'Bearer sk_solid_…' \} \}/,
    ],
    [
      '@ai-sdk/mcp',
      /createMCPClient\(\{\s*transport: \{\s*type: 'http',[\s\S]*headers: \{ Authorization: 'Bearer sk_solid_…' \}/,
    ],
    [
      '@langchain/mcp-adapters',
      /new MultiServerMCPClient\(\{[\s\S]*transport: 'http',[\s\S]*headers: \{ Authorization: 'Bearer sk_solid_…' \}/,
    ],
  ];
  for (const [pkg, shape] of expected) {
    const block = blocks.find((b) => b.includes(`from '${pkg}'`));
    assert.ok(block !== undefined, `a snippet imports ${pkg}`);
    assert.match(block, shape);
    assert.ok(block.includes("url: 'http://127.0.0.1:4400/mcp'"), `${pkg}: the /mcp URL`);
  }
});
