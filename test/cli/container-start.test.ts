/**
 * The container's entry point (docker/start.sh, run by the Dockerfile and compose.yaml) outside a
 * container, since this machine has no Docker engine: on an empty data dir it creates the SQLite
 * database, migrates, serves with the extra arguments, answers /readyz (the image's health
 * check), and exits 0 on SIGTERM because `exec` made node the process that got the signal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('../../', import.meta.url)));
const START = join(ROOT, 'docker/start.sh');

test(
  'docker/start.sh creates, migrates and serves; /readyz answers; SIGTERM exits 0',
  { timeout: 240_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'solid-container-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    // The image puts `solid` on PATH; here a shim runs this checkout's bin.
    const shim = join(dir, 'solid');
    writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'bin/solid.js')}" "$@"\n`);
    chmodSync(shim, 0o755);
    const db = join(dir, 'data', 'solid.db');
    const child = spawn('sh', [START, '--allowed-origin', 'https://agents.example.com'], {
      env: {
        ...process.env,
        SOLID_BIN: shim,
        SOLID_DB: db,
        SOLID_DATABASE_URL: '',
        PORT: '0',
        SOLID_HOST: '127.0.0.1',
        SOLID_LOG_LEVEL: 'warn',
        SOLID_API_KEY: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const guard = setTimeout(() => child.kill('SIGKILL'), 200_000);
    t.after(() => {
      clearTimeout(guard);
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const base = await new Promise<string>((ok, fail) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /solid serve: ready on (http:\/\/\S+)/.exec(out);
        if (m) ok(m[1]!);
      });
      void exited.then((code) => fail(new Error(`start.sh exited ${code}:\n${out}\n${err}`)));
    });
    assert.ok(existsSync(db), 'the database was created');
    assert.match(err, /no database at .*creating it/);
    assert.match(out, /owner/i, 'solid init printed the first owner key');
    const ready = await fetch(`${base}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(((await ready.json()) as { status: string }).status, 'ready');
    // The extra argument reached solid serve: that origin passes the dashboard's Origin check.
    const session = await fetch(`${base}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://agents.example.com' },
      body: JSON.stringify({ api_key: 'sk_wrong' }),
    });
    assert.notEqual(
      ((await session.json()) as { error?: { reason: string } }).error?.reason,
      'origin_denied',
    );
    child.kill('SIGTERM');
    assert.equal(await exited, 0, err);
    assert.match(err, /solid serve: stopped/);
    // The script is what the Dockerfile runs.
    assert.match(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'), /ENTRYPOINT \["\/app\/start\.sh"\]/);
  },
);
