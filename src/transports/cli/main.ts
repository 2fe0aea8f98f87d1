/**
 * The `solid` command line (commander). `runCli(argv, io)` is pure enough to test in-process;
 * bin/solid.js calls it with the real process streams.
 *
 * Bad input never prints a stack: every failure is an envelope or a one-line message with a hint,
 * and a non-zero exit code. Spec: spec/transports.md §cli.
 */
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';
import { isVerbError } from '../../runtime/errors.ts';
import { reasonInfo } from '../../spec/reasons.ts';
import { PromptInterrupted, type Io } from './output.ts';
import type { PackError } from '../../runtime/pack.ts';
import { registerInit } from './commands/init.ts';
import { registerVerbs } from './commands/verbs.ts';
import { registerAgent } from './commands/agent.ts';
import { registerServe } from './commands/serve.ts';
import { registerApprovals } from './commands/approvals.ts';
import { registerTenant } from './commands/tenant.ts';
import { registerMcp } from './commands/mcp.ts';
import { registerDb } from './commands/db.ts';
import { registerAudit } from './commands/audit.ts';
import { registerBackup } from './commands/backup.ts';
import { registerReceipt } from './commands/receipt.ts';
import { registerKeys } from './commands/keys.ts';
import { registerUcp } from './commands/ucp.ts';
import { registerApiKeys } from './commands/api-keys.ts';
import { registerUsers } from './commands/users.ts';
import { registerPlatform } from './commands/platform.ts';
import { registerGrants } from './commands/grants.ts';
import { registerWebhooks } from './commands/webhooks.ts';
import { registerVault } from './commands/vault.ts';
import { registerLogin } from './commands/login.ts';
import { registerConformance } from './commands/conformance.ts';
import { registerCompletion } from './commands/completion.ts';
import { addShortcuts } from './shortcuts.ts';
import { createPager } from './human-output.ts';

export type CommandModule = (program: Command, io: Io, setExit: (code: number) => void) => void;

/** Command modules, in help order. Other issues add theirs here. */
export const COMMANDS: CommandModule[] = [
  registerInit,
  registerVerbs,
  registerAgent,
  registerServe,
  registerApprovals,
  registerTenant,
  registerMcp,
  registerDb,
  registerAudit,
  registerBackup,
  registerReceipt,
  registerKeys,
  registerApiKeys,
  registerUsers,
  registerPlatform,
  registerGrants,
  registerWebhooks,
  registerVault,
  registerUcp,
  registerLogin,
  registerConformance,
  registerCompletion,
];

/** This package's version (package.json, two folders up from src/ and from dist/ alike). */
export const VERSION = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

export function buildProgram(io: Io, setExit: (code: number) => void): Command {
  const program = new Command('solid')
    .description(
      'solid-verbs: typed verbs for AI agents acting on real businesses — safe, auditable, reversible',
    )
    .version(VERSION, '-V, --version', 'print the version of solid-verbs')
    .option('--db <path>', 'SQLite database (default: $SOLID_DB or .solid/solid.db)')
    .option(
      '--pack <file|name>',
      'serve your own pack too: a module exporting definePack(…), or a built-in name (repeatable; spec/manifest.md §packs)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option(
      '--config <file>',
      'config file naming packs (default: ./solid.config.js or .mjs; "none" for no config)',
    )
    .option(
      '--url <url>',
      'a running `solid serve` to use instead of a database (default: $SOLID_API_URL); see solid login',
    )
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.out(s.replace(/\n$/, '')),
      writeErr: (s) => io.err(s.replace(/\n$/, '')),
    });
  for (const register of COMMANDS) register(program, io, setExit);
  return program;
}

/** Run the CLI; resolves to the exit code. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  let code = 0;
  const program = buildProgram(io, (c) => {
    code = c;
  });
  try {
    // Verbs' shortcut commands (shortcuts.ts), loaded only when this invocation may use them.
    await addShortcuts(program, argv, io, (c) => {
      code = c;
    });
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? 0 : 2;
    }
    if ((err as Error | undefined)?.name === 'PackError') {
      const e = err as PackError;
      io.err(`✗ pack_invalid: ${e.message}${e.hint ? `\n  hint: ${e.hint}` : ''}`);
      return 2;
    }
    if (err instanceof PromptInterrupted) {
      io.err(`✗ ${err.message}: nothing was decided; a pending action or approval stays pending.`);
      return err.why === 'SIGINT' ? 130 : 2;
    }
    if (isVerbError(err)) {
      io.err(`✗ ${err.reason}: ${err.message}${err.hint ? `\n  hint: ${err.hint}` : ''}`);
      return reasonInfo(err.reason).exit;
    }
    io.err(`✗ internal_error: ${(err as Error).message}`);
    return 1;
  }
  return code;
}

/**
 * Io on the real process streams.
 *   - A closed pipe (`solid approvals list | head -5`): the EPIPE on stdout or stderr is not an
 *     error; further output to that stream is dropped and the command ends with its own exit code.
 *   - The prompt: Ctrl-C → PromptInterrupted('SIGINT') (exit 130), end of input →
 *     PromptInterrupted('EOF') (exit 2); nothing is dispatched or decided.
 * Spec: spec/transports.md §cli.
 */
export function processIo(): Io {
  const closed = { out: false, err: false };
  const onPipeError = (which: 'out' | 'err') => (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') {
      closed[which] = true;
      return;
    }
    throw err;
  };
  process.stdout.on('error', onPipeError('out'));
  process.stderr.on('error', onPipeError('err'));
  return {
    out: (s) => {
      if (!closed.out) process.stdout.write(s + '\n');
    },
    err: (s) => {
      if (!closed.err) process.stderr.write(s + '\n');
    },
    isTTY: Boolean(process.stdin.isTTY),
    prompt: (q) => promptLine(q),
    promptSecret: (q) => promptLine(q, true).finally(() => process.stderr.write('\n')),
    page: createPager({
      isTTY: Boolean(process.stdout.isTTY),
      rows: process.stdout.rows,
      pager: process.env.PAGER,
    }),
  };
}

/**
 * One line from stdin, echoed on stderr (`secret`: echoed to a sink, so what is typed — an API
 * key, a one-time code — never shows); Ctrl-C and end of input (Ctrl-D) reject with
 * PromptInterrupted, never readline's "Aborted with Ctrl+D" AbortError. The question is shown
 * only once the reader is listening, so a key typed right after it is not lost.
 */
function promptLine(question: string, secret = false): Promise<string> {
  const output = secret ? new Writable({ write: (_chunk, _enc, done) => done() }) : process.stderr;
  const rl = createInterface({
    input: process.stdin,
    output,
    ...(secret ? { terminal: Boolean(process.stdin.isTTY) } : {}),
  });
  if (secret) process.stderr.write(question);
  return new Promise<string>((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      fn();
      rl.close();
    };
    // A terminal in raw mode turns Ctrl-C into readline's SIGINT event (no process signal).
    rl.once('SIGINT', () =>
      settle(() => {
        process.stderr.write('\n');
        reject(new PromptInterrupted('SIGINT'));
      }),
    );
    rl.once('close', () => settle(() => reject(new PromptInterrupted('EOF'))));
    rl.question(secret ? '' : question).then(
      (answer) => settle(() => resolve(answer)),
      () => settle(() => reject(new PromptInterrupted('EOF'))),
    );
  });
}
