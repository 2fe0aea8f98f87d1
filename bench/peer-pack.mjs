/**
 * The pack the peer benchmarks serve with `solid serve --pack bench/peer-pack.mjs` (bench/peers.ts,
 * bench/mcp.ts), built only on the public API of the BUILT package (dist/, `npm run build`), as a
 * team's own pack is: a contacts table and two verbs.
 *
 * - bench.search     aggregate, READ: contacts whose name contains `q` (SEARCH_SQL, 20 at most)
 * - bench.set_phone  receipt, WRITE_REVERSIBLE: a contact's phone (GET_SQL then UPDATE_SQL)
 *
 * The SQL is exported so the baselines (the SDK's McpServer, fastmcp; bench/peer-server.mjs) run
 * exactly the same statements on the same database file.
 */
import { definePack, defineVerb } from '../dist/index.js';

import { GET_SQL, SEARCH_SQL, TABLE, UPDATE_SQL } from './peer-sql.mjs';

export { COMPANY_ID, CONTACTS, GET_SQL, SEARCH_SQL, TABLE, UPDATE_SQL, contactRows } from './peer-sql.mjs';

const search = defineVerb({
  name: 'bench.search',
  description: 'Search contacts by name.',
  shape: 'aggregate',
  category: 'crm',
  idempotent: true,
  input: {
    type: 'object',
    properties: { q: { type: 'string' } },
    required: ['q'],
    additionalProperties: false,
  },
  async handler(ctx, a) {
    const rows = await ctx.db.all(SEARCH_SQL, [ctx.principal.company_id, `%${a.q}%`]);
    return { entity_id: ctx.principal.company_id, data: { matches: rows.length, contacts: rows } };
  },
});

const setPhone = defineVerb({
  name: 'bench.set_phone',
  description: "Set a contact's phone number.",
  shape: 'receipt',
  category: 'crm',
  consent: 'WRITE_REVERSIBLE',
  input: {
    type: 'object',
    properties: { id: { type: 'integer', minimum: 1 }, phone: { type: 'string', maxLength: 40 } },
    required: ['id', 'phone'],
    additionalProperties: false,
  },
  summary: (a) => `Set the phone of contact #${a.id} to ${a.phone}`,
  async handler(ctx, a) {
    const before = await ctx.db.get(GET_SQL, [ctx.principal.company_id, a.id]);
    await ctx.db.run(UPDATE_SQL, [a.phone, ctx.principal.company_id, a.id]);
    ctx.setRollback(`benchpeer:phone:${a.id}`, { previous: before?.phone ?? null });
    return { contact_id: a.id, previous_phone: before?.phone ?? null, phone: a.phone };
  },
});

const columns = '(id BIGINT PRIMARY KEY, company_id BIGINT NOT NULL, name TEXT, email TEXT, phone TEXT)';

export default definePack({
  name: 'benchpeer',
  description: 'Contacts for the peer benchmarks.',
  migrations: [
    {
      version: 1,
      name: 'contacts',
      sqlite: `CREATE TABLE ${TABLE} (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, name TEXT, email TEXT, phone TEXT); CREATE INDEX ${TABLE}_company ON ${TABLE}(company_id, name);`,
      postgres: `CREATE TABLE ${TABLE} ${columns}; CREATE INDEX ${TABLE}_company ON ${TABLE}(company_id, name);`,
    },
  ],
  verbs: [search, setPhone],
});
