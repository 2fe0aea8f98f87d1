/**
 * GDPR verbs (category `gdpr`): erase a contact's personal data (gdpr_delete_contact,
 * IRREVERSIBLE: owner + typed phrase "DELETE CONTACT 4242 PERMANENTLY", no revert handler), its
 * preview, and a data-subject export (gdpr.export_contact_data, admin). Erasure keeps invoices,
 * payments and refunds (legal retention) with the name replaced; `customer_delete` stays blocked.
 *
 * Reasons: not_found ("contact 42 not found"), contact_erased (already erased).
 * Spec: spec/consent.md §classes (IRREVERSIBLE) §blocklist.
 */
import { listContactAppointments } from '../data/appointments.ts';
import { eraseContact, listContactNotes, listPaymentMethods, requireContact } from '../data/contacts.ts';
import { listContactDeals } from '../data/deals.ts';
import { listEmailsTo } from '../data/email.ts';
import { listContactInvoices } from '../data/invoices.ts';
import { num } from '../data/row-values.ts';
import { searchPayments } from '../data/payments.ts';
import { defineBusinessVerb } from './business-verb.ts';
import {
  appointmentView,
  contactView,
  dealView,
  emailView,
  invoiceView,
  noteView,
  paymentMethodView,
  paymentView,
} from './entity-views.ts';
import { idProp, objectSchema } from './input-schema.ts';

const eraseInput = objectSchema({ contact_id: idProp('The contact whose personal data is erased.') }, [
  'contact_id',
]);

export const gdprDeleteContact = defineBusinessVerb<{ contact_id: number }>({
  name: 'gdpr_delete_contact',
  title: 'Erase a contact (GDPR)',
  description:
    'Erase a contact\'s personal data for a GDPR / privacy request: name, email, phone, address, tags, notes, visit notes, stored payment methods and emails are removed or redacted; invoices and payments are kept (legal retention) under "Erased contact #<id>". IRREVERSIBLE: owner only, with the typed phrase; cannot be reverted. Preview with gdpr.preview_delete_contact; export first (gdpr.export_contact_data) if the person asked for a copy.',
  shape: 'receipt',
  category: 'gdpr',
  consent: 'IRREVERSIBLE',
  preview: 'gdpr.preview_delete_contact',
  input: eraseInput,
  webmcp_surfaces: ['dashboard'],
  phrase: (a) => `DELETE CONTACT ${a.contact_id} PERMANENTLY`,
  summary: (a) => `Permanently erase the personal data of contact ${a.contact_id}.`,
  async handler(ctx, args) {
    const erased = await eraseContact(ctx.db, ctx.principal.company_id, args.contact_id, ctx.now);
    ctx.setEntity('contact', args.contact_id);
    ctx.emit({
      type: 'contact.erased',
      entity_type: 'contact',
      entity_id: args.contact_id,
      payload: { ...erased },
    });
    return { status: 'erased', ...erased };
  },
});

export const gdprPreviewDeleteContact = defineBusinessVerb<{ contact_id: number }>({
  name: 'gdpr.preview_delete_contact',
  title: 'Preview a GDPR erasure',
  description:
    'Show what gdpr_delete_contact would erase and keep for a contact (counts of notes, payment methods, emails, visit notes; invoices and payments retained), without erasing. It cannot be undone: reversible is false.',
  shape: 'preview',
  category: 'gdpr',
  input: eraseInput,
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const contact = await requireContact(ctx.db, c, args.contact_id);
    const [notes, methods, appointments, invoices, emails, payments] = [
      await listContactNotes(ctx.db, c, contact.id, 100_000),
      await listPaymentMethods(ctx.db, c, contact.id),
      await listContactAppointments(ctx.db, c, contact.id, 100_000),
      await listContactInvoices(ctx.db, c, contact.id),
      await (contact.email === null
        ? Promise.resolve(0)
        : ctx.db
            .get<{ n: unknown }>(
              'SELECT COUNT(*) AS n FROM email_outbox WHERE company_id = ? AND lower(to_address) = lower(?)',
              [c, contact.email],
            )
            .then((r) => num(r?.n))),
      await searchPayments(ctx.db, c, { contact_id: contact.id, limit: 1 }).then((p) => p.total),
    ];
    return {
      current: {
        contact_id: contact.id,
        name: contact.name,
        email: contact.email,
        phone: contact.phone,
        city: contact.city,
        tags: contact.tags,
        status: contact.status,
        erased_at: null,
      },
      projected: {
        contact_id: contact.id,
        name: `Erased contact #${contact.id}`,
        email: null,
        phone: null,
        city: null,
        tags: [],
        status: 'inactive',
        erased_at: ctx.now.toISOString(),
      },
      delta: {
        notes_redacted: notes.length,
        payment_methods_removed: methods.length,
        emails_redacted: emails,
        appointment_notes_cleared: appointments.filter((a) => a.notes !== null).length,
        calls_redacted: num(
          (
            await ctx.db.get<{ n: unknown }>(
              'SELECT COUNT(*) AS n FROM calls WHERE company_id = ? AND contact_id = ?',
              [c, contact.id],
            )
          )?.n,
        ),
        reviews_redacted: num(
          (
            await ctx.db.get<{ n: unknown }>(
              'SELECT COUNT(*) AS n FROM reviews WHERE company_id = ? AND contact_id = ?',
              [c, contact.id],
            )
          )?.n,
        ),
        invoices_retained: invoices.length,
        payments_retained: payments,
      },
      reversible: gdprDeleteContact.revert !== undefined,
      notes:
        'Permanent: the personal data cannot be restored. Invoices and payments stay for the legal retention period. The owner must type the confirmation phrase shown to them.',
    };
  },
});

export const gdprExportContactData = defineBusinessVerb<{ contact_id: number }>({
  name: 'gdpr.export_contact_data',
  title: 'Export a contact’s data (GDPR)',
  description:
    'Everything the company holds about one person, for a data-subject access request: the contact record, notes, stored payment methods (brand and last 4 only), visits, deals, invoices, payments, emails sent to them, their calls (with voicemail transcripts) and reviews. Admin only.',
  shape: 'aggregate',
  category: 'gdpr',
  role_floor: 'admin',
  input: eraseInput,
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const contact = await requireContact(ctx.db, c, args.contact_id, { allowErased: true });
    ctx.setEntity('contact', contact.id);
    const [notes, methods, appointments, deals, invoices, payments, emails] = [
      await listContactNotes(ctx.db, c, contact.id, 100_000),
      await listPaymentMethods(ctx.db, c, contact.id),
      await listContactAppointments(ctx.db, c, contact.id, 100_000),
      await listContactDeals(ctx.db, c, contact.id),
      await listContactInvoices(ctx.db, c, contact.id),
      await searchPayments(ctx.db, c, { contact_id: contact.id, limit: 200 }),
      await (contact.email === null ? Promise.resolve([]) : listEmailsTo(ctx.db, c, contact.email)),
    ];
    return {
      entity_id: contact.id,
      entity_type: 'contact',
      data: {
        contact: contactView(contact),
        notes: notes.map(noteView),
        payment_methods: methods.map(paymentMethodView),
        appointments: appointments.map(appointmentView),
        deals: deals.map(dealView),
        invoices: invoices.map(invoiceView),
        payments: payments.items.map(paymentView),
        emails: emails.map(emailView),
        calls: await ctx.db.all(
          `SELECT c.id, c.direction, c.outcome, c.phone, c.duration_seconds, c.started_at, v.transcript AS voicemail_transcript
             FROM calls c LEFT JOIN voicemails v ON v.company_id = c.company_id AND v.call_id = c.id
            WHERE c.company_id = ? AND c.contact_id = ? ORDER BY c.started_at, c.id`,
          [c, contact.id],
        ),
        reviews: await ctx.db.all(
          'SELECT id, platform, rating, author, body, posted_at FROM reviews WHERE company_id = ? AND contact_id = ? ORDER BY posted_at, id',
          [c, contact.id],
        ),
      },
      exported_at: ctx.now.toISOString(),
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export const gdprVerbs = [gdprDeleteContact, gdprPreviewDeleteContact, gdprExportContactData];
