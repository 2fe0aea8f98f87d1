/**
 * Demo seed: parts, part usage, invoices, payments and refunds (see ../seed.ts for the determinism rules).
 */
import type { CompanyGenerator } from './generator.ts';
import { processingFeeCents, refundedFeeCents } from '../data/payments.ts';
import { PART_LOCATIONS, PARTS, REFUND_REASONS, type Trade } from '../demo-catalog.ts';
import { type ContactKind, type PaymentMethodKind, type PaymentStatus } from '../schema.ts';
import { FIRST_INVOICE_NUMBER } from '../data/invoices.ts';
import { MIN, HOUR, DAY, type PUsage, type PLine, type PInvoice, FAILURE_REASONS } from './plan.ts';

export function parts(g: CompanyGenerator): void {
  const n = g.position === 0 ? 40 : 10;
  const chosen = g.f.helpers
    .shuffle(PARTS.map((p, i) => ({ p, i })))
    .slice(0, n)
    .sort((a, b) => a.i - b.i);
  const lowStock = new Set(
    g.f.helpers.arrayElements(
      chosen.map((c) => c.i),
      Math.max(2, Math.round(n * 0.15)),
    ),
  );
  for (const { p, i } of chosen) {
    const cost = g.int(p.min_cost_cents, p.max_cost_cents);
    const reorder = g.int(4, 12);
    g.plan.parts.push({
      sku: `${p.category === 'plumbing' ? 'PLB' : 'HVC'}-${1001 + i}`,
      name: p.name,
      category: p.category,
      quantity_on_hand: lowStock.has(i) ? g.int(0, reorder) : g.int(reorder + 1, reorder + 48),
      reorder_point: reorder,
      unit_cost_cents: cost,
      unit_price_cents: Math.round((cost * g.int(160, 220)) / 100),
      location: g.pick(PART_LOCATIONS),
      updated_at: g.anchor - g.int(1, 30) * DAY - g.int(0, 10) * HOUR,
    });
  }
}

export function partUsage(g: CompanyGenerator): void {
  const byTrade = (trade: Trade) => {
    const own = g.plan.parts.map((p, i) => ({ p, i })).filter((x) => x.p.category === trade);
    return own.length > 0 ? own : g.plan.parts.map((p, i) => ({ p, i }));
  };
  g.plan.appointments.forEach((a, idx) => {
    if (a.status !== 'completed' || a.service.estimate === true || a.fixture !== null) return;
    if (!g.chance(a.service.parts_chance)) return;
    const used = g.f.helpers.arrayElements(byTrade(a.service.trade), g.int(1, 3));
    for (const { i } of used) {
      g.plan.usage.push({
        appointment: idx,
        part: i,
        quantity: g.int(1, 2),
        used_at: a.starts_at + 45 * MIN,
      });
    }
  });
}

export function invoices(g: CompanyGenerator): void {
  const drafts: PInvoice[] = [];
  const issued: PInvoice[] = [];
  const usageByAppointment = new Map<number, PUsage[]>();
  for (const u of g.plan.usage)
    usageByAppointment.set(u.appointment, [...(usageByAppointment.get(u.appointment) ?? []), u]);
  const place = (inv: PInvoice) => (inv.issued_at === null ? drafts : issued).push(inv);
  g.plan.appointments.forEach((a, idx) => {
    if (a.status !== 'completed' || a.service.estimate === true) return;
    const contact = g.plan.contacts[a.contact]!;
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
      const part = g.plan.parts[u.part]!;
      lines.push({
        part: u.part,
        description: part.name,
        quantity: u.quantity,
        unit_price_cents: part.unit_price_cents,
      });
    }
    if (a.fixture === 'open') {
      const valve = g.plan.parts.findIndex((p) => p.name === 'T&P relief valve 3/4"');
      const part = valve >= 0 ? valve : 0;
      lines.push({
        part,
        description: g.plan.parts[part]!.name,
        quantity: 1,
        unit_price_cents: g.plan.parts[part]!.unit_price_cents,
      });
      g.plan.usage.push({ appointment: idx, part, quantity: 1, used_at: a.starts_at + 45 * MIN });
    }
    const delayed = a.fixture === null && g.chance(0.08);
    const issueAt = a.ends_at + (delayed ? g.int(1, 3) * DAY : g.int(30, 180) * MIN);
    place(
      newInvoice(
        g,
        a.contact,
        idx,
        lines,
        issueAt,
        contact.kind,
        a.fixture === 'paid' || a.fixture === 'open' ? a.fixture : null,
      ),
    );
  });
  g.plan.deals.forEach((deal) => {
    const last = deal.history[deal.history.length - 1]!;
    if (last.to !== 'won') return;
    const issueAt = last.at + g.int(2, 20) * DAY;
    if (issueAt >= g.anchor) return;
    const kind = g.plan.contacts[deal.contact]!.kind;
    place(
      newInvoice(
        g,
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
  g.plan.invoices = [...issued, ...drafts];
  g.plan.invoices.forEach((inv, i) => (inv.number = FIRST_INVOICE_NUMBER + i));
  g.plan.invoices.forEach((inv, i) => settle(g, inv, i));
  g.plan.payments.sort((a, b) => a.created_at - b.created_at);
  refunds(g);
}

export function newInvoice(
  g: CompanyGenerator,
  contact: number,
  appointment: number | null,
  lines: PLine[],
  issueAt: number,
  kind: ContactKind,
  fixture: PInvoice['fixture'],
): PInvoice {
  const amount = lines.reduce((s, l) => s + l.quantity * l.unit_price_cents, 0);
  const draft = issueAt >= g.anchor;
  const createdAt = draft ? Math.min(issueAt, g.anchor - 30 * MIN) : issueAt;
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

export function paymentMethodFor(
  g: CompanyGenerator,
  contactIdx: number,
): { method: PaymentMethodKind; ref: number | null } {
  const c = g.plan.contacts[contactIdx]!;
  const method = g.weighted<PaymentMethodKind>([
    { weight: c.card !== null ? 70 : 0, value: 'card' },
    { weight: c.ach !== null ? 15 : 0, value: 'ach' },
    { weight: c.card !== null ? 10 : 70, value: 'check' },
    { weight: c.card !== null ? 5 : 30, value: 'cash' },
  ]);
  return { method, ref: method === 'card' ? c.card : method === 'ach' ? c.ach : null };
}

export function addPayment(
  g: CompanyGenerator,
  invoiceIdx: number,
  amount: number,
  at: number,
  how: { method: PaymentMethodKind; ref: number | null },
  status: PaymentStatus,
  fixture = false,
): void {
  const inv = g.plan.invoices[invoiceIdx]!;
  const online = (how.method === 'card' || how.method === 'ach') && g.chance(0.5);
  g.plan.payments.push({
    invoice: invoiceIdx,
    method_ref: how.ref,
    charge_ref: g.uniqueRef('ch'),
    amount_cents: amount,
    refunded_cents: 0,
    fee_cents: status === 'failed' ? 0 : processingFeeCents(how.method, amount),
    status,
    method: how.method,
    failure_reason: status === 'failed' ? g.pick(FAILURE_REASONS) : null,
    created_at: at,
    updated_at: at,
    actor: online ? `customer:${inv.contact}` : `user:${g.pick(g.staffUsers)}`,
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

export function settle(g: CompanyGenerator, inv: PInvoice, idx: number): void {
  if (inv.issued_at === null) return;
  const issued = inv.issued_at;
  const c = g.plan.contacts[inv.contact]!;
  if (inv.fixture === 'open') return;
  if (inv.fixture === 'paid') {
    addPayment(g, idx, inv.amount_cents, issued + 5 * MIN, { method: 'card', ref: c.card }, 'captured', true);
    return;
  }
  const age = g.anchor - issued;
  if (g.chance(0.02)) {
    const at = Math.min(issued + g.int(1, 5) * DAY, g.anchor - HOUR);
    inv.status = 'void';
    inv.voided = { at, by: g.pick(g.adminUsers) };
    inv.updated_at = at;
    return;
  }
  const outcome = g.weighted<'paid' | 'partial' | 'open'>(
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
  const how = paymentMethodFor(g, inv.contact);
  const first = g.timeBetween(issued + MIN, Math.min(issued + 20 * DAY, g.anchor - HOUR));
  if (how.method === 'card' && g.chance(0.06)) {
    addPayment(g, idx, inv.amount_cents, g.timeBetween(issued, first), how, 'failed');
  }
  if (outcome === 'partial') {
    addPayment(
      g,
      idx,
      Math.max(100, Math.round((inv.amount_cents * g.between(0.2, 0.6)) / 100) * 100),
      first,
      how,
      'captured',
    );
    return;
  }
  if (inv.amount_cents >= 40000 && g.chance(0.15)) {
    const deposit = Math.round((inv.amount_cents * g.between(0.3, 0.5)) / 100) * 100;
    addPayment(g, idx, deposit, first, how, 'captured');
    const second = g.timeBetween(first + HOUR, Math.min(first + 20 * DAY, g.anchor - 30 * MIN));
    addPayment(g, idx, inv.amount_cents - deposit, second, paymentMethodFor(g, inv.contact), 'captured');
    return;
  }
  addPayment(g, idx, inv.amount_cents, first, how, 'captured');
}

export function refunds(g: CompanyGenerator): void {
  g.plan.payments.forEach((p, idx) => {
    if (p.fixture || p.status === 'failed' || (p.method !== 'card' && p.method !== 'ach')) return;
    if (p.created_at >= g.anchor - 2 * DAY) return;
    const r = g.f.number.float();
    if (r >= 0.09) return;
    const full = r < 0.025;
    const amount = full
      ? p.amount_cents
      : Math.min(
          p.amount_cents - 100,
          Math.max(100, Math.round((p.amount_cents * g.between(0.1, 0.5)) / 100) * 100),
        );
    if (amount <= 0) return;
    const at = g.timeBetween(p.created_at + DAY, Math.min(p.created_at + 30 * DAY, g.anchor - HOUR));
    g.plan.refunds.push({
      payment: idx,
      refund_ref: g.uniqueRef('re'),
      amount_cents: amount,
      fee_refunded_cents: refundedFeeCents(p.method, amount),
      reason: g.pick(REFUND_REASONS),
      by: g.pick(g.adminUsers),
      created_at: at,
    });
    p.refunded_cents = amount;
    p.status = full ? 'refunded' : 'partially_refunded';
    p.updated_at = at;
  });
  g.plan.refunds.sort((a, b) => a.created_at - b.created_at);
}
