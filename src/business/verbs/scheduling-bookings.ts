/**
 * Booking verbs (category `scheduling`): book a visit and reschedule one, each reversible, each
 * with its preview. Times are answered in the business offset (UTC−6, business-time.ts).
 *
 * Reasons: not_found ("appointment 15 not found", "technician 3 not found", "contact 9 not
 * found"), appointment_in_past, double_booked, appointment_not_active, technician_unavailable,
 * contact_erased, no_change, invalid_input.
 * Spec: spec/shapes.md §preview §receipt.
 */
import type { Queryable } from '../../store/store.ts';
import {
  cancelAppointment,
  requireAppointment,
  rescheduleAppointment,
  restoreAppointmentSlot,
  scheduleAppointment,
  searchAppointments,
  technicianAvailability,
} from '../data/appointments.ts';
import { requireContact } from '../data/contacts.ts';
import { requireDeal } from '../data/deals.ts';
import { DomainError } from '../data/domain-error.ts';
import { isoTime, normalizeTime } from '../data/iso-time.ts';
import { num } from '../data/row-values.ts';
import { listTechnicians } from '../data/team.ts';
import { SERVICES } from '../demo-catalog.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { businessTime } from './business-time.ts';
import { appointmentView } from './entity-views.ts';
import { idProp, objectSchema, textProp, timeProp } from './input-schema.ts';
import { serviceDurationMinutes } from './scheduling-slots.ts';

const MIN_MS = 60_000;
const SERVICE_NAMES = SERVICES.map((s) => s.service);

// ---------------------------------------------------------------------------------------------
// Book

/** Arguments of scheduling.book_appointment and its preview. */
export interface BookArgs {
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
    'Book a visit for a customer: service, start time (ISO 8601 with offset, in the future) and optionally the technician, length, access notes and the deal it belongs to. Without a technician, the first one free for the whole visit. Refused: appointment_in_past, double_booked. Reversible (audit.revert cancels it). Preview: scheduling.preview_booking; slots: scheduling.suggest_slots.',
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

/** Arguments of scheduling.reschedule_appointment and its preview. */
export interface RescheduleArgs {
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
    describe: ({ rollback, args }) =>
      `Visit #${String(args.appointment_id)}: ${String((rollback.previous as { starts_at?: unknown } | undefined)?.starts_at)} → ${String(args.starts_at)}`,
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
