/**
 * Daily caps per tenant and consent class (issue 3 §5, spec/consent.md §caps): defaults
 * 100 / 25 / 10, configurable per tenant by the owner (audited), reset at the tenant's midnight
 * (UTC unless its time zone says otherwise: business-day.test.ts), counted in
 * the write's own transaction — a denied or failed write consumes nothing, and N parallel writes
 * at cap-1 let exactly one through.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, expectDenied, pendingOf, type ConsentHarness } from './support.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { dispatchAs } from '../support/keyed.ts';

/** Preflight + confirm one write of the class under test; returns the confirm's envelope. */
async function write(
  h: ConsentHarness,
  cls: 'WRITE_REVERSIBLE' | 'WRITE_FINANCIAL' | 'IRREVERSIBLE',
  n: number,
  role?: string,
): Promise<Envelope> {
  const [verb, args, who] =
    cls === 'WRITE_REVERSIBLE'
      ? ['ct.note_update', { contact_id: n, note: `n${n}` }, 'employee']
      : cls === 'WRITE_FINANCIAL'
        ? ['charge_invoice', { invoice_id: n, amount_cents: 100 }, 'admin']
        : ['gdpr_delete_contact', { contact_id: n }, 'owner'];
  const first = await h.call(role ?? who, verb, args);
  // A cap already used up refuses the preflight itself (no nonce): that is the write's answer.
  if (first.error?.reason !== 'dispatch_pending') return first;
  const c = pendingOf(first);
  return h.call(role ?? who, verb, args, {
    confirm: true,
    nonce: c.nonce,
    ...(c.typed_phrase ? { typed_phrase: c.typed_phrase } : {}),
  });
}

async function usedToday(h: ConsentHarness, cls: string, companyId = h.companyId): Promise<number> {
  const day = new Date(h.clock.ms).toISOString().slice(0, 10);
  const r = await h.rt.store.read((q) =>
    q.get<{ count: number }>(
      'SELECT count FROM daily_counts WHERE company_id = ? AND consent_class = ? AND day = ?',
      [companyId, cls, day],
    ),
  );
  return Number(r?.count ?? 0);
}

for (const [cls, cap] of [
  ['IRREVERSIBLE', 10],
  ['WRITE_FINANCIAL', 25],
  ['WRITE_REVERSIBLE', 100],
] as const) {
  test(`default cap of ${cls} is ${cap} per day; the next one is daily_cap_exceeded with the reset time, audited, not executed`, async (t) => {
    const h = await consentHarness(t);
    for (let i = 1; i <= cap; i++) {
      const env = await write(h, cls, i);
      assert.equal(env.ok, true, `write ${i}: ${JSON.stringify(env.error)}`);
    }
    const over = await write(h, cls, cap + 1);
    const row = await expectDenied(h, over, 'daily_cap_exceeded');
    assert.equal(row.consent_class, cls);
    assert.equal(
      over.error!.hint,
      "The cap resets at 2026-03-11T00:00:00.000Z (the business's midnight, time zone UTC). An owner can raise it in the tenant settings.",
    );
    assert.deepEqual(over.error!.details, {
      cap,
      consent_class: cls,
      resets_at: '2026-03-11T00:00:00.000Z',
      time_zone: 'UTC',
    });
    assert.equal(await h.effects(), cap);
    assert.equal(await usedToday(h, cls), cap);
  });
}

test('caps are per class and per tenant: one class used up leaves the others and the other tenant untouched', async (t) => {
  const h = await consentHarness(t);
  await h.setSettings({ caps: { IRREVERSIBLE: 1 } });
  assert.equal((await write(h, 'IRREVERSIBLE', 1)).ok, true);
  await expectDenied(h, await write(h, 'IRREVERSIBLE', 2), 'daily_cap_exceeded');
  assert.equal((await write(h, 'WRITE_FINANCIAL', 1)).ok, true);
  assert.equal((await write(h, 'WRITE_REVERSIBLE', 1)).ok, true);
  const c = pendingOf(await h.call('other_owner', 'gdpr_delete_contact', { contact_id: 1 }));
  const theirs = await h.call(
    'other_owner',
    'gdpr_delete_contact',
    { contact_id: 1 },
    { confirm: true, nonce: c.nonce, typed_phrase: c.typed_phrase },
  );
  assert.equal(theirs.ok, true, JSON.stringify(theirs));
});

test('the cap resets at midnight UTC (a tenant with no time zone)', async (t) => {
  const h = await consentHarness(t, { start: '2026-03-10T23:59:00.000Z' });
  await h.setSettings({ caps: { WRITE_FINANCIAL: 2 } });
  assert.equal((await write(h, 'WRITE_FINANCIAL', 1)).ok, true);
  assert.equal((await write(h, 'WRITE_FINANCIAL', 2)).ok, true);
  h.clock.ms = Date.parse('2026-03-10T23:59:59.999Z');
  await expectDenied(h, await write(h, 'WRITE_FINANCIAL', 3), 'daily_cap_exceeded');
  h.clock.ms = Date.parse('2026-03-11T00:00:00.000Z');
  assert.equal((await write(h, 'WRITE_FINANCIAL', 3)).ok, true);
  assert.equal(await usedToday(h, 'WRITE_FINANCIAL'), 1);
  // a nonce issued before midnight and confirmed after counts on the day it executes
  // (issued while the day still had room: a used-up cap refuses the preflight itself)
  h.clock.ms = Date.parse('2026-03-11T23:59:30.000Z');
  const c = pendingOf(await h.call('admin', 'charge_invoice', { invoice_id: 6, amount_cents: 100 }));
  assert.equal((await write(h, 'WRITE_FINANCIAL', 4)).ok, true);
  await expectDenied(h, await write(h, 'WRITE_FINANCIAL', 5), 'daily_cap_exceeded');
  h.clock.ms = Date.parse('2026-03-12T00:00:10.000Z');
  const late = await h.call(
    'admin',
    'charge_invoice',
    { invoice_id: 6, amount_cents: 100 },
    { confirm: true, nonce: c.nonce, typed_phrase: c.typed_phrase },
  );
  assert.equal(late.ok, true, JSON.stringify(late));
  assert.equal(await usedToday(h, 'WRITE_FINANCIAL'), 1);
});

test('a denied write does not consume the cap (phrase mismatch, role, changed args, replay)', async (t) => {
  const h = await consentHarness(t);
  await h.setSettings({ caps: { WRITE_FINANCIAL: 1 } });
  const args = { invoice_id: 1, amount_cents: 100 };
  const c = pendingOf(await h.call('admin', 'charge_invoice', args));
  await expectDenied(
    h,
    await h.call('admin', 'charge_invoice', args, { confirm: true, nonce: c.nonce, typed_phrase: 'nope' }),
    'phrase_mismatch',
  );
  await expectDenied(
    h,
    await h.call('employee', 'charge_invoice', args, {
      confirm: true,
      nonce: c.nonce,
      typed_phrase: c.typed_phrase,
    }),
    'role_denied',
  );
  await expectDenied(
    h,
    await h.call(
      'admin',
      'charge_invoice',
      { ...args, invoice_id: 2 },
      { confirm: true, nonce: c.nonce, typed_phrase: 'CHARGE $1.00 to invoice #2' },
    ),
    'nonce_invalid',
  );
  assert.equal(await usedToday(h, 'WRITE_FINANCIAL'), 0);
  assert.equal(
    (
      await h.call('admin', 'charge_invoice', args, {
        confirm: true,
        nonce: c.nonce,
        typed_phrase: c.typed_phrase,
      })
    ).ok,
    true,
  );
  await expectDenied(
    h,
    await h.call('admin', 'charge_invoice', args, {
      confirm: true,
      nonce: c.nonce,
      typed_phrase: c.typed_phrase,
    }),
    'nonce_replayed',
  );
  assert.equal(await usedToday(h, 'WRITE_FINANCIAL'), 1);
});

test('a failed write (handler error after writing) consumes neither the cap nor leaves its effect', async (t) => {
  const h = await consentHarness(t);
  await h.setSettings({ caps: { WRITE_REVERSIBLE: 1 } });
  for (let i = 0; i < 3; i++) {
    const c = pendingOf(await h.call('employee', 'ct.failing_write', { n: i }));
    const env = await h.call('employee', 'ct.failing_write', { n: i }, { confirm: true, nonce: c.nonce });
    assert.equal(env.error?.reason, 'already_paid');
  }
  assert.equal(await usedToday(h, 'WRITE_REVERSIBLE'), 0);
  assert.equal(await h.effects(), 0);
  assert.equal((await write(h, 'WRITE_REVERSIBLE', 1)).ok, true);
  await expectDenied(h, await write(h, 'WRITE_REVERSIBLE', 2), 'daily_cap_exceeded');
});

test('a cap used up (or 0) refuses the preflight: no nonce, no approval row, the denial audited', async (t) => {
  const h = await consentHarness(t);
  await h.setSettings({ caps: { WRITE_REVERSIBLE: 0, WRITE_FINANCIAL: 1 } });
  const zero = await h.call('employee', 'ct.note_update', { contact_id: 1, note: 'x' });
  await expectDenied(h, zero, 'daily_cap_exceeded', { role: 'employee' });
  assert.equal(zero.consent, undefined, 'no nonce is handed out');
  assert.equal((await write(h, 'WRITE_FINANCIAL', 1)).ok, true);
  const approvals = async () =>
    Number((await h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM approvals')))!.n);
  const before = await approvals();
  const used = await h.call('admin', 'charge_invoice', { invoice_id: 2, amount_cents: 100 });
  await expectDenied(h, used, 'daily_cap_exceeded', { role: 'admin' });
  assert.equal(used.consent, undefined);
  assert.equal(await approvals(), before, 'no typed-phrase approval is opened for a write that cannot run');
  assert.equal(await h.effects(), 1);
});

test('a cap exceeded on confirm does not burn the nonce: after the reset (or a raised cap) the same nonce works', async (t) => {
  const h = await consentHarness(t);
  const args = { contact_id: 1, note: 'x' };
  const c = pendingOf(await h.call('employee', 'ct.note_update', args));
  // The owner lowers the cap between the preflight and the confirm.
  await h.setSettings({ caps: { WRITE_REVERSIBLE: 0 } });
  await expectDenied(
    h,
    await h.call('employee', 'ct.note_update', args, { confirm: true, nonce: c.nonce }),
    'daily_cap_exceeded',
  );
  await h.setSettings({ caps: { WRITE_REVERSIBLE: 1 } });
  assert.equal(
    (await h.call('employee', 'ct.note_update', args, { confirm: true, nonce: c.nonce })).ok,
    true,
  );
});

test('N parallel writes at cap-1: exactly one more succeeds, the rest are daily_cap_exceeded', async (t) => {
  const h = await consentHarness(t);
  const cap = 5;
  await h.setSettings({ caps: { WRITE_REVERSIBLE: cap } });
  for (let i = 0; i < cap - 1; i++) assert.equal((await write(h, 'WRITE_REVERSIBLE', i)).ok, true);
  const n = 12;
  const pendings = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      h.call('employee', 'ct.note_update', { contact_id: 100 + i, note: 'p' }),
    ),
  );
  const results = await Promise.all(
    pendings.map((p, i) =>
      h.call(
        'employee',
        'ct.note_update',
        { contact_id: 100 + i, note: 'p' },
        { confirm: true, nonce: pendingOf(p).nonce },
      ),
    ),
  );
  assert.equal(results.filter((r) => r.ok).length, 1);
  for (const r of results.filter((x) => !x.ok))
    await expectDenied(h, r, 'daily_cap_exceeded', { role: 'employee' });
  assert.equal(await h.effects(), cap);
  assert.equal(await usedToday(h, 'WRITE_REVERSIBLE'), cap);
});

test('tenant.caps_set: owner only, needs a confirmation, audited, applies at once, null restores the default, revertible data kept', async (t) => {
  const h = await consentHarness(t);
  const args = { consent_class: 'WRITE_FINANCIAL', limit: 1 };
  await expectDenied(h, await h.callAsHuman('admin', 'tenant.caps_set', args), 'role_denied', {
    role: 'admin',
    args,
  });
  const c = pendingOf(await h.callAsHuman('owner', 'tenant.caps_set', args));
  assert.equal(c.summary, 'Set the daily WRITE_FINANCIAL cap to 1.');
  const set = await h.callAsHuman('owner', 'tenant.caps_set', args, { confirm: true, nonce: c.nonce });
  assert.equal(set.ok, true, JSON.stringify(set));
  assert.equal(set.result!.limit, 1);
  assert.equal(set.result!.previous_limit, 25);
  assert.equal(typeof set.rollback_handle, 'string');
  const row = await h.lastAudit({ action_type: 'tenant.caps_set', status: 'completed' });
  assert.equal(row.role, 'owner');
  assert.deepEqual(row.request_data, args);
  assert.equal(row.is_reversible, 1);
  assert.equal((await write(h, 'WRITE_FINANCIAL', 1)).ok, true);
  await expectDenied(h, await write(h, 'WRITE_FINANCIAL', 2), 'daily_cap_exceeded');
  const shown = await h.call('admin', 'tenant.settings', {});
  assert.deepEqual((shown.result!.data as { caps: Record<string, unknown> }).caps.WRITE_FINANCIAL, {
    limit: 1,
    default: 25,
    custom: true,
    used_today: 1,
    remaining: 0,
    resets_at: '2026-03-11T00:00:00.000Z',
  });
  const reset = { consent_class: 'WRITE_FINANCIAL', limit: null };
  const c2 = pendingOf(await h.callAsHuman('owner', 'tenant.caps_set', reset));
  assert.equal(
    (await h.callAsHuman('owner', 'tenant.caps_set', reset, { confirm: true, nonce: c2.nonce })).ok,
    true,
  );
  assert.equal((await write(h, 'WRITE_FINANCIAL', 3)).ok, true);
  // invalid limits are refused by the input schema
  for (const bad of [-1, 1.5, 2_000_000, '5']) {
    assert.equal(
      (await h.callAsHuman('owner', 'tenant.caps_set', { consent_class: 'WRITE_FINANCIAL', limit: bad }))
        .error?.reason,
      'invalid_input',
    );
  }
  assert.equal(
    (await h.callAsHuman('owner', 'tenant.caps_set', { consent_class: 'READ', limit: 5 })).error?.reason,
    'invalid_input',
  );
});

test('tenant settings writes are not in agents’ tool lists (mcp_stdio, webmcp, ucp)', async (t) => {
  const h = await consentHarness(t);
  for (const name of ['tenant.caps_set', 'tenant.blocklist_add', 'tenant.blocklist_remove']) {
    const env = await dispatchAs(h.rt, { surface: 'mcp_stdio', apiKey: h.keys.owner }, name, {});
    assert.equal(env.error?.reason, 'surface_denied', name);
  }
});
