/**
 * Demo seed: the plan of one company (rows referencing each other by array index), the clock constants and the generation tables.
 */
import { type ServiceType, type Trade } from '../demo-catalog.ts';
import type { EventActor } from '../domain-event.ts';
import {
  type AppointmentStatus,
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
} from '../schema.ts';
import { type SeedCompany } from './types.ts';

// ---------------------------------------------------------------------------------------------
// Time

export const MIN = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;
/** Days of history before the anchor. */
export const HISTORY_DAYS = 540;
/** Days of schedule after the anchor. */
export const SCHEDULE_DAYS = 45;
/** Visit windows, local hours. Every service lasts at most 2 h, so windows never overlap. */
export const SLOT_HOURS = [8, 10.5, 13, 15.5];
/** A contact with no activity for this long becomes inactive. */
export const INACTIVE_AFTER_DAYS = 270;

export const iso = (ms: number): string => new Date(ms).toISOString();

// ---------------------------------------------------------------------------------------------
// Plan: the rows of one company, referencing each other by array index

export interface PEmployee {
  user_id: number;
  name: string;
  email: string;
  phone: string;
  role: EmployeeRole;
  title: EmployeeTitle;
  hired_at: number;
}

export interface PContact {
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

export interface PPaymentMethod {
  contact: number;
  type: 'card' | 'ach';
  brand: string;
  last4: string;
  exp_month: number | null;
  exp_year: number | null;
  is_default: boolean;
  created_at: number;
}

export interface PStageChange {
  from: DealStage | null;
  to: DealStage;
  at: number;
  by: number;
}

export interface PDeal {
  contact: number;
  title: string;
  amount_cents: number;
  owner: number;
  history: PStageChange[];
  scripted: boolean;
}

export interface PAppointment {
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

export interface PPart {
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

export interface PUsage {
  appointment: number;
  part: number;
  quantity: number;
  used_at: number;
}

export interface PLine {
  part: number | null;
  description: string;
  quantity: number;
  unit_price_cents: number;
}

export interface PInvoice {
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

export interface PPayment {
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

export interface PRefund {
  payment: number;
  refund_ref: string;
  amount_cents: number;
  fee_refunded_cents: number;
  reason: string;
  by: number;
  created_at: number;
}

export interface PNote {
  contact: number;
  body: string;
  author: number;
  created_at: number;
}

export interface PKb {
  slug: string;
  title: string;
  body: string;
  tags: string[];
  created_at: number;
  updated_at: number;
}

export interface PEmail {
  to_address: string;
  subject: string;
  body: string;
  status: 'queued' | 'sent' | 'failed';
  related: { type: 'invoice' | 'payment' | 'appointment'; index: number };
  error: string | null;
  created_at: number;
  sent_at: number | null;
}

export interface PDroplet {
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

export interface PSubscription {
  tier: SubscriptionTier;
  seats: number;
  started_at: number;
  renews_at: number;
}

export interface CompanyPlan {
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

export const FIXTURE_CONTACT_INDEX = 41;

export const DEAL_DWELL_DAYS: Record<string, number> = {
  new: 3,
  qualified: 4,
  estimate_scheduled: 6,
  proposal_sent: 8,
  negotiation: 6,
};
export const DEAL_TRANSITIONS: Record<string, Array<{ weight: number; value: DealStage }>> = {
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

export const COMMERCIAL_SUFFIXES = [
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
export const FREE_MAIL = ['gmail.com', 'yahoo.com', 'outlook.com', 'icloud.com', 'hotmail.com'];
export const EXTRA_TAGS = [
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
export const FAILURE_REASONS = ['card_declined', 'insufficient_funds', 'expired_card'];
