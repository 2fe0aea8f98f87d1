/**
 * The undo in the owner's words (issue 32 row 8): audit.revert's consent request says what the
 * action did (its verb's summary), who did it and when in the business's time zone — not the
 * verb's name and a UTC timestamp — and it still passes the action's own gate.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import { dispatchAs } from '../support/keyed.ts';

it("asks to undo in the owner's words, at the business's local time", async (t) => {
  const h = await counterRuntime(t);
  const done = await consented(h, h.keys.employee, 'counter.add', { name: 'till', by: 7 });
  assert.equal(done.ok, true, JSON.stringify(done.error));
  const settings = (await h.rt.tenants.get(h.companyId))!.settings;
  await h.rt.store.write((tx) =>
    tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
      JSON.stringify({ ...settings, time_zone: 'Asia/Tokyo' }),
      h.companyId,
    ]),
  );
  h.rt.tenants.invalidate();
  const undo = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.admin }, 'audit.revert', {
    audit_id: done.audit_id!,
  });
  assert.equal(undo.error?.reason, 'dispatch_pending', 'the undo still asks for consent');
  const row = await h.rt.store.read((q) =>
    q.get<{ created_at: string }>('SELECT created_at FROM audit_log WHERE audit_id = ?', [done.audit_id]),
  );
  const tokyo = new Date(row!.created_at).toLocaleString('en-GB', {
    dateStyle: 'medium',
    timeStyle: 'short',
    timeZone: 'Asia/Tokyo',
  });
  assert.equal(
    undo.consent!.summary,
    `Undo “Add 7 to counter till” (receipt #${done.audit_id}), done by user 3 (employee) on ${tokyo} (Asia/Tokyo).`,
  );
  assert.doesNotMatch(undo.consent!.summary, /counter\.add|T\d\d:\d\d/);
});
