/**
 * DomainError: what the business data layer throws when a business rule refuses a read or write
 * (unknown id, refund above the captured amount, double booking…). It carries a snake_case
 * `code` the runtime maps onto an envelope reason (spec/reasons.md), a model-safe `message`
 * and an optional `hint` (the next actionable step). Nothing is written when one is thrown
 * inside a store transaction: the transaction rolls back.
 */

/** Every code the data layer throws. `not_found` and `invalid_input` are core reasons. */
export type DomainErrorCode =
  | 'not_found'
  | 'invalid_input'
  | 'no_change'
  | 'contact_erased'
  | 'same_stage'
  | 'appointment_in_past'
  | 'double_booked'
  | 'appointment_not_active'
  | 'technician_unavailable'
  | 'invoice_not_payable'
  | 'invoice_not_draft'
  | 'invoice_has_payments'
  | 'already_paid'
  | 'amount_exceeds_balance'
  | 'payment_not_refundable'
  | 'refund_exceeds_captured'
  | 'insufficient_stock'
  | 'no_managed_droplet'
  | 'same_size'
  | 'workers_out_of_range'
  | 'same_tier'
  | 'seats_exceed_tier'
  | 'last_owner'
  | 'email_not_queued'
  | 'contact_in_use'
  | 'changed_since'
  | 'not_an_upgrade'
  | 'time_in_past'
  | 'callback_exists'
  | 'already_replied'
  | 'post_not_scheduled';

/**
 * The pack's own reasons with their HTTP status and summary, in the form `defineReasons` takes
 * (core reasons `not_found`, `invalid_input` and `changed_since` are left out: the runtime already
 * knows them).
 */
export const DOMAIN_REASONS: Readonly<
  Record<
    Exclude<DomainErrorCode, 'not_found' | 'invalid_input' | 'changed_since'>,
    { status: number; summary: string }
  >
> = {
  no_change: { status: 409, summary: 'The requested value is already the current one; nothing to change.' },
  contact_erased: {
    status: 409,
    summary: 'The contact was erased (GDPR); it cannot be changed or used again.',
  },
  same_stage: { status: 409, summary: 'The deal is already in that stage.' },
  appointment_in_past: { status: 422, summary: 'An appointment cannot start in the past.' },
  double_booked: { status: 409, summary: 'The technician already has an appointment overlapping that time.' },
  appointment_not_active: {
    status: 409,
    summary: 'Only a scheduled appointment can be rescheduled or cancelled.',
  },
  technician_unavailable: { status: 422, summary: 'The employee is inactive or not a technician.' },
  invoice_not_payable: { status: 409, summary: 'The invoice is a draft or void and cannot take payments.' },
  invoice_not_draft: { status: 409, summary: 'Only a draft invoice can be issued.' },
  invoice_has_payments: { status: 409, summary: 'The invoice already has payments and cannot be voided.' },
  already_paid: { status: 409, summary: 'The invoice is already paid in full.' },
  amount_exceeds_balance: {
    status: 422,
    summary: 'The charge is larger than the balance due on the invoice.',
  },
  payment_not_refundable: { status: 409, summary: 'The payment failed or is already fully refunded.' },
  refund_exceeds_captured: {
    status: 422,
    summary: 'The refund is larger than what remains captured on the charge.',
  },
  insufficient_stock: { status: 409, summary: 'Not enough units on hand for that adjustment.' },
  no_managed_droplet: { status: 404, summary: 'The company has no managed server (droplet).' },
  same_size: { status: 409, summary: 'The droplet already has that size.' },
  workers_out_of_range: {
    status: 422,
    summary: 'The worker count would fall below 1 or above what the droplet size can run.',
  },
  same_tier: { status: 409, summary: 'The subscription is already on that tier.' },
  seats_exceed_tier: { status: 409, summary: 'The subscription has more seats than the target tier allows.' },
  last_owner: { status: 409, summary: 'The company must keep at least one active owner.' },
  email_not_queued: { status: 409, summary: 'The email already left the outbox (sent or failed).' },
  contact_in_use: {
    status: 409,
    summary:
      'The contact has deals, visits, invoices or notes; it cannot be deleted (erase it with gdpr_delete_contact instead).',
  },
  not_an_upgrade: {
    status: 409,
    summary: 'The target tier is not above the current one; this verb only upgrades.',
  },
  time_in_past: { status: 422, summary: 'A call-back or a post cannot be scheduled in the past.' },
  callback_exists: { status: 409, summary: 'The call already has a scheduled call-back.' },
  already_replied: { status: 409, summary: 'The review already has a reply (revert it to replace it).' },
  post_not_scheduled: { status: 409, summary: 'The post is no longer scheduled (published or cancelled).' },
};

export class DomainError extends Error {
  override readonly name = 'DomainError';
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** True when `err` is a DomainError (also across module copies). */
export function isDomainError(err: unknown): err is DomainError {
  return (
    err instanceof DomainError ||
    (typeof err === 'object' &&
      err !== null &&
      (err as { name?: unknown }).name === 'DomainError' &&
      typeof (err as { code?: unknown }).code === 'string')
  );
}

/**
 * The `not_found` error for an entity type, e.g. `notFound('contact', 42)` gives
 * "contact 42 not found". The message never says whether another tenant has that id.
 */
export function notFound(entityType: string, id: number | string, hint?: string): DomainError {
  return new DomainError(
    'not_found',
    `${entityType} ${id} not found`,
    hint ?? `Check the ${entityType} id; search for it first.`,
  );
}

/** An `invalid_input` error naming the offending field. */
export function invalidInput(field: string, message: string): DomainError {
  return new DomainError('invalid_input', `${field}: ${message}`);
}
