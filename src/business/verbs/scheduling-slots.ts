/**
 * Scheduling reads (category `scheduling`): search visits, technicians' availability, and
 * scheduling.suggest_slots — free slots ranked by how often that technician's visits in that time
 * window were actually completed (computed from the history). Visit times are answered in the
 * business offset (UTC−6, business-time.ts); inputs take any offset. The visit windows and service
 * durations the booking verbs use live here too.
 *
 * Reasons: not_found ("technician 3 not found", "contact 9 not found"), invalid_input.
 * Spec: spec/shapes.md §aggregate §suggest.
 */
import { searchAppointments, technicianAvailability } from '../data/appointments.ts';
import { requireContact } from '../data/contacts.ts';
import { DomainError } from '../data/domain-error.ts';
import { DAY_MS, isoTime, normalizeTime } from '../data/iso-time.ts';
import { num } from '../data/row-values.ts';
import { listTechnicians } from '../data/team.ts';
import { SERVICES } from '../demo-catalog.ts';
import { APPOINTMENT_STATUSES, type AppointmentStatus } from '../schema.ts';
import { DEMO_UTC_OFFSET_MINUTES } from '../seed.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { businessClock, businessTime } from './business-time.ts';
import { collectionResult } from './collection-result.ts';
import { confidenceBand, percent, ratio } from './confidence-band.ts';
import { appointmentView } from './entity-views.ts';
import { enumProp, idProp, objectSchema, PAGE_PROPS, textProp, timeProp } from './input-schema.ts';

const MIN_MS = 60_000;
/** Visit windows the office books, business-local start times. */
export const VISIT_WINDOWS = ['08:00', '10:30', '13:00', '15:30'] as const;
/** Duration of a service from the catalogue (minutes), 120 for a service it does not list. */
export function serviceDurationMinutes(service: string): number {
  return (
    SERVICES.find((s) => s.service.toLowerCase() === service.trim().toLowerCase())?.duration_minutes ?? 120
  );
}

// ---------------------------------------------------------------------------------------------
// Read

/** Arguments of scheduling.search_appointments. */
export interface SearchArgs {
  contact_id?: number;
  technician_user_id?: number;
  status?: AppointmentStatus;
  from?: string;
  to?: string;
  order?: 'asc' | 'desc';
  limit?: number;
  offset?: number;
}

export const schedulingSearchAppointments = defineBusinessVerb<SearchArgs>({
  name: 'scheduling.search_appointments',
  title: 'Search appointments',
  description:
    'List visits (appointments) filtered by customer, technician, status (scheduled, completed, cancelled, no_show) and start time range, soonest first (order desc for latest first). Times are in the business offset (UTC−6). Returns a page with total and next_offset.',
  shape: 'aggregate',
  category: 'scheduling',
  input: objectSchema({
    contact_id: idProp('Only visits of this customer.'),
    technician_user_id: idProp('Only visits of this technician (user id).'),
    status: enumProp(APPOINTMENT_STATUSES, 'Only visits with this status.'),
    from: timeProp('Only visits starting at or after this time.'),
    to: timeProp('Only visits starting before this time.'),
    order: enumProp(['asc', 'desc'], 'By start time: asc (default, soonest first) or desc.'),
    ...PAGE_PROPS,
  }),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const page = await searchAppointments(ctx.db, ctx.principal.company_id, args);
    return collectionResult(
      'appointments',
      { ...page, items: page.items.map(appointmentView) },
      args as Record<string, unknown>,
      ctx.now,
    );
  },
});

export const schedulingTechnicianAvailability = defineBusinessVerb<{
  from: string;
  to: string;
  technician_user_id?: number;
}>({
  name: 'scheduling.technician_availability',
  title: 'Technician availability',
  description:
    "Busy and free intervals of the company's active technicians (or one of them) between two times (at most 31 days), in the business offset. Use it to find a free slot before scheduling.book_appointment; scheduling.suggest_slots ranks slots for you.",
  shape: 'aggregate',
  category: 'scheduling',
  input: objectSchema(
    {
      from: timeProp('Start of the range.'),
      to: timeProp('End of the range (at most 31 days after from).'),
      technician_user_id: idProp('Only this technician.'),
    },
    ['from', 'to'],
  ),
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'portal'],
  async handler(ctx, args) {
    const list = await technicianAvailability(ctx.db, ctx.principal.company_id, args);
    return {
      entity_id: args.technician_user_id ?? 'technicians',
      entity_type: args.technician_user_id === undefined ? 'collection' : 'technician',
      data: {
        from: businessTime(normalizeTime(args.from, 'from')),
        to: businessTime(normalizeTime(args.to, 'to')),
        technicians: list.map((t) => ({
          user_id: t.user_id,
          name: t.name,
          busy: t.busy.map((b) => ({
            ...b,
            starts_at: businessTime(b.starts_at),
            ends_at: businessTime(b.ends_at),
          })),
          free: t.free.map((f) => ({
            starts_at: businessTime(f.starts_at),
            ends_at: businessTime(f.ends_at),
          })),
        })),
      },
      relations: list.map((t) => ({ type: 'technician', id: t.user_id, name: t.name })),
      fetched_at: ctx.now.toISOString(),
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Suggest

/** Model of scheduling.suggest_slots. */
export const SLOT_MODEL_VERSION = 'slot-completion-rate-v1';

/** The UTC instant of a business-local day (ms of its local midnight) and "HH:MM". */
function localSlot(localMidnightMs: number, hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number) as [number, number];
  return localMidnightMs + (h * 60 + m) * MIN_MS - DEMO_UTC_OFFSET_MINUTES * MIN_MS;
}

export const schedulingSuggestSlots = defineBusinessVerb<{
  service: string;
  contact_id?: number;
  days_ahead?: number;
  limit?: number;
}>({
  name: 'scheduling.suggest_slots',
  title: 'Suggest appointment slots',
  description:
    "Rank free visit slots (the office's windows 08:00, 10:30, 13:00, 15:30 business time) over the next days by how reliably that technician's visits in that window were completed in the past: confidence = completed / (completed + no-show + cancelled) for that technician and window, sample_size = those past visits (band learning below 20). Each suggestion names scheduling.book_appointment with ready-to-use args.",
  shape: 'suggest',
  category: 'scheduling',
  input: objectSchema(
    {
      service: textProp('The service to book (its usual length decides whether a slot fits).', 120),
      contact_id: idProp('The customer, to prefill the booking args.'),
      days_ahead: {
        type: 'integer',
        minimum: 1,
        maximum: 31,
        default: 7,
        description: 'How many days ahead to look (1..31, default 7).',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 20,
        default: 5,
        description: 'Most suggestions (1..20, default 5).',
      },
    },
    ['service'],
  ),
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'portal', 'tenant-site'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    if (args.contact_id !== undefined) await requireContact(ctx.db, c, args.contact_id);
    const durationMs = serviceDurationMinutes(args.service) * MIN_MS;
    const techs = await listTechnicians(ctx.db, c);
    if (techs.length === 0)
      throw new DomainError(
        'technician_unavailable',
        'the company has no active technician',
        'Activate a technician first (team.set_active).',
      );
    const history = await ctx.db.all<{ technician_user_id: unknown; starts_at: string; status: string }>(
      `SELECT technician_user_id, starts_at, status FROM appointments WHERE company_id = ? AND status <> 'scheduled' AND starts_at < ?`,
      [c, ctx.now.toISOString()],
    );
    const stats = new Map<string, { done: number; total: number }>();
    for (const h of history) {
      const key = `${num(h.technician_user_id)}|${businessClock(h.starts_at)}`;
      const s = stats.get(key) ?? { done: 0, total: 0 };
      s.total++;
      if (h.status === 'completed') s.done++;
      stats.set(key, s);
    }
    const days = args.days_ahead ?? 7;
    const localNow = ctx.now.getTime() + DEMO_UTC_OFFSET_MINUTES * MIN_MS;
    const firstMidnight = Math.floor(localNow / DAY_MS) * DAY_MS;
    const toMs = Math.min(
      localSlot(firstMidnight + (days + 1) * DAY_MS, '00:00'),
      ctx.now.getTime() + 31 * DAY_MS,
    );
    const availability = await technicianAvailability(ctx.db, c, {
      from: ctx.now.toISOString(),
      to: isoTime(new Date(toMs)),
    });
    const candidates: Array<{
      tech: number;
      name: string;
      start: number;
      window: string;
      done: number;
      total: number;
    }> = [];
    for (let d = 0; d <= days; d++) {
      for (const w of VISIT_WINDOWS) {
        const start = localSlot(firstMidnight + d * DAY_MS, w);
        if (start <= ctx.now.getTime() || start + durationMs > toMs) continue;
        for (const t of availability) {
          const busy = t.busy.some(
            (b) => Date.parse(b.starts_at) < start + durationMs && Date.parse(b.ends_at) > start,
          );
          if (busy) continue;
          const s = stats.get(`${t.user_id}|${w}`) ?? { done: 0, total: 0 };
          candidates.push({ tech: t.user_id, name: t.name, start, window: w, ...s });
        }
      }
    }
    candidates.sort(
      (a, b) => ratio(b.done, b.total) - ratio(a.done, a.total) || a.start - b.start || a.tech - b.tech,
    );
    const suggestions = candidates.slice(0, args.limit ?? 5).map((x) => {
      const confidence = ratio(x.done, x.total);
      const startsAt = businessTime(new Date(x.start).toISOString());
      return {
        action: 'scheduling.book_appointment',
        args: {
          ...(args.contact_id !== undefined ? { contact_id: args.contact_id } : {}),
          service: args.service,
          starts_at: startsAt,
          technician_user_id: x.tech,
        },
        confidence,
        confidence_band: confidenceBand(confidence, x.total),
        reason:
          x.total === 0
            ? `${x.name} is free at ${startsAt}; no past visits of theirs in the ${x.window} window to learn from yet.`
            : `${x.name} is free at ${startsAt}; ${x.done} of ${x.total} of their past ${x.window} visits (${percent(confidence)}) were completed as booked.`,
        model_version: SLOT_MODEL_VERSION,
        sample_size: x.total,
      };
    });
    return {
      suggestions,
      service: args.service,
      duration_minutes: durationMs / MIN_MS,
      free_slots_considered: candidates.length,
      model_version: SLOT_MODEL_VERSION,
      generated_at: ctx.now.toISOString(),
    };
  },
});
