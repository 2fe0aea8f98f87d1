/**
 * Every consent class of the demo pack through dispatch, with its gate and role floor:
 * READ (no gate; keyless reads see the sandbox), WRITE_REVERSIBLE (a confirmation click,
 * employee), WRITE_FINANCIAL (a typed phrase, admin; the plan upgrade needs the owner),
 * IRREVERSIBLE (a typed phrase, owner; no revert), BLOCKED (never runs), and the tier floor that
 * follows the company's own plan.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDemoRuntime } from '../../support/demo.ts';
import { pendingPhrase } from '../../../src/runtime/steps/consent.ts';
import { operatorAtTerminal } from '../../../src/identity/principal.ts';
import type { DispatchOptions } from '../../../src/runtime/core.ts';

test('READ: no gate for any role; without a key, reads see the sandbox company only', async (t) => {
  const d = await openDemoRuntime(t);
  const mine = await d.call('read_only', 'crm_contacts_search', { limit: 200 });
  assert.equal(mine.ok, true);
  const keyless = await d.call({ apiKey: null }, 'crm_contacts_search', { limit: 200 });
  assert.equal(keyless.ok, true);
  const ids = (env: typeof mine) =>
    (env.result!.data as { items: Array<{ id: number }> }).items.map((c) => c.id);
  assert.ok(ids(mine).includes(d.fixtures.customer_id));
  assert.ok(!ids(keyless).includes(d.fixtures.customer_id), 'the sandbox has its own contacts');
  assert.equal(
    (await d.call({ apiKey: null }, 'customer.full_context', { customer_id: d.fixtures.customer_id })).error
      ?.reason,
    'not_found',
  );
  assert.equal(
    (await d.call({ apiKey: null }, 'crm_contact_update', { contact_id: 201, phone: '+18015550100' })).error
      ?.reason,
    'auth_required',
    'writes need a key',
  );
});

test('WRITE_REVERSIBLE: a confirmation click for an employee; read_only is below the floor', async (t) => {
  const d = await openDemoRuntime(t);
  const args = { contact_id: d.fixtures.customer_id, tags: ['vip'] };
  assert.equal((await d.call('read_only', 'crm_contact_update', args)).error?.reason, 'role_denied');
  const pending = await d.call('employee', 'crm_contact_update', args);
  assert.equal(pending.error?.reason, 'dispatch_pending');
  assert.equal(pending.consent?.class, 'WRITE_REVERSIBLE');
  assert.equal(pending.consent?.gate, 'confirmation');
  assert.equal(pendingPhrase(pending), undefined);
  assert.equal(
    (await d.call('employee', 'crm_contact_update', args, { confirm: true })).error?.reason,
    'nonce_required',
  );
  const done = await d.call('employee', 'crm_contact_update', args, {
    confirm: true,
    nonce: pending.consent!.nonce,
  });
  assert.equal(done.ok, true, JSON.stringify(done.error));
  assert.equal(
    (await d.call('employee', 'crm_contact_update', args, { confirm: true, nonce: pending.consent!.nonce }))
      .error?.reason,
    'nonce_replayed',
  );
});

test('WRITE_FINANCIAL: an admin types the exact phrase; a wrong phrase writes nothing; an employee is below the floor', async (t) => {
  const d = await openDemoRuntime(t);
  const args = { invoice_number: d.fixtures.open_invoice.number, amount_cents: 5000 };
  assert.equal((await d.call('employee', 'charge_invoice', args)).error?.reason, 'role_denied');
  const pending = await d.call('admin', 'charge_invoice', args);
  assert.equal(pending.consent?.class, 'WRITE_FINANCIAL');
  assert.equal(pending.consent?.gate, 'typed_phrase');
  assert.equal(pendingPhrase(pending), `CHARGE $50.00 to invoice #${d.fixtures.open_invoice.number}`);
  assert.equal(
    (pending.consent?.preview as { projected: { paid_cents: number } }).projected.paid_cents,
    5000,
  );
  // The phrase is typed by a human (the default phrase_channel): the operator at the terminal.
  const admin = operatorAtTerminal(await d.rt.tenants.authenticate(d.keys.admin));
  const asAdmin = (options: DispatchOptions) =>
    d.rt.dispatch({ surface: 'cli', principal: admin }, 'charge_invoice', args, options);
  const wrong = await asAdmin({
    confirm: true,
    nonce: pending.consent!.nonce,
    typed_phrase: `charge $50.00 to invoice #${d.fixtures.open_invoice.number}`,
  });
  assert.equal(wrong.error?.reason, 'phrase_mismatch');
  const paid = () =>
    d.rt.store.read((q) =>
      q.get<{ paid_cents: number }>('SELECT paid_cents FROM invoices WHERE id = ?', [
        d.fixtures.open_invoice.id,
      ]),
    );
  assert.equal((await paid())!.paid_cents, 0, 'nothing was charged');
  const ok = await asAdmin({
    confirm: true,
    nonce: pending.consent!.nonce,
    typed_phrase: pendingPhrase(pending)!,
  });
  assert.equal(ok.ok, true, JSON.stringify(ok.error));
  assert.equal((await paid())!.paid_cents, 5000);
});

test('WRITE_FINANCIAL with an owner floor: the plan upgrade; the tier floor opens at once for the upgraded company', async (t) => {
  const d = await openDemoRuntime(t);
  const second = { apiKey: d.secondOwnerKey };
  assert.equal(
    (await d.call(second, 'analytics.revenue_summary', {})).error?.reason,
    'tier_denied',
    'a starter company cannot run professional verbs',
  );
  assert.equal(
    (await d.call('admin', 'subscription_upgrade_tier', { tier: 'enterprise' })).error?.reason,
    'role_denied',
    'only the owner changes the plan',
  );
  const pending = await d.call(second, 'subscription_upgrade_tier', { tier: 'professional' });
  assert.equal(pendingPhrase(pending), 'UPGRADE to PROFESSIONAL tier immediately');
  const receipt = await d.commit(second, 'subscription_upgrade_tier', { tier: 'professional' });
  assert.equal(receipt.ok, true, JSON.stringify(receipt.error));
  assert.equal(receipt.result!.previous_tier, 'starter');
  assert.equal(
    (await d.call(second, 'analytics.revenue_summary', {})).ok,
    true,
    'the upgraded company runs professional verbs immediately',
  );
  const undo = await d.call(second, 'audit.revert', { audit_id: receipt.audit_id });
  assert.equal(pendingPhrase(undo), 'DOWNGRADE to STARTER tier immediately');
  assert.equal((await d.commit(second, 'audit.revert', { audit_id: receipt.audit_id })).ok, true);
  assert.equal(
    (await d.call(second, 'analytics.revenue_summary', {})).error?.reason,
    'tier_denied',
    'and the downgrade closes them again',
  );
});

test('IRREVERSIBLE: only the owner, with the typed phrase; it cannot be reverted', async (t) => {
  const d = await openDemoRuntime(t);
  const args = { contact_id: 43 };
  assert.equal((await d.call('admin', 'gdpr_delete_contact', args)).error?.reason, 'role_denied');
  const pending = await d.call('owner', 'gdpr_delete_contact', args);
  assert.equal(pending.consent?.class, 'IRREVERSIBLE');
  assert.equal(pendingPhrase(pending), 'DELETE CONTACT 43 PERMANENTLY');
  assert.equal((pending.consent?.preview as { reversible: boolean }).reversible, false);
  const done = await d.commit('owner', 'gdpr_delete_contact', args);
  assert.equal(done.ok, true, JSON.stringify(done.error));
  const contact = await d.rt.store.read((q) =>
    q.get<{ name: string; email: string | null; erased_at: string | null }>(
      'SELECT name, email, erased_at FROM contacts WHERE id = 43',
    ),
  );
  assert.deepEqual(
    { ...contact, erased_at: contact!.erased_at !== null },
    { name: 'Erased contact #43', email: null, erased_at: true },
  );
  const revert = await d.call('owner', 'audit.revert', { audit_id: done.audit_id });
  assert.equal(revert.ok, false);
  assert.equal(revert.error?.reason, 'not_revertible');
  assert.equal((revert.error?.details as { cause?: string }).cause, 'no_revert_handler');
});

test('BLOCKED: subscription_cancel_immediate is listed but never runs, whatever the role or confirmation', async (t) => {
  const d = await openDemoRuntime(t);
  const listed = await d.call('read_only', 'verbs.list', {});
  assert.ok(JSON.stringify(listed.result).includes('"subscription_cancel_immediate"'));
  for (const options of [{}, { confirm: true, nonce: 'x', typed_phrase: 'CANCEL' }]) {
    const env = await d.call('owner', 'subscription_cancel_immediate', {}, options);
    assert.equal(env.error?.reason, 'blocked_verb');
  }
  const sub = await d.rt.store.read((q) =>
    q.get<{ status: string }>('SELECT status FROM plan_subscriptions WHERE company_id = ?', [d.companyId]),
  );
  assert.equal(sub?.status, 'active');
});

test('phrase_channel human: no agent-readable answer quotes the phrase, previews and the approvals queue included', async (t) => {
  const d = await openDemoRuntime(t);
  const args = { invoice_number: d.fixtures.open_invoice.number, amount_cents: 5000 };
  const phrase = `CHARGE $50.00 to invoice #${d.fixtures.open_invoice.number}`;
  const pending = await d.call('admin', 'charge_invoice', args);
  assert.equal(pending.error?.reason, 'dispatch_pending');
  assert.equal(pendingPhrase(pending), phrase, 'the in-process human still reads it');
  assert.ok(pending.consent?.preview !== undefined, 'the preview is still shown');
  assert.ok(!JSON.stringify(pending).includes(phrase), JSON.stringify(pending.consent?.preview));
  const listed = await d.call('owner', 'approvals.list', { approval_id: pending.consent!.approval_id });
  assert.equal(listed.ok, true, JSON.stringify(listed.error));
  assert.ok(!JSON.stringify(listed).includes(phrase), 'the queue read with a key hides it too');
});
