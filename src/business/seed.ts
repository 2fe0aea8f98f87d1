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
import type { Faker } from '@faker-js/faker';
import type { Queryable } from '../store/store.ts';
import { processingFeeCents, refundedFeeCents } from './data/payments.ts';
import { slugify } from './data/kb.ts';
import { num } from './data/row-values.ts';
import {
  APPOINTMENT_NOTES,
  BANKS,
  CARD_BRANDS,
  DEAL_TYPES,
  KB_ARTICLES,
  NOTE_TEMPLATES,
  PART_LOCATIONS,
  PARTS,
  REFUND_REASONS,
  REGIONS,
  SERVICES,
  type DealType,
  type ServiceType,
  type Trade,
} from './demo-catalog.ts';
import type { DomainEvent, DomainEventType, EventActor } from './domain-event.ts';
import {
  BUSINESS_TABLES,
  DROPLET_SIZES,
  TIERS,
  type AppointmentStatus,
  type BusinessTable,
  type ContactKind,
  type ContactStatus,
  type DealStage,
  type DropletSizeName,
  type EmployeeRole,
  type EmployeeTitle,
  type InvoiceStatus,
  type PaymentMethodKind,
  type PaymentStatus,
  type SubscriptionTier,
} from './schema.ts';
import { FIRST_INVOICE_NUMBER } from './data/invoices.ts';

/** The default faker seed of the demo. */
export const DEMO_SEED = 20260523;

/** The demo's fixed business clock offset: UTC−6 (no daylight-saving changes). */
export const DEMO_UTC_OFFSET_MINUTES = -360;

export interface SeedCompany {
  company_id: number;
  name: string;
  tier: SubscriptionTier;
}

export interface SeedOptions {
  /** Tenants created by the runtime; the first one is the main (full-size) company. */
  companies: SeedCompany[];
  /** The base clock: history lies before it, scheduled appointments after it. */
  now: Date;
  /** Faker seed; default {@link DEMO_SEED}. */
  seed?: number;
  /** Receives each company's historical events, chronological per company. */
  emit?: (companyId: number, event: DomainEvent) => void | Promise<void>;
  /** Called as rows are written and events emitted: units done and total units. */
  onProgress?: (done: number, total: number) => void;
}

export interface SeededEmployee {
  user_id: number;
  name: string;
  email: string;
  role: EmployeeRole;
  title: EmployeeTitle;
}

export interface SeededCompany {
  company_id: number;
  name: string;
  /** Rows written per table. */
  counts: Record<BusinessTable, number>;
  /** Events passed to `emit`. */
  events: number;
  /** The company's employees, for the runtime to create principals / API keys. */
  employees: SeededEmployee[];
}

/** Ids in the main (first) company a demo or README can rely on. */
export interface DemoFixtures {
  /** A commercial VIP customer with open deals, an open invoice, a captured payment and an upcoming visit. */
  customer_id: number;
  /** The customer's open deals, by id. */
  open_deal_ids: number[];
  /** The customer's deal in stage proposal_sent. */
  proposal_deal_id: number;
  /** An issued, unpaid invoice of the customer (for charge_invoice). */
  open_invoice: { id: number; number: number; amount_cents: number };
  /** A captured, unrefunded card payment of the customer (for issue_refund / preview). */
  captured_payment: { id: number; charge_ref: string; amount_cents: number; invoice_id: number };
  /** A scheduled future appointment of the customer. */
  upcoming_appointment_id: number;
  /** The company's droplet. */
  droplet_id: number;
  /** A part at or below its reorder point. */
  low_stock_part_id: number;
  owner_user_id: number;
  admin_user_id: number;
  employee_user_id: number;
  read_only_user_id: number;
  technician_user_id: number;
}

export interface SeedResult {
  companies: SeededCompany[];
  /** The fixtures of this run (equal to DEMO_FIXTURES when seeded with DEMO_SEED into empty tables). */
  fixtures: DemoFixtures;
}

/**
 * The fixtures of `seedDemo` with {@link DEMO_SEED} into empty tables, for any `now`
 * (test/business/seed.test.ts checks them against two seedings with different clocks).
 */
export const DEMO_FIXTURES: DemoFixtures = {
  customer_id: 42,
  open_deal_ids: [49, 76],
  proposal_deal_id: 49,
  open_invoice: { id: 304, number: 4304, amount_cents: 30042 },
  captured_payment: {
    id: 182,
    charge_ref: 'ch_CKqjxjWiqnR03tuPPtpfXe7N',
    amount_cents: 11800,
    invoice_id: 200,
  },
  upcoming_appointment_id: 406,
  droplet_id: 1,
  low_stock_part_id: 10,
  owner_user_id: 1,
  admin_user_id: 2,
  employee_user_id: 4,
  read_only_user_id: 6,
  technician_user_id: 7,
};

// ---------------------------------------------------------------------------------------------
// Time

const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
/** Days of history before the anchor. */
const HISTORY_DAYS = 540;
/** Days of schedule after the anchor. */
const SCHEDULE_DAYS = 45;
/** Visit windows, local hours. Every service lasts at most 2 h, so windows never overlap. */
const SLOT_HOURS = [8, 10.5, 13, 15.5];
/** A contact with no activity for this long becomes inactive. */
const INACTIVE_AFTER_DAYS = 270;

const iso = (ms: number): string => new Date(ms).toISOString();

// ---------------------------------------------------------------------------------------------
// Plan: the rows of one company, referencing each other by array index

interface PEmployee {
  user_id: number;
  name: string;
  email: string;
  phone: string;
  role: EmployeeRole;
  title: EmployeeTitle;
  hired_at: number;
}

interface PContact {
  name: string;
  email: string | null;
  phone: string;
  kind: ContactKind;
  tags: string[];
  status: ContactStatus;
  source: string;
  address_line1: string;
  address_line2: string | null;
  city: string;
  region: string;
  postal_code: string;
  created_at: number;
  updated_at: number;
  /** Relative chance of getting visits (0: a lead that never booked). */
  weight: number;
  created_by: EventActor;
  status_changes: Array<{ from: ContactStatus; to: ContactStatus; at: number; reason: string }>;
  card: number | null;
  ach: number | null;
}

interface PPaymentMethod {
  contact: number;
  type: 'card' | 'ach';
  brand: string;
  last4: string;
  exp_month: number | null;
  exp_year: number | null;
  is_default: boolean;
  created_at: number;
}

interface PStageChange {
  from: DealStage | null;
  to: DealStage;
  at: number;
  by: number;
}

interface PDeal {
  contact: number;
  title: string;
  amount_cents: number;
  owner: number;
  history: PStageChange[];
  scripted: boolean;
}

interface PAppointment {
  contact: number;
  tech: number;
  deal: number | null;
  service: ServiceType;
  starts_at: number;
  ends_at: number;
  status: AppointmentStatus;
  notes: string | null;
  created_at: number;
  updated_at: number;
  booked_by: EventActor;
  cancel: { at: number; by: EventActor; reason: string } | null;
  fixture: 'paid' | 'open' | 'upcoming' | null;
}

interface PPart {
  sku: string;
  name: string;
  category: Trade;
  quantity_on_hand: number;
  reorder_point: number;
  unit_cost_cents: number;
  unit_price_cents: number;
  location: string;
  updated_at: number;
}

interface PUsage {
  appointment: number;
  part: number;
  quantity: number;
  used_at: number;
}

interface PLine {
  part: number | null;
  description: string;
  quantity: number;
  unit_price_cents: number;
}

interface PInvoice {
  contact: number;
  appointment: number | null;
  number: number;
  status: InvoiceStatus;
  amount_cents: number;
  paid_cents: number;
  due_at: number | null;
  issued_at: number | null;
  paid_at: number | null;
  created_at: number;
  updated_at: number;
  voided: { at: number; by: number } | null;
  lines: PLine[];
  fixture: 'paid' | 'open' | null;
}

interface PPayment {
  invoice: number;
  method_ref: number | null;
  charge_ref: string;
  amount_cents: number;
  refunded_cents: number;
  fee_cents: number;
  status: PaymentStatus;
  method: PaymentMethodKind;
  failure_reason: string | null;
  created_at: number;
  updated_at: number;
  actor: EventActor;
  fixture: boolean;
}

interface PRefund {
  payment: number;
  refund_ref: string;
  amount_cents: number;
  fee_refunded_cents: number;
  reason: string;
  by: number;
  created_at: number;
}

interface PNote {
  contact: number;
  body: string;
  author: number;
  created_at: number;
}

interface PKb {
  slug: string;
  title: string;
  body: string;
  tags: string[];
  created_at: number;
  updated_at: number;
}

interface PEmail {
  to_address: string;
  subject: string;
  body: string;
  status: 'queued' | 'sent' | 'failed';
  related: { type: 'invoice' | 'payment' | 'appointment'; index: number };
  error: string | null;
  created_at: number;
  sent_at: number | null;
}

interface PDroplet {
  name: string;
  size: DropletSizeName;
  region: string;
  ip: string;
  health: { backend: boolean; frontend: boolean; database: boolean; redis: boolean; mcp: boolean };
  cpu_pct: number;
  memory_pct: number;
  disk_pct: number;
  workers: number;
  queue_depth: number;
  created_at: number;
  scaled_at: number;
}

interface PSubscription {
  tier: SubscriptionTier;
  seats: number;
  started_at: number;
  renews_at: number;
}

interface CompanyPlan {
  company: SeedCompany;
  employees: PEmployee[];
  contacts: PContact[];
  paymentMethods: PPaymentMethod[];
  deals: PDeal[];
  appointments: PAppointment[];
  parts: PPart[];
  usage: PUsage[];
  invoices: PInvoice[];
  payments: PPayment[];
  refunds: PRefund[];
  notes: PNote[];
  kb: PKb[];
  emails: PEmail[];
  droplet: PDroplet;
  subscription: PSubscription;
  /** Plan indexes of the fixtures (main company only). */
  fixture: { contact: number; proposalDeal: number; newDeal: number } | null;
}

// ---------------------------------------------------------------------------------------------
// Generation

const FIXTURE_CONTACT_INDEX = 41;

const DEAL_DWELL_DAYS: Record<string, number> = {
  new: 3,
  qualified: 4,
  estimate_scheduled: 6,
  proposal_sent: 8,
  negotiation: 6,
};
const DEAL_TRANSITIONS: Record<string, Array<{ weight: number; value: DealStage }>> = {
  new: [
    { weight: 68, value: 'qualified' },
    { weight: 12, value: 'estimate_scheduled' },
    { weight: 20, value: 'lost' },
  ],
  qualified: [
    { weight: 74, value: 'estimate_scheduled' },
    { weight: 14, value: 'proposal_sent' },
    { weight: 12, value: 'lost' },
  ],
  estimate_scheduled: [
    { weight: 85, value: 'proposal_sent' },
    { weight: 15, value: 'lost' },
  ],
  proposal_sent: [
    { weight: 40, value: 'negotiation' },
    { weight: 42, value: 'won' },
    { weight: 18, value: 'lost' },
  ],
  negotiation: [
    { weight: 60, value: 'won' },
    { weight: 25, value: 'lost' },
    { weight: 15, value: 'proposal_sent' },
  ],
};

const COMMERCIAL_SUFFIXES = [
  'Property Management',
  'Dental Group',
  'Apartments',
  'Bakery',
  'Auto Repair',
  'Fitness',
  'Montessori School',
  'Hotel',
  'Family Medicine',
  'Self Storage',
  'Brewing Co.',
  'Office Park',
];
const FREE_MAIL = ['gmail.com', 'yahoo.com', 'outlook.com', 'icloud.com', 'hotmail.com'];
const EXTRA_TAGS = [
  'vip',
  'maintenance-plan',
  'warranty',
  'referral',
  'priority',
  'tankless',
  'heat-pump',
  'boiler',
  'new-construction',
  'late-payer',
];
const FAILURE_REASONS = ['card_declined', 'insufficient_funds', 'expired_card'];

type FakerModule = typeof import('@faker-js/faker');

/**
 * The data generator, loaded only when a demo is seeded: @faker-js/faker is an optional
 * dependency, so a production install that never seeds the demo neither loads nor needs it.
 */
async function loadFaker(): Promise<FakerModule> {
  try {
    return await import('@faker-js/faker');
  } catch (err) {
    throw new Error(
      `seeding the demo needs @faker-js/faker (an optional dependency of solid-verbs): npm install @faker-js/faker (${(err as Error).message})`,
      { cause: err },
    );
  }
}

class CompanyGenerator {
  readonly f: Faker;
  readonly anchor: number;
  readonly start: number;
  readonly scale: number;
  readonly profile: (typeof REGIONS)[number];
  readonly domain: string;
  readonly occupied = new Set<string>();
  readonly refs = new Set<string>();
  readonly emails = new Set<string>();
  plan: CompanyPlan;

  constructor(
    readonly company: SeedCompany,
    readonly position: number,
    seed: number,
    now: Date,
    faker: FakerModule,
  ) {
    this.f = new faker.Faker({ locale: [faker.en_US, faker.en] });
    this.f.seed([seed, position]);
    const offset = DEMO_UTC_OFFSET_MINUTES * MIN;
    this.anchor = Math.floor((now.getTime() + offset) / DAY) * DAY - offset;
    this.start = this.anchor - HISTORY_DAYS * DAY;
    this.scale = position === 0 ? 1 : 0.25;
    this.profile = REGIONS[position % REGIONS.length]!;
    this.domain = `${slugify(company.name) || 'company'}.com`;
    this.plan = {
      company,
      employees: [],
      contacts: [],
      paymentMethods: [],
      deals: [],
      appointments: [],
      parts: [],
      usage: [],
      invoices: [],
      payments: [],
      refunds: [],
      notes: [],
      kb: [],
      emails: [],
      droplet: undefined as unknown as PDroplet,
      subscription: undefined as unknown as PSubscription,
      fixture: null,
    };
  }

  // --- random helpers -------------------------------------------------------------------------
  int(min: number, max: number): number {
    return this.f.number.int({ min, max });
  }
  chance(p: number): boolean {
    return this.f.number.float() < p;
  }
  between(min: number, max: number): number {
    return min + this.f.number.float() * (max - min);
  }
  pick<T>(items: readonly T[]): T {
    return this.f.helpers.arrayElement(items as T[]);
  }
  weighted<T>(items: Array<{ weight: number; value: T }>): T {
    return this.f.helpers.weightedArrayElement(items.filter((i) => i.weight > 0));
  }
  /** Exponential sample (mean `mean`). */
  exp(mean: number): number {
    return -Math.log(1 - this.f.number.float()) * mean;
  }
  /** A random minute in [from, to). */
  timeBetween(from: number, to: number): number {
    if (to <= from) return from;
    return from + Math.floor(this.f.number.float() * ((to - from) / MIN)) * MIN;
  }
  count(full: number): number {
    return Math.max(1, Math.round(full * this.scale));
  }
  dayOf(ms: number): number {
    return Math.floor((ms - this.anchor) / DAY);
  }
  slotStart(day: number, slot: number): number {
    return this.anchor + day * DAY + SLOT_HOURS[slot]! * HOUR;
  }
  uniqueRef(prefix: string): string {
    for (;;) {
      const ref = `${prefix}_${this.f.string.alphanumeric(24)}`;
      if (!this.refs.has(ref)) {
        this.refs.add(ref);
        return ref;
      }
    }
  }
  uniqueEmail(local: string, domain: string): string {
    const clean =
      local
        .toLowerCase()
        .replace(/[^a-z0-9.]+/g, '')
        .replace(/^\.+|\.+$/g, '') || 'contact';
    let candidate = `${clean}@${domain}`;
    for (let n = 2; this.emails.has(candidate); n++) candidate = `${clean}${n}@${domain}`;
    this.emails.add(candidate);
    return candidate;
  }
  phone(): string {
    return `+1${this.pick(this.profile.area_codes)}555${this.f.string.numeric(4)}`;
  }

  get users(): PEmployee[] {
    return this.plan.employees;
  }
  usersWhere(pred: (e: PEmployee) => boolean): number[] {
    return this.users.filter(pred).map((e) => e.user_id);
  }
  get salesUsers(): number[] {
    return this.usersWhere(
      (e) => e.role !== 'read_only' && (e.title === 'owner' || e.title === 'manager' || e.title === 'office'),
    );
  }
  get staffUsers(): number[] {
    return this.usersWhere((e) => e.role !== 'read_only' && e.title !== 'technician');
  }
  get adminUsers(): number[] {
    return this.usersWhere((e) => e.role === 'owner' || e.role === 'admin');
  }
  get techUsers(): number[] {
    return this.usersWhere((e) => e.title === 'technician');
  }

  generate(): CompanyPlan {
    this.employees();
    this.contacts();
    this.deals();
    this.appointments();
    this.parts();
    this.partUsage();
    this.invoices();
    this.contactStatuses();
    this.notes();
    this.kb();
    this.emailOutbox();
    this.infrastructure();
    return this.plan;
  }

  employees(): void {
    const roster: Array<[EmployeeTitle, EmployeeRole]> =
      this.position === 0
        ? [
            ['owner', 'owner'],
            ['manager', 'admin'],
            ['office', 'admin'],
            ['dispatcher', 'employee'],
            ['office', 'employee'],
            ['office', 'read_only'],
            ['technician', 'employee'],
            ['technician', 'employee'],
            ['technician', 'employee'],
            ['technician', 'employee'],
            ['technician', 'employee'],
            ['technician', 'employee'],
          ]
        : [
            ['owner', 'owner'],
            ['manager', 'admin'],
            ['technician', 'employee'],
            ['technician', 'employee'],
            ['office', 'read_only'],
          ];
    roster.forEach(([title, role], i) => {
      const first = this.f.person.firstName();
      const last = this.f.person.lastName();
      this.plan.employees.push({
        user_id: this.position * 100 + i + 1,
        name: `${first} ${last}`,
        email: this.uniqueEmail(`${first}.${last}`, this.domain),
        phone: this.phone(),
        role,
        title,
        hired_at:
          i === 0
            ? this.start - 6 * 365 * DAY
            : this.start - this.int(30, 5 * 365) * DAY + this.int(8, 10) * HOUR,
      });
    });
  }

  contacts(): void {
    const n = this.count(200);
    const times = Array.from({ length: n }, () => this.timeBetween(this.start, this.anchor - 2 * DAY)).sort(
      (a, b) => a - b,
    );
    const fixture = this.position === 0 ? FIXTURE_CONTACT_INDEX : -1;
    times.forEach((createdAt, i) => {
      const kind: ContactKind = i === fixture || this.chance(0.25) ? 'commercial' : 'residential';
      let name: string;
      let email: string | null;
      if (kind === 'commercial') {
        name = `${this.f.person.lastName()} ${this.pick(COMMERCIAL_SUFFIXES)}`;
        email = this.uniqueEmail(
          this.pick(['office', 'facilities', 'accounts', 'manager']),
          `${slugify(name)}.com`,
        );
      } else {
        const first = this.f.person.firstName();
        const last = this.f.person.lastName();
        name = `${first} ${last}`;
        email = this.chance(0.95) ? this.uniqueEmail(`${first}.${last}`, this.pick(FREE_MAIL)) : null;
      }
      const extra = this.f.helpers.arrayElements(EXTRA_TAGS, { min: 0, max: 2 });
      const tags =
        i === fixture ? ['vip', 'commercial'] : kind === 'commercial' ? ['commercial', ...extra] : extra;
      const source = this.weighted([
        { weight: 35, value: 'web' },
        { weight: 25, value: 'referral' },
        { weight: 20, value: 'phone' },
        { weight: 10, value: 'repeat' },
        { weight: 10, value: 'ads' },
      ]);
      const leadOnly = i !== fixture && this.chance(0.12);
      const weight = leadOnly
        ? 0
        : i === fixture
          ? 4
          : this.between(0.3, 2.5) * (kind === 'commercial' ? 1.8 : 1);
      const contact: PContact = {
        name,
        email,
        phone: this.phone(),
        kind,
        tags,
        status: 'lead',
        source,
        address_line1: this.f.location.streetAddress(),
        address_line2:
          kind === 'commercial'
            ? this.chance(0.3)
              ? `Suite ${this.int(100, 450)}`
              : null
            : this.chance(0.08)
              ? `Apt ${this.int(1, 40)}`
              : null,
        city: this.pick(this.profile.cities),
        region: this.profile.region,
        postal_code: `${this.profile.postal_prefix}${this.f.string.numeric(3)}`,
        created_at: createdAt,
        updated_at: createdAt,
        weight,
        created_by: source === 'web' ? `customer:${i}` : `user:${this.pick(this.staffUsers)}`,
        status_changes: [],
        card: null,
        ach: null,
      };
      const idx = this.plan.contacts.push(contact) - 1;
      if (i === fixture || this.chance(0.72)) {
        contact.card =
          this.plan.paymentMethods.push({
            contact: idx,
            type: 'card',
            brand:
              i === fixture
                ? 'visa'
                : this.weighted([
                    { weight: 50, value: CARD_BRANDS[0]! },
                    { weight: 30, value: CARD_BRANDS[1]! },
                    { weight: 12, value: CARD_BRANDS[2]! },
                    { weight: 8, value: CARD_BRANDS[3]! },
                  ]),
            last4: i === fixture ? '4242' : this.f.string.numeric(4),
            exp_month: this.int(1, 12),
            exp_year: new Date(this.anchor).getUTCFullYear() + this.int(1, 5),
            is_default: true,
            created_at: createdAt,
          }) - 1;
      }
      if (i !== fixture && this.chance(kind === 'commercial' ? 0.35 : 0.08)) {
        contact.ach =
          this.plan.paymentMethods.push({
            contact: idx,
            type: 'ach',
            brand: this.pick(BANKS),
            last4: this.f.string.numeric(4),
            exp_month: null,
            exp_year: null,
            is_default: contact.card === null,
            created_at: createdAt,
          }) - 1;
      }
    });
  }

  dealType(kind: ContactKind): DealType {
    const commercial = kind === 'commercial' && this.chance(0.7);
    return this.pick(DEAL_TYPES.filter((d) => d.commercial === commercial));
  }

  deals(): void {
    const total = this.count(80);
    const scripted = this.position === 0 ? 2 : 0;
    const cutoff = this.anchor;
    const deals: PDeal[] = [];
    for (let i = 0; i < total - scripted; i++) {
      const contactIdx = this.weighted(
        this.plan.contacts.map((c, idx) => ({
          weight: c.kind === 'commercial' ? 3 : c.weight === 0 ? 1.5 : 1,
          value: idx,
        })),
      );
      const contact = this.plan.contacts[contactIdx]!;
      const type = this.dealType(contact.kind);
      const owner = this.pick(this.salesUsers);
      // Almost half the deals are recent, so the pipeline has open deals in every stage.
      const recent = this.chance(0.45);
      let t = this.timeBetween(
        recent ? Math.max(contact.created_at, cutoff - 60 * DAY) + HOUR : contact.created_at + HOUR,
        cutoff - HOUR,
      );
      const history: PStageChange[] = [{ from: null, to: 'new', at: t, by: owner }];
      let stage: DealStage = 'new';
      for (let step = 0; step < 10 && stage !== 'won' && stage !== 'lost'; step++) {
        if (this.chance(0.05)) break; // a stalled deal
        const next =
          t + Math.max(2 * HOUR, Math.round((this.exp(DEAL_DWELL_DAYS[stage]!) * DAY) / MIN) * MIN);
        if (next >= cutoff) break;
        const to: DealStage = this.weighted(DEAL_TRANSITIONS[stage]!);
        history.push({
          from: stage,
          to,
          at: next,
          by: this.chance(0.85) ? owner : this.pick(this.salesUsers),
        });
        stage = to;
        t = next;
      }
      deals.push({
        contact: contactIdx,
        title: type.title,
        amount_cents: Math.round(this.between(type.min_dollars, type.max_dollars) / 25) * 25 * 100,
        owner,
        history,
        scripted: false,
      });
    }
    if (scripted > 0) {
      const c = FIXTURE_CONTACT_INDEX;
      const at = (day: number, hour: number) => this.anchor + day * DAY + hour * HOUR;
      const owner = this.salesUsers[1] ?? this.salesUsers[0]!;
      deals.push({
        contact: c,
        title: 'Kitchen remodel plumbing',
        amount_cents: 85000,
        owner,
        scripted: true,
        history: [
          { from: null, to: 'new', at: at(-30, 9), by: owner },
          { from: 'new', to: 'qualified', at: at(-27, 10), by: owner },
          { from: 'qualified', to: 'estimate_scheduled', at: at(-24, 11), by: owner },
          { from: 'estimate_scheduled', to: 'proposal_sent', at: at(-18, 15), by: owner },
        ],
      });
      deals.push({
        contact: c,
        title: 'Bathroom rough-in',
        amount_cents: 42000,
        owner,
        scripted: true,
        history: [{ from: null, to: 'new', at: at(-3, 14), by: owner }],
      });
    }
    deals.sort((a, b) => a.history[0]!.at - b.history[0]!.at);
    this.plan.deals = deals;
    if (scripted > 0) {
      this.plan.fixture = {
        contact: FIXTURE_CONTACT_INDEX,
        proposalDeal: deals.findIndex((d) => d.scripted && d.title === 'Kitchen remodel plumbing'),
        newDeal: deals.findIndex((d) => d.scripted && d.title === 'Bathroom rough-in'),
      };
    }
  }

  /** Reserve a free (technician, window) on one of the days [lo, hi], starting at `first`. */
  findSlot(lo: number, hi: number, first?: number): { day: number; slot: number; tech: number } | null {
    if (hi < lo) return null;
    const span = hi - lo + 1;
    const start = first ?? this.int(lo, hi);
    for (let k = 0; k < Math.min(span, 14); k++) {
      const day = lo + ((start - lo + k) % span);
      const slots = this.f.helpers.shuffle([0, 1, 2, 3]);
      const techs = this.f.helpers.shuffle([...this.techUsers]);
      for (const slot of slots) {
        for (const tech of techs) {
          const key = `${tech}:${day}:${slot}`;
          if (!this.occupied.has(key)) {
            this.occupied.add(key);
            return { day, slot, tech };
          }
        }
      }
    }
    return null;
  }

  addAppointment(
    contactIdx: number,
    service: ServiceType,
    where: { day: number; slot: number; tech: number },
    status: AppointmentStatus,
    deal: number | null,
    fixture: PAppointment['fixture'] = null,
  ): void {
    const contact = this.plan.contacts[contactIdx]!;
    const startsAt = this.slotStart(where.day, where.slot);
    const endsAt = startsAt + service.duration_minutes * MIN;
    let createdAt = startsAt - this.int(1, 21) * DAY - this.int(0, 8) * HOUR;
    createdAt = Math.min(
      Math.max(createdAt, contact.created_at + 10 * MIN),
      this.anchor - HOUR,
      startsAt - HOUR,
    );
    let cancel: PAppointment['cancel'] = null;
    let updatedAt = createdAt;
    if (status === 'cancelled') {
      const at = this.timeBetween(createdAt, Math.min(startsAt, this.anchor));
      cancel = {
        at,
        by: this.chance(0.6) ? `customer:${contactIdx}` : `user:${this.pick(this.staffUsers)}`,
        reason: this.pick([
          'Customer rescheduled',
          'Issue resolved itself',
          'Customer unavailable',
          'Went with another company',
          'Weather',
        ]),
      };
      updatedAt = at;
    } else if (status === 'completed' || status === 'no_show') {
      updatedAt = endsAt;
    }
    this.plan.appointments.push({
      contact: contactIdx,
      tech: where.tech,
      deal,
      service,
      starts_at: startsAt,
      ends_at: endsAt,
      status,
      notes: this.chance(0.25) ? this.pick(APPOINTMENT_NOTES) : null,
      created_at: createdAt,
      updated_at: updatedAt,
      booked_by: this.chance(0.2) ? `customer:${contactIdx}` : `user:${this.pick(this.staffUsers)}`,
      cancel,
      fixture,
    });
  }

  appointments(): void {
    const pastTarget = this.count(400);
    const futureTarget = this.count(100);
    const estimate = SERVICES.find((s) => s.estimate === true)!;
    const byName = (name: string) => SERVICES.find((s) => s.service === name)!;
    // 1. The fixture customer's scripted visits.
    const fx = this.plan.fixture;
    if (fx !== null) {
      const book = (
        day: number,
        service: ServiceType,
        status: AppointmentStatus,
        deal: number | null,
        fixture: PAppointment['fixture'],
      ) => {
        const where = this.findSlot(day, day, day);
        if (where === null) throw new Error(`seed: no free slot on day ${day}`);
        this.addAppointment(fx.contact, service, where, status, deal, fixture);
      };
      book(-60, byName('Water heater flush'), 'completed', null, 'paid');
      book(-4, byName('Water heater repair'), 'completed', null, 'open');
      book(-22, estimate, 'completed', fx.proposalDeal, null);
      book(5, byName('Backflow test'), 'scheduled', null, 'upcoming');
    }
    // 2. Estimate visits of the deals that reached estimate_scheduled.
    this.plan.deals.forEach((deal, dealIdx) => {
      if (deal.scripted) return;
      const i = deal.history.findIndex((h) => h.to === 'estimate_scheduled');
      if (i < 0) return;
      const scheduledDay = this.dayOf(deal.history[i]!.at);
      const next = deal.history[i + 1];
      let lo: number;
      let hi: number;
      if (next !== undefined) {
        lo = scheduledDay + 1;
        hi = Math.min(this.dayOf(next.at) - 1, -1);
      } else {
        // Still waiting for its estimate: the visit is ahead, or it was missed recently.
        lo = scheduledDay + 1;
        hi = lo < 0 ? Math.min(-1, lo + 5) : Math.min(SCHEDULE_DAYS, lo + 6);
      }
      const where = this.findSlot(lo, hi, lo);
      if (where === null) return;
      const status: AppointmentStatus =
        where.day >= 0 ? 'scheduled' : this.chance(0.92) ? 'completed' : 'no_show';
      this.addAppointment(deal.contact, estimate, where, status, dealIdx);
    });
    const services = (kind: ContactKind) =>
      SERVICES.map((s) => ({
        weight: s.service === 'Commercial maintenance visit' && kind !== 'commercial' ? 0 : s.weight,
        value: s,
      }));
    // 3. Random past visits.
    const visitWeights = this.plan.contacts.map((c, idx) => ({ weight: c.weight, value: idx }));
    let past = this.plan.appointments.filter((a) => a.starts_at < this.anchor).length;
    for (let attempts = 0; past < pastTarget && attempts < pastTarget * 20; attempts++) {
      const contactIdx = this.weighted(visitWeights);
      const contact = this.plan.contacts[contactIdx]!;
      const where = this.findSlot(this.dayOf(contact.created_at) + 1, -1);
      if (where === null) continue;
      const status = this.weighted<AppointmentStatus>([
        { weight: 86, value: 'completed' },
        { weight: 7, value: 'cancelled' },
        { weight: 7, value: 'no_show' },
      ]);
      this.addAppointment(contactIdx, this.weighted(services(contact.kind)), where, status, null);
      past++;
    }
    // 4. Random upcoming visits (today included).
    const bookWeights = this.plan.contacts.map((c, idx) => ({ weight: c.weight + 0.3, value: idx }));
    let future = this.plan.appointments.filter((a) => a.starts_at >= this.anchor).length;
    for (let attempts = 0; future < futureTarget && attempts < futureTarget * 20; attempts++) {
      const contactIdx = this.weighted(bookWeights);
      const where = this.findSlot(0, SCHEDULE_DAYS);
      if (where === null) continue;
      const status: AppointmentStatus = this.chance(0.06) ? 'cancelled' : 'scheduled';
      this.addAppointment(
        contactIdx,
        this.weighted(services(this.plan.contacts[contactIdx]!.kind)),
        where,
        status,
        null,
      );
      future++;
    }
    this.plan.appointments.sort((a, b) => a.starts_at - b.starts_at || a.tech - b.tech);
  }

  parts(): void {
    const n = this.position === 0 ? 40 : 10;
    const chosen = this.f.helpers
      .shuffle(PARTS.map((p, i) => ({ p, i })))
      .slice(0, n)
      .sort((a, b) => a.i - b.i);
    const lowStock = new Set(
      this.f.helpers.arrayElements(
        chosen.map((c) => c.i),
        Math.max(2, Math.round(n * 0.15)),
      ),
    );
    for (const { p, i } of chosen) {
      const cost = this.int(p.min_cost_cents, p.max_cost_cents);
      const reorder = this.int(4, 12);
      this.plan.parts.push({
        sku: `${p.category === 'plumbing' ? 'PLB' : 'HVC'}-${1001 + i}`,
        name: p.name,
        category: p.category,
        quantity_on_hand: lowStock.has(i) ? this.int(0, reorder) : this.int(reorder + 1, reorder + 48),
        reorder_point: reorder,
        unit_cost_cents: cost,
        unit_price_cents: Math.round((cost * this.int(160, 220)) / 100),
        location: this.pick(PART_LOCATIONS),
        updated_at: this.anchor - this.int(1, 30) * DAY - this.int(0, 10) * HOUR,
      });
    }
  }

  partUsage(): void {
    const byTrade = (trade: Trade) => {
      const own = this.plan.parts.map((p, i) => ({ p, i })).filter((x) => x.p.category === trade);
      return own.length > 0 ? own : this.plan.parts.map((p, i) => ({ p, i }));
    };
    this.plan.appointments.forEach((a, idx) => {
      if (a.status !== 'completed' || a.service.estimate === true || a.fixture !== null) return;
      if (!this.chance(a.service.parts_chance)) return;
      const used = this.f.helpers.arrayElements(byTrade(a.service.trade), this.int(1, 3));
      for (const { i } of used) {
        this.plan.usage.push({
          appointment: idx,
          part: i,
          quantity: this.int(1, 2),
          used_at: a.starts_at + 45 * MIN,
        });
      }
    });
  }

  invoices(): void {
    const drafts: PInvoice[] = [];
    const issued: PInvoice[] = [];
    const usageByAppointment = new Map<number, PUsage[]>();
    for (const u of this.plan.usage)
      usageByAppointment.set(u.appointment, [...(usageByAppointment.get(u.appointment) ?? []), u]);
    const place = (inv: PInvoice) => (inv.issued_at === null ? drafts : issued).push(inv);
    this.plan.appointments.forEach((a, idx) => {
      if (a.status !== 'completed' || a.service.estimate === true) return;
      const contact = this.plan.contacts[a.contact]!;
      const hours = a.service.labor_hours;
      const lines: PLine[] = [
        {
          part: null,
          description: hours === 1 ? a.service.service : `${a.service.service} labour (${hours} h)`,
          quantity: 1,
          unit_price_cents: Math.round(hours * a.service.labor_rate_cents),
        },
      ];
      for (const u of usageByAppointment.get(idx) ?? []) {
        const part = this.plan.parts[u.part]!;
        lines.push({
          part: u.part,
          description: part.name,
          quantity: u.quantity,
          unit_price_cents: part.unit_price_cents,
        });
      }
      if (a.fixture === 'open') {
        const valve = this.plan.parts.findIndex((p) => p.name === 'T&P relief valve 3/4"');
        const part = valve >= 0 ? valve : 0;
        lines.push({
          part,
          description: this.plan.parts[part]!.name,
          quantity: 1,
          unit_price_cents: this.plan.parts[part]!.unit_price_cents,
        });
        this.plan.usage.push({ appointment: idx, part, quantity: 1, used_at: a.starts_at + 45 * MIN });
      }
      const delayed = a.fixture === null && this.chance(0.08);
      const issueAt = a.ends_at + (delayed ? this.int(1, 3) * DAY : this.int(30, 180) * MIN);
      place(
        this.newInvoice(
          a.contact,
          idx,
          lines,
          issueAt,
          contact.kind,
          a.fixture === 'paid' || a.fixture === 'open' ? a.fixture : null,
        ),
      );
    });
    this.plan.deals.forEach((deal) => {
      const last = deal.history[deal.history.length - 1]!;
      if (last.to !== 'won') return;
      const issueAt = last.at + this.int(2, 20) * DAY;
      if (issueAt >= this.anchor) return;
      const kind = this.plan.contacts[deal.contact]!.kind;
      place(
        this.newInvoice(
          deal.contact,
          null,
          [{ part: null, description: deal.title, quantity: 1, unit_price_cents: deal.amount_cents }],
          issueAt,
          kind,
          null,
        ),
      );
    });
    issued.sort((a, b) => a.issued_at! - b.issued_at!);
    drafts.sort((a, b) => a.created_at - b.created_at);
    this.plan.invoices = [...issued, ...drafts];
    this.plan.invoices.forEach((inv, i) => (inv.number = FIRST_INVOICE_NUMBER + i));
    this.plan.invoices.forEach((inv, i) => this.settle(inv, i));
    this.plan.payments.sort((a, b) => a.created_at - b.created_at);
    this.refunds();
  }

  newInvoice(
    contact: number,
    appointment: number | null,
    lines: PLine[],
    issueAt: number,
    kind: ContactKind,
    fixture: PInvoice['fixture'],
  ): PInvoice {
    const amount = lines.reduce((s, l) => s + l.quantity * l.unit_price_cents, 0);
    const draft = issueAt >= this.anchor;
    const createdAt = draft ? Math.min(issueAt, this.anchor - 30 * MIN) : issueAt;
    return {
      contact,
      appointment,
      number: 0,
      status: draft ? 'draft' : 'open',
      amount_cents: amount,
      paid_cents: 0,
      due_at: draft ? null : issueAt + (kind === 'commercial' ? 30 : 14) * DAY,
      issued_at: draft ? null : issueAt,
      paid_at: null,
      created_at: createdAt,
      updated_at: createdAt,
      voided: null,
      lines,
      fixture,
    };
  }

  paymentMethodFor(contactIdx: number): { method: PaymentMethodKind; ref: number | null } {
    const c = this.plan.contacts[contactIdx]!;
    const method = this.weighted<PaymentMethodKind>([
      { weight: c.card !== null ? 70 : 0, value: 'card' },
      { weight: c.ach !== null ? 15 : 0, value: 'ach' },
      { weight: c.card !== null ? 10 : 70, value: 'check' },
      { weight: c.card !== null ? 5 : 30, value: 'cash' },
    ]);
    return { method, ref: method === 'card' ? c.card : method === 'ach' ? c.ach : null };
  }

  addPayment(
    invoiceIdx: number,
    amount: number,
    at: number,
    how: { method: PaymentMethodKind; ref: number | null },
    status: PaymentStatus,
    fixture = false,
  ): void {
    const inv = this.plan.invoices[invoiceIdx]!;
    const online = (how.method === 'card' || how.method === 'ach') && this.chance(0.5);
    this.plan.payments.push({
      invoice: invoiceIdx,
      method_ref: how.ref,
      charge_ref: this.uniqueRef('ch'),
      amount_cents: amount,
      refunded_cents: 0,
      fee_cents: status === 'failed' ? 0 : processingFeeCents(how.method, amount),
      status,
      method: how.method,
      failure_reason: status === 'failed' ? this.pick(FAILURE_REASONS) : null,
      created_at: at,
      updated_at: at,
      actor: online ? `customer:${inv.contact}` : `user:${this.pick(this.staffUsers)}`,
      fixture,
    });
    if (status !== 'failed') {
      inv.paid_cents += amount;
      inv.updated_at = Math.max(inv.updated_at, at);
      if (inv.paid_cents === inv.amount_cents) {
        inv.status = 'paid';
        inv.paid_at = at;
      } else {
        inv.status = 'partially_paid';
      }
    }
  }

  settle(inv: PInvoice, idx: number): void {
    if (inv.issued_at === null) return;
    const issued = inv.issued_at;
    const c = this.plan.contacts[inv.contact]!;
    if (inv.fixture === 'open') return;
    if (inv.fixture === 'paid') {
      this.addPayment(
        idx,
        inv.amount_cents,
        issued + 5 * MIN,
        { method: 'card', ref: c.card },
        'captured',
        true,
      );
      return;
    }
    const age = this.anchor - issued;
    if (this.chance(0.02)) {
      const at = Math.min(issued + this.int(1, 5) * DAY, this.anchor - HOUR);
      inv.status = 'void';
      inv.voided = { at, by: this.pick(this.adminUsers) };
      inv.updated_at = at;
      return;
    }
    const outcome = this.weighted<'paid' | 'partial' | 'open'>(
      age < 3 * DAY
        ? [
            { weight: 35, value: 'paid' },
            { weight: 65, value: 'open' },
          ]
        : age < 30 * DAY
          ? [
              { weight: 70, value: 'paid' },
              { weight: 8, value: 'partial' },
              { weight: 22, value: 'open' },
            ]
          : [
              { weight: 90, value: 'paid' },
              { weight: 3, value: 'partial' },
              { weight: 7, value: 'open' },
            ],
    );
    if (outcome === 'open') return;
    const how = this.paymentMethodFor(inv.contact);
    const first = this.timeBetween(issued + MIN, Math.min(issued + 20 * DAY, this.anchor - HOUR));
    if (how.method === 'card' && this.chance(0.06)) {
      this.addPayment(idx, inv.amount_cents, this.timeBetween(issued, first), how, 'failed');
    }
    if (outcome === 'partial') {
      this.addPayment(
        idx,
        Math.max(100, Math.round((inv.amount_cents * this.between(0.2, 0.6)) / 100) * 100),
        first,
        how,
        'captured',
      );
      return;
    }
    if (inv.amount_cents >= 40000 && this.chance(0.15)) {
      const deposit = Math.round((inv.amount_cents * this.between(0.3, 0.5)) / 100) * 100;
      this.addPayment(idx, deposit, first, how, 'captured');
      const second = this.timeBetween(first + HOUR, Math.min(first + 20 * DAY, this.anchor - 30 * MIN));
      this.addPayment(
        idx,
        inv.amount_cents - deposit,
        second,
        this.paymentMethodFor(inv.contact),
        'captured',
      );
      return;
    }
    this.addPayment(idx, inv.amount_cents, first, how, 'captured');
  }

  refunds(): void {
    this.plan.payments.forEach((p, idx) => {
      if (p.fixture || p.status === 'failed' || (p.method !== 'card' && p.method !== 'ach')) return;
      if (p.created_at >= this.anchor - 2 * DAY) return;
      const r = this.f.number.float();
      if (r >= 0.09) return;
      const full = r < 0.025;
      const amount = full
        ? p.amount_cents
        : Math.min(
            p.amount_cents - 100,
            Math.max(100, Math.round((p.amount_cents * this.between(0.1, 0.5)) / 100) * 100),
          );
      if (amount <= 0) return;
      const at = this.timeBetween(p.created_at + DAY, Math.min(p.created_at + 30 * DAY, this.anchor - HOUR));
      this.plan.refunds.push({
        payment: idx,
        refund_ref: this.uniqueRef('re'),
        amount_cents: amount,
        fee_refunded_cents: refundedFeeCents(p.method, amount),
        reason: this.pick(REFUND_REASONS),
        by: this.pick(this.adminUsers),
        created_at: at,
      });
      p.refunded_cents = amount;
      p.status = full ? 'refunded' : 'partially_refunded';
      p.updated_at = at;
    });
    this.plan.refunds.sort((a, b) => a.created_at - b.created_at);
  }

  contactStatuses(): void {
    const first = new Map<number, number>();
    const last = new Map<number, number>();
    const touch = (c: number, at: number) => {
      first.set(c, Math.min(first.get(c) ?? at, at));
      last.set(c, Math.max(last.get(c) ?? at, at));
    };
    for (const a of this.plan.appointments) if (a.status === 'completed') touch(a.contact, a.ends_at);
    for (const p of this.plan.payments)
      if (p.status !== 'failed') touch(this.plan.invoices[p.invoice]!.contact, p.created_at);
    this.plan.contacts.forEach((c, idx) => {
      const f = first.get(idx);
      if (f === undefined) return;
      c.status_changes.push({ from: 'lead', to: 'active', at: f, reason: 'first completed visit' });
      c.status = 'active';
      c.updated_at = f;
      const inactiveAt = last.get(idx)! + INACTIVE_AFTER_DAYS * DAY;
      if (inactiveAt < this.anchor) {
        c.status_changes.push({
          from: 'active',
          to: 'inactive',
          at: inactiveAt,
          reason: `no activity for ${INACTIVE_AFTER_DAYS} days`,
        });
        c.status = 'inactive';
        c.updated_at = inactiveAt;
      }
    });
  }

  notes(): void {
    const n = this.count(150);
    const weights = this.plan.contacts.map((c, idx) => ({ weight: c.weight + 0.5, value: idx }));
    for (let i = 0; i < n; i++) {
      const contactIdx = this.weighted(weights);
      const contact = this.plan.contacts[contactIdx]!;
      this.plan.notes.push({
        contact: contactIdx,
        body: this.pick(NOTE_TEMPLATES).replace('{code}', this.f.string.numeric(4)),
        author: this.pick(this.staffUsers),
        created_at: this.timeBetween(contact.created_at + MIN, this.anchor - HOUR),
      });
    }
    this.plan.notes.sort((a, b) => a.created_at - b.created_at);
  }

  kb(): void {
    const n = this.position === 0 ? KB_ARTICLES.length : 6;
    for (const a of KB_ARTICLES.slice(0, n)) {
      const created = this.timeBetween(this.start, this.start + 300 * DAY);
      this.plan.kb.push({
        slug: slugify(a.title),
        title: a.title,
        body: a.body,
        tags: a.tags,
        created_at: created,
        updated_at: this.chance(0.4) ? this.timeBetween(created, this.anchor - HOUR) : created,
      });
    }
  }

  emailOutbox(): void {
    const name = this.company.name;
    const money = (cents: number) => `$${(cents / 100).toFixed(2)}`;
    this.plan.invoices.forEach((inv, idx) => {
      const to = this.plan.contacts[inv.contact]!.email;
      if (inv.issued_at === null || to === null || inv.issued_at < this.anchor - 120 * DAY) return;
      const failed = this.chance(0.03);
      this.plan.emails.push({
        to_address: to,
        subject: `Invoice #${inv.number} from ${name}`,
        body: `Hello,\n\nYour invoice #${inv.number} for ${money(inv.amount_cents)} is ready. Thank you for choosing ${name}.`,
        status: failed ? 'failed' : 'sent',
        related: { type: 'invoice', index: idx },
        error: failed ? '550 mailbox unavailable' : null,
        created_at: inv.issued_at,
        sent_at: failed ? null : inv.issued_at + 2 * MIN,
      });
    });
    this.plan.payments.forEach((p, idx) => {
      const to = this.plan.contacts[this.plan.invoices[p.invoice]!.contact]!.email;
      if (p.status === 'failed' || to === null || p.created_at < this.anchor - 60 * DAY) return;
      this.plan.emails.push({
        to_address: to,
        subject: `Receipt for your payment of ${money(p.amount_cents)}`,
        body: `Hello,\n\nWe received ${money(p.amount_cents)} (reference ${p.charge_ref}). Thank you!\n\n${name}`,
        status: 'sent',
        related: { type: 'payment', index: idx },
        error: null,
        created_at: p.created_at + MIN,
        sent_at: p.created_at + 2 * MIN,
      });
    });
    this.plan.appointments.forEach((a, idx) => {
      const to = this.plan.contacts[a.contact]!.email;
      if (to === null || a.status === 'cancelled') return;
      const day = this.dayOf(a.starts_at);
      const subject = `Reminder: ${a.service.service} visit on ${iso(a.starts_at + DEMO_UTC_OFFSET_MINUTES * MIN).slice(0, 10)}`;
      const body = `Hello,\n\nThis is a reminder of your ${a.service.service.toLowerCase()} visit. Our technician will arrive within the booked window.\n\n${name}`;
      if (day >= 0 && day <= 2) {
        const created = this.anchor - this.int(10, 120) * MIN;
        this.plan.emails.push({
          to_address: to,
          subject,
          body,
          status: 'queued',
          related: { type: 'appointment', index: idx },
          error: null,
          created_at: created,
          sent_at: null,
        });
      } else if (day < 0 && day >= -30) {
        const sent = Math.max(a.starts_at - DAY, a.created_at + 5 * MIN);
        this.plan.emails.push({
          to_address: to,
          subject,
          body,
          status: 'sent',
          related: { type: 'appointment', index: idx },
          error: null,
          created_at: sent - MIN,
          sent_at: sent,
        });
      }
    });
    this.plan.emails.sort((a, b) => a.created_at - b.created_at);
  }

  infrastructure(): void {
    const created = this.start - 200 * DAY;
    const name = `${slugify(this.company.name) || 'company'}-prod-1`;
    if (this.position === 0) {
      // The values of the upstream infrastructure_diagnose example.
      this.plan.droplet = {
        name,
        size: 'SMALL',
        region: 'nyc1',
        ip: '10.0.0.42',
        health: { backend: true, frontend: true, database: true, redis: true, mcp: true },
        cpu_pct: 12.5,
        memory_pct: 45.2,
        disk_pct: 61.0,
        workers: 2,
        queue_depth: 3,
        created_at: created,
        scaled_at: created + 90 * DAY,
      };
    } else if (this.position === 1) {
      // A struggling server, so diagnose has something to find.
      this.plan.droplet = {
        name,
        size: 'MEDIUM',
        region: this.profile.droplet_region,
        ip: `10.0.${this.position}.17`,
        health: { backend: true, frontend: true, database: true, redis: false, mcp: true },
        cpu_pct: 88.4,
        memory_pct: 91.7,
        disk_pct: 72.3,
        workers: 2,
        queue_depth: 148,
        created_at: created,
        scaled_at: created + 60 * DAY,
      };
    } else {
      this.plan.droplet = {
        name,
        size: 'SMALL',
        region: this.profile.droplet_region,
        ip: `10.0.${this.position % 250}.${this.int(10, 250)}`,
        health: { backend: true, frontend: true, database: true, redis: true, mcp: true },
        cpu_pct: Math.round(this.between(5, 40) * 10) / 10,
        memory_pct: Math.round(this.between(30, 60) * 10) / 10,
        disk_pct: Math.round(this.between(20, 70) * 10) / 10,
        workers: 2,
        queue_depth: this.int(0, 10),
        created_at: created,
        scaled_at: created + 60 * DAY,
      };
    }
    const tier = this.company.tier;
    const max = TIERS[tier].max_seats;
    const started = created;
    const periods = Math.floor((this.anchor - started) / (30 * DAY)) + 1;
    this.plan.subscription = {
      tier,
      seats: max === null ? this.plan.employees.length : Math.min(max, this.plan.employees.length),
      started_at: started,
      renews_at: started + periods * 30 * DAY,
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Writing

/** Inserts with multi-row VALUES; returns the new ids in row order. */
class Writer {
  done = 0;
  constructor(
    readonly tx: Queryable,
    readonly total: number,
    readonly onProgress: ((done: number, total: number) => void) | undefined,
  ) {}

  advance(n: number): void {
    this.done += n;
    this.onProgress?.(this.done, this.total);
  }

  async insert(table: BusinessTable, columns: string[], rows: unknown[][]): Promise<number[]> {
    const ids: number[] = [];
    const perStatement = Math.max(1, Math.min(400, Math.floor(20_000 / columns.length)));
    const tuple = `(${columns.map(() => '?').join(', ')})`;
    for (let i = 0; i < rows.length; i += perStatement) {
      const chunk = rows.slice(i, i + perStatement);
      const returned = await this.tx.all<{ id: unknown }>(
        `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${chunk.map(() => tuple).join(', ')} RETURNING id`,
        chunk.flat(),
      );
      if (returned.length !== chunk.length)
        throw new Error(`seed: ${table} insert returned ${returned.length} ids for ${chunk.length} rows`);
      ids.push(...returned.map((r) => num(r.id)).sort((a, b) => a - b));
      this.advance(chunk.length);
    }
    return ids;
  }
}

function planRowCount(p: CompanyPlan): number {
  return (
    p.employees.length +
    p.contacts.length +
    p.paymentMethods.length +
    p.deals.length +
    p.deals.reduce((s, d) => s + d.history.length, 0) +
    p.appointments.length +
    p.parts.length +
    p.usage.length +
    p.invoices.length +
    p.invoices.reduce((s, i) => s + i.lines.length, 0) +
    p.payments.length +
    p.refunds.length +
    p.notes.length +
    p.kb.length +
    p.emails.length +
    2
  );
}

interface PlanIds {
  contacts: number[];
  paymentMethods: number[];
  deals: number[];
  history: number[][];
  appointments: number[];
  parts: number[];
  usage: number[];
  invoices: number[];
  payments: number[];
  refunds: number[];
  notes: number[];
  kb: number[];
  emails: number[];
  droplet: number;
  subscription: number;
}

async function writePlan(w: Writer, p: CompanyPlan): Promise<PlanIds> {
  const c = p.company.company_id;
  const t = (ms: number | null) => (ms === null ? null : iso(ms));
  await w.insert(
    'employees',
    ['company_id', 'user_id', 'name', 'email', 'phone', 'role', 'title', 'active', 'hired_at', 'updated_at'],
    p.employees.map((e) => [
      c,
      e.user_id,
      e.name,
      e.email,
      e.phone,
      e.role,
      e.title,
      1,
      t(e.hired_at),
      t(e.hired_at),
    ]),
  );
  const contacts = await w.insert(
    'contacts',
    [
      'company_id',
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
      'created_at',
      'updated_at',
    ],
    p.contacts.map((x) => [
      c,
      x.name,
      x.email,
      x.phone,
      x.kind,
      JSON.stringify(x.tags),
      x.status,
      x.source,
      x.address_line1,
      x.address_line2,
      x.city,
      x.region,
      x.postal_code,
      'US',
      t(x.created_at),
      t(x.updated_at),
    ]),
  );
  const paymentMethods = await w.insert(
    'payment_methods',
    [
      'company_id',
      'contact_id',
      'type',
      'brand',
      'last4',
      'exp_month',
      'exp_year',
      'is_default',
      'created_at',
    ],
    p.paymentMethods.map((m) => [
      c,
      contacts[m.contact],
      m.type,
      m.brand,
      m.last4,
      m.exp_month,
      m.exp_year,
      m.is_default ? 1 : 0,
      t(m.created_at),
    ]),
  );
  const deals = await w.insert(
    'deals',
    [
      'company_id',
      'contact_id',
      'title',
      'stage',
      'amount_cents',
      'owner_user_id',
      'created_at',
      'updated_at',
      'closed_at',
    ],
    p.deals.map((d) => {
      const last = d.history[d.history.length - 1]!;
      const closed = last.to === 'won' || last.to === 'lost';
      return [
        c,
        contacts[d.contact],
        d.title,
        last.to,
        d.amount_cents,
        d.owner,
        t(d.history[0]!.at),
        t(last.at),
        closed ? t(last.at) : null,
      ];
    }),
  );
  const historyRows = p.deals.flatMap((d, i) =>
    d.history.map((h) => [c, deals[i], h.from, h.to, t(h.at), h.by]),
  );
  const historyFlat = await w.insert(
    'deal_stage_history',
    ['company_id', 'deal_id', 'from_stage', 'to_stage', 'changed_at', 'changed_by_user_id'],
    historyRows,
  );
  let k = 0;
  const history = p.deals.map((d) => d.history.map(() => historyFlat[k++]!));
  const appointments = await w.insert(
    'appointments',
    [
      'company_id',
      'contact_id',
      'technician_user_id',
      'deal_id',
      'service',
      'starts_at',
      'ends_at',
      'status',
      'notes',
      'created_at',
      'updated_at',
    ],
    p.appointments.map((a) => [
      c,
      contacts[a.contact],
      a.tech,
      a.deal === null ? null : deals[a.deal],
      a.service.service,
      t(a.starts_at),
      t(a.ends_at),
      a.status,
      a.cancel === null
        ? a.notes
        : [a.notes, `Cancelled: ${a.cancel.reason}`].filter((s) => s !== null).join('\n'),
      t(a.created_at),
      t(a.updated_at),
    ]),
  );
  const parts = await w.insert(
    'parts',
    [
      'company_id',
      'sku',
      'name',
      'category',
      'quantity_on_hand',
      'reorder_point',
      'unit_cost_cents',
      'unit_price_cents',
      'location',
      'updated_at',
    ],
    p.parts.map((x) => [
      c,
      x.sku,
      x.name,
      x.category,
      x.quantity_on_hand,
      x.reorder_point,
      x.unit_cost_cents,
      x.unit_price_cents,
      x.location,
      t(x.updated_at),
    ]),
  );
  const usage = await w.insert(
    'part_usage',
    ['company_id', 'appointment_id', 'part_id', 'quantity', 'used_at'],
    p.usage.map((u) => [c, appointments[u.appointment], parts[u.part], u.quantity, t(u.used_at)]),
  );
  const invoices = await w.insert(
    'invoices',
    [
      'company_id',
      'contact_id',
      'appointment_id',
      'number',
      'status',
      'amount_cents',
      'paid_cents',
      'due_at',
      'issued_at',
      'paid_at',
      'created_at',
      'updated_at',
    ],
    p.invoices.map((i) => [
      c,
      contacts[i.contact],
      i.appointment === null ? null : appointments[i.appointment],
      i.number,
      i.status,
      i.amount_cents,
      i.paid_cents,
      t(i.due_at),
      t(i.issued_at),
      t(i.paid_at),
      t(i.created_at),
      t(i.updated_at),
    ]),
  );
  await w.insert(
    'invoice_lines',
    ['company_id', 'invoice_id', 'part_id', 'description', 'quantity', 'unit_price_cents', 'amount_cents'],
    p.invoices.flatMap((inv, i) =>
      inv.lines.map((l) => [
        c,
        invoices[i],
        l.part === null ? null : parts[l.part],
        l.description,
        l.quantity,
        l.unit_price_cents,
        l.quantity * l.unit_price_cents,
      ]),
    ),
  );
  const payments = await w.insert(
    'payments',
    [
      'company_id',
      'invoice_id',
      'payment_method_id',
      'charge_ref',
      'amount_cents',
      'refunded_cents',
      'fee_cents',
      'status',
      'method',
      'failure_reason',
      'created_at',
      'updated_at',
    ],
    p.payments.map((x) => [
      c,
      invoices[x.invoice],
      x.method_ref === null ? null : paymentMethods[x.method_ref],
      x.charge_ref,
      x.amount_cents,
      x.refunded_cents,
      x.fee_cents,
      x.status,
      x.method,
      x.failure_reason,
      t(x.created_at),
      t(x.updated_at),
    ]),
  );
  const refunds = await w.insert(
    'refunds',
    [
      'company_id',
      'payment_id',
      'refund_ref',
      'amount_cents',
      'fee_refunded_cents',
      'reason',
      'created_by_user_id',
      'created_at',
    ],
    p.refunds.map((r) => [
      c,
      payments[r.payment],
      r.refund_ref,
      r.amount_cents,
      r.fee_refunded_cents,
      r.reason,
      r.by,
      t(r.created_at),
    ]),
  );
  const notes = await w.insert(
    'notes',
    ['company_id', 'contact_id', 'body', 'author_user_id', 'created_at'],
    p.notes.map((n) => [c, contacts[n.contact], n.body, n.author, t(n.created_at)]),
  );
  const kb = await w.insert(
    'kb_articles',
    ['company_id', 'slug', 'title', 'body', 'tags', 'created_at', 'updated_at'],
    p.kb.map((a) => [c, a.slug, a.title, a.body, JSON.stringify(a.tags), t(a.created_at), t(a.updated_at)]),
  );
  const relatedId = (r: PEmail['related']) =>
    (r.type === 'invoice' ? invoices : r.type === 'payment' ? payments : appointments)[r.index];
  const emails = await w.insert(
    'email_outbox',
    [
      'company_id',
      'to_address',
      'subject',
      'body',
      'status',
      'related_entity_type',
      'related_entity_id',
      'error',
      'created_at',
      'sent_at',
    ],
    p.emails.map((e) => [
      c,
      e.to_address,
      e.subject,
      e.body,
      e.status,
      e.related.type,
      relatedId(e.related),
      e.error,
      t(e.created_at),
      t(e.sent_at),
    ]),
  );
  const d = p.droplet;
  const [droplet] = await w.insert(
    'droplets',
    [
      'company_id',
      'name',
      'size',
      'size_slug',
      'region',
      'ip',
      'health',
      'cpu_pct',
      'memory_pct',
      'disk_pct',
      'workers',
      'queue_depth',
      'created_at',
      'updated_at',
    ],
    [
      [
        c,
        d.name,
        d.size,
        DROPLET_SIZES[d.size].slug,
        d.region,
        d.ip,
        JSON.stringify(d.health),
        d.cpu_pct,
        d.memory_pct,
        d.disk_pct,
        d.workers,
        d.queue_depth,
        t(d.created_at),
        t(d.scaled_at),
      ],
    ],
  );
  const s = p.subscription;
  const [subscription] = await w.insert(
    'plan_subscriptions',
    ['company_id', 'tier', 'status', 'seats', 'started_at', 'renews_at', 'updated_at'],
    [[c, s.tier, 'active', s.seats, t(s.started_at), t(s.renews_at), t(s.started_at)]],
  );
  return {
    contacts,
    paymentMethods,
    deals,
    history,
    appointments,
    parts,
    usage,
    invoices,
    payments,
    refunds,
    notes,
    kb,
    emails,
    droplet: droplet!,
    subscription: subscription!,
  };
}

// ---------------------------------------------------------------------------------------------
// Events

function buildEvents(p: CompanyPlan, ids: PlanIds): DomainEvent[] {
  const list: Array<DomainEvent & { seq: number }> = [];
  const add = (
    type: DomainEventType,
    entity_type: string,
    entity_id: number,
    at: number,
    actor: EventActor,
    payload: Record<string, unknown>,
  ) => list.push({ type, entity_type, entity_id, payload, occurred_at: iso(at), actor, seq: list.length });
  /** Actors generated as `customer:<plan index>` name the contact's id once it exists. */
  const actor = (a: EventActor): EventActor =>
    a.startsWith('customer:') ? `customer:${ids.contacts[Number(a.slice(9))]}` : a;
  const owner = p.employees[0]!.user_id;

  for (const e of p.employees) {
    add(
      'employee.hired',
      'employee',
      e.user_id,
      e.hired_at,
      e.user_id === owner ? 'system:onboarding' : `user:${owner}`,
      { name: e.name, role: e.role, title: e.title },
    );
  }
  p.contacts.forEach((x, i) => {
    const id = ids.contacts[i]!;
    add('contact.created', 'contact', id, x.created_at, actor(x.created_by), {
      name: x.name,
      kind: x.kind,
      source: x.source,
    });
    for (const s of x.status_changes)
      add('contact.status_changed', 'contact', id, s.at, 'system:lifecycle', {
        from: s.from,
        to: s.to,
        reason: s.reason,
      });
  });
  p.notes.forEach((n, i) =>
    add('note.added', 'note', ids.notes[i]!, n.created_at, `user:${n.author}`, {
      contact_id: ids.contacts[n.contact],
    }),
  );
  p.deals.forEach((d, i) => {
    const id = ids.deals[i]!;
    const contactId = ids.contacts[d.contact];
    d.history.forEach((h, j) => {
      if (h.from === null) {
        add('deal.created', 'deal', id, h.at, `user:${h.by}`, {
          contact_id: contactId,
          title: d.title,
          amount_cents: d.amount_cents,
          stage: h.to,
          history_id: ids.history[i]![j],
        });
      } else {
        add('deal.stage_changed', 'deal', id, h.at, `user:${h.by}`, {
          contact_id: contactId,
          from_stage: h.from,
          to_stage: h.to,
          amount_cents: d.amount_cents,
          history_id: ids.history[i]![j],
        });
      }
    });
  });
  p.appointments.forEach((a, i) => {
    const id = ids.appointments[i]!;
    const contactId = ids.contacts[a.contact];
    add('appointment.scheduled', 'appointment', id, a.created_at, actor(a.booked_by), {
      contact_id: contactId,
      technician_user_id: a.tech,
      service: a.service.service,
      starts_at: iso(a.starts_at),
      ends_at: iso(a.ends_at),
      deal_id: a.deal === null ? null : ids.deals[a.deal],
    });
    if (a.status === 'completed')
      add('appointment.completed', 'appointment', id, a.ends_at, `user:${a.tech}`, {
        contact_id: contactId,
        service: a.service.service,
      });
    if (a.status === 'no_show')
      add('appointment.no_show', 'appointment', id, a.starts_at + 30 * MIN, `user:${a.tech}`, {
        contact_id: contactId,
      });
    if (a.cancel !== null)
      add('appointment.cancelled', 'appointment', id, a.cancel.at, actor(a.cancel.by), {
        contact_id: contactId,
        reason: a.cancel.reason,
      });
  });
  p.usage.forEach((u, i) => {
    const part = p.parts[u.part]!;
    add('part.used', 'part', ids.parts[u.part]!, u.used_at, `user:${p.appointments[u.appointment]!.tech}`, {
      usage_id: ids.usage[i],
      appointment_id: ids.appointments[u.appointment],
      sku: part.sku,
      quantity: u.quantity,
    });
  });
  p.invoices.forEach((inv, i) => {
    if (inv.issued_at === null) return;
    const id = ids.invoices[i]!;
    const contactId = ids.contacts[inv.contact];
    add('invoice.issued', 'invoice', id, inv.issued_at, 'system:billing', {
      contact_id: contactId,
      number: inv.number,
      amount_cents: inv.amount_cents,
      due_at: inv.due_at === null ? null : iso(inv.due_at),
      appointment_id: inv.appointment === null ? null : ids.appointments[inv.appointment],
    });
    if (inv.paid_at !== null)
      add('invoice.paid', 'invoice', id, inv.paid_at, 'system:billing', {
        contact_id: contactId,
        number: inv.number,
        amount_cents: inv.amount_cents,
      });
    if (inv.voided !== null)
      add('invoice.voided', 'invoice', id, inv.voided.at, `user:${inv.voided.by}`, {
        contact_id: contactId,
        number: inv.number,
      });
  });
  p.payments.forEach((x, i) => {
    const inv = p.invoices[x.invoice]!;
    const payload = {
      invoice_id: ids.invoices[x.invoice],
      invoice_number: inv.number,
      contact_id: ids.contacts[inv.contact],
      charge_ref: x.charge_ref,
      amount_cents: x.amount_cents,
      method: x.method,
    };
    if (x.status === 'failed')
      add('payment.failed', 'payment', ids.payments[i]!, x.created_at, actor(x.actor), {
        ...payload,
        failure_reason: x.failure_reason,
      });
    else add('payment.captured', 'payment', ids.payments[i]!, x.created_at, actor(x.actor), payload);
  });
  p.refunds.forEach((r, i) => {
    const pay = p.payments[r.payment]!;
    add('refund.issued', 'refund', ids.refunds[i]!, r.created_at, `user:${r.by}`, {
      payment_id: ids.payments[r.payment],
      charge_ref: pay.charge_ref,
      amount_cents: r.amount_cents,
      fee_refunded_cents: r.fee_refunded_cents,
      reason: r.reason,
    });
  });
  p.emails.forEach((e, i) => {
    const related = {
      related_entity_type: e.related.type,
      related_entity_id: (e.related.type === 'invoice'
        ? ids.invoices
        : e.related.type === 'payment'
          ? ids.payments
          : ids.appointments)[e.related.index],
    };
    if (e.status === 'queued')
      add('email.queued', 'email', ids.emails[i]!, e.created_at, 'system:mailer', {
        subject: e.subject,
        ...related,
      });
    else if (e.status === 'sent')
      add('email.sent', 'email', ids.emails[i]!, e.sent_at!, 'system:mailer', {
        subject: e.subject,
        ...related,
      });
    else
      add('email.failed', 'email', ids.emails[i]!, e.created_at + 2 * MIN, 'system:mailer', {
        subject: e.subject,
        error: e.error,
        ...related,
      });
  });
  p.kb.forEach((a, i) =>
    add('kb_article.published', 'kb_article', ids.kb[i]!, a.created_at, `user:${owner}`, {
      slug: a.slug,
      title: a.title,
    }),
  );
  const d = p.droplet;
  add('droplet.provisioned', 'droplet', ids.droplet, d.created_at, 'system:provisioning', {
    size: d.size,
    size_slug: DROPLET_SIZES[d.size].slug,
    region: d.region,
    workers: 1,
  });
  add('droplet.workers_scaled', 'droplet', ids.droplet, d.scaled_at, `user:${owner}`, {
    previous_workers: 1,
    workers: d.workers,
    delta: d.workers - 1,
  });
  add('subscription.started', 'subscription', ids.subscription, p.subscription.started_at, `user:${owner}`, {
    tier: p.subscription.tier,
    seats: p.subscription.seats,
  });

  list.sort((a, b) =>
    a.occurred_at < b.occurred_at ? -1 : a.occurred_at > b.occurred_at ? 1 : a.seq - b.seq,
  );
  return list.map(({ seq: _seq, ...event }) => event);
}

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
  // Progress units: rows written plus events emitted (counted on a build with placeholder ids).
  const total = plans.reduce((s, p) => s + planRowCount(p) + buildEvents(p, placeholderIds(p)).length, 0);
  const writer = new Writer(tx, total, options.onProgress);
  const results: SeededCompany[] = [];
  let fixtures: DemoFixtures | undefined;
  for (const [i, plan] of plans.entries()) {
    const ids = await writePlan(writer, plan);
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
