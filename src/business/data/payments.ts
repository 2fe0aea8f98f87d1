/**
 * Payments (charges against invoices) and refunds: tenant-scoped reads, lifetime value, and the
 * two financial writes.
 *
 * Invariants kept by the writes: an invoice's `paid_cents` is the sum of `amount_cents` of its
 * non-failed payments; a payment's `refunded_cents` is the sum of its refunds and never exceeds
 * its `amount_cents`; payment status is `captured` (nothing refunded), `partially_refunded` or
 * `refunded`. Processing fees: card 2.9 % + 30 ¢ (the 2.9 % part is returned on refund), ACH
 * 0.8 % capped at $5 (not returned), check and cash free. All money is integer cents.
 */
import { randomBytes } from 'node:crypto';
import type { Queryable } from '../../store/store.ts';
import { PAYMENT_METHODS, PAYMENT_STATUSES, type PaymentMethodKind, type PaymentStatus } from '../schema.ts';
import { getContact, getPaymentMethod } from './contacts.ts';
import { DomainError, invalidInput, notFound } from './domain-error.ts';
import { isoTime, normalizeTime } from './iso-time.ts';
import {
  INVOICE_COLUMNS,
  getInvoice,
  listInvoiceLines,
  requireInvoice,
  toInvoice,
  type Invoice,
  type InvoiceLine,
} from './invoices.ts';
import { pageBounds, toPage, type Page, type PageRequest } from './page.ts';
import { num, numOrNull, textOrNull } from './row-values.ts';

export interface Payment {
  id: number;
  company_id: number;
  invoice_id: number;
  payment_method_id: number | null;
  /** Processor charge reference, e.g. `ch_3f9a…`; unique per company. */
  charge_ref: string;
  amount_cents: number;
  refunded_cents: number;
  /** amount − refunded (0 for a failed payment). */
  net_cents: number;
  fee_cents: number;
  status: PaymentStatus;
  method: PaymentMethodKind;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface Refund {
  id: number;
  company_id: number;
  payment_id: number;
  /** Processor refund reference, e.g. `re_…`. */
  refund_ref: string;
  amount_cents: number;
  fee_refunded_cents: number;
  reason: string | null;
  created_by_user_id: number | null;
  created_at: string;
}

const PAYMENT_COLUMNS =
  'id, company_id, invoice_id, payment_method_id, charge_ref, amount_cents, refunded_cents, fee_cents, status, method, failure_reason, created_at, updated_at';
const REFUND_COLUMNS =
  'id, company_id, payment_id, refund_ref, amount_cents, fee_refunded_cents, reason, created_by_user_id, created_at';

function toPayment(row: Record<string, unknown>): Payment {
  const status = row.status as PaymentStatus;
  const amount = num(row.amount_cents);
  const refunded = num(row.refunded_cents);
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    invoice_id: num(row.invoice_id),
    payment_method_id: numOrNull(row.payment_method_id),
    charge_ref: String(row.charge_ref),
    amount_cents: amount,
    refunded_cents: refunded,
    net_cents: status === 'failed' ? 0 : amount - refunded,
    fee_cents: num(row.fee_cents),
    status,
    method: row.method as PaymentMethodKind,
    failure_reason: textOrNull(row.failure_reason),
    created_at: String(row.created_at),
    updated_at: String(row.updated_at),
  };
}

function toRefund(row: Record<string, unknown>): Refund {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    payment_id: num(row.payment_id),
    refund_ref: String(row.refund_ref),
    amount_cents: num(row.amount_cents),
    fee_refunded_cents: num(row.fee_refunded_cents),
    reason: textOrNull(row.reason),
    created_by_user_id: numOrNull(row.created_by_user_id),
    created_at: String(row.created_at),
  };
}

/** Processing fee in cents charged on a capture of `amountCents` by `method`. */
export function processingFeeCents(method: PaymentMethodKind, amountCents: number): number {
  if (method === 'card') return Math.round((amountCents * 29) / 1000) + 30;
  if (method === 'ach') return Math.min(Math.round((amountCents * 8) / 1000), 500);
  return 0;
}

/** Part of the processing fee returned to the merchant on a refund of `refundCents` (card: 2.9 %; others: 0). */
export function refundedFeeCents(method: PaymentMethodKind, refundCents: number): number {
  return method === 'card' ? Math.round((refundCents * 29) / 1000) : 0;
}

/** One payment of the company, or undefined. */
export async function getPayment(
  q: Queryable,
  companyId: number,
  paymentId: number,
): Promise<Payment | undefined> {
  const row = await q.get(`SELECT ${PAYMENT_COLUMNS} FROM payments WHERE company_id = ? AND id = ?`, [
    companyId,
    paymentId,
  ]);
  return row === undefined ? undefined : toPayment(row);
}

/** One payment of the company by its charge reference (`ch_…`), or undefined. */
export async function getPaymentByChargeRef(
  q: Queryable,
  companyId: number,
  chargeRef: string,
): Promise<Payment | undefined> {
  const row = await q.get(`SELECT ${PAYMENT_COLUMNS} FROM payments WHERE company_id = ? AND charge_ref = ?`, [
    companyId,
    chargeRef,
  ]);
  return row === undefined ? undefined : toPayment(row);
}

/** The payment or DomainError `not_found` ("payment 100 not found"). */
export async function requirePayment(q: Queryable, companyId: number, paymentId: number): Promise<Payment> {
  const payment = await getPayment(q, companyId, paymentId);
  if (payment === undefined) throw notFound('payment', paymentId);
  return payment;
}

export interface PaymentSearch extends PageRequest {
  invoice_id?: number;
  contact_id?: number;
  status?: PaymentStatus;
  method?: PaymentMethodKind;
  /** ISO times with offsets on `created_at` (inclusive / exclusive). */
  from?: string;
  to?: string;
}

/** Search the company's payments, newest first. Throws `invalid_input`. */
export async function searchPayments(
  q: Queryable,
  companyId: number,
  search: PaymentSearch = {},
): Promise<Page<Payment>> {
  const bounds = pageBounds(search);
  const where = ['p.company_id = ?'];
  const params: unknown[] = [companyId];
  if (search.invoice_id !== undefined) {
    where.push('p.invoice_id = ?');
    params.push(search.invoice_id);
  }
  if (search.contact_id !== undefined) {
    where.push('i.contact_id = ?');
    params.push(search.contact_id);
  }
  if (search.status !== undefined) {
    if (!(PAYMENT_STATUSES as readonly unknown[]).includes(search.status))
      throw invalidInput('status', `must be one of ${PAYMENT_STATUSES.join(', ')}`);
    where.push('p.status = ?');
    params.push(search.status);
  }
  if (search.method !== undefined) {
    where.push('p.method = ?');
    params.push(search.method);
  }
  if (search.from !== undefined) {
    where.push('p.created_at >= ?');
    params.push(normalizeTime(search.from, 'from'));
  }
  if (search.to !== undefined) {
    where.push('p.created_at < ?');
    params.push(normalizeTime(search.to, 'to'));
  }
  const from = 'payments p JOIN invoices i ON i.company_id = p.company_id AND i.id = p.invoice_id';
  const whereSql = where.join(' AND ');
  const total = await q.get<{ n: unknown }>(`SELECT COUNT(*) AS n FROM ${from} WHERE ${whereSql}`, params);
  const cols = PAYMENT_COLUMNS.split(', ')
    .map((c) => `p.${c}`)
    .join(', ');
  const rows = await q.all(
    `SELECT ${cols} FROM ${from} WHERE ${whereSql} ORDER BY p.created_at DESC, p.id DESC LIMIT ? OFFSET ?`,
    [...params, bounds.limit, bounds.offset],
  );
  return toPage(rows.map(toPayment), num(total?.n), bounds);
}

/** An invoice's payments, oldest first; empty for an unknown or foreign invoice. */
export async function listInvoicePayments(
  q: Queryable,
  companyId: number,
  invoiceId: number,
): Promise<Payment[]> {
  const rows = await q.all(
    `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE company_id = ? AND invoice_id = ? ORDER BY created_at, id`,
    [companyId, invoiceId],
  );
  return rows.map(toPayment);
}

/** A payment's refunds, oldest first; empty for an unknown or foreign payment. */
export async function listRefunds(q: Queryable, companyId: number, paymentId: number): Promise<Refund[]> {
  const rows = await q.all(
    `SELECT ${REFUND_COLUMNS} FROM refunds WHERE company_id = ? AND payment_id = ? ORDER BY created_at, id`,
    [companyId, paymentId],
  );
  return rows.map(toRefund);
}

/** An invoice with its lines and payments, or undefined. */
export async function getInvoiceWithPayments(
  q: Queryable,
  companyId: number,
  invoiceId: number,
): Promise<{ invoice: Invoice; lines: InvoiceLine[]; payments: Payment[] } | undefined> {
  const invoice = await getInvoice(q, companyId, invoiceId);
  if (invoice === undefined) return undefined;
  return {
    invoice,
    lines: await listInvoiceLines(q, companyId, invoiceId),
    payments: await listInvoicePayments(q, companyId, invoiceId),
  };
}

/** A payment with its refunds and its invoice, or undefined. */
export async function getPaymentWithRefunds(
  q: Queryable,
  companyId: number,
  paymentId: number,
): Promise<{ payment: Payment; refunds: Refund[]; invoice: Invoice } | undefined> {
  const payment = await getPayment(q, companyId, paymentId);
  if (payment === undefined) return undefined;
  const invoice = await getInvoice(q, companyId, payment.invoice_id);
  return { payment, refunds: await listRefunds(q, companyId, paymentId), invoice: invoice! };
}

export interface LifetimeValue {
  contact_id: number;
  /** Σ amount of non-failed payments. */
  captured_cents: number;
  refunded_cents: number;
  /** captured − refunded. */
  lifetime_value_cents: number;
  payments_count: number;
  /** Σ balance of open and partially paid invoices. */
  outstanding_cents: number;
}

/** Money the contact has brought in (net of refunds) and still owes; undefined for an unknown or foreign contact. */
export async function getContactLifetimeValue(
  q: Queryable,
  companyId: number,
  contactId: number,
): Promise<LifetimeValue | undefined> {
  if ((await getContact(q, companyId, contactId)) === undefined) return undefined;
  const paid = await q.get<{ captured: unknown; refunded: unknown; n: unknown }>(
    `SELECT COALESCE(SUM(p.amount_cents), 0) AS captured, COALESCE(SUM(p.refunded_cents), 0) AS refunded, COUNT(*) AS n
       FROM payments p JOIN invoices i ON i.company_id = p.company_id AND i.id = p.invoice_id
      WHERE p.company_id = ? AND i.contact_id = ? AND p.status <> 'failed'`,
    [companyId, contactId],
  );
  const owed = await q.get<{ owed: unknown }>(
    `SELECT COALESCE(SUM(amount_cents - paid_cents), 0) AS owed FROM invoices
      WHERE company_id = ? AND contact_id = ? AND status IN ('open', 'partially_paid')`,
    [companyId, contactId],
  );
  const captured = num(paid?.captured);
  const refunded = num(paid?.refunded);
  return {
    contact_id: contactId,
    captured_cents: captured,
    refunded_cents: refunded,
    lifetime_value_cents: captured - refunded,
    payments_count: num(paid?.n),
    outstanding_cents: num(owed?.owed),
  };
}

function newRef(prefix: 'ch' | 're'): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

export interface NewCharge {
  invoice_id: number;
  amount_cents: number;
  /** Default `card`. */
  method?: PaymentMethodKind;
  /** A stored method of the invoice's contact; default its default method for card / ach. */
  payment_method_id?: number | null;
  /** Processor reference; generated (`ch_` + 24 hex) when absent. */
  charge_ref?: string;
}

export interface ChargeResult {
  payment: Payment;
  invoice: Invoice;
  /** The invoice fields the charge changed, before it. */
  previous_invoice: { status: Invoice['status']; paid_cents: number; paid_at: string | null };
}

/**
 * Capture a payment against an invoice: adds a `captured` payment, raises the invoice's
 * `paid_cents`, sets status `paid` (with `paid_at`) or `partially_paid`. Throws `invalid_input`
 * (amount not a positive integer of cents, unknown method), `not_found` (invoice, payment
 * method), `invoice_not_payable` (draft or void), `already_paid`, `amount_exceeds_balance`.
 */
export async function recordCharge(
  tx: Queryable,
  companyId: number,
  input: NewCharge,
  now: Date,
): Promise<ChargeResult> {
  if (!Number.isSafeInteger(input.amount_cents) || input.amount_cents <= 0)
    throw invalidInput('amount_cents', 'must be a positive integer number of cents');
  const method = input.method ?? 'card';
  if (!(PAYMENT_METHODS as readonly unknown[]).includes(method))
    throw invalidInput('method', `must be one of ${PAYMENT_METHODS.join(', ')}`);
  const invoice = await requireInvoice(tx, companyId, input.invoice_id);
  if (invoice.status === 'draft' || invoice.status === 'void') {
    throw new DomainError(
      'invoice_not_payable',
      `invoice ${invoice.id} is ${invoice.status}`,
      invoice.status === 'draft' ? 'Issue the invoice first.' : 'A void invoice takes no payments.',
    );
  }
  if (invoice.status === 'paid' || invoice.paid_cents >= invoice.amount_cents) {
    throw new DomainError(
      'already_paid',
      `invoice ${invoice.id} (#${invoice.number}) is already paid in full`,
      'Nothing is due on it.',
    );
  }
  const balance = invoice.amount_cents - invoice.paid_cents;
  if (input.amount_cents > balance) {
    throw new DomainError(
      'amount_exceeds_balance',
      `invoice ${invoice.id} (#${invoice.number}) has ${balance} cents due; the charge is ${input.amount_cents}`,
      `Charge at most ${balance} cents.`,
    );
  }
  let methodId: number | null = null;
  if (input.payment_method_id !== undefined && input.payment_method_id !== null) {
    const pm = await getPaymentMethod(tx, companyId, input.payment_method_id);
    if (pm === undefined || pm.contact_id !== invoice.contact_id)
      throw notFound('payment method', input.payment_method_id);
    methodId = pm.id;
  } else if (method === 'card' || method === 'ach') {
    const pm = await tx.get<{ id: unknown }>(
      'SELECT id FROM payment_methods WHERE company_id = ? AND contact_id = ? AND type = ? ORDER BY is_default DESC, id LIMIT 1',
      [companyId, invoice.contact_id, method],
    );
    methodId = pm === undefined ? null : num(pm.id);
  }
  const at = isoTime(now);
  const payment = await tx.get(
    `INSERT INTO payments (company_id, invoice_id, payment_method_id, charge_ref, amount_cents, refunded_cents, fee_cents, status, method, failure_reason, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, 0, ?, 'captured', ?, NULL, ?, ?) RETURNING ${PAYMENT_COLUMNS}`,
    [
      companyId,
      invoice.id,
      methodId,
      input.charge_ref ?? newRef('ch'),
      input.amount_cents,
      processingFeeCents(method, input.amount_cents),
      method,
      at,
      at,
    ],
  );
  const paid = invoice.paid_cents + input.amount_cents;
  const full = paid === invoice.amount_cents;
  const updated = await tx.get(
    `UPDATE invoices SET paid_cents = ?, status = ?, paid_at = ?, updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${INVOICE_COLUMNS}`,
    [paid, full ? 'paid' : 'partially_paid', full ? at : invoice.paid_at, at, companyId, invoice.id],
  );
  return {
    payment: toPayment(payment!),
    invoice: toInvoice(updated!),
    previous_invoice: { status: invoice.status, paid_cents: invoice.paid_cents, paid_at: invoice.paid_at },
  };
}

export interface NewRefund {
  payment_id: number;
  amount_cents: number;
  reason?: string | null;
  created_by_user_id?: number | null;
  /** Processor reference; generated (`re_` + 24 hex) when absent. */
  refund_ref?: string;
}

export interface RefundResult {
  refund: Refund;
  payment: Payment;
  /** The payment fields the refund changed, before it. */
  previous_payment: { refunded_cents: number; status: PaymentStatus };
}

/**
 * Refund part or all of a payment: adds a refund row, raises `refunded_cents`, sets status
 * `partially_refunded` or `refunded`. The invoice stays as it is (see invoices.ts). Throws
 * `invalid_input` (amount), `not_found` (payment), `payment_not_refundable` (failed or already
 * fully refunded), `refund_exceeds_captured` (amount > amount − refunded).
 */
export async function recordRefund(
  tx: Queryable,
  companyId: number,
  input: NewRefund,
  now: Date,
): Promise<RefundResult> {
  if (!Number.isSafeInteger(input.amount_cents) || input.amount_cents <= 0)
    throw invalidInput('amount_cents', 'must be a positive integer number of cents');
  const payment = await requirePayment(tx, companyId, input.payment_id);
  if (payment.status === 'failed' || payment.status === 'refunded') {
    throw new DomainError(
      'payment_not_refundable',
      `payment ${payment.id} (${payment.charge_ref}) is ${payment.status}`,
      'Nothing is left to refund on it.',
    );
  }
  const refundable = payment.amount_cents - payment.refunded_cents;
  if (input.amount_cents > refundable) {
    throw new DomainError(
      'refund_exceeds_captured',
      `payment ${payment.id} (${payment.charge_ref}) has ${refundable} cents left to refund; the refund is ${input.amount_cents}`,
      `Refund at most ${refundable} cents.`,
    );
  }
  const at = isoTime(now);
  const refund = await tx.get(
    `INSERT INTO refunds (company_id, payment_id, refund_ref, amount_cents, fee_refunded_cents, reason, created_by_user_id, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${REFUND_COLUMNS}`,
    [
      companyId,
      payment.id,
      input.refund_ref ?? newRef('re'),
      input.amount_cents,
      refundedFeeCents(payment.method, input.amount_cents),
      input.reason ?? null,
      input.created_by_user_id ?? null,
      at,
    ],
  );
  const refunded = payment.refunded_cents + input.amount_cents;
  const status: PaymentStatus = refunded === payment.amount_cents ? 'refunded' : 'partially_refunded';
  const updated = await tx.get(
    `UPDATE payments SET refunded_cents = ?, status = ?, updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${PAYMENT_COLUMNS}`,
    [refunded, status, at, companyId, payment.id],
  );
  return {
    refund: toRefund(refund!),
    payment: toPayment(updated!),
    previous_payment: { refunded_cents: payment.refunded_cents, status: payment.status },
  };
}
