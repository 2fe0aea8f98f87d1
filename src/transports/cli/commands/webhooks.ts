/**
 * `solid webhooks add <url> [--events e1,e2] [--description D]`, `solid webhooks list`,
 * `solid webhooks remove <endpoint_id>`: a tenant's signed webhook endpoints (docs/webhooks.md).
 * Each is a dispatch of webhooks.add / webhooks.list / webhooks.remove with the caller's key
 * (--api-key or SOLID_API_KEY) on the local database or, with --url / SOLID_API_URL, a server:
 * owner only, audited, revertible with audit.revert.
 *
 * The writes are WRITE_REVERSIBLE: the human running the command is the confirmation, so the
 * command answers the dispatch_pending itself with its nonce (like `solid tenant caps set`). The
 * signing secret is printed once by `add` (to stdout; never logged).
 * Exit codes: 0 ok, 2 bad flags, else the reason's exit code (spec/reasons.md).
 */
import type { Command } from 'commander';
import type { Envelope } from '../../../spec/types.ts';
import {
  DEFAULT_WEBHOOK_EVENTS,
  WEBHOOK_EVENTS,
  type WebhookEndpointView,
} from '../../../runtime/ledger/write/webhook-endpoints.ts';
import { terminalOf, withTarget, type VerbTarget } from '../target.ts';
import { printEnvelope, table, type Io } from '../output.ts';

interface Flags {
  json?: boolean;
  apiKey?: string;
  events?: string;
  description?: string;
}

/**
 * A confirmation-gated write: the pending answer, then the call again with its nonce. At a
 * terminal (`human`) both go out as the person there, once they gave their authenticator code
 * (src/identity/terminal-human.ts): webhook endpoints are a human's choice (human_required).
 */
async function confirmed(
  target: VerbTarget,
  verb: string,
  args: Record<string, unknown>,
  human: boolean,
): Promise<Envelope> {
  const pending = await target.dispatch(verb, args, {}, { humanAtTerminal: human });
  if (pending.error?.reason !== 'dispatch_pending' || pending.consent?.nonce === undefined) return pending;
  return target.dispatch(
    verb,
    args,
    { confirm: true, nonce: pending.consent.nonce },
    { humanAtTerminal: human },
  );
}

export function registerWebhooks(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('webhooks')
    .description("A tenant's signed webhook endpoints (Standard Webhooks): add, list, remove (owner only)");

  cmd
    .command('list')
    .description('List the endpoints (never their secrets)')
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (flags: Flags) => {
      await withTarget(
        program,
        { apiKey: flags.apiKey, warn: io.err, terminal: terminalOf(io) },
        async (target) => {
          const env = await target.dispatch('webhooks.list', {});
          if (flags.json || !env.ok) {
            setExit(printEnvelope(io, env, Boolean(flags.json), target.reasons));
            return;
          }
          const eps = (env.result?.data as { endpoints: WebhookEndpointView[] }).endpoints;
          if (eps.length === 0) io.out('No webhook endpoints. Add one with `solid webhooks add https://…`.');
          else
            io.out(
              table(
                ['ENDPOINT', 'URL', 'EVENTS', 'CREATED', 'DESCRIPTION'],
                eps.map((e) => [e.endpoint_id, e.url, e.events.join(','), e.created_at, e.description ?? '']),
              ),
            );
          setExit(0);
        },
      );
    });

  cmd
    .command('add <url>')
    .description('Add an endpoint; its signing secret (whsec_…) is printed once')
    .option(
      '--events <list>',
      `comma-separated event types (default: ${DEFAULT_WEBHOOK_EVENTS.join(', ')}; audit.row streams every audit row)`,
    )
    .option('--description <text>', 'what the endpoint is')
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (url: string, flags: Flags) => {
      const events = flags.events
        ?.split(',')
        .map((e) => e.trim())
        .filter((e) => e !== '');
      const unknown = events?.filter((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e)) ?? [];
      if (unknown.length > 0) {
        io.err(
          `✗ invalid_args: unknown event type ${unknown.join(', ')}; choose from ${WEBHOOK_EVENTS.join(', ')}.`,
        );
        return setExit(2);
      }
      await withTarget(
        program,
        { apiKey: flags.apiKey, warn: io.err, terminal: terminalOf(io) },
        async (target) => {
          const env = await confirmed(
            target,
            'webhooks.add',
            {
              url,
              ...(events !== undefined ? { events } : {}),
              ...(flags.description !== undefined ? { description: flags.description } : {}),
            },
            io.isTTY,
          );
          if (flags.json || !env.ok) {
            setExit(printEnvelope(io, env, Boolean(flags.json), target.reasons));
            return;
          }
          const ep = (env.result as { endpoint: WebhookEndpointView }).endpoint;
          io.out(
            `✓ added ${ep.endpoint_id} → ${ep.url} (${ep.events.join(', ')})\n  signing secret, shown once, store it now:\n  ${String(env.secret?.secret ?? '')}\n  verify deliveries with a Standard Webhooks library (docs/webhooks.md)`,
          );
          setExit(0);
        },
      );
    });

  cmd
    .command('remove <endpoint_id>')
    .description('Remove an endpoint (audit.revert restores it)')
    .option('--json', 'print the envelope as JSON')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)')
    .action(async (endpointId: string, flags: Flags) => {
      await withTarget(
        program,
        { apiKey: flags.apiKey, warn: io.err, terminal: terminalOf(io) },
        async (target) => {
          const env = await confirmed(target, 'webhooks.remove', { endpoint_id: endpointId }, io.isTTY);
          if (flags.json || !env.ok) {
            setExit(printEnvelope(io, env, Boolean(flags.json), target.reasons));
            return;
          }
          io.out(`✓ removed ${endpointId}`);
          setExit(0);
        },
      );
    });
}
