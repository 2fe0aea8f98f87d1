/**
 * The loop every agent should follow — aggregate → explain → preview → commit → verify →
 * revert — on the demo business, through dispatch with real consent round trips: a contact
 * update (snapshot revert), a deal stage move (exact undo, statistics restored), an appointment
 * reschedule, a server resize (revert by its rollback handle), and a refund (preview, then the
 * irreversible write: revert answers not_revertible).
 */
import { pendingPhrase } from '../../src/runtime/steps/consent.ts';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Envelope } from '../../src/spec/types.ts';
import { openDemoRuntime, type DemoRuntime } from '../support/demo.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- results read loosely in assertions
type R = Record<string, any>;

function ok(env: Envelope): R {
  assert.equal(env.ok, true, `${env.verb}: ${JSON.stringify(env.error)}`);
  return env.result as R;
}

async function read(d: DemoRuntime, verb: string, args: R): Promise<R> {
  return ok(await d.call('read_only', verb, args));
}

test('contact update: aggregate → explain → preview → commit → verify → revert restores the snapshot', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  const before = await read(d, 'customer.full_context', { customer_id: id });
  const explained = await read(d, 'crm.explain_contact_state', { contact_id: id });
  assert.equal(explained.current_state.status, before.data.status);
  assert.match(explained.reasoning, new RegExp(`contact ${id}`));
  const change = { contact_id: id, phone: '+18015550199', status: 'inactive' };
  const preview = await read(d, 'crm.preview_contact_update', change);
  assert.deepEqual(preview.current, { phone: before.data.phone, status: before.data.status });
  assert.deepEqual(preview.projected, { phone: '+18015550199', status: 'inactive' });
  assert.equal(preview.reversible, true);

  const pending = await d.call('employee', 'crm_contact_update', change);
  assert.equal(pending.error?.reason, 'dispatch_pending');
  assert.equal(pending.consent?.gate, 'confirmation');
  assert.deepEqual(pending.consent?.preview, preview, 'the pending answer carries the preview');
  const receipt = ok(await d.commit('employee', 'crm_contact_update', change));
  assert.deepEqual(receipt.changed_fields, ['phone', 'status']);
  assert.deepEqual(receipt.previous, { phone: before.data.phone, status: before.data.status });

  const after = await read(d, 'customer.full_context', { customer_id: id });
  assert.equal(after.data.phone, '+18015550199');
  assert.equal(after.data.status, 'inactive');
  const chain = (await read(d, 'crm.explain_contact_state', { contact_id: id })).causal_chain as R[];
  assert.ok(
    chain.some(
      (i) => i.action === 'crm_contact_update' && i.audit_id === receipt.audit_id && i.source === 'audit',
    ),
    'the verb call is in the chain',
  );
  assert.ok(
    chain.some(
      (i) =>
        i.action === 'contact.status_changed' &&
        i.audit_id === receipt.audit_id &&
        /active → inactive/.test(i.detail),
    ),
    'with its events',
  );

  const reverted = ok(await d.commit('employee', 'audit.revert', { audit_id: receipt.audit_id }));
  assert.equal(reverted.reverted, true);
  const restored = await read(d, 'customer.full_context', { customer_id: id });
  assert.equal(restored.data.phone, before.data.phone);
  assert.equal(restored.data.status, before.data.status);
  const again = await d.commit('employee', 'audit.revert', { audit_id: receipt.audit_id });
  assert.equal(again.error?.reason, 'already_reverted');
});

test('deal stage move: suggest → preview → commit → verify → revert undoes it exactly (stage, history and statistics)', async (t) => {
  const d = await openDemoRuntime(t);
  const dealId = d.fixtures.proposal_deal_id;
  const deal = await read(d, 'deals.get', { deal_id: dealId });
  assert.equal(deal.data.stage, 'proposal_sent');
  const historyBefore = deal.data.stage_history.length;
  const explained = await read(d, 'deals.explain_stage', { deal_id: dealId });
  assert.deepEqual(explained.current_state.stage_path.at(-1), 'proposal_sent');
  const suggested = await read(d, 'deal.suggest_next_action', { deal_id: dealId });
  const top = suggested.suggestions[0];
  assert.equal(top.action, 'deals.move_stage');
  const preview = await read(d, 'deals.preview_move_stage', top.args);
  assert.equal(preview.current.stage, 'proposal_sent');
  assert.equal(preview.projected.stage, top.args.to_stage);
  assert.equal(preview.delta.transition_sample_size, top.sample_size);

  const receipt = ok(await d.commit('employee', 'deals.move_stage', top.args));
  assert.equal(receipt.previous_stage, 'proposal_sent');
  const moved = await read(d, 'deals.get', { deal_id: dealId });
  assert.equal(moved.data.stage, top.args.to_stage);
  assert.equal(moved.data.stage_history.length, historyBefore + 1);
  const statsAfter = await read(d, 'deal.suggest_next_action', { deal_id: dealId });
  assert.equal(statsAfter.stage, top.args.to_stage);

  ok(await d.commit('employee', 'audit.revert', { audit_id: receipt.audit_id }));
  const back = await read(d, 'deals.get', { deal_id: dealId });
  assert.equal(back.data.stage, 'proposal_sent');
  assert.deepEqual(back.data.stage_history, deal.data.stage_history, 'the history row of the move is gone');
  assert.equal(back.data.closed_at, deal.data.closed_at);
  const statsBack = await read(d, 'deal.suggest_next_action', { deal_id: dealId });
  assert.deepEqual(
    statsBack.suggestions.map((s: R) => [s.args.to_stage, s.sample_size, s.confidence]),
    suggested.suggestions.map((s: R) => [s.args.to_stage, s.sample_size, s.confidence]),
    'the transition statistics are as before',
  );
  const chain = (await read(d, 'deals.explain_stage', { deal_id: dealId })).causal_chain as R[];
  assert.ok(
    chain.some((i) => i.action === 'deal.stage_reverted'),
    'the revert is part of the deal’s story',
  );
});

test('appointment reschedule: explain → suggest a slot → preview → commit → verify → revert moves it back', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.upcoming_appointment_id;
  const explained = await read(d, 'scheduling.explain_appointment', { appointment_id: id });
  const original = explained.current_state;
  assert.equal(original.status, 'scheduled');
  const slots = await read(d, 'scheduling.suggest_slots', {
    service: 'Backflow test',
    contact_id: d.fixtures.customer_id,
    days_ahead: 3,
  });
  const slot = slots.suggestions[0].args;
  const change = {
    appointment_id: id,
    starts_at: slot.starts_at,
    technician_user_id: slot.technician_user_id,
  };
  const preview = await read(d, 'scheduling.preview_reschedule', change);
  assert.equal(preview.current.starts_at, original.starts_at);
  assert.equal(preview.projected.starts_at, slot.starts_at);
  assert.equal(preview.reversible, true);

  const receipt = ok(await d.commit('employee', 'scheduling.reschedule_appointment', change));
  assert.equal(receipt.starts_at, slot.starts_at);
  const moved = await read(d, 'scheduling.explain_appointment', { appointment_id: id });
  assert.equal(moved.current_state.starts_at, slot.starts_at);
  assert.equal(moved.current_state.technician_user_id, slot.technician_user_id);
  assert.ok((moved.causal_chain as R[]).some((i) => i.action === 'appointment.rescheduled'));

  ok(await d.commit('employee', 'audit.revert', { audit_id: receipt.audit_id }));
  const back = await read(d, 'scheduling.explain_appointment', { appointment_id: id });
  assert.equal(back.current_state.starts_at, original.starts_at);
  assert.equal(back.current_state.ends_at, original.ends_at);
  assert.equal(back.current_state.technician_user_id, original.technician_user_id);
});

test('server resize: diagnose → explain → preview → typed-phrase commit → verify → revert by rollback handle', async (t) => {
  const d = await openDemoRuntime(t);
  const diag = await read(d, 'infrastructure_diagnose', {});
  assert.equal(diag.size, 'SMALL');
  // Refused credentials are not events of the droplet: they stay out of its causal chain.
  const keyId = d.rt.tenants.keyIdOf(d.keys.admin)!;
  for (const apiKey of [`sk_solid_${keyId}_${'x'.repeat(32)}`, `sk_solid_000000000000_${'y'.repeat(32)}`]) {
    assert.equal(
      (await d.call({ apiKey }, 'infrastructure_resize', { size: 'LARGE' })).error?.reason,
      'auth_invalid',
    );
  }
  const explained = await read(d, 'infrastructure.explain_droplet_state', {});
  assert.ok((explained.causal_chain as R[]).some((i) => i.action === 'droplet.provisioned'));
  assert.ok(
    !JSON.stringify(explained.causal_chain).includes('auth_invalid'),
    JSON.stringify(explained.causal_chain),
  );
  const preview = await read(d, 'infrastructure.preview_resize', { size: 'MEDIUM' });
  assert.equal(preview.current.size_slug, 's-2vcpu-4gb');
  assert.equal(preview.projected.size_slug, 's-4vcpu-8gb');
  assert.equal(preview.delta.monthly_price_change_cents, 2400);
  assert.equal(preview.reversible, true);

  const pending = await d.call('admin', 'infrastructure_resize', { size: 'MEDIUM' });
  assert.equal(pending.consent?.gate, 'typed_phrase');
  assert.equal(
    pending.consent?.typed_phrase,
    undefined,
    'an agent is not shown the phrase (human-only default)',
  );
  assert.equal(pendingPhrase(pending), 'RESIZE droplet to MEDIUM');
  const receipt = ok(await d.commit('admin', 'infrastructure_resize', { size: 'MEDIUM' }));
  assert.equal(receipt.status, 'resized');
  assert.equal(receipt.previous_size_slug, 's-2vcpu-4gb');
  assert.ok(
    receipt.rollback_handle.startsWith(`infra:resize:${diag.droplet_id}:s-2vcpu-4gb`),
    receipt.rollback_handle,
  );
  assert.equal((await read(d, 'infrastructure_diagnose', {})).size, 'MEDIUM');

  const undo = await d.call('admin', 'audit.revert', { rollback_handle: receipt.rollback_handle });
  assert.equal(
    undo.error?.reason,
    'dispatch_pending',
    'undoing a financial action needs the typed phrase too',
  );
  const reverted = ok(await d.commit('admin', 'audit.revert', { rollback_handle: receipt.rollback_handle }));
  assert.equal(reverted.reverted, true);
  assert.equal(reverted.audit_id, receipt.audit_id);
  const after = await read(d, 'infrastructure_diagnose', {});
  assert.equal(after.size, 'SMALL');
  assert.equal(after.size_slug, 's-2vcpu-4gb');
});

test('refund: explain → preview → typed-phrase refund → verify; a refund cannot be reverted (not_revertible, before consent)', async (t) => {
  const d = await openDemoRuntime(t);
  const p = d.fixtures.captured_payment;
  const explained = await read(d, 'payments.explain_payment', { payment_id: p.id });
  assert.equal(explained.current_state.status, 'captured');
  const preview = await read(d, 'payments.preview_refund_impact', {
    transaction_id: p.id,
    refund_amount_cents: 5000,
  });
  assert.equal(preview.reversible, false);
  assert.equal(preview.projected.refunded_cents, 5000);

  const args = { charge_ref: p.charge_ref, amount_cents: 5000, reason: 'Customer goodwill' };
  const pending = await d.call('admin', 'issue_refund', args);
  assert.equal(pendingPhrase(pending), `REFUND $50.00 on charge ${p.charge_ref}`);
  assert.equal((pending.consent?.preview as R).projected.status, 'partially_refunded');
  const receipt = ok(await d.commit('admin', 'issue_refund', args));
  assert.equal(receipt.status, 'refunded');
  assert.equal(receipt.rollback_handle, undefined, 'no rollback handle for an irreversible effect');

  const after = await read(d, 'payments.get', { payment_id: p.id });
  assert.equal(after.data.refunded_cents, 5000);
  assert.equal(after.data.status, 'partially_refunded');
  assert.deepEqual(
    { current: preview.projected.refunded_cents, net: preview.projected.net_cents },
    { current: after.data.refunded_cents, net: after.data.net_cents },
    'the preview projected exactly what happened',
  );

  const revert = await d.call('admin', 'audit.revert', { audit_id: receipt.audit_id });
  assert.equal(revert.ok, false, 'an agent branching on ok never believes the refund was undone');
  assert.equal(revert.error?.reason, 'not_revertible');
  assert.equal((revert.error?.details as { cause?: string }).cause, 'no_revert_handler');
  assert.equal(revert.consent, undefined, 'refused before any typed phrase is asked');
  assert.equal(
    (await read(d, 'payments.get', { payment_id: p.id })).data.refunded_cents,
    5000,
    'nothing was undone',
  );
});
