/**
 * Demo seed: writing one company's plan with multi-row INSERTs, ids read back in VALUES order.
 */
import type { Queryable } from '../../store/store.ts';
import { num } from '../data/row-values.ts';
import { CONTACT_EDITABLE_FIELDS } from '../data/contacts.ts';
import { DROPLET_SIZES, type BusinessTable } from '../schema.ts';
import { iso, type PEmail, type CompanyPlan } from './plan.ts';

// ---------------------------------------------------------------------------------------------
// Writing

/** Inserts with multi-row VALUES; returns the new ids in row order. */
export class Writer {
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

export function planRowCount(p: CompanyPlan): number {
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

export interface PlanIds {
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

export async function writePlan(w: Writer, p: CompanyPlan): Promise<PlanIds> {
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
    // The editable fields in their stable order; the values below follow it.
    ['company_id', ...CONTACT_EDITABLE_FIELDS, 'created_at', 'updated_at'],
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
