/**
 * Contacts (customers), their payment methods and notes: tenant-scoped reads and writes.
 *
 * Every statement filters by `company_id`; another tenant's id reads as `undefined` (or an empty
 * list) and writes against it throw `not_found`, exactly as for an id that does not exist.
 * Times are canonical ISO-8601 UTC TEXT (iso-time.ts); JSON columns are read with `parseJson`.
 */
import { parseJson, type Queryable } from '../../store/store.ts';
import { CONTACT_KINDS, CONTACT_STATUSES, type ContactKind, type ContactStatus } from '../schema.ts';
import { DomainError, invalidInput, notFound } from './domain-error.ts';
import { isoTime } from './iso-time.ts';
import { LIKE_ESCAPE, likePattern } from './like-pattern.ts';
import { pageBounds, toPage, type Page, type PageRequest } from './page.ts';
import { flag, num, numOrNull, textOrNull } from './row-values.ts';

export interface Contact {
  id: number;
  company_id: number;
  name: string;
  email: string | null;
  phone: string | null;
  kind: ContactKind;
  tags: string[];
  status: ContactStatus;
  /** How the contact found the company: web, referral, phone, repeat, ads. */
  source: string | null;
  address_line1: string | null;
  address_line2: string | null;
  city: string | null;
  region: string | null;
  postal_code: string | null;
  country: string | null;
  created_at: string;
  updated_at: string;
  /** Set when the contact was erased (GDPR); PII fields are then null. */
  erased_at: string | null;
}

export interface PaymentMethod {
  id: number;
  company_id: number;
  contact_id: number;
  type: 'card' | 'ach';
  brand: string;
  last4: string;
  exp_month: number | null;
  exp_year: number | null;
  is_default: boolean;
  created_at: string;
}

export interface Note {
  id: number;
  company_id: number;
  contact_id: number;
  body: string;
  author_user_id: number | null;
  created_at: string;
}

const CONTACT_COLUMNS =
  'id, company_id, name, email, phone, kind, tags, status, source, address_line1, address_line2, city, region, postal_code, country, created_at, updated_at, erased_at';
const PAYMENT_METHOD_COLUMNS =
  'id, company_id, contact_id, type, brand, last4, exp_month, exp_year, is_default, created_at';
const NOTE_COLUMNS = 'id, company_id, contact_id, body, author_user_id, created_at';

/** Map a contacts row (either engine) to a Contact. */
export function toContact(row: Record<string, unknown>): Contact {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    name: String(row.name),
    email: textOrNull(row.email),
    phone: textOrNull(row.phone),
    kind: row.kind as ContactKind,
    tags: parseJson<string[]>(row.tags) ?? [],
    status: row.status as ContactStatus,
    source: textOrNull(row.source),
    address_line1: textOrNull(row.address_line1),
    address_line2: textOrNull(row.address_line2),
    city: textOrNull(row.city),
    region: textOrNull(row.region),
    postal_code: textOrNull(row.postal_code),
    country: textOrNull(row.country),
    created_at: String(row.created_at),
    updated_at: String(row.updated_at),
    erased_at: textOrNull(row.erased_at),
  };
}

function toPaymentMethod(row: Record<string, unknown>): PaymentMethod {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    contact_id: num(row.contact_id),
    type: row.type as 'card' | 'ach',
    brand: String(row.brand),
    last4: String(row.last4),
    exp_month: numOrNull(row.exp_month),
    exp_year: numOrNull(row.exp_year),
    is_default: flag(row.is_default),
    created_at: String(row.created_at),
  };
}

function toNote(row: Record<string, unknown>): Note {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    contact_id: num(row.contact_id),
    body: String(row.body),
    author_user_id: numOrNull(row.author_user_id),
    created_at: String(row.created_at),
  };
}

/** One contact of the company, or undefined (unknown id or another tenant's). Erased contacts are returned (with `erased_at`). */
export async function getContact(
  q: Queryable,
  companyId: number,
  contactId: number,
): Promise<Contact | undefined> {
  const row = await q.get(`SELECT ${CONTACT_COLUMNS} FROM contacts WHERE company_id = ? AND id = ?`, [
    companyId,
    contactId,
  ]);
  return row === undefined ? undefined : toContact(row);
}

/**
 * The contact or DomainError `not_found` ("contact 42 not found"); with `allowErased: false`
 * (default) an erased contact throws `contact_erased`.
 */
export async function requireContact(
  q: Queryable,
  companyId: number,
  contactId: number,
  options: { allowErased?: boolean } = {},
): Promise<Contact> {
  const contact = await getContact(q, companyId, contactId);
  if (contact === undefined) throw notFound('contact', contactId);
  if (contact.erased_at !== null && options.allowErased !== true) {
    throw new DomainError(
      'contact_erased',
      `contact ${contactId} was erased on ${contact.erased_at}`,
      'Erased contacts keep only their financial history.',
    );
  }
  return contact;
}

export interface ContactSearch extends PageRequest {
  /** Case-insensitive substring of name, email or phone. */
  query?: string;
  status?: ContactStatus;
  kind?: ContactKind;
  /** Contacts carrying this tag (exact tag). */
  tag?: string;
  /** Case-insensitive exact city. */
  city?: string;
  /** Canonical ISO times (inclusive lower, exclusive upper bound) on `created_at`. */
  created_after?: string;
  created_before?: string;
  /** Erased contacts are left out unless true. */
  include_erased?: boolean;
  sort?: 'id' | 'name' | 'created_at' | 'updated_at';
  order?: 'asc' | 'desc';
}

/**
 * Search the company's contacts with filters and offset pagination (limit 1..200, default 25).
 * Throws `invalid_input` on a bad page request or sort field.
 */
export async function searchContacts(
  q: Queryable,
  companyId: number,
  search: ContactSearch = {},
): Promise<Page<Contact>> {
  const bounds = pageBounds(search);
  const where: string[] = ['company_id = ?'];
  const params: unknown[] = [companyId];
  if (search.query !== undefined && search.query.trim() !== '') {
    const pattern = likePattern(search.query.trim());
    where.push(
      `(lower(name) LIKE lower(?) ${LIKE_ESCAPE} OR lower(email) LIKE lower(?) ${LIKE_ESCAPE} OR phone LIKE ? ${LIKE_ESCAPE})`,
    );
    params.push(pattern, pattern, pattern);
  }
  if (search.status !== undefined) {
    where.push('status = ?');
    params.push(search.status);
  }
  if (search.kind !== undefined) {
    where.push('kind = ?');
    params.push(search.kind);
  }
  if (search.tag !== undefined) {
    where.push(`tags LIKE ? ${LIKE_ESCAPE}`);
    params.push(likePattern(JSON.stringify(search.tag)));
  }
  if (search.city !== undefined) {
    where.push('lower(city) = lower(?)');
    params.push(search.city);
  }
  if (search.created_after !== undefined) {
    where.push('created_at >= ?');
    params.push(search.created_after);
  }
  if (search.created_before !== undefined) {
    where.push('created_at < ?');
    params.push(search.created_before);
  }
  if (search.include_erased !== true) where.push('erased_at IS NULL');
  const sort = search.sort ?? 'id';
  if (!['id', 'name', 'created_at', 'updated_at'].includes(sort))
    throw invalidInput('sort', 'must be id, name, created_at or updated_at');
  const order = search.order === 'desc' ? 'DESC' : 'ASC';
  const whereSql = where.join(' AND ');
  const total = await q.get<{ n: unknown }>(`SELECT COUNT(*) AS n FROM contacts WHERE ${whereSql}`, params);
  const rows = await q.all(
    `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE ${whereSql} ORDER BY ${sort} ${order}, id ${order} LIMIT ? OFFSET ?`,
    [...params, bounds.limit, bounds.offset],
  );
  return toPage(rows.map(toContact), num(total?.n), bounds);
}

/** The contact's payment methods, default first; empty for an unknown or foreign contact. */
export async function listPaymentMethods(
  q: Queryable,
  companyId: number,
  contactId: number,
): Promise<PaymentMethod[]> {
  const rows = await q.all(
    `SELECT ${PAYMENT_METHOD_COLUMNS} FROM payment_methods WHERE company_id = ? AND contact_id = ? ORDER BY is_default DESC, id`,
    [companyId, contactId],
  );
  return rows.map(toPaymentMethod);
}

/** One payment method of the company, or undefined. */
export async function getPaymentMethod(
  q: Queryable,
  companyId: number,
  paymentMethodId: number,
): Promise<PaymentMethod | undefined> {
  const row = await q.get(
    `SELECT ${PAYMENT_METHOD_COLUMNS} FROM payment_methods WHERE company_id = ? AND id = ?`,
    [companyId, paymentMethodId],
  );
  return row === undefined ? undefined : toPaymentMethod(row);
}

/** The contact's notes, newest first (at most `limit`, default 50). */
export async function listContactNotes(
  q: Queryable,
  companyId: number,
  contactId: number,
  limit = 50,
): Promise<Note[]> {
  const rows = await q.all(
    `SELECT ${NOTE_COLUMNS} FROM notes WHERE company_id = ? AND contact_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`,
    [companyId, contactId, limit],
  );
  return rows.map(toNote);
}

/**
 * The latest time the company interacted with the contact, up to `now`: an appointment start,
 * a note or a payment. Null when there is none (or the contact is not the company's).
 */
export async function getLastInteractionAt(
  q: Queryable,
  companyId: number,
  contactId: number,
  now: Date,
): Promise<string | null> {
  const at = isoTime(now);
  const row = await q.get<{ last: unknown }>(
    `SELECT MAX(t) AS last FROM (
       SELECT MAX(starts_at) AS t FROM appointments WHERE company_id = ? AND contact_id = ? AND starts_at <= ?
       UNION ALL
       SELECT MAX(created_at) AS t FROM notes WHERE company_id = ? AND contact_id = ? AND created_at <= ?
       UNION ALL
       SELECT MAX(p.created_at) AS t FROM payments p
         JOIN invoices i ON i.company_id = p.company_id AND i.id = p.invoice_id
        WHERE p.company_id = ? AND i.contact_id = ? AND p.created_at <= ?
     ) interactions`,
    [companyId, contactId, at, companyId, contactId, at, companyId, contactId, at],
  );
  return textOrNull(row?.last);
}

/** Fields a caller may set on a contact. Nullable ones accept null to clear them. */
export interface ContactFields {
  name: string;
  email: string | null;
  phone: string | null;
  kind: ContactKind;
  tags: string[];
  status: ContactStatus;
  source: string | null;
  address_line1: string | null;
  address_line2: string | null;
  city: string | null;
  region: string | null;
  postal_code: string | null;
  country: string | null;
}
export type ContactField = keyof ContactFields;
export type ContactPatch = Partial<ContactFields>;

/** The fields `updateContact` accepts, in a stable order. */
export const CONTACT_EDITABLE_FIELDS: readonly ContactField[] = [
  'name',
  'email',
  'phone',
  'kind',
  'tags',
  'status',
  'source',
  'address_line1',
  'address_line2',
  'city',
  'region',
  'postal_code',
  'country',
];

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const PHONE = /^\+?[0-9][0-9 ().-]{6,24}$/;

/** Validate one field value; throws `invalid_input` naming it. */
function checkField(field: ContactField, value: unknown): void {
  const nullable = !['name', 'kind', 'tags', 'status'].includes(field);
  if (value === null) {
    if (!nullable) throw invalidInput(field, 'cannot be null');
    return;
  }
  switch (field) {
    case 'name':
      if (typeof value !== 'string' || value.trim() === '' || value.length > 200)
        throw invalidInput(field, 'must be 1..200 characters');
      return;
    case 'email':
      if (typeof value !== 'string' || !EMAIL.test(value) || value.length > 254)
        throw invalidInput(field, 'must be an email address');
      return;
    case 'phone':
      if (typeof value !== 'string' || !PHONE.test(value))
        throw invalidInput(field, 'must be a phone number, e.g. +18015551234');
      return;
    case 'kind':
      if (!(CONTACT_KINDS as readonly unknown[]).includes(value))
        throw invalidInput(field, `must be one of ${CONTACT_KINDS.join(', ')}`);
      return;
    case 'status':
      if (!(CONTACT_STATUSES as readonly unknown[]).includes(value))
        throw invalidInput(field, `must be one of ${CONTACT_STATUSES.join(', ')}`);
      return;
    case 'tags':
      if (
        !Array.isArray(value) ||
        value.length > 20 ||
        value.some((t) => typeof t !== 'string' || t.trim() === '' || t.length > 40)
      ) {
        throw invalidInput(field, 'must be at most 20 non-empty strings of up to 40 characters');
      }
      return;
    default:
      if (typeof value !== 'string' || value.length > 200)
        throw invalidInput(field, 'must be a string of up to 200 characters');
  }
}

function columnValue(field: ContactField, value: unknown): unknown {
  return field === 'tags' ? JSON.stringify(value) : value;
}

export interface NewContact extends Partial<ContactFields> {
  name: string;
}

/**
 * Create a contact (kind defaults to residential, status to lead, tags to []).
 * Throws `invalid_input` naming the bad field.
 */
export async function createContact(
  tx: Queryable,
  companyId: number,
  input: NewContact,
  now: Date,
): Promise<Contact> {
  const fields: ContactFields = {
    name: input.name,
    email: input.email ?? null,
    phone: input.phone ?? null,
    kind: input.kind ?? 'residential',
    tags: input.tags ?? [],
    status: input.status ?? 'lead',
    source: input.source ?? null,
    address_line1: input.address_line1 ?? null,
    address_line2: input.address_line2 ?? null,
    city: input.city ?? null,
    region: input.region ?? null,
    postal_code: input.postal_code ?? null,
    country: input.country ?? null,
  };
  for (const f of CONTACT_EDITABLE_FIELDS) checkField(f, fields[f]);
  const at = isoTime(now);
  const row = await tx.get(
    `INSERT INTO contacts (company_id, ${CONTACT_EDITABLE_FIELDS.join(', ')}, created_at, updated_at)
     VALUES (?, ${CONTACT_EDITABLE_FIELDS.map(() => '?').join(', ')}, ?, ?) RETURNING ${CONTACT_COLUMNS}`,
    [companyId, ...CONTACT_EDITABLE_FIELDS.map((f) => columnValue(f, fields[f])), at, at],
  );
  return toContact(row!);
}

export interface ContactUpdate {
  /** The contact before the update (the snapshot a revert restores). */
  previous: Contact;
  contact: Contact;
  /** The fields whose value changed. */
  changed: ContactField[];
}

/**
 * Update some fields of a contact and return the previous snapshot. Reverting is
 * `updateContact(tx, companyId, id, pick(previous, changed), now)`.
 * Throws `not_found`, `contact_erased`, `invalid_input` (empty patch, unknown field, bad value),
 * `no_change` (every given value equals the current one).
 */
export async function updateContact(
  tx: Queryable,
  companyId: number,
  contactId: number,
  patch: ContactPatch,
  now: Date,
): Promise<ContactUpdate> {
  const keys = Object.keys(patch) as ContactField[];
  if (keys.length === 0) throw invalidInput('patch', 'give at least one field to change');
  for (const k of keys) {
    if (!CONTACT_EDITABLE_FIELDS.includes(k)) throw invalidInput(k, 'is not an editable contact field');
    checkField(k, patch[k]);
  }
  const previous = await requireContact(tx, companyId, contactId);
  const changed = CONTACT_EDITABLE_FIELDS.filter(
    (f) =>
      keys.includes(f) &&
      JSON.stringify(columnValue(f, patch[f])) !== JSON.stringify(columnValue(f, previous[f])),
  );
  if (changed.length === 0)
    throw new DomainError('no_change', `contact ${contactId} already has those values`);
  const row = await tx.get(
    `UPDATE contacts SET ${changed.map((f) => `${f} = ?`).join(', ')}, updated_at = ?
      WHERE company_id = ? AND id = ? RETURNING ${CONTACT_COLUMNS}`,
    [...changed.map((f) => columnValue(f, patch[f])), isoTime(now), companyId, contactId],
  );
  return { previous, contact: toContact(row!), changed };
}

export interface ContactErasure {
  contact_id: number;
  erased_at: string;
  /** Rows whose personal data was removed or redacted. */
  notes_redacted: number;
  payment_methods_removed: number;
  emails_redacted: number;
  appointment_notes_cleared: number;
  /** Calls whose number was cleared (their voicemail transcripts and call-back notes too). */
  calls_redacted: number;
  /** Reviews whose author name and text were cleared (the copy kept here; the platform's is its own). */
  reviews_redacted: number;
  /** Financial rows kept (legal retention), counted for the receipt. */
  invoices_retained: number;
  payments_retained: number;
}

/**
 * GDPR erasure: anonymise the contact's PII (name becomes "Erased contact #<id>", email, phone,
 * address, tags and source cleared, status inactive, `erased_at` set), redact its notes,
 * appointment notes and outbox emails, delete its payment methods (payments keep their rows with
 * the method reference cleared). Invoices, payments and refunds are kept. Irreversible: nothing
 * of the PII is returned. Throws `not_found`, `contact_erased` (already erased).
 */
export async function eraseContact(
  tx: Queryable,
  companyId: number,
  contactId: number,
  now: Date,
): Promise<ContactErasure> {
  const contact = await requireContact(tx, companyId, contactId);
  const at = isoTime(now);
  const notes = await tx.run(`UPDATE notes SET body = '[erased]' WHERE company_id = ? AND contact_id = ?`, [
    companyId,
    contactId,
  ]);
  const appts = await tx.run(
    `UPDATE appointments SET notes = NULL, updated_at = ? WHERE company_id = ? AND contact_id = ? AND notes IS NOT NULL`,
    [at, companyId, contactId],
  );
  await tx.run(
    `UPDATE payments SET payment_method_id = NULL, updated_at = ?
      WHERE company_id = ? AND payment_method_id IN (SELECT id FROM payment_methods WHERE company_id = ? AND contact_id = ?)`,
    [at, companyId, companyId, contactId],
  );
  const methods = await tx.run('DELETE FROM payment_methods WHERE company_id = ? AND contact_id = ?', [
    companyId,
    contactId,
  ]);
  const callScope = 'SELECT id FROM calls WHERE company_id = ? AND contact_id = ?';
  await tx.run(
    `UPDATE voicemails SET transcript = '[erased]' WHERE company_id = ? AND call_id IN (${callScope})`,
    [companyId, companyId, contactId],
  );
  await tx.run(
    `UPDATE callbacks SET note = NULL, updated_at = ? WHERE company_id = ? AND note IS NOT NULL AND call_id IN (${callScope})`,
    [at, companyId, companyId, contactId],
  );
  const calls = await tx.run(`UPDATE calls SET phone = '[erased]' WHERE company_id = ? AND contact_id = ?`, [
    companyId,
    contactId,
  ]);
  const reviews = await tx.run(
    `UPDATE reviews SET author = '[erased]', body = '[erased]' WHERE company_id = ? AND contact_id = ?`,
    [companyId, contactId],
  );
  let emails = 0;
  if (contact.email !== null) {
    const r = await tx.run(
      `UPDATE email_outbox SET to_address = 'erased@invalid', body = '[erased]' WHERE company_id = ? AND lower(to_address) = lower(?)`,
      [companyId, contact.email],
    );
    emails = r.changes;
  }
  await tx.run(
    `UPDATE contacts SET name = ?, email = NULL, phone = NULL, tags = '[]', status = 'inactive', source = NULL,
            address_line1 = NULL, address_line2 = NULL, city = NULL, region = NULL, postal_code = NULL, country = NULL,
            updated_at = ?, erased_at = ?
      WHERE company_id = ? AND id = ?`,
    [`Erased contact #${contactId}`, at, at, companyId, contactId],
  );
  const invoices = await tx.get<{ n: unknown }>(
    'SELECT COUNT(*) AS n FROM invoices WHERE company_id = ? AND contact_id = ?',
    [companyId, contactId],
  );
  const payments = await tx.get<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM payments p JOIN invoices i ON i.company_id = p.company_id AND i.id = p.invoice_id
      WHERE p.company_id = ? AND i.contact_id = ?`,
    [companyId, contactId],
  );
  return {
    contact_id: contactId,
    erased_at: at,
    notes_redacted: notes.changes,
    payment_methods_removed: methods.changes,
    emails_redacted: emails,
    appointment_notes_cleared: appts.changes,
    calls_redacted: calls.changes,
    reviews_redacted: reviews.changes,
    invoices_retained: num(invoices?.n),
    payments_retained: num(payments?.n),
  };
}

/**
 * Add a note to a contact. Throws `not_found`, `contact_erased`, `invalid_input` (empty body or
 * longer than 10 000 characters).
 */
export async function addNote(
  tx: Queryable,
  companyId: number,
  input: { contact_id: number; body: string; author_user_id?: number | null },
  now: Date,
): Promise<Note> {
  if (typeof input.body !== 'string' || input.body.trim() === '' || input.body.length > 10_000)
    throw invalidInput('body', 'must be 1..10000 characters');
  await requireContact(tx, companyId, input.contact_id);
  const row = await tx.get(
    `INSERT INTO notes (company_id, contact_id, body, author_user_id, created_at) VALUES (?, ?, ?, ?, ?) RETURNING ${NOTE_COLUMNS}`,
    [companyId, input.contact_id, input.body, input.author_user_id ?? null, isoTime(now)],
  );
  return toNote(row!);
}

/**
 * Delete a contact that nothing refers to (the revert of its creation): no deals, appointments,
 * invoices, notes, payment methods, calls or reviews. Returns the deleted contact. Throws `not_found`,
 * `contact_in_use` (erase a contact with history with `eraseContact` instead).
 */
export async function deleteContact(tx: Queryable, companyId: number, contactId: number): Promise<Contact> {
  const contact = await getContact(tx, companyId, contactId);
  if (contact === undefined) throw notFound('contact', contactId);
  const refs = await tx.get<{ n: unknown }>(
    `SELECT (SELECT COUNT(*) FROM deals WHERE company_id = ? AND contact_id = ?)
          + (SELECT COUNT(*) FROM appointments WHERE company_id = ? AND contact_id = ?)
          + (SELECT COUNT(*) FROM invoices WHERE company_id = ? AND contact_id = ?)
          + (SELECT COUNT(*) FROM notes WHERE company_id = ? AND contact_id = ?)
          + (SELECT COUNT(*) FROM payment_methods WHERE company_id = ? AND contact_id = ?)
          + (SELECT COUNT(*) FROM calls WHERE company_id = ? AND contact_id = ?)
          + (SELECT COUNT(*) FROM reviews WHERE company_id = ? AND contact_id = ?) AS n`,
    [
      companyId,
      contactId,
      companyId,
      contactId,
      companyId,
      contactId,
      companyId,
      contactId,
      companyId,
      contactId,
      companyId,
      contactId,
      companyId,
      contactId,
    ],
  );
  if (num(refs?.n) > 0) {
    throw new DomainError(
      'contact_in_use',
      `contact ${contactId} has ${num(refs?.n)} related deals, visits, invoices, notes or payment methods`,
      'Remove them first, or erase the contact with gdpr_delete_contact.',
    );
  }
  await tx.run('DELETE FROM contacts WHERE company_id = ? AND id = ?', [companyId, contactId]);
  return contact;
}

/** One note of the company, or undefined. */
export async function getNote(q: Queryable, companyId: number, noteId: number): Promise<Note | undefined> {
  const row = await q.get(`SELECT ${NOTE_COLUMNS} FROM notes WHERE company_id = ? AND id = ?`, [
    companyId,
    noteId,
  ]);
  return row === undefined ? undefined : toNote(row);
}

/** Delete a note (the revert of `addNote`); returns it. Throws `not_found`. */
export async function deleteNote(tx: Queryable, companyId: number, noteId: number): Promise<Note> {
  const note = await getNote(tx, companyId, noteId);
  if (note === undefined) throw notFound('note', noteId);
  await tx.run('DELETE FROM notes WHERE company_id = ? AND id = ?', [companyId, noteId]);
  return note;
}

/** The company's first non-erased contact with this email (case-insensitive), or undefined. */
export async function findContactByEmail(
  q: Queryable,
  companyId: number,
  email: string,
): Promise<Contact | undefined> {
  const row = await q.get(
    `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE company_id = ? AND lower(email) = lower(?) AND erased_at IS NULL ORDER BY id LIMIT 1`,
    [companyId, email],
  );
  return row === undefined ? undefined : toContact(row);
}
