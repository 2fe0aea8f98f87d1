/**
 * The voice category of the demo business (src/business/verbs/voice.ts): the call log
 * aggregate, a voicemail explained, a call-back previewed, confirmed and reverted, and another
 * tenant's calls out of reach. Runs on SQLite, and on PostgreSQL with SOLID_TEST_ENGINE=postgres.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDemoRuntime } from '../support/demo.ts';
import { unreturnedCall } from './verbs/sample-calls.ts';

const DAY = 86_400_000;

test('voice.calls counts the log and lists the unreturned calls; explain_voicemail gives the transcript', async (t) => {
  const d = await openDemoRuntime(t);
  const env = await d.call('read_only', 'voice.calls', { days: 14 });
  assert.equal(env.ok, true, JSON.stringify(env.error));
  const data = env.result!.data as {
    total_calls: number;
    by_direction_outcome: Array<{ calls: number }>;
    latest: unknown[];
    unreturned: Array<{ id: number; direction: string; outcome: string; voicemail_id: number | null }>;
  };
  assert.ok(data.total_calls > 0);
  assert.equal(
    data.by_direction_outcome.reduce((s, r) => s + r.calls, 0),
    data.total_calls,
  );
  assert.ok(data.unreturned.length > 0);
  for (const c of data.unreturned) assert.ok(c.direction === 'inbound' && c.outcome !== 'answered');
  const vm = data.unreturned.find((c) => c.voicemail_id !== null);
  assert.ok(vm, 'a voicemail waits for a call-back');
  const why = await d.call('read_only', 'voice.explain_voicemail', { voicemail_id: vm.voicemail_id });
  assert.equal(why.ok, true, JSON.stringify(why.error));
  const state = why.result!.current_state as { transcript: string; call_id: number; callback_id: null };
  assert.ok(state.transcript.length > 10);
  assert.equal(state.call_id, vm.id);
  assert.equal(state.callback_id, null);
  assert.ok((why.result!.causal_chain as unknown[]).length >= 1);
});

test('a call-back: preview writes nothing, the confirmed write schedules it, revert cancels it', async (t) => {
  const d = await openDemoRuntime(t);
  const callId = await unreturnedCall(d);
  const args = {
    call_id: callId,
    due_at: new Date(d.rt.clock().getTime() + DAY).toISOString(),
    note: 'Ask about the furnace.',
    assigned_user_id: d.fixtures.employee_user_id,
  };
  const count = () =>
    d.rt.store.read((q) =>
      q.all<{ status: string }>('SELECT status FROM callbacks WHERE company_id = ? AND call_id = ?', [
        d.companyId,
        callId,
      ]),
    );
  const preview = await d.call('employee', 'voice.preview_callback', args);
  assert.equal(preview.ok, true, JSON.stringify(preview.error));
  assert.equal(preview.result!.reversible, true);
  assert.deepEqual(await count(), []);

  const pending = await d.call('employee', 'voice.schedule_callback', args);
  assert.equal(pending.consent?.class, 'WRITE_REVERSIBLE', 'a human confirms the call-back');
  assert.deepEqual(await count(), [], 'nothing written before the confirmation');
  const done = await d.commit('employee', 'voice.schedule_callback', args);
  assert.equal(done.ok, true, JSON.stringify(done.error));
  assert.equal(done.result!.status, 'scheduled');
  assert.deepEqual(await count(), [{ status: 'scheduled' }]);
  const again = await d.call('employee', 'voice.preview_callback', args);
  assert.equal(again.error?.reason, 'callback_exists');
  const past = await d.call('employee', 'voice.preview_callback', {
    ...args,
    due_at: new Date(d.rt.clock().getTime() - DAY).toISOString(),
  });
  assert.equal(past.error?.reason, 'time_in_past');

  const revert = await d.commit('employee', 'audit.revert', { audit_id: done.audit_id });
  assert.equal(revert.ok, true, JSON.stringify(revert.error));
  assert.deepEqual(await count(), [{ status: 'cancelled' }]);
});

test("another tenant's calls and voicemails are out of reach", async (t) => {
  const d = await openDemoRuntime(t);
  const theirs = await d.rt.store.read((q) =>
    q.get<{ call_id: unknown; id: unknown }>(
      'SELECT call_id, id FROM voicemails WHERE company_id = ? ORDER BY id LIMIT 1',
      [d.secondCompanyId],
    ),
  );
  assert.ok(theirs, 'company 3 has a voicemail');
  const me = { apiKey: d.keys.owner };
  const explain = await d.call(me, 'voice.explain_voicemail', { voicemail_id: Number(theirs.id) });
  assert.equal(explain.error?.reason, 'not_found');
  const preview = await d.call(me, 'voice.preview_callback', {
    call_id: Number(theirs.call_id),
    due_at: new Date(d.rt.clock().getTime() + DAY).toISOString(),
  });
  assert.equal(preview.error?.reason, 'not_found');
  const mine = await d.call('owner', 'voice.calls', { days: 90 });
  const theirsCalls = await d.call({ apiKey: d.secondOwnerKey }, 'voice.calls', { days: 90 });
  const ids = (e: typeof mine) =>
    (e.result!.data as { latest: Array<{ id: number }> }).latest.map((c) => c.id);
  assert.equal(
    ids(mine).filter((id) => ids(theirsCalls).includes(id)).length,
    0,
    'no call appears in both logs',
  );
});

test('a GDPR erasure clears the contact’s numbers, voicemail transcripts and reviews; the export lists them first', async (t) => {
  const d = await openDemoRuntime(t);
  const row = await d.rt.store.read((q) =>
    q.get<{ contact_id: unknown }>(
      `SELECT c.contact_id FROM calls c JOIN voicemails v ON v.company_id = c.company_id AND v.call_id = c.id
        WHERE c.company_id = ? AND c.contact_id IS NOT NULL ORDER BY c.id LIMIT 1`,
      [d.companyId],
    ),
  );
  const contactId = Number(row!.contact_id);
  const exported = await d.call('admin', 'gdpr.export_contact_data', { contact_id: contactId });
  const data = exported.result!.data as { calls: Array<{ voicemail_transcript: string | null }> };
  assert.ok(
    data.calls.some((c) => c.voicemail_transcript !== null),
    'the export carries the transcript',
  );
  const done = await d.commit('owner', 'gdpr_delete_contact', { contact_id: contactId });
  assert.equal(done.ok, true, JSON.stringify(done.error));
  assert.ok(Number(done.result!.calls_redacted) > 0);
  const left = await d.rt.store.read((q) =>
    q.all<{ phone: string; transcript: string | null }>(
      `SELECT c.phone, v.transcript FROM calls c LEFT JOIN voicemails v ON v.company_id = c.company_id AND v.call_id = c.id
        WHERE c.company_id = ? AND c.contact_id = ?`,
      [d.companyId, contactId],
    ),
  );
  for (const c of left) {
    assert.equal(c.phone, '[erased]');
    assert.ok(c.transcript === null || c.transcript === '[erased]');
  }
  const reviews = await d.rt.store.read((q) =>
    q.all<{ author: string }>('SELECT author FROM reviews WHERE company_id = ? AND contact_id = ?', [
      d.companyId,
      contactId,
    ]),
  );
  assert.ok(reviews.every((r) => r.author === '[erased]'));
});
