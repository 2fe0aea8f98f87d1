/**
 * The consent test pack: one verb per consent class whose effects land in a table, so a test counts
 * what really committed. Importing this module makes the pack loadable by name ("consent-test") in
 * this process, so the CLI (in-process, or bin/solid.js started with `--import` of this file) serves
 * the same verbs on a database that lists the pack.
 */
import { KNOWN_PACKS } from '../../src/packs.ts';
import type { Pack } from '../../src/runtime/pack.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { VerbError } from '../../src/runtime/errors.ts';
import { formatCents } from '../../src/runtime/consent/typed-phrase.ts';
import { packReason } from '../../src/spec/reasons.ts';

const EFFECTS_SQL = `CREATE TABLE consent_effects (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, verb TEXT NOT NULL, args TEXT NOT NULL)`;

async function recordEffect(
  ctx: {
    db: { run(sql: string, p?: unknown[]): Promise<unknown> };
    principal: { company_id: number };
    verb: { name: string };
  },
  args: unknown,
): Promise<void> {
  await ctx.db.run('INSERT INTO consent_effects (company_id, verb, args) VALUES (?, ?, ?)', [
    ctx.principal.company_id,
    ctx.verb.name,
    JSON.stringify(args),
  ]);
}

export const lookup = defineVerb<{ contact_id: number }>({
  name: 'ct.lookup',
  description: 'Read a contact (test verb, READ).',
  shape: 'aggregate',
  category: 'crm',
  input: {
    type: 'object',
    properties: { contact_id: { type: 'integer' } },
    required: ['contact_id'],
    additionalProperties: false,
  },
  async handler(_ctx, args) {
    return { entity_id: args.contact_id, data: { name: 'Ada' } };
  },
});

export const noteUpdate = defineVerb<{ contact_id: number; note: string; api_token?: string }>({
  name: 'ct.note_update',
  description: 'Update a contact note (test verb, WRITE_REVERSIBLE).',
  shape: 'receipt',
  category: 'crm',
  consent: 'WRITE_REVERSIBLE',
  secret_fields: ['api_token'],
  input: {
    type: 'object',
    properties: { contact_id: { type: 'integer' }, note: { type: 'string' }, api_token: { type: 'string' } },
    required: ['contact_id', 'note'],
    additionalProperties: false,
  },
  summary: (a) => `Set the note of contact ${a.contact_id} to "${a.note}".`,
  async handler(ctx, args) {
    await recordEffect(ctx, args);
    return { status: 'completed', contact_id: args.contact_id };
  },
});

export const chargeInvoice = defineVerb<{ invoice_id: number; amount_cents: number; card_token?: string }>({
  name: 'charge_invoice',
  description: 'Charge an invoice (test verb, WRITE_FINANCIAL).',
  shape: 'receipt',
  category: 'payments',
  consent: 'WRITE_FINANCIAL',
  secret_fields: ['card_token'],
  input: {
    type: 'object',
    properties: {
      invoice_id: { type: 'integer', minimum: 1 },
      amount_cents: { type: 'integer', minimum: 1 },
      card_token: { type: 'string' },
    },
    required: ['invoice_id', 'amount_cents'],
    additionalProperties: false,
  },
  phrase: (a) => `CHARGE ${formatCents(a.amount_cents)} to invoice #${a.invoice_id}`,
  summary: (a) => `Charge ${formatCents(a.amount_cents)} to invoice #${a.invoice_id}.`,
  async handler(ctx, args) {
    await recordEffect(ctx, args);
    return { status: 'completed', invoice_id: args.invoice_id, amount_cents: args.amount_cents };
  },
});

export const gdprDelete = defineVerb<{ contact_id: number }>({
  name: 'gdpr_delete_contact',
  description: 'Erase a contact permanently (test verb, IRREVERSIBLE).',
  shape: 'receipt',
  category: 'crm',
  consent: 'IRREVERSIBLE',
  input: {
    type: 'object',
    properties: { contact_id: { type: 'integer', minimum: 1 } },
    required: ['contact_id'],
    additionalProperties: false,
  },
  phrase: (a) => `DELETE CONTACT ${a.contact_id} PERMANENTLY`,
  async handler(ctx, args) {
    await recordEffect(ctx, args);
    return { status: 'completed', contact_id: args.contact_id };
  },
});

export const blockedVerb = defineVerb<Record<string, never>>({
  name: 'ct.wipe_everything',
  description: 'Declared BLOCKED (test verb).',
  shape: 'receipt',
  category: 'system',
  consent: 'BLOCKED',
  input: { type: 'object', properties: {}, additionalProperties: false },
  async handler(ctx, args) {
    await recordEffect(ctx, args);
    return { status: 'completed' };
  },
});

/** Writes its effect, then fails: the transaction (effect and cap count) must roll back. */
export const failingWrite = defineVerb<{ n: number }>({
  name: 'ct.failing_write',
  description: 'Writes then fails (test verb, WRITE_REVERSIBLE).',
  shape: 'receipt',
  category: 'crm',
  consent: 'WRITE_REVERSIBLE',
  input: {
    type: 'object',
    properties: { n: { type: 'integer' } },
    required: ['n'],
    additionalProperties: false,
  },
  async handler(ctx, args) {
    await recordEffect(ctx, args);
    throw new VerbError(packReason('already_paid'), 'The test write always fails after writing.');
  },
});

export const refundCustomer = defineVerb<{ charge_id: string; amount_cents: number; customer_name: string }>({
  name: 'ct.refund',
  description:
    'Refund a customer by name (test verb, WRITE_FINANCIAL; the phrase carries non-ASCII letters).',
  shape: 'receipt',
  category: 'payments',
  consent: 'WRITE_FINANCIAL',
  input: {
    type: 'object',
    properties: {
      charge_id: { type: 'string' },
      amount_cents: { type: 'integer', minimum: 1 },
      customer_name: { type: 'string' },
    },
    required: ['charge_id', 'amount_cents', 'customer_name'],
    additionalProperties: false,
  },
  phrase: (a) => `REFUND ${formatCents(a.amount_cents)} to ${a.customer_name}`,
  async handler(ctx, args) {
    await recordEffect(ctx, args);
    return { status: 'completed', charge_id: args.charge_id };
  },
});

export const consentTestPack: Pack = {
  name: 'consent-test',
  description: 'Verbs of every consent class, for the consent tests.',
  migrations: [
    {
      version: 1,
      name: 'effects',
      sqlite: EFFECTS_SQL,
      postgres: EFFECTS_SQL.replace('INTEGER PRIMARY KEY', 'BIGSERIAL PRIMARY KEY'),
    },
  ],
  verbs: [lookup, noteUpdate, chargeInvoice, refundCustomer, gdprDelete, blockedVerb, failingWrite],
};

(KNOWN_PACKS as Record<string, () => Promise<Pack>>)['consent-test'] = async () => consentTestPack;
