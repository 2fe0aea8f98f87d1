/**
 * Wall-clock times of the demo business. Stored times are canonical UTC (`…Z`, data/iso-time.ts);
 * visit times are shown in the business's own offset (UTC−6, the demo's fixed business clock,
 * DEMO_UTC_OFFSET_MINUTES) as ISO 8601 with that offset, e.g. `2026-05-25T09:00:00-06:00`, the
 * form the upstream customer.full_context example uses. Both forms are ISO 8601 with an offset.
 */
import { DEMO_UTC_OFFSET_MINUTES } from '../seed.ts';

const pad = (n: number): string => String(n).padStart(2, '0');

/** A stored UTC time in the business offset, seconds precision: `2026-05-25T09:00:00-06:00`. Null stays null. */
export function businessTime(iso: string): string;
export function businessTime(iso: string | null): string | null;
export function businessTime(iso: string | null): string | null {
  if (iso === null) return null;
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const offset = DEMO_UTC_OFFSET_MINUTES;
  const d = new Date(ms + offset * 60_000);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return (
    `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}` +
    `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`
  );
}

/** The business-local hour and minute of a stored time, e.g. "08:00" (for slot statistics). */
export function businessClock(iso: string): string {
  return businessTime(iso).slice(11, 16);
}
