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
 *
 * The verbs live in scheduling-slots.ts (search, availability, suggest_slots),
 * scheduling-bookings.ts (book, reschedule) and scheduling-visits.ts (cancel, outcome, explain);
 * this module re-exports them and lists them in catalogue order.
 */
export {
  SLOT_MODEL_VERSION,
  VISIT_WINDOWS,
  schedulingSearchAppointments,
  schedulingSuggestSlots,
  schedulingTechnicianAvailability,
  serviceDurationMinutes,
} from './scheduling-slots.ts';
export {
  schedulingBookAppointment,
  schedulingPreviewBooking,
  schedulingPreviewReschedule,
  schedulingRescheduleAppointment,
} from './scheduling-bookings.ts';
export {
  schedulingCancelAppointment,
  schedulingExplainAppointment,
  schedulingPreviewCancel,
  schedulingPreviewOutcome,
  schedulingRecordOutcome,
} from './scheduling-visits.ts';
import {
  schedulingSearchAppointments,
  schedulingSuggestSlots,
  schedulingTechnicianAvailability,
} from './scheduling-slots.ts';
import {
  schedulingBookAppointment,
  schedulingPreviewBooking,
  schedulingPreviewReschedule,
  schedulingRescheduleAppointment,
} from './scheduling-bookings.ts';
import {
  schedulingCancelAppointment,
  schedulingExplainAppointment,
  schedulingPreviewCancel,
  schedulingPreviewOutcome,
  schedulingRecordOutcome,
} from './scheduling-visits.ts';

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
