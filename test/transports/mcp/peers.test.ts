/**
 * The stdio peers of issue 33 item 2 complete the consent loop with no host code:
 * - `mcp-remote`, the stdio proxy a host that only speaks stdio runs for a remote server, with the
 *   API key as a header (`--header "Authorization: Bearer …"`), driven over its stdio by the MCP
 *   SDK client as the host's scripted "model";
 * - the MCP Inspector CLI (`--cli --method tools/call --tool-name … --tool-arg k=v`), one process
 *   per call, against `/mcp` with the key header; it needs Node >= 22.19 (skips without it);
 * - OpenAI Agents JS `MCPServerStdio` against `solid mcp` (SOLID_API_KEY) on a demo database.
 * Each runs a read, a WRITE_REVERSIBLE write by plain retry (same tool, same arguments, no
 * `_meta`), a WRITE_FINANCIAL write completed after a signed-in human approves, and a revert.
 * spec/consent.md §plain-retry, docs/mcp.md §9 (MCPServerStdio) and §10 (mcp-remote, Inspector CLI).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { MCPServerStdio, Agent, RunContext, getAllMcpTools } from '@openai/agents';
import { demoPack, type DemoSeedFacts } from '../../../src/business/pack.ts';
import { DEMO_FIXTURES } from '../../../src/business/seed.ts';
import { openLocal } from '../../../src/transports/cli/local.ts';
import { operatorAtTerminal } from '../../../src/identity/principal.ts';
import { cliHarness } from '../../support/cli.ts';
import { loop, pending, receipt, seen, textsOf, type CallTool, type Served } from './peer-loop.ts';
import { node22, NODE22_MISSING } from '../../support/node-lines.ts';

const BIN = fileURLToPath(new URL('../../../bin/solid.js', import.meta.url));

const require = createRequire(import.meta.url);
const MCP_REMOTE = require.resolve('mcp-remote/dist/proxy.js');

/** End a process this test spawned, by its PID, if it is still running. */
function killIfAlive(pid: number): void {
  try {
    process.kill(pid);
  } catch {
    // already gone
  }
}

const DOC = readFileSync(new URL('../../../docs/mcp.md', import.meta.url), 'utf8');
const STDIO_SECTION = DOC.slice(DOC.indexOf('## 10. Hosts that speak only stdio'));

/** The host configuration docs/mcp.md §10 shows for mcp-remote: its command, arguments and env. */
function documentedMcpRemote(): { command: string; args: string[]; env: Record<string, string> } {
  const block = /```json\n([\s\S]*?)```/.exec(STDIO_SECTION);
  assert.ok(block !== null, 'docs/mcp.md §10 shows a JSON configuration');
  const config = JSON.parse(block[1]!) as {
    mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>;
  };
  return config.mcpServers['solid-verbs']!;
}

/**
 * mcp-remote as a stdio MCP server the SDK client spawns (the host's side), the key as a header:
 * `args` after `npx -y mcp-remote`, with the documented URL and key replaced by the test's.
 */
function mcpRemote(form: 'config' | 'command line') {
  return async (t: TestContext, s: Served, key: string): Promise<CallTool> => {
    const config = mkdtempSync(join(tmpdir(), 'solid-mcp-remote-'));
    t.after(() => rmSync(config, { recursive: true, force: true }));
    const doc = documentedMcpRemote();
    assert.equal(doc.command, 'npx');
    assert.deepEqual(doc.args.slice(0, 2), ['-y', 'mcp-remote']);
    const real = (x: string) => x.replace('http://127.0.0.1:4400/mcp', s.url).replace('sk_solid_…', key);
    const args =
      form === 'config' ? doc.args.slice(2).map(real) : [s.url, '--header', `Authorization: Bearer ${key}`];
    const env =
      form === 'config' ? Object.fromEntries(Object.entries(doc.env).map(([k, v]) => [k, real(v)])) : {};
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MCP_REMOTE, ...args],
      env: { ...getDefaultEnvironment(), ...env, MCP_REMOTE_CONFIG_DIR: config, BROWSER: 'false' },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const client = new Client({ name: 'scripted-host', version: '1.0.0' });
    await client.connect(transport);
    const pid = transport.pid;
    t.after(async () => {
      await client.close();
      if (pid !== null) killIfAlive(pid);
    });
    const listed = (await client.listTools()).tools.map((x) => x.name);
    assert.ok(listed.includes('test__charge'), `mcp-remote lists the tools (stderr: ${stderr.slice(-500)})`);
    // The key went as the header: no OAuth dance was started.
    assert.doesNotMatch(stderr, /Please authorize this client/);
    return async (name, args) => seen(textsOf(await client.callTool({ name, arguments: args })));
  };
}

test('mcp-remote (stdio proxy, the documented host config with the key header) completes read, confirm, financial via approval, revert', (t) =>
  loop(t, mcpRemote('config')));

test('mcp-remote (the documented command line, --header "Authorization: Bearer …") completes the loop', (t) =>
  loop(t, mcpRemote('command line')));

const run = promisify(execFile);

/** The Inspector's launcher (its `mcp-inspector` bin), when the devDependency is installed. */
function inspectorBin(): { entry: string; version: string } | undefined {
  try {
    const pkgPath = require.resolve('@modelcontextprotocol/inspector/package.json');
    const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { version: string; bin: Record<string, string> };
    return { entry: join(dirname(pkgPath), pkg.bin['mcp-inspector']!), version: pkg.version };
  } catch {
    return undefined;
  }
}

/**
 * The Inspector CLI as a scripted model's tool runner, one process per call: `mcp-inspector --cli
 * TARGET… --method tools/call --tool-name NAME --tool-arg k=v…` (a tool error exits non-zero
 * and still prints the result). TARGET is the URL with the key header, or `-e`… and a command.
 */
async function inspectorCalls(
  t: TestContext,
  node: string,
  entry: string,
  target: string[],
): Promise<CallTool> {
  const home = mkdtempSync(join(tmpdir(), 'solid-inspector-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const cli = async (args: string[]): Promise<string> => {
    try {
      const { stdout } = await run(node, [entry, '--cli', ...target, ...args], {
        timeout: 60_000,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, HOME: home, MCP_CATALOG_PATH: join(home, 'mcp.json') },
      });
      return stdout;
    } catch (err) {
      const e = err as { code?: unknown; stdout?: string; stderr?: string };
      if (e.stdout !== undefined && e.stdout.includes('"content"')) return e.stdout;
      throw new Error(`inspector ${args.join(' ')} exited ${String(e.code)}: ${e.stderr ?? ''}`, {
        cause: err,
      });
    }
  };
  const listed = JSON.parse(await cli(['--method', 'tools/list'])) as { tools: Array<{ name: string }> };
  assert.ok(listed.tools.length > 0, 'the Inspector lists the tools');
  return async (name, args) => {
    assert.ok(
      listed.tools.some((x) => x.name === name),
      `${name} is listed`,
    );
    const pairs = Object.entries(args).map(
      ([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`,
    );
    const out = await cli([
      '--method',
      'tools/call',
      '--tool-name',
      name,
      ...(pairs.length ? ['--tool-arg', ...pairs] : []),
    ]);
    return seen(textsOf(JSON.parse(out)));
  };
}

/** Node 22 and the Inspector, or undefined once the test is marked skipped with the reason. */
function inspectorOrSkip(t: TestContext): { node: string; entry: string } | undefined {
  const node = node22();
  if (node === undefined) {
    t.skip(NODE22_MISSING);
    return undefined;
  }
  const inspector = inspectorBin();
  if (inspector === undefined) {
    t.skip('@modelcontextprotocol/inspector is not installed (npm ci installs the devDependency)');
    return undefined;
  }
  return { node, entry: inspector.entry };
}

test(
  'MCP Inspector CLI over /mcp (one process per call, key header) completes read, confirm, financial via approval, revert',
  { timeout: 600_000 },
  async (t) => {
    const found = inspectorOrSkip(t);
    if (found === undefined) return;
    await loop(t, (tt, s, key) =>
      inspectorCalls(tt, found.node, found.entry, [
        s.url,
        '--transport',
        'http',
        '--header',
        `Authorization: Bearer ${key}`,
      ]),
    );
  },
);

/** The operator at the database's terminal approves, typing the phrase the approval shows them. */
async function operatorApproves(db: string, key: string, approvalId: string): Promise<void> {
  const operator = await openLocal({ db });
  try {
    const principal = operatorAtTerminal(await operator.rt.tenants.authenticate(key));
    const listed = await operator.rt.dispatch({ surface: 'cli', principal }, 'approvals.list', {
      approval_id: approvalId,
    });
    assert.equal(listed.ok, true, JSON.stringify(listed.error));
    const item = (listed.result!.approvals as Array<{ typed_phrase: string | null }>)[0]!;
    const approved = await operator.rt.dispatch({ surface: 'cli', principal }, 'approvals.approve', {
      approval_id: approvalId,
      ...(item.typed_phrase !== null ? { typed_phrase: item.typed_phrase } : {}),
    });
    assert.equal(approved.ok, true, JSON.stringify(approved.error));
  } finally {
    await operator.close();
  }
}

/** A client of `solid mcp` on a demo database (its path) with the owner's key. */
type StdioConnect = (t: TestContext, db: string, key: string) => Promise<CallTool>;

/** The loop on the demo pack over `solid mcp`: crm.add_note, charge_invoice, audit.revert. */
async function demoLoop(t: TestContext, connect: StdioConnect): Promise<void> {
  const cli = cliHarness(t);
  const local = await openLocal({ db: cli.db, create: true, packs: ['demo'] });
  const facts = (await demoPack.seed!(local.rt, {})) as DemoSeedFacts;
  await local.close();
  const key = facts.owner_api_key!;
  const call = await connect(t, cli.db, key);
  /** The audit rows of one verb that ran (what the agent's calls did to the books). */
  const audits = async (action: string): Promise<number> => {
    const db = await openLocal({ db: cli.db });
    try {
      const rows = await db.rt.store.read((q) =>
        q.all<{ action_type: string; status: string }>('SELECT action_type, status FROM audit_log'),
      );
      return rows.filter((r) => r.action_type === action && r.status === 'completed').length;
    } finally {
      await db.close();
    }
  };

  // A read.
  const read = receipt(await call('crm__explain_contact_state', { contact_id: DEMO_FIXTURES.customer_id }));
  assert.ok(
    JSON.stringify(read).includes(String(DEMO_FIXTURES.customer_id)),
    JSON.stringify(read).slice(0, 300),
  );

  // WRITE_REVERSIBLE: pending, then the plain retry (same tool, same arguments, no _meta) runs it.
  const note = { contact_id: DEMO_FIXTURES.customer_id, body: 'Asked for a second quote.' };
  const ask = pending(await call('crm__add_note', note));
  assert.deepEqual(ask.retry, { after: 'user_confirms', same_arguments: true });
  const added = receipt(await call('crm__add_note', note));
  assert.equal(typeof added.audit_id, 'number', JSON.stringify(added));

  // WRITE_FINANCIAL: waits for the human; the operator approves; the same call then charges once.
  const charge = { invoice_number: DEMO_FIXTURES.open_invoice.number, amount_cents: 5000 };
  const asked = pending(await call('charge_invoice', charge));
  assert.deepEqual(asked.retry, { after: 'human_approves', same_arguments: true });
  assert.equal(pending(await call('charge_invoice', charge)).approval_id, asked.approval_id);
  assert.equal(await audits('charge_invoice'), 0);
  await operatorApproves(cli.db, key, String(asked.approval_id));
  // Other arguments are not what the operator approved.
  const changed = pending(await call('charge_invoice', { ...charge, amount_cents: 4000 }));
  assert.notEqual(changed.approval_id, asked.approval_id);
  assert.equal(await audits('charge_invoice'), 0);
  const charged = receipt(await call('charge_invoice', charge));
  assert.equal(typeof charged.audit_id, 'number', JSON.stringify(charged));
  assert.equal(await audits('charge_invoice'), 1, JSON.stringify(charged));
  assert.notEqual(pending(await call('charge_invoice', charge)).approval_id, asked.approval_id);
  assert.equal(await audits('charge_invoice'), 1, JSON.stringify(charged));

  // A revert of the note, confirmed the same way.
  const revert = { audit_id: added.audit_id };
  pending(await call('audit__revert', revert));
  const reverted = receipt(await call('audit__revert', revert));
  assert.equal(reverted.reverted, true, JSON.stringify(reverted));
  assert.equal(reverted.original_action, 'crm.add_note');
}

/** OpenAI Agents JS: MCPServerStdio spawning `solid mcp`, its tools invoked as the runner does. */
async function mcpServerStdio(t: TestContext, db: string, key: string): Promise<CallTool> {
  const server = new MCPServerStdio({
    name: 'solid-verbs',
    // docs/mcp.md §9: `npx -y solid-verbs mcp`, here this checkout's bin.
    command: process.execPath,
    args: [BIN, 'mcp'],
    env: {
      ...getDefaultEnvironment(),
      SOLID_DB: db,
      SOLID_API_KEY: key,
      SOLID_DASHBOARD_URL: 'http://127.0.0.1:4400/',
    },
  });
  await server.connect();
  // The child's PID, from the library's own stdio transport, so that it ends with the test.
  const pid = (server as unknown as { underlying: { transport: { pid: number | null } | null } }).underlying
    .transport?.pid;
  t.after(async () => {
    await server.close();
    if (typeof pid === 'number') killIfAlive(pid);
  });
  const agent = new Agent({ name: 'scripted', mcpServers: [server] });
  const runContext = new RunContext({});
  const tools = await getAllMcpTools({ mcpServers: [server], runContext, agent });
  return async (name, args) => {
    const tool = tools.find((x) => x.name === name);
    assert.ok(tool !== undefined && tool.type === 'function', `${name} is listed`);
    return seen(textsOf(await tool.invoke(runContext, JSON.stringify(args))));
  };
}

test('OpenAI Agents JS (MCPServerStdio) against solid mcp completes read, confirm, financial via approval, revert', (t) =>
  demoLoop(t, mcpServerStdio));

test(
  'MCP Inspector CLI over stdio (solid mcp, SOLID_API_KEY) completes read, confirm, financial via approval, revert',
  { timeout: 600_000 },
  async (t) => {
    const found = inspectorOrSkip(t);
    if (found === undefined) return;
    await demoLoop(t, (tt, db, key) =>
      inspectorCalls(tt, found.node, found.entry, [
        '-e',
        `SOLID_DB=${db}`,
        '-e',
        `SOLID_API_KEY=${key}`,
        process.execPath,
        BIN,
        'mcp',
      ]),
    );
  },
);

test('docs/mcp.md shows the stdio peers with what this test runs', () => {
  // §9: MCPServerStdio running `solid mcp` with the database and key in its env.
  const stdio = [...DOC.matchAll(/```ts\n([\s\S]*?)```/g)]
    .map((m) => m[1]!)
    .find((b) => b.includes('MCPServerStdio'));
  assert.ok(stdio !== undefined, 'a snippet shows MCPServerStdio');
  assert.match(stdio, /args: \['-y', 'solid-verbs', 'mcp'\]/);
  assert.match(stdio, /env: \{ SOLID_DB: '[^']+', SOLID_API_KEY: 'sk_solid_…' \}/);
  // §10: the mcp-remote command line and host config (the config is parsed and run above).
  assert.ok(
    STDIO_SECTION.includes(
      'npx mcp-remote http://127.0.0.1:4400/mcp --header "Authorization: Bearer sk_solid_…"',
    ),
  );
  const doc = documentedMcpRemote();
  assert.ok(
    doc.args.includes('http://127.0.0.1:4400/mcp') && doc.args.includes('--header'),
    doc.args.join(' '),
  );
  // §10: the Inspector CLI with the arguments inspectorCli() passes.
  const sh = [...STDIO_SECTION.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.replace(/\\\n\s*/g, ''));
  const inspector = sh.filter((b) => b.includes('@modelcontextprotocol/inspector')).join('\n');
  assert.ok(
    inspector.includes(
      'npx @modelcontextprotocol/inspector --cli http://127.0.0.1:4400/mcp --transport http --header "Authorization: Bearer sk_solid_…" --method tools/list',
    ),
    inspector,
  );
  assert.match(inspector, /--method tools\/call --tool-name \w+ --tool-arg \w+=\S+ \w+=\S+/);
});
