/**
 * Bad input on the demo business: unknown ids answer not_found naming the entity type; domain
 * rules (a refund above what was captured, a charge of a paid invoice, a resize to the current
 * size, an appointment in the past or double-booked, and more) answer their own reason with a
 * hint; in every case nothing is written but the failure's audit row.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { BUSINESS_TABLES } from '../../../src/business/schema.ts';
import { reasonInfo } from '../../../src/spec/reasons.ts';
import type { Envelope } from '../../../src/spec/types.ts';
import { openDemoRuntime, type DemoRuntime } from '../../support/demo.ts';

async function businessHash(d: DemoRuntime): Promise<string> {
  return d.rt.store.read(async (q) => {
    const h = createHash('sha256');
    for (const t of BUSINESS_TABLES) h.update(JSON.stringify(await q.all(`SELECT * FROM ${t} ORDER BY id`)));
    h.update(JSON.stringify(await q.all('SELECT company_id, seq FROM events ORDER BY company_id, seq')));
    return h.digest('hex');
  });
}

async function auditRows(
  d: DemoRuntime,
): Promise<Array<{ audit_id: number; action_type: string; status: string; reason: string | null }>> {
  await d.rt.auditBuffer.flush();
  return d.rt.store.read((q) =>
    q.all(
      'SELECT audit_id, action_type, status, reason FROM audit_log WHERE company_id = ? ORDER BY audit_id',
      [d.companyId],
    ),
  );
}

/** Run a refused write through its consent gate and check: the reason, nothing written, one failure audit row. */
async function refused(
  d: DemoRuntime,
  verb: string,
  args: Record<string, unknown>,
  reason: string,
  message?: RegExp,
): Promise<Envelope> {
  const before = await businessHash(d);
  const rowsBefore = await auditRows(d);
  const env = await d.commit('owner', verb, args);
  assert.equal(env.ok, false, `${verb} should be refused`);
  assert.equal(env.error!.reason, reason, `${verb}: ${JSON.stringify(env.error)}`);
  if (message) assert.match(env.error!.message, message);
  assert.equal(typeof env.error!.hint, 'string', `${verb} ${reason}: a hint (spec/envelope.md §error)`);
  assert.ok(env.error!.hint!.length > 0, `${verb} ${reason}: a non-empty hint`);
  assert.equal(await businessHash(d), before, `${verb}: nothing was written`);
  const rows = (await auditRows(d)).slice(rowsBefore.length);
  const failures = rows.filter((r) => r.status !== 'pending');
  assert.deepEqual(
    failures.map((r) => [r.action_type, r.status, r.reason]),
    [[verb, 'failed', reason]],
    `${verb}: only the failure's audit row (after the consent round trip)`,
  );
  assert.equal(env.audit_id, failures[0]!.audit_id);
  return env;
}

test('unknown ids answer not_found with the entity type in the message, for reads and writes', async (t) => {
  const d = await openDemoRuntime(t);
  const reads: Array<[string, Record<string, unknown>, RegExp]> = [
    ['customer.full_context', { customer_id: 999_999 }, /^contact 999999 not found$/],
    ['crm.explain_contact_state', { contact_id: 999_999 }, /^contact 999999 not found$/],
    ['deals.get', { deal_id: 999_999 }, /^deal 999999 not found$/],
    ['deal.suggest_next_action', { deal_id: 999_999 }, /^deal 999999 not found$/],
    ['scheduling.explain_appointment', { appointment_id: 999_999 }, /^appointment 999999 not found$/],
    ['invoices.get', { invoice_id: 999_999 }, /^invoice 999999 not found$/],
    [
      'payments.preview_charge',
      { invoice_number: 999_999, amount_cents: 100 },
      /^invoice #999999 not found$/,
    ],
    [
      'payments.preview_refund_impact',
      { transaction_id: 999_999, refund_amount_cents: null },
      /^payment 999999 not found$/,
    ],
    [
      'payments.preview_refund_impact',
      { charge_ref: 'ch_nope1234', amount_cents: 100 },
      /^charge ch_nope1234 not found$/,
    ],
    ['inventory.part_detail', { part_id: 999_999 }, /^part 999999 not found$/],
    ['kb.get_article', { slug: 'no-such-article' }, /^kb article no-such-article not found$/],
    ['infrastructure_diagnose', { droplet_id: 999_999 }, /^droplet 999999 not found$/],
    [
      'scheduling.technician_availability',
      { from: '2026-06-01T08:00:00-06:00', to: '2026-06-02T08:00:00-06:00', technician_user_id: 999 },
      /^technician 999 not found$/,
    ],
  ];
  for (const [verb, args, message] of reads) {
    const env = await d.call('owner', verb, args);
    assert.equal(env.error?.reason, 'not_found', `${verb}: ${JSON.stringify(env.error)}`);
    assert.match(env.error!.message, message, verb);
    assert.ok(env.error!.hint, `${verb}: a hint`);
    assert.equal(reasonInfo('not_found').status, 404);
  }
  await refused(
    d,
    'crm_contact_update',
    { contact_id: 999_999, phone: '+18015550100' },
    'not_found',
    /^contact 999999 not found$/,
  );
  await refused(
    d,
    'deals.move_stage',
    { deal_id: 999_999, to_stage: 'won' },
    'not_found',
    /^deal 999999 not found$/,
  );
  await refused(
    d,
    'charge_invoice',
    { invoice_number: 999_999, amount_cents: 5000 },
    'not_found',
    /^invoice #999999 not found$/,
  );
  await refused(
    d,
    'issue_refund',
    { charge_ref: 'ch_nope1234', amount_cents: 5000 },
    'not_found',
    /^charge ch_nope1234 not found$/,
  );
  await refused(d, 'gdpr_delete_contact', { contact_id: 999_999 }, 'not_found', /^contact 999999 not found$/);
  await refused(
    d,
    'deals_create',
    { contact_id: d.fixtures.customer_id, title: 'X', amount_cents: 1, owner_user_id: 999 },
    'not_found',
    /^employee 999 not found$/,
  );
});

test('money rules: a refund above what remains captured, a charge of a paid invoice, a charge above the balance', async (t) => {
  const d = await openDemoRuntime(t);
  const p = d.fixtures.captured_payment;
  const env = await refused(
    d,
    'issue_refund',
    { charge_ref: p.charge_ref, amount_cents: p.amount_cents + 1 },
    'refund_exceeds_captured',
  );
  assert.match(env.error!.hint!, new RegExp(`at most ${p.amount_cents} cents`));
  const preview = await d.call('admin', 'payments.preview_refund_impact', {
    transaction_id: p.id,
    refund_amount_cents: p.amount_cents + 1,
  });
  assert.equal(preview.error?.reason, 'refund_exceeds_captured', 'the preview refuses exactly as the refund');
  const paid = await d.rt.store.read((q) =>
    q.get<{ number: number }>(
      `SELECT number FROM invoices WHERE company_id = ? AND status = 'paid' ORDER BY id LIMIT 1`,
      [d.companyId],
    ),
  );
  await refused(d, 'charge_invoice', { invoice_number: paid!.number, amount_cents: 100 }, 'already_paid');
  assert.equal(
    (await d.call('admin', 'payments.preview_charge', { invoice_number: paid!.number, amount_cents: 100 }))
      .error?.reason,
    'already_paid',
  );
  await refused(
    d,
    'charge_invoice',
    {
      invoice_number: d.fixtures.open_invoice.number,
      amount_cents: d.fixtures.open_invoice.amount_cents + 1,
    },
    'amount_exceeds_balance',
  );
  const fully = await d.rt.store.read((q) =>
    q.get<{ charge_ref: string }>(
      `SELECT charge_ref FROM payments WHERE company_id = ? AND status = 'refunded' LIMIT 1`,
      [d.companyId],
    ),
  );
  await refused(
    d,
    'issue_refund',
    { charge_ref: fully!.charge_ref, amount_cents: 100 },
    'payment_not_refundable',
  );
});

test('infrastructure rules: a resize to the current size, workers beyond the size limit', async (t) => {
  const d = await openDemoRuntime(t);
  await refused(d, 'infrastructure_resize', { size: 'SMALL' }, 'same_size', /already SMALL/);
  assert.equal(
    (await d.call('admin', 'infrastructure.preview_resize', { size: 'SMALL' })).error?.reason,
    'same_size',
  );
  await refused(d, 'infrastructure_scale_workers', { delta: 10 }, 'workers_out_of_range');
  await refused(d, 'infrastructure_scale_workers', { delta: -5 }, 'workers_out_of_range');
  const bad = await d.call('admin', 'infrastructure_scale_workers', { delta: 99 });
  assert.equal(bad.error?.reason, 'invalid_input');
  assert.equal(bad.error?.path, '/delta');
});

test('a tenant without a managed server answers no_managed_droplet with a hint', async (t) => {
  const d = await openDemoRuntime(t);
  await d.rt.createTenant({ company_id: 9, name: 'No Server Co', tier: 'professional' });
  const key = await d.rt.createApiKey({ company_id: 9, user_id: 1, role: 'owner' });
  for (const verb of [
    'infrastructure_diagnose',
    'infrastructure.explain_droplet_state',
    'infrastructure.preview_resize',
  ]) {
    const env = await d.call(
      { apiKey: key },
      verb,
      verb === 'infrastructure.preview_resize' ? { size: 'MEDIUM' } : {},
    );
    assert.equal(env.error?.reason, 'no_managed_droplet', verb);
    assert.ok(env.error!.hint, verb);
    assert.equal(d.rt.registry.reasons.info('no_managed_droplet').status, 404);
  }
});

test('scheduling rules: an appointment in the past, a double booking, a move of a finished visit', async (t) => {
  const d = await openDemoRuntime(t);
  const contact = d.fixtures.customer_id;
  const yesterday = new Date(d.rt.clock().getTime() - 86_400_000).toISOString();
  await refused(
    d,
    'scheduling.book_appointment',
    {
      contact_id: contact,
      service: 'Leak repair',
      starts_at: yesterday,
      technician_user_id: d.fixtures.technician_user_id,
    },
    'appointment_in_past',
  );
  // The fixture visit's technician is busy at its own time.
  const visit = await d.rt.store.read((q) =>
    q.get<{ starts_at: string; technician_user_id: number }>(
      'SELECT starts_at, technician_user_id FROM appointments WHERE company_id = ? AND id = ?',
      [d.companyId, d.fixtures.upcoming_appointment_id],
    ),
  );
  const env = await refused(
    d,
    'scheduling.book_appointment',
    {
      contact_id: contact,
      service: 'Leak repair',
      starts_at: visit!.starts_at,
      technician_user_id: visit!.technician_user_id,
    },
    'double_booked',
  );
  assert.match(env.error!.message, new RegExp(`appointment ${d.fixtures.upcoming_appointment_id}`));
  assert.ok(env.error!.hint);
  assert.equal(
    (
      await d.call('employee', 'scheduling.preview_booking', {
        contact_id: contact,
        service: 'Leak repair',
        starts_at: visit!.starts_at,
        technician_user_id: visit!.technician_user_id,
      })
    ).error?.reason,
    'double_booked',
  );
  const done = await d.rt.store.read((q) =>
    q.get<{ id: number }>(
      `SELECT id FROM appointments WHERE company_id = ? AND status = 'completed' LIMIT 1`,
      [d.companyId],
    ),
  );
  await refused(
    d,
    'scheduling.reschedule_appointment',
    { appointment_id: done!.id, starts_at: new Date(d.rt.clock().getTime() + 3 * 86_400_000).toISOString() },
    'appointment_not_active',
  );
  await refused(
    d,
    'scheduling.reschedule_appointment',
    { appointment_id: d.fixtures.upcoming_appointment_id, starts_at: yesterday },
    'appointment_in_past',
  );
});

test('other domain rules: same stage, no change, an erased contact, the last owner, a non-upgrade', async (t) => {
  const d = await openDemoRuntime(t);
  await refused(
    d,
    'deals.move_stage',
    { deal_id: d.fixtures.proposal_deal_id, to_stage: 'proposal_sent' },
    'same_stage',
  );
  const contact = await d.rt.store.read((q) =>
    q.get<{ status: string }>('SELECT status FROM contacts WHERE id = ?', [d.fixtures.customer_id]),
  );
  await refused(
    d,
    'crm_contact_update',
    { contact_id: d.fixtures.customer_id, status: contact!.status },
    'no_change',
  );
  await refused(
    d,
    'team.set_role',
    { employee_user_id: d.fixtures.owner_user_id, role: 'admin' },
    'last_owner',
  );
  await refused(
    d,
    'team.set_role',
    { employee_user_id: d.fixtures.employee_user_id, role: 'employee' },
    'no_change',
  );
  await refused(d, 'subscription_upgrade_tier', { tier: 'professional' }, 'same_tier');
  assert.equal((await d.commit('owner', 'subscription_upgrade_tier', { tier: 'enterprise' })).ok, true);
  await refused(d, 'subscription_upgrade_tier', { tier: 'professional' }, 'not_an_upgrade');
  assert.equal((await d.commit('owner', 'gdpr_delete_contact', { contact_id: 43 })).ok, true);
  await refused(d, 'crm_contact_update', { contact_id: 43, phone: '+18015550100' }, 'contact_erased');
  await refused(d, 'gdpr_delete_contact', { contact_id: 43 }, 'contact_erased');
});

test('malformed arguments are refused by the input schema with the failing path, before any consent', async (t) => {
  const d = await openDemoRuntime(t);
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['charge_invoice', { invoice_number: 4304, amount_cents: 12.5 }, '/amount_cents'],
    ['charge_invoice', { invoice_number: 4304, amount_cents: 5000, currency: 'EUR' }, '/currency'],
    ['deals.move_stage', { deal_id: 49, to_stage: 'maybe' }, '/to_stage'],
    [
      'scheduling.book_appointment',
      { contact_id: 42, service: 'Leak repair', starts_at: '2026-06-01 09:00' },
      '/starts_at',
    ],
    ['infrastructure_resize', { size: 'HUGE' }, '/size'],
    ['issue_refund', { charge_ref: 'not-a-charge', amount_cents: 100 }, '/charge_ref'],
  ];
  for (const [verb, args, path] of cases) {
    const env = await d.call('owner', verb, args);
    assert.equal(env.error?.reason, 'invalid_input', verb);
    assert.equal(env.error?.path, path, verb);
  }
});
