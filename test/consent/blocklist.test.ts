/**
 * The blocklist (issue 3 §6, spec/consent.md §blocklist): the four default names and configured
 * names (runtime option, tenant settings) are refused with blocked_verb whatever the role, phrase
 * or nonce, registered or not, under any spelling with the same block key, and audited as blocked.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, expectDenied, pendingOf } from './support.ts';
import { noteUpdate } from './pack.ts';
import { blocklistKey, DEFAULT_BLOCKLIST } from '../../src/runtime/consent/blocklist.ts';
import { createTestRuntime } from '../support/runtime.ts';
import { dispatchAs } from '../support/keyed.ts';

test('the four default names are refused for the owner, registered or not, and audited as blocked attempts', async (t) => {
  const h = await consentHarness(t);
  assert.deepEqual(
    [...DEFAULT_BLOCKLIST],
    ['subscription_cancel_immediate', 'customer_delete', 'company_delete', 'employee_terminate'],
  );
  // register one of them as a real verb: it is still refused before it is even resolved
  h.rt.register({ ...noteUpdate, name: 'customer_delete' });
  for (const name of DEFAULT_BLOCKLIST) {
    const env = await h.call('owner', name, { customer_id: 42 });
    const row = await expectDenied(h, env, 'blocked_verb', { role: 'owner', args: { customer_id: 42 } });
    assert.equal(row.action_type, name);
    assert.match(env.error!.hint!, /safe alternative/);
  }
  assert.equal(await h.effects(), 0);
  assert.equal((await h.audit({ reason: 'unknown_verb' })).length, 0);
});

test('spelling variants of a blocked name are the same name: case, dots, tool-name projection, hyphens, camelCase', async (t) => {
  const h = await consentHarness(t);
  for (const name of [
    'Customer_Delete',
    'customer.delete',
    'customer__delete',
    'customer-delete',
    'customerDelete',
    'CUSTOMER_DELETE',
  ]) {
    await expectDenied(h, await h.call('owner', name, {}), 'blocked_verb', { role: 'owner' });
  }
  assert.equal(blocklistKey('customer.Delete'), blocklistKey('customer_delete'));
  assert.notEqual(blocklistKey('gdpr_delete_contact'), blocklistKey('customer_delete'));
  // the deliberately named safe alternative is not blocked
  pendingOf(await h.call('owner', 'gdpr_delete_contact', { contact_id: 1 }));
});

test('names from the runtime option are blocked for every tenant', async (t) => {
  const h = await createTestRuntime(t, { blocklist: ['payments.refund_all'] });
  for (const key of [h.keys.owner, h.otherOwnerKey]) {
    const env = await dispatchAs(h.rt, { surface: 'http', apiKey: key }, 'payments__refund_all', {});
    assert.equal(env.error?.reason, 'blocked_verb');
  }
});

test('tenant.blocklist_add blocks a registered verb for this tenant only, whatever the role, phrase or nonce; remove unblocks it', async (t) => {
  const h = await consentHarness(t);
  const args = { invoice_id: 1, amount_cents: 100 };
  const held = pendingOf(await h.call('owner', 'charge_invoice', args)); // a nonce obtained before the block
  await expectDenied(
    h,
    await h.call('admin', 'tenant.blocklist_add', { name: 'charge_invoice' }),
    'role_denied',
    { role: 'admin' },
  );
  const c = pendingOf(await h.call('owner', 'tenant.blocklist_add', { name: 'charge_invoice' }));
  const added = await h.call(
    'owner',
    'tenant.blocklist_add',
    { name: 'charge_invoice' },
    { confirm: true, nonce: c.nonce },
  );
  assert.equal(added.ok, true, JSON.stringify(added));
  assert.deepEqual(added.result!.blocklist, ['charge_invoice']);
  assert.equal(
    (await h.lastAudit({ action_type: 'tenant.blocklist_add', status: 'completed' })).role,
    'owner',
  );

  const env = await h.call('owner', 'charge_invoice', args, {
    confirm: true,
    nonce: held.nonce,
    typed_phrase: held.typed_phrase,
  });
  const row = await expectDenied(h, env, 'blocked_verb', { role: 'owner', args });
  assert.equal(row.action_type, 'charge_invoice');
  await expectDenied(h, await h.call('admin', 'Charge.Invoice', args), 'blocked_verb', { role: 'admin' });
  assert.equal(await h.effects(), 0);
  // another tenant is not affected
  pendingOf(await h.call('other_owner', 'charge_invoice', args));

  // a hallucinated name can be blocked too: recorded as blocked, not unknown
  const c2 = pendingOf(await h.call('owner', 'tenant.blocklist_add', { name: 'invoices.void_all' }));
  assert.equal(
    (
      await h.call(
        'owner',
        'tenant.blocklist_add',
        { name: 'invoices.void_all' },
        { confirm: true, nonce: c2.nonce },
      )
    ).ok,
    true,
  );
  await expectDenied(h, await h.call('employee', 'invoices__void_all', { all: true }), 'blocked_verb', {
    role: 'employee',
    args: { all: true },
  });

  const c3 = pendingOf(await h.callAsHuman('owner', 'tenant.blocklist_remove', { name: 'CHARGE_INVOICE' }));
  const removed = await h.callAsHuman(
    'owner',
    'tenant.blocklist_remove',
    { name: 'CHARGE_INVOICE' },
    { confirm: true, nonce: c3.nonce },
  );
  assert.equal(removed.ok, true, JSON.stringify(removed));
  assert.deepEqual(removed.result!.blocklist, ['invoices.void_all']);
  pendingOf(await h.call('owner', 'charge_invoice', args));
});

test('the built-in names cannot be unblocked, and the settings verbs cannot be blocked', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.callAsHuman('owner', 'tenant.blocklist_remove', { name: 'customer_delete' }));
  const env = await h.callAsHuman(
    'owner',
    'tenant.blocklist_remove',
    { name: 'customer_delete' },
    { confirm: true, nonce: c.nonce },
  );
  assert.equal(env.error?.reason, 'invalid_input');
  assert.equal(env.error?.path, '/name');
  await expectDenied(h, await h.call('owner', 'customer_delete', {}), 'blocked_verb');
  const c2 = pendingOf(await h.call('owner', 'tenant.blocklist_add', { name: 'tenant.blocklist_remove' }));
  const lock = await h.call(
    'owner',
    'tenant.blocklist_add',
    { name: 'tenant.blocklist_remove' },
    { confirm: true, nonce: c2.nonce },
  );
  assert.equal(lock.error?.reason, 'invalid_input');
  const c3 = pendingOf(await h.callAsHuman('owner', 'tenant.blocklist_remove', { name: 'never_added' }));
  assert.equal(
    (
      await h.callAsHuman(
        'owner',
        'tenant.blocklist_remove',
        { name: 'never_added' },
        { confirm: true, nonce: c3.nonce },
      )
    ).error?.reason,
    'not_found',
  );
});

test('tenant settings blocklist (set directly) is honoured, and a blocked attempt by a keyless caller is audited under the sandbox', async (t) => {
  const h = await consentHarness(t);
  await h.setSettings({ blocklist: ['crm.export_everything'] });
  await expectDenied(h, await h.call('read_only', 'crm.export_everything', {}), 'blocked_verb', {
    role: 'read_only',
  });
  const anon = await h.rt.dispatch({ surface: 'mcp_stdio' }, 'company_delete', { id: 1 });
  assert.equal(anon.error?.reason, 'blocked_verb');
  const rows = await h.audit({ company_id: h.sandboxId, reason: 'blocked_verb' });
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.status, 'denied');
  assert.equal(rows[0]!.role, 'read_only');
});
