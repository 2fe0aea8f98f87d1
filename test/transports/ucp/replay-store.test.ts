/**
 * StoreReplayGuard, the UCP plugin's default replay guard: a verified request signature is
 * admitted once within its window across restarts (a new guard on the same store) and across
 * nodes (two PostgreSQL connections racing the same signature admit exactly one); rows past their
 * window are reclaimed and swept by maintenance (spec/transports.md §ucp-verify).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runMaintenance } from '../../../src/runtime/maintenance.ts';
import { StoreReplayGuard } from '../../../src/transports/ucp/replay-cache.ts';
import { createTestRuntime } from '../../support/runtime.ts';
import { createTestPostgresStore, PG_SKIP_REASON, TEST_DATABASE_URL } from '../../support/postgres.ts';
import { createUcpHarness } from './harness.ts';

const COUNT = 'com.example.sales.notes_count';

describe('StoreReplayGuard', () => {
  it('admits a signature once within its window, also after a restart, and again once the window ended', async (t) => {
    const h = await createTestRuntime(t);
    const now = 1_800_000_000;
    const first = new StoreReplayGuard(h.rt.store);
    assert.equal(await first.checkAndRecord('k1:sig-a', now + 300, now), true);
    assert.equal(
      await first.checkAndRecord('k1:sig-a', now + 300, now + 10),
      false,
      'a replay within the window',
    );
    assert.equal(await first.checkAndRecord('k1:sig-b', now + 300, now + 10), true, 'another signature');
    const restarted = new StoreReplayGuard(h.rt.store);
    assert.equal(
      await restarted.checkAndRecord('k1:sig-a', now + 300, now + 20),
      false,
      'a restart remembers',
    );
    assert.equal(
      await restarted.checkAndRecord('k1:sig-a', now + 700, now + 301),
      true,
      'past its window the id may be used again',
    );
    assert.equal(await restarted.checkAndRecord('k1:sig-a', now + 700, now + 302), false);
    assert.equal(
      await restarted.checkAndRecord('k1:old', now - 1, now),
      true,
      'already expired: nothing recorded',
    );
    const rows = async () =>
      Number(
        (await h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM signature_replays')))!
          .n,
      );
    assert.equal(await rows(), 2);
    const report = await runMaintenance(h.rt.store, new Date((now + 400) * 1000));
    assert.equal(
      report.signature_replays_deleted,
      1,
      'sig-b (window ended at now+300) is swept, sig-a (now+700) stays',
    );
    assert.equal(await rows(), 1);
  });

  it('checkAndRecordAll: the first signature decides; the others are recorded with it, nothing when it is a replay', async (t) => {
    const h = await createTestRuntime(t);
    const now = 1_800_000_000;
    const guard = new StoreReplayGuard(h.rt.store);
    const ids = async () =>
      (
        await h.rt.store.read((q) =>
          q.all<{ signature_id: string }>('SELECT signature_id FROM signature_replays ORDER BY signature_id'),
        )
      ).map((r) => r.signature_id);
    assert.equal(
      await guard.checkAndRecordAll(
        { id: 'a', expiresAtSeconds: now + 300 },
        [
          { id: 'b', expiresAtSeconds: now + 300 },
          { id: 'old', expiresAtSeconds: now - 5 },
        ],
        now,
      ),
      true,
    );
    assert.deepEqual(await ids(), ['a', 'b']);
    assert.equal(
      await guard.checkAndRecordAll(
        { id: 'a', expiresAtSeconds: now + 300 },
        [{ id: 'c', expiresAtSeconds: now + 300 }],
        now + 1,
      ),
      false,
    );
    assert.deepEqual(await ids(), ['a', 'b'], 'a replay records nothing');
    assert.equal(
      await guard.checkAndRecord('b', now + 300, now + 2),
      false,
      'a stripped label is a replay too',
    );
  });

  it('is the UCP plugin default: a replayed request is refused and its signature is in the store', async (t) => {
    const u = await createUcpHarness(t);
    let captured: { headers: Record<string, string>; body: Buffer | undefined } | undefined;
    const first = await u.call(
      COUNT,
      {},
      { tamper: (s) => (captured = { headers: { ...s.headers }, body: s.body }) },
    );
    assert.equal(first.status, 200);
    const stored = Number(
      (await u.h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM signature_replays')))!
        .n,
    );
    assert.equal(stored, 1);
    const replay = await fetch(first.url, {
      method: 'POST',
      headers: captured!.headers,
      body: new Uint8Array(captured!.body!),
    });
    assert.equal(replay.status, 401);
    assert.equal(((await replay.json()) as { code: string }).code, 'signature_replayed');
  });

  it(
    'two nodes racing the same signature on PostgreSQL admit exactly one',
    { skip: TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false },
    async (t) => {
      const a = createTestPostgresStore(t);
      await a.migrate(
        'runtime',
        (await import('../../../src/store/migrations/runtime.ts')).runtimeMigrations,
      );
      const b = createTestPostgresStore(t, { schema: a.schema });
      const guards = [new StoreReplayGuard(a), new StoreReplayGuard(b)];
      const now = Math.floor(Date.now() / 1000);
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            guards[i % 2]!.checkAndRecord(`k:race-${round}`, now + 300, now),
          ),
        );
        assert.equal(answers.filter(Boolean).length, 1, `round ${round}: ${JSON.stringify(answers)}`);
      }
      // Two messages carrying the same two signatures in opposite label order (rows written in id
      // order, so no lock cycle): each signature is admitted once.
      for (let round = 0; round < 10; round++) {
        const [x, y] = [`k:x-${round}`, `k:y-${round}`];
        const answers = await Promise.all([
          guards[0]!.checkAndRecordAll(
            { id: x, expiresAtSeconds: now + 300 },
            [{ id: y, expiresAtSeconds: now + 300 }],
            now,
          ),
          guards[1]!.checkAndRecordAll(
            { id: y, expiresAtSeconds: now + 300 },
            [{ id: x, expiresAtSeconds: now + 300 }],
            now,
          ),
        ]);
        assert.equal(answers.filter(Boolean).length, 1, `swapped round ${round}: ${JSON.stringify(answers)}`);
      }
    },
  );
});
