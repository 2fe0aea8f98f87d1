/**
 * Appointments (technician visits): tenant-scoped reads, availability, and the scheduling writes.
 *
 * Booking rules: an appointment starts in the future (`appointment_in_past`), lasts at most
 * 12 hours, is booked on an active technician (`technician_unavailable`), and never overlaps
 * another non-cancelled appointment of the same technician (`double_booked`; intervals are
 * half-open, so 10:00–12:00 and 12:00–14:00 do not overlap). Input times may carry any offset
 * and are stored in canonical UTC form.
 */
import type { Queryable } from '../../store/store.ts';
import { APPOINTMENT_STATUSES, type AppointmentStatus } from '../schema.ts';
import { requireContact } from './contacts.ts';
import { requireDeal } from './deals.ts';
import { DomainError, invalidInput, notFound } from './domain-error.ts';
import { DAY_MS, HOUR_MS, isoTime, normalizeTime } from './iso-time.ts';
import { pageBounds, toPage, type Page, type PageRequest } from './page.ts';
import { num, numOrNull, textOrNull } from './row-values.ts';
import { getEmployee, listTechnicians, type Employee } from './team.ts';

export interface Appointment {
  id: number;
  company_id: number;
  contact_id: number;
  technician_user_id: number;
  deal_id: number | null;
  service: string;
  starts_at: string;
  ends_at: string;
  status: AppointmentStatus;
  notes: string | null;
  created_at: string;
  updated_at: string;
}

const APPOINTMENT_COLUMNS =
  'id, company_id, contact_id, technician_user_id, deal_id, service, starts_at, ends_at, status, notes, created_at, updated_at';
const MAX_DURATION_MS = 12 * HOUR_MS;
const MAX_AVAILABILITY_RANGE_MS = 31 * DAY_MS;

function toAppointment(row: Record<string, unknown>): Appointment {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    contact_id: num(row.contact_id),
    technician_user_id: num(row.technician_user_id),
    deal_id: numOrNull(row.deal_id),
    service: String(row.service),
    starts_at: String(row.starts_at),
    ends_at: String(row.ends_at),
    status: row.status as AppointmentStatus,
    notes: textOrNull(row.notes),
    created_at: String(row.created_at),
    updated_at: String(row.updated_at),
  };
}

/** One appointment of the company, or undefined. */
export async function getAppointment(
  q: Queryable,
  companyId: number,
  appointmentId: number,
): Promise<Appointment | undefined> {
  const row = await q.get(`SELECT ${APPOINTMENT_COLUMNS} FROM appointments WHERE company_id = ? AND id = ?`, [
    companyId,
    appointmentId,
  ]);
  return row === undefined ? undefined : toAppointment(row);
}

/** The appointment or DomainError `not_found` ("appointment 15 not found"). */
export async function requireAppointment(
  q: Queryable,
  companyId: number,
  appointmentId: number,
): Promise<Appointment> {
  const appointment = await getAppointment(q, companyId, appointmentId);
  if (appointment === undefined) throw notFound('appointment', appointmentId);
  return appointment;
}

export interface AppointmentSearch extends PageRequest {
  contact_id?: number;
  technician_user_id?: number;
  status?: AppointmentStatus;
  /** ISO times with offsets: `starts_at >= from` and `starts_at < to`. */
  from?: string;
  to?: string;
  /** `asc` (default, soonest first) or `desc`. */
  order?: 'asc' | 'desc';
}

/** Search the company's appointments by start time. Throws `invalid_input` (bad time, status or page). */
export async function searchAppointments(
  q: Queryable,
  companyId: number,
  search: AppointmentSearch = {},
): Promise<Page<Appointment>> {
  const bounds = pageBounds(search);
  const where = ['company_id = ?'];
  const params: unknown[] = [companyId];
  if (search.contact_id !== undefined) {
    where.push('contact_id = ?');
    params.push(search.contact_id);
  }
  if (search.technician_user_id !== undefined) {
    where.push('technician_user_id = ?');
    params.push(search.technician_user_id);
  }
  if (search.status !== undefined) {
    if (!(APPOINTMENT_STATUSES as readonly unknown[]).includes(search.status))
      throw invalidInput('status', `must be one of ${APPOINTMENT_STATUSES.join(', ')}`);
    where.push('status = ?');
    params.push(search.status);
  }
  if (search.from !== undefined) {
    where.push('starts_at >= ?');
    params.push(normalizeTime(search.from, 'from'));
  }
  if (search.to !== undefined) {
    where.push('starts_at < ?');
    params.push(normalizeTime(search.to, 'to'));
  }
  const order = search.order === 'desc' ? 'DESC' : 'ASC';
  const whereSql = where.join(' AND ');
  const total = await q.get<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM appointments WHERE ${whereSql}`,
    params,
  );
  const rows = await q.all(
    `SELECT ${APPOINTMENT_COLUMNS} FROM appointments WHERE ${whereSql} ORDER BY starts_at ${order}, id ${order} LIMIT ? OFFSET ?`,
    [...params, bounds.limit, bounds.offset],
  );
  return toPage(rows.map(toAppointment), num(total?.n), bounds);
}

/** A contact's appointments, latest start first (at most `limit`, default 100). */
export async function listContactAppointments(
  q: Queryable,
  companyId: number,
  contactId: number,
  limit = 100,
): Promise<Appointment[]> {
  const rows = await q.all(
    `SELECT ${APPOINTMENT_COLUMNS} FROM appointments WHERE company_id = ? AND contact_id = ? ORDER BY starts_at DESC, id DESC LIMIT ?`,
    [companyId, contactId, limit],
  );
  return rows.map(toAppointment);
}

/** The first non-cancelled appointment of the technician overlapping [startsAt, endsAt), other than `excludeId`. */
async function findOverlap(
  q: Queryable,
  companyId: number,
  technicianUserId: number,
  startsAt: string,
  endsAt: string,
  excludeId: number | null,
): Promise<Appointment | undefined> {
  const row = await q.get(
    `SELECT ${APPOINTMENT_COLUMNS} FROM appointments
      WHERE company_id = ? AND technician_user_id = ? AND status <> 'cancelled'
        AND starts_at < ? AND ends_at > ? AND id <> ?
      ORDER BY starts_at LIMIT 1`,
    [companyId, technicianUserId, endsAt, startsAt, excludeId ?? -1],
  );
  return row === undefined ? undefined : toAppointment(row);
}

async function requireTechnician(q: Queryable, companyId: number, userId: number): Promise<Employee> {
  const employee = await getEmployee(q, companyId, userId);
  if (employee === undefined)
    throw notFound('technician', userId, 'List technicians with their availability first.');
  if (!employee.active || employee.title !== 'technician') {
    throw new DomainError(
      'technician_unavailable',
      `employee ${userId} is ${employee.active ? `a ${employee.title}, not a technician` : 'inactive'}`,
      'Book an active technician.',
    );
  }
  return employee;
}

/** Validate a slot: canonical times, end after start, at most 12 hours, in the future. */
function checkSlot(startsAt: string, endsAt: string, now: Date): void {
  const start = Date.parse(startsAt);
  const end = Date.parse(endsAt);
  if (end <= start) throw invalidInput('ends_at', 'must be after starts_at');
  if (end - start > MAX_DURATION_MS) throw invalidInput('ends_at', 'an appointment lasts at most 12 hours');
  if (start <= now.getTime()) {
    throw new DomainError(
      'appointment_in_past',
      `the appointment would start at ${startsAt}, which is not in the future`,
      'Pick a start time after now.',
    );
  }
}

async function refuseOverlap(
  q: Queryable,
  companyId: number,
  technicianUserId: number,
  startsAt: string,
  endsAt: string,
  excludeId: number | null,
): Promise<void> {
  const clash = await findOverlap(q, companyId, technicianUserId, startsAt, endsAt, excludeId);
  if (clash !== undefined) {
    throw new DomainError(
      'double_booked',
      `technician ${technicianUserId} already has appointment ${clash.id} from ${clash.starts_at} to ${clash.ends_at}`,
      'Check technician availability and pick a free slot or another technician.',
    );
  }
}

export interface BusyInterval {
  appointment_id: number;
  starts_at: string;
  ends_at: string;
  service: string;
  status: AppointmentStatus;
}

export interface TechnicianAvailability {
  user_id: number;
  name: string;
  /** Non-cancelled appointments overlapping the range, by start. */
  busy: BusyInterval[];
  /** The gaps between them, clipped to the range. */
  free: Array<{ starts_at: string; ends_at: string }>;
}

/**
 * Busy and free intervals of the company's active technicians (or one of them) in
 * [from, to). The range must be positive and at most 31 days. Throws `invalid_input`,
 * `not_found` (technician_user_id not a technician of the company), `technician_unavailable`.
 */
export async function technicianAvailability(
  q: Queryable,
  companyId: number,
  range: { from: string; to: string; technician_user_id?: number },
): Promise<TechnicianAvailability[]> {
  const from = normalizeTime(range.from, 'from');
  const to = normalizeTime(range.to, 'to');
  if (Date.parse(to) <= Date.parse(from)) throw invalidInput('to', 'must be after from');
  if (Date.parse(to) - Date.parse(from) > MAX_AVAILABILITY_RANGE_MS)
    throw invalidInput('to', 'the range is at most 31 days');
  const technicians =
    range.technician_user_id === undefined
      ? await listTechnicians(q, companyId)
      : [await requireTechnician(q, companyId, range.technician_user_id)];
  const rows = await q.all(
    `SELECT ${APPOINTMENT_COLUMNS} FROM appointments
      WHERE company_id = ? AND status <> 'cancelled' AND starts_at < ? AND ends_at > ?
      ORDER BY technician_user_id, starts_at, id`,
    [companyId, to, from],
  );
  const byTech = new Map<number, Appointment[]>();
  for (const a of rows.map(toAppointment)) {
    const list = byTech.get(a.technician_user_id) ?? [];
    list.push(a);
    byTech.set(a.technician_user_id, list);
  }
  return technicians.map((t) => {
    const busy = (byTech.get(t.user_id) ?? []).map((a) => ({
      appointment_id: a.id,
      starts_at: a.starts_at,
      ends_at: a.ends_at,
      service: a.service,
      status: a.status,
    }));
    const free: Array<{ starts_at: string; ends_at: string }> = [];
    let cursor = from;
    for (const b of busy) {
      if (b.starts_at > cursor) free.push({ starts_at: cursor, ends_at: b.starts_at });
      if (b.ends_at > cursor) cursor = b.ends_at;
    }
    if (cursor < to) free.push({ starts_at: cursor, ends_at: to });
    return { user_id: t.user_id, name: t.name, busy, free };
  });
}

export interface NewAppointment {
  contact_id: number;
  technician_user_id: number;
  service: string;
  /** ISO times with offsets. */
  starts_at: string;
  ends_at: string;
  notes?: string | null;
  deal_id?: number | null;
}

/**
 * Book an appointment. Throws `invalid_input` (times, service), `not_found` (contact,
 * technician, deal), `contact_erased`, `technician_unavailable`, `appointment_in_past`,
 * `double_booked`.
 */
export async function scheduleAppointment(
  tx: Queryable,
  companyId: number,
  input: NewAppointment,
  now: Date,
): Promise<Appointment> {
  if (typeof input.service !== 'string' || input.service.trim() === '' || input.service.length > 120)
    throw invalidInput('service', 'must be 1..120 characters');
  const startsAt = normalizeTime(input.starts_at, 'starts_at');
  const endsAt = normalizeTime(input.ends_at, 'ends_at');
  checkSlot(startsAt, endsAt, now);
  await requireContact(tx, companyId, input.contact_id);
  await requireTechnician(tx, companyId, input.technician_user_id);
  if (input.deal_id !== undefined && input.deal_id !== null) await requireDeal(tx, companyId, input.deal_id);
  await refuseOverlap(tx, companyId, input.technician_user_id, startsAt, endsAt, null);
  const at = isoTime(now);
  const row = await tx.get(
    `INSERT INTO appointments (company_id, contact_id, technician_user_id, deal_id, service, starts_at, ends_at, status, notes, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, 'scheduled', ?, ?, ?) RETURNING ${APPOINTMENT_COLUMNS}`,
    [
      companyId,
      input.contact_id,
      input.technician_user_id,
      input.deal_id ?? null,
      input.service.trim(),
      startsAt,
      endsAt,
      input.notes ?? null,
      at,
      at,
    ],
  );
  return toAppointment(row!);
}

export interface AppointmentMove {
  /** What a revert restores. */
  previous: { starts_at: string; ends_at: string; technician_user_id: number };
  appointment: Appointment;
}

/**
 * Move a scheduled appointment to a new start (the duration is kept unless `ends_at` is given)
 * and optionally another technician. Throws `not_found`, `appointment_not_active` (not
 * scheduled), `invalid_input`, `appointment_in_past`, `technician_unavailable`, `double_booked`,
 * `no_change`.
 */
export async function rescheduleAppointment(
  tx: Queryable,
  companyId: number,
  appointmentId: number,
  change: { starts_at: string; ends_at?: string; technician_user_id?: number },
  now: Date,
): Promise<AppointmentMove> {
  const current = await requireAppointment(tx, companyId, appointmentId);
  if (current.status !== 'scheduled') {
    throw new DomainError(
      'appointment_not_active',
      `appointment ${appointmentId} is ${current.status}`,
      'Only scheduled appointments can be moved; book a new one.',
    );
  }
  const startsAt = normalizeTime(change.starts_at, 'starts_at');
  const endsAt =
    change.ends_at !== undefined
      ? normalizeTime(change.ends_at, 'ends_at')
      : isoTime(
          new Date(Date.parse(startsAt) + (Date.parse(current.ends_at) - Date.parse(current.starts_at))),
        );
  const technician = change.technician_user_id ?? current.technician_user_id;
  if (
    startsAt === current.starts_at &&
    endsAt === current.ends_at &&
    technician === current.technician_user_id
  ) {
    throw new DomainError(
      'no_change',
      `appointment ${appointmentId} is already at that time with that technician`,
    );
  }
  checkSlot(startsAt, endsAt, now);
  await requireTechnician(tx, companyId, technician);
  await refuseOverlap(tx, companyId, technician, startsAt, endsAt, appointmentId);
  const row = await tx.get(
    `UPDATE appointments SET starts_at = ?, ends_at = ?, technician_user_id = ?, updated_at = ?
      WHERE company_id = ? AND id = ? RETURNING ${APPOINTMENT_COLUMNS}`,
    [startsAt, endsAt, technician, isoTime(now), companyId, appointmentId],
  );
  return {
    previous: {
      starts_at: current.starts_at,
      ends_at: current.ends_at,
      technician_user_id: current.technician_user_id,
    },
    appointment: toAppointment(row!),
  };
}

/**
 * Cancel a scheduled appointment (the reason, if any, is appended to its notes). Returns the
 * previous status and notes for a revert (`reinstateAppointment`). Throws `not_found`,
 * `appointment_not_active`.
 */
export async function cancelAppointment(
  tx: Queryable,
  companyId: number,
  appointmentId: number,
  reason: string | null,
  now: Date,
): Promise<{ previous: { status: AppointmentStatus; notes: string | null }; appointment: Appointment }> {
  const current = await requireAppointment(tx, companyId, appointmentId);
  if (current.status !== 'scheduled') {
    throw new DomainError(
      'appointment_not_active',
      `appointment ${appointmentId} is ${current.status}`,
      'Only scheduled appointments can be cancelled.',
    );
  }
  const notes =
    reason === null || reason.trim() === ''
      ? current.notes
      : [current.notes, `Cancelled: ${reason.trim()}`].filter((s) => s !== null).join('\n');
  const row = await tx.get(
    `UPDATE appointments SET status = 'cancelled', notes = ?, updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${APPOINTMENT_COLUMNS}`,
    [notes, isoTime(now), companyId, appointmentId],
  );
  return { previous: { status: current.status, notes: current.notes }, appointment: toAppointment(row!) };
}

/**
 * Undo a cancellation: a cancelled appointment becomes scheduled again (with `notes` restored
 * when given), provided it is still in the future and its technician is still free. Throws
 * `not_found`, `appointment_not_active` (not cancelled), `appointment_in_past`, `double_booked`,
 * `technician_unavailable`.
 */
export async function reinstateAppointment(
  tx: Queryable,
  companyId: number,
  appointmentId: number,
  now: Date,
  notes?: string | null,
): Promise<{ previous_status: AppointmentStatus; appointment: Appointment }> {
  const current = await requireAppointment(tx, companyId, appointmentId);
  if (current.status !== 'cancelled') {
    throw new DomainError(
      'appointment_not_active',
      `appointment ${appointmentId} is ${current.status}, not cancelled`,
    );
  }
  checkSlot(current.starts_at, current.ends_at, now);
  await requireTechnician(tx, companyId, current.technician_user_id);
  await refuseOverlap(
    tx,
    companyId,
    current.technician_user_id,
    current.starts_at,
    current.ends_at,
    appointmentId,
  );
  const row = await tx.get(
    `UPDATE appointments SET status = 'scheduled', notes = ?, updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${APPOINTMENT_COLUMNS}`,
    [notes === undefined ? current.notes : notes, isoTime(now), companyId, appointmentId],
  );
  return { previous_status: current.status, appointment: toAppointment(row!) };
}

/**
 * Record the outcome of a scheduled appointment that has started: `completed` or `no_show`.
 * Throws `not_found`, `appointment_not_active` (not scheduled), `invalid_input` (other status, or
 * the appointment has not started yet).
 */
export async function recordAppointmentOutcome(
  tx: Queryable,
  companyId: number,
  appointmentId: number,
  outcome: 'completed' | 'no_show',
  now: Date,
): Promise<{ previous_status: AppointmentStatus; appointment: Appointment }> {
  if (outcome !== 'completed' && outcome !== 'no_show')
    throw invalidInput('outcome', 'must be completed or no_show');
  const current = await requireAppointment(tx, companyId, appointmentId);
  if (current.status !== 'scheduled')
    throw new DomainError('appointment_not_active', `appointment ${appointmentId} is ${current.status}`);
  if (Date.parse(current.starts_at) > now.getTime())
    throw invalidInput('outcome', `appointment ${appointmentId} has not started yet`);
  const row = await tx.get(
    `UPDATE appointments SET status = ?, updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${APPOINTMENT_COLUMNS}`,
    [outcome, isoTime(now), companyId, appointmentId],
  );
  return { previous_status: current.status, appointment: toAppointment(row!) };
}

/**
 * Put a scheduled appointment back at its previous slot and technician (the revert of
 * `rescheduleAppointment`). Unlike a reschedule the slot may lie in the past by now; it must
 * still be free. Throws `not_found`, `appointment_not_active`, `double_booked`, `no_change`.
 */
export async function restoreAppointmentSlot(
  tx: Queryable,
  companyId: number,
  appointmentId: number,
  previous: { starts_at: string; ends_at: string; technician_user_id: number },
  now: Date,
): Promise<AppointmentMove> {
  const current = await requireAppointment(tx, companyId, appointmentId);
  if (current.status !== 'scheduled')
    throw new DomainError(
      'appointment_not_active',
      `appointment ${appointmentId} is ${current.status}`,
      'Only a scheduled appointment can be moved back.',
    );
  const startsAt = normalizeTime(previous.starts_at, 'starts_at');
  const endsAt = normalizeTime(previous.ends_at, 'ends_at');
  if (
    startsAt === current.starts_at &&
    endsAt === current.ends_at &&
    previous.technician_user_id === current.technician_user_id
  ) {
    throw new DomainError(
      'no_change',
      `appointment ${appointmentId} is already at that time with that technician`,
    );
  }
  await refuseOverlap(tx, companyId, previous.technician_user_id, startsAt, endsAt, appointmentId);
  const row = await tx.get(
    `UPDATE appointments SET starts_at = ?, ends_at = ?, technician_user_id = ?, updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${APPOINTMENT_COLUMNS}`,
    [startsAt, endsAt, previous.technician_user_id, isoTime(now), companyId, appointmentId],
  );
  return {
    previous: {
      starts_at: current.starts_at,
      ends_at: current.ends_at,
      technician_user_id: current.technician_user_id,
    },
    appointment: toAppointment(row!),
  };
}

/**
 * Undo a recorded outcome (the revert of `recordAppointmentOutcome`): a completed or no-show
 * appointment becomes scheduled again. Throws `not_found`, `appointment_not_active` (it is
 * scheduled or cancelled).
 */
export async function reopenAppointment(
  tx: Queryable,
  companyId: number,
  appointmentId: number,
  now: Date,
): Promise<{ previous_status: AppointmentStatus; appointment: Appointment }> {
  const current = await requireAppointment(tx, companyId, appointmentId);
  if (current.status !== 'completed' && current.status !== 'no_show') {
    throw new DomainError(
      'appointment_not_active',
      `appointment ${appointmentId} is ${current.status}; only a completed or no-show visit can be reopened`,
    );
  }
  const row = await tx.get(
    `UPDATE appointments SET status = 'scheduled', updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${APPOINTMENT_COLUMNS}`,
    [isoTime(now), companyId, appointmentId],
  );
  return { previous_status: current.status, appointment: toAppointment(row!) };
}

/** The appointments linked to a deal, by start; empty for an unknown or foreign deal. */
export async function listDealAppointments(
  q: Queryable,
  companyId: number,
  dealId: number,
): Promise<Appointment[]> {
  const rows = await q.all(
    `SELECT ${APPOINTMENT_COLUMNS} FROM appointments WHERE company_id = ? AND deal_id = ? ORDER BY starts_at, id`,
    [companyId, dealId],
  );
  return rows.map(toAppointment);
}
