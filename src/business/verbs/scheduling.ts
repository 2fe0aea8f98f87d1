/**
 * Scheduling verbs (category `scheduling`): search visits, technicians' availability, book,
 * reschedule, cancel and record the outcome of visits (each reversible, each with its preview),
 * explain a visit, and scheduling.suggest_slots — free slots ranked by how often that
 * technician's visits in that time window were actually completed (computed from the history).
 * Visit times are answered in the business offset (UTC−6, business-time.ts); inputs take any offset.
 *
 * Reasons: not_found ("appointment 15 not found", "technician 3 not found", "contact 9 not
 * found"), appointment_in_past, double_booked, appointment_not_active, technician_unavailable,
 * contact_erased, no_change, invalid_input.
 * Spec: spec/shapes.md §aggregate §explain §preview §suggest §receipt.
 */
import type { Queryable } from '../../store/store.ts';
import {
  cancelAppointment,
  recordAppointmentOutcome,
  reinstateAppointment,
  reopenAppointment,
  requireAppointment,
  rescheduleAppointment,
  restoreAppointmentSlot,
  scheduleAppointment,
  searchAppointments,
  technicianAvailability,
} from '../data/appointments.ts';
import { getContact, requireContact } from '../data/contacts.ts';
import { requireDeal } from '../data/deals.ts';
import { DomainError } from '../data/domain-error.ts';
import { DAY_MS, isoTime, normalizeTime } from '../data/iso-time.ts';
import { num } from '../data/row-values.ts';
import { getEmployee, listTechnicians } from '../data/team.ts';
import { SERVICES } from '../demo-catalog.ts';
import { APPOINTMENT_STATUSES, type AppointmentStatus } from '../schema.ts';
import { DEMO_UTC_OFFSET_MINUTES } from '../seed.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { businessClock, businessTime } from './business-time.ts';
import { buildCausalChain, chainForOutput, describeActor } from './causal-chain.ts';
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

const SERVICE_NAMES = SERVICES.map((s) => s.service);

// ---------------------------------------------------------------------------------------------
// Read

interface SearchArgs {
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
// Book

interface BookArgs {
  contact_id: number;
  service: string;
  starts_at: string;
  technician_user_id?: number;
  duration_minutes?: number;
  notes?: string;
  deal_id?: number;
}

const bookInput = objectSchema(
  {
    contact_id: idProp('The customer the visit is for.'),
    service: textProp(`The service, e.g. one of: ${SERVICE_NAMES.slice(0, 8).join(', ')}…`, 120),
    starts_at: timeProp('Start of the visit; must be in the future.'),
    technician_user_id: idProp(
      'The technician (user id); default: the first technician free for the whole visit.',
    ),
    duration_minutes: {
      type: 'integer',
      minimum: 15,
      maximum: 720,
      description: 'Length of the visit in minutes; default: the service’s usual length (120 when unknown).',
    },
    notes: textProp('Access notes for the technician.', 2000),
    deal_id: idProp('The deal this visit belongs to (e.g. an estimate).'),
  },
  ['contact_id', 'service', 'starts_at'],
);

/** Resolve the slot and technician a booking would get; throws what the booking would. */
async function planBooking(
  q: Queryable,
  c: number,
  args: BookArgs,
  now: Date,
): Promise<{ startsAt: string; endsAt: string; technician: number; technicianName: string }> {
  const startsAt = normalizeTime(args.starts_at, 'starts_at');
  const endsAt = isoTime(
    new Date(Date.parse(startsAt) + (args.duration_minutes ?? serviceDurationMinutes(args.service)) * MIN_MS),
  );
  if (Date.parse(startsAt) <= now.getTime())
    throw new DomainError(
      'appointment_in_past',
      `the appointment would start at ${startsAt}, which is not in the future`,
      'Pick a start time after now.',
    );
  await requireContact(q, c, args.contact_id);
  if (args.deal_id !== undefined) await requireDeal(q, c, args.deal_id);
  const candidates =
    args.technician_user_id !== undefined
      ? [args.technician_user_id]
      : (await listTechnicians(q, c)).map((t) => t.user_id);
  for (const tech of candidates) {
    const [slot] = await technicianAvailability(q, c, {
      from: startsAt,
      to: endsAt,
      technician_user_id: tech,
    });
    if (slot !== undefined && slot.busy.length === 0)
      return { startsAt, endsAt, technician: tech, technicianName: slot.name };
    if (args.technician_user_id !== undefined) {
      const clash = slot?.busy[0];
      throw new DomainError(
        'double_booked',
        `technician ${tech} already has appointment ${clash?.appointment_id} from ${clash?.starts_at} to ${clash?.ends_at}`,
        'Check technician availability and pick a free slot or another technician.',
      );
    }
  }
  throw new DomainError(
    'double_booked',
    `no technician is free from ${startsAt} to ${endsAt}`,
    'Ask scheduling.suggest_slots for free slots.',
  );
}

export const schedulingBookAppointment = defineBusinessVerb<BookArgs>({
  name: 'scheduling.book_appointment',
  title: 'Book an appointment',
  description:
    'Book a visit for a customer: service, start time (ISO 8601 with offset, in the future) and optionally the technician, length, access notes and the deal it belongs to. Without a technician the first one free for the whole visit is chosen. Refused with appointment_in_past or double_booked (the technician already has a visit then). Reversible: audit.revert cancels the booking. Preview with scheduling.preview_booking; scheduling.suggest_slots proposes good slots.',
  shape: 'receipt',
  category: 'scheduling',
  consent: 'WRITE_REVERSIBLE',
  preview: 'scheduling.preview_booking',
  input: bookInput,
  webmcp_surfaces: ['dashboard', 'portal', 'tenant-site', 'public'],
  summary: (a) => `Book "${a.service}" for contact ${a.contact_id} at ${a.starts_at}.`,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const plan = await planBooking(ctx.db, c, args, ctx.now);
    const a = await scheduleAppointment(
      ctx.db,
      c,
      {
        contact_id: args.contact_id,
        technician_user_id: plan.technician,
        service: args.service,
        starts_at: plan.startsAt,
        ends_at: plan.endsAt,
        notes: args.notes ?? null,
        deal_id: args.deal_id ?? null,
      },
      ctx.now,
    );
    ctx.setEntity('appointment', a.id);
    ctx.emit({
      type: 'appointment.scheduled',
      entity_type: 'appointment',
      entity_id: a.id,
      payload: {
        contact_id: a.contact_id,
        technician_user_id: a.technician_user_id,
        service: a.service,
        starts_at: a.starts_at,
        ends_at: a.ends_at,
        deal_id: a.deal_id,
      },
    });
    ctx.setRollback(`appointment:book:${a.id}`, { appointment_id: a.id });
    return {
      status: 'scheduled',
      appointment_id: a.id,
      technician_name: plan.technicianName,
      appointment: appointmentView(a),
    };
  },
  revert: {
    async handler(ctx, original) {
      const id = num(original.rollback.appointment_id);
      const { appointment } = await cancelAppointment(
        ctx.db,
        ctx.principal.company_id,
        id,
        `booking reverted (audit ${original.audit_id})`,
        ctx.now,
      );
      ctx.emit({
        type: 'appointment.cancelled',
        entity_type: 'appointment',
        entity_id: id,
        payload: { contact_id: appointment.contact_id, reason: 'booking reverted' },
      });
      return { revert_action: `cancelled appointment ${id}` };
    },
  },
});

export const schedulingPreviewBooking = defineBusinessVerb<BookArgs>({
  name: 'scheduling.preview_booking',
  title: 'Preview a booking',
  description:
    'Show the visit scheduling.book_appointment would book (technician chosen, start and end in the business offset) without booking it; refuses exactly as the booking would (appointment_in_past, double_booked, not_found). Same arguments.',
  shape: 'preview',
  category: 'scheduling',
  input: bookInput,
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'portal', 'tenant-site', 'public'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const plan = await planBooking(ctx.db, c, args, ctx.now);
    const scheduled = (
      await searchAppointments(ctx.db, c, {
        contact_id: args.contact_id,
        status: 'scheduled',
        from: ctx.now.toISOString(),
        limit: 200,
      })
    ).total;
    return {
      current: { contact_id: args.contact_id, upcoming_visits: scheduled, technician_free: true },
      projected: {
        contact_id: args.contact_id,
        upcoming_visits: scheduled + 1,
        appointment: {
          service: args.service.trim(),
          technician_user_id: plan.technician,
          technician_name: plan.technicianName,
          starts_at: businessTime(plan.startsAt),
          ends_at: businessTime(plan.endsAt),
          status: 'scheduled',
        },
      },
      delta: {
        appointments_created: 1,
        duration_minutes: (Date.parse(plan.endsAt) - Date.parse(plan.startsAt)) / MIN_MS,
      },
      reversible: schedulingBookAppointment.revert !== undefined,
      notes:
        args.technician_user_id === undefined
          ? `Technician ${plan.technicianName} (user ${plan.technician}) is the first one free for the whole visit.`
          : 'The technician is free for the whole visit.',
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Reschedule

interface RescheduleArgs {
  appointment_id: number;
  starts_at: string;
  technician_user_id?: number;
}

const rescheduleInput = objectSchema(
  {
    appointment_id: idProp('The scheduled visit to move.'),
    starts_at: timeProp('The new start (the length is kept); must be in the future.'),
    technician_user_id: idProp('Move it to this technician too.'),
  },
  ['appointment_id', 'starts_at'],
);

export const schedulingRescheduleAppointment = defineBusinessVerb<RescheduleArgs>({
  name: 'scheduling.reschedule_appointment',
  title: 'Reschedule an appointment',
  description:
    'Move a scheduled visit to a new start time (its length is kept) and optionally to another technician. Refused with appointment_in_past, double_booked or appointment_not_active (not scheduled). Reversible: audit.revert moves it back to the previous time and technician if that slot is still free. Preview with scheduling.preview_reschedule.',
  shape: 'receipt',
  category: 'scheduling',
  consent: 'WRITE_REVERSIBLE',
  preview: 'scheduling.preview_reschedule',
  input: rescheduleInput,
  webmcp_surfaces: ['dashboard', 'portal'],
  summary: (a) => `Move appointment ${a.appointment_id} to ${a.starts_at}.`,
  async handler(ctx, args) {
    const { previous, appointment } = await rescheduleAppointment(
      ctx.db,
      ctx.principal.company_id,
      args.appointment_id,
      {
        starts_at: args.starts_at,
        ...(args.technician_user_id !== undefined ? { technician_user_id: args.technician_user_id } : {}),
      },
      ctx.now,
    );
    ctx.setEntity('appointment', appointment.id);
    ctx.emit({
      type: 'appointment.rescheduled',
      entity_type: 'appointment',
      entity_id: appointment.id,
      payload: {
        contact_id: appointment.contact_id,
        previous_starts_at: previous.starts_at,
        starts_at: appointment.starts_at,
        ends_at: appointment.ends_at,
        previous_technician_user_id: previous.technician_user_id,
        technician_user_id: appointment.technician_user_id,
      },
    });
    ctx.setRollback(`appointment:move:${appointment.id}:${previous.starts_at}`, {
      appointment_id: appointment.id,
      previous,
    });
    return {
      status: 'rescheduled',
      appointment_id: appointment.id,
      previous_starts_at: businessTime(previous.starts_at),
      starts_at: businessTime(appointment.starts_at),
      ends_at: businessTime(appointment.ends_at),
      technician_user_id: appointment.technician_user_id,
    };
  },
  revert: {
    async handler(ctx, original) {
      const r = original.rollback as {
        appointment_id: number;
        previous: { starts_at: string; ends_at: string; technician_user_id: number };
      };
      const { previous, appointment } = await restoreAppointmentSlot(
        ctx.db,
        ctx.principal.company_id,
        r.appointment_id,
        r.previous,
        ctx.now,
      );
      ctx.emit({
        type: 'appointment.rescheduled',
        entity_type: 'appointment',
        entity_id: appointment.id,
        payload: {
          contact_id: appointment.contact_id,
          previous_starts_at: previous.starts_at,
          starts_at: appointment.starts_at,
          ends_at: appointment.ends_at,
          previous_technician_user_id: previous.technician_user_id,
          technician_user_id: appointment.technician_user_id,
          revert_of: original.audit_id,
        },
      });
      return {
        revert_action: `moved appointment ${appointment.id} back to ${businessTime(appointment.starts_at)}`,
      };
    },
  },
});

export const schedulingPreviewReschedule = defineBusinessVerb<RescheduleArgs>({
  name: 'scheduling.preview_reschedule',
  title: 'Preview a reschedule',
  description:
    'Show a visit before and after scheduling.reschedule_appointment with the same arguments, without moving it; refuses exactly as the move would.',
  shape: 'preview',
  category: 'scheduling',
  input: rescheduleInput,
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'portal'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const a = await requireAppointment(ctx.db, c, args.appointment_id);
    if (a.status !== 'scheduled')
      throw new DomainError(
        'appointment_not_active',
        `appointment ${a.id} is ${a.status}`,
        'Only scheduled appointments can be moved; book a new one.',
      );
    const startsAt = normalizeTime(args.starts_at, 'starts_at');
    const endsAt = isoTime(
      new Date(Date.parse(startsAt) + (Date.parse(a.ends_at) - Date.parse(a.starts_at))),
    );
    const tech = args.technician_user_id ?? a.technician_user_id;
    if (startsAt === a.starts_at && tech === a.technician_user_id)
      throw new DomainError('no_change', `appointment ${a.id} is already at that time with that technician`);
    if (Date.parse(startsAt) <= ctx.now.getTime())
      throw new DomainError(
        'appointment_in_past',
        `the appointment would start at ${startsAt}, which is not in the future`,
        'Pick a start time after now.',
      );
    const [slot] = await technicianAvailability(ctx.db, c, {
      from: startsAt,
      to: endsAt,
      technician_user_id: tech,
    });
    const clash = slot?.busy.find((b) => b.appointment_id !== a.id);
    if (clash !== undefined)
      throw new DomainError(
        'double_booked',
        `technician ${tech} already has appointment ${clash.appointment_id} from ${clash.starts_at} to ${clash.ends_at}`,
        'Check technician availability and pick a free slot or another technician.',
      );
    return {
      current: {
        appointment_id: a.id,
        starts_at: businessTime(a.starts_at),
        ends_at: businessTime(a.ends_at),
        technician_user_id: a.technician_user_id,
      },
      projected: {
        appointment_id: a.id,
        starts_at: businessTime(startsAt),
        ends_at: businessTime(endsAt),
        technician_user_id: tech,
      },
      delta: {
        shift_minutes: (Date.parse(startsAt) - Date.parse(a.starts_at)) / MIN_MS,
        technician_changed: tech !== a.technician_user_id,
      },
      reversible: schedulingRescheduleAppointment.revert !== undefined,
      notes: 'audit.revert moves the visit back while its old slot is free.',
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Cancel

interface CancelArgs {
  appointment_id: number;
  reason?: string;
}

const cancelInput = objectSchema(
  {
    appointment_id: idProp('The scheduled visit to cancel.'),
    reason: textProp('Why (kept in the visit notes).', 500),
  },
  ['appointment_id'],
);

export const schedulingCancelAppointment = defineBusinessVerb<CancelArgs>({
  name: 'scheduling.cancel_appointment',
  title: 'Cancel an appointment',
  description:
    'Cancel a scheduled visit, with an optional reason kept in its notes; the technician becomes free. Reversible: audit.revert reinstates it if it is still in the future and the slot is still free. Preview with scheduling.preview_cancel.',
  shape: 'receipt',
  category: 'scheduling',
  consent: 'WRITE_REVERSIBLE',
  preview: 'scheduling.preview_cancel',
  input: cancelInput,
  webmcp_surfaces: ['dashboard', 'portal'],
  summary: (a) => `Cancel appointment ${a.appointment_id}${a.reason ? ` (${a.reason})` : ''}.`,
  async handler(ctx, args) {
    const { previous, appointment } = await cancelAppointment(
      ctx.db,
      ctx.principal.company_id,
      args.appointment_id,
      args.reason ?? null,
      ctx.now,
    );
    ctx.setEntity('appointment', appointment.id);
    ctx.emit({
      type: 'appointment.cancelled',
      entity_type: 'appointment',
      entity_id: appointment.id,
      payload: { contact_id: appointment.contact_id, reason: args.reason ?? null },
    });
    ctx.setRollback(`appointment:cancel:${appointment.id}`, {
      appointment_id: appointment.id,
      notes: previous.notes,
    });
    return {
      status: 'cancelled',
      appointment_id: appointment.id,
      previous_status: previous.status,
      appointment: appointmentView(appointment),
    };
  },
  revert: {
    async handler(ctx, original) {
      const r = original.rollback as { appointment_id: number; notes: string | null };
      const { appointment } = await reinstateAppointment(
        ctx.db,
        ctx.principal.company_id,
        r.appointment_id,
        ctx.now,
        r.notes,
      );
      ctx.emit({
        type: 'appointment.reinstated',
        entity_type: 'appointment',
        entity_id: appointment.id,
        payload: { contact_id: appointment.contact_id, revert_of: original.audit_id },
      });
      return {
        revert_action: `reinstated appointment ${appointment.id} at ${businessTime(appointment.starts_at)}`,
      };
    },
  },
});

export const schedulingPreviewCancel = defineBusinessVerb<CancelArgs>({
  name: 'scheduling.preview_cancel',
  title: 'Preview a cancellation',
  description:
    'Show a visit before and after scheduling.cancel_appointment, without cancelling it. Same arguments.',
  shape: 'preview',
  category: 'scheduling',
  input: cancelInput,
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'portal'],
  async handler(ctx, args) {
    const a = await requireAppointment(ctx.db, ctx.principal.company_id, args.appointment_id);
    if (a.status !== 'scheduled')
      throw new DomainError(
        'appointment_not_active',
        `appointment ${a.id} is ${a.status}`,
        'Only scheduled appointments can be cancelled.',
      );
    const hoursAhead = Math.round((Date.parse(a.starts_at) - ctx.now.getTime()) / 3_600_000);
    return {
      current: {
        appointment_id: a.id,
        status: a.status,
        starts_at: businessTime(a.starts_at),
        technician_user_id: a.technician_user_id,
      },
      projected: {
        appointment_id: a.id,
        status: 'cancelled',
        starts_at: businessTime(a.starts_at),
        technician_user_id: a.technician_user_id,
      },
      delta: {
        status: 'scheduled → cancelled',
        technician_hours_freed: (Date.parse(a.ends_at) - Date.parse(a.starts_at)) / 3_600_000,
      },
      reversible: schedulingCancelAppointment.revert !== undefined,
      notes: `${hoursAhead > 0 ? `The visit starts in ${hoursAhead} hours.` : 'The visit has already started.'} audit.revert reinstates it while it is still in the future and the slot is free.`,
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Outcome

interface OutcomeArgs {
  appointment_id: number;
  outcome: 'completed' | 'no_show';
}

const outcomeInput = objectSchema(
  {
    appointment_id: idProp('The visit (it must have started).'),
    outcome: enumProp(['completed', 'no_show'], 'completed, or no_show when the customer was not there.'),
  },
  ['appointment_id', 'outcome'],
);

export const schedulingRecordOutcome = defineBusinessVerb<OutcomeArgs>({
  name: 'scheduling.record_outcome',
  title: 'Record a visit outcome',
  description:
    'Mark a started visit completed or no_show. Reversible: audit.revert sets it back to scheduled. Preview with scheduling.preview_outcome.',
  shape: 'receipt',
  category: 'scheduling',
  consent: 'WRITE_REVERSIBLE',
  preview: 'scheduling.preview_outcome',
  input: outcomeInput,
  summary: (a) => `Mark appointment ${a.appointment_id} ${a.outcome}.`,
  async handler(ctx, args) {
    const { appointment } = await recordAppointmentOutcome(
      ctx.db,
      ctx.principal.company_id,
      args.appointment_id,
      args.outcome,
      ctx.now,
    );
    ctx.setEntity('appointment', appointment.id);
    ctx.emit({
      type: args.outcome === 'completed' ? 'appointment.completed' : 'appointment.no_show',
      entity_type: 'appointment',
      entity_id: appointment.id,
      payload: { contact_id: appointment.contact_id, service: appointment.service },
    });
    ctx.setRollback(`appointment:outcome:${appointment.id}`, {
      appointment_id: appointment.id,
      outcome: args.outcome,
    });
    return {
      status: args.outcome,
      appointment_id: appointment.id,
      appointment: appointmentView(appointment),
    };
  },
  revert: {
    async handler(ctx, original) {
      const r = original.rollback as { appointment_id: number; outcome: string };
      const { appointment } = await reopenAppointment(
        ctx.db,
        ctx.principal.company_id,
        r.appointment_id,
        ctx.now,
      );
      ctx.emit({
        type: 'appointment.outcome_reverted',
        entity_type: 'appointment',
        entity_id: appointment.id,
        payload: { contact_id: appointment.contact_id, previous_outcome: r.outcome },
      });
      return { revert_action: `set appointment ${appointment.id} back to scheduled` };
    },
  },
});

export const schedulingPreviewOutcome = defineBusinessVerb<OutcomeArgs>({
  name: 'scheduling.preview_outcome',
  title: 'Preview a visit outcome',
  description:
    'Show a visit before and after scheduling.record_outcome with the same arguments, without writing.',
  shape: 'preview',
  category: 'scheduling',
  input: outcomeInput,
  idempotent: true,
  async handler(ctx, args) {
    const a = await requireAppointment(ctx.db, ctx.principal.company_id, args.appointment_id);
    if (a.status !== 'scheduled')
      throw new DomainError('appointment_not_active', `appointment ${a.id} is ${a.status}`);
    if (Date.parse(a.starts_at) > ctx.now.getTime())
      throw new DomainError('invalid_input', `outcome: appointment ${a.id} has not started yet`);
    return {
      current: { appointment_id: a.id, status: a.status, service: a.service },
      projected: { appointment_id: a.id, status: args.outcome, service: a.service },
      delta: { status: `scheduled → ${args.outcome}` },
      reversible: schedulingRecordOutcome.revert !== undefined,
      notes:
        args.outcome === 'completed'
          ? 'Invoice the visit afterwards with invoices.create.'
          : 'A no-show counts against the time window in scheduling.suggest_slots statistics.',
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Explain

export const schedulingExplainAppointment = defineBusinessVerb<{ appointment_id: number }>({
  name: 'scheduling.explain_appointment',
  title: 'Explain an appointment',
  description:
    'Explain how a visit came to be as it is: who booked it and when, every reschedule, cancellation, outcome and part used, verb calls recorded against it (including refused ones), with a plain-language reasoning.',
  shape: 'explain',
  category: 'scheduling',
  input: objectSchema({ appointment_id: idProp('The visit.') }, ['appointment_id']),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const a = await requireAppointment(ctx.db, c, args.appointment_id);
    ctx.setEntity('appointment', a.id);
    const chain = await buildCausalChain(
      ctx.db,
      c,
      { type: 'appointment', id: a.id, argKeys: ['appointment_id'] },
      [{ type: 'appointment', ids: [a.id] }],
    );
    const [contact, tech] = [
      await getContact(ctx.db, c, a.contact_id),
      await getEmployee(ctx.db, c, a.technician_user_id),
    ];
    const booked = chain.find((i) => i.action === 'appointment.scheduled');
    const moves = chain.filter((i) => i.action === 'appointment.rescheduled');
    const last = [...chain].reverse().find((i) => i.source === 'event');
    const parts = [
      `Appointment ${a.id} (${a.service}) for ${contact?.name ?? `contact ${a.contact_id}`} with ${tech?.name ?? `technician ${a.technician_user_id}`} at ${businessTime(a.starts_at)} is ${a.status}.`,
    ];
    if (booked !== undefined)
      parts.push(`It was booked on ${booked.timestamp} by ${describeActor(booked.actor)}.`);
    if (moves.length > 0)
      parts.push(
        `It was rescheduled ${moves.length} time${moves.length === 1 ? '' : 's'}, last: ${moves[moves.length - 1]!.detail}.`,
      );
    if (last !== undefined && last !== booked)
      parts.push(`The latest change: ${last.detail} (${last.timestamp}, ${describeActor(last.actor)}).`);
    return {
      entity_id: a.id,
      entity_type: 'appointment',
      current_state: appointmentView(a),
      causal_chain: chainForOutput(chain),
      reasoning: parts.join(' '),
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

export const schedulingVerbs = [
  schedulingSearchAppointments,
  schedulingTechnicianAvailability,
  schedulingBookAppointment,
  schedulingPreviewBooking,
  schedulingRescheduleAppointment,
  schedulingPreviewReschedule,
  schedulingCancelAppointment,
  schedulingPreviewCancel,
  schedulingRecordOutcome,
  schedulingPreviewOutcome,
  schedulingExplainAppointment,
  schedulingSuggestSlots,
];
