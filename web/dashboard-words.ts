/**
 * Plain words for what the views show: local times, countdowns, money, argument names, who acted.
 * Pure functions (no DOM), so they are easy to reason about and bundle.
 */

/** The business's time zone (IANA), once an answer named it; undefined: the browser's. */
let businessZone: string | undefined;

/** Show every time from now on in the business's time zone (`time_zone` of an answer). */
export function setBusinessTimeZone(zone: string | undefined): void {
  if (zone === undefined || zone === '') return;
  try {
    new Intl.DateTimeFormat(undefined, { timeZone: zone });
    businessZone = zone;
  } catch {
    /* a zone this browser does not know: keep the browser's own */
  }
}

/** The time zone times are shown in, for labels: "Europe/Berlin" (or the browser's). */
export function shownTimeZone(): string {
  return businessZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** A date and time in the business's time zone, e.g. "2 Dec 2026, 13:05". */
export function localTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, {
    dateStyle: 'medium',
    timeStyle: 'short',
    ...(businessZone !== undefined ? { timeZone: businessZone } : {}),
  });
}

/** A time of day in the business's time zone, e.g. "00:00". */
export function clockTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleTimeString(undefined, {
    hour: '2-digit',
    minute: '2-digit',
    ...(businessZone !== undefined ? { timeZone: businessZone } : {}),
  });
}

/** "in 4 min 10 s", "in 2 h 5 min", or "expired". */
export function countdown(untilIso: string, now: number = Date.now()): string {
  const ms = Date.parse(untilIso) - now;
  if (!Number.isFinite(ms)) return '';
  if (ms <= 0) return 'expired';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `in ${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `in ${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  return `in ${h} h ${m % 60} min`;
}

/**
 * Cents as money, written exactly as the typed phrases write it (src/runtime/consent/typed-phrase.ts
 * formatCents), whatever the browser's language: 15900 → "$159.00", 123456789 → "$1,234,567.89",
 * -250 → "-$2.50". The amount an owner reads on screen is the amount they type.
 */
export function money(cents: number, currency = 'USD'): string {
  if (!Number.isFinite(cents)) return '—';
  const symbol = currency === 'USD' ? '$' : `${currency} `;
  const abs = Math.abs(Math.round(cents));
  const units = Math.floor(abs / 100)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${cents < 0 ? '-' : ''}${symbol}${units}.${String(abs % 100).padStart(2, '0')}`;
}

/** A raw value in words: "partially_refunded" → "partially refunded". */
export function words(v: string): string {
  return v.replace(/_/g, ' ');
}

/** "amount_cents" → "Amount", "invoice_id" → "Invoice", "new_phone" → "New phone". */
export function label(key: string): string {
  const base = key.replace(/_(cents|id)$/, '').replace(/_/g, ' ');
  return base.charAt(0).toUpperCase() + base.slice(1);
}

/** One argument value in words (cents as money, ids as #n, objects as their JSON). */
export function value(key: string, v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number' && /_cents$/.test(key)) return money(v);
  if ((typeof v === 'number' || typeof v === 'string') && /_id$/.test(key)) return `#${v}`;
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (Array.isArray(v)) return v.length === 0 ? 'none' : v.map((x) => value('', x)).join(', ');
  if (typeof v === 'object')
    return Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${label(k)}: ${value(k, x)}`)
      .join('; ');
  // Machine words (a status such as "partially_refunded") read as words.
  if (typeof v === 'string' && /^[a-z]+(_[a-z]+)+$/.test(v)) return words(v);
  return String(v);
}

/** Arguments as [label, words] pairs, redacted members kept as "(hidden)". */
export function argumentWords(args: Record<string, unknown> | undefined): Array<[string, string]> {
  if (args === undefined || args === null) return [];
  return Object.entries(args).map(([k, v]) => [label(k), v === '[REDACTED]' ? '(hidden)' : value(k, v)]);
}

/**
 * "user 3 (employee) via claude-desktop", or with the name the owner gave the agent's key:
 * "user 3 (employee) via “Front-desk bot” (claude-desktop)".
 */
export function who(actor: string, role?: string | null, agent?: string | null, agentName?: string): string {
  const user = actor.startsWith('user:') ? `user ${actor.slice(5)}` : actor;
  const r = role ? ` (${role})` : '';
  const kind = agent === 'dashboard' ? 'this dashboard' : agent;
  const a =
    agentName !== undefined ? ` via “${agentName}”${kind ? ` (${kind})` : ''}` : kind ? ` via ${kind}` : '';
  return `${user}${r}${a}`;
}

/** Status in words. */
export const STATUS_WORDS: Readonly<Record<string, string>> = {
  completed: 'done',
  denied: 'refused',
  failed: 'failed',
  pending: 'waiting for consent',
  approved: 'approved',
  rejected: 'rejected',
  replayed: 'repeated (same result)',
  rolled_back: 'undone',
};

/** A preview's projected impact in words (spec/shapes.md §preview). */
export interface Impact {
  /** Facts the action does not change (e.g. the customer): [label, words]. */
  same: Array<[string, string]>;
  /** What changes: [label, now, after]. */
  changes: Array<[string, string, string]>;
  /** "This cannot be undone." when the preview says reversible: false; its notes otherwise. */
  notes: string[];
}

/** Before → after of a preview (`current`, `projected`, `reversible`, `notes`), in words. */
export function impactWords(preview: Record<string, unknown> | undefined): Impact | undefined {
  if (preview === undefined || preview === null) return undefined;
  const obj = (v: unknown): Record<string, unknown> =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  const current = obj(preview.current);
  const projected = obj(preview.projected);
  const impact: Impact = { same: [], changes: [], notes: [] };
  for (const k of new Set([...Object.keys(current), ...Object.keys(projected)])) {
    const before = value(k, current[k]);
    const after = value(k, projected[k]);
    if (before === after) impact.same.push([label(k), before]);
    else impact.changes.push([label(k), before, after]);
  }
  if (preview.reversible === false) impact.notes.push('This cannot be undone once done.');
  if (typeof preview.notes === 'string' && preview.notes !== '') impact.notes.push(preview.notes);
  return impact.same.length + impact.changes.length + impact.notes.length === 0 ? undefined : impact;
}
