import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listPaymentMethods } from '../../src/business/data/contacts.ts';
import {
  createInvoice,
  getInvoice,
  issueInvoice,
  searchInvoices,
  voidInvoice,
} from '../../src/business/data/invoices.ts';
import {
  getContactLifetimeValue,
  getInvoiceWithPayments,
  getPaymentByChargeRef,
  getPaymentWithRefunds,
  processingFeeCents,
  recordCharge,
  recordRefund,
  searchPayments,
} from '../../src/business/data/payments.ts';
import { DEMO_FIXTURES as F } from '../../src/business/seed.ts';
import { MAIN, NOW, openSeededStore } from './seeded-store.ts';

const LATER = new Date(NOW.getTime() + 3_600_000);
const DAY = 86_400_000;

test('recordCharge raises paid_cents, moves the invoice to partially_paid then paid, and reports what changed', async (t) => {
  const { store } = await openSeededStore(t);
  const ltvBefore = (await store.read((q) => getContactLifetimeValue(q, MAIN, F.customer_id)))!;
  const card = (await store.read((q) => listPaymentMethods(q, MAIN, F.customer_id))).find(
    (m) => m.is_default,
  )!;
  const first = await store.write((tx) =>
    recordCharge(tx, MAIN, { invoice_id: F.open_invoice.id, amount_cents: 5000 }, LATER),
  );
  assert.deepEqual(first.previous_invoice, { status: 'open', paid_cents: 0, paid_at: null });
  assert.deepEqual(
    [first.invoice.status, first.invoice.paid_cents, first.invoice.balance_cents],
    ['partially_paid', 5000, F.open_invoice.amount_cents - 5000],
  );
  assert.deepEqual(
    [
      first.payment.status,
      first.payment.method,
      first.payment.payment_method_id,
      first.payment.fee_cents,
      first.payment.created_at,
    ],
    ['captured', 'card', card.id, processingFeeCents('card', 5000), LATER.toISOString()],
  );
  assert.equal(processingFeeCents('card', 5000), 175);
  assert.match(first.payment.charge_ref, /^ch_[0-9a-f]{24}$/);
  const rest = F.open_invoice.amount_cents - 5000;
  const second = await store.write((tx) =>
    recordCharge(
      tx,
      MAIN,
      { invoice_id: F.open_invoice.id, amount_cents: rest, method: 'check', charge_ref: 'ch_check_1001' },
      LATER,
    ),
  );
  assert.deepEqual(second.previous_invoice, { status: 'partially_paid', paid_cents: 5000, paid_at: null });
  assert.deepEqual(
    [second.invoice.status, second.invoice.paid_cents, second.invoice.paid_at],
    ['paid', F.open_invoice.amount_cents, LATER.toISOString()],
  );
  assert.deepEqual(
    [second.payment.fee_cents, second.payment.payment_method_id, second.payment.charge_ref],
    [0, null, 'ch_check_1001'],
  );

  await store.read(async (q) => {
    const full = (await getInvoiceWithPayments(q, MAIN, F.open_invoice.id))!;
    assert.deepEqual(
      full.payments.map((p) => p.id),
      [first.payment.id, second.payment.id],
    );
    assert.equal(
      full.lines.reduce((s, l) => s + l.amount_cents, 0),
      full.invoice.amount_cents,
    );
    assert.deepEqual(await getPaymentByChargeRef(q, MAIN, 'ch_check_1001'), second.payment);
    const ltv = (await getContactLifetimeValue(q, MAIN, F.customer_id))!;
    assert.equal(ltv.lifetime_value_cents, ltvBefore.lifetime_value_cents + F.open_invoice.amount_cents);
    assert.equal(ltv.outstanding_cents, ltvBefore.outstanding_cents - F.open_invoice.amount_cents);
    assert.equal(ltv.payments_count, ltvBefore.payments_count + 2);
  });
});

test('recordCharge refuses paid, draft and void invoices, bad amounts, overcharges and foreign payment methods', async (t) => {
  const { store } = await openSeededStore(t);
  const charge = (invoice_id: number, amount_cents: number, extra: object = {}) =>
    store.write((tx) => recordCharge(tx, MAIN, { invoice_id, amount_cents, ...extra }, LATER));
  await assert.rejects(charge(F.captured_payment.invoice_id, 100), {
    code: 'already_paid',
    message: /already paid in full/,
  });
  await assert.rejects(charge(F.open_invoice.id, F.open_invoice.amount_cents + 1), {
    code: 'amount_exceeds_balance',
    message: new RegExp(`has ${F.open_invoice.amount_cents} cents due`),
  });
  await assert.rejects(charge(F.open_invoice.id, 0), { code: 'invalid_input', message: /^amount_cents/ });
  await assert.rejects(charge(F.open_invoice.id, 12.5), { code: 'invalid_input' });
  await assert.rejects(charge(F.open_invoice.id, 100, { method: 'bitcoin' }), {
    code: 'invalid_input',
    message: /^method/,
  });
  await assert.rejects(charge(999_999, 100), { code: 'not_found', message: 'invoice 999999 not found' });
  const strangerCard = await store.read((q) =>
    q.get<{ id: number }>(
      "SELECT id FROM payment_methods WHERE company_id = ? AND contact_id <> ? AND type = 'card' LIMIT 1",
      [MAIN, F.customer_id],
    ),
  );
  await assert.rejects(charge(F.open_invoice.id, 100, { payment_method_id: strangerCard!.id }), {
    code: 'not_found',
    message: /^payment method/,
  });
  const draft = await store.write((tx) =>
    createInvoice(
      tx,
      MAIN,
      {
        contact_id: F.customer_id,
        lines: [{ description: 'Trip fee', quantity: 1, unit_price_cents: 4900 }],
      },
      LATER,
    ),
  );
  await assert.rejects(charge(draft.invoice.id, 100), { code: 'invoice_not_payable', message: /draft/ });
  await store.write((tx) => voidInvoice(tx, MAIN, draft.invoice.id, LATER));
  await assert.rejects(charge(draft.invoice.id, 100), { code: 'invoice_not_payable', message: /void/ });
  const invoice = await store.read((q) => getInvoice(q, MAIN, F.open_invoice.id));
  assert.deepEqual([invoice?.status, invoice?.paid_cents], ['open', 0], 'nothing was written');
});

test('recordRefund refunds part then the rest, returns the fee share, and never exceeds what was captured', async (t) => {
  const { store } = await openSeededStore(t);
  const invoiceBefore = await store.read((q) => getInvoice(q, MAIN, F.captured_payment.invoice_id));
  const partial = await store.write((tx) =>
    recordRefund(
      tx,
      MAIN,
      {
        payment_id: F.captured_payment.id,
        amount_cents: 5000,
        reason: 'Goodwill',
        created_by_user_id: F.admin_user_id,
      },
      LATER,
    ),
  );
  assert.deepEqual(partial.previous_payment, { refunded_cents: 0, status: 'captured' });
  assert.deepEqual(
    [partial.payment.status, partial.payment.refunded_cents, partial.payment.net_cents],
    ['partially_refunded', 5000, 6800],
  );
  assert.equal(
    partial.refund.fee_refunded_cents,
    145,
    'the 2.9 % fee share of $50.00 (the upstream preview example)',
  );
  assert.match(partial.refund.refund_ref, /^re_[0-9a-f]{24}$/);
  await assert.rejects(
    store.write((tx) =>
      recordRefund(tx, MAIN, { payment_id: F.captured_payment.id, amount_cents: 6801 }, LATER),
    ),
    {
      code: 'refund_exceeds_captured',
      message: /has 6800 cents left to refund/,
    },
  );
  const rest = await store.write((tx) =>
    recordRefund(tx, MAIN, { payment_id: F.captured_payment.id, amount_cents: 6800 }, LATER),
  );
  assert.deepEqual(
    [rest.payment.status, rest.payment.refunded_cents, rest.previous_payment.status],
    ['refunded', 11800, 'partially_refunded'],
  );
  await assert.rejects(
    store.write((tx) =>
      recordRefund(tx, MAIN, { payment_id: F.captured_payment.id, amount_cents: 1 }, LATER),
    ),
    { code: 'payment_not_refundable' },
  );
  await store.read(async (q) => {
    const withRefunds = (await getPaymentWithRefunds(q, MAIN, F.captured_payment.id))!;
    assert.deepEqual(
      withRefunds.refunds.map((r) => r.amount_cents),
      [5000, 6800],
    );
    assert.deepEqual(withRefunds.invoice, invoiceBefore, 'a refund does not reopen the invoice');
  });
  const failed = await store.read((q) => searchPayments(q, MAIN, { status: 'failed', limit: 1 }));
  await assert.rejects(
    store.write((tx) =>
      recordRefund(tx, MAIN, { payment_id: failed.items[0]!.id, amount_cents: 100 }, LATER),
    ),
    { code: 'payment_not_refundable' },
  );
  await assert.rejects(
    store.write((tx) => recordRefund(tx, MAIN, { payment_id: 999_999, amount_cents: 100 }, LATER)),
    { code: 'not_found', message: 'payment 999999 not found' },
  );
  await assert.rejects(
    store.write((tx) =>
      recordRefund(tx, MAIN, { payment_id: F.captured_payment.id, amount_cents: -5 }, LATER),
    ),
    { code: 'invalid_input' },
  );
});

test('invoices: create draft or issued with the next number, issue a draft, void only without payments', async (t) => {
  const { store } = await openSeededStore(t);
  const maxBefore = await store.read((q) =>
    q.get<{ n: number }>('SELECT MAX(number) AS n FROM invoices WHERE company_id = ?', [MAIN]),
  );
  const lines = [
    { description: 'Drain cleaning', quantity: 1, unit_price_cents: 18_900 },
    { description: 'P-trap kit', quantity: 2, unit_price_cents: 1_850, part_id: F.low_stock_part_id },
  ];
  const draft = await store.write((tx) =>
    createInvoice(tx, MAIN, { contact_id: F.customer_id, lines }, LATER),
  );
  assert.deepEqual(
    [
      draft.invoice.number,
      draft.invoice.status,
      draft.invoice.amount_cents,
      draft.invoice.issued_at,
      draft.invoice.due_at,
    ],
    [maxBefore!.n + 1, 'draft', 22_600, null, null],
  );
  assert.deepEqual(
    draft.lines.map((l) => l.amount_cents),
    [18_900, 3_700],
  );
  const issued = await store.write((tx) => issueInvoice(tx, MAIN, draft.invoice.id, LATER));
  assert.deepEqual(
    [issued.previous_status, issued.invoice.status, issued.invoice.issued_at],
    ['draft', 'open', LATER.toISOString()],
  );
  assert.equal(issued.invoice.due_at, new Date(LATER.getTime() + 30 * DAY).toISOString());
  await assert.rejects(
    store.write((tx) => issueInvoice(tx, MAIN, draft.invoice.id, LATER)),
    { code: 'invoice_not_draft' },
  );
  const direct = await store.write((tx) =>
    createInvoice(
      tx,
      MAIN,
      { contact_id: F.customer_id, lines, issue: true, due_at: '2026-06-30T00:00:00-06:00' },
      LATER,
    ),
  );
  assert.deepEqual(
    [direct.invoice.number, direct.invoice.status, direct.invoice.due_at],
    [maxBefore!.n + 2, 'open', '2026-06-30T06:00:00.000Z'],
  );
  await store.write((tx) =>
    recordCharge(tx, MAIN, { invoice_id: direct.invoice.id, amount_cents: 100 }, LATER),
  );
  await assert.rejects(
    store.write((tx) => voidInvoice(tx, MAIN, direct.invoice.id, LATER)),
    { code: 'invoice_has_payments' },
  );
  const voided = await store.write((tx) => voidInvoice(tx, MAIN, issued.invoice.id, LATER));
  assert.deepEqual(
    [voided.previous_status, voided.invoice.status, voided.invoice.balance_cents],
    ['open', 'void', 0],
  );
  await assert.rejects(
    store.write((tx) => voidInvoice(tx, MAIN, issued.invoice.id, LATER)),
    { code: 'no_change' },
  );
  await assert.rejects(
    store.write((tx) => createInvoice(tx, MAIN, { contact_id: F.customer_id, lines: [] }, LATER)),
    { code: 'invalid_input', message: /^lines/ },
  );
  await assert.rejects(
    store.write((tx) =>
      createInvoice(
        tx,
        MAIN,
        { contact_id: F.customer_id, lines: [{ description: 'x', quantity: 0, unit_price_cents: 1 }] },
        LATER,
      ),
    ),
    {
      code: 'invalid_input',
      message: /^lines\[0\]\.quantity/,
    },
  );
  await assert.rejects(
    store.write((tx) =>
      createInvoice(
        tx,
        MAIN,
        {
          contact_id: F.customer_id,
          lines: [{ description: 'x', quantity: 1, unit_price_cents: 1, part_id: 999_999 }],
        },
        LATER,
      ),
    ),
    {
      code: 'not_found',
      message: 'part 999999 not found',
    },
  );
});

test('searchInvoices finds overdue invoices and filters by status and contact', async (t) => {
  const { store } = await openSeededStore(t);
  await store.read(async (q) => {
    const overdue = await searchInvoices(q, MAIN, { overdue: true, now: NOW, limit: 200 });
    assert.ok(overdue.total > 0);
    assert.ok(
      overdue.items.every(
        (i) => (i.status === 'open' || i.status === 'partially_paid') && i.due_at! < NOW.toISOString(),
      ),
    );
    await assert.rejects(searchInvoices(q, MAIN, { overdue: true }), { code: 'invalid_input' });
    const paid = await searchInvoices(q, MAIN, { status: 'paid', contact_id: F.customer_id });
    assert.ok(paid.items.some((i) => i.id === F.captured_payment.invoice_id));
    assert.ok(paid.items.every((i) => i.status === 'paid' && i.contact_id === F.customer_id));
    const numbers = (await searchInvoices(q, MAIN, { limit: 10 })).items.map((i) => i.number);
    assert.deepEqual(
      numbers,
      [...numbers].sort((a, b) => b - a),
      'newest number first',
    );
  });
});
