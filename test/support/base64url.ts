/** Test helpers for base64url spellings. */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The same bytes spelt differently: flips the lowest bit of the last base64url character, a spare
 * bit whenever the byte length is not a multiple of 3 (32-byte MACs, 64-byte signatures). A lenient
 * decoder returns identical bytes for both spellings.
 */
export function spareBitTwin(b64url: string): string {
  const last = ALPHABET.indexOf(b64url.at(-1)!);
  return b64url.slice(0, -1) + ALPHABET[last ^ 1];
}

/** The same length, one character in the middle replaced: different bytes. */
export function alterMiddle(b64url: string): string {
  const i = Math.floor(b64url.length / 2);
  return b64url.slice(0, i) + (b64url[i] === 'A' ? 'B' : 'A') + b64url.slice(i + 1);
}
