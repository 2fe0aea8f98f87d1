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
import { commandWords, needsShortcuts } from './argv.ts';
import { createPager } from './human-output.ts';

export type CommandModule = (program: Command, io: Io, setExit: (code: number) => void) => void;

/**
 * One command module: the top-level command names it registers and how to import it. A module
 * is imported only when an invocation may use it (issue 36: `solid mcp` never loads the HTTP
 * server, `solid verbs list` never loads MCP), so each module's imports are its own cost.
 */
export interface CommandEntry {
  /** The top-level command names (and aliases) the module registers. */
  names: readonly string[];
  load: () => Promise<CommandModule>;
}

/** Command modules, in help order. Other issues add theirs here (and their names). */
export const COMMANDS: readonly CommandEntry[] = [
  { names: ['init'], load: async () => (await import('./commands/init.ts')).registerInit },
  { names: ['verbs'], load: async () => (await import('./commands/verbs.ts')).registerVerbs },
  { names: ['agent'], load: async () => (await import('./commands/agent.ts')).registerAgent },
  { names: ['serve'], load: async () => (await import('./commands/serve.ts')).registerServe },
  { names: ['approvals'], load: async () => (await import('./commands/approvals.ts')).registerApprovals },
  { names: ['tenant'], load: async () => (await import('./commands/tenant.ts')).registerTenant },
  { names: ['mcp'], load: async () => (await import('./commands/mcp.ts')).registerMcp },
  { names: ['db'], load: async () => (await import('./commands/db.ts')).registerDb },
  { names: ['audit'], load: async () => (await import('./commands/audit.ts')).registerAudit },
  { names: ['backup', 'restore'], load: async () => (await import('./commands/backup.ts')).registerBackup },
  { names: ['receipt'], load: async () => (await import('./commands/receipt.ts')).registerReceipt },
  { names: ['keys'], load: async () => (await import('./commands/keys.ts')).registerKeys },
  { names: ['api-keys'], load: async () => (await import('./commands/api-keys.ts')).registerApiKeys },
  { names: ['users'], load: async () => (await import('./commands/users.ts')).registerUsers },
  { names: ['platform'], load: async () => (await import('./commands/platform.ts')).registerPlatform },
  { names: ['grants'], load: async () => (await import('./commands/grants.ts')).registerGrants },
  { names: ['webhooks'], load: async () => (await import('./commands/webhooks.ts')).registerWebhooks },
  { names: ['vault'], load: async () => (await import('./commands/vault.ts')).registerVault },
  { names: ['ucp'], load: async () => (await import('./commands/ucp.ts')).registerUcp },
  {
    names: ['login', 'logout', 'whoami'],
    load: async () => (await import('./commands/login.ts')).registerLogin,
  },
  {
    names: ['conformance'],
    load: async () => (await import('./commands/conformance.ts')).registerConformance,
  },
  // `completion` prints the whole command tree, so it is never loaded alone (see programFor).
  { names: ['completion'], load: async () => (await import('./commands/completion.ts')).registerCompletion },
];

/** This package's version (package.json, two folders up from src/ and from dist/ alike). */
export const VERSION = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

function baseProgram(io: Io): Command {
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
  // Global, so every command takes it whichever command module an invocation loads (a command
  // module is imported only when named: `solid serve --database-url …` loads no `db` module).
  program.option(
    '--database-url <url>',
    'PostgreSQL database (default: $SOLID_DATABASE_URL); selects the PostgreSQL engine',
  );
  program.hook('preAction', (cmd) => {
    const url = cmd.opts<{ databaseUrl?: string }>().databaseUrl;
    if (url !== undefined) cmd.setOptionValue('db', url);
  });
  return program;
}

/** The whole program: every command module, in help order (what `--help` and completion show). */
export async function buildProgram(io: Io, setExit: (code: number) => void): Promise<Command> {
  const program = baseProgram(io);
  const modules = await Promise.all(COMMANDS.map((c) => c.load()));
  for (const register of modules) register(program, io, setExit);
  return program;
}

/** `solid --version` (or -V) with no command word and no help flag: commander prints the version. */
function versionOnly(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  const flags = end < 0 ? argv : argv.slice(0, end);
  return (
    commandWords(argv).length === 0 &&
    (flags.includes('--version') || flags.includes('-V')) &&
    !flags.includes('--help') &&
    !flags.includes('-h')
  );
}

/**
 * The program this invocation needs: when its first word names a built-in command (other than
 * `completion`) whose own words settle it without the verbs' shortcuts, only that command's
 * module; otherwise (no command, help, a shortcut, an unknown word, completion) every module, so
 * help, suggestions, shortcuts and completion see the whole tree as before.
 */
export async function programFor(
  argv: readonly string[],
  io: Io,
  setExit: (code: number) => void,
): Promise<Command> {
  if (versionOnly(argv)) return baseProgram(io);
  const [first] = commandWords(argv);
  const entry = first === undefined ? undefined : COMMANDS.find((c) => c.names.includes(first));
  if (entry !== undefined && !entry.names.includes('completion')) {
    const program = baseProgram(io);
    (await entry.load())(program, io, setExit);
    if (!needsShortcuts(program, argv)) return program;
  }
  return buildProgram(io, setExit);
}

/** Run the CLI; resolves to the exit code. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  let code = 0;
  try {
    const program = await programFor(argv, io, (c) => {
      code = c;
    });
    // Verbs' shortcut commands (shortcuts.ts), loaded only when this invocation may use them.
    if (needsShortcuts(program, argv) && !versionOnly(argv))
      await (
        await import('./shortcuts.ts')
      ).addShortcuts(program, argv, io, (c) => {
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
 * PromptInterrupted, never readline's "Aborted with Ctrl+D" AbortError; piped input whose one line
 * lacks its final newline is still that line. The question is shown
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
  // Piped input whose last line has no newline (`printf %s "$KEY" | solid vault set x`): readline
  // drops that line at the end of input, so what arrived since the question is kept here and is
  // the answer when the input ends without one full line.
  let received = '';
  const onData = (chunk: Buffer | string) => {
    if (received.length < 65_536) received += String(chunk);
  };
  if (!process.stdin.isTTY) process.stdin.on('data', onData);
  return new Promise<string>((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      process.stdin.off('data', onData);
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
    rl.once('close', () =>
      // After the question's own answer, which settles first when a full line came.
      setImmediate(() =>
        settle(() =>
          received !== '' && !received.includes('\n')
            ? resolve(received.replace(/\r$/, ''))
            : reject(new PromptInterrupted('EOF')),
        ),
      ),
    );
    rl.question(secret ? '' : question).then(
      (answer) => settle(() => resolve(answer)),
      () => settle(() => reject(new PromptInterrupted('EOF'))),
    );
  });
}
