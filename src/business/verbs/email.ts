/**
 * Email verbs (category `email`): email_send queues a message in the business outbox table AND
 * in the runtime outbox, both in the write's own transaction; the pack's `email` outbox handler
 * delivers it after commit (pack.ts deliverEmail: marks it sent, emits email.sent). A revert
 * recalls a message only while it is still queued (best effort: once delivered the answer is
 * reverted=false, reason already_delivered). email.outbox lists the outbox.
 *
 * Reasons: not_found ("contact 9 not found", "email 12 not found"), contact_erased, invalid_input.
 * Spec: spec/receipts.md §revert, DESIGN "outbox".
 */
import type { OriginalAction, VerbContext } from '../../runtime/verb.ts';
import type { Queryable } from '../../store/store.ts';
import { requireContact } from '../data/contacts.ts';
import { DomainError } from '../data/domain-error.ts';
import {
  cancelQueuedEmail,
  getEmail,
  queueEmail,
  searchOutbox,
  type EmailMessage,
  type NewEmail,
} from '../data/email.ts';
import { num } from '../data/row-values.ts';
import { EMAIL_STATUSES, type EmailStatus } from '../schema.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { collectionResult } from './collection-result.ts';
import { emailView } from './entity-views.ts';
import { enumProp, idProp, objectSchema, PAGE_PROPS, textProp } from './input-schema.ts';

/** Queue an email in this write: business outbox row, `email.queued` event, runtime outbox `email`. */
export async function queueOutboundEmail(ctx: VerbContext, input: NewEmail): Promise<EmailMessage> {
  const email = await queueEmail(ctx.db, ctx.principal.company_id, input, ctx.now);
  ctx.emit({
    type: 'email.queued',
    entity_type: 'email',
    entity_id: email.id,
    payload: {
      subject: email.subject,
      related_entity_type: email.related_entity_type,
      related_entity_id: email.related_entity_id,
    },
  });
  ctx.outbox('email', { email_id: email.id });
  return email;
}

/**
 * The revert of a queued email: recall it while still queued; once delivered answer
 * reverted=false with reason already_delivered (nothing changes).
 */
export async function recallEmail(
  ctx: VerbContext,
  original: OriginalAction,
): Promise<{ revert_action: string; [k: string]: unknown }> {
  const c = ctx.principal.company_id;
  const id = num(original.rollback.email_id);
  const email = await getEmail(ctx.db, c, id);
  if (email === undefined || email.status !== 'queued') {
    return {
      revert_action: 'none',
      reverted: false,
      reason: 'already_delivered',
      message: `Email ${id} ${email === undefined ? 'no longer exists' : `was already ${email.status}${email.sent_at ? ` at ${email.sent_at}` : ''}`}; a delivered email cannot be recalled. Send a correction instead.`,
    };
  }
  await cancelQueuedEmail(ctx.db, c, id, ctx.now);
  ctx.emit({
    type: 'email.cancelled',
    entity_type: 'email',
    entity_id: id,
    payload: { subject: email.subject, revert_of: original.audit_id },
  });
  return { revert_action: `recalled email ${id} before delivery` };
}

interface SendArgs {
  contact_id?: number;
  to_address?: string;
  subject: string;
  body: string;
  related_entity_type?: 'contact' | 'deal' | 'appointment' | 'invoice' | 'payment';
  related_entity_id?: number;
}

const sendInput = objectSchema(
  {
    contact_id: idProp('Send to this customer’s email address (give this or to_address).'),
    to_address: {
      type: 'string',
      format: 'email',
      maxLength: 254,
      description: 'Send to this address (give this or contact_id).',
    },
    subject: textProp('Subject line.', 200),
    body: textProp('Plain-text body.', 20_000),
    related_entity_type: enumProp(
      ['contact', 'deal', 'appointment', 'invoice', 'payment'],
      'What the email is about (for the customer history).',
    ),
    related_entity_id: idProp('Id of the related entity.'),
  },
  ['subject', 'body'],
);

async function recipient(
  q: Queryable,
  c: number,
  args: SendArgs,
): Promise<{ to: string; contactId: number | null }> {
  if ((args.contact_id === undefined) === (args.to_address === undefined))
    throw new DomainError('invalid_input', 'contact_id: give exactly one of contact_id or to_address');
  if (args.to_address !== undefined) return { to: args.to_address, contactId: null };
  const contact = await requireContact(q, c, args.contact_id!);
  if (contact.email === null)
    throw new DomainError('invalid_input', `contact_id: contact ${contact.id} has no email address`);
  return { to: contact.email, contactId: contact.id };
}

export const emailSend = defineBusinessVerb<SendArgs>({
  name: 'email_send',
  title: 'Send an email',
  description:
    'Send an email to a customer (by contact_id) or an address: it is queued in this write and delivered right after commit through the outbox, so it never goes out for a write that failed. Answers the email id and status queued. audit.revert recalls it only while it is still queued; a delivered email cannot be unsent (reverted=false, reason already_delivered). Preview with email.preview_send.',
  shape: 'receipt',
  category: 'email',
  consent: 'WRITE_REVERSIBLE',
  preview: 'email.preview_send',
  input: sendInput,
  open_world: true,
  summary: (a) =>
    `Email "${a.subject}" to ${a.contact_id !== undefined ? `contact ${a.contact_id}` : a.to_address}.`,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const { to, contactId } = await recipient(ctx.db, c, args);
    const related =
      args.related_entity_type !== undefined && args.related_entity_id !== undefined
        ? { type: args.related_entity_type, id: args.related_entity_id }
        : contactId !== null
          ? { type: 'contact', id: contactId }
          : null;
    const email = await queueOutboundEmail(ctx, {
      to_address: to,
      subject: args.subject,
      body: args.body,
      related_entity_type: related?.type ?? null,
      related_entity_id: related?.id ?? null,
    });
    ctx.setEntity(contactId !== null ? 'contact' : 'email', contactId ?? email.id);
    ctx.setRollback(`email:${email.id}:recall`, { email_id: email.id });
    return {
      status: 'queued',
      email_id: email.id,
      to_address: to,
      subject: email.subject,
      delivery: 'after commit, through the outbox',
    };
  },
  revert: { handler: recallEmail },
});

export const emailPreviewSend = defineBusinessVerb<SendArgs>({
  name: 'email.preview_send',
  title: 'Preview an email',
  description:
    'Show the email email_send would queue (resolved recipient, subject, body length) and how many emails the recipient already has in the outbox, without sending. Same arguments as email_send.',
  shape: 'preview',
  category: 'email',
  input: sendInput,
  idempotent: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const { to } = await recipient(ctx.db, c, args);
    const queued = (await searchOutbox(ctx.db, c, { status: 'queued', limit: 200 })).items.filter(
      (e) => e.to_address.toLowerCase() === to.toLowerCase(),
    ).length;
    return {
      current: { to_address: to, queued_for_recipient: queued },
      projected: {
        to_address: to,
        queued_for_recipient: queued + 1,
        email: { subject: args.subject, body_chars: args.body.length, status: 'queued' },
      },
      delta: { emails_queued: 1 },
      reversible: emailSend.revert !== undefined,
      notes: 'Delivered right after commit; audit.revert can recall it only until then.',
    };
  },
});

export const emailOutbox = defineBusinessVerb<{
  status?: EmailStatus;
  related_entity_type?: string;
  related_entity_id?: number;
  limit?: number;
  offset?: number;
}>({
  name: 'email.outbox',
  title: 'Email outbox',
  description:
    "List the company's outgoing emails, newest first, filtered by status (queued, sent, failed) or by what they are about (related entity type and id). Bodies are left out.",
  shape: 'aggregate',
  category: 'email',
  input: objectSchema({
    status: enumProp(EMAIL_STATUSES, 'Only emails with this status.'),
    related_entity_type: enumProp(
      ['contact', 'deal', 'appointment', 'invoice', 'payment'],
      'Only emails about this kind of entity.',
    ),
    related_entity_id: idProp('Only emails about this entity id.'),
    ...PAGE_PROPS,
  }),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const page = await searchOutbox(ctx.db, ctx.principal.company_id, args);
    return collectionResult(
      'emails',
      { ...page, items: page.items.map(emailView) },
      args as Record<string, unknown>,
      ctx.now,
    );
  },
});

export const emailVerbs = [emailSend, emailPreviewSend, emailOutbox];
