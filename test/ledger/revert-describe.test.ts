/**
 * The undo dialog names the change before → after (issue 32 item 4): a revertible verb's
 * `revert.describe` turns its revert data into the owner's words, and audit.revert's consent
 * summary shows them in place of the verb's summary; a verb without the hook (or whose hook
 * throws) keeps the summary. Runs on the seeded demo business.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Envelope } from '../../src/spec/types.ts';
import { openDemoRuntime } from '../support/demo.ts';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import { dispatchAs } from '../support/keyed.ts';

function ok(env: Envelope): Envelope {
  assert.equal(env.ok, true, `${env.verb}: ${JSON.stringify(env.error)}`);
  return env;
}

test('undoing a contact update asks in its before → after words, naming the contact', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  const before = await d.rt.store.read((q) =>
    q.get<{ name: string; phone: string | null }>('SELECT name, phone FROM contacts WHERE id = ?', [id]),
  );
  const update = ok(
    await d.commit('employee', 'crm_contact_update', { contact_id: id, phone: '+1 555 0199' }),
  );
  const undo = await d.call('employee', 'audit.revert', { audit_id: update.audit_id });
  assert.equal(undo.error?.reason, 'dispatch_pending', 'the undo still asks for consent');
  const summary = undo.consent!.summary;
  assert.match(
    summary,
    new RegExp(
      `^Undo “Phone of ${before!.name}: ${(before!.phone ?? 'none').replace(/[+]/g, '\\+')} → \\+1 555 0199” \\(receipt #${update.audit_id}\\)`,
    ),
  );
  assert.doesNotMatch(summary, /contact \d+|crm_contact_update/);
});

test('undoing a note names the contact it was added to, never the note body', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  const name = (await d.rt.store.read((q) =>
    q.get<{ name: string }>('SELECT name FROM contacts WHERE id = ?', [id]),
  ))!.name;
  const note = ok(await d.commit('employee', 'crm.add_note', { contact_id: id, body: 'gate code 1234' }));
  const undo = await d.call('employee', 'audit.revert', { audit_id: note.audit_id });
  assert.match(undo.consent!.summary, new RegExp(`^Undo “Notes of ${name}: note #\\d+ added”`));
  assert.doesNotMatch(undo.consent!.summary, /gate code/, "the agent's text stays out of the sentence");
});

test('undoing a deal stage move says from which stage to which', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.proposal_deal_id;
  const deal = (await d.rt.store.read((q) =>
    q.get<{ title: string }>('SELECT title FROM deals WHERE id = ?', [id]),
  ))!;
  const moved = ok(await d.commit('employee', 'deals.move_stage', { deal_id: id, to_stage: 'negotiation' }));
  const undo = await d.call('employee', 'audit.revert', { audit_id: moved.audit_id });
  assert.match(
    undo.consent!.summary,
    new RegExp(`^Undo “Stage of deal “${deal.title}” \\(#${id}\\): proposal sent → negotiation”`),
  );
});

test('a verb without describe keeps its summary in the undo dialog', async (t) => {
  const h = await counterRuntime(t);
  const done = await consented(h, h.keys.employee, 'counter.add', { name: 'till', by: 7 });
  const undo = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.admin }, 'audit.revert', {
    audit_id: done.audit_id!,
  });
  assert.match(undo.consent!.summary, /^Undo “Add 7 to counter till” \(receipt #/);
});

test('each demo setter names its change before → after in the undo dialog', async (t) => {
  const d = await openDemoRuntime(t);
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      'deals.update',
      { deal_id: d.fixtures.proposal_deal_id, amount_cents: 90000 },
      /^Amount of deal “.+” \(#\d+\): \$[\d,.]+ → \$900\.00$/,
    ],
    ['team.set_role', { employee_user_id: 5, role: 'admin' }, /^Role of user #5: \w[\w ]* → admin$/],
    ['team.set_active', { employee_user_id: 8, active: false }, /^User #8: active → inactive$/],
    ['infrastructure_resize', { size: 'MEDIUM' }, /^Size of droplet #\d+: \w+ → MEDIUM$/],
    ['infrastructure_scale_workers', { delta: 2 }, /^Workers of droplet #\d+: (\d+) → \d+$/],
  ];
  for (const [verb, args, words] of cases) {
    const done = ok(await d.commit('owner', verb, args));
    const undo = await d.call('owner', 'audit.revert', { audit_id: done.audit_id });
    const quoted = /^Undo “(.*)” \(receipt #\d+\)/.exec(undo.consent?.summary ?? '')?.[1];
    assert.match(quoted ?? '', words, `${verb}: ${undo.consent?.summary ?? JSON.stringify(undo.error)}`);
  }
});
