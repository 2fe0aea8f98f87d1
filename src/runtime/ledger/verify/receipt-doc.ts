/**
 * Finding the receipt in what a user pastes or saves: the receipt itself, a write's envelope
 * (`result`), audit.receipt's envelope (`result.data.receipt`), its result or its data. Used by
 * audit.verify_receipt and `solid receipt verify`. Spec: spec/receipts.md §attestation.
 */
import type { Receipt } from '../../../spec/types.ts';

/** The wrappers a receipt may come in, looked into in this order at each level. */
const WRAPPERS = ['result', 'data', 'receipt'] as const;

/**
 * The receipt in `doc`: the first object with an `attestation`, found breadth first through at
 * most three `result` / `data` / `receipt` wrappers. Undefined when there is none (a read's
 * envelope, a refusal, anything not an object). Never throws.
 */
export function receiptIn(doc: unknown): Receipt | undefined {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return undefined;
  let level: Record<string, unknown>[] = [doc as Record<string, unknown>];
  for (let depth = 0; depth <= WRAPPERS.length && level.length > 0; depth++) {
    const next: Record<string, unknown>[] = [];
    for (const d of level) {
      if (d.attestation !== undefined) return d as unknown as Receipt;
      for (const k of WRAPPERS) {
        const inner = d[k];
        if (inner !== null && typeof inner === 'object' && !Array.isArray(inner))
          next.push(inner as Record<string, unknown>);
      }
    }
    level = next;
  }
  return undefined;
}

/** The audit row an attestation names: the signing key and the row's place and hashes in the log. */
export interface AttestedRow {
  kid: string;
  seq: number;
  row_hash: string;
  prev_hash: string;
}

/**
 * The attested row of `attestation` when it is well formed (an object with a string kid, a
 * positive integer seq and string row_hash / prev_hash), else undefined. Only a receipt whose
 * signature verifies (verifyReceipt) says anything about the log: an unsigned or altered seq or
 * hash is the receipt's fault, so `solid receipt verify` and audit.verify_receipt check the log
 * only with `signatureValid` true. Never throws. Spec: spec/receipts.md §attestation.
 */
export function attestedRow(attestation: unknown, signatureValid = true): AttestedRow | undefined {
  if (!signatureValid) return undefined;
  if (attestation === null || typeof attestation !== 'object' || Array.isArray(attestation)) return undefined;
  const a = attestation as Record<string, unknown>;
  if (
    typeof a.kid !== 'string' ||
    typeof a.seq !== 'number' ||
    !Number.isSafeInteger(a.seq) ||
    a.seq < 1 ||
    typeof a.row_hash !== 'string' ||
    typeof a.prev_hash !== 'string'
  )
    return undefined;
  return { kid: a.kid, seq: a.seq, row_hash: a.row_hash, prev_hash: a.prev_hash };
}
