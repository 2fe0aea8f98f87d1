import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  addNote,
  createContact,
  eraseContact,
  getContact,
  getLastInteractionAt,
  listContactNotes,
  listPaymentMethods,
  searchContacts,
  updateContact,
  type ContactPatch,
} from '../../src/business/data/contacts.ts';
import { listContactInvoices } from '../../src/business/data/invoices.ts';
import { getContactLifetimeValue, searchPayments } from '../../src/business/data/payments.ts';
import { DEMO_FIXTURES as F } from '../../src/business/seed.ts';
import { MAIN, NOW, openSeededStore } from './seeded-store.ts';

const LATER = new Date(NOW.getTime() + 3_600_000);

test('updateContact changes the given fields and returns the previous snapshot, which restores it', async (t) => {
  const { store } = await openSeededStore(t);
  const original = (await store.read((q) => getContact(q, MAIN, F.customer_id)))!;
  const update = await store.write((tx) =>
    updateContact(
      tx,
      MAIN,
      F.customer_id,
      { phone: '+18015550100', tags: ['vip', 'priority'], city: original.city },
      LATER,
    ),
  );
  assert.deepEqual(update.previous, original);
  assert.deepEqual(update.changed, ['phone', 'tags'], 'a field given with its current value is not a change');
  assert.equal(update.contact.phone, '+18015550100');
  assert.deepEqual(update.contact.tags, ['vip', 'priority']);
  assert.equal(update.contact.updated_at, LATER.toISOString());
  assert.deepEqual(await store.read((q) => getContact(q, MAIN, F.customer_id)), update.contact);

  const restore = Object.fromEntries(update.changed.map((f) => [f, update.previous[f]])) as ContactPatch;
  const reverted = await store.write((tx) => updateContact(tx, MAIN, F.customer_id, restore, LATER));
  assert.deepEqual({ ...reverted.contact, updated_at: original.updated_at }, original);
});

test('updateContact refuses bad input, no-op patches and unknown ids without writing', async (t) => {
  const { store } = await openSeededStore(t);
  const before = await store.read((q) => getContact(q, MAIN, F.customer_id));
  const cases: Array<[ContactPatch, string, RegExp]> = [
    [{}, 'invalid_input', /patch/],
    [{ email: 'not-an-email' }, 'invalid_input', /^email:/],
    [{ kind: 'industrial' as never }, 'invalid_input', /^kind:/],
    [{ name: null as never }, 'invalid_input', /^name: cannot be null/],
    [{ tags: ['ok', ''] }, 'invalid_input', /^tags:/],
    [{ erased_at: 'x' } as never, 'invalid_input', /not an editable/],
    [{ name: before!.name }, 'no_change', /already has those values/],
  ];
  for (const [patch, code, message] of cases) {
    await assert.rejects(
      store.write((tx) => updateContact(tx, MAIN, F.customer_id, patch, LATER)),
      { name: 'DomainError', code, message },
    );
  }
  await assert.rejects(
    store.write((tx) => updateContact(tx, MAIN, 999_999, { name: 'X' }, LATER)),
    { code: 'not_found', message: 'contact 999999 not found' },
  );
  assert.deepEqual(await store.read((q) => getContact(q, MAIN, F.customer_id)), before);
});

test('createContact applies defaults and the new contact is searchable', async (t) => {
  const { store } = await openSeededStore(t);
  const created = await store.write((tx) =>
    createContact(tx, MAIN, { name: 'Zed Quimby_100%', email: 'zed@example.com', tags: ['referral'] }, LATER),
  );
  assert.equal(created.company_id, MAIN);
  assert.deepEqual([created.kind, created.status, created.tags], ['residential', 'lead', ['referral']]);
  const byName = await store.read((q) => searchContacts(q, MAIN, { query: 'quimby_100%' }));
  assert.deepEqual(
    byName.items.map((c) => c.id),
    [created.id],
  );
  const wildcard = await store.read((q) => searchContacts(q, MAIN, { query: '_100%' }));
  assert.deepEqual(
    wildcard.items.map((c) => c.id),
    [created.id],
    '% and _ match literally',
  );
  await assert.rejects(
    store.write((tx) => createContact(tx, MAIN, { name: '  ' }, LATER)),
    { code: 'invalid_input' },
  );
});

test('searchContacts filters and paginates', async (t) => {
  const { store } = await openSeededStore(t);
  await store.read(async (q) => {
    const vip = await searchContacts(q, MAIN, { tag: 'vip', limit: 200 });
    assert.ok(vip.total > 0 && vip.items.every((c) => c.tags.includes('vip')));
    assert.ok(vip.items.some((c) => c.id === F.customer_id));
    const commercial = await searchContacts(q, MAIN, { kind: 'commercial', status: 'active', limit: 200 });
    assert.ok(commercial.items.every((c) => c.kind === 'commercial' && c.status === 'active'));
    const first = await searchContacts(q, MAIN, { limit: 30, sort: 'name' });
    const second = await searchContacts(q, MAIN, { limit: 30, offset: 30, sort: 'name' });
    assert.equal(first.total, 200);
    assert.equal(first.next_offset, 30);
    assert.equal(second.items.length, 30);
    const names = [...first.items, ...second.items].map((c) => c.name);
    assert.deepEqual(
      names,
      [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    assert.equal(new Set([...first.items, ...second.items].map((c) => c.id)).size, 60);
    const last = await searchContacts(q, MAIN, { limit: 50, offset: 150 });
    assert.equal(last.next_offset, null);
    await assert.rejects(searchContacts(q, MAIN, { limit: 0 }), { code: 'invalid_input' });
    await assert.rejects(searchContacts(q, MAIN, { sort: 'id; DROP TABLE contacts' as never }), {
      code: 'invalid_input',
    });
    const city = (await getContact(q, MAIN, F.customer_id))!.city!;
    const inCity = await searchContacts(q, MAIN, { city: city.toUpperCase(), limit: 200 });
    assert.ok(inCity.items.length > 0 && inCity.items.every((c) => c.city === city));
  });
});

test('eraseContact anonymises PII, keeps financial rows, and refuses a second erasure', async (t) => {
  const { store } = await openSeededStore(t);
  const before = await store.read(async (q) => ({
    contact: (await getContact(q, MAIN, F.customer_id))!,
    invoices: await listContactInvoices(q, MAIN, F.customer_id),
    payments: (await searchPayments(q, MAIN, { contact_id: F.customer_id, limit: 200 })).items,
    ltv: await getContactLifetimeValue(q, MAIN, F.customer_id),
    notes: await listContactNotes(q, MAIN, F.customer_id),
  }));
  assert.ok(before.notes.length > 0, 'the fixture customer has notes');
  const result = await store.write((tx) => eraseContact(tx, MAIN, F.customer_id, LATER));
  assert.equal(result.erased_at, LATER.toISOString());
  assert.equal(result.invoices_retained, before.invoices.length);
  assert.equal(result.payments_retained, before.payments.length);
  assert.equal(result.payment_methods_removed, 1);
  assert.ok(result.emails_redacted > 0);
  assert.ok(!JSON.stringify(result).includes(before.contact.name), 'the receipt carries no PII');

  await store.read(async (q) => {
    const erased = (await getContact(q, MAIN, F.customer_id))!;
    assert.equal(erased.name, `Erased contact #${F.customer_id}`);
    assert.deepEqual(
      [
        erased.email,
        erased.phone,
        erased.address_line1,
        erased.city,
        erased.postal_code,
        erased.tags,
        erased.status,
      ],
      [null, null, null, null, null, [], 'inactive'],
    );
    assert.equal(erased.erased_at, LATER.toISOString());
    assert.deepEqual(await listPaymentMethods(q, MAIN, F.customer_id), []);
    assert.ok((await listContactNotes(q, MAIN, F.customer_id)).every((n) => n.body === '[erased]'));
    assert.deepEqual(await listContactInvoices(q, MAIN, F.customer_id), before.invoices);
    const payments = (await searchPayments(q, MAIN, { contact_id: F.customer_id, limit: 200 })).items;
    assert.deepEqual(
      payments.map((p) => [p.id, p.amount_cents, p.status]),
      before.payments.map((p) => [p.id, p.amount_cents, p.status]),
    );
    assert.deepEqual(await getContactLifetimeValue(q, MAIN, F.customer_id), before.ltv);
    const mail = await q.get<{ n: number }>(
      'SELECT COUNT(*) AS n FROM email_outbox WHERE company_id = ? AND lower(to_address) = lower(?)',
      [MAIN, before.contact.email],
    );
    assert.equal(mail?.n, 0, 'no outbox row keeps the address');
    assert.equal(
      (await searchContacts(q, MAIN, { query: 'Erased contact' })).total,
      0,
      'erased contacts are left out of searches',
    );
  });
  await assert.rejects(
    store.write((tx) => eraseContact(tx, MAIN, F.customer_id, LATER)),
    { code: 'contact_erased' },
  );
  await assert.rejects(
    store.write((tx) => updateContact(tx, MAIN, F.customer_id, { name: 'Back' }, LATER)),
    { code: 'contact_erased' },
  );
  await assert.rejects(
    store.write((tx) => eraseContact(tx, MAIN, 999_999, LATER)),
    { code: 'not_found', message: 'contact 999999 not found' },
  );
});

test("addNote adds to the contact's notes and counts as an interaction", async (t) => {
  const { store } = await openSeededStore(t);
  const note = await store.write((tx) =>
    addNote(
      tx,
      MAIN,
      { contact_id: F.customer_id, body: 'Asked about a second boiler.', author_user_id: F.employee_user_id },
      LATER,
    ),
  );
  await store.read(async (q) => {
    assert.deepEqual((await listContactNotes(q, MAIN, F.customer_id))[0], note);
    assert.equal(await getLastInteractionAt(q, MAIN, F.customer_id, LATER), LATER.toISOString());
    const earlier = await getLastInteractionAt(q, MAIN, F.customer_id, NOW);
    assert.ok(earlier !== null && earlier < NOW.toISOString());
  });
  await assert.rejects(
    store.write((tx) => addNote(tx, MAIN, { contact_id: F.customer_id, body: ' ' }, LATER)),
    { code: 'invalid_input' },
  );
  await assert.rejects(
    store.write((tx) => addNote(tx, MAIN, { contact_id: 999_999, body: 'x' }, LATER)),
    { code: 'not_found' },
  );
});
