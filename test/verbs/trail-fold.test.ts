/**
 * One action, one Activity row, in the owner's words (issue 32 row 6): audit.trail `fold` leaves
 * out the pending entry (the consent request) of an action that was then confirmed — linked by
 * the nonce the write burned (pending_actions, spec/audit.md §fold) — and lists it on the write's
 * entry; a request never confirmed stays; every entry says what it did in words.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import { dispatchAs } from '../support/keyed.ts';

interface Entry {
  audit_id: number;
  action: string;
  status: string;
  words?: string | null;
  arguments?: Record<string, unknown>;
  pending_audit_ids?: number[];
}

it('folds a confirmed action and its consent request into one entry, in words', async (t) => {
  const h = await counterRuntime(t);
  const caller = { surface: 'cli' as const, apiKey: h.keys.employee };
  // Confirmed: a pending answer, then the write with its nonce.
  const first = await dispatchAs(h.rt, caller, 'counter.add', { name: 'till', by: 7 });
  assert.equal(first.error?.reason, 'dispatch_pending');
  const done = await dispatchAs(
    h.rt,
    caller,
    'counter.add',
    { name: 'till', by: 7 },
    {
      confirm: true,
      nonce: first.consent!.nonce,
    },
  );
  assert.equal(done.ok, true, JSON.stringify(done.error));
  // Asked and never confirmed: stays a request of its own.
  const waiting = await dispatchAs(h.rt, caller, 'counter.add', { name: 'door', by: 2 });
  assert.equal(waiting.error?.reason, 'dispatch_pending');

  const read = async (fold: boolean): Promise<Entry[]> => {
    const r = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.admin }, 'audit.trail', {
      scope: 'business',
      ...(fold ? { fold: true } : {}),
    });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    return (r.result as { entries: Entry[] }).entries;
  };
  const raw = await read(false);
  const rawPending = raw.filter((e) => e.action === 'counter.add' && e.status === 'pending');
  assert.equal(rawPending.length, 2, 'unfolded: both requests are in the log');
  const folded = await read(true);
  const adds = folded.filter((e) => e.action === 'counter.add');
  assert.deepEqual(
    adds.map((e) => e.status),
    ['pending', 'completed'],
    'folded: the open request and the one confirmed action',
  );
  const write = adds.find((e) => e.status === 'completed')!;
  assert.equal(write.audit_id, done.audit_id);
  assert.deepEqual(write.pending_audit_ids, [first.audit_id], 'the write names the request it answered');
  assert.equal(write.words, 'Add 7 to counter till.');
  assert.deepEqual(write.arguments, { name: 'till', by: 7 });
  const open = adds.find((e) => e.status === 'pending')!;
  assert.equal(open.audit_id, waiting.audit_id);
  assert.equal(open.words, 'Add 2 to counter door.');
  assert.deepEqual(open.pending_audit_ids, []);
  // The log itself is unchanged: the pending row is still there for the auditor, by its id.
  const byId = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.admin }, 'audit.trail', {
    audit_id: first.audit_id!,
  });
  assert.equal((byId.result as { entries: Entry[] }).entries[0]?.status, 'pending');
});

it('folds a typed-phrase request into the charge it allowed', async (t) => {
  const h = await counterRuntime(t);
  const done = await consented(h, h.keys.admin, 'counter.charge', { name: 'till', cents: 12000 });
  assert.equal(done.ok, true, JSON.stringify(done.error));
  const r = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.admin }, 'audit.trail', {
    scope: 'business',
    fold: true,
    verb: 'counter.charge',
  });
  const entries = (r.result as { entries: Entry[] }).entries;
  assert.equal(entries.length, 1, JSON.stringify(entries));
  assert.equal(entries[0]!.status, 'completed');
  assert.equal(entries[0]!.pending_audit_ids!.length, 1);
});
