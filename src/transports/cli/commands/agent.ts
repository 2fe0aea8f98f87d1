/**
 * `solid agent dispatch <verb> --args '<json>' [--json] [--confirm] [--nonce N] [--phrase "…"]
 * [--idempotency-key K]`: one dispatch through the pipeline, printing the envelope.
 *
 * The human at the terminal is the consent: `--confirm` runs the preflight and, for a
 * confirmation-click verb, confirms it with the nonce it got; for a typed-phrase verb the phrase
 * comes from `--phrase` or, when stdin is a terminal, from a prompt showing the exact phrase.
 * Malformed --args answers an `invalid_args` envelope with the parse position. Exit code 0 when
 * ok, else the reason's exit code. With `--url` / SOLID_API_URL the same round trip runs against a
 * remote `solid serve` (target.ts). Spec: spec/transports.md §cli, §remote, spec/consent.md §protocol.
 */
import type { Command } from 'commander';
import type { Envelope } from '../../../spec/types.ts';
import { openTarget, terminalOf, type TargetCallOptions } from '../target.ts';
import { parseArgsJson, printEnvelope, type Io } from '../output.ts';

export interface DispatchFlags {
  args?: string;
  json?: boolean;
  confirm?: boolean;
  nonce?: string;
  phrase?: string;
  idempotencyKey?: string;
  apiKey?: string;
  /** The verb is a read: a remote call may be retried after a failure (shortcuts know it). */
  read?: boolean;
}

export function registerAgent(program: Command, io: Io, setExit: (code: number) => void): void {
  const agent = program.command('agent').description('Act as an agent: dispatch verbs');
  agent
    .command('dispatch <verb>')
    .description('Dispatch a verb and print its envelope')
    .option('--args <json>', 'arguments as a JSON object', '{}')
    .option('--json', 'print the envelope as JSON (the machine contract)')
    .option('--confirm', 'I (the human at this terminal) consent: run the preflight and confirm')
    .option('--nonce <nonce>', 'nonce from an earlier dispatch_pending answer')
    .option('--phrase <phrase>', 'the typed phrase, exactly as shown')
    .option('--idempotency-key <key>', 'replay-safe key (≤ 255 printable ASCII)')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (verb: string, flags: DispatchFlags) => {
      setExit(await runDispatch(program, io, verb, flags));
    });
}

/** Run one CLI dispatch with the consent round trip; returns the exit code. */
export async function runDispatch(
  program: Command,
  io: Io,
  verb: string,
  flags: DispatchFlags,
): Promise<number> {
  const parsed = parseArgsJson(verb, flags.args);
  if (!parsed.ok) return printEnvelope(io, parsed.envelope, Boolean(flags.json));
  // Embedded or remote (--url / SOLID_API_URL): one interface, the same envelopes (target.ts).
  const target = await openTarget(program, {
    apiKey: flags.apiKey,
    warn: io.err,
    terminal: terminalOf(io),
  });
  try {
    const call: TargetCallOptions = { idempotent: flags.read === true };
    const base = flags.idempotencyKey !== undefined ? { idempotency_key: flags.idempotencyKey } : {};
    let env: Envelope;
    if (flags.nonce !== undefined) {
      env = await target.dispatch(
        verb,
        parsed.args,
        {
          ...base,
          confirm: true,
          nonce: flags.nonce,
          ...(flags.phrase !== undefined ? { typed_phrase: flags.phrase } : {}),
        },
        call,
      );
    } else {
      const wantsConsent = flags.confirm === true || flags.phrase !== undefined;
      // The human channel is the terminal prompt (and a --confirm typed at a terminal), never a
      // --phrase flag: a script passes flags (spec/consent.md §phrase-channel).
      const human =
        wantsConsent && flags.phrase === undefined && io.isTTY && io.prompt !== undefined && !flags.json;
      if (human) {
        call.humanAtTerminal = true;
        // No one enrolled to give the code: the call stays the key's (an agent), as with --phrase.
        call.keyWithoutFactor = true;
      }
      env = await target.dispatch(verb, parsed.args, base, call);
      if (!env.ok && env.error?.reason === 'dispatch_pending' && env.consent && wantsConsent) {
        let phrase = flags.phrase;
        if (env.consent.gate === 'typed_phrase' && phrase === undefined) {
          if (human && io.prompt !== undefined && env.consent.typed_phrase !== undefined) {
            io.err(`${env.consent.summary}\nTo consent, type exactly:  ${env.consent.typed_phrase}`);
            phrase = await io.prompt('> ');
          } else {
            return printEnvelope(io, env, Boolean(flags.json), target.reasons);
          }
        }
        env = await target.dispatch(
          verb,
          parsed.args,
          {
            ...base,
            confirm: true,
            nonce: env.consent.nonce,
            ...(phrase !== undefined ? { typed_phrase: phrase } : {}),
          },
          call,
        );
      }
    }
    return printEnvelope(io, env, Boolean(flags.json), target.reasons);
  } finally {
    await target.close();
  }
}
