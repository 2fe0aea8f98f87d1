/**
 * Demo seed: the per-company generator (one seeded Faker, random helpers) and the order in which the domains are generated.
 */
import type { Faker } from '@faker-js/faker';
import { slugify } from '../data/kb.ts';
import { REGIONS } from '../demo-catalog.ts';
import {
  MIN,
  HOUR,
  DAY,
  HISTORY_DAYS,
  SLOT_HOURS,
  type PEmployee,
  type PDroplet,
  type PSubscription,
  type CompanyPlan,
} from './plan.ts';
import { DEMO_UTC_OFFSET_MINUTES, type SeedCompany } from './types.ts';
import { employees, contacts, contactStatuses } from './people.ts';
import { deals } from './deals.ts';
import { appointments } from './visits.ts';
import { parts, partUsage, invoices } from './billing.ts';
import { notes, kb, emailOutbox, infrastructure } from './content.ts';

type FakerModule = typeof import('@faker-js/faker');

/**
 * The data generator, loaded only when a demo is seeded: @faker-js/faker is an optional
 * dependency, so a production install that never seeds the demo neither loads nor needs it.
 */
export async function loadFaker(): Promise<FakerModule> {
  try {
    return await import('@faker-js/faker');
  } catch (err) {
    throw new Error(
      `seeding the demo needs @faker-js/faker (an optional dependency of solid-verbs): npm install @faker-js/faker (${(err as Error).message})`,
      { cause: err },
    );
  }
}

export class CompanyGenerator {
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
    employees(this);
    contacts(this);
    deals(this);
    appointments(this);
    parts(this);
    partUsage(this);
    invoices(this);
    contactStatuses(this);
    notes(this);
    kb(this);
    emailOutbox(this);
    infrastructure(this);
    return this.plan;
  }
}
