/**
 * The blocklist: verb names refused with `blocked_verb` whatever the role, phrase or approval,
 * whether or not a verb of that name is registered (a hallucinated destructive name is recorded as
 * a blocked attempt, not as an unknown verb).
 *
 * Names are compared by their *block key*: lower-cased with every character outside [a-z0-9]
 * removed, so `customer_delete`, `customer.delete`, `customer__delete` (the tool-name projection),
 * `Customer-Delete` and `customerDelete` are the same blocked name. Safe alternatives therefore
 * carry deliberately different words (gdpr_delete_contact, not customer.delete).
 *
 * Spec: spec/consent.md §blocklist.
 */

/** Names blocked for every tenant of every runtime. spec/consent.md §blocklist */
export const DEFAULT_BLOCKLIST: readonly string[] = [
  'subscription_cancel_immediate',
  'customer_delete',
  'company_delete',
  'employee_terminate',
];

/** The comparison key of a verb name: lower case, only [a-z0-9]. `"Customer.Delete"` → `"customerdelete"`. */
export function blocklistKey(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** A set of blocked names compared by block key. */
export class Blocklist {
  readonly #keys: Set<string>;
  constructor(names: Iterable<string>) {
    this.#keys = new Set([...names].map(blocklistKey).filter((k) => k !== ''));
  }
  /** Is `name` (or any spelling with the same block key) blocked? */
  has(name: string): boolean {
    return this.#keys.has(blocklistKey(name));
  }
}

/** Is `name` on `names` (by block key)? For per-tenant lists read from settings. */
export function listBlocks(names: readonly string[] | undefined, name: string): boolean {
  if (names === undefined || names.length === 0) return false;
  const key = blocklistKey(name);
  return key !== '' && names.some((n) => typeof n === 'string' && blocklistKey(n) === key);
}
