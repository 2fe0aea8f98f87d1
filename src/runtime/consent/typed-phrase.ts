/**
 * Typed phrases: the exact words a human types to consent to a WRITE_FINANCIAL or IRREVERSIBLE
 * verb (e.g. `CHARGE $50.00 to invoice #4242`). Money renders from integer cents exactly, never
 * through floating point. Comparison is exact, byte for byte after UTF-8 encoding, in constant
 * time: a different case, an extra space or a look-alike Unicode letter is a mismatch.
 *
 * Spec: spec/consent.md §typed-phrase.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Render integer cents as dollars: 5000 → "$50.00", 123456789 → "$1,234,567.89", -250 → "-$2.50".
 * Throws TypeError for a non-integer (money is never a float in this runtime).
 */
export function formatCents(cents: number, currencySymbol = '$'): string {
  if (!Number.isSafeInteger(cents)) throw new TypeError(`money must be integer cents, got ${cents}`);
  const negative = cents < 0;
  const abs = BigInt(Math.abs(cents));
  const dollars = (abs / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const rest = (abs % 100n).toString().padStart(2, '0');
  return `${negative ? '-' : ''}${currencySymbol}${dollars}.${rest}`;
}

/** SHA-256 (base64url) of a phrase, as bound into nonces. */
export function phraseHash(phrase: string): string {
  return createHash('sha256').update(phrase, 'utf8').digest('base64url');
}

/** Exact, constant-time phrase comparison. Non-strings never match. */
export function phrasesMatch(expected: string, typed: unknown): boolean {
  if (typeof typed !== 'string') return false;
  const a = createHash('sha256').update(expected, 'utf8').digest();
  const b = createHash('sha256').update(typed, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/** What a value that quoted a withheld phrase says instead. */
export const PHRASE_WITHHELD = '(shown to the approving human only)';

/**
 * `value` (a preview, any JSON) without the typed phrase: members named `typed_phrase` and
 * strings that contain `phrase` read PHRASE_WITHHELD. For answers to an agent channel when the
 * tenant counts phrases only from humans (spec/consent.md §phrase-channel): the phrase is not
 * shown anywhere an agent reads, previews included. Returns a copy; `value` is not changed.
 */
export function withoutPhrase(value: unknown, phrase: string): unknown {
  if (typeof value === 'string') return phrase !== '' && value.includes(phrase) ? PHRASE_WITHHELD : value;
  if (Array.isArray(value)) return value.map((v) => withoutPhrase(v, phrase));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k === 'typed_phrase' ? PHRASE_WITHHELD : withoutPhrase(v, phrase),
    ]),
  );
}
