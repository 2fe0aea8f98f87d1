/**
 * Housekeeping (spec/consent.md §maintenance) and the revert of consent settings: the periodic pass
 * deletes only rows that can no longer matter, so every outcome is the same before and after it.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, expectDenied, pendingOf, type ConsentHarness } from './support.ts';
import { createTestRuntime } from '../support/runtime.ts';

async function count(h: ConsentHarness, table: string): Promise<number> {
  const r = await h.rt.store.read((q) => q.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`));
  return Number(r?.n ?? 0);
}

test('maintenance deletes burned nonces and idempotency rows past expiry, marks expired approvals, drops old cap counters — outcomes unchanged', async (t) => {
  const h = await consentHarness(t);
  const args = { invoice_id: 1, amount_cents: 100 };
  const used = pendingOf(await h.call('admin', 'charge_invoice', args));
  assert.equal(
    (
      await h.call('admin', 'charge_invoice', args, {
        confirm: true,
        nonce: used.nonce,
        typed_phrase: used.typed_phrase,
        idempotency_key: 'k-1',
      })
    ).ok,
    true,
  );
  const open = pendingOf(await h.call('admin', 'charge_invoice', { ...args, invoice_id: 2 }));
  // every burned nonce is in `nonces` (a typed phrase also consumes its approvals row)
  const note = { contact_id: 1, note: 'x' };
  const click = pendingOf(await h.call('employee', 'ct.note_update', note));
  assert.equal(
    (await h.call('employee', 'ct.note_update', note, { confirm: true, nonce: click.nonce })).ok,
    true,
  );
  assert.equal(await count(h, 'nonces'), 2);
  assert.equal(await count(h, 'idempotency'), 2);

  // within the nonce's life nothing is removed, and the replay is still refused
  let report = await h.rt.maintenance();
  assert.deepEqual(report, {
    nonces_deleted: 0,
    approvals_expired: 0,
    approvals_deleted: 0,
    idempotency_deleted: 0,
    daily_counts_deleted: 0,
    signature_replays_deleted: 0,
    rate_limit_counters_deleted: 0,
  });
  await expectDenied(
    h,
    await h.call('admin', 'charge_invoice', args, {
      confirm: true,
      nonce: used.nonce,
      typed_phrase: used.typed_phrase,
    }),
    'nonce_replayed',
  );
  await expectDenied(
    h,
    await h.call('employee', 'ct.note_update', note, { confirm: true, nonce: click.nonce }),
    'nonce_replayed',
  );

  // after expiry + grace: the burn row goes, the open approval is marked expired
  h.clock.ms += 300_000 + 600_000 + 1;
  report = await h.rt.maintenance();
  assert.equal(report.nonces_deleted, 2);
  assert.equal(report.approvals_expired, 1);
  assert.equal(await count(h, 'nonces'), 0);
  // the old nonces are still refused (now as expired: their burn records are no longer needed)
  await expectDenied(
    h,
    await h.call('admin', 'charge_invoice', args, {
      confirm: true,
      nonce: used.nonce,
      typed_phrase: used.typed_phrase,
    }),
    'nonce_expired',
  );
  await expectDenied(
    h,
    await h.call('employee', 'ct.note_update', note, { confirm: true, nonce: click.nonce }),
    'nonce_expired',
  );
  await expectDenied(
    h,
    await h.call(
      'admin',
      'charge_invoice',
      { ...args, invoice_id: 2 },
      { confirm: true, nonce: open.nonce, typed_phrase: open.typed_phrase },
    ),
    'nonce_expired',
  );

  // a day later: idempotency rows (24 h) and yesterday-but-one's counters go; decided approvals stay listable a week
  h.clock.ms += 2 * 86_400_000;
  report = await h.rt.maintenance();
  assert.equal(report.idempotency_deleted, 2);
  assert.equal(report.daily_counts_deleted, 2);
  assert.equal(report.approvals_deleted, 0);
  h.clock.ms += 7 * 86_400_000;
  report = await h.rt.maintenance();
  assert.equal(report.approvals_deleted, 2);
  assert.equal(await count(h, 'approvals'), 0);
  // the audit log keeps every decision
  assert.ok((await h.audit({ action_type: 'charge_invoice' })).length >= 5);
});

test('the runtime runs the maintenance pass on its own timer (maintenanceIntervalMs)', async (t) => {
  const h = await createTestRuntime(t, { maintenanceIntervalMs: 20 });
  await h.rt.store.write((tx) =>
    tx.run('INSERT INTO nonces (jti, company_id, consumed_at, expires_at) VALUES (?, ?, ?, ?)', [
      'old',
      2,
      '2000-01-01T00:00:00.000Z',
      '2000-01-01T00:05:00.000Z',
    ]),
  );
  let left = 1;
  for (let i = 0; i < 250 && left > 0; i++) {
    await new Promise((r) => setTimeout(r, 20));
    left = Number(
      (await h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM nonces')))?.n,
    );
  }
  assert.equal(left, 0);
});

test('audit.revert of tenant.caps_set restores the previous cap (a settings change is reversible)', async (t) => {
  const h = await consentHarness(t);
  const args = { consent_class: 'IRREVERSIBLE', limit: 0 };
  const c = pendingOf(await h.callAsHuman('owner', 'tenant.caps_set', args));
  const set = await h.callAsHuman('owner', 'tenant.caps_set', args, { confirm: true, nonce: c.nonce });
  assert.equal(set.ok, true, JSON.stringify(set));
  const del = { contact_id: 1 };
  // A cap of 0 refuses the preflight itself.
  await expectDenied(h, await h.call('owner', 'gdpr_delete_contact', del), 'daily_cap_exceeded');
  const rv = pendingOf(await h.callAsHuman('owner', 'audit.revert', { audit_id: set.audit_id }));
  const reverted = await h.callAsHuman(
    'owner',
    'audit.revert',
    { audit_id: set.audit_id },
    { confirm: true, nonce: rv.nonce, ...(rv.typed_phrase ? { typed_phrase: rv.typed_phrase } : {}) },
  );
  assert.equal(reverted.ok, true, JSON.stringify(reverted));
  assert.equal(reverted.result!.reverted, true);
  const c2 = pendingOf(await h.call('owner', 'gdpr_delete_contact', del));
  assert.equal(
    (
      await h.call('owner', 'gdpr_delete_contact', del, {
        confirm: true,
        nonce: c2.nonce,
        typed_phrase: c2.typed_phrase,
      })
    ).ok,
    true,
  );
});
