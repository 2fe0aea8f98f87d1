/**
 * `solid serve` as a real process on a real socket: first run with --demo sets the database up
 * and prints the URLs, the API answers, `solid agent dispatch` works on the same database
 * meanwhile, SIGTERM shuts down cleanly with exit code 0. Spec: spec/transports.md §cli-serve.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cliHarness } from '../../support/cli.ts';

const BIN = resolve(fileURLToPath(new URL('../../../bin/solid.js', import.meta.url)));
const run = promisify(execFile);

test('solid serve --demo: ready line, /healthz, a read over HTTP, a CLI dispatch on the same db, SIGTERM exits 0', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'solid-serve-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'solid.db');
  const child = spawn(process.execPath, [BIN, 'serve', '--demo', '--port', '0', '--db', db], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SOLID_API_KEY: '' },
  });
  // A guard so a broken server cannot hang the suite; not a timing assertion.
  const guard = setTimeout(() => child.kill('SIGKILL'), 120_000);
  t.after(() => {
    clearTimeout(guard);
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const base = await new Promise<string>((resolveBase, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /solid serve: ready on (http:\/\/\S+)/.exec(stdout);
      if (m) resolveBase(m[1]!);
    });
    void exited.then((code) =>
      reject(new Error(`serve exited (${code}) before ready:\n${stdout}\n${stderr}`)),
    );
  });
  assert.match(base, /^http:\/\/127\.0\.0\.1:\d+$/, 'binds loopback by default');
  assert.ok(existsSync(db), 'the database was created');
  assert.match(stdout, /OpenAPI\s+http:\/\/127\.0\.0\.1:\d+\/openapi\.json/);

  // OAuth without --public-url: one origin, http://localhost:<port> — the MCP URL printed for a
  // connector, the issuer its metadata names (exactly, RFC 8414 §3.3), the dashboard. The same
  // metadata asked at 127.0.0.1 is refused, naming that origin (spec/oauth.md §authorization-server).
  const port = new URL(base).port;
  const origin = `http://localhost:${port}`;
  assert.match(stdout, new RegExp(`MCP\\s+${origin}/mcp\\s`));
  const prm = (await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json()) as {
    authorization_servers: string[];
  };
  assert.deepEqual(prm.authorization_servers, [origin]);
  const asMeta = (await (await fetch(`${origin}/.well-known/oauth-authorization-server`)).json()) as {
    issuer: string;
    authorization_endpoint: string;
  };
  assert.equal(asMeta.issuer, origin);
  assert.ok(asMeta.authorization_endpoint.startsWith(`${origin}/`), asMeta.authorization_endpoint);
  const wrongHost = await fetch(`${base}/.well-known/oauth-authorization-server`);
  assert.equal(wrongHost.status, 400);
  const refusal = (await wrongHost.json()) as { error: { reason: string; message: string; hint: string } };
  assert.equal(refusal.error.reason, 'invalid_request');
  assert.match(refusal.error.message, new RegExp(`OAuth issuer is ${origin}.*addressed ${base}`));

  // The owner has no passkey yet: a one-time enrolment link on localhost (WebAuthn refuses an IP).
  const enrol = /Enrol\s+(http:\/\/localhost:\d+\/enrol\/enr1_[A-Za-z0-9_-]{43})/.exec(stdout);
  assert.ok(enrol, stdout);
  const enrolPage = await fetch(enrol[1]!.replace('//localhost:', '//127.0.0.1:'));
  assert.equal(enrolPage.status, 200);
  assert.equal(enrolPage.headers.get('referrer-policy'), 'no-referrer');

  const health = await fetch(`${base}/healthz`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { ok: true, status: 'up' });

  const read = await fetch(`${base}/api/v1/agent/dispatch/verbs.list`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"args":{}}',
  });
  assert.equal(read.status, 200);
  const env = (await read.json()) as { ok: boolean; result: { total: number } };
  assert.equal(env.ok, true);
  assert.ok(env.result.total > 0);

  const cli = await run(process.execPath, [BIN, '--db', db, 'agent', 'dispatch', 'verbs.list', '--json'], {
    env: { ...process.env, SOLID_API_KEY: '' },
  });
  assert.equal(
    (JSON.parse(cli.stdout) as { ok: boolean }).ok,
    true,
    'a second process dispatches on the same database',
  );

  child.kill('SIGTERM');
  assert.equal(await exited, 0, stderr);
  assert.match(stderr, /stopped/);
});

test('solid serve without a database and without --demo refuses with a hint (exit 8)', async (t) => {
  const cli = cliHarness(t);
  const r = await cli.run(['serve', '--port', '0']);
  assert.equal(r.code, 8);
  assert.match(r.stderr, /store_unavailable/);
  assert.match(r.stderr, /solid init|--demo/);
});

test('solid serve refuses a bad --port or --durability (exit 2)', async (t) => {
  const cli = cliHarness(t);
  assert.equal((await cli.run(['serve', '--port', 'http'])).code, 2);
  assert.equal((await cli.run(['serve', '--port', '70000'])).code, 2);
  assert.equal((await cli.run(['serve', '--durability', 'maybe'])).code, 2);
});
