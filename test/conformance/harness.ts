/**
 * Conformance-kit test harness: `solid serve` as a real process on an ephemeral port (the keys of
 * its first --demo run parsed from stdout), the `solid` command line to hand the kit as its stdio
 * MCP command, and small report helpers.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';
import type { ConformanceReport } from '../../src/conformance/index.ts';

export const BIN = resolve(fileURLToPath(new URL('../../bin/solid.js', import.meta.url)));

/** `node /abs/bin/solid.js`, quoted for the kit's --mcp command line. */
export const SOLID_COMMAND = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)}`;

export interface Served {
  base: string;
  stdout: string;
  /** The owner key printed by the first --demo run (undefined on later runs). */
  ownerKey?: string;
  keys?: Record<string, string>;
  stop(): Promise<number | null>;
}

/** Run `solid serve <args> --port 0` until its ready line; stopped with SIGTERM in t.after. */
export async function serve(
  t: TestContext,
  args: string[],
  env: Record<string, string> = {},
): Promise<Served> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // The kit runs its checks back to back from one address, past the default keyless limit of
    // 60 a minute; rate limits have their own tests (test/transports/http/rate-limit.test.ts).
    env: { ...process.env, SOLID_API_KEY: '', SOLID_RATE_LIMIT_ADDRESS: '0', ...env },
  });
  // A guard so a broken server cannot hang the suite; not a timing assertion.
  const guard = setTimeout(() => child.kill('SIGKILL'), 240_000);
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const stop = async () => {
    clearTimeout(guard);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exited;
  };
  t.after(stop);
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
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
  const keysLine = /^\s*keys: (\{.*\})$/m.exec(stdout);
  const keys = keysLine ? (JSON.parse(keysLine[1]!) as Record<string, string>) : undefined;
  return { base, stdout, ...(keys ? { keys, ownerKey: keys.owner! } : {}), stop };
}

/** The ids of the results with a status. */
export function idsWith(report: ConformanceReport, status: 'pass' | 'fail' | 'skip'): string[] {
  return report.results.filter((r) => r.status === status).map((r) => r.id);
}

/** A readable digest of the failures, for assertion messages. */
export function failures(report: ConformanceReport): string {
  return report.results
    .filter((r) => r.status === 'fail')
    .map((r) => `${r.id}: ${r.message}\n    ${JSON.stringify(r.evidence).slice(0, 800)}`)
    .join('\n');
}
