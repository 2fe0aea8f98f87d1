/**
 * Driver errors → StoreError, by SQLSTATE (`DatabaseError.code`) or Node's system error code,
 * never by message text (spec/store.md §errors).
 *
 *   23505                      unique_violation
 *   P0001 (audit trigger)      append_only      the audit_log trigger refuses UPDATE/DELETE/TRUNCATE
 *   42501                      append_only      the restricted app role has no UPDATE/DELETE on audit_log
 *   40001, 40P01               busy (retryable: `write` re-runs the whole transaction)
 *   55P03, 57014               busy             lock_not_available, statement timeout
 *   53100                      disk_full
 *   22003, 22P02, 22001, 22021,
 *   22007, 22008               invalid_value    a caller's value out of range or malformed for its column
 *   25006                      read_only        read-only transaction / hot standby
 *   08xxx (not 08P01), 57P01–57P03, 53300, 3D000, 28xxx,
 *   ECONNREFUSED, ECONNRESET, …  unavailable
 *   anything else              unknown
 *
 * A non-DatabaseError thrown by the driver while talking to the server (connection closed,
 * connect timeout) is a connection failure: `unavailable`.
 */
import pg from 'pg';
import { StoreError, type StoreErrorCode } from '../store.ts';

/** SQLSTATEs after which the whole transaction may simply be run again. */
const RETRYABLE = new Set(['40001', '40P01']);

/**
 * Data exceptions caused by a value the caller sent: numeric_value_out_of_range,
 * invalid_text_representation, string_data_right_truncation, character_not_in_repertoire,
 * invalid_datetime_format, datetime_field_overflow.
 */
const INVALID_VALUE = new Set(['22003', '22P02', '22001', '22021', '22007', '22008']);

/** Node system error codes meaning the server cannot be reached. */
const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
  'ENOENT',
]);

/** Is this driver error a serialization failure or deadlock (re-run the transaction)? */
export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && RETRYABLE.has(code);
}

/** The StoreError code for a SQLSTATE. */
export function codeOfSqlState(state: string): StoreErrorCode {
  if (state === '23505') return 'unique_violation';
  if (state === 'P0001' || state === '42501') return 'append_only';
  if (RETRYABLE.has(state) || state === '55P03' || state === '57014') return 'busy';
  if (state === '53100') return 'disk_full';
  if (INVALID_VALUE.has(state)) return 'invalid_value';
  if (state === '25006') return 'read_only';
  if (state === '08P01') return 'unknown';
  if (
    state.startsWith('08') ||
    state === '57P01' ||
    state === '57P02' ||
    state === '57P03' ||
    state === '53300' ||
    state === '3D000' ||
    state.startsWith('28')
  ) {
    return 'unavailable';
  }
  return 'unknown';
}

/**
 * Map an error thrown by node-postgres to a StoreError. `connectionLevel`: the error came from
 * the driver itself (connect, a query on a broken connection), so a non-database error means the
 * server is unreachable. StoreErrors pass through unchanged.
 */
export function toStoreError(err: unknown, connectionLevel = true): unknown {
  if (err instanceof StoreError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof pg.DatabaseError) {
    const code = typeof err.code === 'string' ? codeOfSqlState(err.code) : 'unknown';
    return new StoreError(code, message, { cause: err });
  }
  const sys = (err as { code?: unknown })?.code;
  if (typeof sys === 'string' && NETWORK.has(sys))
    return new StoreError('unavailable', `the database cannot be reached (${sys})`, { cause: err });
  if (connectionLevel && err instanceof Error)
    return new StoreError('unavailable', `the database connection failed: ${message}`, { cause: err });
  return err;
}
