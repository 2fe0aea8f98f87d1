/**
 * Payment verbs (category `payments`): charge an invoice (charge_invoice, WRITE_FINANCIAL, typed
 * phrase "CHARGE $50.00 to invoice #4242") and refund a charge (issue_refund, WRITE_FINANCIAL,
 * "REFUND $50.00 on charge ch_xyz"), their previews (payments.preview_charge and the upstream
 * payments.preview_refund_impact), search and read payments, and explain a payment's state.
 *
 * Neither money movement has a revert handler: a charge is undone by a refund, and a refund
 * cannot be taken back (audit.revert refuses with not_revertible; the previews say reversible
 * false). Money is integer cents; phrases render it with formatCents.
 *
 * Reasons: not_found ("invoice #4242 not found", "charge ch_x not found", "payment 9 not found"),
 * invoice_not_payable, already_paid, amount_exceeds_balance, payment_not_refundable,
 * refund_exceeds_captured, invalid_input.
 * Spec: spec/consent.md §typed-phrase, spec/shapes.md §preview §receipt §explain.
 */
import { formatCents } from '../../runtime/consent/typed-phrase.ts';
import type { Queryable } from '../../store/store.ts';
import { getContact, getPaymentMethod } from '../data/contacts.ts';
import { DomainError, invalidInput, notFound } from '../data/domain-error.ts';
import { getInvoiceByNumber, type Invoice } from '../data/invoices.ts';
import {
  getPaymentByChargeRef,
  getPaymentWithRefunds,
  processingFeeCents,
  recordCharge,
  recordRefund,
  refundedFeeCents,
  requirePayment,
  searchPayments,
  type Payment,
} from '../data/payments.ts';
import { PAYMENT_METHODS, PAYMENT_STATUSES, type PaymentMethodKind, type PaymentStatus } from '../schema.ts';
import { chargeCustomer, invoiceCustomer } from './activity-words.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { buildCausalChain, chainForOutput, describeActor } from './causal-chain.ts';
import { collectionResult } from './collection-result.ts';
import { invoiceView, paymentView, refundView } from './entity-views.ts';
import { centsProp, enumProp, idProp, objectSchema, PAGE_PROPS, textProp, timeProp } from './input-schema.ts';

const CHARGE_REF: Record<string, unknown> = {
  type: 'string',
  pattern: '^ch_[A-Za-z0-9]{4,64}$',
  description: 'The charge reference from the payment, e.g. ch_CKqjxjWiqnR03tuPPtpfXe7N.',
};

// ---------------------------------------------------------------------------------------------
// Charge

interface ChargeArgs {
  invoice_number: number;
  amount_cents: number;
  method?: PaymentMethodKind;
  payment_method_id?: number;
}

const chargeInput = objectSchema(
  {
    invoice_number: {
      type: 'integer',
      minimum: 1,
      maximum: 999_999_999,
      description: 'The invoice NUMBER the customer sees (e.g. 4304 for invoice #4304), not its id.',
    },
    amount_cents: centsProp('Amount to charge, at most the balance due.'),
    method: enumProp(PAYMENT_METHODS, 'card (default), ach, check or cash.'),
    payment_method_id: idProp(
      "A stored payment method of the invoice's customer; default: their default card or bank account.",
    ),
  },
  ['invoice_number', 'amount_cents'],
);

async function invoiceByNumber(q: Queryable, c: number, number: number): Promise<Invoice> {
  const invoice = await getInvoiceByNumber(q, c, number);
  if (invoice === undefined)
    throw notFound('invoice', `#${number}`, 'Check the invoice number with invoices.search.');
  return invoice;
}

export const chargeInvoice = defineBusinessVerb<ChargeArgs>({
  name: 'charge_invoice',
  title: 'Charge an invoice',
  description:
    'Charge a customer for an issued invoice, identified by its NUMBER (e.g. 4304): the amount in integer cents (at most the balance due) by card (default, the customer\'s stored default card), ach, check or cash. Moves money: an admin\'s typed phrase (e.g. "CHARGE $50.00 to invoice #4304"). Refused: already_paid, amount_exceeds_balance, invoice_not_payable. Not revertible (undo with issue_refund). Preview: payments.preview_charge.',
  shape: 'receipt',
  category: 'payments',
  consent: 'WRITE_FINANCIAL',
  money_flow: 'in',
  preview: 'payments.preview_charge',
  input: chargeInput,
  open_world: true,
  webmcp_surfaces: ['dashboard'],
  // Undone by its refund: the dashboard offers issue_refund prefilled from this receipt.
  undone_by: {
    verb: 'issue_refund',
    args: { charge_ref: 'charge_ref', amount_cents: 'amount_cents' },
    label: 'Refund this charge',
  },
  phrase: (a) => `CHARGE ${formatCents(a.amount_cents)} to invoice #${a.invoice_number}`,
  summary: (a) =>
    `Charge ${formatCents(a.amount_cents)} by ${a.method ?? 'card'} to invoice #${a.invoice_number}.`,
  activity: async (read, a) => {
    const inv = await invoiceCustomer(read, a.invoice_number, 'number');
    return (
      inv &&
      `Charge ${formatCents(a.amount_cents)} by ${a.method ?? 'card'} to ${inv.name} (invoice #${inv.number})`
    );
  },
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const before = await invoiceByNumber(ctx.db, c, args.invoice_number);
    const { payment, invoice } = await recordCharge(
      ctx.db,
      c,
      {
        invoice_id: before.id,
        amount_cents: args.amount_cents,
        method: args.method ?? 'card',
        ...(args.payment_method_id !== undefined ? { payment_method_id: args.payment_method_id } : {}),
      },
      ctx.now,
    );
    ctx.setEntity('invoice', invoice.id);
    ctx.emit({
      type: 'payment.captured',
      entity_type: 'payment',
      entity_id: payment.id,
      payload: {
        invoice_id: invoice.id,
        invoice_number: invoice.number,
        contact_id: invoice.contact_id,
        charge_ref: payment.charge_ref,
        amount_cents: payment.amount_cents,
        method: payment.method,
      },
    });
    if (invoice.status === 'paid')
      ctx.emit({
        type: 'invoice.paid',
        entity_type: 'invoice',
        entity_id: invoice.id,
        payload: {
          contact_id: invoice.contact_id,
          number: invoice.number,
          amount_cents: invoice.amount_cents,
        },
      });
    return {
      status: 'captured',
      payment_id: payment.id,
      charge_ref: payment.charge_ref,
      invoice_id: invoice.id,
      invoice_number: invoice.number,
      amount_cents: payment.amount_cents,
      fee_cents: payment.fee_cents,
      method: payment.method,
      invoice_status: invoice.status,
      balance_cents: invoice.balance_cents,
    };
  },
});

export const paymentsPreviewCharge = defineBusinessVerb<ChargeArgs>({
  name: 'payments.preview_charge',
  title: 'Preview a charge',
  description:
    'Show an invoice before and after charge_invoice with the same arguments — paid and balance in cents, the processing fee, the payment method that would be used — without charging. Refuses exactly as the charge would.',
  shape: 'preview',
  category: 'payments',
  input: chargeInput,
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const invoice = await invoiceByNumber(ctx.db, c, args.invoice_number);
    const method = args.method ?? 'card';
    if (invoice.status === 'draft' || invoice.status === 'void') {
      throw new DomainError(
        'invoice_not_payable',
        `invoice ${invoice.id} is ${invoice.status}`,
        invoice.status === 'draft' ? 'Issue the invoice first.' : 'A void invoice takes no payments.',
      );
    }
    if (invoice.status === 'paid' || invoice.balance_cents <= 0)
      throw new DomainError(
        'already_paid',
        `invoice ${invoice.id} (#${invoice.number}) is already paid in full`,
        'Nothing is due on it.',
      );
    if (args.amount_cents > invoice.balance_cents) {
      throw new DomainError(
        'amount_exceeds_balance',
        `invoice ${invoice.id} (#${invoice.number}) has ${invoice.balance_cents} cents due; the charge is ${args.amount_cents}`,
        `Charge at most ${invoice.balance_cents} cents.`,
      );
    }
    let stored: { id: number; brand: string; last4: string } | null = null;
    if (args.payment_method_id !== undefined) {
      const pm = await getPaymentMethod(ctx.db, c, args.payment_method_id);
      if (pm === undefined || pm.contact_id !== invoice.contact_id)
        throw notFound('payment method', args.payment_method_id);
      stored = { id: pm.id, brand: pm.brand, last4: pm.last4 };
    } else if (method === 'card' || method === 'ach') {
      const pm = await ctx.db.get<Record<string, unknown>>(
        'SELECT id, brand, last4 FROM payment_methods WHERE company_id = ? AND contact_id = ? AND type = ? ORDER BY is_default DESC, id LIMIT 1',
        [c, invoice.contact_id, method],
      );
      stored =
        pm === undefined ? null : { id: Number(pm.id), brand: String(pm.brand), last4: String(pm.last4) };
    }
    const paid = invoice.paid_cents + args.amount_cents;
    const fee = processingFeeCents(method, args.amount_cents);
    return {
      current: {
        invoice_id: invoice.id,
        invoice_number: invoice.number,
        amount_cents: invoice.amount_cents,
        paid_cents: invoice.paid_cents,
        balance_cents: invoice.balance_cents,
        status: invoice.status,
      },
      projected: {
        invoice_id: invoice.id,
        invoice_number: invoice.number,
        amount_cents: invoice.amount_cents,
        paid_cents: paid,
        balance_cents: invoice.amount_cents - paid,
        status: paid === invoice.amount_cents ? 'paid' : 'partially_paid',
      },
      delta: {
        paid_cents: args.amount_cents,
        balance_change_cents: -args.amount_cents,
        processing_fee_cents: fee,
        net_to_merchant_cents: args.amount_cents - fee,
      },
      reversible: chargeInvoice.revert !== undefined,
      payment_method: stored,
      typed_phrase: `CHARGE ${formatCents(args.amount_cents)} to invoice #${invoice.number}`,
      notes:
        `${paid === invoice.amount_cents ? 'Pays the invoice in full.' : `Partial payment; ${formatCents(invoice.amount_cents - paid)} stays due.`} ` +
        `A charge cannot be reverted; undo it with issue_refund. ${fee > 0 ? `Processing fee ${formatCents(fee)} (${method}).` : `No processing fee for ${method}.`}` +
        `${(method === 'card' || method === 'ach') && stored === null ? ` The customer has no stored ${method} method; the charge is recorded without one.` : ''}`,
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Refund

interface RefundArgs {
  charge_ref: string;
  amount_cents: number;
  reason?: string;
}

const refundInput = objectSchema(
  {
    charge_ref: CHARGE_REF,
    amount_cents: centsProp('Amount to refund, at most what remains captured on the charge.'),
    reason: textProp('Why (kept with the refund).', 500),
  },
  ['charge_ref', 'amount_cents'],
);

async function paymentByChargeRef(q: Queryable, c: number, ref: string): Promise<Payment> {
  const payment = await getPaymentByChargeRef(q, c, ref);
  if (payment === undefined)
    throw notFound('charge', ref, 'Check the charge reference with payments.search.');
  return payment;
}

export const issueRefund = defineBusinessVerb<RefundArgs>({
  name: 'issue_refund',
  title: 'Refund a charge',
  description:
    'Refund part or all of a captured charge, identified by its charge reference (ch_…), amount in integer cents (at most what remains captured), with an optional reason. Moves money: an admin\'s typed phrase (e.g. "REFUND $50.00 on charge ch_xyz"). Not revertible. Refused: refund_exceeds_captured, payment_not_refundable. Run payments.preview_refund_impact first.',
  shape: 'receipt',
  category: 'payments',
  consent: 'WRITE_FINANCIAL',
  money_flow: 'out',
  preview: 'payments.preview_refund_impact',
  input: refundInput,
  open_world: true,
  webmcp_surfaces: ['dashboard'],
  phrase: (a) => `REFUND ${formatCents(a.amount_cents)} on charge ${a.charge_ref}`,
  // The reason is the agent's own words: shown apart (agent_text), never in the sentence consented to.
  summary: (a) => `Refund ${formatCents(a.amount_cents)} on charge ${a.charge_ref}.`,
  agent_text: ['reason'],
  activity: async (read, a) => {
    const ch = await chargeCustomer(read, a.charge_ref);
    return (
      ch &&
      `Refund ${formatCents(a.amount_cents)} to ${ch.name} on charge ${a.charge_ref} (invoice #${ch.number})`
    );
  },
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const before = await paymentByChargeRef(ctx.db, c, args.charge_ref);
    const { refund, payment } = await recordRefund(
      ctx.db,
      c,
      {
        payment_id: before.id,
        amount_cents: args.amount_cents,
        reason: args.reason ?? null,
        created_by_user_id: ctx.principal.user_id,
      },
      ctx.now,
    );
    ctx.setEntity('payment', payment.id);
    ctx.emit({
      type: 'refund.issued',
      entity_type: 'refund',
      entity_id: refund.id,
      payload: {
        payment_id: payment.id,
        charge_ref: payment.charge_ref,
        amount_cents: refund.amount_cents,
        fee_refunded_cents: refund.fee_refunded_cents,
        reason: refund.reason,
      },
    });
    return {
      status: 'refunded',
      refund_id: refund.id,
      refund_ref: refund.refund_ref,
      payment_id: payment.id,
      charge_ref: payment.charge_ref,
      amount_cents: refund.amount_cents,
      fee_refunded_cents: refund.fee_refunded_cents,
      refunded_cents: payment.refunded_cents,
      net_cents: payment.net_cents,
      payment_status: payment.status,
    };
  },
});

interface RefundImpactArgs {
  transaction_id?: number;
  charge_ref?: string;
  refund_amount_cents?: number | null;
  amount_cents?: number;
  reason?: string;
}

export const paymentsPreviewRefundImpact = defineBusinessVerb<RefundImpactArgs>({
  name: 'payments.preview_refund_impact',
  title: 'Preview a refund',
  description:
    'Project the impact of refunding a payment WITHOUT executing it: the payment now and after (amount, refunded, net in cents, status), the fee returned to the merchant, and that the refund cannot be undone. Identify the payment by transaction_id or charge_ref; the amount by refund_amount_cents (absent = the full remainder) or amount_cents. Refuses with refund_exceeds_captured or payment_not_refundable as the refund would.',
  shape: 'preview',
  category: 'payments',
  input: objectSchema({
    transaction_id: idProp('The payment id (give this or charge_ref).'),
    charge_ref: CHARGE_REF,
    refund_amount_cents: {
      type: ['integer', 'null'],
      minimum: 1,
      maximum: 100_000_000_00,
      description: 'Amount to refund in integer cents; null = full refund of what remains.',
    },
    amount_cents: centsProp('Same as refund_amount_cents (the issue_refund argument name).'),
    reason: textProp('Why (not used by the projection).', 500),
  }),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    if ((args.transaction_id === undefined) === (args.charge_ref === undefined))
      throw invalidInput('transaction_id', 'give exactly one of transaction_id or charge_ref');
    if (
      args.refund_amount_cents !== undefined &&
      args.refund_amount_cents !== null &&
      args.amount_cents !== undefined &&
      args.refund_amount_cents !== args.amount_cents
    ) {
      throw invalidInput('amount_cents', 'differs from refund_amount_cents; give one of them');
    }
    const payment =
      args.transaction_id !== undefined
        ? await requirePayment(ctx.db, c, args.transaction_id)
        : await paymentByChargeRef(ctx.db, c, args.charge_ref!);
    ctx.setEntity('payment', payment.id);
    if (payment.status === 'failed' || payment.status === 'refunded') {
      throw new DomainError(
        'payment_not_refundable',
        `payment ${payment.id} (${payment.charge_ref}) is ${payment.status}`,
        'Nothing is left to refund on it.',
      );
    }
    const refundable = payment.amount_cents - payment.refunded_cents;
    const amount = args.refund_amount_cents ?? args.amount_cents ?? refundable;
    if (amount > refundable) {
      throw new DomainError(
        'refund_exceeds_captured',
        `payment ${payment.id} (${payment.charge_ref}) has ${refundable} cents left to refund; the refund is ${amount}`,
        `Refund at most ${refundable} cents.`,
      );
    }
    const refunded = payment.refunded_cents + amount;
    const status: PaymentStatus = refunded === payment.amount_cents ? 'refunded' : 'partially_refunded';
    const fee = refundedFeeCents(payment.method, amount);
    const full = amount === refundable;
    return {
      current: {
        transaction_id: payment.id,
        amount_cents: payment.amount_cents,
        refunded_cents: payment.refunded_cents,
        net_cents: payment.net_cents,
        status: payment.status,
      },
      projected: {
        transaction_id: payment.id,
        amount_cents: payment.amount_cents,
        refunded_cents: refunded,
        net_cents: payment.amount_cents - refunded,
        status,
      },
      delta: { refunded_cents: amount, net_change_cents: -amount, processing_fee_refunded_cents: fee },
      reversible: issueRefund.revert !== undefined,
      notes:
        `${full ? 'Full refund' : 'Partial refund'}. Refunds are not reversible once issued. ` +
        (fee > 0
          ? `Processing fee of ${formatCents(fee)} will be returned to the merchant.`
          : `No processing fee is returned for ${payment.method} payments.`),
      charge_ref: payment.charge_ref,
      method: payment.method,
      typed_phrase: `REFUND ${formatCents(amount)} on charge ${payment.charge_ref}`,
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Read

export const paymentsSearch = defineBusinessVerb<{
  invoice_id?: number;
  contact_id?: number;
  status?: PaymentStatus;
  method?: PaymentMethodKind;
  from?: string;
  to?: string;
  limit?: number;
  offset?: number;
}>({
  name: 'payments.search',
  title: 'Search payments',
  description:
    'List payments (charges), newest first, filtered by invoice, customer, status (captured, partially_refunded, refunded, failed), method or time range. Each has its id (the transaction_id of payments.preview_refund_impact), charge_ref (for issue_refund) and amounts in cents.',
  shape: 'aggregate',
  category: 'payments',
  input: objectSchema({
    invoice_id: idProp('Only payments on this invoice (id).'),
    contact_id: idProp('Only payments of this customer.'),
    status: enumProp(PAYMENT_STATUSES, 'Only payments with this status.'),
    method: enumProp(PAYMENT_METHODS, 'Only payments by this method.'),
    from: timeProp('Only payments made at or after this time.'),
    to: timeProp('Only payments made before this time.'),
    ...PAGE_PROPS,
  }),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const page = await searchPayments(ctx.db, ctx.principal.company_id, args);
    return collectionResult(
      'payments',
      { ...page, items: page.items.map(paymentView) },
      args as Record<string, unknown>,
      ctx.now,
    );
  },
});

export const paymentsGet = defineBusinessVerb<{ payment_id: number }>({
  name: 'payments.get',
  title: 'Payment with refunds',
  description:
    'One payment (charge) with every refund issued on it (amount, reason, who, when) and the invoice it paid. Use it to see what can still be refunded before issue_refund.',
  shape: 'aggregate',
  category: 'payments',
  input: objectSchema({ payment_id: idProp('The payment id (transaction_id).') }, ['payment_id']),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const found = await getPaymentWithRefunds(ctx.db, ctx.principal.company_id, args.payment_id);
    if (found === undefined) throw notFound('payment', args.payment_id);
    ctx.setEntity('payment', found.payment.id);
    return {
      entity_id: found.payment.id,
      entity_type: 'payment',
      data: { ...paymentView(found.payment), refunds: found.refunds.map(refundView) },
      relations: [{ type: 'invoice', ...invoiceView(found.invoice) }],
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export const paymentsExplainPayment = defineBusinessVerb<{ payment_id: number }>({
  name: 'payments.explain_payment',
  title: 'Explain a payment',
  description:
    'Explain why a payment is in its state (captured, partially refunded, refunded, failed): the invoice it paid, the capture or failure, every refund with who issued it and why, verb calls recorded against it, and a plain-language reasoning.',
  shape: 'explain',
  category: 'payments',
  input: objectSchema({ payment_id: idProp('The payment id (transaction_id).') }, ['payment_id']),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const found = await getPaymentWithRefunds(ctx.db, c, args.payment_id);
    if (found === undefined) throw notFound('payment', args.payment_id);
    const { payment, refunds, invoice } = found;
    ctx.setEntity('payment', payment.id);
    const chain = await buildCausalChain(
      ctx.db,
      c,
      { type: 'payment', id: payment.id, argKeys: ['payment_id', 'transaction_id'] },
      [
        { type: 'payment', ids: [payment.id] },
        { type: 'refund', ids: refunds.map((r) => r.id) },
        { type: 'invoice', ids: [invoice.id] },
      ],
    );
    const contact = await getContact(ctx.db, c, invoice.contact_id);
    const capture = chain.find((i) => i.action === 'payment.captured' || i.action === 'payment.failed');
    const parts = [
      `Payment ${payment.id} (${payment.charge_ref}) of ${formatCents(payment.amount_cents)} by ${payment.method} on invoice #${invoice.number} for ${contact?.name ?? `contact ${invoice.contact_id}`} is ${payment.status}.`,
    ];
    if (capture !== undefined)
      parts.push(
        `It was ${capture.action === 'payment.failed' ? 'attempted' : 'captured'} on ${capture.timestamp} by ${describeActor(capture.actor)}.`,
      );
    if (payment.status === 'failed')
      parts.push(
        `It failed (${payment.failure_reason ?? 'unknown reason'}), so it counts neither as paid nor as refundable.`,
      );
    if (refunds.length > 0) {
      parts.push(
        `${refunds.length} refund${refunds.length === 1 ? '' : 's'} returned ${formatCents(payment.refunded_cents)}: ${refunds.map((r) => `${formatCents(r.amount_cents)} on ${r.created_at}${r.reason ? ` (${r.reason})` : ''}`).join('; ')}, leaving ${formatCents(payment.net_cents)} net.`,
      );
    } else if (payment.status !== 'failed')
      parts.push(
        `Nothing was refunded; ${formatCents(payment.amount_cents - payment.refunded_cents)} can still be refunded (issue_refund).`,
      );
    return {
      entity_id: payment.id,
      entity_type: 'payment',
      current_state: {
        ...paymentView(payment),
        invoice_number: invoice.number,
        invoice_status: invoice.status,
      },
      causal_chain: chainForOutput(chain),
      reasoning: parts.join(' '),
    };
  },
});

export const paymentVerbs = [
  chargeInvoice,
  paymentsPreviewCharge,
  issueRefund,
  paymentsPreviewRefundImpact,
  paymentsSearch,
  paymentsGet,
  paymentsExplainPayment,
];
