// The bookshop pack under solid-verbs/testing: what an agent can do, what a human must consent
// to, what revert refuses, and that the payments call waits for the commit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestBusiness, phraseOf } from 'solid-verbs/testing';
import { createBookshop } from '../bookshop.js';

async function shop(t, refunds = []) {
  const business = await createTestBusiness({
    packs: [createBookshop({ refund: async (r) => void refunds.push(r) })],
  });
  t.after(() => business.close());
  return business;
}

async function addDune(s) {
  const added = await s.call('bookshop.title_add', {
    title: 'Dune',
    author: 'Frank Herbert',
    price_cents: 1250,
    stock: 2,
  });
  assert.equal(added.ok, true, JSON.stringify(added));
  return added;
}

test('a title goes on the shelf after a confirmation, and the audit verifies', async (t) => {
  const s = await shop(t);
  const pending = await s.dispatch('bookshop.title_add', {
    title: 'Dune',
    author: 'Frank Herbert',
    price_cents: 1250,
    stock: 2,
  });
  assert.equal(pending.error.reason, 'dispatch_pending');
  assert.equal(pending.consent.gate, 'confirmation');
  const added = await addDune(s);
  assert.equal(added.result.title_id, 1);
  const shelf = await s.call('bookshop.shelf', {}, { role: 'read_only' });
  assert.deepEqual(shelf.result.data, { titles: 1, copies: 2 });
  assert.equal((await s.verifyAudit()).ok, true);
});

test('a price change shows its preview to the human before it runs', async (t) => {
  const s = await shop(t);
  await addDune(s);
  const pending = await s.dispatch('bookshop.price_set', { title_id: 1, price_cents: 999 });
  assert.equal(pending.error.reason, 'dispatch_pending');
  assert.deepEqual(pending.consent.preview.delta, { price_cents: -251 });
  assert.equal((await s.call('bookshop.price_set', { title_id: 1, price_cents: 999 })).ok, true);
});

test('revert undoes a price change, but not over a later one', async (t) => {
  const s = await shop(t);
  await addDune(s);
  const first = await s.call('bookshop.price_set', { title_id: 1, price_cents: 999 });
  await s.call('bookshop.price_set', { title_id: 1, price_cents: 1500 });
  const refused = await s.call('audit.revert', { audit_id: first.audit_id });
  assert.equal(refused.ok, false);
  assert.equal(refused.error.reason, 'changed_since');
  const shelf = await s.call('bookshop.shelf');
  assert.equal(shelf.result.relations[0].price_cents, 1500);
});

test('a refund needs the typed phrase and an admin; the payments call waits for the commit', async (t) => {
  const refunds = [];
  const s = await shop(t, refunds);
  await addDune(s);
  const sale = await s.call('bookshop.sale_record', { title_id: 1 });
  assert.equal(sale.ok, true, JSON.stringify(sale));
  const args = { sale_id: sale.result.sale_id, cents: 1250 };
  assert.equal(
    (await s.call('bookshop.sale_refund', args, { role: 'employee' })).error.reason,
    'role_denied',
  );
  const pending = await s.dispatch('bookshop.sale_refund', args);
  // The phrase is for the human: the agent's pending answer withholds it; the kit reads it.
  assert.equal(pending.consent.typed_phrase, undefined);
  assert.equal(phraseOf(pending), 'REFUND $12.50 on sale #1');
  const typo = await s.dispatch('bookshop.sale_refund', args, {
    confirm: true,
    nonce: pending.consent.nonce,
    typed_phrase: 'refund $12.50 on sale #1',
    human: true,
  });
  assert.equal(typo.error.reason, 'phrase_mismatch');
  assert.equal(refunds.length, 0);
  const refunded = await s.call('bookshop.sale_refund', args);
  assert.equal(refunded.ok, true, JSON.stringify(refunded));
  await s.rt.deliverOutbox();
  assert.equal(refunds.length, 1);
  assert.equal(refunds[0].cents, 1250);
  assert.match(refunds[0].idempotency_key, /^bookshop-refund-\d+$/);
  assert.equal((await s.call('bookshop.sale_refund', args)).error.reason, 'already_refunded');
});
