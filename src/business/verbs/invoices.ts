/**
 * Invoice verbs (category `invoices`): search and read invoices (lines, payments), create a
 * draft or issued invoice, issue a draft, void an unpaid invoice, and email a payment reminder —
 * each write reversible and previewable. Charges and refunds are payments verbs (payments.ts).
 *
 * Reasons: not_found ("invoice 201 not found", "contact 9 not found", "part 3 not found"),
 * invoice_not_draft, invoice_has_payments, no_change, contact_erased, invalid_input.
 * Spec: spec/shapes.md §aggregate §preview §receipt.
 */
import { formatCents } from '../../runtime/consent/typed-phrase.ts';
import type { VerbContext, VerbDefinition } from '../../runtime/verb.ts';
import { getContact, requireContact } from '../data/contacts.ts';
import { DomainError, notFound } from '../data/domain-error.ts';
import { getPart } from '../data/inventory.ts';
import { DAY_MS, isoTime, normalizeTime } from '../data/iso-time.ts';
import {
  createInvoice,
  issueInvoice,
  listInvoiceLines,
  requireInvoice,
  restoreInvoiceState,
  searchInvoices,
  voidInvoice,
  type NewInvoiceLine,
} from '../data/invoices.ts';
import { listInvoicePayments } from '../data/payments.ts';
import { num } from '../data/row-values.ts';
import { requireAppointment } from '../data/appointments.ts';
import { INVOICE_STATUSES, type InvoiceStatus } from '../schema.ts';
import { contactName, invoiceCustomer } from './activity-words.ts';
import { valueWords } from './change-words.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { collectionResult } from './collection-result.ts';
import { queueOutboundEmail, recallEmail } from './email.ts';
import { invoiceLineView, invoiceView, paymentView } from './entity-views.ts';
import { centsProp, enumProp, idProp, objectSchema, PAGE_PROPS, textProp, timeProp } from './input-schema.ts';

// ---------------------------------------------------------------------------------------------
// Read

export const invoicesSearch = defineBusinessVerb<{
  status?: InvoiceStatus;
  contact_id?: number;
  overdue?: boolean;
  issued_from?: string;
  issued_to?: string;
  limit?: number;
  offset?: number;
}>({
  name: 'invoices.search',
  title: 'Search invoices',
  description:
    'List invoices, newest number first, filtered by status (draft, open, paid, partially_paid, void), customer, overdue (open or partially paid past their due date) or issue date range. Each has id, number (what customers see, e.g. #4304), amounts in cents (amount, paid, balance) and dates.',
  shape: 'aggregate',
  category: 'invoices',
  input: objectSchema({
    status: enumProp(INVOICE_STATUSES, 'Only invoices with this status.'),
    contact_id: idProp('Only invoices of this customer.'),
    overdue: { type: 'boolean', description: 'true: only unpaid invoices past their due date.' },
    issued_from: timeProp('Only invoices issued at or after this time.'),
    issued_to: timeProp('Only invoices issued before this time.'),
    ...PAGE_PROPS,
  }),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const page = await searchInvoices(ctx.db, ctx.principal.company_id, {
      ...args,
      ...(args.overdue === true ? { now: ctx.now } : {}),
    });
    return collectionResult(
      'invoices',
      { ...page, items: page.items.map(invoiceView) },
      args as Record<string, unknown>,
      ctx.now,
    );
  },
});

export const invoicesGet = defineBusinessVerb<{ invoice_id: number }>({
  name: 'invoices.get',
  title: 'Invoice with lines and payments',
  description:
    'One invoice with its customer, line items and payments (charge references, amounts, refunds). Use the number and balance_cents for charge_invoice.',
  shape: 'aggregate',
  category: 'invoices',
  input: objectSchema({ invoice_id: idProp('The invoice id (not its number).') }, ['invoice_id']),
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'portal'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const invoice = await requireInvoice(ctx.db, c, args.invoice_id);
    ctx.setEntity('invoice', invoice.id);
    const [lines, payments, contact] = [
      await listInvoiceLines(ctx.db, c, invoice.id),
      await listInvoicePayments(ctx.db, c, invoice.id),
      await getContact(ctx.db, c, invoice.contact_id),
    ];
    return {
      entity_id: invoice.id,
      entity_type: 'invoice',
      data: {
        ...invoiceView(invoice),
        customer_name: contact?.name ?? null,
        lines: lines.map(invoiceLineView),
      },
      relations: [
        ...(contact !== undefined ? [{ type: 'customer', id: contact.id, name: contact.name }] : []),
        ...payments.map((p) => ({ type: 'payment', ...paymentView(p) })),
      ],
      fetched_at: ctx.now.toISOString(),
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Create

interface CreateArgs {
  contact_id: number;
  appointment_id?: number;
  lines: NewInvoiceLine[];
  issue?: boolean;
  due_at?: string;
}

const createInput = objectSchema(
  {
    contact_id: idProp('The customer billed.'),
    appointment_id: idProp('The visit being invoiced.'),
    lines: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      description: 'Line items; the invoice amount is the sum of quantity × unit price.',
      items: objectSchema(
        {
          description: textProp('What was done or supplied.', 200),
          quantity: { type: 'integer', minimum: 1, maximum: 10_000, description: 'How many.' },
          unit_price_cents: centsProp('Price of one unit.', 0),
          part_id: idProp('The inventory part, when the line is a part.'),
        },
        ['description', 'quantity', 'unit_price_cents'],
      ),
    },
    issue: {
      type: 'boolean',
      default: false,
      description: 'Issue it at once (status open) instead of leaving a draft.',
    },
    due_at: timeProp('Due date; default 30 days after issue.'),
  },
  ['contact_id', 'lines'],
);

export const invoicesCreate = defineBusinessVerb<CreateArgs>({
  name: 'invoices.create',
  title: 'Create an invoice',
  description:
    'Create an invoice for a customer from line items (description, quantity, unit price in cents, optional part), optionally for a visit, as a draft or issued at once (issue=true, due in 30 days unless due_at). Answers the invoice id and number. Reversible: audit.revert voids it while nothing was paid on it. Preview with invoices.preview_create.',
  shape: 'receipt',
  category: 'invoices',
  consent: 'WRITE_REVERSIBLE',
  preview: 'invoices.preview_create',
  input: createInput,
  summary: (a) =>
    `Invoice contact ${a.contact_id} for ${formatCents(a.lines.reduce((s, l) => s + l.quantity * l.unit_price_cents, 0))}${a.issue ? ' and issue it' : ' (draft)'}.`,
  activity: async (read, a) => {
    const name = await contactName(read, a.contact_id);
    return (
      name &&
      `Invoice ${name} for ${formatCents(a.lines.reduce((s, l) => s + l.quantity * l.unit_price_cents, 0))}${a.issue ? ' and issue it' : ' (draft)'}`
    );
  },
  async handler(ctx, args) {
    const { invoice, lines } = await createInvoice(ctx.db, ctx.principal.company_id, args, ctx.now);
    ctx.setEntity('invoice', invoice.id);
    ctx.emit({
      type: 'invoice.created',
      entity_type: 'invoice',
      entity_id: invoice.id,
      payload: {
        contact_id: invoice.contact_id,
        number: invoice.number,
        amount_cents: invoice.amount_cents,
        issued: invoice.status === 'open',
      },
    });
    if (invoice.status === 'open') {
      ctx.emit({
        type: 'invoice.issued',
        entity_type: 'invoice',
        entity_id: invoice.id,
        payload: {
          contact_id: invoice.contact_id,
          number: invoice.number,
          amount_cents: invoice.amount_cents,
          due_at: invoice.due_at,
          appointment_id: invoice.appointment_id,
        },
      });
    }
    ctx.setRollback(`invoice:create:${invoice.id}`, { invoice_id: invoice.id });
    return {
      status: invoice.status === 'open' ? 'issued' : 'draft',
      invoice_id: invoice.id,
      number: invoice.number,
      invoice: invoiceView(invoice),
      lines: lines.map(invoiceLineView),
    };
  },
  revert: {
    async handler(ctx, original) {
      const { invoice } = await voidInvoice(
        ctx.db,
        ctx.principal.company_id,
        num(original.rollback.invoice_id),
        ctx.now,
      );
      ctx.emit({
        type: 'invoice.voided',
        entity_type: 'invoice',
        entity_id: invoice.id,
        payload: { contact_id: invoice.contact_id, number: invoice.number, revert_of: original.audit_id },
      });
      return { revert_action: `voided invoice #${invoice.number}` };
    },
  },
});

export const invoicesPreviewCreate = defineBusinessVerb<CreateArgs>({
  name: 'invoices.preview_create',
  title: 'Preview an invoice',
  description:
    'Show the invoice invoices.create would write (amount, lines, status, due date) and what the customer already owes, without writing. Same arguments.',
  shape: 'preview',
  category: 'invoices',
  input: createInput,
  idempotent: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const contact = await requireContact(ctx.db, c, args.contact_id);
    if (args.appointment_id !== undefined) await requireAppointment(ctx.db, c, args.appointment_id);
    for (const l of args.lines)
      if (
        l.part_id !== undefined &&
        l.part_id !== null &&
        (await getPart(ctx.db, c, l.part_id)) === undefined
      )
        throw notFound('part', l.part_id);
    const amount = args.lines.reduce((s, l) => s + l.quantity * l.unit_price_cents, 0);
    const open = (await searchInvoices(ctx.db, c, { contact_id: contact.id, limit: 200 })).items.filter(
      (i) => i.balance_cents > 0,
    );
    const owed = open.reduce((s, i) => s + i.balance_cents, 0);
    const issue = args.issue === true;
    return {
      current: {
        customer: { id: contact.id, name: contact.name },
        outstanding_cents: owed,
        open_invoices: open.length,
      },
      projected: {
        customer: { id: contact.id, name: contact.name },
        outstanding_cents: owed + (issue ? amount : 0),
        open_invoices: open.length + (issue ? 1 : 0),
        invoice: {
          status: issue ? 'open' : 'draft',
          amount_cents: amount,
          lines: args.lines.length,
          due_at: issue
            ? args.due_at !== undefined
              ? normalizeTime(args.due_at, 'due_at')
              : isoTime(new Date(ctx.now.getTime() + 30 * DAY_MS))
            : null,
        },
      },
      delta: { amount_cents: amount, outstanding_change_cents: issue ? amount : 0 },
      reversible: invoicesCreate.revert !== undefined,
      notes: issue
        ? 'The invoice is issued at once and becomes payable.'
        : 'A draft is not payable until invoices.issue.',
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Issue

interface IssueArgs {
  invoice_id: number;
  due_at?: string;
}

const issueInput = objectSchema(
  { invoice_id: idProp('The draft invoice.'), due_at: timeProp('Due date; default 30 days from now.') },
  ['invoice_id'],
);

export const invoicesIssue = defineBusinessVerb<IssueArgs>({
  name: 'invoices.issue',
  title: 'Issue an invoice',
  description:
    'Issue a draft invoice: it becomes open (payable) with a due date (default 30 days). Refused with invoice_not_draft for anything but a draft. Reversible: audit.revert turns it back into a draft while nothing was paid. Preview with invoices.preview_issue.',
  shape: 'receipt',
  category: 'invoices',
  consent: 'WRITE_REVERSIBLE',
  preview: 'invoices.preview_issue',
  input: issueInput,
  summary: (a) => `Issue invoice ${a.invoice_id}.`,
  activity: async (read, a) => {
    const inv = await invoiceCustomer(read, a.invoice_id);
    return inv && `Issue invoice #${inv.number} to ${inv.name}`;
  },
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const before = await requireInvoice(ctx.db, c, args.invoice_id);
    const { invoice } = await issueInvoice(ctx.db, c, args.invoice_id, ctx.now, args.due_at);
    ctx.setEntity('invoice', invoice.id);
    ctx.emit({
      type: 'invoice.issued',
      entity_type: 'invoice',
      entity_id: invoice.id,
      payload: {
        contact_id: invoice.contact_id,
        number: invoice.number,
        amount_cents: invoice.amount_cents,
        due_at: invoice.due_at,
        appointment_id: invoice.appointment_id,
      },
    });
    ctx.setRollback(`invoice:issue:${invoice.id}`, {
      invoice_id: invoice.id,
      number: invoice.number,
      previous: { status: before.status, issued_at: before.issued_at, due_at: before.due_at },
    });
    return {
      status: 'issued',
      invoice_id: invoice.id,
      number: invoice.number,
      due_at: invoice.due_at,
      amount_cents: invoice.amount_cents,
    };
  },
  revert: {
    describe: ({ rollback }) =>
      `Invoice #${String(rollback.number ?? rollback.invoice_id)}: ${valueWords('status', (rollback.previous as { status?: unknown } | undefined)?.status)} → issued`,
    async handler(ctx, original) {
      const r = original.rollback as {
        invoice_id: number;
        previous: { status: InvoiceStatus; issued_at: string | null; due_at: string | null };
      };
      const { invoice } = await restoreInvoiceState(
        ctx.db,
        ctx.principal.company_id,
        r.invoice_id,
        r.previous,
        ctx.now,
      );
      ctx.emit({
        type: 'invoice.reopened',
        entity_type: 'invoice',
        entity_id: invoice.id,
        payload: { number: invoice.number, status: invoice.status, revert_of: original.audit_id },
      });
      return { revert_action: `turned invoice #${invoice.number} back into a ${invoice.status}` };
    },
  },
});

export const invoicesPreviewIssue = defineBusinessVerb<IssueArgs>({
  name: 'invoices.preview_issue',
  title: 'Preview issuing an invoice',
  description: 'Show a draft before and after invoices.issue with the same arguments, without issuing it.',
  shape: 'preview',
  category: 'invoices',
  input: issueInput,
  idempotent: true,
  async handler(ctx, args) {
    const invoice = await requireInvoice(ctx.db, ctx.principal.company_id, args.invoice_id);
    if (invoice.status !== 'draft')
      throw new DomainError(
        'invoice_not_draft',
        `invoice ${invoice.id} is ${invoice.status}, not a draft`,
        'Only drafts can be issued.',
      );
    const due =
      args.due_at !== undefined
        ? normalizeTime(args.due_at, 'due_at')
        : (invoice.due_at ?? isoTime(new Date(ctx.now.getTime() + 30 * DAY_MS)));
    return {
      current: {
        invoice_id: invoice.id,
        number: invoice.number,
        status: 'draft',
        issued_at: null,
        due_at: invoice.due_at,
        balance_cents: invoice.balance_cents,
      },
      projected: {
        invoice_id: invoice.id,
        number: invoice.number,
        status: 'open',
        issued_at: ctx.now.toISOString(),
        due_at: due,
        balance_cents: invoice.amount_cents,
      },
      delta: { status: 'draft → open', receivable_change_cents: invoice.amount_cents },
      reversible: invoicesIssue.revert !== undefined,
      notes: 'Once issued the customer can pay it; audit.revert makes it a draft again while unpaid.',
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Void

const voidInput = objectSchema({ invoice_id: idProp('The invoice to void (no payments on it).') }, [
  'invoice_id',
]);

export const invoicesVoid = defineBusinessVerb<{ invoice_id: number }>({
  name: 'invoices.void',
  title: 'Void an invoice',
  description:
    'Void an invoice that has no payments (a mistake, a duplicate); it stops being payable and leaves the receivables. Refused with invoice_has_payments when something was paid (refund instead). Reversible with audit.revert. Preview with invoices.preview_void.',
  shape: 'receipt',
  category: 'invoices',
  consent: 'WRITE_REVERSIBLE',
  preview: 'invoices.preview_void',
  input: voidInput,
  summary: (a) => `Void invoice ${a.invoice_id}.`,
  activity: async (read, a) => {
    const inv = await invoiceCustomer(read, a.invoice_id);
    return inv && `Void invoice #${inv.number} of ${inv.name}`;
  },
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const before = await requireInvoice(ctx.db, c, args.invoice_id);
    const { invoice } = await voidInvoice(ctx.db, c, args.invoice_id, ctx.now);
    ctx.setEntity('invoice', invoice.id);
    ctx.emit({
      type: 'invoice.voided',
      entity_type: 'invoice',
      entity_id: invoice.id,
      payload: { contact_id: invoice.contact_id, number: invoice.number },
    });
    ctx.setRollback(`invoice:void:${invoice.id}:${before.status}`, {
      invoice_id: invoice.id,
      number: invoice.number,
      previous: { status: before.status, issued_at: before.issued_at, due_at: before.due_at },
    });
    return { status: 'void', invoice_id: invoice.id, number: invoice.number, previous_status: before.status };
  },
  revert: {
    describe: ({ rollback }) =>
      `Invoice #${String(rollback.number ?? rollback.invoice_id)}: ${valueWords('status', (rollback.previous as { status?: unknown } | undefined)?.status)} → void`,
    async handler(ctx, original) {
      const r = original.rollback as {
        invoice_id: number;
        previous: { status: InvoiceStatus; issued_at: string | null; due_at: string | null };
      };
      const { invoice } = await restoreInvoiceState(
        ctx.db,
        ctx.principal.company_id,
        r.invoice_id,
        r.previous,
        ctx.now,
      );
      ctx.emit({
        type: 'invoice.reopened',
        entity_type: 'invoice',
        entity_id: invoice.id,
        payload: { number: invoice.number, status: invoice.status, revert_of: original.audit_id },
      });
      return { revert_action: `restored invoice #${invoice.number} to ${invoice.status}` };
    },
  },
});

export const invoicesPreviewVoid = defineBusinessVerb<{ invoice_id: number }>({
  name: 'invoices.preview_void',
  title: 'Preview voiding an invoice',
  description:
    'Show an invoice before and after invoices.void, without voiding it; refuses exactly as the void would.',
  shape: 'preview',
  category: 'invoices',
  input: voidInput,
  idempotent: true,
  async handler(ctx, args) {
    const invoice = await requireInvoice(ctx.db, ctx.principal.company_id, args.invoice_id);
    if (invoice.status === 'void')
      throw new DomainError('no_change', `invoice ${invoice.id} is already void`);
    if (invoice.paid_cents > 0)
      throw new DomainError(
        'invoice_has_payments',
        `invoice ${invoice.id} has ${invoice.paid_cents} cents paid`,
        'Refund its payments instead of voiding it.',
      );
    return {
      current: {
        invoice_id: invoice.id,
        number: invoice.number,
        status: invoice.status,
        balance_cents: invoice.balance_cents,
      },
      projected: { invoice_id: invoice.id, number: invoice.number, status: 'void', balance_cents: 0 },
      delta: { receivable_change_cents: -invoice.balance_cents },
      reversible: invoicesVoid.revert !== undefined,
      notes: 'audit.revert restores the previous status.',
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Reminder

interface ReminderArgs {
  invoice_id: number;
  message?: string;
}

const reminderInput = objectSchema(
  {
    invoice_id: idProp('The unpaid invoice.'),
    message: textProp('A personal line added to the reminder.', 1000),
  },
  ['invoice_id'],
);

async function reminderFor(
  ctx: VerbContext,
  args: ReminderArgs,
): Promise<{ to: string; subject: string; body: string; number: number; balance: number }> {
  const c = ctx.principal.company_id;
  const invoice = await requireInvoice(ctx.db, c, args.invoice_id);
  if (invoice.status !== 'open' && invoice.status !== 'partially_paid') {
    throw new DomainError(
      invoice.status === 'paid' ? 'already_paid' : 'invoice_not_payable',
      `invoice ${invoice.id} (#${invoice.number}) is ${invoice.status}; nothing to remind about`,
    );
  }
  const contact = await requireContact(ctx.db, c, invoice.contact_id);
  if (contact.email === null)
    throw new DomainError('invalid_input', `invoice_id: customer ${contact.id} has no email address`);
  const subject = `Reminder: invoice #${invoice.number} — ${formatCents(invoice.balance_cents)} due`;
  const body = [
    `Hello ${contact.name},`,
    '',
    `This is a friendly reminder that invoice #${invoice.number} has ${formatCents(invoice.balance_cents)} due${invoice.due_at ? ` (due ${invoice.due_at.slice(0, 10)})` : ''}.`,
    ...(args.message ? ['', args.message] : []),
    '',
    'Thank you!',
  ].join('\n');
  return { to: contact.email, subject, body, number: invoice.number, balance: invoice.balance_cents };
}

export const invoicesSendReminder = defineBusinessVerb<ReminderArgs>({
  name: 'invoices.send_reminder',
  title: 'Email a payment reminder',
  description:
    "Email the customer a reminder of an unpaid invoice's balance (number, amount due, due date, optional personal line), through the outbox after commit. audit.revert recalls it only while still queued. Preview with invoices.preview_reminder.",
  shape: 'receipt',
  category: 'invoices',
  consent: 'WRITE_REVERSIBLE',
  preview: 'invoices.preview_reminder',
  input: reminderInput,
  open_world: true,
  summary: (a) => `Email a payment reminder for invoice ${a.invoice_id}.`,
  activity: async (read, a) => {
    const inv = await invoiceCustomer(read, a.invoice_id);
    return inv && `Email ${inv.name} a payment reminder for invoice #${inv.number}`;
  },
  async handler(ctx, args) {
    const r = await reminderFor(ctx, args);
    const email = await queueOutboundEmail(ctx, {
      to_address: r.to,
      subject: r.subject,
      body: r.body,
      related_entity_type: 'invoice',
      related_entity_id: args.invoice_id,
    });
    ctx.setEntity('invoice', args.invoice_id);
    ctx.setRollback(`email:${email.id}:recall`, { email_id: email.id });
    return {
      status: 'queued',
      email_id: email.id,
      to_address: r.to,
      subject: r.subject,
      balance_cents: r.balance,
    };
  },
  revert: { handler: recallEmail },
});

export const invoicesPreviewReminder = defineBusinessVerb<ReminderArgs>({
  name: 'invoices.preview_reminder',
  title: 'Preview a payment reminder',
  description:
    'Show the reminder email invoices.send_reminder would send (recipient, subject, body) and how many reminders were already sent for the invoice, without sending.',
  shape: 'preview',
  category: 'invoices',
  input: reminderInput,
  idempotent: true,
  async handler(ctx, args) {
    const r = await reminderFor(ctx, args);
    const sent = await ctx.db.get<{ n: unknown }>(
      `SELECT COUNT(*) AS n FROM email_outbox WHERE company_id = ? AND related_entity_type = 'invoice' AND related_entity_id = ?`,
      [ctx.principal.company_id, args.invoice_id],
    );
    return {
      current: { invoice_number: r.number, balance_cents: r.balance, emails_about_invoice: num(sent?.n) },
      projected: {
        invoice_number: r.number,
        balance_cents: r.balance,
        emails_about_invoice: num(sent?.n) + 1,
        email: { to_address: r.to, subject: r.subject, body: r.body },
      },
      delta: { emails_queued: 1 },
      reversible: invoicesSendReminder.revert !== undefined,
      notes: 'Delivered right after commit; audit.revert can recall it only until then.',
    };
  },
});

export const invoiceVerbs: VerbDefinition[] = [
  invoicesSearch,
  invoicesGet,
  invoicesCreate,
  invoicesPreviewCreate,
  invoicesIssue,
  invoicesPreviewIssue,
  invoicesVoid,
  invoicesPreviewVoid,
  invoicesSendReminder,
  invoicesPreviewReminder,
];
