/**
 * Several `solid serve` nodes start on one fresh PostgreSQL database at once, and each makes
 * the tenant's owner user before printing its enrolment link (identity/users.ts
 * ensureOwnerUser). They must all end with the one owner, never a unique-key failure at start-up
 * (CI, session 39: "duplicate key value violates unique constraint users_pkey").
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestPostgresStore, PG_SKIP_REASON, TEST_DATABASE_URL } from '../support/postgres.ts';
import { runtimeMigrations } from '../../src/store/migrations/runtime.ts';
import { insertTenant } from '../../src/runtime/tenants.ts';
import { ensureOwnerUser } from '../../src/identity/users.ts';

describe(
  'the owner user on several nodes at once',
  { skip: TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false },
  () => {
    it('four nodes making the owner of twenty fresh tenants at once agree on one owner each', async (t) => {
      const first = createTestPostgresStore(t);
      const others = [1, 2, 3].map(() => createTestPostgresStore(t, { schema: first.schema, keep: true }));
      t.after(() => Promise.all(others.map((o) => o.close())));
      const stores = [first, ...others];
      await first.migrate('runtime', runtimeMigrations);
      const now = new Date('2026-12-07T12:00:00Z');
      for (let company = 100; company < 120; company++) {
        await first.write((tx) =>
          insertTenant(tx, { company_id: company, name: `T${company}`, tier: 'professional' }, now),
        );
        if (company % 2 === 0)
          await first.write((tx) =>
            tx.run(
              `INSERT INTO api_keys (key_id, company_id, user_id, role, secret_hash, created_at)
             VALUES (?, ?, 7, 'owner', ?, ?)`,
              [`k${company}`, company, `h${company}`, now.toISOString()],
            ),
          );
        const owners = await Promise.all(
          stores.map((s) => s.write((tx) => ensureOwnerUser(tx, company, now))),
        );
        const ids = new Set(owners.map((o) => o.user_id));
        assert.equal(ids.size, 1, `company ${company}: every node names the same owner`);
        if (company % 2 === 0) assert.equal(owners[0]!.user_id, 7, 'the owner API key names the owner user');
        const rows = await first.read((q) =>
          q.all<{ n: number }>(
            `SELECT COUNT(*)::int AS n FROM users WHERE company_id = ? AND role = 'owner'`,
            [company],
          ),
        );
        assert.equal(rows[0]!.n, 1, 'one owner row');
      }
    });
  },
);
