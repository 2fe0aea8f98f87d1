/**
 * Demo seed: the public types, the demo seed and clock offset, and the fixture ids the tests rely on.
 */
import type { DomainEvent } from '../domain-event.ts';
import {
  type BusinessTable,
  type EmployeeRole,
  type EmployeeTitle,
  type SubscriptionTier,
} from '../schema.ts';

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
