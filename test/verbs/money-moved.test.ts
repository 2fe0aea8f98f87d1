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
    assert.deepEqual(d.totals, [{ verb: 'counter.charge', flow: 'in', count: 2, cents: 1750 }]);
    assert.equal(d.total_cents, 1750);
    assert.equal(d.truncated, false);
    const other = (await call(h.otherOwnerKey, 'audit.money_moved', {})).result as { data: Money };
    assert.deepEqual(other.data.actions, [], "another tenant sees none of this tenant's money");
    const one = (await call(h.keys.read_only, 'audit.money_moved', { limit: 1 })).result as { data: Money };
    assert.equal(one.data.actions.length, 1);
    assert.equal(one.data.truncated, true);
  });

  it("sums charged, refunded and net per business day in the tenant's time zone, and names the zone", async (t) => {
    // 20:00 in New York on 6 Dec is 01:00 UTC on 7 Dec: the same business day as 10:00 New York.
    const clock = { ms: Date.parse('2026-12-06T15:00:00.000Z') };
    const h = await counterRuntime(t, { clock: () => new Date(clock.ms) });
    const settings = (await h.rt.tenants.get(h.companyId))!.settings;
    await h.rt.store.write((tx) =>
      tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
        JSON.stringify({ ...settings, time_zone: 'America/New_York' }),
        h.companyId,
      ]),
    );
    h.rt.tenants.invalidate();
    const charge = async (cents: number): Promise<number> => {
      const env = await consented(h, h.keys.admin, 'counter.charge', { name: 'till', cents });
      assert.equal(env.ok, true, JSON.stringify(env.error));
      return env.audit_id!;
    };
    await charge(76967);
    clock.ms = Date.parse('2026-12-07T01:00:00.000Z');
    const refunded = await charge(2500);
    // Undoing a charge moves its money back: it counts as refunded, not as more money moved.
    const undo = await consented(h, h.keys.admin, 'audit.revert', { audit_id: refunded });
    assert.equal(undo.ok, true, JSON.stringify(undo.error));
    clock.ms = Date.parse('2026-12-07T06:00:00.000Z'); // 01:00 on 7 Dec in New York: the next business day
    await charge(1000);
    const read = async (args: Record<string, unknown>) => {
      const env = await dispatchAs(
        h.rt,
        { apiKey: h.keys.read_only, surface: 'http' },
        'audit.money_moved',
        args,
      );
      assert.equal(env.ok, true, JSON.stringify(env.error));
      return (env.result as { data: Record<string, any> }).data; // eslint-disable-line @typescript-eslint/no-explicit-any
    };
    const sixth = await read({ day: '2026-12-06' });
    assert.equal(sixth.time_zone, 'America/New_York');
    assert.deepEqual(sixth.business_day, {
      day: '2026-12-06',
      start: '2026-12-06T05:00:00.000Z',
      end: '2026-12-07T05:00:00.000Z',
      time_zone: 'America/New_York',
    });
    assert.equal(sixth.charged_cents, 79467);
    assert.equal(sixth.refunded_cents, 2500);
    assert.equal(sixth.net_cents, 76967);
    assert.deepEqual(
      sixth.actions.map((a: { flow: string; cents: number }) => [a.flow, a.cents]),
      [
        ['in', 76967],
        ['in', 2500],
        ['out', 2500],
      ],
    );
    // Today (no arguments) is the tenant's business day holding now: 7 Dec in New York.
    const today = await read({});
    assert.equal(today.business_day.day, '2026-12-07');
    assert.equal(today.net_cents, 1000);
    // A range spanning both days: one row per business day.
    const both = await read({ from: '2026-12-06T05:00:00.000Z', to: '2026-12-08T05:00:00.000Z' });
    assert.deepEqual(
      both.days.map((d: { day: string; net_cents: number }) => [d.day, d.net_cents]),
      [
        ['2026-12-06', 76967],
        ['2026-12-07', 1000],
      ],
    );
    assert.equal(both.net_cents, 77967);
    const bad = await dispatchAs(h.rt, { apiKey: h.keys.read_only, surface: 'http' }, 'audit.money_moved', {
      day: '2026-12-06',
      to: '2026-12-07T00:00:00Z',
    });
    assert.equal(bad.error?.reason, 'invalid_input');
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

it("narrows the money to one agent's key (the per-agent view)", async (t) => {
  const h = await counterRuntime(t);
  const bot = await h.rt.createApiKey({
    company_id: h.companyId,
    user_id: 2,
    role: 'admin',
    agent_type: 'claude-desktop',
    name: 'Billing bot',
  });
  assert.equal((await consented(h, bot, 'counter.charge', { name: 'till', cents: 1200 })).ok, true);
  assert.equal((await consented(h, h.keys.admin, 'counter.charge', { name: 'till', cents: 300 })).ok, true);
  const keyId = (await h.rt.store.read((q) =>
    q.get<{ key_id: string }>("SELECT key_id FROM api_keys WHERE name = 'Billing bot'"),
  ))!.key_id;
  const money = async (args: Record<string, unknown>): Promise<Money> => {
    const got = await dispatchAs(h.rt, { apiKey: h.keys.admin, surface: 'http' }, 'audit.money_moved', args);
    assert.equal(got.ok, true, JSON.stringify(got.error));
    return (got.result as { data: Money }).data;
  };
  assert.equal((await money({})).total_cents, 1500, 'both agents');
  const one = await money({ key_id: keyId });
  assert.deepEqual(
    one.actions.map((a) => a.cents),
    [1200],
    "only the bot's charge",
  );
  assert.equal(one.total_cents, 1200);
  assert.equal((await money({ key_id: 'no-such-key' })).total_cents, 0);
});
