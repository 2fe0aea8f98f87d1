/**
 * `solid api-keys list|create|revoke`: a tenant's API keys (the credentials agents and people
 * dispatch with). Owner operations on the local database: each change writes an operator audit row
 * in the same transaction. The plaintext key is printed once at creation; only its SHA-256 is
 * stored. A revoked key stops working on every node within the tenants cache TTL (5 s).
 *
 * Spec: spec/transports.md §auth, §cli.
 */
import type { Command } from 'commander';
import { insertApiKey } from '../../../runtime/tenants.ts';
import { VerbError } from '../../../runtime/errors.ts';
import { ROLES, type Role } from '../../../spec/types.ts';
import { appendOperatorAudit } from '../../../runtime/ledger/write/operator-audit.ts';
import { tenantOfFlags } from './keys.ts';
import { localOptionsOf, openLocal } from '../local.ts';
import { table, type Io } from '../output.ts';

interface Flags {
  tenant?: string;
  json?: boolean;
  user?: string;
  role?: string;
  name?: string;
  agentType?: string;
}

export function registerApiKeys(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('api-keys')
    .description("Manage a tenant's API keys (sk_solid_…): list, create, revoke");

  cmd
    .command('list')
    .description('List the API keys of a tenant (never the secrets)')
    .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
    .option('--json', 'print JSON')
    .action(async (flags: Flags) => {
      const local = await openLocal(localOptionsOf(program));
      try {
        const companyId = await tenantOfFlags(local.rt, flags.tenant);
        const keys = await local.rt.store.read((q) => local.rt.tenants.listKeys(q, companyId));
        if (flags.json) io.out(JSON.stringify(keys, null, 2));
        else
          io.out(
            table(
              ['KEY ID', 'USER', 'ROLE', 'AGENT', 'NAME', 'CREATED', 'REVOKED'],
              keys.map((k) => [
                k.key_id,
                String(k.user_id),
                k.role,
                k.agent_type,
                k.name,
                k.created_at,
                k.revoked_at ?? '',
              ]),
            ),
          );
      } finally {
        await local.close();
      }
    });

  cmd
    .command('create')
    .description('Create an API key for a user of the tenant; the key is printed once')
    .requiredOption('--user <user_id>', 'the user the key acts as')
    .requiredOption('--role <role>', `the key's role (${ROLES.join(', ')})`)
    .option('--name <name>', 'a label', '')
    .option('--agent-type <agent_type>', 'who uses it (cli, claude-desktop, …)', 'api')
    .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
    .option('--json', 'print JSON')
    .action(async (flags: Flags) => {
      const userId = Number(flags.user);
      if (!Number.isSafeInteger(userId) || userId < 0) {
        io.err(`✗ invalid_args: --user must be a non-negative integer, not "${flags.user}".`);
        return setExit(2);
      }
      if (!(ROLES as readonly string[]).includes(flags.role ?? '')) {
        io.err(`✗ invalid_args: --role must be one of ${ROLES.join(', ')}.`);
        return setExit(2);
      }
      const local = await openLocal(localOptionsOf(program));
      try {
        const companyId = await tenantOfFlags(local.rt, flags.tenant);
        const now = local.rt.clock();
        const { apiKey, info } = await local.rt.store.write(async (tx) => {
          const made = await insertApiKey(
            tx,
            {
              company_id: companyId,
              user_id: userId,
              role: flags.role as Role,
              agent_type: flags.agentType,
              name: flags.name,
            },
            now,
          );
          await appendOperatorAudit(tx, {
            company_id: companyId,
            action: 'api_keys.create',
            category: 'auth',
            request_data: {
              key_id: made.info.key_id,
              user_id: userId,
              role: flags.role,
              agent_type: flags.agentType,
              name: flags.name,
            },
            entity_type: 'api_key',
            entity_id: made.info.key_id,
            now,
          });
          return made;
        });
        if (flags.json) io.out(JSON.stringify({ ...info, api_key: apiKey }, null, 2));
        else
          io.out(
            `✓ created key ${info.key_id} for user ${userId} (${info.role}) in tenant ${companyId}\n  shown once, store it now:\n  ${apiKey}`,
          );
      } finally {
        await local.close();
      }
    });

  cmd
    .command('revoke <key_id>')
    .description('Revoke an API key (effective on every node within 5 s)')
    .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
    .action(async (keyId: string, flags: Flags) => {
      const local = await openLocal(localOptionsOf(program));
      try {
        const companyId = await tenantOfFlags(local.rt, flags.tenant);
        const now = local.rt.clock();
        const revoked = await local.rt.store.write(async (tx) => {
          const ok = await local.rt.tenants.revokeKey(tx, companyId, keyId, now);
          if (ok) {
            await appendOperatorAudit(tx, {
              company_id: companyId,
              action: 'api_keys.revoke',
              category: 'auth',
              request_data: { key_id: keyId },
              entity_type: 'api_key',
              entity_id: keyId,
              now,
            });
          }
          return ok;
        });
        if (!revoked)
          throw new VerbError('not_found', `No active API key ${keyId} in tenant ${companyId}.`, {
            hint: 'List keys with `solid api-keys list`.',
          });
        io.out(`✓ revoked ${keyId}`);
      } finally {
        await local.close();
      }
    });
}
