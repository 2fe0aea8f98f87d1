/**
 * Wire views of the business rows the verbs return: the data layer's records without
 * `company_id` (the caller's own tenant, never worth repeating), money in integer cents, stored
 * times as canonical UTC ISO 8601 and visit times in the business offset (business-time.ts).
 */
import type { Appointment } from '../data/appointments.ts';
import type { Contact, Note, PaymentMethod } from '../data/contacts.ts';
import type { Deal, DealStageChange } from '../data/deals.ts';
import type { EmailMessage } from '../data/email.ts';
import type { Droplet } from '../data/infrastructure.ts';
import type { Part, PartUsage } from '../data/inventory.ts';
import type { Invoice, InvoiceLine } from '../data/invoices.ts';
import type { KbArticle } from '../data/kb.ts';
import type { Payment, Refund } from '../data/payments.ts';
import type { Subscription } from '../data/subscriptions.ts';
import type { Employee } from '../data/team.ts';
import { DROPLET_SIZES } from '../schema.ts';
import { businessTime } from './business-time.ts';

type View = Record<string, unknown>;

export function contactView(c: Contact): View {
  return {
    id: c.id,
    name: c.name,
    email: c.email,
    phone: c.phone,
    kind: c.kind,
    status: c.status,
    tags: c.tags,
    source: c.source,
    address: {
      line1: c.address_line1,
      line2: c.address_line2,
      city: c.city,
      region: c.region,
      postal_code: c.postal_code,
      country: c.country,
    },
    created_at: c.created_at,
    updated_at: c.updated_at,
    erased_at: c.erased_at,
  };
}

export function paymentMethodView(m: PaymentMethod): View {
  return {
    id: m.id,
    type: m.type,
    brand: m.brand,
    last4: m.last4,
    exp_month: m.exp_month,
    exp_year: m.exp_year,
    is_default: m.is_default,
  };
}

export function noteView(n: Note): View {
  return {
    id: n.id,
    contact_id: n.contact_id,
    body: n.body,
    author_user_id: n.author_user_id,
    created_at: n.created_at,
  };
}

export function dealView(d: Deal): View {
  return {
    id: d.id,
    contact_id: d.contact_id,
    title: d.title,
    stage: d.stage,
    amount_cents: d.amount_cents,
    owner_user_id: d.owner_user_id,
    created_at: d.created_at,
    updated_at: d.updated_at,
    closed_at: d.closed_at,
  };
}

export function stageChangeView(h: DealStageChange): View {
  return {
    id: h.id,
    from_stage: h.from_stage,
    to_stage: h.to_stage,
    changed_at: h.changed_at,
    changed_by_user_id: h.changed_by_user_id,
  };
}

export function appointmentView(a: Appointment): View {
  return {
    id: a.id,
    contact_id: a.contact_id,
    technician_user_id: a.technician_user_id,
    deal_id: a.deal_id,
    service: a.service,
    starts_at: businessTime(a.starts_at),
    ends_at: businessTime(a.ends_at),
    status: a.status,
    notes: a.notes,
    created_at: a.created_at,
    updated_at: a.updated_at,
  };
}

export function invoiceView(i: Invoice): View {
  return {
    id: i.id,
    number: i.number,
    contact_id: i.contact_id,
    appointment_id: i.appointment_id,
    status: i.status,
    amount_cents: i.amount_cents,
    paid_cents: i.paid_cents,
    balance_cents: i.balance_cents,
    due_at: i.due_at,
    issued_at: i.issued_at,
    paid_at: i.paid_at,
    created_at: i.created_at,
  };
}

export function invoiceLineView(l: InvoiceLine): View {
  return {
    id: l.id,
    part_id: l.part_id,
    description: l.description,
    quantity: l.quantity,
    unit_price_cents: l.unit_price_cents,
    amount_cents: l.amount_cents,
  };
}

export function paymentView(p: Payment): View {
  return {
    id: p.id,
    invoice_id: p.invoice_id,
    charge_ref: p.charge_ref,
    method: p.method,
    payment_method_id: p.payment_method_id,
    amount_cents: p.amount_cents,
    refunded_cents: p.refunded_cents,
    net_cents: p.net_cents,
    fee_cents: p.fee_cents,
    status: p.status,
    failure_reason: p.failure_reason,
    created_at: p.created_at,
  };
}

export function refundView(r: Refund): View {
  return {
    id: r.id,
    payment_id: r.payment_id,
    refund_ref: r.refund_ref,
    amount_cents: r.amount_cents,
    fee_refunded_cents: r.fee_refunded_cents,
    reason: r.reason,
    created_by_user_id: r.created_by_user_id,
    created_at: r.created_at,
  };
}

export function partView(p: Part): View {
  return {
    id: p.id,
    sku: p.sku,
    name: p.name,
    category: p.category,
    quantity_on_hand: p.quantity_on_hand,
    reorder_point: p.reorder_point,
    low_stock: p.low_stock,
    unit_cost_cents: p.unit_cost_cents,
    unit_price_cents: p.unit_price_cents,
    location: p.location,
    updated_at: p.updated_at,
  };
}

export function partUsageView(u: PartUsage): View {
  return {
    id: u.id,
    appointment_id: u.appointment_id,
    part_id: u.part_id,
    quantity: u.quantity,
    used_at: u.used_at,
  };
}

export function emailView(e: EmailMessage): View {
  return {
    id: e.id,
    to_address: e.to_address,
    subject: e.subject,
    status: e.status,
    related_entity_type: e.related_entity_type,
    related_entity_id: e.related_entity_id,
    error: e.error,
    created_at: e.created_at,
    sent_at: e.sent_at,
  };
}

export function kbArticleView(a: KbArticle, withBody = true): View {
  return {
    id: a.id,
    slug: a.slug,
    title: a.title,
    tags: a.tags,
    ...(withBody
      ? { body: a.body }
      : { excerpt: a.body.length > 200 ? `${a.body.slice(0, 197)}...` : a.body }),
    updated_at: a.updated_at,
  };
}

export function employeeView(e: Employee): View {
  return {
    user_id: e.user_id,
    name: e.name,
    email: e.email,
    phone: e.phone,
    role: e.role,
    title: e.title,
    active: e.active,
    hired_at: e.hired_at,
  };
}

export function subscriptionView(s: Subscription): View {
  return {
    id: s.id,
    tier: s.tier,
    status: s.status,
    seats: s.seats,
    monthly_price_cents: s.monthly_price_cents,
    started_at: s.started_at,
    renews_at: s.renews_at,
  };
}

export function dropletView(d: Droplet): View {
  const size = DROPLET_SIZES[d.size];
  return {
    id: d.id,
    name: d.name,
    size: d.size,
    size_slug: d.size_slug,
    vcpus: size.vcpus,
    memory_gb: size.memory_gb,
    disk_gb: size.disk_gb,
    monthly_price_cents: size.monthly_price_cents,
    region: d.region,
    ip: d.ip,
    workers: d.workers,
    max_workers: size.max_workers,
    queue_depth: d.queue_depth,
  };
}
