/**
 * The email outbox: verbs never send mail, they queue it here in the same transaction as the
 * rest of their write; a delivery worker marks each message sent or failed after commit.
 * Statuses: queued → sent | failed (a cancelled message is `failed` with error "cancelled").
 */
import type { Queryable } from '../../store/store.ts';
import { EMAIL_STATUSES, type EmailStatus } from '../schema.ts';
import { DomainError, invalidInput, notFound } from './domain-error.ts';
import { isoTime } from './iso-time.ts';
import { pageBounds, toPage, type Page, type PageRequest } from './page.ts';
import { num, numOrNull, textOrNull } from './row-values.ts';

export interface EmailMessage {
  id: number;
  company_id: number;
  to_address: string;
  subject: string;
  body: string;
  status: EmailStatus;
  /** What the email is about, e.g. ("invoice", 201), ("appointment", 15), ("contact", 42). */
  related_entity_type: string | null;
  related_entity_id: number | null;
  error: string | null;
  created_at: string;
  sent_at: string | null;
}

const EMAIL_COLUMNS =
  'id, company_id, to_address, subject, body, status, related_entity_type, related_entity_id, error, created_at, sent_at';
const ADDRESS = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function toEmail(row: Record<string, unknown>): EmailMessage {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    to_address: String(row.to_address),
    subject: String(row.subject),
    body: String(row.body),
    status: row.status as EmailStatus,
    related_entity_type: textOrNull(row.related_entity_type),
    related_entity_id: numOrNull(row.related_entity_id),
    error: textOrNull(row.error),
    created_at: String(row.created_at),
    sent_at: textOrNull(row.sent_at),
  };
}

/** One outbox message of the company, or undefined. */
export async function getEmail(
  q: Queryable,
  companyId: number,
  emailId: number,
): Promise<EmailMessage | undefined> {
  const row = await q.get(`SELECT ${EMAIL_COLUMNS} FROM email_outbox WHERE company_id = ? AND id = ?`, [
    companyId,
    emailId,
  ]);
  return row === undefined ? undefined : toEmail(row);
}

async function requireEmail(q: Queryable, companyId: number, emailId: number): Promise<EmailMessage> {
  const email = await getEmail(q, companyId, emailId);
  if (email === undefined) throw notFound('email', emailId);
  return email;
}

export interface OutboxSearch extends PageRequest {
  status?: EmailStatus;
  related_entity_type?: string;
  related_entity_id?: number;
}

/** Search the company's outbox, newest first. Throws `invalid_input`. */
export async function searchOutbox(
  q: Queryable,
  companyId: number,
  search: OutboxSearch = {},
): Promise<Page<EmailMessage>> {
  const bounds = pageBounds(search);
  const where = ['company_id = ?'];
  const params: unknown[] = [companyId];
  if (search.status !== undefined) {
    if (!(EMAIL_STATUSES as readonly unknown[]).includes(search.status))
      throw invalidInput('status', `must be one of ${EMAIL_STATUSES.join(', ')}`);
    where.push('status = ?');
    params.push(search.status);
  }
  if (search.related_entity_type !== undefined) {
    where.push('related_entity_type = ?');
    params.push(search.related_entity_type);
  }
  if (search.related_entity_id !== undefined) {
    where.push('related_entity_id = ?');
    params.push(search.related_entity_id);
  }
  const whereSql = where.join(' AND ');
  const total = await q.get<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM email_outbox WHERE ${whereSql}`,
    params,
  );
  const rows = await q.all(
    `SELECT ${EMAIL_COLUMNS} FROM email_outbox WHERE ${whereSql} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
    [...params, bounds.limit, bounds.offset],
  );
  return toPage(rows.map(toEmail), num(total?.n), bounds);
}

/** The oldest queued messages of the company (for the delivery worker). */
export async function listQueuedEmails(q: Queryable, companyId: number, limit = 50): Promise<EmailMessage[]> {
  const rows = await q.all(
    `SELECT ${EMAIL_COLUMNS} FROM email_outbox WHERE company_id = ? AND status = 'queued' ORDER BY created_at, id LIMIT ?`,
    [companyId, limit],
  );
  return rows.map(toEmail);
}

export interface NewEmail {
  to_address: string;
  subject: string;
  body: string;
  related_entity_type?: string | null;
  related_entity_id?: number | null;
}

/**
 * Queue an email. Throws `invalid_input` (address, subject 1..200, body 1..100 000 characters).
 * Revert before delivery: `cancelQueuedEmail`.
 */
export async function queueEmail(
  tx: Queryable,
  companyId: number,
  input: NewEmail,
  now: Date,
): Promise<EmailMessage> {
  if (
    typeof input.to_address !== 'string' ||
    !ADDRESS.test(input.to_address) ||
    input.to_address.length > 254
  )
    throw invalidInput('to_address', 'must be an email address');
  if (typeof input.subject !== 'string' || input.subject.trim() === '' || input.subject.length > 200)
    throw invalidInput('subject', 'must be 1..200 characters');
  if (typeof input.body !== 'string' || input.body.trim() === '' || input.body.length > 100_000)
    throw invalidInput('body', 'must be 1..100000 characters');
  const row = await tx.get(
    `INSERT INTO email_outbox (company_id, to_address, subject, body, status, related_entity_type, related_entity_id, error, created_at, sent_at)
     VALUES (?, ?, ?, ?, 'queued', ?, ?, NULL, ?, NULL) RETURNING ${EMAIL_COLUMNS}`,
    [
      companyId,
      input.to_address,
      input.subject,
      input.body,
      input.related_entity_type ?? null,
      input.related_entity_id ?? null,
      isoTime(now),
    ],
  );
  return toEmail(row!);
}

/** Mark a queued message sent. Throws `not_found`, `email_not_queued`. */
export async function markEmailSent(
  tx: Queryable,
  companyId: number,
  emailId: number,
  now: Date,
): Promise<EmailMessage> {
  return finish(tx, companyId, emailId, 'sent', null, now);
}

/** Mark a queued message failed with an error text. Throws `not_found`, `email_not_queued`. */
export async function markEmailFailed(
  tx: Queryable,
  companyId: number,
  emailId: number,
  error: string,
  now: Date,
): Promise<EmailMessage> {
  return finish(tx, companyId, emailId, 'failed', error, now);
}

/** Cancel a message still queued (status failed, error "cancelled"). Throws `not_found`, `email_not_queued`. */
export async function cancelQueuedEmail(
  tx: Queryable,
  companyId: number,
  emailId: number,
  now: Date,
): Promise<EmailMessage> {
  return finish(tx, companyId, emailId, 'failed', 'cancelled', now);
}

async function finish(
  tx: Queryable,
  companyId: number,
  emailId: number,
  status: 'sent' | 'failed',
  error: string | null,
  now: Date,
): Promise<EmailMessage> {
  const row = await tx.get(
    `UPDATE email_outbox SET status = ?, error = ?, sent_at = ? WHERE company_id = ? AND id = ? AND status = 'queued' RETURNING ${EMAIL_COLUMNS}`,
    [status, error, status === 'sent' ? isoTime(now) : null, companyId, emailId],
  );
  if (row !== undefined) return toEmail(row);
  const email = await requireEmail(tx, companyId, emailId);
  throw new DomainError(
    'email_not_queued',
    `email ${emailId} is already ${email.status}`,
    'Only queued emails can change.',
  );
}

/** Every outbox message of the company to this address (case-insensitive), newest first. */
export async function listEmailsTo(
  q: Queryable,
  companyId: number,
  address: string,
): Promise<EmailMessage[]> {
  const rows = await q.all(
    `SELECT ${EMAIL_COLUMNS} FROM email_outbox WHERE company_id = ? AND lower(to_address) = lower(?) ORDER BY created_at DESC, id DESC`,
    [companyId, address],
  );
  return rows.map(toEmail);
}
