/**
 * The owner's governance verbs count against no daily cap, so an owner can raise a cap or block a
 * verb after a runaway agent used the day's cap up. Spec: spec/consent.md §caps.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, pendingOf } from './support.ts';

test('after the WRITE_REVERSIBLE cap is used up, the owner still raises it and blocks a verb; writes then run again', async (t) => {
  const h = await consentHarness(t);
  const confirmed = async (role: string, verb: string, args: Record<string, unknown>, human = false) => {
    const call = human ? h.callAsHuman : h.call;
    const p = await call(role, verb, args);
    // A used-up cap refuses the preflight itself: that refusal is the write's answer.
    if (p.error?.reason !== 'dispatch_pending') return p;
    return call(role, verb, args, { confirm: true, nonce: pendingOf(p).nonce });
  };
  await h.setSettings({ caps: { WRITE_REVERSIBLE: 1 } });
  assert.equal((await confirmed('employee', 'ct.note_update', { contact_id: 1, note: 'one' })).ok, true);
  const over = await confirmed('employee', 'ct.note_update', { contact_id: 1, note: 'two' });
  assert.equal(over.error?.reason, 'daily_cap_exceeded');
  const blocked = await confirmed('owner', 'tenant.blocklist_add', { name: 'made_up_verb' });
  assert.equal(blocked.ok, true, JSON.stringify(blocked));
  // Raising a cap loosens a consent setting: the owner, signed in (an agent's key is refused).
  const byAgent = await confirmed('owner', 'tenant.caps_set', {
    consent_class: 'WRITE_REVERSIBLE',
    limit: 5,
  });
  assert.equal(byAgent.error?.reason, 'human_required');
  const raised = await confirmed(
    'owner',
    'tenant.caps_set',
    { consent_class: 'WRITE_REVERSIBLE', limit: 5 },
    true,
  );
  assert.equal(raised.ok, true, JSON.stringify(raised));
  assert.equal(
    (await confirmed('employee', 'ct.note_update', { contact_id: 1, note: 'three' })).ok,
    true,
    'the raised cap applies',
  );
  assert.equal(await h.effects('ct.note_update'), 2);
});

test('a nonce with confirm=false (or without confirm) runs nothing', async (t) => {
  const h = await consentHarness(t);
  const args = { contact_id: 1, note: 'x' };
  const nonce = pendingOf(await h.call('employee', 'ct.note_update', args)).nonce;
  for (const options of [{ confirm: false, nonce }, { nonce }]) {
    const env = await h.call('employee', 'ct.note_update', args, options);
    assert.equal(env.ok, false);
    assert.equal(env.error?.reason, 'invalid_request');
  }
  assert.equal(await h.effects('ct.note_update'), 0);
  assert.equal(
    (await h.call('employee', 'ct.note_update', args, { confirm: true, nonce })).ok,
    true,
    'the nonce still works when confirmed',
  );
});

test('an agent cannot undo a human tightening: reverting a lowered cap or a new block answers human_required', async (t) => {
  const h = await consentHarness(t);
  const confirmedBy = async (human: boolean, verb: string, args: Record<string, unknown>) => {
    const call = human ? h.callAsHuman : h.call;
    const p = await call('owner', verb, args);
    if (p.error?.reason !== 'dispatch_pending') return p;
    return call('owner', verb, args, { confirm: true, nonce: pendingOf(p).nonce });
  };
  // The owner, signed in, lowers the financial cap and blocks a verb.
  const lowered = await confirmedBy(true, 'tenant.caps_set', { consent_class: 'WRITE_FINANCIAL', limit: 3 });
  assert.equal(lowered.ok, true, JSON.stringify(lowered));
  const blocked = await confirmedBy(true, 'tenant.blocklist_add', { name: 'charge_invoice' });
  assert.equal(blocked.ok, true, JSON.stringify(blocked));
  // An agent holding the owner's key tries to undo both, and to loosen them directly.
  for (const [verb, args] of [
    ['audit.revert', { audit_id: lowered.audit_id, force: true }],
    ['audit.revert', { audit_id: blocked.audit_id, force: true }],
    ['tenant.caps_set', { consent_class: 'WRITE_FINANCIAL', limit: 100 }],
    ['tenant.blocklist_remove', { name: 'charge_invoice' }],
  ] as const) {
    const env = await confirmedBy(false, verb, args);
    assert.equal(env.ok, false, `${verb} ${JSON.stringify(args)}: ${JSON.stringify(env)}`);
    assert.equal(env.error?.reason, 'human_required', `${verb}: ${JSON.stringify(env.error)}`);
  }
  h.rt.tenants.invalidate();
  const settings = (await h.callAsHuman('owner', 'tenant.settings', {})).result!.data as {
    caps: Record<string, { limit: number }>;
    blocklist: { tenant: string[] };
  };
  assert.equal(settings.caps.WRITE_FINANCIAL!.limit, 3, 'the human’s cap stands');
  assert.deepEqual(settings.blocklist.tenant, ['charge_invoice'], 'the human’s block stands');
  // Tightening further stays open to the agent: it only removes ways to act.
  const tighter = await confirmedBy(false, 'tenant.caps_set', { consent_class: 'WRITE_FINANCIAL', limit: 2 });
  assert.equal(tighter.ok, true, JSON.stringify(tighter));
});
