/**
 * Revocation across nodes: two runtimes on one database (two `solid serve` nodes). A grant revoked
 * on one node is refused on the other at its very next request — tokens are checked against the
 * store at each use, no cache (spec/oauth.md §grants: bound 0 s). Runs on SQLite and, under
 * `npm run test:postgres`, on PostgreSQL.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { createRuntime } from '../../src/runtime/runtime.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { isVerbError } from '../../src/runtime/errors.ts';
import { revokeAndAudit } from '../../src/oauth/grants.ts';
import { createTestRuntime, testEngine } from '../support/runtime.ts';
import { createTestPostgresStore } from '../support/postgres.ts';
import { mintTestToken, tokenPrincipal } from './mint.ts';

test('a grant revoked on one node is refused on the other at its next request', async (t) => {
  const a = await createTestRuntime(t);
  const store =
    testEngine() === 'postgres'
      ? createTestPostgresStore(t, { schema: (a.rt.store as PostgresStore).schema, keep: true })
      : new SqliteStore({ path: a.dbPath });
  // Nodes of one deployment share its secrets (the key file, or SOLID_NONCE_SECRET and SOLID_MASTER_KEY).
  const b = await createRuntime({
    store,
    logger: pino({ level: 'silent' }),
    sandboxCompanyId: 1,
    secrets: a.rt.secrets,
  });
  t.after(() => b.close());

  const token = await mintTestToken(a.rt, { company_id: a.companyId, user_id: 1, role: 'owner' });
  const p = await tokenPrincipal(b, token);
  assert.equal(p.actor, 'agent');
  assert.match(p.key_id ?? '', /^grant:/);

  const revoked = await revokeAndAudit(
    a.rt,
    a.companyId,
    p.key_id!.slice('grant:'.length),
    undefined,
    'cli:operator',
  );
  assert.ok(revoked?.revoked_at);
  await assert.rejects(tokenPrincipal(b, token), (e) => isVerbError(e) && e.reason === 'auth_invalid');
});
