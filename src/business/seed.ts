/**
 * Deterministic demo data for the home-services (plumbing / HVAC) business pack.
 *
 * `seedDemo(tx, options)` fills the pack's tables for tenants the runtime already created: the
 * first company gets the full data set (~200 contacts, ~80 deals with stage histories, ~500
 * appointments, ~300 invoices with payments and refunds, 40 parts, 12 employees, 25 KB
 * articles, emails, a droplet and a subscription); every later company about a quarter of it.
 *
 * Determinism: one `Faker` instance (locales en_US, en) re-seeded per company with
 * `[seed, company position]`, no `Math.random`, no wall clock. Every generated time is an offset
 * from the local midnight (UTC−6, the demo's fixed business clock) of `options.now`, and the
 * generation never branches on the weekday, so two runs with the same seed write identical rows
 * whatever `now` is, apart from the timestamps themselves; the ids are identical too when the
 * pack's tables start empty (companies are inserted one after the other, each table in
 * generation order). That is what makes {@link DEMO_FIXTURES} hold for any clock.
 *
 * Historical domain events go to `options.emit`, in chronological order per company, after the
 * company's rows are written (they carry the real ids). Everything happens inside the caller's
 * one transaction, with multi-row INSERTs (spec/store.md §portable-sql: `?` placeholders,
 * RETURNING; ids are read back in ascending order, which on both engines is VALUES order).
 */
import type { Queryable } from '../store/store.ts';
import { BUSINESS_TABLES, type BusinessTable, type DealStage } from './schema.ts';
import { type PEmployee, type CompanyPlan } from './seed/plan.ts';
import {
  DEMO_SEED,
  type SeedOptions,
  type SeededCompany,
  type DemoFixtures,
  type SeedResult,
} from './seed/types.ts';
import { CompanyGenerator, loadFaker } from './seed/generator.ts';
import { Writer, planRowCount, type PlanIds, writePlan } from './seed/write-plan.ts';
import { buildEvents } from './seed/events.ts';
import { planVoiceSocial, voiceSocialRowCount, writeVoiceSocial } from './seed/voice-social.ts';

export {
  DEMO_FIXTURES,
  DEMO_SEED,
  DEMO_UTC_OFFSET_MINUTES,
  type DemoFixtures,
  type SeedCompany,
  type SeedOptions,
  type SeedResult,
  type SeededCompany,
  type SeededEmployee,
} from './seed/types.ts';

/** Ids of the right shapes, all 0: lets `buildEvents` count a plan's events before writing. */
function placeholderIds(p: CompanyPlan): PlanIds {
  const zeros = (n: number) => new Array<number>(n).fill(0);
  return {
    contacts: zeros(p.contacts.length),
    paymentMethods: zeros(p.paymentMethods.length),
    deals: zeros(p.deals.length),
    history: p.deals.map((d) => zeros(d.history.length)),
    appointments: zeros(p.appointments.length),
    parts: zeros(p.parts.length),
    usage: zeros(p.usage.length),
    invoices: zeros(p.invoices.length),
    payments: zeros(p.payments.length),
    refunds: zeros(p.refunds.length),
    notes: zeros(p.notes.length),
    kb: zeros(p.kb.length),
    emails: zeros(p.emails.length),
    droplet: 0,
    subscription: 0,
  };
}

function resolveFixtures(p: CompanyPlan, ids: PlanIds): DemoFixtures {
  const fx = p.fixture!;
  const customer = fx.contact;
  const open = new Set<DealStage>(['new', 'qualified', 'estimate_scheduled', 'proposal_sent', 'negotiation']);
  const openDeals = p.deals
    .map((d, i) => ({ d, id: ids.deals[i]! }))
    .filter(({ d }) => d.contact === customer && open.has(d.history[d.history.length - 1]!.to))
    .map(({ id }) => id)
    .sort((a, b) => a - b);
  const openInvoice = p.invoices.findIndex((i) => i.fixture === 'open');
  const payment = p.payments.findIndex((x) => x.fixture);
  const upcoming = p.appointments.findIndex((a) => a.fixture === 'upcoming');
  const lowStock = p.parts.findIndex((x) => x.quantity_on_hand <= x.reorder_point);
  const user = (pred: (e: PEmployee) => boolean) => p.employees.find(pred)!.user_id;
  return {
    customer_id: ids.contacts[customer]!,
    open_deal_ids: openDeals,
    proposal_deal_id: ids.deals[fx.proposalDeal]!,
    open_invoice: {
      id: ids.invoices[openInvoice]!,
      number: p.invoices[openInvoice]!.number,
      amount_cents: p.invoices[openInvoice]!.amount_cents,
    },
    captured_payment: {
      id: ids.payments[payment]!,
      charge_ref: p.payments[payment]!.charge_ref,
      amount_cents: p.payments[payment]!.amount_cents,
      invoice_id: ids.invoices[p.payments[payment]!.invoice]!,
    },
    upcoming_appointment_id: ids.appointments[upcoming]!,
    droplet_id: ids.droplet,
    low_stock_part_id: ids.parts[lowStock]!,
    owner_user_id: user((e) => e.role === 'owner'),
    admin_user_id: user((e) => e.role === 'admin'),
    employee_user_id: user((e) => e.role === 'employee'),
    read_only_user_id: user((e) => e.role === 'read_only'),
    technician_user_id: user((e) => e.title === 'technician'),
  };
}

/** True when the company already has demo data (employees written by a previous seeding). */
export async function isDemoSeeded(q: Queryable, companyId: number): Promise<boolean> {
  const row = await q.get('SELECT id FROM employees WHERE company_id = ? LIMIT 1', [companyId]);
  return row !== undefined;
}

/**
 * Seed the demo business for the given tenants inside the caller's write transaction (apply
 * `businessMigrations` first). Deterministic for a given `seed` (see the module comment).
 * Throws Error when `companies` is empty, a company id repeats, or a company already has demo
 * data (nothing is written then: the caller's transaction rolls back).
 */
export async function seedDemo(tx: Queryable, options: SeedOptions): Promise<SeedResult> {
  const { companies, now } = options;
  if (companies.length === 0) throw new Error('seedDemo: give at least one company');
  if (new Set(companies.map((c) => c.company_id)).size !== companies.length)
    throw new Error('seedDemo: company ids must be distinct');
  if (Number.isNaN(now.getTime())) throw new Error('seedDemo: now is not a valid date');
  for (const c of companies) {
    if (await isDemoSeeded(tx, c.company_id))
      throw new Error(`seedDemo: company ${c.company_id} already has demo data`);
  }
  const seed = options.seed ?? DEMO_SEED;
  const faker = await loadFaker();
  const plans = companies.map((c, i) => new CompanyGenerator(c, i, seed, now, faker).generate());
  const extras = plans.map((p, i) => planVoiceSocial(p, i, seed, now));
  // Progress units: rows written plus events emitted (counted on a build with placeholder ids).
  const total = plans.reduce(
    (s, p, i) =>
      s + planRowCount(p) + voiceSocialRowCount(extras[i]!) + buildEvents(p, placeholderIds(p)).length,
    0,
  );
  const writer = new Writer(tx, total, options.onProgress);
  const results: SeededCompany[] = [];
  let fixtures: DemoFixtures | undefined;
  for (const [i, plan] of plans.entries()) {
    const ids = await writePlan(writer, plan);
    const extraCounts = await writeVoiceSocial(writer, plan.company.company_id, extras[i]!, ids.contacts);
    const list = buildEvents(plan, ids);
    for (const event of list) {
      await options.emit?.(plan.company.company_id, event);
      writer.advance(1);
    }
    if (i === 0) fixtures = resolveFixtures(plan, ids);
    const counts = Object.fromEntries(BUSINESS_TABLES.map((t) => [t, 0])) as Record<BusinessTable, number>;
    counts.employees = plan.employees.length;
    counts.contacts = plan.contacts.length;
    counts.payment_methods = plan.paymentMethods.length;
    counts.deals = plan.deals.length;
    counts.deal_stage_history = ids.history.reduce((s, h) => s + h.length, 0);
    counts.appointments = plan.appointments.length;
    counts.parts = plan.parts.length;
    counts.part_usage = plan.usage.length;
    counts.invoices = plan.invoices.length;
    counts.invoice_lines = plan.invoices.reduce((s, inv) => s + inv.lines.length, 0);
    counts.payments = plan.payments.length;
    counts.refunds = plan.refunds.length;
    counts.notes = plan.notes.length;
    counts.kb_articles = plan.kb.length;
    counts.email_outbox = plan.emails.length;
    counts.droplets = 1;
    counts.plan_subscriptions = 1;
    Object.assign(counts, extraCounts);
    results.push({
      company_id: plan.company.company_id,
      name: plan.company.name,
      counts,
      events: list.length,
      employees: plan.employees.map((e) => ({
        user_id: e.user_id,
        name: e.name,
        email: e.email,
        role: e.role,
        title: e.title,
      })),
    });
  }
  return { companies: results, fixtures: fixtures! };
}
