/**
 * Invoices and their lines: tenant-scoped reads and the draft / issue / void writes.
 * (Charges and refunds against invoices live in payments.ts.)
 *
 * Invariants: `amount_cents` is the sum of the lines; `paid_cents` is the sum of `amount_cents`
 * of the invoice's non-failed payments (refunds do not reopen an invoice; net collected is
 * paid minus the payments' `refunded_cents`); status is `paid` when paid_cents = amount_cents,
 * `partially_paid` when 0 < paid_cents < amount_cents. `number` is unique per company and
 * increases with issue order (the first one is 4001).
 */
import type { Queryable } from '../../store/store.ts';
import { INVOICE_STATUSES, type InvoiceStatus } from '../schema.ts';
import { requireAppointment } from './appointments.ts';
import { requireContact } from './contacts.ts';
import { DomainError, invalidInput, notFound } from './domain-error.ts';
import { DAY_MS, isoTime, normalizeTime } from './iso-time.ts';
import { pageBounds, toPage, type Page, type PageRequest } from './page.ts';
import { num, numOrNull, textOrNull } from './row-values.ts';
import { getPart } from './inventory.ts';

export interface Invoice {
  id: number;
  company_id: number;
  contact_id: number;
  appointment_id: number | null;
  number: number;
  status: InvoiceStatus;
  amount_cents: number;
  paid_cents: number;
  /** amount − paid (0 for a void invoice). */
  balance_cents: number;
  due_at: string | null;
  issued_at: string | null;
  paid_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface InvoiceLine {
  id: number;
  company_id: number;
  invoice_id: number;
  part_id: number | null;
  description: string;
  quantity: number;
  unit_price_cents: number;
  amount_cents: number;
}

/** The first invoice number of every company; later ones count up from it. */
export const FIRST_INVOICE_NUMBER = 4001;

export const INVOICE_COLUMNS =
  'id, company_id, contact_id, appointment_id, number, status, amount_cents, paid_cents, due_at, issued_at, paid_at, created_at, updated_at';
const LINE_COLUMNS =
  'id, company_id, invoice_id, part_id, description, quantity, unit_price_cents, amount_cents';

/** Map an invoices row (either engine) to an Invoice. */
export function toInvoice(row: Record<string, unknown>): Invoice {
  const status = row.status as InvoiceStatus;
  const amount = num(row.amount_cents);
  const paid = num(row.paid_cents);
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    contact_id: num(row.contact_id),
    appointment_id: numOrNull(row.appointment_id),
    number: num(row.number),
    status,
    amount_cents: amount,
    paid_cents: paid,
    balance_cents: status === 'void' ? 0 : amount - paid,
    due_at: textOrNull(row.due_at),
    issued_at: textOrNull(row.issued_at),
    paid_at: textOrNull(row.paid_at),
    created_at: String(row.created_at),
    updated_at: String(row.updated_at),
  };
}

function toLine(row: Record<string, unknown>): InvoiceLine {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    invoice_id: num(row.invoice_id),
    part_id: numOrNull(row.part_id),
    description: String(row.description),
    quantity: num(row.quantity),
    unit_price_cents: num(row.unit_price_cents),
    amount_cents: num(row.amount_cents),
  };
}

/** One invoice of the company by id, or undefined. */
export async function getInvoice(
  q: Queryable,
  companyId: number,
  invoiceId: number,
): Promise<Invoice | undefined> {
  const row = await q.get(`SELECT ${INVOICE_COLUMNS} FROM invoices WHERE company_id = ? AND id = ?`, [
    companyId,
    invoiceId,
  ]);
  return row === undefined ? undefined : toInvoice(row);
}

/** One invoice of the company by its number (e.g. 4242), or undefined. */
export async function getInvoiceByNumber(
  q: Queryable,
  companyId: number,
  number: number,
): Promise<Invoice | undefined> {
  const row = await q.get(`SELECT ${INVOICE_COLUMNS} FROM invoices WHERE company_id = ? AND number = ?`, [
    companyId,
    number,
  ]);
  return row === undefined ? undefined : toInvoice(row);
}

/** The invoice or DomainError `not_found` ("invoice 201 not found"). */
export async function requireInvoice(q: Queryable, companyId: number, invoiceId: number): Promise<Invoice> {
  const invoice = await getInvoice(q, companyId, invoiceId);
  if (invoice === undefined) throw notFound('invoice', invoiceId);
  return invoice;
}

/** The invoice's lines in order; empty for an unknown or foreign invoice. */
export async function listInvoiceLines(
  q: Queryable,
  companyId: number,
  invoiceId: number,
): Promise<InvoiceLine[]> {
  const rows = await q.all(
    `SELECT ${LINE_COLUMNS} FROM invoice_lines WHERE company_id = ? AND invoice_id = ? ORDER BY id`,
    [companyId, invoiceId],
  );
  return rows.map(toLine);
}

export interface InvoiceSearch extends PageRequest {
  status?: InvoiceStatus;
  contact_id?: number;
  /** Only open / partially paid invoices whose due date is before `now` (required with it). */
  overdue?: boolean;
  now?: Date;
  /** ISO times with offsets on `issued_at` (inclusive / exclusive). */
  issued_from?: string;
  issued_to?: string;
}

/** Search the company's invoices, newest number first. Throws `invalid_input`. */
export async function searchInvoices(
  q: Queryable,
  companyId: number,
  search: InvoiceSearch = {},
): Promise<Page<Invoice>> {
  const bounds = pageBounds(search);
  const where = ['company_id = ?'];
  const params: unknown[] = [companyId];
  if (search.status !== undefined) {
    if (!(INVOICE_STATUSES as readonly unknown[]).includes(search.status))
      throw invalidInput('status', `must be one of ${INVOICE_STATUSES.join(', ')}`);
    where.push('status = ?');
    params.push(search.status);
  }
  if (search.contact_id !== undefined) {
    where.push('contact_id = ?');
    params.push(search.contact_id);
  }
  if (search.overdue === true) {
    if (search.now === undefined) throw invalidInput('now', 'is required with overdue');
    where.push(`status IN ('open', 'partially_paid') AND due_at < ?`);
    params.push(isoTime(search.now));
  }
  if (search.issued_from !== undefined) {
    where.push('issued_at >= ?');
    params.push(normalizeTime(search.issued_from, 'issued_from'));
  }
  if (search.issued_to !== undefined) {
    where.push('issued_at < ?');
    params.push(normalizeTime(search.issued_to, 'issued_to'));
  }
  const whereSql = where.join(' AND ');
  const total = await q.get<{ n: unknown }>(`SELECT COUNT(*) AS n FROM invoices WHERE ${whereSql}`, params);
  const rows = await q.all(
    `SELECT ${INVOICE_COLUMNS} FROM invoices WHERE ${whereSql} ORDER BY number DESC LIMIT ? OFFSET ?`,
    [...params, bounds.limit, bounds.offset],
  );
  return toPage(rows.map(toInvoice), num(total?.n), bounds);
}

/** A contact's invoices, newest number first; empty for an unknown or foreign contact. */
export async function listContactInvoices(
  q: Queryable,
  companyId: number,
  contactId: number,
): Promise<Invoice[]> {
  const rows = await q.all(
    `SELECT ${INVOICE_COLUMNS} FROM invoices WHERE company_id = ? AND contact_id = ? ORDER BY number DESC`,
    [companyId, contactId],
  );
  return rows.map(toInvoice);
}

export interface NewInvoiceLine {
  description: string;
  quantity: number;
  unit_price_cents: number;
  part_id?: number | null;
}

export interface NewInvoice {
  contact_id: number;
  appointment_id?: number | null;
  lines: NewInvoiceLine[];
  /** Issue at once (status open) instead of leaving a draft. */
  issue?: boolean;
  /** ISO time with offset; default 30 days after issue. */
  due_at?: string;
}

/**
 * Create an invoice with its lines (amount = Σ quantity × unit price) and the next number of
 * the company. Throws `invalid_input` (1..100 lines, positive integer quantities, non-negative
 * integer cents), `not_found` (contact, appointment, part), `contact_erased`.
 */
export async function createInvoice(
  tx: Queryable,
  companyId: number,
  input: NewInvoice,
  now: Date,
): Promise<{ invoice: Invoice; lines: InvoiceLine[] }> {
  if (!Array.isArray(input.lines) || input.lines.length === 0 || input.lines.length > 100)
    throw invalidInput('lines', 'give 1..100 lines');
  input.lines.forEach((l, i) => {
    if (typeof l.description !== 'string' || l.description.trim() === '' || l.description.length > 200)
      throw invalidInput(`lines[${i}].description`, 'must be 1..200 characters');
    if (!Number.isSafeInteger(l.quantity) || l.quantity <= 0)
      throw invalidInput(`lines[${i}].quantity`, 'must be a positive integer');
    if (!Number.isSafeInteger(l.unit_price_cents) || l.unit_price_cents < 0)
      throw invalidInput(`lines[${i}].unit_price_cents`, 'must be a non-negative integer number of cents');
  });
  const dueAt = input.due_at === undefined ? undefined : normalizeTime(input.due_at, 'due_at');
  await requireContact(tx, companyId, input.contact_id);
  if (input.appointment_id !== undefined && input.appointment_id !== null)
    await requireAppointment(tx, companyId, input.appointment_id);
  for (const l of input.lines) {
    if (
      l.part_id !== undefined &&
      l.part_id !== null &&
      (await getPart(tx, companyId, l.part_id)) === undefined
    )
      throw notFound('part', l.part_id);
  }
  const amount = input.lines.reduce((s, l) => s + l.quantity * l.unit_price_cents, 0);
  const next = await tx.get<{ n: unknown }>('SELECT MAX(number) AS n FROM invoices WHERE company_id = ?', [
    companyId,
  ]);
  const number = next?.n === null || next?.n === undefined ? FIRST_INVOICE_NUMBER : num(next.n) + 1;
  const at = isoTime(now);
  const issue = input.issue === true;
  const row = await tx.get(
    `INSERT INTO invoices (company_id, contact_id, appointment_id, number, status, amount_cents, paid_cents, due_at, issued_at, paid_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, NULL, ?, ?) RETURNING ${INVOICE_COLUMNS}`,
    [
      companyId,
      input.contact_id,
      input.appointment_id ?? null,
      number,
      issue ? 'open' : 'draft',
      amount,
      issue ? (dueAt ?? isoTime(new Date(now.getTime() + 30 * DAY_MS))) : (dueAt ?? null),
      issue ? at : null,
      at,
      at,
    ],
  );
  const invoice = toInvoice(row!);
  const lines: InvoiceLine[] = [];
  for (const l of input.lines) {
    const lr = await tx.get(
      `INSERT INTO invoice_lines (company_id, invoice_id, part_id, description, quantity, unit_price_cents, amount_cents)
       VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING ${LINE_COLUMNS}`,
      [
        companyId,
        invoice.id,
        l.part_id ?? null,
        l.description.trim(),
        l.quantity,
        l.unit_price_cents,
        l.quantity * l.unit_price_cents,
      ],
    );
    lines.push(toLine(lr!));
  }
  return { invoice, lines };
}

/**
 * Issue a draft: status open, `issued_at` now, `due_at` as given or 30 days later.
 * Throws `not_found`, `invoice_not_draft`, `invalid_input`.
 */
export async function issueInvoice(
  tx: Queryable,
  companyId: number,
  invoiceId: number,
  now: Date,
  dueAt?: string,
): Promise<{ previous_status: InvoiceStatus; invoice: Invoice }> {
  const due = dueAt === undefined ? undefined : normalizeTime(dueAt, 'due_at');
  const invoice = await requireInvoice(tx, companyId, invoiceId);
  if (invoice.status !== 'draft')
    throw new DomainError(
      'invoice_not_draft',
      `invoice ${invoiceId} is ${invoice.status}, not a draft`,
      'Only drafts can be issued.',
    );
  const at = isoTime(now);
  const row = await tx.get(
    `UPDATE invoices SET status = 'open', issued_at = ?, due_at = ?, updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${INVOICE_COLUMNS}`,
    [at, due ?? invoice.due_at ?? isoTime(new Date(now.getTime() + 30 * DAY_MS)), at, companyId, invoiceId],
  );
  return { previous_status: invoice.status, invoice: toInvoice(row!) };
}

/**
 * Void an invoice that has no payments. Throws `not_found`, `no_change` (already void),
 * `invoice_has_payments` (paid_cents > 0: refund the payments instead).
 */
export async function voidInvoice(
  tx: Queryable,
  companyId: number,
  invoiceId: number,
  now: Date,
): Promise<{ previous_status: InvoiceStatus; invoice: Invoice }> {
  const invoice = await requireInvoice(tx, companyId, invoiceId);
  if (invoice.status === 'void') throw new DomainError('no_change', `invoice ${invoiceId} is already void`);
  if (invoice.paid_cents > 0)
    throw new DomainError(
      'invoice_has_payments',
      `invoice ${invoiceId} has ${invoice.paid_cents} cents paid`,
      'Refund its payments instead of voiding it.',
    );
  const row = await tx.get(
    `UPDATE invoices SET status = 'void', updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${INVOICE_COLUMNS}`,
    [isoTime(now), companyId, invoiceId],
  );
  return { previous_status: invoice.status, invoice: toInvoice(row!) };
}

/**
 * Put an invoice without payments back in a previous state (the revert of issuing or voiding
 * it): status, `issued_at` and `due_at` as they were. Throws `not_found`, `invoice_has_payments`,
 * `invalid_input` (a status other than draft or open).
 */
export async function restoreInvoiceState(
  tx: Queryable,
  companyId: number,
  invoiceId: number,
  previous: { status: InvoiceStatus; issued_at: string | null; due_at: string | null },
  now: Date,
): Promise<{ previous_status: InvoiceStatus; invoice: Invoice }> {
  if (previous.status !== 'draft' && previous.status !== 'open')
    throw invalidInput('status', 'an invoice can only be put back to draft or open');
  const invoice = await requireInvoice(tx, companyId, invoiceId);
  if (invoice.paid_cents > 0)
    throw new DomainError(
      'invoice_has_payments',
      `invoice ${invoiceId} has ${invoice.paid_cents} cents paid`,
      'Refund its payments first.',
    );
  const row = await tx.get(
    `UPDATE invoices SET status = ?, issued_at = ?, due_at = ?, updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${INVOICE_COLUMNS}`,
    [previous.status, previous.issued_at, previous.due_at, isoTime(now), companyId, invoiceId],
  );
  return { previous_status: invoice.status, invoice: toInvoice(row!) };
}
