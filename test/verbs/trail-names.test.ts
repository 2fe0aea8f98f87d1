/**
 * Activity rows in the owner's words (issue 32 item 4): with `fold`, one entry per action, and an
 * entry names the customer (the contact's name, never "contact 17"), the object and the amount —
 * the verb's `activity` hook over the audited arguments, read in the caller's tenant. The receipt
 * view's single entry says the same. Runs on the seeded demo business.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Envelope } from '../../src/spec/types.ts';
import { openDemoRuntime, type DemoRuntime } from '../support/demo.ts';
import { formatCents } from '../../src/runtime/consent/typed-phrase.ts';

interface Entry {
  audit_id: number;
  action: string;
  status: string;
  words?: string | null;
  pending_audit_ids?: number[];
}

function ok(env: Envelope): Envelope {
  assert.equal(env.ok, true, `${env.verb}: ${JSON.stringify(env.error)}`);
  return env;
}

async function customerName(d: DemoRuntime): Promise<string> {
  return (await d.rt.store.read((q) =>
    q.get<{ name: string }>('SELECT name FROM contacts WHERE id = ?', [d.fixtures.customer_id]),
  ))!.name;
}

async function trail(d: DemoRuntime, args: Record<string, unknown>): Promise<Entry[]> {
  return (ok(await d.call('admin', 'audit.trail', args)).result as { entries: Entry[] }).entries;
}

test('a charge, its refund and a contact change each read as one row naming the customer and the amount', async (t) => {
  const d = await openDemoRuntime(t);
  const name = await customerName(d);
  const inv = d.fixtures.open_invoice;
  const charge = ok(
    await d.commit('admin', 'charge_invoice', { invoice_number: inv.number, amount_cents: 1500 }),
  );
  const ref = (charge.result as { charge_ref: string }).charge_ref;
  const refund = ok(await d.commit('admin', 'issue_refund', { charge_ref: ref, amount_cents: 500 }));
  const update = ok(
    await d.commit('employee', 'crm_contact_update', {
      contact_id: d.fixtures.customer_id,
      phone: '+1 555 0199',
    }),
  );
  const entries = await trail(d, { scope: 'business', fold: true, limit: 10 });
  const of = (id: number | undefined): Entry => {
    const e = entries.find((x) => x.audit_id === id);
    assert.ok(e, `entry ${id} is listed`);
    return e;
  };
  assert.equal(
    of(charge.audit_id).words,
    `Charge ${formatCents(1500)} by card to ${name} (invoice #${inv.number})`,
  );
  assert.equal(
    of(refund.audit_id).words,
    `Refund ${formatCents(500)} to ${name} on charge ${ref} (invoice #${inv.number})`,
  );
  assert.equal(of(update.audit_id).words, `Update ${name}: phone`);
  // One row per action: the consent requests those writes answered are folded into them.
  for (const w of [charge, refund, update]) {
    assert.equal(of(w.audit_id).pending_audit_ids?.length, 1);
    assert.equal(entries.filter((e) => of(w.audit_id).pending_audit_ids!.includes(e.audit_id)).length, 0);
  }
  assert.equal(entries.filter((e) => e.status === 'pending').length, 0, 'no leftover waiting rows');
  for (const e of entries) assert.doesNotMatch(e.words ?? '', /contact \d+/);
  // The receipt view's one entry says the same.
  const [single] = await trail(d, { audit_id: charge.audit_id, limit: 1 });
  assert.equal(single!.words, of(charge.audit_id).words);
});

test("an action whose object is gone falls back to the verb's summary", async (t) => {
  const d = await openDemoRuntime(t);
  const env = await d.call('employee', 'crm.add_note', { contact_id: 987654, body: 'x' });
  assert.equal(env.ok, false);
  const [entry] = await trail(d, { audit_id: env.audit_id, limit: 1 });
  assert.equal(entry!.words, 'Add a note to contact 987654.');
});
