/**
 * Demo seed: appointments placed in free technician windows (see ../seed.ts for the determinism rules).
 */
import type { CompanyGenerator } from './generator.ts';
import { APPOINTMENT_NOTES, SERVICES, type ServiceType } from '../demo-catalog.ts';
import { type AppointmentStatus, type ContactKind } from '../schema.ts';
import { MIN, HOUR, DAY, SCHEDULE_DAYS, type PAppointment } from './plan.ts';

/** Reserve a free (technician, window) on one of the days [lo, hi], starting at `first`. */
export function findSlot(
  g: CompanyGenerator,
  lo: number,
  hi: number,
  first?: number,
): { day: number; slot: number; tech: number } | null {
  if (hi < lo) return null;
  const span = hi - lo + 1;
  const start = first ?? g.int(lo, hi);
  for (let k = 0; k < Math.min(span, 14); k++) {
    const day = lo + ((start - lo + k) % span);
    const slots = g.f.helpers.shuffle([0, 1, 2, 3]);
    const techs = g.f.helpers.shuffle([...g.techUsers]);
    for (const slot of slots) {
      for (const tech of techs) {
        const key = `${tech}:${day}:${slot}`;
        if (!g.occupied.has(key)) {
          g.occupied.add(key);
          return { day, slot, tech };
        }
      }
    }
  }
  return null;
}

export function addAppointment(
  g: CompanyGenerator,
  contactIdx: number,
  service: ServiceType,
  where: { day: number; slot: number; tech: number },
  status: AppointmentStatus,
  deal: number | null,
  fixture: PAppointment['fixture'] = null,
): void {
  const contact = g.plan.contacts[contactIdx]!;
  const startsAt = g.slotStart(where.day, where.slot);
  const endsAt = startsAt + service.duration_minutes * MIN;
  let createdAt = startsAt - g.int(1, 21) * DAY - g.int(0, 8) * HOUR;
  createdAt = Math.min(Math.max(createdAt, contact.created_at + 10 * MIN), g.anchor - HOUR, startsAt - HOUR);
  let cancel: PAppointment['cancel'] = null;
  let updatedAt = createdAt;
  if (status === 'cancelled') {
    const at = g.timeBetween(createdAt, Math.min(startsAt, g.anchor));
    cancel = {
      at,
      by: g.chance(0.6) ? `customer:${contactIdx}` : `user:${g.pick(g.staffUsers)}`,
      reason: g.pick([
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
  g.plan.appointments.push({
    contact: contactIdx,
    tech: where.tech,
    deal,
    service,
    starts_at: startsAt,
    ends_at: endsAt,
    status,
    notes: g.chance(0.25) ? g.pick(APPOINTMENT_NOTES) : null,
    created_at: createdAt,
    updated_at: updatedAt,
    booked_by: g.chance(0.2) ? `customer:${contactIdx}` : `user:${g.pick(g.staffUsers)}`,
    cancel,
    fixture,
  });
}

export function appointments(g: CompanyGenerator): void {
  const pastTarget = g.count(400);
  const futureTarget = g.count(100);
  const estimate = SERVICES.find((s) => s.estimate === true)!;
  const byName = (name: string) => SERVICES.find((s) => s.service === name)!;
  // 1. The fixture customer's scripted visits.
  const fx = g.plan.fixture;
  if (fx !== null) {
    const book = (
      day: number,
      service: ServiceType,
      status: AppointmentStatus,
      deal: number | null,
      fixture: PAppointment['fixture'],
    ) => {
      const where = findSlot(g, day, day, day);
      if (where === null) throw new Error(`seed: no free slot on day ${day}`);
      addAppointment(g, fx.contact, service, where, status, deal, fixture);
    };
    book(-60, byName('Water heater flush'), 'completed', null, 'paid');
    book(-4, byName('Water heater repair'), 'completed', null, 'open');
    book(-22, estimate, 'completed', fx.proposalDeal, null);
    book(5, byName('Backflow test'), 'scheduled', null, 'upcoming');
  }
  // 2. Estimate visits of the deals that reached estimate_scheduled.
  g.plan.deals.forEach((deal, dealIdx) => {
    if (deal.scripted) return;
    const i = deal.history.findIndex((h) => h.to === 'estimate_scheduled');
    if (i < 0) return;
    const scheduledDay = g.dayOf(deal.history[i]!.at);
    const next = deal.history[i + 1];
    let lo: number;
    let hi: number;
    if (next !== undefined) {
      lo = scheduledDay + 1;
      hi = Math.min(g.dayOf(next.at) - 1, -1);
    } else {
      // Still waiting for its estimate: the visit is ahead, or it was missed recently.
      lo = scheduledDay + 1;
      hi = lo < 0 ? Math.min(-1, lo + 5) : Math.min(SCHEDULE_DAYS, lo + 6);
    }
    const where = findSlot(g, lo, hi, lo);
    if (where === null) return;
    const status: AppointmentStatus = where.day >= 0 ? 'scheduled' : g.chance(0.92) ? 'completed' : 'no_show';
    addAppointment(g, deal.contact, estimate, where, status, dealIdx);
  });
  const services = (kind: ContactKind) =>
    SERVICES.map((s) => ({
      weight: s.service === 'Commercial maintenance visit' && kind !== 'commercial' ? 0 : s.weight,
      value: s,
    }));
  // 3. Random past visits.
  const visitWeights = g.plan.contacts.map((c, idx) => ({ weight: c.weight, value: idx }));
  let past = g.plan.appointments.filter((a) => a.starts_at < g.anchor).length;
  for (let attempts = 0; past < pastTarget && attempts < pastTarget * 20; attempts++) {
    const contactIdx = g.weighted(visitWeights);
    const contact = g.plan.contacts[contactIdx]!;
    const where = findSlot(g, g.dayOf(contact.created_at) + 1, -1);
    if (where === null) continue;
    const status = g.weighted<AppointmentStatus>([
      { weight: 86, value: 'completed' },
      { weight: 7, value: 'cancelled' },
      { weight: 7, value: 'no_show' },
    ]);
    addAppointment(g, contactIdx, g.weighted(services(contact.kind)), where, status, null);
    past++;
  }
  // 4. Random upcoming visits (today included).
  const bookWeights = g.plan.contacts.map((c, idx) => ({ weight: c.weight + 0.3, value: idx }));
  let future = g.plan.appointments.filter((a) => a.starts_at >= g.anchor).length;
  for (let attempts = 0; future < futureTarget && attempts < futureTarget * 20; attempts++) {
    const contactIdx = g.weighted(bookWeights);
    const where = findSlot(g, 0, SCHEDULE_DAYS);
    if (where === null) continue;
    const status: AppointmentStatus = g.chance(0.06) ? 'cancelled' : 'scheduled';
    addAppointment(
      g,
      contactIdx,
      g.weighted(services(g.plan.contacts[contactIdx]!.kind)),
      where,
      status,
      null,
    );
    future++;
  }
  g.plan.appointments.sort((a, b) => a.starts_at - b.starts_at || a.tech - b.tech);
}
