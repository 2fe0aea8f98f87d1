/**
 * Demo seed: notes, knowledge-base articles, the email outbox, the droplet and the subscription (see ../seed.ts for the determinism rules).
 */
import type { CompanyGenerator } from './generator.ts';
import { slugify } from '../data/kb.ts';
import { KB_ARTICLES, NOTE_TEMPLATES } from '../demo-catalog.ts';
import { TIERS } from '../schema.ts';
import { MIN, HOUR, DAY, iso } from './plan.ts';
import { DEMO_UTC_OFFSET_MINUTES } from './types.ts';

export function notes(g: CompanyGenerator): void {
  const n = g.count(150);
  const weights = g.plan.contacts.map((c, idx) => ({ weight: c.weight + 0.5, value: idx }));
  for (let i = 0; i < n; i++) {
    const contactIdx = g.weighted(weights);
    const contact = g.plan.contacts[contactIdx]!;
    g.plan.notes.push({
      contact: contactIdx,
      body: g.pick(NOTE_TEMPLATES).replace('{code}', g.f.string.numeric(4)),
      author: g.pick(g.staffUsers),
      created_at: g.timeBetween(contact.created_at + MIN, g.anchor - HOUR),
    });
  }
  g.plan.notes.sort((a, b) => a.created_at - b.created_at);
}

export function kb(g: CompanyGenerator): void {
  const n = g.position === 0 ? KB_ARTICLES.length : 6;
  for (const a of KB_ARTICLES.slice(0, n)) {
    const created = g.timeBetween(g.start, g.start + 300 * DAY);
    g.plan.kb.push({
      slug: slugify(a.title),
      title: a.title,
      body: a.body,
      tags: a.tags,
      created_at: created,
      updated_at: g.chance(0.4) ? g.timeBetween(created, g.anchor - HOUR) : created,
    });
  }
}

export function emailOutbox(g: CompanyGenerator): void {
  const name = g.company.name;
  const money = (cents: number) => `$${(cents / 100).toFixed(2)}`;
  g.plan.invoices.forEach((inv, idx) => {
    const to = g.plan.contacts[inv.contact]!.email;
    if (inv.issued_at === null || to === null || inv.issued_at < g.anchor - 120 * DAY) return;
    const failed = g.chance(0.03);
    g.plan.emails.push({
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
  g.plan.payments.forEach((p, idx) => {
    const to = g.plan.contacts[g.plan.invoices[p.invoice]!.contact]!.email;
    if (p.status === 'failed' || to === null || p.created_at < g.anchor - 60 * DAY) return;
    g.plan.emails.push({
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
  g.plan.appointments.forEach((a, idx) => {
    const to = g.plan.contacts[a.contact]!.email;
    if (to === null || a.status === 'cancelled') return;
    const day = g.dayOf(a.starts_at);
    const subject = `Reminder: ${a.service.service} visit on ${iso(a.starts_at + DEMO_UTC_OFFSET_MINUTES * MIN).slice(0, 10)}`;
    const body = `Hello,\n\nThis is a reminder of your ${a.service.service.toLowerCase()} visit. Our technician will arrive within the booked window.\n\n${name}`;
    if (day >= 0 && day <= 2) {
      const created = g.anchor - g.int(10, 120) * MIN;
      g.plan.emails.push({
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
      g.plan.emails.push({
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
  g.plan.emails.sort((a, b) => a.created_at - b.created_at);
}

export function infrastructure(g: CompanyGenerator): void {
  const created = g.start - 200 * DAY;
  const name = `${slugify(g.company.name) || 'company'}-prod-1`;
  if (g.position === 0) {
    // The values of the upstream infrastructure_diagnose example.
    g.plan.droplet = {
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
  } else if (g.position === 1) {
    // A struggling server, so diagnose has something to find.
    g.plan.droplet = {
      name,
      size: 'MEDIUM',
      region: g.profile.droplet_region,
      ip: `10.0.${g.position}.17`,
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
    g.plan.droplet = {
      name,
      size: 'SMALL',
      region: g.profile.droplet_region,
      ip: `10.0.${g.position % 250}.${g.int(10, 250)}`,
      health: { backend: true, frontend: true, database: true, redis: true, mcp: true },
      cpu_pct: Math.round(g.between(5, 40) * 10) / 10,
      memory_pct: Math.round(g.between(30, 60) * 10) / 10,
      disk_pct: Math.round(g.between(20, 70) * 10) / 10,
      workers: 2,
      queue_depth: g.int(0, 10),
      created_at: created,
      scaled_at: created + 60 * DAY,
    };
  }
  const tier = g.company.tier;
  const max = TIERS[tier].max_seats;
  const started = created;
  const periods = Math.floor((g.anchor - started) / (30 * DAY)) + 1;
  g.plan.subscription = {
    tier,
    seats: max === null ? g.plan.employees.length : Math.min(max, g.plan.employees.length),
    started_at: started,
    renews_at: started + periods * 30 * DAY,
  };
}
