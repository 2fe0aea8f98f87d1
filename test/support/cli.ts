/**
 * Run the CLI in-process with captured output, on a database in a temp dir.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { runCli } from '../../src/transports/cli/main.ts';
import type { Io } from '../../src/transports/cli/output.ts';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json<T = Record<string, unknown>>(): T;
}

export interface CliHarness {
  dir: string;
  db: string;
  run(
    args: string[],
    options?: {
      env?: Record<string, string | undefined>;
      prompt?: (q: string) => Promise<string>;
      tty?: boolean;
    },
  ): Promise<CliResult>;
}

export function cliHarness(t: TestContext): CliHarness {
  const dir = mkdtempSync(join(tmpdir(), 'solid-cli-'));
  const db = join(dir, 'solid.db');
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return {
    dir,
    db,
    async run(args, options = {}) {
      const out: string[] = [];
      const err: string[] = [];
      const io: Io = {
        out: (s) => out.push(s),
        err: (s) => err.push(s),
        isTTY: options.tty ?? false,
        prompt: options.prompt,
      };
      const saved: Record<string, string | undefined> = {};
      for (const [k, v] of Object.entries(options.env ?? {})) {
        saved[k] = process.env[k];
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      try {
        const code = await runCli(['--db', db, ...args], io);
        const stdout = out.join('\n');
        return { code, stdout, stderr: err.join('\n'), json: <T>() => JSON.parse(stdout) as T };
      } finally {
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
      }
    },
  };
}
