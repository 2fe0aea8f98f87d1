/**
 * Times in the business tables: ISO-8601 TEXT, always stored in the one canonical UTC form
 * `YYYY-MM-DDTHH:MM:SS.sssZ` (what `Date.prototype.toISOString` gives), so that TEXT comparison
 * and ORDER BY are time order on both engines. Inputs may carry any offset
 * (`2026-05-25T09:00:00-06:00`); they are normalised here before they reach SQL.
 */
import { invalidInput } from './domain-error.ts';

const WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** Canonical stored form of a Date. */
export function isoTime(date: Date): string {
  return date.toISOString();
}

/**
 * Parse an ISO-8601 timestamp that carries an offset (`Z` or `±hh:mm`) and return its canonical
 * stored form. Throws DomainError `invalid_input` naming `field` when it has no offset or is not a
 * real time.
 */
export function normalizeTime(value: string, field: string): string {
  if (typeof value !== 'string' || !WITH_OFFSET.test(value)) {
    throw invalidInput(field, 'expected an ISO-8601 time with an offset, e.g. 2026-05-25T09:00:00-06:00');
  }
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw invalidInput(field, `"${value}" is not a valid time`);
  return new Date(ms).toISOString();
}

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
