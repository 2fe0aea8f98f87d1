/**
 * `solid vault set|rotate|revoke|list`: the tenant's credentials for third-party APIs, sealed at
 * rest (src/runtime/vault/vault.ts, spec/vault.md).
 *
 *   solid vault set <name> [--tenant N]      the secret is read from stdin (piped) or typed at the
 *   solid vault rotate <name> [--tenant N]   hidden prompt; never from an argument or a variable
 *   solid vault revoke <name> [--tenant N]
 *   solid vault list [--tenant N] [--json]   names, versions, times, the last 4 characters at most
 *
 * Set, rotate and revoke are the **owner's** acts: once any user of the tenant signs in with a
 * credential, the person at the terminal types the one-time code of an enrolled owner's
 * authenticator app (identity's verifyTerminalUser, roles owner). No API key, OAuth token or
 * platform key is read here, and no verb or route does any of it: an agent's credential cannot
 * set, rotate, revoke or read a secret. The bootstrap (no user has a credential yet) is the one
 * exception, as for `solid users invite`: whoever holds the database is the operator.
 * Local database only (`--url` is refused). Each change is an audit row without the secret.
 */
import type { Command } from 'commander';
import { VerbError } from '../../../runtime/errors.ts';
import {
  checkVaultName,
  listVaultSecrets,
  revokeVaultSecret,
  rotateVaultSecret,
  setVaultSecret,
  type VaultActor,
  type VaultEntry,
} from '../../../runtime/vault/vault.ts';
import { anyCredential } from '../../../identity/users.ts';
import { verifyTerminalUser } from '../../../identity/terminal-human.ts';
import type { Runtime } from '../../../runtime/runtime.ts';
import { terminalOf, remoteUrlOf } from '../target.ts';
import { tenantOfFlags } from './keys.ts';
import { localOptionsOf, openLocal } from '../local.ts';
import { table, type Io } from '../output.ts';

interface Flags {
  tenant?: string;
  json?: boolean;
}

/** The owner at the terminal (their one-time code), or the operator while nobody has a credential. */
async function ownerOf(rt: Runtime, companyId: number, io: Io, purpose: string): Promise<VaultActor> {
  const bootstrap = await rt.store.read(async (q) => !(await anyCredential(q, companyId)));
  if (bootstrap) return undefined;
  const user = await verifyTerminalUser(rt, companyId, terminalOf(io), purpose, ['owner']);
  return { user_id: user.user_id, role: user.role, agent_type: 'human:operator_terminal' };
}

/** One line of secret from stdin: the hidden prompt on a terminal, the piped line otherwise. */
async function readSecret(io: Io, name: string): Promise<string> {
  const ask = io.promptSecret ?? io.prompt;
  if (ask === undefined)
    throw new VerbError('invalid_args', 'The secret is read from stdin, and there is none here.', {
      hint: `Pipe it: \`printf %s "$KEY" | solid vault set ${name}\`.`,
    });
  return (await ask(`Secret for ${name} (not echoed): `)).replace(/\r?\n$/, '');
}

function describe(e: VaultEntry): string {
  return `${e.name} v${e.version}${e.hint !== '' ? ` (…${e.hint})` : ''}`;
}

export function registerVault(program: Command, io: Io, _setExit: (code: number) => void): void {
  const cmd = program
    .command('vault')
    .description("The tenant's credentials for third-party APIs, sealed at rest (owner only)");

  const local = async <T>(flags: Flags, fn: (rt: Runtime, companyId: number) => Promise<T>): Promise<T> => {
    if (remoteUrlOf(program) !== undefined)
      throw new VerbError('invalid_request', '`solid vault` works on the local database only.', {
        hint: 'Run it on the machine holding the database (no --url / SOLID_API_URL).',
      });
    const opened = await openLocal(localOptionsOf(program));
    try {
      return await fn(opened.rt, await tenantOfFlags(opened.rt, flags.tenant));
    } finally {
      await opened.close();
    }
  };

  for (const [verb, doc] of [
    ['set', 'Store a new secret (read from stdin or the hidden prompt, never an argument)'],
    ['rotate', 'Replace a live secret with a new one (read like set)'],
  ] as const) {
    cmd
      .command(`${verb} <name>`)
      .description(doc)
      .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
      .option('--json', 'print JSON (the listing entry, never the secret)')
      .action(async (name: string, flags: Flags) => {
        // A bad name is refused before anyone is asked for a code or a secret.
        checkVaultName(name);
        await local(flags, async (rt, companyId) => {
          const actor = await ownerOf(rt, companyId, io, `vault.${verb}`);
          const secret = await readSecret(io, name);
          const change = { company_id: companyId, name, secret, actor, now: rt.clock() };
          const entry = await rt.store.write((tx) =>
            verb === 'set'
              ? setVaultSecret(tx, rt.secrets, change)
              : rotateVaultSecret(tx, rt.secrets, change),
          );
          io.out(
            flags.json
              ? JSON.stringify(entry, null, 2)
              : `✓ ${verb === 'set' ? 'stored' : 'rotated'} ${describe(entry)}`,
          );
        });
      });
  }

  cmd
    .command('revoke <name>')
    .description('Erase a secret: connectors reading it are refused from now on')
    .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
    .option('--json', 'print JSON')
    .action(async (name: string, flags: Flags) => {
      checkVaultName(name);
      await local(flags, async (rt, companyId) => {
        const actor = await ownerOf(rt, companyId, io, 'vault.revoke');
        const entry = await rt.store.write((tx) =>
          revokeVaultSecret(tx, { company_id: companyId, name, actor, now: rt.clock() }),
        );
        io.out(flags.json ? JSON.stringify(entry, null, 2) : `✓ revoked ${entry.name}`);
      });
    });

  cmd
    .command('list')
    .description('List the secrets: name, version, times, the last 4 characters at most')
    .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
    .option('--json', 'print JSON')
    .action(async (flags: Flags) => {
      await local(flags, async (rt, companyId) => {
        const all = await rt.store.read((q) => listVaultSecrets(q, companyId));
        if (flags.json) io.out(JSON.stringify(all, null, 2));
        else if (all.length === 0) io.out('The vault is empty.');
        else
          io.out(
            table(
              ['NAME', 'VERSION', 'LAST 4', 'CREATED', 'ROTATED', 'REVOKED'],
              all.map((e) => [
                e.name,
                String(e.version),
                e.hint === '' ? '-' : e.hint,
                e.created_at,
                e.rotated_at ?? '-',
                e.revoked_at ?? '-',
              ]),
            ),
          );
      });
    });
}
