/**
 * docs/mcp.md's `mcpServers` snippets, tested as written: every JSON block is parsed, its
 * placeholders (database path, key, checkout path, port) substituted, and exactly that command
 * started (or that URL connected) with the SDK Client, which lists the tools and calls a write
 * verb to prove the key was used.
 *
 * `npx -y solid-verbs mcp` runs in a project where the package is installed (a symlink to this
 * checkout, as `npm install` would lay it out) with npm offline, so npx resolves the local
 * package and never fetches anything.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cliHarness } from '../../support/cli.ts';
import { openLocal } from '../../../src/transports/cli/local.ts';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import { mcpHttpPlugin } from '../../../src/transports/mcp/http-plugin.ts';
import { mcpServerSnippets, type ServerEntry } from '../../support/mcp.ts';
import { errorEnvelopeOf } from '../../../src/transports/mcp/envelope-map.ts';

const REPO = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/$/, '');
const DOC = readFileSync(join(REPO, 'docs', 'mcp.md'), 'utf8');

/** The snippets that run `solid mcp` or name a URL; the mcp-remote one (§10) runs in peers.test.ts. */
const snippets = (): ServerEntry[] => mcpServerSnippets(DOC).filter((s) => !s.args?.includes('mcp-remote'));

function substitute(s: string, values: { db: string; key: string; port?: number }): string {
  return s
    .replaceAll('/absolute/path/to/solid-verbs', REPO)
    .replaceAll('/absolute/path/to/.solid/solid.db', values.db)
    .replaceAll('sk_solid_…', values.key)
    .replaceAll('http://127.0.0.1:4400', `http://127.0.0.1:${values.port ?? 4400}`);
}

/** A project with solid-verbs installed (as npm lays it out), for `npx solid-verbs`. */
function projectWithPackage(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'solid-npx-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name: 'uses-solid-verbs',
      private: true,
      dependencies: { 'solid-verbs': `file:${REPO}` },
    }),
  );
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(REPO, join(dir, 'node_modules', 'solid-verbs'), 'dir');
  const bin = (
    JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { bin: Record<string, string> }
  ).bin;
  for (const [name, path] of Object.entries(bin))
    symlinkSync(join('..', 'solid-verbs', path), join(dir, 'node_modules', '.bin', name));
  return dir;
}

async function listAndWrite(t: TestContext, transport: Transport): Promise<void> {
  const client = new Client({ name: 'docs-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close().catch(() => {}));
  const names = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(names.includes('verbs__list') && names.includes('audit__trail'), names.join(', '));
  const started = (await client.callTool({ name: 'transaction__start', arguments: {} })) as CallToolResult;
  const reason = errorEnvelopeOf(started)?.error?.reason;
  assert.ok(
    reason !== 'auth_required' && reason !== 'auth_invalid',
    `the snippet's key is used: ${JSON.stringify(started)}`,
  );
}

test('docs/mcp.md has the Claude Desktop / Cursor snippets: npx, a checkout, and a URL', () => {
  const all = snippets();
  assert.ok(all.some((s) => s.command === 'npx' && s.args?.join(' ') === '-y solid-verbs mcp'));
  assert.ok(all.some((s) => s.command === 'node' && s.args?.[1] === 'mcp'));
  assert.ok(all.some((s) => s.url?.endsWith('/mcp')));
  for (const s of all.filter((x) => x.command))
    assert.deepEqual(Object.keys(s.env ?? {}).sort(), ['SOLID_API_KEY', 'SOLID_DB']);
});

test('every stdio snippet of docs/mcp.md starts and serves the tools as written', async (t) => {
  const cli = cliHarness(t);
  const init = await cli.run(['init', '--json']);
  assert.equal(init.code, 0, init.stderr);
  const values = { db: cli.db, key: init.json<{ owner_api_key: string }>().owner_api_key };
  const project = projectWithPackage(t);
  for (const s of snippets().filter((x) => x.command !== undefined)) {
    await t.test(`${s.command} ${s.args!.join(' ')}`, async (st) => {
      const env = Object.fromEntries(Object.entries(s.env ?? {}).map(([k, v]) => [k, substitute(v, values)]));
      const transport = new StdioClientTransport({
        command: s.command!,
        args: s.args!.map((a) => substitute(a, values)),
        env: {
          ...getDefaultEnvironment(),
          ...env,
          npm_config_offline: 'true',
          npm_config_update_notifier: 'false',
        },
        cwd: project,
        stderr: 'pipe',
      });
      await listAndWrite(st, transport);
    });
  }
});

test('the URL snippet of docs/mcp.md reaches /mcp on solid serve', async (t) => {
  const cli = cliHarness(t);
  const init = await cli.run(['init', '--json']);
  const key = init.json<{ owner_api_key: string }>().owner_api_key;
  const local = await openLocal({ db: cli.db });
  const app = createHttpServer(local.rt, { logger: false, plugins: [mcpHttpPlugin] });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => {
    await app.close();
    await local.close();
  });
  const port = (app.server.address() as AddressInfo).port;
  const entry = snippets().find((x) => x.url !== undefined)!;
  const headers = Object.fromEntries(
    Object.entries(entry.headers ?? {}).map(([k, v]) => [k, substitute(v, { db: cli.db, key, port })]),
  );
  await listAndWrite(
    t,
    new StreamableHTTPClientTransport(new URL(substitute(entry.url!, { db: cli.db, key, port })), {
      requestInit: { headers },
    }),
  );
});
