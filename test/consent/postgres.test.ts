/**
 * The consent guarantees that depend on the store's concurrency control, on PostgreSQL (several
 * pool connections, READ COMMITTED): a nonce confirms one execution, a daily cap lets exactly one
 * write through at cap − 1, and a rejection racing an approved execution never lets both succeed.
 * Skipped without SOLID_TEST_DATABASE_URL (`source .ci/postgres.sh`).
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, pendingOf } from './support.ts';
import { createTestPostgresStore, PG_SKIP_REASON, TEST_DATABASE_URL } from '../support/postgres.ts';

const skip = TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false;
const pgHarness = (t: Parameters<typeof consentHarness>[0]) =>
  consentHarness(t, { store: createTestPostgresStore(t, { poolMax: 8 }) });

test(
  'postgres: N concurrent confirmations of one typed-phrase nonce execute once',
  { skip, timeout: 60_000 },
  async (t) => {
    const h = await pgHarness(t);
    const args = { invoice_id: 1, amount_cents: 100 };
    const c = pendingOf(await h.call('admin', 'charge_invoice', args));
    const all = await Promise.all(
      Array.from({ length: 8 }, () =>
        h.call('admin', 'charge_invoice', args, {
          confirm: true,
          nonce: c.nonce,
          typed_phrase: c.typed_phrase,
        }),
      ),
    );
    assert.equal(all.filter((e) => e.ok).length, 1, JSON.stringify(all.map((e) => e.error?.reason)));
    for (const e of all.filter((x) => !x.ok)) assert.equal(e.error?.reason, 'nonce_replayed');
    assert.equal(await h.effects(), 1);
  },
);

test(
  'postgres: N concurrent writes at cap − 1 let exactly one through',
  { skip, timeout: 60_000 },
  async (t) => {
    const h = await pgHarness(t);
    await h.setSettings({ caps: { WRITE_REVERSIBLE: 3 } });
    for (let i = 0; i < 2; i++) {
      const c = pendingOf(await h.call('employee', 'ct.note_update', { contact_id: i, note: 'x' }));
      assert.equal(
        (
          await h.call(
            'employee',
            'ct.note_update',
            { contact_id: i, note: 'x' },
            { confirm: true, nonce: c.nonce },
          )
        ).ok,
        true,
      );
    }
    const pend = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        h.call('employee', 'ct.note_update', { contact_id: 100 + i, note: 'p' }),
      ),
    );
    const res = await Promise.all(
      pend.map((p, i) =>
        h.call(
          'employee',
          'ct.note_update',
          { contact_id: 100 + i, note: 'p' },
          { confirm: true, nonce: pendingOf(p).nonce },
        ),
      ),
    );
    assert.equal(res.filter((r) => r.ok).length, 1);
    for (const r of res.filter((x) => !x.ok)) assert.equal(r.error?.reason, 'daily_cap_exceeded');
    assert.equal(await h.effects(), 3);
  },
);

test(
  'postgres: a rejection racing the approved execution — never both succeed',
  { skip, timeout: 120_000 },
  async (t) => {
    const h = await pgHarness(t);
    let executed = 0;
    let rejected = 0;
    for (let i = 0; i < 12; i++) {
      const args = { invoice_id: 1000 + i, amount_cents: 100 };
      const c = pendingOf(await h.call('admin', 'charge_invoice', args));
      assert.equal(
        (
          await h.callAsHuman('owner', 'approvals.approve', {
            approval_id: c.approval_id,
            typed_phrase: c.typed_phrase,
          })
        ).ok,
        true,
      );
      const [run, reject] = await Promise.all([
        h.call('admin', 'charge_invoice', args, { confirm: true, nonce: c.nonce }),
        h.rt.dispatch({ surface: 'cli', principal: h.human('owner') }, 'approvals.reject', {
          approval_id: c.approval_id,
        }),
      ]);
      assert.notEqual(
        run.ok && reject.ok,
        true,
        `iteration ${i}: both the execution and the rejection succeeded`,
      );
      assert.ok(
        run.ok || reject.ok,
        `iteration ${i}: neither succeeded: ${run.error?.reason} / ${reject.error?.reason}`,
      );
      if (run.ok) {
        executed++;
        assert.equal(reject.error?.reason, 'approval_not_pending');
      } else {
        rejected++;
        assert.equal(run.error?.reason, 'approval_rejected');
      }
    }
    assert.equal(await h.effects(), executed);
    assert.equal(executed + rejected, 12);
  },
);
