/**
 * Issue 32 row 8: a write that only adds something to an entity (a note on a contact) is undone
 * by removing what it added. A later write that also only added (another note on the same
 * contact) does not conflict with that undo — reverting the earlier note is not refused
 * changed_since — and a forced revert over a later change it does not discard says the later
 * change stays (never that it was discarded). spec/receipts.md §revert rule 7. Runs on the seeded
 * demo business (also on PostgreSQL with SOLID_TEST_ENGINE=postgres).
 */
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

async function noteBodies(d: DemoRuntime, contactId: number): Promise<string[]> {
  const rows = await d.rt.store.read((q) =>
    q.all<{ body: string }>('SELECT body FROM notes WHERE contact_id = ? ORDER BY id', [contactId]),
  );
  return rows.map((r) => r.body);
}

async function addNote(d: DemoRuntime, contactId: number, body: string): Promise<number> {
  const env = await d.commit('employee', 'crm.add_note', { contact_id: contactId, body });
  ok(env);
  return Number(env.audit_id);
}

test('reverting an earlier note after a different later note on the same contact removes only the earlier one', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  const before = await noteBodies(d, id);
  const first = await addNote(d, id, 'gate code 1234');
  await addNote(d, id, 'prefers mornings');
  const reverted = ok(await d.commit('employee', 'audit.revert', { audit_id: first }));
  assert.equal(reverted.reverted, true);
  assert.equal(reverted.forced, undefined);
  assert.equal(reverted.discarded_audit_id, undefined);
  assert.deepEqual(await noteBodies(d, id), [...before, 'prefers mornings'], 'the later note stays');
});

test('a later change of the contact itself still asks for force, and the forced answer says it stays', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  const note = await addNote(d, id, 'gate code 1234');
  const update = await d.commit('employee', 'crm_contact_update', { contact_id: id, phone: '+18015550109' });
  ok(update);
  const refused = await d.commit('employee', 'audit.revert', { audit_id: note });
  assert.equal(refused.error?.reason, 'changed_since');
  assert.doesNotMatch(refused.error!.hint ?? '', /discard/, 'an additive undo discards nothing later');
  const forced = ok(await d.commit('employee', 'audit.revert', { audit_id: note, force: true }));
  assert.equal(forced.reverted, true);
  assert.equal(forced.forced, true);
  assert.equal(forced.discarded_audit_id, undefined, 'nothing later was discarded');
  assert.equal(forced.kept_audit_id, update.audit_id);
  assert.doesNotMatch(String(forced.message), /discarded/);
  assert.match(String(forced.message), new RegExp(`audit row ${update.audit_id} stays`));
  const phone = await d.rt.store.read((q) =>
    q.get<{ phone: string }>('SELECT phone FROM contacts WHERE id = ?', [id]),
  );
  assert.equal(phone?.phone, '+18015550109', 'the later change is still there');
  assert.equal((await noteBodies(d, id)).includes('gate code 1234'), false);
});
