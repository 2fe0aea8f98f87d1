/**
 * The MCP Inspector CLI (a third-party client, pinned) against `solid mcp` over stdio and against
 * `/mcp` over Streamable HTTP: tools/list is the mcp_stdio manifest, tools/call runs a read and
 * a write, an unknown tool fails.
 *
 * Pinned to @modelcontextprotocol/inspector@1.0.3, the last line whose CLI runs on Node 20 (it
 * declares node >= 22.7.5 but works on 20.20 for stdio and plain HTTP; v2 needs >= 22.19 for its
 * proxy path). It runs through `npx -y --prefer-offline` (npm cache, else the npm registry), not
 * as a dependency of this package.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cliHarness } from '../../support/cli.ts';
import { openLocal } from '../../../src/transports/cli/local.ts';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import { mcpHttpPlugin } from '../../../src/transports/mcp/http-plugin.ts';
import { toToolName } from '../../../src/runtime/registry.ts';
import type { VerbRecord } from '../../../src/spec/types.ts';
import { resultOf } from '../../support/mcp.ts';

const run = promisify(execFile);
const INSPECTOR = '@modelcontextprotocol/inspector@1.0.3';
const BIN = fileURLToPath(new URL('../../../bin/solid.js', import.meta.url));

async function inspector(
  args: string[],
): Promise<{ code: number; json: Record<string, unknown>; stderr: string }> {
  try {
    const { stdout, stderr } = await run('npx', ['-y', '--prefer-offline', INSPECTOR, '--cli', ...args], {
      timeout: 180_000,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, npm_config_update_notifier: 'false' },
    });
    return { code: 0, json: JSON.parse(stdout) as Record<string, unknown>, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === 'number' ? e.code : 1,
      json: {},
      stderr: `${e.stderr ?? ''}${e.stdout ?? ''}`,
    };
  }
}

test(
  `MCP Inspector CLI (${INSPECTOR}) lists and calls the tools over stdio and over Streamable HTTP`,
  { timeout: 600_000 },
  async (t) => {
    const cli = cliHarness(t);
    const init = await cli.run(['init', '--json']);
    assert.equal(init.code, 0, init.stderr);
    const key = init.json<{ owner_api_key: string }>().owner_api_key;
    const expected = (
      JSON.parse(
        (await cli.run(['verbs', 'list', '--surface', 'mcp_stdio', '--json'])).stdout,
      ) as VerbRecord[]
    )
      .map((r) => toToolName(r.name))
      .sort();
    const names = (json: Record<string, unknown>) =>
      ((json.tools as Array<{ name: string }>) ?? []).map((x) => x.name).sort();

    // stdio: the Inspector spawns `node bin/solid.js mcp` with the database and key in its env.
    const stdio = ['-e', `SOLID_DB=${cli.db}`, '-e', `SOLID_API_KEY=${key}`, process.execPath, BIN, 'mcp'];
    const listed = await inspector([...stdio, '--method', 'tools/list']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(names(listed.json), expected);
    const called = await inspector([
      ...stdio,
      '--method',
      'tools/call',
      '--tool-name',
      'verbs__list',
      '--tool-arg',
      'surface=mcp_stdio',
    ]);
    assert.equal(called.code, 0, called.stderr);
    assert.equal((resultOf(called.json) as { total: number }).total, expected.length);
    const unknown = await inspector([...stdio, '--method', 'tools/call', '--tool-name', 'no_such_tool']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /-32602/);

    // Streamable HTTP: /mcp on the HTTP server, Bearer key.
    const local = await openLocal({ db: cli.db });
    const app = createHttpServer(local.rt, { logger: false, plugins: [mcpHttpPlugin] });
    await app.listen({ port: 0, host: '127.0.0.1' });
    t.after(async () => {
      await app.close();
      await local.close();
    });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`;
    const http = [url, '--transport', 'http', '--header', `Authorization: Bearer ${key}`];
    const overHttp = await inspector([...http, '--method', 'tools/list']);
    assert.equal(overHttp.code, 0, overHttp.stderr);
    assert.deepEqual(names(overHttp.json), expected);
    const write = await inspector([...http, '--method', 'tools/call', '--tool-name', 'transaction__start']);
    assert.equal(write.code, 0, write.stderr);
    assert.equal(
      (resultOf(write.json) as { status: string }).status,
      'started',
      JSON.stringify(write.json).slice(0, 500),
    );
  },
);
