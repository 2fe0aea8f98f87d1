/**
 * Customer verbs (category `customer`): the whole picture of one customer in a single read
 * (customer.full_context, the upstream aggregate example), why it owes what it owes
 * (customer.explain_balance), what service it most likely needs next (customer.suggest_next_service,
 * computed from the company's own visit sequences), and the buyer-agent entry point
 * customer.request_quote (a lead, a deal and a note in one reversible write) with its preview.
 *
 * Reasons: not_found ("contact 42 not found"), contact_erased, invalid_input.
 * Spec: spec/shapes.md §aggregate §explain §suggest §preview §receipt.
 */
import { formatCents } from '../../runtime/consent/typed-phrase.ts';
import type { VerbContext } from '../../runtime/verb.ts';
import type { Queryable } from '../../store/store.ts';
import { listContactAppointments } from '../data/appointments.ts';
import {
  addNote,
  createContact,
  deleteContact,
  deleteNote,
  findContactByEmail,
  getLastInteractionAt,
  listPaymentMethods,
  requireContact,
  type Contact,
} from '../data/contacts.ts';
import { createDeal, deleteDeal, listContactDeals } from '../data/deals.ts';
import { listContactInvoices } from '../data/invoices.ts';
import { getContactLifetimeValue } from '../data/payments.ts';
import { num } from '../data/row-values.ts';
import { OPEN_DEAL_STAGES, type DealStage } from '../schema.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { businessTime } from './business-time.ts';
import { buildCausalChain, chainForOutput, describeActor } from './causal-chain.ts';
import { confidenceBand, percent, ratio } from './confidence-band.ts';
import { contactView } from './entity-views.ts';
import { centsProp, idProp, objectSchema, textProp } from './input-schema.ts';

const isOpen = (stage: DealStage): boolean => (OPEN_DEAL_STAGES as readonly DealStage[]).includes(stage);

interface FullContextArgs {
  customer_id: number;
  include_payment_methods?: boolean;
  relation_limit?: number;
}

export const customerFullContext = defineBusinessVerb<FullContextArgs>({
  name: 'customer.full_context',
  title: 'Customer full context',
  description:
    'Everything about one customer in one call: name, email, phone, lifetime value (captured minus refunded, cents), amount owed, open deals, visits, last interaction, tags and stored payment methods (brand and last 4 only), plus the related deals (open first), appointments (upcoming first) and invoices (unpaid first). Call it first whenever a request mentions a customer. Unknown ids answer not_found.',
  shape: 'aggregate',
  category: 'customer',
  input: objectSchema(
    {
      customer_id: idProp('The customer (contact) id, e.g. 42.'),
      include_payment_methods: {
        type: 'boolean',
        default: true,
        description: 'Include stored payment methods (brand, last4, default flag). Default true.',
      },
      relation_limit: {
        type: 'integer',
        minimum: 1,
        maximum: 50,
        default: 10,
        description: 'Most deals, appointments and invoices to list each (1..50, default 10).',
      },
    },
    ['customer_id'],
  ),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  cli: { command: ['customer-context'], positional: ['customer_id'] },
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const q = ctx.db;
    const limit = args.relation_limit ?? 10;
    const contact = await requireContact(q, c, args.customer_id, { allowErased: true });
    ctx.setEntity('contact', contact.id);
    const [value, deals, appointments, invoices, last] = [
      await getContactLifetimeValue(q, c, contact.id),
      await listContactDeals(q, c, contact.id),
      await listContactAppointments(q, c, contact.id, 10_000),
      await listContactInvoices(q, c, contact.id),
      await getLastInteractionAt(q, c, contact.id, ctx.now),
    ];
    const nowIso = ctx.now.toISOString();
    const visits = appointments.filter((a) => a.status !== 'cancelled');
    const upcoming = appointments
      .filter((a) => a.status === 'scheduled' && a.starts_at >= nowIso)
      .sort((a, b) => (a.starts_at < b.starts_at ? -1 : 1));
    const past = appointments.filter((a) => !upcoming.includes(a));
    const dealRel = [...deals.filter((d) => isOpen(d.stage)), ...deals.filter((d) => !isOpen(d.stage))].slice(
      0,
      limit,
    );
    const invoiceRel = [
      ...invoices.filter((i) => i.balance_cents > 0),
      ...invoices.filter((i) => i.balance_cents === 0),
    ].slice(0, limit);
    const data: Record<string, unknown> = {
      name: contact.name,
      email: contact.email,
      phone: contact.phone,
      lifetime_value_cents: value?.lifetime_value_cents ?? 0,
      open_deals: deals.filter((d) => isOpen(d.stage)).length,
      total_appointments: visits.length,
      last_interaction: last,
      tags: contact.tags,
      kind: contact.kind,
      status: contact.status,
      customer_since: contact.created_at,
      outstanding_cents: value?.outstanding_cents ?? 0,
      captured_cents: value?.captured_cents ?? 0,
      refunded_cents: value?.refunded_cents ?? 0,
      upcoming_appointments: upcoming.length,
      address: contactView(contact).address,
      erased: contact.erased_at !== null,
    };
    if (args.include_payment_methods !== false) {
      data.payment_methods = (await listPaymentMethods(q, c, contact.id)).map((m) => ({
        type: m.type,
        last4: m.last4,
        brand: m.brand,
        is_default: m.is_default,
      }));
    }
    return {
      entity_id: contact.id,
      entity_type: 'customer',
      data,
      relations: [
        ...dealRel.map((d) => ({
          type: 'deal',
          id: d.id,
          title: d.title,
          stage: d.stage,
          amount_cents: d.amount_cents,
        })),
        ...[...upcoming, ...past].slice(0, limit).map((a) => ({
          type: 'appointment',
          id: a.id,
          date: businessTime(a.starts_at),
          service: a.service,
          status: a.status,
        })),
        ...invoiceRel.map((i) => ({
          type: 'invoice',
          id: i.id,
          number: i.number,
          status: i.status,
          amount_cents: i.amount_cents,
          balance_cents: i.balance_cents,
        })),
      ],
      fetched_at: nowIso,
    };
  },
});

/** Ids of the invoices, payments and refunds of a contact (for the balance chain). */
async function moneyEntities(
  q: Queryable,
  c: number,
  contactId: number,
): Promise<{ invoices: number[]; payments: number[]; refunds: number[] }> {
  const invoices = (
    await q.all<{ id: unknown }>('SELECT id FROM invoices WHERE company_id = ? AND contact_id = ?', [
      c,
      contactId,
    ])
  ).map((r) => num(r.id));
  const payments = (
    await q.all<{ id: unknown }>(
      'SELECT p.id FROM payments p JOIN invoices i ON i.company_id = p.company_id AND i.id = p.invoice_id WHERE p.company_id = ? AND i.contact_id = ?',
      [c, contactId],
    )
  ).map((r) => num(r.id));
  const refunds = (
    await q.all<{ id: unknown }>(
      `SELECT r.id FROM refunds r JOIN payments p ON p.company_id = r.company_id AND p.id = r.payment_id
         JOIN invoices i ON i.company_id = p.company_id AND i.id = p.invoice_id WHERE r.company_id = ? AND i.contact_id = ?`,
      [c, contactId],
    )
  ).map((r) => num(r.id));
  return { invoices, payments, refunds };
}

export const customerExplainBalance = defineBusinessVerb<{ customer_id: number; limit?: number }>({
  name: 'customer.explain_balance',
  title: 'Explain a customer balance',
  description:
    "Explain why a customer's lifetime value and amount owed are what they are: the causal chain of invoices issued, paid and voided, payments captured or failed and refunds issued for this customer (each with timestamp, actor and a plain-language detail), the current money state and a short reasoning naming the open invoices and any overdue ones. Use it before chasing a payment or refunding.",
  shape: 'explain',
  category: 'customer',
  input: objectSchema(
    {
      customer_id: idProp('The customer (contact) id.'),
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 500,
        default: 200,
        description: 'Most chain items (newest kept).',
      },
    },
    ['customer_id'],
  ),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const contact = await requireContact(ctx.db, c, args.customer_id, { allowErased: true });
    ctx.setEntity('contact', contact.id);
    const ids = await moneyEntities(ctx.db, c, contact.id);
    const chain = await buildCausalChain(
      ctx.db,
      c,
      { type: 'contact', id: contact.id, argKeys: ['contact_id', 'customer_id'] },
      [
        { type: 'invoice', ids: ids.invoices },
        { type: 'payment', ids: ids.payments },
        { type: 'refund', ids: ids.refunds },
      ],
      args.limit ?? 200,
    );
    const value = (await getContactLifetimeValue(ctx.db, c, contact.id))!;
    const invoices = await listContactInvoices(ctx.db, c, contact.id);
    const open = invoices.filter((i) => i.balance_cents > 0);
    const overdue = open.filter((i) => i.due_at !== null && i.due_at < ctx.now.toISOString());
    const parts = [
      `${contact.name} (contact ${contact.id}) has paid ${formatCents(value.captured_cents)} over ${value.payments_count} payment${value.payments_count === 1 ? '' : 's'}` +
        `${value.refunded_cents > 0 ? `, of which ${formatCents(value.refunded_cents)} was refunded` : ''}, so the lifetime value is ${formatCents(value.lifetime_value_cents)}.`,
    ];
    if (open.length === 0) parts.push('Nothing is owed: every issued invoice is paid or void.');
    else {
      parts.push(
        `It owes ${formatCents(value.outstanding_cents)} on ${open.length} invoice${open.length === 1 ? '' : 's'}: ${open
          .slice(0, 5)
          .map((i) => `#${i.number} (${formatCents(i.balance_cents)} due ${i.due_at ?? 'on receipt'})`)
          .join(', ')}.`,
      );
      if (overdue.length > 0)
        parts.push(
          `${overdue.length} of them ${overdue.length === 1 ? 'is' : 'are'} overdue; a reminder (invoices.send_reminder) or a charge (charge_invoice) is the usual next step.`,
        );
    }
    const lastPayment = [...chain].reverse().find((i) => i.action === 'payment.captured');
    if (lastPayment !== undefined)
      parts.push(
        `The latest payment was ${lastPayment.detail} at ${lastPayment.timestamp} by ${describeActor(lastPayment.actor)}.`,
      );
    return {
      entity_id: contact.id,
      entity_type: 'customer',
      current_state: {
        ...value,
        open_invoices: open.map((i) => ({
          id: i.id,
          number: i.number,
          balance_cents: i.balance_cents,
          due_at: i.due_at,
        })),
        overdue_invoices: overdue.length,
      },
      causal_chain: chainForOutput(chain),
      reasoning: parts.join(' '),
    };
  },
});

/** Model of customer.suggest_next_service. */
export const NEXT_SERVICE_MODEL = 'next-service-transitions-v1';

export const customerSuggestNextService = defineBusinessVerb<{ customer_id: number; limit?: number }>({
  name: 'customer.suggest_next_service',
  title: 'Suggest the next service for a customer',
  description:
    "Rank the services this customer most likely needs next, learned from the company's own completed visits: how often each service followed the customer's last completed one for other customers (confidence = that share, sample_size = follow-ups observed, band learning below 20); with no visit yet, the usual first services. Each suggestion names scheduling.book_appointment with ready args.",
  shape: 'suggest',
  category: 'customer',
  input: objectSchema(
    {
      customer_id: idProp('The customer (contact) id.'),
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 10,
        default: 3,
        description: 'Most suggestions (1..10, default 3).',
      },
    },
    ['customer_id'],
  ),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const contact = await requireContact(ctx.db, c, args.customer_id, { allowErased: true });
    ctx.setEntity('contact', contact.id);
    const rows = await ctx.db.all<{ contact_id: unknown; service: string; starts_at: string }>(
      `SELECT contact_id, service, starts_at FROM appointments WHERE company_id = ? AND status = 'completed' ORDER BY contact_id, starts_at, id`,
      [c],
    );
    const next = new Map<string | null, Map<string, number>>();
    let prevContact: number | undefined;
    let prev: string | null = null;
    let last: string | null = null;
    for (const r of rows) {
      const cid = num(r.contact_id);
      if (cid !== prevContact) {
        prevContact = cid;
        prev = null;
      }
      if (cid === contact.id) last = r.service;
      const m = next.get(prev) ?? new Map<string, number>();
      m.set(r.service, (m.get(r.service) ?? 0) + 1);
      next.set(prev, m);
      prev = r.service;
    }
    const from = next.has(last) ? last : null;
    const counts = next.get(from) ?? new Map<string, number>();
    const n = [...counts.values()].reduce((s, x) => s + x, 0);
    const suggestions = [...counts.entries()]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .slice(0, args.limit ?? 3)
      .map(([service, count]) => {
        const confidence = ratio(count, n);
        return {
          action: 'scheduling.book_appointment',
          args: { contact_id: contact.id, service },
          service,
          confidence,
          confidence_band: confidenceBand(confidence, n),
          reason:
            from === null
              ? `${contact.name} has no completed visit yet; ${count} of ${n} customers' first visits (${percent(confidence)}) were "${service}".`
              : `After "${from}", the next completed visit was "${service}" ${count} of ${n} times (${percent(confidence)}) across the company's customers.`,
          model_version: from === null ? `${NEXT_SERVICE_MODEL}/first-visit` : NEXT_SERVICE_MODEL,
          sample_size: n,
        };
      });
    return {
      suggestions,
      customer_id: contact.id,
      last_completed_service: last,
      model_version: NEXT_SERVICE_MODEL,
      generated_at: ctx.now.toISOString(),
    };
  },
});

interface QuoteArgs {
  name: string;
  email: string;
  phone?: string;
  service: string;
  description: string;
  budget_cents?: number;
  city?: string;
  postal_code?: string;
}

const quoteInput = objectSchema(
  {
    name: textProp('Who asks: a person or business name.', 200),
    email: {
      type: 'string',
      format: 'email',
      maxLength: 254,
      description: 'Contact email; an existing customer with this email is reused.',
    },
    phone: {
      type: 'string',
      pattern: '^\\+?[0-9][0-9 ().-]{6,24}$',
      description: 'Phone, e.g. +18015551234.',
    },
    service: textProp('The service wanted, e.g. "Water heater replacement".', 120),
    description: textProp('What the customer described (symptoms, site, timing).', 2000),
    budget_cents: centsProp('Budget or expected value, if stated.', 0),
    city: textProp('City of the job site.', 100),
    postal_code: {
      type: 'string',
      pattern: '^[0-9A-Za-z -]{3,10}$',
      description: 'Postal code of the job site.',
    },
  },
  ['name', 'email', 'service', 'description'],
);

async function planQuote(
  q: Queryable,
  c: number,
  args: QuoteArgs,
): Promise<{ existing: Contact | undefined }> {
  return { existing: await findContactByEmail(q, c, args.email) };
}

export const customerRequestQuote = defineBusinessVerb<QuoteArgs>({
  name: 'customer.request_quote',
  title: 'Request a quote',
  description:
    'Record a quote request from a customer or a buyer agent: reuses the customer with that email (or creates a lead), opens a deal in stage "new" titled after the service (amount = the stated budget, else 0) and attaches the description as a note, so the office can follow up with an estimate. Reversible with audit.revert (removes the deal, the note and a contact created by this call). Preview first with customer.preview_quote_request.',
  shape: 'receipt',
  category: 'customer',
  consent: 'WRITE_REVERSIBLE',
  preview: 'customer.preview_quote_request',
  input: quoteInput,
  webmcp_surfaces: ['public', 'tenant-site', 'portal', 'dashboard'],
  summary: (a) => `Record a quote request from ${a.name} <${a.email}> for "${a.service}".`,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const { existing } = await planQuote(ctx.db, c, args);
    const contact =
      existing ??
      (await createContact(
        ctx.db,
        c,
        {
          name: args.name,
          email: args.email,
          phone: args.phone ?? null,
          status: 'lead',
          source: 'agent',
          city: args.city ?? null,
          postal_code: args.postal_code ?? null,
          tags: ['quote-request'],
        },
        ctx.now,
      ));
    if (existing === undefined)
      ctx.emit({
        type: 'contact.created',
        entity_type: 'contact',
        entity_id: contact.id,
        payload: { name: contact.name, kind: contact.kind, source: 'agent' },
      });
    const { deal, history } = await createDeal(
      ctx.db,
      c,
      {
        contact_id: contact.id,
        title: `${args.service} (quote request)`.slice(0, 200),
        amount_cents: args.budget_cents ?? 0,
        owner_user_id: null,
      },
      ctx.principal.user_id,
      ctx.now,
    );
    const note = await addNote(
      ctx.db,
      c,
      {
        contact_id: contact.id,
        body: `Quote request for ${args.service}: ${args.description}`,
        author_user_id: null,
      },
      ctx.now,
    );
    ctx.emit({
      type: 'deal.created',
      entity_type: 'deal',
      entity_id: deal.id,
      payload: {
        contact_id: contact.id,
        title: deal.title,
        amount_cents: deal.amount_cents,
        stage: deal.stage,
        history_id: history.id,
      },
    });
    ctx.emit({
      type: 'note.added',
      entity_type: 'note',
      entity_id: note.id,
      payload: { contact_id: contact.id },
    });
    ctx.emit({
      type: 'quote.requested',
      entity_type: 'contact',
      entity_id: contact.id,
      payload: { deal_id: deal.id, service: args.service, contact_name: contact.name },
    });
    ctx.setEntity('deal', deal.id);
    ctx.setRollback(`quote:${deal.id}`, {
      deal_id: deal.id,
      note_id: note.id,
      contact_id: contact.id,
      contact_created: existing === undefined,
    });
    return {
      status: 'requested',
      contact_id: contact.id,
      contact_created: existing === undefined,
      deal_id: deal.id,
      deal_stage: deal.stage,
      note_id: note.id,
      next_step:
        'The office follows up to book an estimate (scheduling.book_appointment with service "Estimate").',
    };
  },
  revert: {
    async handler(ctx, original) {
      const c = ctx.principal.company_id;
      const r = original.rollback as {
        deal_id: number;
        note_id: number;
        contact_id: number;
        contact_created: boolean;
      };
      const deal = await deleteDeal(ctx.db, c, r.deal_id);
      await deleteNote(ctx.db, c, r.note_id);
      ctx.emit({
        type: 'deal.deleted',
        entity_type: 'deal',
        entity_id: deal.id,
        payload: { title: deal.title, contact_id: deal.contact_id },
      });
      ctx.emit({
        type: 'note.deleted',
        entity_type: 'note',
        entity_id: r.note_id,
        payload: { contact_id: r.contact_id },
      });
      if (r.contact_created) {
        await deleteContact(ctx.db, c, r.contact_id);
        ctx.emit({ type: 'contact.deleted', entity_type: 'contact', entity_id: r.contact_id, payload: {} });
      }
      return {
        revert_action: `removed deal ${r.deal_id}, note ${r.note_id}${r.contact_created ? ` and lead contact ${r.contact_id}` : ''}`,
      };
    },
  },
});

export const customerPreviewQuoteRequest = defineBusinessVerb<QuoteArgs>({
  name: 'customer.preview_quote_request',
  title: 'Preview a quote request',
  description:
    'Show what customer.request_quote would record, without recording it: whether an existing customer is reused (matched by email) or a lead is created, and the deal and note that would be opened. Takes the same arguments as customer.request_quote.',
  shape: 'preview',
  category: 'customer',
  input: quoteInput,
  idempotent: true,
  webmcp_surfaces: ['public', 'tenant-site', 'portal', 'dashboard'],
  async handler(ctx: VerbContext, args: QuoteArgs) {
    const { existing } = await planQuote(ctx.db, ctx.principal.company_id, args);
    return {
      current: {
        customer:
          existing === undefined ? null : { id: existing.id, name: existing.name, status: existing.status },
      },
      projected: {
        customer:
          existing === undefined
            ? { id: null, name: args.name, email: args.email, status: 'lead', created: true }
            : { id: existing.id, name: existing.name, created: false },
        deal: {
          title: `${args.service} (quote request)`.slice(0, 200),
          stage: 'new',
          amount_cents: args.budget_cents ?? 0,
        },
        note: { body: `Quote request for ${args.service}: ${args.description}` },
      },
      delta: { contacts_created: existing === undefined ? 1 : 0, deals_created: 1, notes_created: 1 },
      reversible: customerRequestQuote.revert !== undefined,
      notes:
        existing === undefined
          ? 'A new lead will be created for this email.'
          : `The request is attached to the existing customer ${existing.name} (contact ${existing.id}).`,
    };
  },
});

export const customerVerbs = [
  customerFullContext,
  customerExplainBalance,
  customerSuggestNextService,
  customerRequestQuote,
  customerPreviewQuoteRequest,
];
