/**
 * Visit verbs (category `scheduling`): cancel a visit and record its outcome (each reversible,
 * each with its preview), and explain a visit (its causal chain).
 *
 * Reasons: not_found ("appointment 15 not found"), appointment_not_active, no_change,
 * invalid_input.
 * Spec: spec/shapes.md §explain §preview §receipt.
 */
import {
  cancelAppointment,
  recordAppointmentOutcome,
  reinstateAppointment,
  reopenAppointment,
  requireAppointment,
} from '../data/appointments.ts';
import { getContact } from '../data/contacts.ts';
import { DomainError } from '../data/domain-error.ts';
import { getEmployee } from '../data/team.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { businessTime } from './business-time.ts';
import { buildCausalChain, chainForOutput, describeActor } from './causal-chain.ts';
import { appointmentView } from './entity-views.ts';
import { enumProp, idProp, objectSchema, textProp } from './input-schema.ts';

// ---------------------------------------------------------------------------------------------
// Cancel

/** Arguments of scheduling.cancel_appointment and its preview. */
export interface CancelArgs {
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
  // The reason is the agent's own words: shown apart (agent_text), never in the sentence consented to.
  summary: (a) => `Cancel appointment ${a.appointment_id}.`,
  agent_text: ['reason'],
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

/** Arguments of scheduling.record_outcome and its preview. */
export interface OutcomeArgs {
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
