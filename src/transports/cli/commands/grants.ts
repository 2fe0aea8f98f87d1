/**
 * `solid grants list|revoke`: the OAuth grants of a tenant (spec/oauth.md §grants) — which human
 * let which connector act, up to which role, read-only or not, until when. Operator commands on
 * the local database; `revoke` deletes the grant's tokens and codes in the same transaction and
 * writes its `oauth.revoke` audit row (the actor: the operator). Revocation takes effect at the
 * next request on every node of the database (tokens are checked against the store at each use).
 */
import type { Command } from 'commander';
import { VerbError } from '../../../runtime/errors.ts';
import { oauthMigrations } from '../../../oauth/migrations.ts';
import { grantLive, listGrants, revokeAndAudit } from '../../../oauth/grants.ts';

import { tenantOfFlags } from './keys.ts';
import { localOptionsOf, openLocal } from '../local.ts';
import { table, type Io } from '../output.ts';

interface Flags {
  tenant?: string;
  json?: boolean;
  all?: boolean;
}

/** Register `solid grants`. */
export function registerGrants(program: Command, io: Io, _setExit: (code: number) => void): void {
  const cmd = program
    .command('grants')
    .description('OAuth grants (hosted connectors such as Claude.ai or ChatGPT): list, revoke');

  cmd
    .command('list')
    .description('List the tenant’s OAuth grants (live ones; --all for revoked and expired too)')
    .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
    .option('--all', 'include revoked and expired grants')
    .option('--json', 'print JSON')
    .action(async (flags: Flags) => {
      const local = await openLocal(localOptionsOf(program));
      try {
        await local.rt.store.migrate('oauth', oauthMigrations);
        const companyId = await tenantOfFlags(local.rt, flags.tenant);
        const now = local.rt.clock();
        const grants = (await local.rt.store.read((q) => listGrants(q, companyId))).filter(
          (g) => flags.all === true || grantLive(g, now),
        );
        if (flags.json) io.out(JSON.stringify(grants, null, 2));
        else if (grants.length === 0)
          io.out('No OAuth grants. A connector gets one when a signed-in person allows it.');
        else
          io.out(
            table(
              ['GRANT', 'CLIENT', 'BY', 'ROLE', 'READ-ONLY', 'REACH', 'EXPIRES', 'STATE'],
              grants.map((g) => [
                g.grant_id,
                g.client_name,
                `${g.user_name} (user ${g.user_id})`,
                g.role,
                g.read_only ? 'yes' : 'no',
                g.scope === null
                  ? 'all'
                  : [...(g.scope.toolsets ?? []), ...(g.scope.verbs ?? [])].join(', ') || '(core only)',
                g.expires_at,
                g.revoked_at !== null ? `revoked ${g.revoked_at}` : grantLive(g, now) ? 'live' : 'expired',
              ]),
            ),
          );
      } finally {
        await local.close();
      }
    });

  cmd
    .command('revoke <grant_id>')
    .description('Revoke a grant: its tokens stop working at their next use, on every node')
    .option('--tenant <company_id>', 'tenant (default: the first non-sandbox tenant)')
    .option('--json', 'print JSON')
    .action(async (grantId: string, flags: Flags) => {
      const local = await openLocal(localOptionsOf(program));
      try {
        await local.rt.store.migrate('oauth', oauthMigrations);
        const companyId = await tenantOfFlags(local.rt, flags.tenant);
        const g = await revokeAndAudit(local.rt, companyId, grantId, undefined, 'cli:operator');
        if (g === undefined)
          throw new VerbError('not_found', `No grant ${grantId.slice(0, 80)} in tenant ${companyId}.`, {
            hint: 'List the grants with `solid grants list --all`.',
          });
        if (flags.json) io.out(JSON.stringify(g, null, 2));
        else io.out(`✓ revoked grant ${g.grant_id} (${g.client_name}, by ${g.user_name}) at ${g.revoked_at}`);
      } finally {
        await local.close();
      }
    });
}
