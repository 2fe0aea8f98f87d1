/**
 * VerbTarget: the ONE interface every CLI command that lists or dispatches goes through, with two
 * implementations, so embedded and remote mode cannot drift:
 *
 *   LocalTarget    the embedded runtime on a database (openLocal; `--db` / SOLID_DB), dispatching
 *                  with surface `cli` and the key from --api-key / SOLID_API_KEY
 *   RemoteTarget   a running `solid serve` over HTTP (`--url` / SOLID_API_URL;
 *                  remote-target.ts), declaring surface `cli`, with the key from
 *                  --api-key / SOLID_API_KEY / the stored `solid login` for that URL
 *
 * Both answer the same envelopes; the commands above them (agent dispatch, verbs, approvals,
 * tenant, shortcuts, whoami) print them the same way with the same exit codes.
 *
 * Spec: spec/transports.md §cli, §remote.
 */
import type { Command } from 'commander';
import type { DispatchOptions } from '../../runtime/core.ts';
import type { Envelope, Principal, VerbRecord } from '../../spec/types.ts';
import { VerbError } from '../../runtime/errors.ts';
import { refuse } from '../../runtime/refusals.ts';
import { hintsOf, type VerbHints } from '../../runtime/verb-hints.ts';
import { whoAmI } from '../../identity/whoami.ts';
import { API_URL_ENV } from '../../remote-client/remote-url.ts';
import { DEFAULT_DB, databaseUrlOf, localOptionsOf, openLocal, type Local } from './local.ts';
import { latestLogin } from '../../remote-client/credentials-file.ts';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ReasonTable } from '../../spec/reasons.ts';
import { verifyHumanAtTerminal, type TerminalPrompt } from '../../identity/terminal-human.ts';
import { dispatchWithKey } from '../../identity/api-key-auth.ts';

export interface TargetCallOptions {
  /** May a failed request be repeated (a read verb)? Remote only; an idempotency key always allows it. */
  idempotent?: boolean;
  signal?: AbortSignal;
  /**
   * The human at this terminal types the phrase at the prompt (stdin is a TTY, no --phrase flag):
   * on a local database the target first asks, once per invocation, the one-time code of an
   * enrolled user's authenticator app (identity's `verifyHumanAtTerminal`: a TTY alone is not a
   * person) and then dispatches as that user on the `operator_terminal` channel; a refused factor
   * answers its envelope (human_required, signin_failed, rate_limited) without dispatching. A
   * remote server cannot verify a terminal over HTTP, so RemoteTarget ignores it.
   * spec/consent.md §channels
   */
  humanAtTerminal?: boolean;
  /**
   * With humanAtTerminal: when the tenant has no one who could give the code (human_required, no
   * enrolled authenticator app), dispatch as the key instead — an agent, which is what the call
   * was before it asked (`agent dispatch --confirm` under `confirmation_channel: any`), with a note
   * on the terminal. A wrong code is never passed over.
   */
  keyWithoutFactor?: boolean;
}

export type ShowAnswer = { record: VerbRecord; hints: VerbHints | undefined } | { envelope: Envelope };

export interface VerbTarget {
  readonly kind: 'local' | 'remote';
  /** The database path or the server's base URL. */
  readonly where: string;
  /** One dispatch through the pipeline (surface cli). Always an envelope. */
  dispatch(
    verb: string,
    args: unknown,
    options?: DispatchOptions,
    call?: TargetCallOptions,
  ): Promise<Envelope>;
  /** VerbRecords, filtered like the manifest (no surface: every verb), sorted by name. */
  records(filter?: { surface?: string; shape?: string }): Promise<VerbRecord[]>;
  /** Hints of every verb, by name. */
  hints(): Promise<Record<string, VerbHints>>;
  /** One verb (by verb or tool name), or the unknown_verb envelope naming the closest verbs. */
  show(name: string): Promise<ShowAnswer>;
  /** Who the key is (tenant, user, role, tier). */
  whoami(): Promise<Envelope>;
  /** The reasons beyond the core ones and their exit codes: an embedded runtime's pack reasons, or the domain reasons a remote target learned from its server. */
  readonly reasons?: ReasonTable;
  close(): Promise<void>;
}

/** The unknown_verb envelope of `solid verbs show` in both modes. */
export function unknownVerbEnvelope(name: string, closest: readonly string[]): Envelope {
  return {
    ok: false,
    verb: name,
    error: refuse
      .unknownVerb(name, closest, { alone: 'See `solid verbs list`.' }, { details: false })
      .toEnvelopeError(),
  };
}

/** The embedded runtime as a target. */
export class LocalTarget implements VerbTarget {
  readonly kind = 'local' as const;
  readonly where: string;
  readonly #local: Local;
  readonly #apiKey: string | null;
  readonly #terminal: TerminalPrompt | undefined;
  /** The human factor's answer, asked at most once per invocation (a code works once). */
  #human: Promise<Principal | VerbError> | undefined;
  #notedKey = false;

  /** `terminal`: the prompt of a TTY stdin, else undefined (then no call is ever a human's). */
  constructor(local: Local, apiKey: string | null, terminal?: TerminalPrompt) {
    this.#local = local;
    this.#apiKey = apiKey;
    this.#terminal = terminal;
    this.where = local.dbPath;
  }

  /** The runtime underneath (commands that only exist locally). */
  get local(): Local {
    return this.#local;
  }

  get reasons(): ReasonTable {
    return this.#local.rt.registry.reasons;
  }

  async dispatch(
    verb: string,
    args: unknown,
    options: DispatchOptions = {},
    call: TargetCallOptions = {},
  ): Promise<Envelope> {
    const rt = this.#local.rt;
    if (
      call.humanAtTerminal === true &&
      this.#terminal !== undefined &&
      this.#apiKey !== null &&
      this.#apiKey !== ''
    ) {
      // The operator at this terminal on the local database: a human only after the human factor
      // (src/identity/terminal-human.ts). A key that does not authenticate is dispatched as it is,
      // for the audited auth_invalid.
      const key = await rt.tenants.authenticate(this.#apiKey).catch(() => undefined);
      if (key !== undefined) {
        const terminal = this.#terminal;
        this.#human ??= verifyHumanAtTerminal(rt, key, terminal, verb).catch((e: unknown) => {
          if (e instanceof VerbError) return e;
          throw e;
        });
        const human = await this.#human;
        if (!(human instanceof VerbError))
          return rt.dispatch({ surface: 'cli', principal: human }, verb, args, options);
        if (human.reason !== 'human_required' || call.keyWithoutFactor !== true)
          return { ok: false, verb, error: human.toEnvelopeError() };
        if (!this.#notedKey) {
          this.#notedKey = true;
          terminal.say(
            'No authenticator app is enrolled here: this terminal acts as the API key (an agent); a human approves in the dashboard or on the approval page.',
          );
        }
      }
    }
    return dispatchWithKey(rt, { surface: 'cli' }, this.#apiKey, verb, args, options);
  }

  async records(filter: { surface?: string; shape?: string } = {}): Promise<VerbRecord[]> {
    return this.#local.rt.registry.list(filter);
  }

  async hints(): Promise<Record<string, VerbHints>> {
    const out: Record<string, VerbHints> = {};
    for (const v of this.#local.rt.registry.all()) out[v.name] = hintsOf(v);
    return out;
  }

  async show(name: string): Promise<ShowAnswer> {
    const v = this.#local.rt.registry.get(name);
    if (v === undefined)
      return { envelope: unknownVerbEnvelope(name, this.#local.rt.registry.closest(name)) };
    return { record: v.record, hints: hintsOf(v) };
  }

  whoami(): Promise<Envelope> {
    return whoAmI(this.#local.rt, this.#apiKey, 'cli');
  }

  close(): Promise<void> {
    return this.#local.close();
  }
}

/**
 * The remote server URL this invocation targets, if any: `--url`, else SOLID_API_URL, else — when
 * no local database is named (--db, SOLID_DB, SOLID_DATABASE_URL) or present at the default
 * `.solid/solid.db` — the server of the latest `solid login` (credentials-file.ts), so `whoami`
 * and every command after a login reach the server logged in to. spec/transports.md §remote-login
 */
export function remoteUrlOf(program: Command): string | undefined {
  const flag = program.opts<{ url?: string }>().url;
  if (flag !== undefined) return flag;
  const env = process.env[API_URL_ENV];
  if (env !== undefined && env.trim() !== '') return env;
  // Nothing names a server: a local database named (--db, SOLID_DB, SOLID_DATABASE_URL) or present
  // at the default path wins; otherwise the server of the latest `solid login`.
  const db = program.opts<{ db?: string }>().db;
  if (db !== undefined || (process.env.SOLID_DB ?? '') !== '' || databaseUrlOf() !== undefined)
    return undefined;
  if (existsSync(resolve(DEFAULT_DB))) return undefined;
  return latestLogin()?.url;
}

export interface OpenTargetOptions {
  /** --api-key of the command. */
  apiKey?: string;
  /** Warnings (e.g. a credentials file with loose permissions). */
  warn?: (message: string) => void;
  /**
   * The terminal's prompt, only when stdin is a terminal (see {@link terminalOf}): where the
   * local target asks the human factor. Never built from a flag, an env variable or a pipe.
   */
  terminal?: TerminalPrompt;
}

/**
 * The CLI's terminal prompt for the human factor: the io's hidden prompt (else its prompt) when
 * stdin is a terminal, else undefined. Whether a command's call asks it at all is the command's
 * `humanAtTerminal`; what makes the call a human's is the code, not the output format.
 */
export function terminalOf(io: {
  isTTY: boolean;
  err: (s: string) => void;
  prompt?: (q: string) => Promise<string>;
  promptSecret?: (q: string) => Promise<string>;
}): TerminalPrompt | undefined {
  const ask = io.promptSecret ?? io.prompt;
  if (!io.isTTY || ask === undefined) return undefined;
  return { ask, say: io.err };
}

/**
 * Open the target of this invocation: remote when `--url` / SOLID_API_URL is set, else the local
 * database. `--url` together with an explicit `--db` is a usage error (invalid_request, exit 2).
 */
export async function openTarget(program: Command, options: OpenTargetOptions = {}): Promise<VerbTarget> {
  const url = remoteUrlOf(program);
  const db = program.opts<{ db?: string }>().db;
  if (url !== undefined) {
    if (
      db !== undefined &&
      program.getOptionValueSource('db') === 'cli' &&
      program.getOptionValueSource('url') === 'cli'
    ) {
      throw new VerbError('invalid_request', '--url and --db name two different targets.', {
        hint: 'Use --url for a running `solid serve`, or --db for a local database, not both.',
      });
    }
    const { openRemoteTarget } = await import('./remote-target.ts');
    return openRemoteTarget(url, options);
  }
  const apiKey = options.apiKey ?? process.env.SOLID_API_KEY ?? null;
  return new LocalTarget(await openLocal(localOptionsOf(program)), apiKey, options.terminal);
}

/** Run `fn` with the invocation's target and close it afterwards. */
export async function withTarget<T>(
  program: Command,
  options: OpenTargetOptions,
  fn: (target: VerbTarget) => Promise<T>,
): Promise<T> {
  const target = await openTarget(program, options);
  try {
    return await fn(target);
  } finally {
    await target.close();
  }
}
