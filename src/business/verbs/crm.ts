/**
 * CRM verbs (category `crm`): search contacts (crm_contacts_search, the spec's READ example),
 * create and update them (crm_contact_update: WRITE_REVERSIBLE with a snapshot revert), add
 * notes, explain a contact's state from the event log (crm.explain_contact_state), and the
 * previews of each write.
 *
 * Reasons: not_found ("contact 42 not found"), contact_erased, no_change, contact_in_use
 * (revert of a create after the contact got history), invalid_input.
 * Spec: spec/shapes.md §aggregate §explain §preview §receipt, spec/consent.md.
 */
import type { JsonSchema } from '../../spec/types.ts';
import type { Queryable } from '../../store/store.ts';
import { listContactAppointments } from '../data/appointments.ts';
import {
  addNote,
  createContact,
  deleteContact,
  deleteNote,
  findContactByEmail,
  getLastInteractionAt,
  listContactNotes,
  requireContact,
  searchContacts,
  updateContact,
  CONTACT_EDITABLE_FIELDS,
  type Contact,
  type ContactField,
  type ContactPatch,
  type NewContact,
} from '../data/contacts.ts';
import { DomainError } from '../data/domain-error.ts';
import { listContactDeals } from '../data/deals.ts';
import { listContactInvoices } from '../data/invoices.ts';
import { num } from '../data/row-values.ts';
import { CONTACT_KINDS, CONTACT_STATUSES, OPEN_DEAL_STAGES, type DealStage } from '../schema.ts';
import { contactName } from './activity-words.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { buildCausalChain, chainForOutput, describeActor } from './causal-chain.ts';
import { changeWords, contactSubject } from './change-words.ts';
import { collectionResult } from './collection-result.ts';
import { contactView, noteView } from './entity-views.ts';
import { enumProp, idProp, objectSchema, PAGE_PROPS, textProp, timeProp } from './input-schema.ts';

/** Fields whose values are personal data: events record that they changed, never the values. */
const PII_FIELDS: ReadonlySet<ContactField> = new Set([
  'name',
  'email',
  'phone',
  'address_line1',
  'address_line2',
  'city',
  'region',
  'postal_code',
  'country',
]);

const nullableText = (description: string, max: number): JsonSchema => ({
  type: ['string', 'null'],
  maxLength: max,
  description: `${description} null clears it.`,
});
const TAGS: JsonSchema = {
  type: 'array',
  maxItems: 20,
  items: { type: 'string', minLength: 1, maxLength: 40 },
  description: 'Tags (replaces the list), e.g. ["vip", "commercial"].',
};

/** The editable contact properties (shared by create, update and their previews). */
const CONTACT_FIELD_PROPS: Record<string, JsonSchema> = {
  name: textProp('Person or business name.', 200),
  email: {
    type: ['string', 'null'],
    format: 'email',
    maxLength: 254,
    description: 'Email address; null clears it.',
  },
  phone: {
    type: ['string', 'null'],
    pattern: '^\\+?[0-9][0-9 ().-]{6,24}$',
    description: 'Phone, e.g. +18015551234; null clears it.',
  },
  kind: enumProp(CONTACT_KINDS, 'residential or commercial.'),
  tags: TAGS,
  status: enumProp(CONTACT_STATUSES, 'lead (never booked), active (a customer) or inactive.'),
  source: nullableText('How they found the company: web, referral, phone, repeat, ads, agent.', 200),
  address_line1: nullableText('Street address.', 200),
  address_line2: nullableText('Unit, suite.', 200),
  city: nullableText('City.', 200),
  region: nullableText('State or region code, e.g. UT.', 200),
  postal_code: nullableText('Postal code.', 200),
  country: nullableText('Country code, e.g. US.', 200),
};

// ---------------------------------------------------------------------------------------------
// Search

interface SearchArgs {
  query?: string;
  status?: Contact['status'];
  kind?: Contact['kind'];
  tag?: string;
  city?: string;
  created_after?: string;
  created_before?: string;
  sort?: 'id' | 'name' | 'created_at' | 'updated_at';
  order?: 'asc' | 'desc';
  limit?: number;
  offset?: number;
}

export const crmContactsSearch = defineBusinessVerb<SearchArgs>({
  name: 'crm_contacts_search',
  title: 'Search contacts',
  description:
    "Search the company's contacts (customers and leads) by a free-text query on name, email or phone, and/or by status, kind, tag, city and creation time. Returns a page of contacts (id, name, email, phone, kind, status, tags, address) with total and next_offset. Use it to find a customer's id before calling customer.full_context or a write verb. Erased (GDPR) contacts are left out.",
  shape: 'aggregate',
  category: 'crm',
  input: objectSchema({
    query: textProp('Case-insensitive text found in the name, email or phone.', 200),
    status: enumProp(CONTACT_STATUSES, 'Only contacts with this status.'),
    kind: enumProp(CONTACT_KINDS, 'Only residential or commercial contacts.'),
    tag: textProp('Only contacts carrying this exact tag, e.g. vip.', 40),
    city: textProp('Only contacts in this city (case-insensitive).', 100),
    created_after: timeProp('Only contacts created at or after this time.'),
    created_before: timeProp('Only contacts created before this time.'),
    sort: enumProp(['id', 'name', 'created_at', 'updated_at'], 'Sort field (default id).'),
    order: enumProp(['asc', 'desc'], 'Sort order (default asc).'),
    ...PAGE_PROPS,
  }),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  cli: { command: ['contacts', 'search'], positional: ['query'] },
  async handler(ctx, args) {
    const page = await searchContacts(ctx.db, ctx.principal.company_id, {
      ...args,
      ...(args.created_after !== undefined
        ? { created_after: new Date(args.created_after).toISOString() }
        : {}),
      ...(args.created_before !== undefined
        ? { created_before: new Date(args.created_before).toISOString() }
        : {}),
    });
    return collectionResult(
      'contacts',
      { ...page, items: page.items.map(contactView) },
      args as Record<string, unknown>,
      ctx.now,
    );
  },
});

// ---------------------------------------------------------------------------------------------
// Create

type CreateArgs = NewContact & { tags?: string[] };

const createInput = objectSchema(CONTACT_FIELD_PROPS, ['name']);

export const crmContactCreate = defineBusinessVerb<CreateArgs>({
  name: 'crm_contact_create',
  title: 'Create a contact',
  description:
    'Add a contact (a customer or a lead) with name and optional email, phone, kind (residential default), status (lead default), tags, source and address. Check first with crm_contacts_search that they do not exist. Reversible with audit.revert while the contact has no deals, visits, invoices or notes. Preview with crm.preview_contact_create.',
  shape: 'receipt',
  category: 'crm',
  consent: 'WRITE_REVERSIBLE',
  preview: 'crm.preview_contact_create',
  input: createInput,
  summary: (a) => `Create contact "${a.name}"${a.email ? ` <${a.email}>` : ''}.`,
  async handler(ctx, args) {
    const contact = await createContact(ctx.db, ctx.principal.company_id, args, ctx.now);
    ctx.setEntity('contact', contact.id);
    ctx.emit({
      type: 'contact.created',
      entity_type: 'contact',
      entity_id: contact.id,
      payload: { name: contact.name, kind: contact.kind, source: contact.source },
    });
    ctx.setRollback(`crm:contact:create:${contact.id}`, { contact_id: contact.id, name: contact.name });
    return { status: 'created', contact_id: contact.id, contact: contactView(contact) };
  },
  revert: {
    describe: (o) =>
      `Contact ${contactSubject(o.rollback.name ?? o.args.name, o.rollback.contact_id)}: none → created`,
    async handler(ctx, original) {
      const id = num(original.rollback.contact_id);
      await deleteContact(ctx.db, ctx.principal.company_id, id);
      ctx.emit({ type: 'contact.deleted', entity_type: 'contact', entity_id: id, payload: {} });
      return { revert_action: `deleted contact ${id}` };
    },
  },
});

export const crmPreviewContactCreate = defineBusinessVerb<CreateArgs>({
  name: 'crm.preview_contact_create',
  title: 'Preview creating a contact',
  description:
    'Show the contact crm_contact_create would add (with its defaults) and whether a contact with the same email already exists, without writing. Same arguments as crm_contact_create.',
  shape: 'preview',
  category: 'crm',
  input: createInput,
  idempotent: true,
  async handler(ctx, args) {
    const duplicate = args.email
      ? await findContactByEmail(ctx.db, ctx.principal.company_id, args.email)
      : undefined;
    return {
      current: {
        existing_contact_with_email:
          duplicate === undefined
            ? null
            : { id: duplicate.id, name: duplicate.name, status: duplicate.status },
      },
      projected: {
        contact: {
          id: null,
          name: args.name,
          email: args.email ?? null,
          phone: args.phone ?? null,
          kind: args.kind ?? 'residential',
          status: args.status ?? 'lead',
          tags: args.tags ?? [],
          source: args.source ?? null,
          city: args.city ?? null,
        },
      },
      delta: { contacts_created: 1 },
      reversible: crmContactCreate.revert !== undefined,
      notes:
        duplicate === undefined
          ? 'No contact has this email yet.'
          : `Contact ${duplicate.id} (${duplicate.name}) already has this email; update it instead of creating a duplicate.`,
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Update

type UpdateArgs = ContactPatch & { contact_id: number };

const updateInput: JsonSchema = {
  ...objectSchema({ contact_id: idProp('The contact to change.'), ...CONTACT_FIELD_PROPS }, ['contact_id']),
  minProperties: 2,
};

function patchOf(args: UpdateArgs): ContactPatch {
  const patch: Record<string, unknown> = {};
  for (const f of CONTACT_EDITABLE_FIELDS) if (f in args) patch[f] = (args as Record<string, unknown>)[f];
  return patch as ContactPatch;
}

/** Event payload of a contact change: every changed field, values only for non-personal fields. */
function changePayload(
  previous: Contact,
  next: Contact,
  changed: readonly ContactField[],
): Record<string, unknown> {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const f of changed)
    changes[f] = PII_FIELDS.has(f)
      ? { from: '(personal data)', to: '(personal data)' }
      : { from: previous[f], to: next[f] };
  return { fields: [...changed], changes };
}

export const crmContactUpdate = defineBusinessVerb<UpdateArgs>({
  name: 'crm_contact_update',
  title: 'Update a contact',
  description:
    'Change some fields of a contact (name, email, phone, kind, tags, status, source, address); only the fields given change, null clears a nullable one. Answers the previous values of the changed fields. Reversible: audit.revert restores the snapshot taken before the change. Preview with crm.preview_contact_update. Refused with no_change when nothing would change and contact_erased for an erased contact.',
  shape: 'receipt',
  category: 'crm',
  consent: 'WRITE_REVERSIBLE',
  preview: 'crm.preview_contact_update',
  input: updateInput,
  summary: (a) => `Update contact ${a.contact_id}: ${Object.keys(patchOf(a)).join(', ')}.`,
  activity: async (read, a) => {
    const name = await contactName(read, a.contact_id);
    return name && `Update ${name}: ${Object.keys(patchOf(a)).join(', ')}`;
  },
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const { previous, contact, changed } = await updateContact(
      ctx.db,
      c,
      args.contact_id,
      patchOf(args),
      ctx.now,
    );
    ctx.setEntity('contact', contact.id);
    ctx.emit({
      type: 'contact.updated',
      entity_type: 'contact',
      entity_id: contact.id,
      payload: changePayload(previous, contact, changed),
    });
    if (changed.includes('status'))
      ctx.emit({
        type: 'contact.status_changed',
        entity_type: 'contact',
        entity_id: contact.id,
        payload: { from: previous.status, to: contact.status, reason: 'changed by crm_contact_update' },
      });
    const snapshot: Record<string, unknown> = {};
    for (const f of changed) snapshot[f] = previous[f];
    ctx.setRollback(`crm:contact:${contact.id}:snapshot`, {
      contact_id: contact.id,
      previous: snapshot,
      updated_at: contact.updated_at,
      // For the undo dialog's words (revert.describe): whose fields, and what they became.
      name: previous.name,
      next: Object.fromEntries(changed.map((f) => [f, contact[f]])),
    });
    return {
      status: 'updated',
      contact_id: contact.id,
      changed_fields: changed,
      previous: snapshot,
      contact: contactView(contact),
    };
  },
  revert: {
    describe: ({ rollback, args }) =>
      changeWords(
        contactSubject(rollback.name, rollback.contact_id),
        (rollback.previous ?? {}) as Record<string, unknown>,
        (rollback.next ?? args) as Record<string, unknown>,
      ),
    async handler(ctx, original) {
      const c = ctx.principal.company_id;
      const id = num(original.rollback.contact_id);
      const snapshot = original.rollback.previous as ContactPatch;
      const { previous, contact, changed } = await updateContact(ctx.db, c, id, snapshot, ctx.now);
      ctx.emit({
        type: 'contact.updated',
        entity_type: 'contact',
        entity_id: id,
        payload: { ...changePayload(previous, contact, changed), revert_of: original.audit_id },
      });
      if (changed.includes('status'))
        ctx.emit({
          type: 'contact.status_changed',
          entity_type: 'contact',
          entity_id: id,
          payload: {
            from: previous.status,
            to: contact.status,
            reason: `revert of audit ${original.audit_id}`,
          },
        });
      return {
        revert_action: `restored ${changed.join(', ')} of contact ${id} from the snapshot`,
        restored_fields: changed,
      };
    },
  },
});

export const crmPreviewContactUpdate = defineBusinessVerb<UpdateArgs>({
  name: 'crm.preview_contact_update',
  title: 'Preview a contact update',
  description:
    'Show the contact before and after crm_contact_update with the same arguments, and which fields would change, without writing. Refuses (no_change, contact_erased, not_found) exactly as the update would.',
  shape: 'preview',
  category: 'crm',
  input: updateInput,
  idempotent: true,
  async handler(ctx, args) {
    const contact = await requireContact(ctx.db, ctx.principal.company_id, args.contact_id);
    const patch = patchOf(args);
    const changed = (Object.keys(patch) as ContactField[]).filter(
      (f) => JSON.stringify(patch[f]) !== JSON.stringify(contact[f]),
    );
    if (changed.length === 0)
      throw new DomainError('no_change', `contact ${contact.id} already has those values`);
    const projected = { ...contact, ...patch };
    const pick = (x: Record<string, unknown>) => Object.fromEntries(changed.map((f) => [f, x[f]]));
    return {
      current: pick(contact as unknown as Record<string, unknown>),
      projected: pick(projected as unknown as Record<string, unknown>),
      delta: { changed_fields: changed },
      reversible: crmContactUpdate.revert !== undefined,
      notes: `audit.revert restores the ${changed.length} changed field${changed.length === 1 ? '' : 's'} from a snapshot.${changed.includes('status') ? ' The status change is recorded in the contact history.' : ''}`,
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Notes

interface NoteArgs {
  contact_id: number;
  body: string;
}

const noteInput = objectSchema(
  { contact_id: idProp('The contact the note is about.'), body: textProp('The note text.', 10_000) },
  ['contact_id', 'body'],
);

export const crmAddNote = defineBusinessVerb<NoteArgs>({
  name: 'crm.add_note',
  title: 'Add a note to a contact',
  description:
    'Attach a free-text note to a contact (call summary, gate code, preference). The author is the calling user. Reversible with audit.revert (deletes the note). Preview with crm.preview_add_note.',
  shape: 'receipt',
  category: 'crm',
  consent: 'WRITE_REVERSIBLE',
  preview: 'crm.preview_add_note',
  input: noteInput,
  untrusted_content: true,
  summary: (a) => `Add a note to contact ${a.contact_id}.`,
  activity: async (read, a) => {
    const name = await contactName(read, a.contact_id);
    return name && `Add a note to ${name}`;
  },
  async handler(ctx, args) {
    const note = await addNote(
      ctx.db,
      ctx.principal.company_id,
      { contact_id: args.contact_id, body: args.body, author_user_id: ctx.principal.user_id },
      ctx.now,
    );
    ctx.setEntity('contact', args.contact_id);
    ctx.emit({
      type: 'note.added',
      entity_type: 'note',
      entity_id: note.id,
      payload: { contact_id: args.contact_id },
    });
    // The contact's name, for the undo dialog's words (revert.describe); never the body (the agent's text).
    const contact = await requireContact(ctx.db, ctx.principal.company_id, args.contact_id);
    ctx.setRollback(`crm:note:${note.id}`, {
      note_id: note.id,
      contact_id: args.contact_id,
      name: contact.name,
    });
    return { status: 'added', note: noteView(note) };
  },
  revert: {
    // Deleting this note leaves every other note and the contact as they are.
    additive: true,
    describe: ({ rollback }) =>
      `Notes of ${contactSubject(rollback.name, rollback.contact_id)}: note #${String(rollback.note_id)} added`,
    async handler(ctx, original) {
      const note = await deleteNote(ctx.db, ctx.principal.company_id, num(original.rollback.note_id));
      ctx.emit({
        type: 'note.deleted',
        entity_type: 'note',
        entity_id: note.id,
        payload: { contact_id: note.contact_id },
      });
      return { revert_action: `deleted note ${note.id}` };
    },
  },
});

export const crmPreviewAddNote = defineBusinessVerb<NoteArgs>({
  name: 'crm.preview_add_note',
  title: 'Preview adding a note',
  description:
    'Show the note crm.add_note would attach and how many notes the contact has, without writing. Same arguments as crm.add_note.',
  shape: 'preview',
  category: 'crm',
  input: noteInput,
  idempotent: true,
  async handler(ctx, args) {
    const contact = await requireContact(ctx.db, ctx.principal.company_id, args.contact_id);
    const notes = await listContactNotes(ctx.db, ctx.principal.company_id, contact.id, 1000);
    return {
      current: { contact_id: contact.id, name: contact.name, notes: notes.length },
      projected: {
        contact_id: contact.id,
        name: contact.name,
        notes: notes.length + 1,
        new_note: { body: args.body, author_user_id: ctx.principal.user_id },
      },
      delta: { notes_added: 1 },
      reversible: crmAddNote.revert !== undefined,
      notes: 'Notes are visible to every employee of the company.',
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Explain

async function noteIds(q: Queryable, c: number, contactId: number): Promise<number[]> {
  return (
    await q.all<{ id: unknown }>('SELECT id FROM notes WHERE company_id = ? AND contact_id = ?', [
      c,
      contactId,
    ])
  ).map((r) => num(r.id));
}

export const crmExplainContactState = defineBusinessVerb<{ contact_id: number; limit?: number }>({
  name: 'crm.explain_contact_state',
  title: 'Explain a contact state',
  description:
    'Explain why a contact is in its current state (lead, active or inactive; tags; erased or not): the causal chain of its events (creation, status changes and reasons, updates, notes, deals, visits, invoices, payments), oldest first, with the verb calls recorded against it (refused ones included) and a plain-language reasoning. Use it before changing a contact you did not create.',
  shape: 'explain',
  category: 'crm',
  input: objectSchema(
    {
      contact_id: idProp('The contact to explain.'),
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 500,
        default: 200,
        description: 'Most chain items (newest kept).',
      },
    },
    ['contact_id'],
  ),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const q = ctx.db;
    const contact = await requireContact(q, c, args.contact_id, { allowErased: true });
    ctx.setEntity('contact', contact.id);
    const [deals, appointments, invoices, notes] = [
      await listContactDeals(q, c, contact.id),
      await listContactAppointments(q, c, contact.id, 10_000),
      await listContactInvoices(q, c, contact.id),
      await noteIds(q, c, contact.id),
    ];
    const chain = await buildCausalChain(
      q,
      c,
      { type: 'contact', id: contact.id, argKeys: ['contact_id', 'customer_id'] },
      [
        { type: 'contact', ids: [contact.id] },
        { type: 'note', ids: notes },
        { type: 'deal', ids: deals.map((d) => d.id) },
        { type: 'appointment', ids: appointments.map((a) => a.id) },
        { type: 'invoice', ids: invoices.map((i) => i.id) },
      ],
      args.limit ?? 200,
    );
    const last = await getLastInteractionAt(q, c, contact.id, ctx.now);
    const openDeals = deals.filter((d) => (OPEN_DEAL_STAGES as readonly DealStage[]).includes(d.stage));
    const own = chain.filter((i) => i.entity_type === 'contact' && i.entity_id === String(contact.id));
    const created = own.find((i) => i.action === 'contact.created');
    const statusChanges = own.filter((i) => i.action === 'contact.status_changed');
    const lastStatus = statusChanges[statusChanges.length - 1];
    const completed = appointments.filter((a) => a.status === 'completed').length;
    const parts: string[] = [];
    if (contact.erased_at !== null)
      parts.push(
        `Contact ${contact.id}'s personal data was erased on ${contact.erased_at} (GDPR); only its financial history remains.`,
      );
    parts.push(
      `${contact.name} (contact ${contact.id}) is ${contact.status}` +
        (lastStatus !== undefined
          ? ` since ${lastStatus.timestamp}: ${lastStatus.detail}, by ${describeActor(lastStatus.actor)}.`
          : created !== undefined
            ? `, as it has been since it was created on ${created.timestamp}.`
            : '.'),
    );
    if (created !== undefined)
      parts.push(
        `It was created on ${created.timestamp} by ${describeActor(created.actor)} (${created.detail}).`,
      );
    parts.push(
      `Since then: ${completed} completed visit${completed === 1 ? '' : 's'}, ${deals.length} deal${deals.length === 1 ? '' : 's'} (${openDeals.length} open), ${invoices.length} invoice${invoices.length === 1 ? '' : 's'}, ${notes.length} note${notes.length === 1 ? '' : 's'}.`,
    );
    if (contact.status === 'lead' && completed === 0)
      parts.push('It stays a lead until a first visit is completed.');
    if (contact.status === 'inactive' && contact.erased_at === null)
      parts.push(
        'Contacts without activity for about nine months are marked inactive by the lifecycle system.',
      );
    parts.push(last === null ? 'There is no interaction on record.' : `The last interaction was on ${last}.`);
    const refused = chain.filter(
      (i) => i.source === 'audit' && (i.status === 'denied' || i.status === 'failed'),
    );
    if (refused.length > 0)
      parts.push(
        `${refused.length} change attempt${refused.length === 1 ? ' was' : 's were'} refused or failed (${[...new Set(refused.map((r) => r.detail))].join('; ')}).`,
      );
    return {
      entity_id: contact.id,
      entity_type: 'contact',
      current_state: {
        status: contact.status,
        kind: contact.kind,
        tags: contact.tags,
        erased_at: contact.erased_at,
        open_deals: openDeals.length,
        completed_visits: completed,
        last_interaction: last,
      },
      causal_chain: chainForOutput(chain),
      reasoning: parts.join(' '),
    };
  },
});

export const crmVerbs = [
  crmContactsSearch,
  crmContactCreate,
  crmPreviewContactCreate,
  crmContactUpdate,
  crmPreviewContactUpdate,
  crmAddNote,
  crmPreviewAddNote,
  crmExplainContactState,
];
