/**
 * SHA-256 of a UTF-8 string, one shot: node's `crypto.hash` (Node ≥ 20.12, about half the cost of
 * a createHash object for short inputs) with the createHash fallback for older 20.x. Used on the
 * hot path: key checks (tenants.ts), audit row hashes (ledger/write/audit.ts), chain walks (ledger/verify/chain-walk.ts, also in its worker).
 */
import * as nodeCrypto from 'node:crypto';

type OneShot = {
  (alg: string, data: string, enc: 'hex'): string;
  (alg: string, data: string, enc: 'buffer'): Buffer;
};
const oneShot = (nodeCrypto as unknown as { hash?: OneShot }).hash;

/** SHA-256 of `text` (UTF-8) as 64 lowercase hex characters. */
export function sha256Hex(text: string): string {
  return oneShot !== undefined
    ? oneShot('sha256', text, 'hex')
    : nodeCrypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

/** SHA-256 of `text` (UTF-8) as 32 bytes. */
export function sha256Bytes(text: string): Buffer {
  return oneShot !== undefined
    ? oneShot('sha256', text, 'buffer')
    : nodeCrypto.createHash('sha256').update(text, 'utf8').digest();
}
