/**
 * The business pack's SQL on PostgreSQL 15: the `postgres` migration form applies, the seed
 * writes the same fixtures, every read function answers exactly what it answers on SQLite, and
 * writes keep their domain errors. Runs when SOLID_TEST_DATABASE_URL is set (.ci/postgres.sh),
 * in a throwaway schema, through a minimal `?` → `$n` Queryable over one pg client (node-postgres
 * defaults: BIGINT and COUNT come back as strings, which the row mappers must absorb).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import pg from 'pg';
import type { Queryable } from '../../src/store/store.ts';
import { businessMigrations } from '../../src/business/schema.ts';
import { DEMO_FIXTURES as F, seedDemo } from '../../src/business/seed.ts';
import * as contacts from '../../src/business/data/contacts.ts';
import * as deals from '../../src/business/data/deals.ts';
import * as appointments from '../../src/business/data/appointments.ts';
import * as invoices from '../../src/business/data/invoices.ts';
import * as payments from '../../src/business/data/payments.ts';
import * as inventory from '../../src/business/data/inventory.ts';
import * as team from '../../src/business/data/team.ts';
import * as kb from '../../src/business/data/kb.ts';
import * as email from '../../src/business/data/email.ts';
import * as infrastructure from '../../src/business/data/infrastructure.ts';
import * as subscriptions from '../../src/business/data/subscriptions.ts';
import { COMPANIES, MAIN, NOW, OTHER, openSeededStore } from './seeded-store.ts';

const url = process.env.SOLID_TEST_DATABASE_URL;
const LATER = new Date(NOW.getTime() + 60_000);

function queryable(client: pg.Client): Queryable {
  const sql = (text: string) => {
    let n = 0;
    return text.replace(/\?/g, () => `$${++n}`);
  };
  return {
    async get(text, params = []) {
      return (await client.query(sql(text), params as unknown[])).rows[0];
    },
    async all(text, params = []) {
      return (await client.query(sql(text), params as unknown[])).rows;
    },
    async run(text, params = []) {
      return { changes: (await client.query(sql(text), params as unknown[])).rowCount ?? 0 };
    },
  };
}

test(
  'the business SQL runs unchanged on PostgreSQL and answers like SQLite',
  { skip: url === undefined ? 'SOLID_TEST_DATABASE_URL is not set' : false },
  async (t) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const schema = `business_${randomBytes(6).toString('hex')}`;
    t.after(async () => {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    });
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.query(`SET search_path TO ${schema}`);
    const q = queryable(client);
    for (const m of businessMigrations) await client.query(m.postgres!);

    await client.query('BEGIN');
    const seeded = await seedDemo(q, { companies: COMPANIES, now: NOW });
    await client.query('COMMIT');
    assert.deepEqual(seeded.fixtures, F);

    const { store } = await openSeededStore(t);
    const reads: Array<[string, (q: Queryable) => Promise<unknown>]> = [
      ['getContact', (q) => contacts.getContact(q, MAIN, F.customer_id)],
      [
        'searchContacts',
        (q) =>
          contacts.searchContacts(q, MAIN, {
            query: 'an',
            kind: 'commercial',
            limit: 50,
            sort: 'created_at',
            order: 'desc',
          }),
      ],
      [
        'searchContacts by tag',
        (q) => contacts.searchContacts(q, MAIN, { tag: 'vip', limit: 200, sort: 'updated_at' }),
      ],
      [
        'searchContacts with LIKE metacharacters',
        (q) => contacts.searchContacts(q, MAIN, { query: '50%_off\\' }),
      ],
      ['listPaymentMethods', (q) => contacts.listPaymentMethods(q, MAIN, F.customer_id)],
      ['listContactNotes', (q) => contacts.listContactNotes(q, MAIN, F.customer_id)],
      ['getLastInteractionAt', (q) => contacts.getLastInteractionAt(q, MAIN, F.customer_id, NOW)],
      ['searchDeals', (q) => deals.searchDeals(q, MAIN, { open: true, limit: 200 })],
      ['listContactDeals', (q) => deals.listContactDeals(q, MAIN, F.customer_id)],
      ['listAllStageHistories', (q) => deals.listAllStageHistories(q, MAIN)],
      ['countStageTransitions', (q) => deals.countStageTransitions(q, MAIN)],
      [
        'searchAppointments',
        (q) =>
          appointments.searchAppointments(q, MAIN, {
            from: '2026-05-20T00:00:00-06:00',
            to: '2026-06-10T00:00:00Z',
            limit: 200,
          }),
      ],
      ['listContactAppointments', (q) => appointments.listContactAppointments(q, MAIN, F.customer_id)],
      [
        'technicianAvailability',
        (q) =>
          appointments.technicianAvailability(q, MAIN, {
            from: '2026-05-25T00:00:00-06:00',
            to: '2026-05-28T00:00:00-06:00',
          }),
      ],
      [
        'searchInvoices overdue',
        (q) => invoices.searchInvoices(q, MAIN, { overdue: true, now: NOW, limit: 200 }),
      ],
      ['getInvoiceByNumber', (q) => invoices.getInvoiceByNumber(q, MAIN, F.open_invoice.number)],
      ['listContactInvoices', (q) => invoices.listContactInvoices(q, MAIN, F.customer_id)],
      [
        'getInvoiceWithPayments',
        (q) => payments.getInvoiceWithPayments(q, MAIN, F.captured_payment.invoice_id),
      ],
      ['getPaymentWithRefunds', (q) => payments.getPaymentWithRefunds(q, MAIN, F.captured_payment.id)],
      [
        'getPaymentByChargeRef',
        (q) => payments.getPaymentByChargeRef(q, MAIN, F.captured_payment.charge_ref),
      ],
      ['searchPayments', (q) => payments.searchPayments(q, MAIN, { contact_id: F.customer_id, limit: 200 })],
      [
        'searchPayments refunded',
        (q) => payments.searchPayments(q, MAIN, { status: 'partially_refunded', limit: 200 }),
      ],
      ['getContactLifetimeValue', (q) => payments.getContactLifetimeValue(q, MAIN, F.customer_id)],
      ['searchParts', (q) => inventory.searchParts(q, MAIN, { query: 'valve', limit: 200 })],
      ['listLowStockParts', (q) => inventory.listLowStockParts(q, MAIN)],
      ['listEmployees', (q) => team.listEmployees(q, MAIN)],
      ['searchKbArticles', (q) => kb.searchKbArticles(q, MAIN, { query: 'estimate', limit: 50 })],
      ['searchKbArticles by tag', (q) => kb.searchKbArticles(q, MAIN, { tag: 'hvac', limit: 50 })],
      ['searchOutbox', (q) => email.searchOutbox(q, MAIN, { status: 'queued' })],
      ['listQueuedEmails', (q) => email.listQueuedEmails(q, OTHER)],
      ['getDroplet', (q) => infrastructure.getDroplet(q, MAIN)],
      ['getDroplet of company 2', (q) => infrastructure.getDroplet(q, OTHER)],
      ['getSubscription', (q) => subscriptions.getSubscription(q, OTHER)],
      ['company 2 reading company 1', (q) => contacts.getContact(q, OTHER, F.customer_id)],
    ];
    for (const [name, fn] of reads) {
      assert.deepEqual(await fn(q), await store.read(fn), name);
    }

    const write = async <T>(fn: (q: Queryable) => Promise<T>): Promise<T> => {
      await client.query('BEGIN');
      try {
        const value = await fn(q);
        await client.query('COMMIT');
        return value;
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
    };
    const refund = await write((q) =>
      payments.recordRefund(q, MAIN, { payment_id: F.captured_payment.id, amount_cents: 5000 }, LATER),
    );
    assert.deepEqual([refund.payment.status, refund.refund.fee_refunded_cents], ['partially_refunded', 145]);
    await assert.rejects(
      write((q) =>
        payments.recordRefund(q, MAIN, { payment_id: F.captured_payment.id, amount_cents: 6801 }, LATER),
      ),
      { code: 'refund_exceeds_captured' },
    );
    const charge = await write((q) =>
      payments.recordCharge(
        q,
        MAIN,
        { invoice_id: F.open_invoice.id, amount_cents: F.open_invoice.amount_cents },
        LATER,
      ),
    );
    assert.equal(charge.invoice.status, 'paid');
    await assert.rejects(
      write((q) =>
        payments.recordCharge(q, MAIN, { invoice_id: F.open_invoice.id, amount_cents: 100 }, LATER),
      ),
      { code: 'already_paid' },
    );
    const booked = await write((q) =>
      appointments.scheduleAppointment(
        q,
        MAIN,
        {
          contact_id: F.customer_id,
          technician_user_id: F.technician_user_id,
          service: 'Leak repair',
          starts_at: '2026-08-10T09:00:00-06:00',
          ends_at: '2026-08-10T11:00:00-06:00',
        },
        LATER,
      ),
    );
    assert.equal(booked.starts_at, '2026-08-10T15:00:00.000Z');
    await assert.rejects(
      write((q) =>
        appointments.scheduleAppointment(
          q,
          MAIN,
          {
            contact_id: F.customer_id,
            technician_user_id: F.technician_user_id,
            service: 'Leak repair',
            starts_at: '2026-08-10T10:00:00-06:00',
            ends_at: '2026-08-10T12:00:00-06:00',
          },
          LATER,
        ),
      ),
      { code: 'double_booked' },
    );
    const resized = await write((q) => infrastructure.resizeDroplet(q, MAIN, F.droplet_id, 'MEDIUM', LATER));
    assert.equal(resized.previous_size_slug, 's-2vcpu-4gb');
    await assert.rejects(
      write((q) => infrastructure.resizeDroplet(q, MAIN, F.droplet_id, 'MEDIUM', LATER)),
      { code: 'same_size' },
    );
    await assert.rejects(
      write((q) => inventory.adjustStock(q, MAIN, F.low_stock_part_id, -1000, LATER)),
      { code: 'insufficient_stock' },
    );
    const article = await write((q) =>
      kb.upsertKbArticle(q, MAIN, { slug: 'refund-policy', title: 'Refund policy', body: 'New.' }, LATER),
    );
    assert.equal(article.created, false);
    const moved = await write((q) =>
      deals.moveDealStage(q, MAIN, F.proposal_deal_id, 'won', F.admin_user_id, LATER),
    );
    assert.equal(moved.deal.closed_at, LATER.toISOString());
    const erased = await write((q) => contacts.eraseContact(q, MAIN, F.customer_id, LATER));
    assert.ok(erased.invoices_retained > 0);
    await assert.rejects(
      write((q) => contacts.updateContact(q, OTHER, F.customer_id, { name: 'x' }, LATER)),
      { code: 'not_found' },
    );
  },
);
