/**
 * `solid api-keys list|create|revoke`: a tenant's API keys (the credentials agents and people
 * dispatch with). Owner operations on the local database: each change writes an operator audit row
 * in the same transaction. The plaintext key is printed once at creation; only its SHA-256 is
 * stored. A revoked key stops working on every node within the tenants cache TTL (5 s).
 *
 * Spec: spec/transports.md §auth, §cli.
 */
import type { Command } from 'commander';
import { insertApiKey, type ApiKeyInfo } from '../../../runtime/tenants.ts';
import { VerbError } from '../../../runtime/errors.ts';
import { ROLES, type CredentialScope, type Role } from '../../../spec/types.ts';
import { MAX_KEY_LIFETIME_SECONDS } from '../../../verbs/api-keys.ts';
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
  readOnly?: boolean;
  verbs?: string;
  toolsets?: string;
  expiresIn?: string;
}

/** "30d", "12h", "90m", "3600s" (or bare seconds) → seconds; undefined when not a duration. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d{1,9})([smhd]?)$/.exec(text.trim());
  if (m === null) return undefined;
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
  return Number(m[1]) * unit;
}

/** "a, b" → ["a", "b"] (trimmed, no empties, de-duplicated). */
function listOf(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  return [
    ...new Set(
      text
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== ''),
    ),
  ];
}

/** ", read-only, verbs a,b, expires 2027-01-06T…" for a limited key; "" otherwise. */
function limitsOf(k: ApiKeyInfo): string {
  const parts: string[] = [];
  if (k.scope?.read_only === true) parts.push('read-only');
  if (k.scope?.verbs !== undefined) parts.push(`verbs ${k.scope.verbs.join(',')}`);
  if (k.scope?.toolsets !== undefined) parts.push(`toolsets ${k.scope.toolsets.join(',')}`);
  if (k.expires_at !== null) parts.push(`expires ${k.expires_at}`);
  return parts.length === 0 ? '' : `, ${parts.join(', ')}`;
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
                `${k.role}${limitsOf(k)}`,
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
    .option('--read-only', 'the key may call no write verb')
    .option('--verbs <names>', 'allow-list: only these verbs (comma-separated)')
    .option('--toolsets <names>', 'allow-list: only the verbs of these toolsets (comma-separated)')
    .option('--expires-in <duration>', 'refused after this long: 30d, 12h, 90m (at most 10 years)')
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
      const expiresIn = flags.expiresIn === undefined ? undefined : parseDuration(flags.expiresIn);
      if (
        flags.expiresIn !== undefined &&
        (expiresIn === undefined || expiresIn < 60 || expiresIn > MAX_KEY_LIFETIME_SECONDS)
      ) {
        io.err(
          `✗ invalid_args: --expires-in must be a duration such as 30d, 12h or 90m, between 1 minute and 10 years, not "${flags.expiresIn}".`,
        );
        return setExit(2);
      }
      const verbs = listOf(flags.verbs);
      const toolsets = listOf(flags.toolsets);
      const local = await openLocal(localOptionsOf(program));
      try {
        const reg = local.rt.registry;
        const unknownVerb = verbs?.find((n) => reg.get(n)?.name !== n);
        const categories = new Set(reg.all().map((v) => v.category));
        const unknownSet = toolsets?.find((t) => !categories.has(t));
        if (unknownVerb !== undefined || unknownSet !== undefined) {
          io.err(
            unknownVerb !== undefined
              ? `✗ invalid_args: --verbs: no verb named "${unknownVerb}" (see solid verbs list).`
              : `✗ invalid_args: --toolsets: no toolset named "${unknownSet}"; toolsets: ${[...categories].sort().join(', ')}.`,
          );
          return setExit(2);
        }
        const companyId = await tenantOfFlags(local.rt, flags.tenant);
        const now = local.rt.clock();
        const scope: CredentialScope = {
          ...(verbs !== undefined ? { verbs } : {}),
          ...(toolsets !== undefined ? { toolsets } : {}),
          ...(flags.readOnly === true ? { read_only: true } : {}),
          ...(expiresIn !== undefined
            ? { expires_at: new Date(now.getTime() + expiresIn * 1000).toISOString() }
            : {}),
        };
        const { apiKey, info } = await local.rt.store.write(async (tx) => {
          const made = await insertApiKey(
            tx,
            {
              company_id: companyId,
              user_id: userId,
              role: flags.role as Role,
              agent_type: flags.agentType,
              name: flags.name,
              scope,
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
              scope: made.info.scope,
              expires_at: made.info.expires_at,
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
            `✓ created key ${info.key_id} for user ${userId} (${info.role}${limitsOf(info)}) in tenant ${companyId}\n  shown once, store it now:\n  ${apiKey}`,
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
