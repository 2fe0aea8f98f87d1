/**
 * `mcp-remote` (the stdio bridge many desktop clients use for remote MCP servers) against this
 * server, as a user would run it: no key, only the URL. It discovers the OAuth metadata from the
 * 401, registers itself, prints the authorization URL (no browser here); a signed-in human
 * consents; the authorization server redirects to mcp-remote's local callback with a code; it
 * exchanges the code and lists the tools over `/mcp`. spec/oauth.md
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { humanConsents, oauthFixture } from './fixture.ts';

const clientJs = createRequire(import.meta.url).resolve('mcp-remote/dist/client.js');

test('mcp-remote authorizes with a human’s consent and lists the tools', async (t) => {
  const f = await oauthFixture(t);
  const config = mkdtempSync(join(tmpdir(), 'solid-mcp-remote-'));
  t.after(() => rmSync(config, { recursive: true, force: true }));
  const child = spawn(process.execPath, [clientJs, `${f.base}/mcp`, '--allow-http'], {
    // No browser: the URL is read from its output, as a person would copy it.
    env: { ...process.env, MCP_REMOTE_CONFIG_DIR: config, BROWSER: 'false', DISPLAY: '' },
    // Its stdin stays open: it shuts down when stdin ends.
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.after(() => {
    child.stdin.end();
    if (child.exitCode === null) child.kill();
  });
  const authUrl = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const m = /Please authorize this client by visiting:\s+(\S+)/.exec(output);
      if (m !== null && /callback server running/.test(output)) resolve(m[1]!);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) =>
      reject(new Error(`mcp-remote exited (${code}) before authorizing:\n${output}`)),
    );
  });
  const { redirect } = await humanConsents(f, authUrl, { role: 'employee' });
  assert.ok(redirect.searchParams.get('code'), redirect.href);
  // The browser would now load mcp-remote's callback page (its server listens on 127.0.0.1).
  redirect.hostname = '127.0.0.1';
  const callback = await fetch(redirect);
  assert.equal(callback.status, 200);
  assert.equal(await exited, 0, output.slice(-2000));
  assert.match(output, /Connected successfully/);
  assert.match(output, /"name": "webtest__quote"/, 'the tools were listed with the token');
  const grants = await f.rt.store.read((q) => q.all<{ role: string }>('SELECT role FROM oauth_grants'));
  assert.deepEqual(
    grants.map((g) => g.role),
    ['employee'],
  );
});
