/**
 * `solid serve` as a real child process for the reliability tests: start it on a database (the
 * first `--demo` run seeds the demo business and prints its keys and fixtures), wait for the ready
 * line, kill it with SIGKILL or stop it with SIGTERM, and call its HTTP API.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { TestContext } from 'node:test';

export const BIN = resolve(fileURLToPath(new URL('../../bin/solid.js', import.meta.url)));

export interface Served {
  child: ChildProcess;
  base: string;
  stdout: string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Start `solid serve --port 0 --db <db> …extra` (with `env` over the test's); resolves once the ready line is printed. */
export async function serve(
  t: TestContext,
  db: string,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<Served> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--db', db, ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SOLID_API_KEY: '', SOLID_LOG_LEVEL: 'error', ...env },
  });
  // A guard so a stuck server cannot hang the suite; not a timing assertion.
  const guard = setTimeout(() => child.kill('SIGKILL'), 90_000);
  t.after(() => {
    clearTimeout(guard);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
  const base = await new Promise<string>((ok, fail) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /solid serve: ready on (http:\/\/\S+)/.exec(out);
      if (m) ok(m[1]!);
    });
    void exited.then(({ code, signal }) =>
      fail(new Error(`solid serve exited (${code ?? signal}) before ready:\n${out}\n${err}`)),
    );
  });
  return { child, base, stdout: out, stderr: () => err, exited };
}

/** A `key: value` line printed by the first `serve --demo` run (JSON values parsed). */
export function printedFact<T = unknown>(stdout: string, key: string): T {
  const m = new RegExp(`^\\s+${key}: (.*)$`, 'm').exec(stdout);
  if (m === null) throw new Error(`serve did not print ${key}:\n${stdout}`);
  try {
    return JSON.parse(m[1]!) as T;
  } catch {
    return m[1]! as T;
  }
}

/** SIGKILL the server (no shutdown work at all) and wait for it to be gone. */
export async function kill9(s: Served): Promise<void> {
  s.child.kill('SIGKILL');
  await s.exited;
}

/** SIGTERM the server and wait for its exit code. */
export async function stop(s: Served): Promise<number | null> {
  s.child.kill('SIGTERM');
  return (await s.exited).code;
}

export interface HttpAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** POST /api/v1/agent/dispatch/<verb> with a bearer key (optional) and an Idempotency-Key (optional). */
export async function dispatchHttp(
  base: string,
  verb: string,
  body: Record<string, unknown>,
  opts: { key?: string; idempotencyKey?: string } = {},
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.key !== undefined) headers.authorization = `Bearer ${opts.key}`;
  if (opts.idempotencyKey !== undefined) headers['idempotency-key'] = opts.idempotencyKey;
  const res = await fetch(`${base}/api/v1/agent/dispatch/${verb}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Run the `solid` CLI as a process; resolves with its exit code and output (never rejects on a non-zero exit). */
export async function solid(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, [BIN, ...args], {
      env: { ...process.env, SOLID_API_KEY: '' },
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}
