/**
 * A change before → after in the owner's words, for the demo verbs' `revert.describe` (the undo
 * dialog) — e.g. `Phone of Ada Lovelace: +1 555 0100 → +1 555 0199`. Pure functions over the
 * values a write kept in its rollback data and its audited arguments. docs/authoring.md §describe.
 */
import { formatCents } from '../../runtime/consent/typed-phrase.ts';

/** "phone" → "Phone", "address_line1" → "Address line1", "amount_cents" → "Amount". */
export function fieldLabel(field: string): string {
  const base = field.replace(/_(cents|id)$/, '').replace(/_/g, ' ');
  return base.charAt(0).toUpperCase() + base.slice(1);
}

/** One value in words: cents as money, empty as "none", lists joined, machine words spaced. */
export function valueWords(field: string, v: unknown): string {
  if (v === null || v === undefined || v === '') return 'none';
  if (typeof v === 'number' && /_cents$/.test(field)) return formatCents(v);
  if (Array.isArray(v)) return v.length === 0 ? 'none' : v.map((x) => valueWords('', x)).join(', ');
  if (typeof v === 'object') return JSON.stringify(v);
  if (typeof v === 'string' && /^[a-z]+(_[a-z]+)+$/.test(v)) return v.replace(/_/g, ' ');
  return String(v);
}

/**
 * `<Field> of <subject>: <before> → <after>` for each field of `before`, joined by "; ". A field
 * whose after value is unknown (absent from `after`) is left out; undefined when none is left.
 */
export function changeWords(
  subject: string,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): string | undefined {
  const parts = Object.keys(before)
    .filter((f) => f in after)
    .map((f) => `${fieldLabel(f)} of ${subject}: ${valueWords(f, before[f])} → ${valueWords(f, after[f])}`);
  return parts.length === 0 ? undefined : parts.join('; ');
}

/** "Ada Lovelace" when the rollback kept a name, else "contact 17". */
export function contactSubject(name: unknown, id: unknown): string {
  return typeof name === 'string' && name !== '' ? name : `contact ${String(id)}`;
}
