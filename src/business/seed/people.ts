/**
 * Demo seed: employees and contacts of one company, and the contacts' final statuses (see ../seed.ts for the determinism rules).
 */
import type { CompanyGenerator } from './generator.ts';
import { slugify } from '../data/kb.ts';
import { BANKS, CARD_BRANDS } from '../demo-catalog.ts';
import { type ContactKind, type EmployeeRole, type EmployeeTitle } from '../schema.ts';
import {
  HOUR,
  DAY,
  INACTIVE_AFTER_DAYS,
  type PContact,
  FIXTURE_CONTACT_INDEX,
  COMMERCIAL_SUFFIXES,
  FREE_MAIL,
  EXTRA_TAGS,
} from './plan.ts';

export function employees(g: CompanyGenerator): void {
  const roster: Array<[EmployeeTitle, EmployeeRole]> =
    g.position === 0
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
    const first = g.f.person.firstName();
    const last = g.f.person.lastName();
    g.plan.employees.push({
      user_id: g.position * 100 + i + 1,
      name: `${first} ${last}`,
      email: g.uniqueEmail(`${first}.${last}`, g.domain),
      phone: g.phone(),
      role,
      title,
      hired_at: i === 0 ? g.start - 6 * 365 * DAY : g.start - g.int(30, 5 * 365) * DAY + g.int(8, 10) * HOUR,
    });
  });
}

export function contacts(g: CompanyGenerator): void {
  const n = g.count(200);
  const times = Array.from({ length: n }, () => g.timeBetween(g.start, g.anchor - 2 * DAY)).sort(
    (a, b) => a - b,
  );
  const fixture = g.position === 0 ? FIXTURE_CONTACT_INDEX : -1;
  times.forEach((createdAt, i) => {
    const kind: ContactKind = i === fixture || g.chance(0.25) ? 'commercial' : 'residential';
    let name: string;
    let email: string | null;
    if (kind === 'commercial') {
      name = `${g.f.person.lastName()} ${g.pick(COMMERCIAL_SUFFIXES)}`;
      email = g.uniqueEmail(g.pick(['office', 'facilities', 'accounts', 'manager']), `${slugify(name)}.com`);
    } else {
      const first = g.f.person.firstName();
      const last = g.f.person.lastName();
      name = `${first} ${last}`;
      email = g.chance(0.95) ? g.uniqueEmail(`${first}.${last}`, g.pick(FREE_MAIL)) : null;
    }
    const extra = g.f.helpers.arrayElements(EXTRA_TAGS, { min: 0, max: 2 });
    const tags =
      i === fixture ? ['vip', 'commercial'] : kind === 'commercial' ? ['commercial', ...extra] : extra;
    const source = g.weighted([
      { weight: 35, value: 'web' },
      { weight: 25, value: 'referral' },
      { weight: 20, value: 'phone' },
      { weight: 10, value: 'repeat' },
      { weight: 10, value: 'ads' },
    ]);
    const leadOnly = i !== fixture && g.chance(0.12);
    const weight = leadOnly ? 0 : i === fixture ? 4 : g.between(0.3, 2.5) * (kind === 'commercial' ? 1.8 : 1);
    const contact: PContact = {
      name,
      email,
      phone: g.phone(),
      kind,
      tags,
      status: 'lead',
      source,
      address_line1: g.f.location.streetAddress(),
      address_line2:
        kind === 'commercial'
          ? g.chance(0.3)
            ? `Suite ${g.int(100, 450)}`
            : null
          : g.chance(0.08)
            ? `Apt ${g.int(1, 40)}`
            : null,
      city: g.pick(g.profile.cities),
      region: g.profile.region,
      postal_code: `${g.profile.postal_prefix}${g.f.string.numeric(3)}`,
      created_at: createdAt,
      updated_at: createdAt,
      weight,
      created_by: source === 'web' ? `customer:${i}` : `user:${g.pick(g.staffUsers)}`,
      status_changes: [],
      card: null,
      ach: null,
    };
    const idx = g.plan.contacts.push(contact) - 1;
    if (i === fixture || g.chance(0.72)) {
      contact.card =
        g.plan.paymentMethods.push({
          contact: idx,
          type: 'card',
          brand:
            i === fixture
              ? 'visa'
              : g.weighted([
                  { weight: 50, value: CARD_BRANDS[0]! },
                  { weight: 30, value: CARD_BRANDS[1]! },
                  { weight: 12, value: CARD_BRANDS[2]! },
                  { weight: 8, value: CARD_BRANDS[3]! },
                ]),
          last4: i === fixture ? '4242' : g.f.string.numeric(4),
          exp_month: g.int(1, 12),
          exp_year: new Date(g.anchor).getUTCFullYear() + g.int(1, 5),
          is_default: true,
          created_at: createdAt,
        }) - 1;
    }
    if (i !== fixture && g.chance(kind === 'commercial' ? 0.35 : 0.08)) {
      contact.ach =
        g.plan.paymentMethods.push({
          contact: idx,
          type: 'ach',
          brand: g.pick(BANKS),
          last4: g.f.string.numeric(4),
          exp_month: null,
          exp_year: null,
          is_default: contact.card === null,
          created_at: createdAt,
        }) - 1;
    }
  });
}

export function contactStatuses(g: CompanyGenerator): void {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  const touch = (c: number, at: number) => {
    first.set(c, Math.min(first.get(c) ?? at, at));
    last.set(c, Math.max(last.get(c) ?? at, at));
  };
  for (const a of g.plan.appointments) if (a.status === 'completed') touch(a.contact, a.ends_at);
  for (const p of g.plan.payments)
    if (p.status !== 'failed') touch(g.plan.invoices[p.invoice]!.contact, p.created_at);
  g.plan.contacts.forEach((c, idx) => {
    const f = first.get(idx);
    if (f === undefined) return;
    c.status_changes.push({ from: 'lead', to: 'active', at: f, reason: 'first completed visit' });
    c.status = 'active';
    c.updated_at = f;
    const inactiveAt = last.get(idx)! + INACTIVE_AFTER_DAYS * DAY;
    if (inactiveAt < g.anchor) {
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
