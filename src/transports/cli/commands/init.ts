/**
 * `solid init`: create a database (migrations, keyfile with the nonce secret and master key, mode
 * 0600), a sandbox tenant (company 1, keyless reads) and your tenant with an owner API key printed
 * once. Spec: spec/transports.md §cli.
 */
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import type { Tier } from '../../../spec/types.ts';
import { TIERS } from '../../../spec/types.ts';
import { databaseUrlOf, dbPathOf, localOptionsOf, openLocal, keyfileOf } from '../local.ts';
import type { Io } from '../output.ts';

export function registerInit(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('init')
    .description(
      'Create a solid database with a sandbox tenant and your tenant; prints an owner API key once',
    )
    .option('--name <name>', 'your tenant name', 'My Company')
    .option('--tier <tier>', `subscription tier (${TIERS.join(', ')})`, 'starter')
    .option('--json', 'print machine-readable JSON')
    .action(async (opts: { name: string; tier: string; json?: boolean }) => {
      const g = program.opts<{ db?: string }>();
      const dbPath = dbPathOf(g.db);
      if (!(TIERS as readonly string[]).includes(opts.tier)) {
        io.err(`✗ --tier must be one of ${TIERS.join(', ')}`);
        setExit(2);
        return;
      }
      const existed = databaseUrlOf(g.db) !== undefined || existsSync(dbPath); // PostgreSQL: the database exists; check its tenants
      const local = await openLocal({ ...localOptionsOf(program), create: true });
      try {
        const count = await local.rt.store.read((q) =>
          q.get<{ n: number }>('SELECT COUNT(*) AS n FROM tenants'),
        );
        if (existed && Number(count?.n ?? 0) > 0) {
          io.err(
            `✗ ${dbPath} is already initialised (${count!.n} tenants). Use \`solid api-keys create\` for another key.`,
          );
          setExit(6);
          return;
        }
        await local.rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
        const t = await local.rt.createTenant({ name: opts.name, tier: opts.tier as Tier });
        const key = await local.rt.createApiKey({
          company_id: t.company_id,
          user_id: 1,
          role: 'owner',
          agent_type: 'cli',
          name: 'owner (solid init)',
        });
        if (opts.json) {
          io.out(
            JSON.stringify(
              { db: dbPath, keyfile: keyfileOf(dbPath), company_id: t.company_id, owner_api_key: key },
              null,
              2,
            ),
          );
        } else {
          io.out(
            [
              `✓ created ${dbPath}`,
              `  secrets: ${keyfileOf(dbPath)} (mode 0600; or set SOLID_NONCE_SECRET and SOLID_MASTER_KEY)`,
              `  tenant ${t.company_id} "${t.name}" (${t.tier}) and a sandbox tenant (1) for keyless reads`,
              ``,
              `  owner API key (shown once, store it now):`,
              `  ${key}`,
              ``,
              `  export SOLID_API_KEY=${key}`,
            ].join('\n'),
          );
        }
      } finally {
        await local.close();
      }
    });
}
