import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Queryable, StoreTx } from '../../src/store/store.ts';
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
import { DEMO_FIXTURES as F } from '../../src/business/seed.ts';
import { MAIN, NOW, OTHER, openSeededStore } from './seeded-store.ts';

const LATER = new Date(NOW.getTime() + 60_000);

test("company 2 cannot read any of company 1's rows through the data layer", async (t) => {
  const { store } = await openSeededStore(t);
  const read = <T>(fn: (q: Queryable) => Promise<T>) => store.read(fn);
  const ids = await read(async (q) => ({
    note: (await contacts.listContactNotes(q, MAIN, F.customer_id))[0]!.id,
    paymentMethod: (await contacts.listPaymentMethods(q, MAIN, F.customer_id))[0]!.id,
    line: (await invoices.listInvoiceLines(q, MAIN, F.open_invoice.id))[0]!.invoice_id,
    refunded: (await payments.searchPayments(q, MAIN, { status: 'partially_refunded', limit: 1 })).items[0]!
      .id,
    usage: (await q.get<{ appointment_id: number }>(
      'SELECT appointment_id FROM part_usage WHERE company_id = ? ORDER BY id LIMIT 1',
      [MAIN],
    ))!.appointment_id,
    kb: (await kb.getKbArticleBySlug(q, MAIN, 'refund-policy'))!,
    email: (await email.searchOutbox(q, MAIN, { limit: 1 })).items[0]!.id,
    part: (await inventory.getPart(q, MAIN, F.low_stock_part_id))!,
  }));

  /** Each case: company 1 sees something, company 2 sees nothing (undefined, null or empty). */
  const cases: Array<[string, (q: Queryable, company: number) => Promise<unknown>]> = [
    ['getContact', (q, c) => contacts.getContact(q, c, F.customer_id)],
    ['listPaymentMethods', (q, c) => contacts.listPaymentMethods(q, c, F.customer_id)],
    ['getPaymentMethod', (q, c) => contacts.getPaymentMethod(q, c, ids.paymentMethod)],
    ['listContactNotes', (q, c) => contacts.listContactNotes(q, c, F.customer_id)],
    ['getLastInteractionAt', (q, c) => contacts.getLastInteractionAt(q, c, F.customer_id, NOW)],
    ['getDeal', (q, c) => deals.getDeal(q, c, F.proposal_deal_id)],
    ['listContactDeals', (q, c) => deals.listContactDeals(q, c, F.customer_id)],
    ['listDealStageHistory', (q, c) => deals.listDealStageHistory(q, c, F.proposal_deal_id)],
    [
      'searchDeals by contact',
      (q, c) => deals.searchDeals(q, c, { contact_id: F.customer_id }).then((p) => p.items),
    ],
    ['getAppointment', (q, c) => appointments.getAppointment(q, c, F.upcoming_appointment_id)],
    ['listContactAppointments', (q, c) => appointments.listContactAppointments(q, c, F.customer_id)],
    [
      'searchAppointments by contact',
      (q, c) => appointments.searchAppointments(q, c, { contact_id: F.customer_id }).then((p) => p.items),
    ],
    [
      'searchAppointments by technician',
      (q, c) =>
        appointments
          .searchAppointments(q, c, { technician_user_id: F.technician_user_id })
          .then((p) => p.items),
    ],
    ['getInvoice', (q, c) => invoices.getInvoice(q, c, F.open_invoice.id)],
    ['getInvoiceByNumber', (q, c) => invoices.getInvoiceByNumber(q, c, F.open_invoice.number)],
    ['listInvoiceLines', (q, c) => invoices.listInvoiceLines(q, c, ids.line)],
    ['listContactInvoices', (q, c) => invoices.listContactInvoices(q, c, F.customer_id)],
    [
      'searchInvoices by contact',
      (q, c) => invoices.searchInvoices(q, c, { contact_id: F.customer_id }).then((p) => p.items),
    ],
    ['getPayment', (q, c) => payments.getPayment(q, c, F.captured_payment.id)],
    ['getPaymentByChargeRef', (q, c) => payments.getPaymentByChargeRef(q, c, F.captured_payment.charge_ref)],
    ['listInvoicePayments', (q, c) => payments.listInvoicePayments(q, c, F.captured_payment.invoice_id)],
    ['listRefunds', (q, c) => payments.listRefunds(q, c, ids.refunded)],
    [
      'getInvoiceWithPayments',
      (q, c) => payments.getInvoiceWithPayments(q, c, F.captured_payment.invoice_id),
    ],
    ['getPaymentWithRefunds', (q, c) => payments.getPaymentWithRefunds(q, c, F.captured_payment.id)],
    ['getContactLifetimeValue', (q, c) => payments.getContactLifetimeValue(q, c, F.customer_id)],
    [
      'searchPayments by invoice',
      (q, c) =>
        payments.searchPayments(q, c, { invoice_id: F.captured_payment.invoice_id }).then((p) => p.items),
    ],
    [
      'searchPayments by contact',
      (q, c) => payments.searchPayments(q, c, { contact_id: F.customer_id }).then((p) => p.items),
    ],
    ['getPart', (q, c) => inventory.getPart(q, c, F.low_stock_part_id)],
    ['listAppointmentPartUsage', (q, c) => inventory.listAppointmentPartUsage(q, c, ids.usage)],
    ['getEmployee', (q, c) => team.getEmployee(q, c, F.technician_user_id)],
    ['getKbArticle', (q, c) => kb.getKbArticle(q, c, ids.kb.id)],
    ['getEmail', (q, c) => email.getEmail(q, c, ids.email)],
    [
      'searchOutbox by entity',
      (q, c) =>
        email
          .searchOutbox(q, c, {
            related_entity_type: 'invoice',
            related_entity_id: F.captured_payment.invoice_id,
          })
          .then((p) => p.items),
    ],
    ['getDropletById', (q, c) => infrastructure.getDropletById(q, c, F.droplet_id)],
  ];
  for (const [name, fn] of cases) {
    await t.test(name, async () => {
      const mine = await read((q) => fn(q, MAIN));
      assert.ok(
        mine !== undefined && mine !== null && !(Array.isArray(mine) && mine.length === 0),
        `company 1 sees its own row through ${name}`,
      );
      const theirs = await read((q) => fn(q, OTHER));
      assert.ok(
        theirs === undefined || theirs === null || (Array.isArray(theirs) && theirs.length === 0),
        `company 2 sees nothing through ${name}: ${JSON.stringify(theirs)?.slice(0, 200)}`,
      );
    });
  }

  await t.test("require* functions answer not_found for the other tenant's ids", async () => {
    const requires: Array<[string, (q: Queryable) => Promise<unknown>]> = [
      ['contact', (q) => contacts.requireContact(q, OTHER, F.customer_id)],
      ['deal', (q) => deals.requireDeal(q, OTHER, F.proposal_deal_id)],
      ['appointment', (q) => appointments.requireAppointment(q, OTHER, F.upcoming_appointment_id)],
      ['invoice', (q) => invoices.requireInvoice(q, OTHER, F.open_invoice.id)],
      ['payment', (q) => payments.requirePayment(q, OTHER, F.captured_payment.id)],
      ['part', (q) => inventory.requirePart(q, OTHER, F.low_stock_part_id)],
      ['employee', (q) => team.requireEmployee(q, OTHER, F.technician_user_id)],
    ];
    for (const [entity, fn] of requires) {
      await assert.rejects(read(fn), {
        name: 'DomainError',
        code: 'not_found',
        message: new RegExp(`^${entity} \\d+ not found$`),
      });
    }
  });

  await t.test("natural keys shared by both tenants resolve to the caller's own row", async () => {
    await read(async (q) => {
      const inv = await invoices.getInvoiceByNumber(q, OTHER, 4001);
      assert.equal(inv?.company_id, OTHER);
      assert.notEqual(inv.id, (await invoices.getInvoiceByNumber(q, MAIN, 4001))!.id);
      const article = await kb.getKbArticleBySlug(q, OTHER, ids.kb.slug);
      assert.equal(article?.company_id, OTHER);
      assert.notEqual(article.id, ids.kb.id);
      const part = await inventory.getPartBySku(q, OTHER, ids.part.sku);
      assert.ok(part === undefined || (part.company_id === OTHER && part.id !== ids.part.id));
      const droplet = await infrastructure.getDroplet(q, OTHER);
      assert.equal(droplet?.company_id, OTHER);
      assert.notEqual(droplet.id, F.droplet_id);
      const sub = await subscriptions.getSubscription(q, OTHER);
      assert.equal(sub?.company_id, OTHER);
      assert.equal(sub.tier, 'starter');
      const droplet1 = await infrastructure.requireCompanyDroplet(q, MAIN);
      assert.equal(droplet1.id, F.droplet_id);
    });
  });

  await t.test("unfiltered lists and searches return only the caller's rows", async () => {
    await read(async (q) => {
      const own = async (table: string) =>
        Number(
          (await q.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE company_id = ?`, [OTHER]))!.n,
        );
      const pages: Array<[string, Promise<{ items: Array<{ company_id: number }>; total: number }>]> = [
        ['contacts', contacts.searchContacts(q, OTHER, { limit: 200, include_erased: true })],
        ['deals', deals.searchDeals(q, OTHER, { limit: 200 })],
        ['appointments', appointments.searchAppointments(q, OTHER, { limit: 200 })],
        ['invoices', invoices.searchInvoices(q, OTHER, { limit: 200 })],
        ['payments', payments.searchPayments(q, OTHER, { limit: 200 })],
        ['parts', inventory.searchParts(q, OTHER, { limit: 200 })],
        ['kb_articles', kb.searchKbArticles(q, OTHER, { limit: 200 })],
        ['email_outbox', email.searchOutbox(q, OTHER, { limit: 200 })],
      ];
      for (const [table, pending] of pages) {
        const page = await pending;
        assert.equal(page.total, await own(table), `${table} total`);
        assert.equal(page.items.length, page.total);
        assert.ok(
          page.items.every((r) => r.company_id === OTHER),
          `${table} rows all belong to company 2`,
        );
      }
      const lists: Array<[string, Promise<Array<{ company_id: number }>>]> = [
        ['employees', team.listEmployees(q, OTHER)],
        ['technicians', team.listTechnicians(q, OTHER)],
        ['stage histories', deals.listAllStageHistories(q, OTHER)],
        ['low stock', inventory.listLowStockParts(q, OTHER)],
        ['queued email', email.listQueuedEmails(q, OTHER, 500)],
      ];
      for (const [name, pending] of lists) {
        const rows = await pending;
        assert.ok(
          rows.every((r) => r.company_id === OTHER),
          `${name} rows all belong to company 2`,
        );
      }
      const histories = await own('deal_stage_history');
      const counted = (await deals.countStageTransitions(q, OTHER)).reduce((s, r) => s + r.count, 0);
      assert.equal(counted, histories, 'transition counts cover only company 2');
      const availability = await appointments.technicianAvailability(q, OTHER, {
        from: NOW.toISOString(),
        to: new Date(NOW.getTime() + 7 * 86_400_000).toISOString(),
      });
      const techs = (await team.listTechnicians(q, OTHER)).map((e) => e.user_id);
      assert.deepEqual(
        availability.map((a) => a.user_id),
        techs,
      );
      for (const a of availability) {
        for (const b of a.busy)
          assert.equal(
            (await appointments.getAppointment(q, OTHER, b.appointment_id))?.technician_user_id,
            a.user_id,
          );
      }
    });
  });
});

test("company 2 cannot change company 1's rows: every write answers not_found and nothing changes", async (t) => {
  const { store } = await openSeededStore(t);
  const snapshot = () =>
    store.read(
      async (q) =>
        JSON.stringify(await q.all('SELECT * FROM contacts WHERE company_id = ? ORDER BY id', [MAIN])) +
        JSON.stringify(await q.all('SELECT * FROM payments WHERE company_id = ? ORDER BY id', [MAIN])),
    );
  const before = await snapshot();
  const other = await store.read(async (q) => ({
    contact: (await contacts.searchContacts(q, OTHER, { limit: 1 })).items[0]!.id,
    technician: (await team.listTechnicians(q, OTHER))[0]!.user_id,
  }));
  const writes: Array<[string, string, (tx: StoreTx) => Promise<unknown>]> = [
    [
      'updateContact',
      'contact',
      (tx) => contacts.updateContact(tx, OTHER, F.customer_id, { name: 'Hijacked' }, LATER),
    ],
    ['eraseContact', 'contact', (tx) => contacts.eraseContact(tx, OTHER, F.customer_id, LATER)],
    [
      'addNote',
      'contact',
      (tx) => contacts.addNote(tx, OTHER, { contact_id: F.customer_id, body: 'x' }, LATER),
    ],
    [
      'createDeal',
      'contact',
      (tx) =>
        deals.createDeal(tx, OTHER, { contact_id: F.customer_id, title: 'x', amount_cents: 1 }, null, LATER),
    ],
    [
      'createDeal with a foreign owner',
      'employee',
      (tx) =>
        deals.createDeal(
          tx,
          OTHER,
          { contact_id: other.contact, title: 'x', amount_cents: 1 },
          F.owner_user_id,
          LATER,
        ),
    ],
    ['moveDealStage', 'deal', (tx) => deals.moveDealStage(tx, OTHER, F.proposal_deal_id, 'won', null, LATER)],
    [
      'updateDeal',
      'deal',
      (tx) => deals.updateDeal(tx, OTHER, F.proposal_deal_id, { amount_cents: 1 }, LATER),
    ],
    ['deleteDeal', 'deal', (tx) => deals.deleteDeal(tx, OTHER, F.proposal_deal_id)],
    [
      'scheduleAppointment with a foreign technician',
      'technician',
      (tx) =>
        appointments.scheduleAppointment(
          tx,
          OTHER,
          {
            contact_id: other.contact,
            technician_user_id: F.technician_user_id,
            service: 'x',
            starts_at: '2026-08-01T09:00:00-06:00',
            ends_at: '2026-08-01T10:00:00-06:00',
          },
          LATER,
        ),
    ],
    [
      'scheduleAppointment for a foreign contact',
      'contact',
      (tx) =>
        appointments.scheduleAppointment(
          tx,
          OTHER,
          {
            contact_id: F.customer_id,
            technician_user_id: other.technician,
            service: 'x',
            starts_at: '2026-08-01T09:00:00-06:00',
            ends_at: '2026-08-01T10:00:00-06:00',
          },
          LATER,
        ),
    ],
    [
      'rescheduleAppointment',
      'appointment',
      (tx) =>
        appointments.rescheduleAppointment(
          tx,
          OTHER,
          F.upcoming_appointment_id,
          { starts_at: '2026-08-01T09:00:00-06:00' },
          LATER,
        ),
    ],
    [
      'cancelAppointment',
      'appointment',
      (tx) => appointments.cancelAppointment(tx, OTHER, F.upcoming_appointment_id, null, LATER),
    ],
    [
      'reinstateAppointment',
      'appointment',
      (tx) => appointments.reinstateAppointment(tx, OTHER, F.upcoming_appointment_id, LATER),
    ],
    [
      'recordAppointmentOutcome',
      'appointment',
      (tx) => appointments.recordAppointmentOutcome(tx, OTHER, F.upcoming_appointment_id, 'completed', LATER),
    ],
    [
      'createInvoice',
      'contact',
      (tx) =>
        invoices.createInvoice(
          tx,
          OTHER,
          { contact_id: F.customer_id, lines: [{ description: 'x', quantity: 1, unit_price_cents: 1 }] },
          LATER,
        ),
    ],
    ['issueInvoice', 'invoice', (tx) => invoices.issueInvoice(tx, OTHER, F.open_invoice.id, LATER)],
    ['voidInvoice', 'invoice', (tx) => invoices.voidInvoice(tx, OTHER, F.open_invoice.id, LATER)],
    [
      'recordCharge',
      'invoice',
      (tx) => payments.recordCharge(tx, OTHER, { invoice_id: F.open_invoice.id, amount_cents: 100 }, LATER),
    ],
    [
      'recordRefund',
      'payment',
      (tx) =>
        payments.recordRefund(tx, OTHER, { payment_id: F.captured_payment.id, amount_cents: 100 }, LATER),
    ],
    ['adjustStock', 'part', (tx) => inventory.adjustStock(tx, OTHER, F.low_stock_part_id, 5, LATER)],
    [
      'recordPartUsage',
      'appointment',
      (tx) =>
        inventory.recordPartUsage(
          tx,
          OTHER,
          { appointment_id: F.upcoming_appointment_id, part_id: F.low_stock_part_id, quantity: 1 },
          LATER,
        ),
    ],
    [
      'setEmployeeRole',
      'employee',
      (tx) => team.setEmployeeRole(tx, OTHER, F.technician_user_id, 'admin', LATER),
    ],
    [
      'setEmployeeActive',
      'employee',
      (tx) => team.setEmployeeActive(tx, OTHER, F.technician_user_id, false, LATER),
    ],
    ['deleteKbArticle', 'kb article', (tx) => kb.deleteKbArticle(tx, OTHER, 1)],
    ['markEmailSent', 'email', (tx) => email.markEmailSent(tx, OTHER, 1, LATER)],
    ['cancelQueuedEmail', 'email', (tx) => email.cancelQueuedEmail(tx, OTHER, 1, LATER)],
    [
      'resizeDroplet',
      'droplet',
      (tx) => infrastructure.resizeDroplet(tx, OTHER, F.droplet_id, 'LARGE', LATER),
    ],
    ['scaleWorkers', 'droplet', (tx) => infrastructure.scaleWorkers(tx, OTHER, F.droplet_id, 1, LATER)],
  ];
  for (const [name, entity, fn] of writes) {
    await t.test(name, async () => {
      await assert.rejects(store.write(fn), {
        name: 'DomainError',
        code: 'not_found',
        message: new RegExp(`^${entity} \\d+ not found$`),
      });
    });
  }
  assert.equal(await snapshot(), before);
  const droplet = await store.read((q) => infrastructure.getDropletById(q, MAIN, F.droplet_id));
  assert.deepEqual([droplet?.size, droplet?.workers], ['SMALL', 2]);
});
