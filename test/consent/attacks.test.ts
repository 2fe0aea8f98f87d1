/**
 * Issue 3 "Bad input and attacks", at the dispatch level: each one is denied with the right
 * reason, executes nothing (committed effects counted), and leaves a denied audit row with the
 * reason, the role that tried and the attempted args (secret fields redacted).
 * spec/consent.md §nonce, §typed-phrase, §role-floors, §blocklist, §audit.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, expectDenied, pendingOf } from './support.ts';
import { dispatchAs } from '../support/keyed.ts';

const ARGS = { invoice_id: 4242, amount_cents: 5000, card_token: 'tok_live_secret' };
const REDACTED = { invoice_id: 4242, amount_cents: 5000, card_token: '[REDACTED]' };
const PHRASE = 'CHARGE $50.00 to invoice #4242';

test('args changed between preflight and confirm → nonce_invalid (amount, target, added field, removed field)', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const variants: Array<Record<string, unknown>> = [
    { ...ARGS, amount_cents: 500000 },
    { ...ARGS, invoice_id: 4243 },
    { invoice_id: 4242, amount_cents: 5000 },
    { ...ARGS, card_token: 'tok_other' },
  ];
  for (const changed of variants) {
    // the phrase of the changed call, typed correctly: the nonce still binds the original args
    const phrase = `CHARGE $${(Number(changed.amount_cents) / 100).toFixed(2).replace(/\B(?=(\d{3})+(?!\d))/g, ',')} to invoice #${changed.invoice_id}`;
    const env = await h.call('admin', 'charge_invoice', changed, {
      confirm: true,
      nonce: c.nonce,
      typed_phrase: phrase,
    });
    const expectArgs = 'card_token' in changed ? { ...changed, card_token: '[REDACTED]' } : changed;
    await expectDenied(h, env, 'nonce_invalid', { role: 'admin', args: expectArgs });
    assert.match(env.error!.message, /arguments changed/);
  }
  assert.equal(await h.effects(), 0);
  // the original call still works: the failed attempts burned nothing
  const ok = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  assert.equal(ok.ok, true, JSON.stringify(ok));
});

test('nonce from another tenant → nonce_invalid', async (t) => {
  const h = await consentHarness(t);
  const foreign = pendingOf(await h.call('other_owner', 'charge_invoice', ARGS));
  const env = await h.call('owner', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: foreign.nonce,
    typed_phrase: PHRASE,
  });
  await expectDenied(h, env, 'nonce_invalid', { role: 'owner', args: REDACTED });
  assert.match(env.error!.message, /another tenant or user/);
  assert.equal(await h.effects(), 0);
});

test('nonce from another user of the same tenant → nonce_invalid', async (t) => {
  const h = await consentHarness(t);
  const owners = pendingOf(await h.call('owner', 'charge_invoice', ARGS));
  const env = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: owners.nonce,
    typed_phrase: PHRASE,
  });
  await expectDenied(h, env, 'nonce_invalid', { role: 'admin', args: REDACTED });
  assert.equal(await h.effects(), 0);
});

test('nonce of another verb → nonce_invalid', async (t) => {
  const h = await consentHarness(t);
  const other = pendingOf(await h.call('owner', 'gdpr_delete_contact', { contact_id: 4242 }));
  const env = await h.call('owner', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: other.nonce,
    typed_phrase: PHRASE,
  });
  await expectDenied(h, env, 'nonce_invalid', { role: 'owner', args: REDACTED });
  assert.equal(await h.effects(), 0);
});

test('forged or tampered nonce → nonce_invalid (payload edited, MAC edited, garbage, wrong type)', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const [prefix, kid, body, mac] = c.nonce.split('.') as [string, string, string, string];
  const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
  const longer = Buffer.from(JSON.stringify({ ...payload, e: (payload.e as number) + 86400 })).toString(
    'base64url',
  );
  const forged: unknown[] = [
    `${prefix}.${kid}.${longer}.${mac}`,
    `${prefix}.${kid}.${body}.${mac.slice(0, -2)}${mac.endsWith('AA') ? 'BB' : 'AA'}`,
    'not-a-nonce',
    `n2.${kid}.${body}.${mac}`,
    12345,
  ];
  for (const nonce of forged) {
    const env = await h.call('admin', 'charge_invoice', ARGS, {
      confirm: true,
      nonce: nonce as string,
      typed_phrase: PHRASE,
    });
    await expectDenied(h, env, 'nonce_invalid', { role: 'admin', args: REDACTED });
  }
  assert.equal(await h.effects(), 0);
});

test('nonce reused after success → nonce_replayed, the effect happened once', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const first = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  assert.equal(first.ok, true, JSON.stringify(first));
  const second = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  await expectDenied(h, second, 'nonce_replayed', { role: 'admin', args: REDACTED });
  assert.equal(await h.effects(), 1);
});

test('confirmation-click nonce reused in parallel: exactly one of N concurrent confirms executes', async (t) => {
  const h = await consentHarness(t);
  const args = { contact_id: 9, note: 'race' };
  const c = pendingOf(await h.call('employee', 'ct.note_update', args));
  const all = await Promise.all(
    Array.from({ length: 8 }, () =>
      h.call('employee', 'ct.note_update', args, { confirm: true, nonce: c.nonce }),
    ),
  );
  assert.equal(all.filter((e) => e.ok).length, 1);
  for (const e of all.filter((x) => !x.ok))
    await expectDenied(h, e, 'nonce_replayed', { role: 'employee', args });
  assert.equal(await h.effects(), 1);
});

test('nonce after 300 s → nonce_expired; at 299 s it still works', async (t) => {
  const h = await consentHarness(t);
  const start = h.clock.ms;
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  h.clock.ms = start + 300_000;
  const late = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  await expectDenied(h, late, 'nonce_expired', { role: 'admin', args: REDACTED });
  assert.match(late.error!.message, /expired at 2026-03-10T12:05:00\.000Z/);
  assert.equal(await h.effects(), 0);

  h.clock.ms = start;
  const c2 = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  h.clock.ms = start + 299_999;
  const inTime = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c2.nonce,
    typed_phrase: PHRASE,
  });
  assert.equal(inTime.ok, true, JSON.stringify(inTime));
});

test('typed phrase variants are phrase_mismatch: case, spaces, look-alike Unicode, invisible characters, other formatting', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const variants = [
    'charge $50.00 to invoice #4242', // case
    'CHARGE $50.00 To invoice #4242',
    'CHARGE  $50.00 to invoice #4242', // double space
    ' CHARGE $50.00 to invoice #4242', // leading space
    'CHARGE $50.00 to invoice #4242 ', // trailing space
    'CHARGE $50.00 to invoice #4242\n', // trailing newline
    'CHARGE\u00a0$50.00 to invoice #4242', // no-break space
    'CHARGE $50.00 to invoice #4242\u200b', // zero-width space
    'CH\u0410RGE $50.00 to invoice #4242', // Cyrillic А
    'CHARGE $50.00 t\u043e invoice #4242', // Cyrillic о
    'CHARGE $5O.OO to invoice #4242', // letter O for zero
    '\uff23HARGE $50.00 to invoice #4242', // fullwidth C
    'CHARGE $50 to invoice #4242', // other money format
    'CHARGE $50.00 to invoice 4242',
    '',
  ];
  for (const typed of variants) {
    const env = await h.call('admin', 'charge_invoice', ARGS, {
      confirm: true,
      nonce: c.nonce,
      typed_phrase: typed,
    });
    await expectDenied(h, env, 'phrase_mismatch', { role: 'admin', args: REDACTED });
    assert.equal(env.error!.hint, `The human must type exactly: ${PHRASE}`);
  }
  assert.equal(await h.effects(), 0);
  // a mismatch does not burn the nonce: the exact phrase still works
  const ok = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  assert.equal(ok.ok, true, JSON.stringify(ok));
});

test('NFC and NFD spellings of a phrase are different phrases: only the one shown (byte for byte) is accepted', async (t) => {
  const h = await consentHarness(t);
  const nfc = 'Zo\u00eb Caf\u00e9';
  const args = { charge_id: 'ch_1', amount_cents: 2500, customer_name: nfc };
  const c = pendingOf(await h.call('admin', 'ct.refund', args));
  assert.equal(c.typed_phrase, `REFUND $25.00 to ${nfc}`);
  const nfd = c.typed_phrase!.normalize('NFD');
  assert.notEqual(nfd, c.typed_phrase);
  const env = await h.call('admin', 'ct.refund', args, { confirm: true, nonce: c.nonce, typed_phrase: nfd });
  await expectDenied(h, env, 'phrase_mismatch', { role: 'admin', args });
  assert.equal(await h.effects(), 0);
  // and the other way round: a phrase shown in NFD is not matched by its NFC spelling
  const argsNfd = { ...args, charge_id: 'ch_2', customer_name: nfc.normalize('NFD') };
  const c2 = pendingOf(await h.call('admin', 'ct.refund', argsNfd));
  const env2 = await h.call('admin', 'ct.refund', argsNfd, {
    confirm: true,
    nonce: c2.nonce,
    typed_phrase: c2.typed_phrase!.normalize('NFC'),
  });
  await expectDenied(h, env2, 'phrase_mismatch', { role: 'admin', args: argsNfd });
  assert.equal(await h.effects(), 0);
  const ok = await h.call('admin', 'ct.refund', args, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: `REFUND $25.00 to ${nfc}`,
  });
  assert.equal(ok.ok, true);
});

test('confirm without a nonce → nonce_required, with a hint to call without confirm first', async (t) => {
  const h = await consentHarness(t);
  for (const [role, verb, args, opts] of [
    ['admin', 'charge_invoice', ARGS, { confirm: true, typed_phrase: PHRASE }],
    ['admin', 'charge_invoice', ARGS, { confirm: true, nonce: '', typed_phrase: PHRASE }],
    ['employee', 'ct.note_update', { contact_id: 1, note: 'n' }, { confirm: true }],
  ] as const) {
    const env = await h.call(role, verb, args, opts);
    await expectDenied(h, env, 'nonce_required', {
      role,
      args: verb === 'charge_invoice' ? REDACTED : (args as Record<string, unknown>),
    });
    assert.match(
      env.error!.hint!,
      new RegExp(
        `Call ${verb.replace('.', '\\.')} without confirm first; it answers dispatch_pending with a nonce`,
      ),
    );
  }
  assert.equal(await h.effects(), 0);
});

test('role below the floor with a valid nonce and phrase → role_denied (same user, lower-role key; other users)', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  // a second key of the same user (2) with a lower role: the nonce's user matches, the role does not
  const lowKey = await h.rt.createApiKey({
    company_id: h.companyId,
    user_id: 2,
    role: 'employee',
    agent_type: 'test',
  });
  const sameUser = await dispatchAs(h.rt, { surface: 'cli', apiKey: lowKey }, 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  await expectDenied(h, sameUser, 'role_denied', { role: 'employee', args: REDACTED });
  for (const role of ['employee', 'read_only']) {
    const env = await h.call(role, 'charge_invoice', ARGS, {
      confirm: true,
      nonce: c.nonce,
      typed_phrase: PHRASE,
    });
    await expectDenied(h, env, 'role_denied', { role, args: REDACTED });
  }
  assert.equal(await h.effects(), 0);
});

test('blocked name with the owner role, a nonce and the phrase → blocked_verb, recorded as blocked (not unknown)', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('owner', 'charge_invoice', ARGS));
  for (const name of [
    'customer_delete',
    'subscription_cancel_immediate',
    'company_delete',
    'employee_terminate',
  ]) {
    const env = await h.call(
      'owner',
      name,
      { customer_id: 42, password: 'hunter2' },
      { confirm: true, nonce: c.nonce, typed_phrase: PHRASE },
    );
    const row = await expectDenied(h, env, 'blocked_verb', {
      role: 'owner',
      args: { customer_id: 42, password: '[REDACTED]' },
    });
    assert.equal(row.action_type, name);
    assert.equal(row.category, 'unknown');
    assert.equal(row.shape, null);
  }
  assert.equal((await h.audit({ reason: 'unknown_verb' })).length, 0);
  assert.equal(await h.effects(), 0);
});

test('company_id or user_id smuggled inside args → identity_override, the attempted args audited', async (t) => {
  const h = await consentHarness(t);
  const preflight = await h.call('admin', 'charge_invoice', { ...ARGS, company_id: 3 });
  await expectDenied(h, preflight, 'identity_override', {
    role: 'admin',
    args: { ...REDACTED, company_id: 3 },
  });
  assert.equal(preflight.error!.path, '/company_id');
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const atConfirm = await h.call(
    'admin',
    'charge_invoice',
    { ...ARGS, company_id: 3 },
    { confirm: true, nonce: c.nonce, typed_phrase: PHRASE },
  );
  await expectDenied(h, atConfirm, 'identity_override', {
    role: 'admin',
    args: { ...REDACTED, company_id: 3 },
  });
  const user = await h.call('admin', 'charge_invoice', { ...ARGS, user_id: 1 });
  await expectDenied(h, user, 'identity_override', { role: 'admin', args: { ...REDACTED, user_id: 1 } });
  assert.equal(await h.effects(), 0);
  // nothing was written for the other tenant either
  assert.equal((await h.audit({ company_id: h.otherCompanyId })).length, 0);
});

test('the same attacks on an IRREVERSIBLE verb are denied the same way', async (t) => {
  const h = await consentHarness(t);
  const args = { contact_id: 4242 };
  const c = pendingOf(await h.call('owner', 'gdpr_delete_contact', args));
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    [
      'nonce_invalid',
      { contact_id: 4243 },
      { confirm: true, nonce: c.nonce, typed_phrase: 'DELETE CONTACT 4243 PERMANENTLY' },
    ],
    [
      'phrase_mismatch',
      args,
      { confirm: true, nonce: c.nonce, typed_phrase: 'delete contact 4242 permanently' },
    ],
    ['nonce_required', args, { confirm: true, typed_phrase: 'DELETE CONTACT 4242 PERMANENTLY' }],
  ];
  for (const [reason, a, opts] of cases)
    await expectDenied(h, await h.call('owner', 'gdpr_delete_contact', a, opts), reason, {
      role: 'owner',
      args: a,
    });
  assert.equal(await h.effects(), 0);
});
