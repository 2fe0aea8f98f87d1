/**
 * Domain events of the demo business: what happened to which entity, when, and who did it.
 * The seed emits the historical ones (so explain verbs have causal chains and suggest verbs
 * have statistics); write verbs emit the same types for their changes. The runtime stores them
 * in its `events` table (spec/store.md §events): `entity_id` as text, `payload` as JSON, `actor`
 * as text.
 */

export const DOMAIN_EVENT_TYPES = [
  'employee.hired',
  'contact.created',
  'contact.updated',
  'contact.status_changed',
  'contact.erased',
  'note.added',
  'deal.created',
  'deal.stage_changed',
  'appointment.scheduled',
  'appointment.rescheduled',
  'appointment.completed',
  'appointment.no_show',
  'appointment.cancelled',
  'part.used',
  'part.stock_adjusted',
  'invoice.issued',
  'invoice.paid',
  'invoice.voided',
  'payment.captured',
  'payment.failed',
  'refund.issued',
  'email.queued',
  'email.sent',
  'email.failed',
  'kb_article.published',
  'droplet.provisioned',
  'droplet.resized',
  'droplet.workers_scaled',
  'subscription.started',
  'subscription.tier_changed',
  // Emitted by the pack's write verbs and their reverts (never by the seed):
  'contact.deleted',
  'note.deleted',
  'deal.updated',
  'deal.deleted',
  'deal.stage_reverted',
  'quote.requested',
  'appointment.reinstated',
  'appointment.outcome_reverted',
  'invoice.created',
  'invoice.reopened',
  'part.usage_reverted',
  'email.cancelled',
  'kb_article.updated',
  'kb_article.deleted',
  'employee.role_changed',
  'employee.status_changed',
] as const;
export type DomainEventType = (typeof DOMAIN_EVENT_TYPES)[number];

/**
 * Who caused an event: `user:<user_id>` (an employee or an API key's user), `customer:<contact_id>`
 * (the customer acted, e.g. paid online), or `system:<name>` (billing, lifecycle, provisioning…).
 */
export type EventActor = `user:${number}` | `customer:${number}` | `system:${string}`;

export interface DomainEvent {
  type: DomainEventType;
  /** contact, deal, appointment, invoice, payment, refund, part, email, kb_article, droplet, subscription, employee, note. */
  entity_type: string;
  entity_id: number;
  /** Facts of the change (ids, amounts in cents, from/to values); never secrets. */
  payload: Record<string, unknown>;
  /** Canonical ISO-8601 UTC time. */
  occurred_at: string;
  actor: EventActor;
}
