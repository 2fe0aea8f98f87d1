/**
 * The business day: the one place that decides where a tenant's day begins and ends. A tenant's
 * day is the calendar day in its time zone (tenant setting `time_zone`, an IANA name; default
 * UTC), so daily caps reset at the tenant's own midnight and "today's money" is the owner's
 * business day. Daily caps (daily-caps.ts), tenant.settings and audit.money_moved all ask here.
 *
 * Moving the time zone moves the cap boundary (an agent could otherwise reset its own cap by
 * moving midnight), so only a human changes it (tenant.time_zone_set, requireHumanToChange).
 *
 * Spec: spec/consent.md §caps.
 */

/** The time zone of a tenant that set none. */
export const DEFAULT_TIME_ZONE = 'UTC';

/** One business day: its date (YYYY-MM-DD, the key of daily counts) and its bounds as instants. */
export interface BusinessDay {
  /** The calendar date in `time_zone`, e.g. "2026-12-07". */
  day: string;
  /** The first instant of the day (the tenant's midnight), ISO 8601 UTC. */
  start: string;
  /** The first instant of the next day: when the day's caps reset, ISO 8601 UTC. */
  end: string;
  /** The IANA time zone the day is in. */
  time_zone: string;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    if (formatters.size > 500) formatters.clear();
    formatters.set(timeZone, f);
  }
  return f;
}

/**
 * The IANA name of `name` when it is a time zone this runtime knows (`"europe/berlin"` →
 * `"Europe/Berlin"`; a known alias such as `Asia/Kolkata` as given), else undefined. Pure.
 */
export function canonicalTimeZone(name: unknown): string | undefined {
  if (typeof name !== 'string' || name === '' || name.length > 64) return undefined;
  // Building an Intl.DateTimeFormat costs a few hundred µs: every write asks this (its daily cap),
  // so each name is resolved once (null = unknown), in a bounded map.
  const known = canonicalNames.get(name);
  if (known !== undefined) return known ?? undefined;
  let canonical: string | undefined;
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
    // The resolved name fixes the case; an alias the owner typed (Asia/Kolkata) is kept as typed.
    canonical = resolved.toLowerCase() === name.toLowerCase() ? resolved : name;
  } catch {
    canonical = undefined;
  }
  if (canonicalNames.size > 500) canonicalNames.clear();
  canonicalNames.set(name, canonical ?? null);
  return canonical;
}

const canonicalNames = new Map<string, string | null>();

/** The wall-clock fields of instant `ms` in `timeZone`. */
function wall(ms: number, timeZone: string): { y: number; m: number; d: number; asUtc: number } {
  if (timeZone === 'UTC') {
    // The default zone needs no Intl call: its wall clock is the instant's UTC fields.
    const t = new Date(ms);
    return { y: t.getUTCFullYear(), m: t.getUTCMonth() + 1, d: t.getUTCDate(), asUtc: ms };
  }
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(ms)))
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const asUtc = Date.UTC(
    parts.year!,
    parts.month! - 1,
    parts.day!,
    parts.hour!,
    parts.minute!,
    parts.second!,
  );
  return { y: parts.year!, m: parts.month!, d: parts.day!, asUtc: asUtc + (ms % 1000) };
}

function dateKey(y: number, m: number, d: number): string {
  return `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

/** The calendar date of instant `ms` in `timeZone` (YYYY-MM-DD). */
function dayOf(ms: number, timeZone: string): string {
  const w = wall(ms, timeZone);
  return dateKey(w.y, w.m, w.d);
}

/**
 * The first instant whose date in `timeZone` is the calendar date y-m-d: the wall-clock midnight
 * when it exists, else (a clock change at midnight) the first instant after the gap.
 */
function startOf(y: number, m: number, d: number, timeZone: string): number {
  const midnight = Date.UTC(y, m - 1, d);
  const key = dateKey(y, m, d);
  // Two passes of "wall time minus offset" settle on the instant across one offset change.
  let t = midnight - (wall(midnight, timeZone).asUtc - midnight);
  t = midnight - (wall(t, timeZone).asUtc - t);
  // Midnight skipped by a clock change: step to the first whole hour (or minute) of the day.
  for (let i = 0; i < 4 && dayOf(t, timeZone) < key; i++) t += 3600_000;
  // Landed past the start (the offset grew): step back while the day still holds.
  while (dayOf(t - 60_000, timeZone) === key) t -= 60_000;
  return t;
}

/**
 * The business day holding instant `now` in `timeZone` (an IANA name; unknown or absent: UTC).
 * Pure; one Intl call when the zone and date were asked before (none in UTC), a dozen the first time.
 */
export function businessDay(now: Date, timeZone?: string): BusinessDay {
  const zone = canonicalTimeZone(timeZone ?? DEFAULT_TIME_ZONE) ?? DEFAULT_TIME_ZONE;
  const ms = now.getTime();
  const w = wall(ms, zone);
  // The answer depends only on the date and the zone: every write of a day asks the same one
  // (its daily cap), so the bounds, a dozen Intl calls, are worked out once per zone and date.
  const cacheKey = `${zone}|${dateKey(w.y, w.m, w.d)}`;
  const cached = days.get(cacheKey);
  if (cached !== undefined) return { ...cached };
  const start = startOf(w.y, w.m, w.d, zone);
  const next = new Date(Date.UTC(w.y, w.m - 1, w.d + 1));
  const end = startOf(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), zone);
  const bd: BusinessDay = {
    day: dateKey(w.y, w.m, w.d),
    start: new Date(start).toISOString(),
    end: new Date(end).toISOString(),
    time_zone: zone,
  };
  if (days.size > 500) days.clear();
  days.set(cacheKey, bd);
  return { ...bd };
}

/** Business days worked out, by `zone|YYYY-MM-DD` (bounded; cleared when full). */
const days = new Map<string, BusinessDay>();

/**
 * The business day a calendar date names in `timeZone` (`day` as YYYY-MM-DD), or undefined for a
 * malformed or impossible date. Pure.
 */
export function businessDayOf(day: string, timeZone?: string): BusinessDay | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (m === null) return undefined;
  const probe = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), 12));
  if (Number.isNaN(probe.getTime()) || probe.toISOString().slice(0, 10) !== day) return undefined;
  const zone = canonicalTimeZone(timeZone ?? DEFAULT_TIME_ZONE) ?? DEFAULT_TIME_ZONE;
  const start = startOf(Number(m[1]), Number(m[2]), Number(m[3]), zone);
  return businessDay(new Date(start), zone);
}
