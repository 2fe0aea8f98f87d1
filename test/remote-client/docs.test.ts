/**
 * docs/remote.md tested as written: every `mcpServers` JSON block is parsed, its placeholders (the
 * server URL, the key, the checkout path) substituted, and exactly that command started against a
 * running `solid serve` (or that URL connected) with the SDK Client, which lists the tools and
 * calls one with the key; the shortcut commands of §5 run; and spec/transports.md has the section
 * ids the remote-mode code cites.
 */
import { randomUUID } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { remoteFixture } from './support.ts';
import { mcpServerSnippets, type ServerEntry } from '../support/mcp.ts';
import { errorEnvelopeOf } from '../../src/transports/mcp/envelope-map.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
const DOC = readFileSync(join(REPO, 'docs', 'remote.md'), 'utf8');
const SPEC = readFileSync(join(REPO, 'spec', 'transports.md'), 'utf8');

const snippets = (): ServerEntry[] => mcpServerSnippets(DOC);

function substitute(s: string, values: { url: string; key: string }): string {
  return s
    .replaceAll('/absolute/path/to/solid-verbs', REPO)
    .replaceAll('https://solid.example.com', values.url)
    .replaceAll('sk_solid_…', values.key);
}

/** A project with solid-verbs installed (as npm lays it out), for `npx solid-verbs` offline. */
function projectWithPackage(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'solid-npx-remote-'));
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

async function listAndCall(t: TestContext, transport: Transport, customerId: number): Promise<void> {
  const client = new Client({ name: 'remote-docs-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close().catch(() => {}));
  const names = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(names.includes('customer__full_context') && names.includes('deals_create'), names.join(', '));
  const r = (await client.callTool({
    name: 'customer__full_context',
    arguments: { customer_id: customerId },
  })) as CallToolResult;
  assert.equal(r.isError, undefined, JSON.stringify(r).slice(0, 400));
  const write = (await client.callTool({
    name: 'deals_create',
    // A fresh title per snippet: an identical call by the same key would be a plain retry and
    // complete the earlier pending one (spec/consent.md §plain-retry).
    arguments: { contact_id: customerId, title: `docs ${randomUUID().slice(0, 8)}`, amount_cents: 1 },
  })) as CallToolResult;
  assert.equal(
    errorEnvelopeOf(write)?.error?.reason,
    'dispatch_pending',
    "the snippet's key is used (keyless would be auth_required)",
  );
}

test('docs/remote.md has the remote snippets: npx and a checkout with SOLID_API_URL + SOLID_API_KEY, and the /mcp URL', () => {
  const all = snippets();
  assert.ok(all.some((s) => s.command === 'npx' && s.args?.join(' ') === '-y solid-verbs mcp'));
  assert.ok(all.some((s) => s.command === 'node' && s.args?.[1] === 'mcp'));
  assert.ok(all.some((s) => s.url?.endsWith('/mcp')));
  for (const s of all.filter((x) => x.command))
    assert.deepEqual(Object.keys(s.env ?? {}).sort(), ['SOLID_API_KEY', 'SOLID_API_URL']);
});

test(
  'every snippet of docs/remote.md serves the tools of a running solid serve as written',
  { timeout: 240_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const values = { url: f.baseUrl, key: f.keys.owner };
    const project = projectWithPackage(t);
    for (const s of snippets()) {
      await t.test(s.command !== undefined ? `${s.command} ${s.args!.join(' ')}` : s.url!, async (st) => {
        if (s.url !== undefined) {
          const headers = Object.fromEntries(
            Object.entries(s.headers ?? {}).map(([k, v]) => [k, substitute(v, values)]),
          );
          await listAndCall(
            st,
            new StreamableHTTPClientTransport(new URL(substitute(s.url, values)), {
              requestInit: { headers },
            }),
            f.facts.fixtures!.customer_id,
          );
          return;
        }
        const env = Object.fromEntries(
          Object.entries(s.env ?? {}).map(([k, v]) => [k, substitute(v, values)]),
        );
        const transport = new StdioClientTransport({
          command: s.command!,
          args: s.args!.map((a) => substitute(a, values)),
          env: {
            ...getDefaultEnvironment(),
            ...env,
            XDG_CONFIG_HOME: f.configHome,
            npm_config_offline: 'true',
            npm_config_update_notifier: 'false',
          },
          cwd: project,
          stderr: 'pipe',
        });
        await listAndCall(st, transport, f.facts.fixtures!.customer_id);
      });
    }

    await t.test('the shortcut commands of §5 run against the server', async () => {
      const block = /## 5\. Shortcuts[\s\S]*?```sh\n([\s\S]*?)```/.exec(DOC)![1]!;
      const lines = block
        .split('\n')
        .map((l) => l.replace(/\s+#.*$/, '').trim())
        .filter((l) => l.startsWith('solid '));
      assert.equal(lines.length, 4);
      for (const line of lines) {
        const words = [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(1);
        const r = await f.cli('remote', words, { env: { SOLID_API_KEY: f.keys.owner } });
        assert.equal(r.code, 0, `${line}: ${r.stderr}`);
      }
    });
  },
);

test('spec/transports.md has the remote-mode sections the code cites', () => {
  for (const id of [
    '§cli',
    '§cli-output',
    '§cli-shortcuts',
    '§remote',
    '§remote-client',
    '§remote-errors',
    '§remote-hints',
    '§remote-mcp',
    '§remote-login',
  ]) {
    assert.match(SPEC, new RegExp(`^#{2,4} ${id}$`, 'm'), id);
  }
});
