/**
 * Voice: the company's call log, the voicemails left on missed calls (with their transcripts)
 * and the call-backs scheduled on calls. Tenant-scoped reads and the call-back writes.
 *
 * Times are ISO-8601 UTC TEXT (data/iso-time.ts); durations in seconds. A call's `phone` is the
 * other party's number (E.164); `contact_id` is the contact it matched, or null.
 */
import type { Queryable } from '../../store/store.ts';
import type { CallbackStatus, CallDirection, CallOutcome } from '../schema.ts';
import { DomainError, notFound } from './domain-error.ts';
import { isoTime } from './iso-time.ts';
import { num, numOrNull, textOrNull } from './row-values.ts';

export interface Call {
  id: number;
  contact_id: number | null;
  direction: CallDirection;
  outcome: CallOutcome;
  phone: string;
  duration_seconds: number;
  started_at: string;
}

export interface Voicemail {
  id: number;
  call_id: number;
  transcript: string;
  duration_seconds: number;
  created_at: string;
}

export interface Callback {
  id: number;
  call_id: number;
  due_at: string;
  note: string | null;
  status: CallbackStatus;
  assigned_user_id: number | null;
  created_at: string;
  updated_at: string;
}

const CALL_COLUMNS = 'id, contact_id, direction, outcome, phone, duration_seconds, started_at';
const CALLBACK_COLUMNS = 'id, call_id, due_at, note, status, assigned_user_id, created_at, updated_at';

function toCall(r: Record<string, unknown>): Call {
  return {
    id: num(r.id),
    contact_id: numOrNull(r.contact_id),
    direction: r.direction as CallDirection,
    outcome: r.outcome as CallOutcome,
    phone: String(r.phone),
    duration_seconds: num(r.duration_seconds),
    started_at: String(r.started_at),
  };
}

function toCallback(r: Record<string, unknown>): Callback {
  return {
    id: num(r.id),
    call_id: num(r.call_id),
    due_at: String(r.due_at),
    note: textOrNull(r.note),
    status: r.status as CallbackStatus,
    assigned_user_id: numOrNull(r.assigned_user_id),
    created_at: String(r.created_at),
    updated_at: String(r.updated_at),
  };
}

/** The call or DomainError `not_found` ("call 7 not found"). */
export async function requireCall(q: Queryable, companyId: number, callId: number): Promise<Call> {
  const row = await q.get(`SELECT ${CALL_COLUMNS} FROM calls WHERE company_id = ? AND id = ?`, [
    companyId,
    callId,
  ]);
  if (row === undefined) throw notFound('call', callId);
  return toCall(row);
}

/** Calls started at or after `since` (ISO), newest first, at most `limit`. */
export async function recentCalls(
  q: Queryable,
  companyId: number,
  since: string,
  limit: number,
): Promise<Call[]> {
  const rows = await q.all(
    `SELECT ${CALL_COLUMNS} FROM calls WHERE company_id = ? AND started_at >= ? ORDER BY started_at DESC, id DESC LIMIT ?`,
    [companyId, since, limit],
  );
  return rows.map(toCall);
}

/** Counts of calls since `since` by direction and outcome, and their total talk time in seconds. */
export async function callCounts(
  q: Queryable,
  companyId: number,
  since: string,
): Promise<Array<{ direction: CallDirection; outcome: CallOutcome; calls: number; seconds: number }>> {
  const rows = await q.all(
    `SELECT direction, outcome, COUNT(*) AS n, COALESCE(SUM(duration_seconds), 0) AS s FROM calls WHERE company_id = ? AND started_at >= ? GROUP BY direction, outcome ORDER BY direction, outcome`,
    [companyId, since],
  );
  return rows.map((r) => ({
    direction: r.direction as CallDirection,
    outcome: r.outcome as CallOutcome,
    calls: num(r.n),
    seconds: num(r.s),
  }));
}

/**
 * Missed and voicemail inbound calls since `since` with no scheduled or done call-back, newest
 * first, at most `limit`, each with its voicemail id when one was left.
 */
export async function unreturnedCalls(
  q: Queryable,
  companyId: number,
  since: string,
  limit: number,
): Promise<Array<Call & { voicemail_id: number | null }>> {
  const rows = await q.all(
    `SELECT c.id, c.contact_id, c.direction, c.outcome, c.phone, c.duration_seconds, c.started_at, v.id AS voicemail_id
       FROM calls c LEFT JOIN voicemails v ON v.company_id = c.company_id AND v.call_id = c.id
      WHERE c.company_id = ? AND c.direction = 'inbound' AND c.outcome <> 'answered' AND c.started_at >= ?
        AND NOT EXISTS (SELECT 1 FROM callbacks b WHERE b.company_id = c.company_id AND b.call_id = c.id AND b.status <> 'cancelled')
      ORDER BY c.started_at DESC, c.id DESC LIMIT ?`,
    [companyId, since, limit],
  );
  return rows.map((r) => ({ ...toCall(r), voicemail_id: numOrNull(r.voicemail_id) }));
}

/** The voicemail or DomainError `not_found`. */
export async function requireVoicemail(q: Queryable, companyId: number, id: number): Promise<Voicemail> {
  const r = await q.get(
    'SELECT id, call_id, transcript, duration_seconds, created_at FROM voicemails WHERE company_id = ? AND id = ?',
    [companyId, id],
  );
  if (r === undefined) throw notFound('voicemail', id);
  return {
    id: num(r.id),
    call_id: num(r.call_id),
    transcript: String(r.transcript),
    duration_seconds: num(r.duration_seconds),
    created_at: String(r.created_at),
  };
}

/** Earlier calls with the same phone number (before `before`), newest first, at most 10. */
export async function callsFromPhone(
  q: Queryable,
  companyId: number,
  phone: string,
  before: string,
): Promise<Call[]> {
  const rows = await q.all(
    `SELECT ${CALL_COLUMNS} FROM calls WHERE company_id = ? AND phone = ? AND started_at < ? ORDER BY started_at DESC, id DESC LIMIT 10`,
    [companyId, phone, before],
  );
  return rows.map(toCall);
}

/** Call-backs on a call, oldest first. */
export async function callbacksOfCall(q: Queryable, companyId: number, callId: number): Promise<Callback[]> {
  const rows = await q.all(
    `SELECT ${CALLBACK_COLUMNS} FROM callbacks WHERE company_id = ? AND call_id = ? ORDER BY id`,
    [companyId, callId],
  );
  return rows.map(toCallback);
}

export interface CallbackInput {
  call_id: number;
  due_at: string;
  note?: string;
  assigned_user_id?: number;
}

/**
 * Check a call-back before it is written: the call exists, `due_at` (normalised ISO) is not
 * before `now`, the call has no scheduled call-back, the assignee is an active employee.
 * Throws `not_found`, `time_in_past`, `callback_exists`.
 */
export async function checkCallback(
  q: Queryable,
  companyId: number,
  input: CallbackInput & { due_at: string },
  now: Date,
): Promise<Call> {
  const call = await requireCall(q, companyId, input.call_id);
  if (Date.parse(input.due_at) < now.getTime())
    throw new DomainError('time_in_past', `due_at ${input.due_at} is in the past`, 'Give a time after now.');
  const open = (await callbacksOfCall(q, companyId, call.id)).find((b) => b.status === 'scheduled');
  if (open !== undefined)
    throw new DomainError(
      'callback_exists',
      `call ${call.id} already has call-back ${open.id} due ${open.due_at}`,
      'Revert that call-back (audit.revert) before scheduling another.',
    );
  if (input.assigned_user_id !== undefined) {
    const e = await q.get(
      'SELECT user_id FROM employees WHERE company_id = ? AND user_id = ? AND active = 1',
      [companyId, input.assigned_user_id],
    );
    if (e === undefined) throw notFound('employee', input.assigned_user_id);
  }
  return call;
}

/** Schedule a call-back (see {@link checkCallback} for the refusals). `due_at` is normalised ISO. */
export async function scheduleCallback(
  tx: Queryable,
  companyId: number,
  input: CallbackInput,
  now: Date,
): Promise<Callback> {
  await checkCallback(tx, companyId, input, now);
  const at = isoTime(now);
  const row = await tx.get(
    `INSERT INTO callbacks (company_id, call_id, due_at, note, status, assigned_user_id, created_at, updated_at) VALUES (?, ?, ?, ?, 'scheduled', ?, ?, ?) RETURNING ${CALLBACK_COLUMNS}`,
    [companyId, input.call_id, input.due_at, input.note ?? null, input.assigned_user_id ?? null, at, at],
  );
  return toCallback(row!);
}

/** Cancel a call-back; `no_change` when it is not scheduled any more, `not_found` when unknown. */
export async function cancelCallback(
  tx: Queryable,
  companyId: number,
  id: number,
  now: Date,
): Promise<Callback> {
  const row = await tx.get(
    `UPDATE callbacks SET status = 'cancelled', updated_at = ? WHERE company_id = ? AND id = ? AND status = 'scheduled' RETURNING ${CALLBACK_COLUMNS}`,
    [isoTime(now), companyId, id],
  );
  if (row === undefined) {
    const exists = await tx.get('SELECT status FROM callbacks WHERE company_id = ? AND id = ?', [
      companyId,
      id,
    ]);
    if (exists === undefined) throw notFound('callback', id);
    throw new DomainError('no_change', `call-back ${id} is already ${String(exists.status)}`);
  }
  return toCallback(row);
}
