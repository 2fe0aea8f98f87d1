/**
 * `solid approvals list [--status S]`, `solid approvals approve <id> [--phrase "…"]`,
 * `solid approvals reject <id> [--note "…"]`: the human side of out-of-band approval
 * (spec/consent.md §approvals). Each is one dispatch of approvals.list / approve / reject with the
 * caller's API key (--api-key or SOLID_API_KEY), so the runtime decides roles and audits.
 *
 * approve without --phrase, when stdin is a terminal, first asks the one-time code of an enrolled
 * user's authenticator app (the human factor, src/identity/terminal-human.ts: a TTY alone is not a
 * person), then shows the summary and the exact phrase and prompts for it; the approval is that
 * user's. Without a terminal (or with --phrase) the approve is an agent's: human_required, audited.
 * reject at a terminal asks the same code. Exit codes: 0 ok, else the reason's exit code
 * (spec/reasons.md).
 */
import type { Command } from 'commander';
import type { Envelope } from '../../../spec/types.ts';
import { terminalOf, withTarget, type VerbTarget } from '../target.ts';
import { printEnvelope, table, type Io } from '../output.ts';

interface KeyFlags {
  json?: boolean;
  apiKey?: string;
}

interface ListedApproval {
  approval_id: string;
  verb: string;
  status: string;
  summary: string;
  /** null when the tenant shows phrases only to a human channel and this is not one. */
  typed_phrase: string | null;
  requested_by: number;
  requested_role: string;
  role_floor: string;
  expires_at: string;
  decided_by: number | null;
}

/** The local database or, with --url / SOLID_API_URL, the remote server (target.ts). */
function withLocal<T>(
  program: Command,
  fn: (target: VerbTarget) => Promise<T>,
  flags: KeyFlags,
  io: Io,
): Promise<T> {
  return withTarget(program, { apiKey: flags.apiKey, warn: io.err, terminal: terminalOf(io) }, fn);
}

function renderList(io: Io, env: Envelope): number {
  const items = (env.result?.approvals ?? []) as ListedApproval[];
  const data = (env.result?.data ?? {}) as { pending?: number; expired?: number; approved_unused?: number };
  if (items.length === 0) {
    io.out('No approvals match.');
  } else {
    io.out(
      table(
        ['APPROVAL', 'VERB', 'STATUS', 'EXPIRES (UTC)', 'REQUESTER', 'FLOOR', 'PHRASE'],
        items.map((a) => [
          a.approval_id,
          a.verb,
          a.status,
          a.expires_at.replace('T', ' ').slice(0, 19),
          `user ${a.requested_by} (${a.requested_role})`,
          a.role_floor,
          a.typed_phrase ?? '(shown by `approvals approve` after your code, or in the dashboard)',
        ]),
      ),
    );
  }
  io.out(
    `${data.pending ?? 0} pending, ${data.expired ?? 0} expired, ${data.approved_unused ?? 0} approved and not yet used.`,
  );
  return 0;
}

export function registerApprovals(program: Command, io: Io, setExit: (code: number) => void): void {
  const approvals = program
    .command('approvals')
    .description('Approve or reject pending typed-phrase actions out of band');

  approvals
    .command('list')
    .description('List approvals (default: awaiting a decision, expired ones shown as expired)')
    .option('--status <status>', 'pending | approved | rejected | consumed | expired | all')
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (flags: KeyFlags & { status?: string }) => {
      await withLocal(
        program,
        async (target) => {
          const env = await target.dispatch(
            'approvals.list',
            flags.status === undefined ? {} : { status: flags.status },
            {},
            // No human factor to list: a terminal alone is not a person, so a tenant that shows
            // phrases only to humans shows them at `approvals approve` after the one-time code
            // (spec/consent.md §phrase-channel, §channels).
            {},
          );
          setExit(
            flags.json || !env.ok
              ? printEnvelope(io, env, Boolean(flags.json), target.reasons)
              : renderList(io, env),
          );
        },
        flags,
        io,
      );
    });

  approvals
    .command('approve <approval_id>')
    .description(
      'Approve a pending action by typing its phrase, or yes for a confirmation (prompted on a terminal)',
    )
    .option('--phrase <phrase>', 'the phrase, typed exactly as shown')
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (approvalId: string, flags: KeyFlags & { phrase?: string }) => {
      await withLocal(
        program,
        async (target) => {
          let phrase = flags.phrase;
          // Typed at the prompt on a terminal: the operator, a human; a --phrase flag is what a
          // script passes, an agent (spec/consent.md §channels).
          const human = phrase === undefined && io.isTTY && io.prompt !== undefined && !flags.json;
          if (phrase === undefined) {
            const listed = await target.dispatch(
              'approvals.list',
              { approval_id: approvalId },
              {},
              { humanAtTerminal: human },
            );
            const item = ((listed.result?.approvals ?? []) as ListedApproval[])[0];
            if (!listed.ok || item === undefined || item.status !== 'pending') {
              // Not visible to this caller (role, tenant, unknown id), not open, or the human factor
              // refused: approve itself answers and audits (the factor's refusal is answered again).
              setExit(
                printEnvelope(
                  io,
                  await target.dispatch(
                    'approvals.approve',
                    { approval_id: approvalId, typed_phrase: '' },
                    {},
                    { humanAtTerminal: human },
                  ),
                  Boolean(flags.json),
                  target.reasons,
                ),
              );
              return;
            }
            io.err(
              `${item.verb}: ${item.summary}\nRequested by user ${item.requested_by} (${item.requested_role}); status ${item.status}; expires ${item.expires_at}.`,
            );
            if (human && io.prompt !== undefined && item.typed_phrase === '') {
              // A confirmation (no phrase): the operator approves it with an explicit yes.
              io.err('To approve this confirmation, type yes.');
              if ((await io.prompt('> ')).trim() !== 'yes') {
                io.err('Not approved; nothing changed.');
                setExit(1);
                return;
              }
              phrase = '';
            } else if (human && io.prompt !== undefined && item.typed_phrase !== null) {
              io.err(`To approve, type exactly:  ${item.typed_phrase}`);
              phrase = await io.prompt('> ');
            } else {
              // No terminal to prompt on: a script, an agent. The approve itself answers (and audits)
              // human_required, whose hint names the places a human approves.
              setExit(
                printEnvelope(
                  io,
                  await target.dispatch('approvals.approve', { approval_id: approvalId, typed_phrase: '' }),
                  Boolean(flags.json),
                  target.reasons,
                ),
              );
              return;
            }
          }
          const env = await target.dispatch(
            'approvals.approve',
            // An empty phrase approves a confirmation (approvals.approve ignores it there).
            { approval_id: approvalId, typed_phrase: phrase },
            {},
            { humanAtTerminal: human },
          );
          const code = printEnvelope(io, env, Boolean(flags.json), target.reasons);
          if (env.ok && !flags.json) io.out(String(env.result?.next_step ?? ''));
          setExit(code);
        },
        flags,
        io,
      );
    });

  approvals
    .command('reject <approval_id>')
    .description('Reject a pending action (or withdraw an unused approval)')
    .option('--note <note>', 'why (kept with the approval)')
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (approvalId: string, flags: KeyFlags & { note?: string }) => {
      await withLocal(
        program,
        async (target) => {
          const args =
            flags.note === undefined
              ? { approval_id: approvalId }
              : { approval_id: approvalId, note: flags.note };
          setExit(
            printEnvelope(
              io,
              // Rejecting is a human's decision: the operator at this terminal (spec/consent.md §channels).
              await target.dispatch('approvals.reject', args, {}, { humanAtTerminal: io.isTTY }),
              Boolean(flags.json),
              target.reasons,
            ),
          );
        },
        flags,
        io,
      );
    });
}
