/**
 * PlatformUsers: one user_id per UCP platform profile URL, recorded in the store on first sight
 * (spec/transports.md §ucp-dispatch). Existing platforms keep the deterministic id earlier
 * versions used; a URL whose hash lands on an id another URL holds (found by search, or by chance
 * among many platforms) gets a keyed fallback nobody can predict, so two platforms never share idempotency scope,
 * nonces, caps or reputation. Concurrent first sights — on one node or two PostgreSQL nodes —
 * agree on one id.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PlatformUsers } from '../../../src/transports/ucp/platform-users.ts';
import { Secrets } from '../../../src/runtime/secrets.ts';
import { platformUserId } from '../../../src/transports/ucp/verify-request.ts';
import { createTestRuntime } from '../../support/runtime.ts';
import { createTestPostgresStore, PG_SKIP_REASON, TEST_DATABASE_URL } from '../../support/postgres.ts';
import { createUcpHarness } from './harness.ts';

const A = 'https://agent-a.example/.well-known/ucp';
const B = 'https://agent-b.example/.well-known/ucp';

describe('PlatformUsers', () => {
  it('gives a platform the deterministic id on first sight and the same id afterwards, also after a restart', async (t) => {
    const h = await createTestRuntime(t);
    const users = new PlatformUsers(h.rt.store, h.rt.secrets);
    const a = await users.userIdOf(A);
    assert.equal(a, platformUserId(A), 'the id earlier versions used');
    assert.equal(await users.userIdOf(A), a);
    assert.equal(await new PlatformUsers(h.rt.store, h.rt.secrets).userIdOf(A), a, 'a restart reads it back');
    const b = await users.userIdOf(B);
    assert.notEqual(b, a);
    const rows = await h.rt.store.read((q) =>
      q.all<{ profile_url: string; user_id: number }>(
        'SELECT profile_url, user_id FROM ucp_platform_users ORDER BY profile_url',
      ),
    );
    assert.deepEqual(
      rows.map((r) => [r.profile_url, Number(r.user_id)]),
      [
        [A, a],
        [B, b],
      ],
    );
  });

  it('a URL whose id another URL already holds gets a free id of its own, never the other platform’s — also when the ids around it are squatted', async (t) => {
    const h = await createTestRuntime(t);
    const target = platformUserId(B);
    // Other platforms already hold B's id and the 63 after it (URLs found by searching the hash).
    await h.rt.store.write(async (tx) => {
      for (let i = 0; i < 64; i++) {
        await tx.run('INSERT INTO ucp_platform_users (profile_url, user_id, created_at) VALUES (?, ?, ?)', [
          `https://squatter-${i}.example/p`,
          target + i,
          '2026-01-01T00:00:00Z',
        ]);
      }
    });
    const b = await new PlatformUsers(h.rt.store, h.rt.secrets).userIdOf(B);
    assert.ok(b < target || b >= target + 64, `a keyed fallback id, not the next linear one (${b})`);
    assert.ok(b >= 1_000_000_000 && b < 2_000_000_000);
    const holders = await h.rt.store.read((q) =>
      q.all<{ profile_url: string }>('SELECT profile_url FROM ucp_platform_users WHERE user_id = ?', [b]),
    );
    assert.deepEqual(
      holders.map((r) => r.profile_url),
      [B],
      'nobody else holds it',
    );
    assert.equal(
      await new PlatformUsers(h.rt.store, h.rt.secrets).userIdOf('https://squatter-0.example/p'),
      target,
      'the holder keeps its id',
    );
    assert.equal(
      await new PlatformUsers(h.rt.store, h.rt.secrets).userIdOf(B),
      b,
      'recorded: the same id on every later call',
    );
  });

  it('concurrent first sights of one URL agree on one id and record one row', async (t) => {
    const h = await createTestRuntime(t);
    const instances = [
      new PlatformUsers(h.rt.store, h.rt.secrets),
      new PlatformUsers(h.rt.store, h.rt.secrets),
    ];
    const ids = await Promise.all(Array.from({ length: 16 }, (_, i) => instances[i % 2]!.userIdOf(A)));
    assert.equal(new Set(ids).size, 1);
    assert.equal(
      Number(
        (await h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM ucp_platform_users')))!
          .n,
      ),
      1,
    );
  });

  it('a signed capability call runs as the platform’s recorded user_id', async (t) => {
    const u = await createUcpHarness(t);
    const res = await u.call('com.example.sales.notes_count', {});
    assert.equal(res.status, 200, res.text);
    const mapped = await u.h.rt.store.read((q) =>
      q.all<{ profile_url: string; user_id: number }>('SELECT profile_url, user_id FROM ucp_platform_users'),
    );
    assert.equal(mapped.length, 1);
    assert.equal(mapped[0]!.profile_url, u.platform.url);
    await u.h.rt.auditBuffer.flush(); // the read's audit row is buffered
    const row = await u.h.rt.store.read((q) =>
      q.get<{ user_id: number }>(
        `SELECT user_id FROM audit_log WHERE agent_type LIKE 'ucp:%' ORDER BY audit_id DESC LIMIT 1`,
      ),
    );
    assert.equal(Number(row!.user_id), Number(mapped[0]!.user_id));
  });

  it(
    'two PostgreSQL nodes seeing the same new platforms at once agree on their ids',
    { skip: TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false },
    async (t) => {
      const a = createTestPostgresStore(t);
      await a.migrate(
        'runtime',
        (await import('../../../src/store/migrations/runtime.ts')).runtimeMigrations,
      );
      const b = createTestPostgresStore(t, { schema: a.schema });
      const secrets = Secrets.ephemeral();
      for (let round = 0; round < 5; round++) {
        const url = `https://race-${round}.example/ucp`;
        const ids = await Promise.all(
          Array.from({ length: 8 }, (_, i) => new PlatformUsers(i % 2 === 0 ? a : b, secrets).userIdOf(url)),
        );
        assert.equal(new Set(ids).size, 1, `round ${round}: ${JSON.stringify(ids)}`);
      }
      const rows = await a.read((q) => q.all<{ user_id: string }>('SELECT user_id FROM ucp_platform_users'));
      assert.equal(new Set(rows.map((r) => r.user_id)).size, 5);
    },
  );
});
