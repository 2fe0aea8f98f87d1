/**
 * `solid users invite|list|disable|link`: the people of a tenant who sign in as humans (passkey or
 * TOTP) to the dashboard and the approval page. Operator commands on the local database: each
 * change writes its audit row in the same transaction. `invite` and `link` print a one-time
 * enrolment link (`<public url>/enrol/<token>`, valid 24 h, single use); the token is shown once
 * and stored hashed. No API key is involved. An agent holding the database file must still not
 * mint a person who approves for it: a link for a user who already has a credential, or an invite
 * or link at owner/admin, needs the one-time code of an enrolled owner or admin typed at this
 * terminal (identity's assertMayMintHuman); the bootstrap (no user of the tenant has a credential
 * yet: the owner's first link of `solid init` / `npm start`) needs none. spec/consent.md §phrase-channel (its threat model)
 *
 * The link's base: `--public-url`, else SOLID_PUBLIC_URL, else `http://localhost:<PORT or 4400>`
 * (WebAuthn refuses an IP address as the relying party, so never 127.0.0.1).
 * Spec: spec/consent.md §human-sign-in.
 */
import type { Command } from 'commander';
import { VerbError } from '../../../runtime/errors.ts';
import { ROLES, type Role } from '../../../spec/types.ts';
import { enrolmentUrl } from '../../../identity/enrolment.ts';
import { disableUser, inviteUser, newEnrolmentLink } from '../../../identity/invite.ts';
import { cleanUserName, getUser, isRole, listUsers, type User } from '../../../identity/users.ts';
import { assertMayMintHuman } from '../../../identity/terminal-human.ts';
import type { Inviter } from '../../../identity/invite.ts';
import { terminalOf } from '../target.ts';
import { tenantOfFlags } from './keys.ts';
import { localOptionsOf, openLocal, publicUrlOf } from '../local.ts';
import { table, type Io } from '../output.ts';

interface Flags {
  tenant?: string;
  json?: boolean;
  name?: string;
  role?: string;
  publicUrl?: string;
}

/** The base of printed links (see the header). @throws VerbError invalid_request for a bad URL. */
export function linkBaseOf(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return publicUrlOf(flag) ?? publicUrlOf(env.SOLID_PUBLIC_URL) ?? `http://localhost:${env.PORT ?? '4400'}`;
}

/** The audit's inviter: the person verified at the terminal, else the operator (undefined). */
function inviterOf(by: User | undefined): Inviter {
  return by === undefined
    ? undefined
    : { user_id: by.user_id, role: by.role, agent_type: 'human:operator_terminal' };
}

function userIdOf(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new VerbError('invalid_args', `The user id must be a positive integer, not "${value}".`, {
      hint: 'List users with `solid users list`.',
    });
  return n;
}

export function registerUsers(program: Command, io: Io, _setExit: (code: number) => void): void {
  const cmd = program
    .command('users')
    .description('The people of a tenant who sign in (passkey or TOTP): invite, list, disable, link');

  cmd
    .command('invite')
    .description('Add a person and print their one-time enrolment link (valid 24 h)')
    .requiredOption('--name <name>', 'their name, as receipts and the dashboard show it')
    .requiredOption('--role <role>', `their role (${ROLES.join(', ')})`)
    .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
    .option(
      '--public-url <url>',
      'base of the printed link (default SOLID_PUBLIC_URL or http://localhost:4400)',
    )
    .option('--json', 'print JSON')
    .action(async (flags: Flags) => {
      const name = cleanUserName(flags.name);
      if (name === undefined)
        throw new VerbError('invalid_args', '--name must be 1-100 characters with no control characters.');
      if (!isRole(flags.role))
        throw new VerbError('invalid_args', `--role must be one of ${ROLES.join(', ')}.`);
      const base = linkBaseOf(flags.publicUrl);
      const local = await openLocal(localOptionsOf(program));
      try {
        const companyId = await tenantOfFlags(local.rt, flags.tenant);
        // A new owner or admin is a person who approves: a person at this terminal must vouch.
        const by = await assertMayMintHuman(
          local.rt,
          companyId,
          { role: flags.role as Role },
          terminalOf(io),
          'users.invite',
        );
        const { user, link } = await inviteUser(
          local.rt.store,
          { company_id: companyId, name, role: flags.role as Role },
          inviterOf(by),
          local.rt.clock(),
        );
        const url = enrolmentUrl(base, link.token);
        if (flags.json)
          io.out(JSON.stringify({ ...user, enrolment_url: url, expires_at: link.expires_at }, null, 2));
        else
          io.out(
            [
              `✓ invited ${user.name} (user ${user.user_id}, ${user.role}) to tenant ${companyId}`,
              `  enrolment link (one use, until ${link.expires_at}; send it to them only):`,
              `  ${url}`,
              `  They open it and register a passkey (or an authenticator app); then they sign in at ${base}/`,
            ].join('\n'),
          );
      } finally {
        await local.close();
      }
    });

  cmd
    .command('link <user_id>')
    .description('Print a fresh one-time enrolment link for a user (a new device, a lost one)')
    .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
    .option(
      '--public-url <url>',
      'base of the printed link (default SOLID_PUBLIC_URL or http://localhost:4400)',
    )
    .option('--json', 'print JSON')
    .action(async (userIdText: string, flags: Flags) => {
      const userId = userIdOf(userIdText);
      const base = linkBaseOf(flags.publicUrl);
      const local = await openLocal(localOptionsOf(program));
      try {
        const companyId = await tenantOfFlags(local.rt, flags.tenant);
        const target = await local.rt.store.read((q) => getUser(q, companyId, userId));
        // A link for someone who already signs in (or for an owner/admin) is a way in as them: a
        // person at this terminal must vouch, except the bootstrap (terminal-human.ts).
        const by =
          target === undefined
            ? undefined
            : await assertMayMintHuman(
                local.rt,
                companyId,
                { role: target.role, user_id: userId },
                terminalOf(io),
                'users.enrolment_link',
              );
        const made = await newEnrolmentLink(
          local.rt.store,
          companyId,
          userId,
          inviterOf(by),
          local.rt.clock(),
        );
        if (made === undefined)
          throw new VerbError('not_found', `No enabled user ${userId} in tenant ${companyId}.`, {
            hint: 'List users with `solid users list`; invite with `solid users invite`.',
          });
        const url = enrolmentUrl(base, made.link.token);
        if (flags.json)
          io.out(JSON.stringify({ enrolment_url: url, expires_at: made.link.expires_at }, null, 2));
        else
          io.out(
            `✓ enrolment link for ${made.user.name} (user ${userId}), one use until ${made.link.expires_at}:\n  ${url}`,
          );
      } finally {
        await local.close();
      }
    });

  cmd
    .command('list')
    .description('List the people of a tenant and how they sign in')
    .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
    .option('--json', 'print JSON')
    .action(async (flags: Flags) => {
      const local = await openLocal(localOptionsOf(program));
      try {
        const companyId = await tenantOfFlags(local.rt, flags.tenant);
        const users = await local.rt.store.read((q) => listUsers(q, companyId));
        if (flags.json) io.out(JSON.stringify(users, null, 2));
        else
          io.out(
            table(
              ['USER', 'NAME', 'ROLE', 'STATUS', 'PASSKEYS', 'TOTP', 'CREATED'],
              users.map((u) => [
                String(u.user_id),
                u.name,
                u.role,
                u.status,
                String(u.passkeys),
                u.totp ? 'yes' : 'no',
                u.created_at,
              ]),
            ),
          );
      } finally {
        await local.close();
      }
    });

  cmd
    .command('disable <user_id>')
    .description('Disable a person: no sign-in from now on (their API keys are revoked apart)')
    .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
    .action(async (userIdText: string, flags: Flags) => {
      const userId = userIdOf(userIdText);
      const local = await openLocal(localOptionsOf(program));
      try {
        const companyId = await tenantOfFlags(local.rt, flags.tenant);
        const done = await disableUser(local.rt.store, companyId, userId, undefined, local.rt.clock());
        if (!done)
          throw new VerbError('not_found', `No enabled user ${userId} in tenant ${companyId}.`, {
            hint: 'List users with `solid users list`.',
          });
        io.out(`✓ disabled user ${userId}: they can no longer sign in`);
      } finally {
        await local.close();
      }
    });
}
