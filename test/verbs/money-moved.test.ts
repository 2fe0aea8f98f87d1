/**
 * audit.money_moved: the money financial verbs moved — only completed WRITE_FINANCIAL actions of
 * the caller's tenant in the range, with their amount, totals per verb, the business currency,
 * `truncated` past the limit, and invalid_input for a reversed range. Spec: src/verbs/audit-money-moved.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import { amountOf } from '../../src/verbs/audit-money-moved.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { dispatchAs } from '../support/keyed.ts';

interface Money {
  currency: string;
  actions: Array<{ verb: string; cents: number | null; audit_id: number }>;
  totals: Array<{ verb: string; count: number; cents: number }>;
  total_cents: number;
  truncated: boolean;
}

describe('audit.money_moved', () => {
  it('sums the completed financial actions per verb, in the business currency', async (t) => {
    const h = await counterRuntime(t);
    const call = (key: string, verb: string, args: Record<string, unknown>): Promise<Envelope> =>
      dispatchAs(h.rt, { apiKey: key, surface: 'http' }, verb, args);
    for (const cents of [1500, 250]) {
      const env = await consented(h, h.keys.admin, 'counter.charge', { name: 'till', cents });
      assert.equal(env.ok, true, JSON.stringify(env.error));
    }
    // Asked but never approved, a reversible write, and another tenant's charge: not money moved.
    const pending = await call(h.keys.admin, 'counter.charge', { name: 'till', cents: 9999 });
    assert.equal(pending.error?.reason, 'dispatch_pending');
    await consented(h, h.keys.employee, 'counter.add', { name: 'till', by: 7 });
    const got = await call(h.keys.read_only, 'audit.money_moved', {});
    assert.equal(got.ok, true, JSON.stringify(got.error));
    const d = (got.result as { data: Money }).data;
    assert.equal(d.currency, 'USD');
    assert.deepEqual(
      d.actions.map((a) => [a.verb, a.cents]),
      [
        ['counter.charge', 1500],
        ['counter.charge', 250],
      ],
    );
    assert.deepEqual(d.totals, [{ verb: 'counter.charge', count: 2, cents: 1750 }]);
    assert.equal(d.total_cents, 1750);
    assert.equal(d.truncated, false);
    const other = (await call(h.otherOwnerKey, 'audit.money_moved', {})).result as { data: Money };
    assert.deepEqual(other.data.actions, [], "another tenant sees none of this tenant's money");
    const one = (await call(h.keys.read_only, 'audit.money_moved', { limit: 1 })).result as { data: Money };
    assert.equal(one.data.actions.length, 1);
    assert.equal(one.data.truncated, true);
  });

  it('refuses a range whose start is after its end', async (t) => {
    const h = await counterRuntime(t);
    const env = await dispatchAs(h.rt, { apiKey: h.keys.read_only, surface: 'http' }, 'audit.money_moved', {
      from: '2026-01-02T00:00:00Z',
      to: '2026-01-01T00:00:00Z',
    });
    assert.equal(env.error?.reason, 'invalid_input');
    assert.ok(env.error?.hint);
  });

  it('takes amount_cents, else the one *_cents argument', () => {
    assert.equal(amountOf({ amount_cents: 900, fee_cents: 30 }), 900);
    assert.equal(amountOf({ cents: 5 }), 5);
    assert.equal(amountOf({ percent: 5 }), null);
    assert.equal(amountOf({ refund_cents: 120 }), 120);
    assert.equal(amountOf({ a_cents: 1, b_cents: 2 }), null, 'ambiguous');
    assert.equal(amountOf({ audit_id: 4 }), null);
  });
});
