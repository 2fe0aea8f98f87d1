/**
 * Consent classes at the dispatch level (issue 3 §1–3, spec/consent.md §classes, §gates,
 * §role-floors): what each class asks for, who may run it, and what the pending answer says.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, expectDenied, pendingOf } from './support.ts';
import { executeInTx } from '../../src/runtime/ledger/write/execute.ts';
import { argsHash } from '../../src/runtime/ledger/write/idempotency.ts';

const CHARGE = { invoice_id: 4242, amount_cents: 5000 };

test('READ runs at once for every role, with no consent block and no nonce', async (t) => {
  const h = await consentHarness(t);
  for (const role of ['read_only', 'employee', 'admin', 'owner']) {
    const env = await h.call(role, 'ct.lookup', { contact_id: 7 });
    assert.equal(env.ok, true, JSON.stringify(env));
    assert.equal(env.consent, undefined);
  }
});

test('WRITE_REVERSIBLE: the first call answers dispatch_pending (confirmation gate) and runs nothing; confirm + nonce executes once', async (t) => {
  const h = await consentHarness(t);
  const args = { contact_id: 7, note: 'call back Tuesday' };
  const first = await h.call('employee', 'ct.note_update', args);
  const c = pendingOf(first);
  assert.equal(c.class, 'WRITE_REVERSIBLE');
  assert.equal(c.gate, 'confirmation');
  assert.equal(c.typed_phrase, undefined);
  assert.equal(c.approval_id, undefined);
  assert.equal(c.summary, 'Set the note of contact 7 to "call back Tuesday".');
  assert.equal(c.expires_at, '2026-03-10T12:05:00.000Z');
  assert.match(c.nonce, /^n1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  assert.equal(await h.effects(), 0);
  const pendingRow = await h.lastAudit({ action_type: 'ct.note_update' });
  assert.equal(pendingRow.status, 'pending');
  assert.equal(pendingRow.reason, 'dispatch_pending');
  assert.equal(pendingRow.requires_approval, 0);

  const done = await h.call('employee', 'ct.note_update', args, { confirm: true, nonce: c.nonce });
  assert.equal(done.ok, true, JSON.stringify(done));
  assert.equal(done.result?.status, 'completed');
  assert.equal(await h.effects('ct.note_update'), 1);
  const row = await h.lastAudit({ action_type: 'ct.note_update', status: 'completed' });
  assert.equal(row.consent_class, 'WRITE_REVERSIBLE');
  assert.equal(row.role, 'employee');
  assert.equal(row.approved_by, null);
});

test('WRITE_REVERSIBLE: the pending hint says exactly how to confirm and when the nonce expires', async (t) => {
  const h = await consentHarness(t);
  const env = await h.call('employee', 'ct.note_update', { contact_id: 7, note: 'x' });
  assert.equal(
    env.error?.hint,
    'Ask the human to confirm: Set the note of contact 7 to "x". Then call ct.note_update again with the same arguments, confirm=true and the nonce. The nonce expires at 2026-03-10T12:05:00.000Z.',
  );
});

test('WRITE_FINANCIAL: preflight returns the phrase verbatim (money from cents), a nonce and an approval id; the typed phrase executes', async (t) => {
  const h = await consentHarness(t);
  const first = await h.call('admin', 'charge_invoice', { invoice_id: 4242, amount_cents: 123456789 });
  const c = pendingOf(first);
  assert.equal(c.class, 'WRITE_FINANCIAL');
  assert.equal(c.gate, 'typed_phrase');
  assert.equal(c.typed_phrase, 'CHARGE $1,234,567.89 to invoice #4242');
  assert.match(c.approval_id!, /^apv_[A-Za-z0-9_-]{16}$/);
  assert.equal(await h.effects(), 0);
  const pendingRow = await h.lastAudit({ action_type: 'charge_invoice' });
  assert.equal(pendingRow.status, 'pending');
  assert.equal(pendingRow.requires_approval, 1);
  assert.match(
    first.error!.hint!,
    /^Show the human this exact phrase: "CHARGE \$1,234,567\.89 to invoice #4242"\. When they type it, call charge_invoice again with the same arguments, confirm=true, the nonce and typed_phrase set to what they typed\. Or have a user with the admin role or higher approve apv_/,
  );
  assert.match(first.error!.hint!, /The nonce expires at 2026-03-10T12:05:00\.000Z\.$/);

  const done = await h.call(
    'admin',
    'charge_invoice',
    { invoice_id: 4242, amount_cents: 123456789 },
    { confirm: true, nonce: c.nonce, typed_phrase: 'CHARGE $1,234,567.89 to invoice #4242' },
  );
  assert.equal(done.ok, true, JSON.stringify(done));
  assert.equal(await h.effects('charge_invoice'), 1);
  const row = await h.lastAudit({ action_type: 'charge_invoice', status: 'completed' });
  assert.equal(row.consent_class, 'WRITE_FINANCIAL');
  assert.equal(row.requires_approval, 1);
  assert.equal(row.approved_by, null, 'the direct path has no out-of-band approver');
});

test('WRITE_FINANCIAL: confirm with the nonce but no phrase yet answers pending again (same nonce), runs nothing', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', CHARGE));
  const again = await h.call('admin', 'charge_invoice', CHARGE, { confirm: true, nonce: c.nonce });
  const c2 = pendingOf(again);
  assert.equal(c2.nonce, c.nonce);
  assert.equal(c2.typed_phrase, 'CHARGE $50.00 to invoice #4242');
  assert.equal(await h.effects(), 0);
});

test('IRREVERSIBLE: owner only; phrase names the target; admin is role_denied even with the right phrase', async (t) => {
  const h = await consentHarness(t);
  const args = { contact_id: 4242 };
  const denied = await h.call('admin', 'gdpr_delete_contact', args);
  await expectDenied(h, denied, 'role_denied', { role: 'admin', args });
  assert.match(denied.error!.message, /needs the owner role or higher; this key has admin/);
  const c = pendingOf(await h.call('owner', 'gdpr_delete_contact', args));
  assert.equal(c.class, 'IRREVERSIBLE');
  assert.equal(c.typed_phrase, 'DELETE CONTACT 4242 PERMANENTLY');
  assert.match(c.approval_id!, /^apv_/);
  const adminTry = await h.call('admin', 'gdpr_delete_contact', args, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: c.typed_phrase,
  });
  await expectDenied(h, adminTry, 'role_denied', { role: 'admin', args });
  assert.equal(await h.effects(), 0);
  const ok = await h.call('owner', 'gdpr_delete_contact', args, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: 'DELETE CONTACT 4242 PERMANENTLY',
  });
  assert.equal(ok.ok, true, JSON.stringify(ok));
  assert.equal(await h.effects('gdpr_delete_contact'), 1);
});

test('BLOCKED class: a registered BLOCKED verb is refused for the owner with a nonce and phrase, audited as blocked_verb', async (t) => {
  const h = await consentHarness(t);
  const env = await h.call(
    'owner',
    'ct.wipe_everything',
    {},
    { confirm: true, nonce: 'n1.x.y.z', typed_phrase: 'WIPE' },
  );
  const row = await expectDenied(h, env, 'blocked_verb', { role: 'owner', args: {} });
  assert.equal(row.consent_class, 'BLOCKED');
  assert.equal(await h.effects(), 0);
});

test('role floors per class: read_only < employee < admin < owner; below the floor is role_denied, audited, nothing runs', async (t) => {
  const h = await consentHarness(t);
  const cases: Array<[string, string, Record<string, unknown>]> = [
    ['read_only', 'ct.note_update', { contact_id: 1, note: 'n' }],
    ['employee', 'charge_invoice', CHARGE],
    ['read_only', 'charge_invoice', CHARGE],
    ['admin', 'gdpr_delete_contact', { contact_id: 1 }],
    ['employee', 'gdpr_delete_contact', { contact_id: 1 }],
  ];
  for (const [role, verb, args] of cases) {
    const env = await h.call(role, verb, args);
    await expectDenied(h, env, 'role_denied', { role, args });
  }
  assert.equal(await h.effects(), 0);
  // at or above the floor: pending, not denied
  for (const [role, verb, args] of [
    ['employee', 'ct.note_update', { contact_id: 1, note: 'n' }],
    ['owner', 'ct.note_update', { contact_id: 1, note: 'n' }],
    ['admin', 'charge_invoice', CHARGE],
    ['owner', 'charge_invoice', CHARGE],
    ['owner', 'gdpr_delete_contact', { contact_id: 1 }],
  ] as Array<[string, string, Record<string, unknown>]>) {
    pendingOf(await h.call(role, verb, args));
  }
});

test('the role floor is checked again at execution: executeInTx refuses a principal below the floor and writes nothing', async (t) => {
  const h = await consentHarness(t);
  const verb = h.rt.registry.get('charge_invoice')!;
  await assert.rejects(
    h.rt.store.write((tx) =>
      executeInTx(h.rt, tx, {
        verb,
        principal: h.principal('employee'),
        args: CHARGE,
        now: new Date(h.clock.ms),
        caller: { surface: 'internal' },
        consentClass: 'WRITE_FINANCIAL',
        capClass: 'WRITE_FINANCIAL',
        consent: { requiresApproval: true },
        idempotencyKey: null,
        t0: 0,
      }),
    ),
    (err: unknown) => (err as { reason?: string }).reason === 'role_denied',
  );
  assert.equal(await h.effects(), 0);
});

test('the public VerbRecord stays consistent with the class: requires_consent and side_effects', async (t) => {
  const h = await consentHarness(t);
  const rec = (name: string) => h.rt.registry.get(name)!.record;
  assert.equal(rec('ct.lookup').requires_consent, false);
  assert.equal(rec('ct.lookup').side_effects, 'read');
  for (const name of ['ct.note_update', 'charge_invoice', 'gdpr_delete_contact', 'ct.wipe_everything']) {
    assert.equal(rec(name).requires_consent, true, name);
    assert.equal(rec(name).side_effects, 'write', name);
  }
  // the runtime-only facts stay off the record (additionalProperties false upstream)
  assert.equal('consent' in rec('charge_invoice'), false);
  assert.equal('role_floor' in rec('charge_invoice'), false);
});

test('a record says what the runtime does: transaction.start and macros.save run with no approval and say false, and why (row 9)', async (t) => {
  const h = await consentHarness(t);
  const rec = (name: string) => h.rt.registry.get(name)!.record;
  for (const name of ['transaction.start', 'macros.save']) {
    assert.equal(rec(name).requires_consent, false, name);
    assert.equal(rec(name).side_effects, 'write', name);
    assert.match(rec(name).description, /No consent gate: .+/, name);
  }
  // What the records say is what happens: both run on the first call, no nonce, no approval.
  const started = await h.call('employee', 'transaction.start', {});
  assert.equal(started.ok, true, JSON.stringify(started));
  const saved = await h.call('employee', 'macros.save', {
    name: 'look',
    steps: [{ verb: 'ct.lookup', args: { contact_id: 1 } }],
  });
  assert.equal(saved.ok, true, JSON.stringify(saved));
  // The delegated verbs that do gate keep saying so.
  for (const name of ['transaction.append', 'transaction.commit', 'audit.revert', 'macros.run'])
    assert.equal(rec(name).requires_consent, true, name);
  // And no write anywhere in the catalogue says false without saying why.
  for (const v of h.rt.registry.list({}))
    if (v.side_effects !== 'read' && !v.requires_consent)
      assert.match(v.description, /No consent gate: .+/, v.name);
});

test('reordered argument keys are the same call (canonical args, RFC 8785): the nonce still verifies', async (t) => {
  const h = await consentHarness(t);
  assert.equal(argsHash({ a: 1, b: 2 }), argsHash({ b: 2, a: 1 }));
  const c = pendingOf(await h.call('admin', 'charge_invoice', { invoice_id: 4242, amount_cents: 5000 }));
  const env = await h.call(
    'admin',
    'charge_invoice',
    { amount_cents: 5000, invoice_id: 4242 },
    { confirm: true, nonce: c.nonce, typed_phrase: c.typed_phrase },
  );
  assert.equal(env.ok, true, JSON.stringify(env));
});
