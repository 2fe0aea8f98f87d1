import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import type { Queryable } from '../../src/store/store.ts';
import {
  BUSINESS_TABLES,
  EMPLOYEE_ROLES,
  OPEN_DEAL_STAGES,
  type DealStage,
} from '../../src/business/schema.ts';
import { DEMO_FIXTURES, seedDemo } from '../../src/business/seed.ts';
import {
  COMPANIES,
  MAIN,
  NOW,
  OTHER,
  openBusinessStore,
  openFreshlySeededStore,
  openSeededStore,
} from './seeded-store.ts';

async function tableHashes(q: Queryable): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const table of BUSINESS_TABLES) {
    const rows = await q.all(`SELECT * FROM ${table} ORDER BY id`);
    out[table] = createHash('sha256').update(JSON.stringify(rows)).digest('hex');
  }
  return out;
}

const count = async (q: Queryable, sql: string, params: unknown[] = []): Promise<number> =>
  Number((await q.get<{ n: number }>(sql, params))!.n);

test('seeding twice from scratch writes identical rows and emits identical events', async (t) => {
  const a = await openFreshlySeededStore(t);
  const b = await openFreshlySeededStore(t);
  const ha = await a.store.read(tableHashes);
  const hb = await b.store.read(tableHashes);
  assert.deepEqual(ha, hb);
  assert.deepEqual(a.events, b.events);
  assert.deepEqual(a.result, b.result);
  const other = await openFreshlySeededStore(t, { seed: 7 });
  assert.notDeepEqual(await other.store.read(tableHashes), ha, 'another seed gives other data');
});

test('DEMO_FIXTURES are what a seeding into empty tables gives, whatever the clock', async (t) => {
  const now = await openFreshlySeededStore(t);
  assert.deepEqual(now.result.fixtures, DEMO_FIXTURES);
  const later = await openFreshlySeededStore(t, { now: new Date('2027-01-09T03:17:42Z') });
  assert.deepEqual(later.result.fixtures, DEMO_FIXTURES);
});

test('the fixtures point at rows with the promised properties', async (t) => {
  const { store } = await openSeededStore(t);
  const f = DEMO_FIXTURES;
  await store.read(async (q) => {
    const contact = await q.get<{ kind: string; tags: string; erased_at: string | null }>(
      'SELECT kind, tags, erased_at FROM contacts WHERE company_id = ? AND id = ?',
      [MAIN, f.customer_id],
    );
    assert.equal(contact?.kind, 'commercial');
    assert.ok(JSON.parse(contact.tags).includes('vip'));
    const open = await q.all<{ id: number }>(
      `SELECT id FROM deals WHERE company_id = ? AND contact_id = ? AND stage IN (${OPEN_DEAL_STAGES.map(() => '?').join(', ')}) ORDER BY id`,
      [MAIN, f.customer_id, ...OPEN_DEAL_STAGES],
    );
    assert.deepEqual(
      open.map((r) => r.id),
      f.open_deal_ids,
    );
    assert.ok(f.open_deal_ids.length >= 2);
    const proposal = await q.get<{ stage: string; contact_id: number }>(
      'SELECT stage, contact_id FROM deals WHERE company_id = ? AND id = ?',
      [MAIN, f.proposal_deal_id],
    );
    assert.deepEqual({ ...proposal }, { stage: 'proposal_sent', contact_id: f.customer_id });
    const invoice = await q.get<{
      status: string;
      contact_id: number;
      number: number;
      amount_cents: number;
      paid_cents: number;
    }>(
      'SELECT status, contact_id, number, amount_cents, paid_cents FROM invoices WHERE company_id = ? AND id = ?',
      [MAIN, f.open_invoice.id],
    );
    assert.deepEqual(
      { ...invoice },
      {
        status: 'open',
        contact_id: f.customer_id,
        number: f.open_invoice.number,
        amount_cents: f.open_invoice.amount_cents,
        paid_cents: 0,
      },
    );
    const payment = await q.get<{
      status: string;
      charge_ref: string;
      amount_cents: number;
      refunded_cents: number;
      method: string;
      contact_id: number;
      invoice_id: number;
    }>(
      `SELECT p.status, p.charge_ref, p.amount_cents, p.refunded_cents, p.method, p.invoice_id, i.contact_id
         FROM payments p JOIN invoices i ON i.company_id = p.company_id AND i.id = p.invoice_id WHERE p.company_id = ? AND p.id = ?`,
      [MAIN, f.captured_payment.id],
    );
    assert.deepEqual(
      { ...payment },
      {
        status: 'captured',
        charge_ref: f.captured_payment.charge_ref,
        amount_cents: f.captured_payment.amount_cents,
        refunded_cents: 0,
        method: 'card',
        invoice_id: f.captured_payment.invoice_id,
        contact_id: f.customer_id,
      },
    );
    assert.match(f.captured_payment.charge_ref, /^ch_[A-Za-z0-9]{24}$/);
    const appt = await q.get<{ status: string; contact_id: number; starts_at: string }>(
      'SELECT status, contact_id, starts_at FROM appointments WHERE company_id = ? AND id = ?',
      [MAIN, f.upcoming_appointment_id],
    );
    assert.equal(appt?.status, 'scheduled');
    assert.equal(appt.contact_id, f.customer_id);
    assert.ok(appt.starts_at > NOW.toISOString());
    const part = await q.get<{ quantity_on_hand: number; reorder_point: number }>(
      'SELECT quantity_on_hand, reorder_point FROM parts WHERE company_id = ? AND id = ?',
      [MAIN, f.low_stock_part_id],
    );
    assert.ok(part !== undefined && part.quantity_on_hand <= part.reorder_point);
    assert.equal(
      await count(q, 'SELECT COUNT(*) AS n FROM droplets WHERE company_id = ? AND id = ?', [
        MAIN,
        f.droplet_id,
      ]),
      1,
    );
    const role = async (userId: number) =>
      (await q.get<{ role: string; title: string }>(
        'SELECT role, title FROM employees WHERE company_id = ? AND user_id = ?',
        [MAIN, userId],
      ))!;
    assert.equal((await role(f.owner_user_id)).role, 'owner');
    assert.equal(f.owner_user_id, 1);
    assert.equal((await role(f.admin_user_id)).role, 'admin');
    assert.equal((await role(f.employee_user_id)).role, 'employee');
    assert.equal((await role(f.read_only_user_id)).role, 'read_only');
    assert.equal((await role(f.technician_user_id)).title, 'technician');
  });
});

test('the main company gets the full data set and the second about a quarter of it', async (t) => {
  const { store, result } = await openSeededStore(t);
  await store.read(async (q) => {
    const n = (table: string, company: number, where = '') =>
      count(q, `SELECT COUNT(*) AS n FROM ${table} WHERE company_id = ? ${where}`, [company]);
    assert.equal(await n('contacts', MAIN), 200);
    assert.equal(await n('deals', MAIN), 80);
    assert.equal(await n('appointments', MAIN), 500);
    assert.ok(
      (await n('appointments', MAIN, `AND starts_at < '${NOW.toISOString()}'`)) >= 350,
      'past visits',
    );
    assert.ok(
      (await n('appointments', MAIN, `AND starts_at > '${NOW.toISOString()}'`)) >= 80,
      'future visits',
    );
    const invoices = await n('invoices', MAIN);
    assert.ok(invoices >= 250 && invoices <= 350, `~300 invoices (${invoices})`);
    assert.ok((await n('payments', MAIN)) >= 250);
    assert.ok((await n('payments', MAIN, "AND status = 'partially_refunded'")) >= 3);
    assert.ok((await n('payments', MAIN, "AND status = 'refunded'")) >= 1);
    assert.ok((await n('payments', MAIN, "AND status = 'failed'")) >= 1);
    assert.equal(await n('parts', MAIN), 40);
    assert.ok(
      (await n('parts', MAIN, 'AND quantity_on_hand <= reorder_point')) >= 3,
      'some parts are low on stock',
    );
    assert.equal(await n('employees', MAIN), 12);
    assert.equal(await n('kb_articles', MAIN), 25);
    assert.ok((await n('email_outbox', MAIN, "AND status = 'queued'")) >= 1);
    assert.ok((await n('email_outbox', MAIN, "AND status = 'sent'")) >= 50);
    assert.equal(await n('droplets', MAIN), 1);
    assert.equal(await n('plan_subscriptions', MAIN), 1);
    for (const open of OPEN_DEAL_STAGES)
      assert.ok((await n('deals', MAIN, `AND stage = '${open}'`)) >= 1, `an open deal in ${open}`);
    for (const closed of ['won', 'lost'])
      assert.ok((await n('deals', MAIN, `AND stage = '${closed}'`)) >= 10, `${closed} deals`);

    assert.equal(await n('contacts', OTHER), 50);
    assert.equal(await n('deals', OTHER), 20);
    assert.equal(await n('appointments', OTHER), 125);
    for (const table of BUSINESS_TABLES) assert.ok((await n(table, OTHER)) > 0, `company 2 has ${table}`);
    for (const company of [MAIN, OTHER]) {
      const roles = await q.all<{ role: string }>(
        'SELECT DISTINCT role FROM employees WHERE company_id = ? ORDER BY role',
        [company],
      );
      assert.deepEqual(
        roles.map((r) => r.role),
        [...EMPLOYEE_ROLES].sort(),
        `company ${company} covers every role`,
      );
    }
    const owner = await q.get<{ role: string }>(
      'SELECT role FROM employees WHERE company_id = ? AND user_id = 1',
      [MAIN],
    );
    assert.equal(owner?.role, 'owner');
    for (const c of result.companies) {
      for (const table of BUSINESS_TABLES)
        assert.equal(c.counts[table], await n(table, c.company_id), `${table} count of ${c.company_id}`);
    }
  });
});

test('seeded rows are consistent', async (t) => {
  const { store } = await openSeededStore(t);
  const zero = async (label: string, sql: string, params: unknown[] = []) => {
    const n = await store.read((q) => count(q, sql, params));
    assert.equal(n, 0, label);
  };

  await t.test('every reference stays within the company', async () => {
    await zero(
      'payments → invoices',
      `SELECT COUNT(*) AS n FROM payments p LEFT JOIN invoices i ON i.id = p.invoice_id AND i.company_id = p.company_id WHERE i.id IS NULL`,
    );
    await zero(
      'refunds → payments',
      `SELECT COUNT(*) AS n FROM refunds r LEFT JOIN payments p ON p.id = r.payment_id AND p.company_id = r.company_id WHERE p.id IS NULL`,
    );
    await zero(
      'deals → contacts',
      `SELECT COUNT(*) AS n FROM deals d LEFT JOIN contacts c ON c.id = d.contact_id AND c.company_id = d.company_id WHERE c.id IS NULL`,
    );
    await zero(
      'appointments → employees',
      `SELECT COUNT(*) AS n FROM appointments a LEFT JOIN employees e ON e.user_id = a.technician_user_id AND e.company_id = a.company_id WHERE e.id IS NULL OR e.title <> 'technician'`,
    );
    await zero(
      'invoices → contacts',
      `SELECT COUNT(*) AS n FROM invoices i LEFT JOIN contacts c ON c.id = i.contact_id AND c.company_id = i.company_id WHERE c.id IS NULL`,
    );
    await zero(
      'payment methods belong to the invoice contact',
      `SELECT COUNT(*) AS n FROM payments p JOIN invoices i ON i.id = p.invoice_id AND i.company_id = p.company_id
         JOIN payment_methods m ON m.id = p.payment_method_id AND m.company_id = p.company_id WHERE m.contact_id <> i.contact_id`,
    );
  });

  await t.test('money adds up: lines, payments, refunds', async () => {
    await zero(
      'invoice amount = Σ lines',
      `SELECT COUNT(*) AS n FROM invoices i WHERE i.amount_cents <> (SELECT COALESCE(SUM(l.amount_cents), 0) FROM invoice_lines l WHERE l.company_id = i.company_id AND l.invoice_id = i.id)`,
    );
    await zero(
      'line amount = quantity × unit price',
      'SELECT COUNT(*) AS n FROM invoice_lines WHERE amount_cents <> quantity * unit_price_cents',
    );
    await zero(
      'paid_cents = Σ non-failed payments',
      `SELECT COUNT(*) AS n FROM invoices i WHERE i.paid_cents <> (SELECT COALESCE(SUM(p.amount_cents), 0) FROM payments p WHERE p.company_id = i.company_id AND p.invoice_id = i.id AND p.status <> 'failed')`,
    );
    await zero(
      'invoice status follows paid_cents',
      `SELECT COUNT(*) AS n FROM invoices WHERE
         (status = 'paid' AND (paid_cents <> amount_cents OR paid_at IS NULL)) OR
         (status = 'partially_paid' AND (paid_cents = 0 OR paid_cents >= amount_cents)) OR
         (status IN ('open', 'draft', 'void') AND paid_cents <> 0) OR
         (status <> 'paid' AND paid_at IS NOT NULL) OR
         (status = 'draft' AND issued_at IS NOT NULL) OR (status <> 'draft' AND issued_at IS NULL)`,
    );
    await zero(
      'refunded_cents = Σ refunds ≤ amount',
      `SELECT COUNT(*) AS n FROM payments p WHERE p.refunded_cents > p.amount_cents
         OR p.refunded_cents <> (SELECT COALESCE(SUM(r.amount_cents), 0) FROM refunds r WHERE r.company_id = p.company_id AND r.payment_id = p.id)`,
    );
    await zero(
      'payment status follows refunded_cents',
      `SELECT COUNT(*) AS n FROM payments WHERE
         (status = 'captured' AND refunded_cents <> 0) OR
         (status = 'partially_refunded' AND (refunded_cents = 0 OR refunded_cents >= amount_cents)) OR
         (status = 'refunded' AND refunded_cents <> amount_cents) OR
         (status = 'failed' AND refunded_cents <> 0)`,
    );
    await zero(
      'refunds come after their payment',
      `SELECT COUNT(*) AS n FROM refunds r JOIN payments p ON p.id = r.payment_id AND p.company_id = r.company_id WHERE r.created_at <= p.created_at`,
    );
    await zero(
      'payments come after the invoice was issued',
      `SELECT COUNT(*) AS n FROM payments p JOIN invoices i ON i.id = p.invoice_id AND i.company_id = p.company_id WHERE p.created_at < i.issued_at`,
    );
    const numbers = await store.read((q) =>
      q.all<{ company_id: number; lo: number; hi: number; n: number }>(
        'SELECT company_id, MIN(number) AS lo, MAX(number) AS hi, COUNT(*) AS n FROM invoices GROUP BY company_id',
      ),
    );
    for (const r of numbers)
      assert.deepEqual(
        [r.lo, r.hi],
        [4001, 4000 + r.n],
        `invoice numbers of company ${r.company_id} run from 4001 without gaps`,
      );
  });

  await t.test('no technician is double-booked', async () => {
    await zero(
      'overlapping visits of one technician',
      `SELECT COUNT(*) AS n FROM appointments a JOIN appointments b
         ON b.company_id = a.company_id AND b.technician_user_id = a.technician_user_id AND b.id > a.id
        WHERE a.status <> 'cancelled' AND b.status <> 'cancelled' AND a.starts_at < b.ends_at AND b.starts_at < a.ends_at`,
    );
    await zero(
      'past visits are closed, future ones open',
      `SELECT COUNT(*) AS n FROM appointments WHERE (starts_at > ? AND status IN ('completed', 'no_show'))`,
      [NOW.toISOString()],
    );
    await zero(
      'visits start after the contact was created',
      `SELECT COUNT(*) AS n FROM appointments a JOIN contacts c ON c.id = a.contact_id WHERE a.starts_at <= c.created_at OR a.created_at < c.created_at`,
    );
    await zero(
      'everything recorded happened before now',
      `SELECT COUNT(*) AS n FROM appointments WHERE created_at > ? OR updated_at > ?`,
      [NOW.toISOString(), NOW.toISOString()],
    );
  });

  await t.test('deal stage histories are consistent chains', async () => {
    const { deals, history } = await store.read(async (q) => ({
      deals: await q.all<{
        id: number;
        company_id: number;
        stage: DealStage;
        created_at: string;
        updated_at: string;
        closed_at: string | null;
      }>('SELECT id, company_id, stage, created_at, updated_at, closed_at FROM deals'),
      history: await q.all<{
        deal_id: number;
        company_id: number;
        from_stage: DealStage | null;
        to_stage: DealStage;
        changed_at: string;
        changed_by_user_id: number;
      }>(
        'SELECT deal_id, company_id, from_stage, to_stage, changed_at, changed_by_user_id FROM deal_stage_history ORDER BY deal_id, changed_at, id',
      ),
    }));
    const byDeal = new Map<number, typeof history>();
    for (const h of history) byDeal.set(h.deal_id, [...(byDeal.get(h.deal_id) ?? []), h]);
    let transitions = 0;
    for (const d of deals) {
      const chain = byDeal.get(d.id) ?? [];
      assert.ok(chain.length >= 1, `deal ${d.id} has history`);
      assert.equal(chain[0]!.from_stage, null, `deal ${d.id} starts with its creation`);
      assert.equal(chain[0]!.to_stage, 'new');
      assert.equal(chain[0]!.changed_at, d.created_at);
      for (let i = 1; i < chain.length; i++) {
        assert.equal(
          chain[i]!.from_stage,
          chain[i - 1]!.to_stage,
          `deal ${d.id} step ${i} continues the chain`,
        );
        assert.notEqual(chain[i]!.from_stage, chain[i]!.to_stage);
        assert.ok(chain[i]!.changed_at >= chain[i - 1]!.changed_at);
        transitions++;
      }
      const last = chain[chain.length - 1]!;
      assert.equal(last.to_stage, d.stage, `deal ${d.id} ends in its stage`);
      assert.equal(last.changed_at, d.updated_at);
      assert.equal(d.closed_at, d.stage === 'won' || d.stage === 'lost' ? last.changed_at : null);
      for (const h of chain) assert.equal(h.company_id, d.company_id);
    }
    assert.ok(transitions >= 150, `enough transitions to learn from (${transitions})`);
  });

  await t.test('contact statuses follow their activity', async () => {
    await zero(
      'active or inactive contacts had a completed visit or a payment; leads none',
      `SELECT COUNT(*) AS n FROM contacts c WHERE (c.status = 'lead') = (
         EXISTS (SELECT 1 FROM appointments a WHERE a.company_id = c.company_id AND a.contact_id = c.id AND a.status = 'completed')
         OR EXISTS (SELECT 1 FROM payments p JOIN invoices i ON i.company_id = p.company_id AND i.id = p.invoice_id
                     WHERE i.company_id = c.company_id AND i.contact_id = c.id AND p.status <> 'failed'))`,
    );
  });
});

test('historical events are chronological per company and name real rows of that company', async (t) => {
  const { store, events, result } = await openSeededStore(t);
  for (const c of result.companies) {
    const mine = events.filter((e) => e.companyId === c.company_id).map((e) => e.event);
    assert.equal(mine.length, c.events);
    for (let i = 1; i < mine.length; i++)
      assert.ok(
        mine[i - 1]!.occurred_at <= mine[i]!.occurred_at,
        `event ${i} of company ${c.company_id} is in order`,
      );
    for (const e of mine) {
      assert.match(e.occurred_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.ok(e.occurred_at <= NOW.toISOString(), `${e.type} happened before now`);
      assert.match(e.actor, /^(user:\d+|customer:\d+|system:[a-z_]+)$/);
    }
    const tables: Record<string, string> = {
      contact: 'contacts',
      deal: 'deals',
      appointment: 'appointments',
      invoice: 'invoices',
      payment: 'payments',
      refund: 'refunds',
      part: 'parts',
      email: 'email_outbox',
      note: 'notes',
      kb_article: 'kb_articles',
      droplet: 'droplets',
      subscription: 'plan_subscriptions',
    };
    await store.read(async (q) => {
      for (const e of mine) {
        if (e.entity_type === 'employee') {
          assert.equal(
            await count(q, 'SELECT COUNT(*) AS n FROM employees WHERE company_id = ? AND user_id = ?', [
              c.company_id,
              e.entity_id,
            ]),
            1,
          );
          continue;
        }
        const table = tables[e.entity_type];
        assert.ok(table, `known entity type ${e.entity_type}`);
        assert.equal(
          await count(q, `SELECT COUNT(*) AS n FROM ${table} WHERE company_id = ? AND id = ?`, [
            c.company_id,
            e.entity_id,
          ]),
          1,
          `${e.type} ${e.entity_id}`,
        );
      }
      const changes = await count(
        q,
        'SELECT COUNT(*) AS n FROM deal_stage_history WHERE company_id = ? AND from_stage IS NOT NULL',
        [c.company_id],
      );
      assert.equal(mine.filter((e) => e.type === 'deal.stage_changed').length, changes);
      const captured = await count(
        q,
        "SELECT COUNT(*) AS n FROM payments WHERE company_id = ? AND status <> 'failed'",
        [c.company_id],
      );
      assert.equal(mine.filter((e) => e.type === 'payment.captured').length, captured);
    });
    const types = new Set(mine.map((e) => e.type));
    for (const type of [
      'contact.created',
      'deal.created',
      'deal.stage_changed',
      'appointment.scheduled',
      'invoice.issued',
      'payment.captured',
      'refund.issued',
      'email.sent',
    ]) {
      assert.ok(types.has(type as never), `company ${c.company_id} has ${type} events`);
    }
  }
});

test('progress runs monotonically up to its total', async (t) => {
  const calls: Array<[number, number]> = [];
  await openFreshlySeededStore(t, { onProgress: (done, total) => calls.push([done, total]) });
  assert.ok(calls.length > 10);
  const total = calls[0]![1];
  for (let i = 1; i < calls.length; i++) {
    assert.equal(calls[i]![1], total);
    assert.ok(calls[i]![0] > calls[i - 1]![0]);
  }
  assert.equal(calls[calls.length - 1]![0], total);
});

test('seeding refuses a company that already has demo data and writes nothing', async (t) => {
  const { store } = await openBusinessStore(t);
  await store.write((tx) => seedDemo(tx, { companies: [COMPANIES[1]!], now: NOW }));
  const before = await store.read((q) => count(q, 'SELECT COUNT(*) AS n FROM contacts'));
  await assert.rejects(
    store.write((tx) => seedDemo(tx, { companies: COMPANIES, now: NOW })),
    /company 2 already has demo data/,
  );
  assert.equal(await store.read((q) => count(q, 'SELECT COUNT(*) AS n FROM contacts')), before);
  await assert.rejects(
    store.write((tx) => seedDemo(tx, { companies: [], now: NOW })),
    /at least one company/,
  );
});
