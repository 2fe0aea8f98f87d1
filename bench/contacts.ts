/**
 * The contacts fixture the core, read-cost, HTTP and MCP benchmarks share: a `contacts` table
 * with 200 rows for a bench tenant (company 2, enterprise; a sandbox is company 1), an owner key,
 * and the verb `bench.search` — the contact search every one of those modules compares with the
 * same query run bare (`searchWork`). The verb is defined with the built package (dist/).
 */
import type { Runtime } from '../src/runtime/runtime.ts';
import type { Queryable } from '../src/store/store.ts';
import { fromDist, type Solid } from './harness.ts';

const { defineVerb } = await fromDist<Solid>('index.js');

export const SEARCH_SQL = `SELECT id, name, email FROM contacts WHERE company_id = ? AND lower(name) LIKE lower(?) ORDER BY name LIMIT 20`;

/** The search's work: the handler of `bench.search`, and the bare baseline on a read snapshot. */
export async function searchWork(q: Queryable, companyId: number, term: string) {
  const rows = await q.all(SEARCH_SQL, [companyId, `%${term}%`]);
  return { entity_id: companyId, data: { matches: rows.length, contacts: rows } };
}

/**
 * Create the table, the two tenants (the bench tenant with `settings`), 200 contacts, register
 * `bench.search` on `rt` and return an owner API key of the bench tenant.
 */
export async function seedContactsBench(rt: Runtime, settings?: Record<string, unknown>): Promise<string> {
  await rt.store.migrate('bench', [
    {
      version: 1,
      name: 'contacts',
      sqlite:
        'CREATE TABLE contacts (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, name TEXT, email TEXT, phone TEXT); CREATE INDEX contacts_company ON contacts(company_id, name);',
    },
  ]);
  await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
  await rt.createTenant({
    company_id: 2,
    name: 'Bench',
    tier: 'enterprise',
    ...(settings !== undefined ? { settings } : {}),
  });
  const key = await rt.createApiKey({ company_id: 2, user_id: 1, role: 'owner' });
  await rt.store.write(async (tx) => {
    for (let i = 1; i <= 200; i++)
      await tx.run('INSERT INTO contacts (id, company_id, name, email, phone) VALUES (?, 2, ?, ?, ?)', [
        i,
        `Contact ${i} ${['Smith', 'Jones', 'Garcia', 'Lee'][i % 4]}`,
        `c${i}@example.com`,
        '+1555000' + i,
      ]);
  });
  rt.register(
    defineVerb({
      name: 'bench.search',
      description: 'Search contacts.',
      shape: 'aggregate',
      category: 'crm',
      input: {
        type: 'object',
        properties: { q: { type: 'string' } },
        required: ['q'],
        additionalProperties: false,
      },
      handler: (ctx, a: { q: string }) => searchWork(ctx.db, ctx.principal.company_id, a.q),
    }),
  );
  return key;
}
