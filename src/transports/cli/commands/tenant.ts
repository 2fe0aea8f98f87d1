/**
 * `solid tenant show`, `solid tenant caps set --class C --limit N|default`,
 * `solid tenant blocklist add <name>`, `solid tenant blocklist remove <name>`,
 * `solid tenant phrase-channel <any|human>`, `solid tenant confirmation-channel <any|human>`: the tenant's consent settings (spec/consent.md §caps,
 * §blocklist, §phrase-channel). Each is a dispatch of tenant.settings /
 * tenant.caps_set / tenant.blocklist_add / tenant.blocklist_remove with the caller's key
 * (--api-key or SOLID_API_KEY): owner only, audited, revertible with audit.revert.
 *
 * The writes are WRITE_REVERSIBLE: the human running the command is the confirmation, so the
 * command answers the dispatch_pending itself with its nonce (like `agent dispatch --confirm`).
 * Exit codes: 0 ok, else the reason's exit code (spec/reasons.md).
 */
import type { Command } from 'commander';
import { CAPPED_CLASSES, type CapView } from '../../../verbs/tenant-settings.ts';
import { runDispatch } from './agent.ts';
import { withTarget } from '../target.ts';
import { printEnvelope, table, type Io } from '../output.ts';

interface KeyFlags {
  json?: boolean;
  apiKey?: string;
}

/** Dispatch a settings write with its confirmation round trip; returns the exit code. */
function confirmAndRun(
  program: Command,
  io: Io,
  verb: string,
  args: Record<string, unknown>,
  flags: KeyFlags,
): Promise<number> {
  return runDispatch(program, io, verb, {
    args: JSON.stringify(args),
    json: flags.json,
    confirm: true,
    apiKey: flags.apiKey,
  });
}

export function registerTenant(program: Command, io: Io, setExit: (code: number) => void): void {
  const tenant = program
    .command('tenant')
    .description("Your tenant's consent settings: daily caps and blocklist (owner only)");

  tenant
    .command('show')
    .description('Show the daily caps (limit, used today, reset) and the blocked verb names')
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (flags: KeyFlags) => {
      await withTarget(program, { apiKey: flags.apiKey, warn: io.err }, async (target) => {
        const env = await target.dispatch('tenant.settings', {});
        if (flags.json || !env.ok) {
          setExit(printEnvelope(io, env, Boolean(flags.json), target.reasons));
          return;
        }
        const data = env.result!.data as {
          caps: Record<string, CapView>;
          blocklist: { default: string[]; tenant: string[] };
          phrase_channel?: string;
          confirmation_channel?: string;
        };
        io.out(
          table(
            ['CLASS', 'LIMIT/DAY', 'USED TODAY', 'REMAINING', 'RESETS (UTC)'],
            Object.entries(data.caps).map(([cls, c]) => [
              cls,
              `${c.limit}${c.custom ? '' : ' (default)'}`,
              String(c.used_today),
              String(c.remaining),
              c.resets_at.replace('T', ' ').slice(0, 16),
            ]),
          ),
        );
        io.out(`blocked (built in): ${data.blocklist.default.join(', ')}`);
        io.out(
          `blocked (this tenant): ${data.blocklist.tenant.length > 0 ? data.blocklist.tenant.join(', ') : '(none)'}`,
        );
        io.out(
          `typed phrases count from: ${data.phrase_channel === 'human' ? 'a human only (approval page, dashboard, terminal prompt on this database)' : 'any channel'}`,
        );
        io.out(
          `confirmations count from: ${data.confirmation_channel === 'human' ? 'a human only (approval page, dashboard, terminal prompt on this database)' : "any channel (the agent's own, after asking the user)"}`,
        );
        setExit(0);
      });
    });

  tenant
    .command('confirmation-channel <channel>')
    .description(
      'Who may confirm a confirmation gate: "any" (default: the agent, after asking the user) or "human" (a signed-in person on the approval page or dashboard, or the terminal prompt on this database; switching back to "any" only at a terminal)',
    )
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (channel: string, flags: KeyFlags) => {
      if (channel !== 'any' && channel !== 'human') {
        io.err(`✗ the confirmation channel is "any" or "human" (got "${channel}")`);
        setExit(2);
        return;
      }
      setExit(
        await confirmAndRun(
          program,
          io,
          'tenant.confirmation_channel_set',
          { confirmation_channel: channel },
          flags,
        ),
      );
    });

  tenant
    .command('phrase-channel <channel>')
    .description(
      'Where a typed phrase counts: "human" (default: a signed-in person on the approval page or dashboard, or the terminal prompt on this database) or "any" (agents too; only at a terminal)',
    )
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (channel: string, flags: KeyFlags) => {
      if (channel !== 'any' && channel !== 'human') {
        io.err(`✗ the phrase channel is "any" or "human" (got "${channel}")`);
        setExit(2);
        return;
      }
      setExit(
        await confirmAndRun(program, io, 'tenant.phrase_channel_set', { phrase_channel: channel }, flags),
      );
    });

  const caps = tenant
    .command('caps')
    .description("Daily caps per consent class (reset at the business's midnight, its time zone)");
  caps
    .command('set')
    .description('Set the daily cap of a consent class')
    .requiredOption('--class <class>', CAPPED_CLASSES.join(' | '))
    .requiredOption('--limit <n>', 'writes per UTC day (0 allows none), or "default"')
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (flags: KeyFlags & { class: string; limit: string }) => {
      let limit: number | null;
      if (flags.limit === 'default') limit = null;
      else if (/^\d{1,7}$/.test(flags.limit)) limit = Number(flags.limit);
      else {
        io.err(`✗ --limit must be a whole number from 0 to 1000000, or "default" (got "${flags.limit}")`);
        setExit(2);
        return;
      }
      setExit(
        await confirmAndRun(program, io, 'tenant.caps_set', { consent_class: flags.class, limit }, flags),
      );
    });

  const blocklist = tenant
    .command('blocklist')
    .description('Verb names refused for this tenant (beside the built-in four)');
  blocklist
    .command('add <name>')
    .description('Block a verb name (registered or not; case and . _ - separators ignored)')
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (name: string, flags: KeyFlags) => {
      setExit(await confirmAndRun(program, io, 'tenant.blocklist_add', { name }, flags));
    });
  blocklist
    .command('remove <name>')
    .description('Unblock a name this tenant added (the built-in four stay blocked)')
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (name: string, flags: KeyFlags) => {
      setExit(await confirmAndRun(program, io, 'tenant.blocklist_remove', { name }, flags));
    });
}
