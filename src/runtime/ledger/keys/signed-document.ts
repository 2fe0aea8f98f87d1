/**
 * A JSON document signed with a tenant's signing key: ES256 (IEEE P1363) over
 * `domain ‖ RFC 8785 canonical JSON of the document without "signature"`. The one-byte domain
 * keeps each kind's material apart — row hashes 0x00, checkpoints 0x01, audit-export manifests
 * 0x02 (`export-manifest.ts`), continuity records of archived ranges 0x03 (`continuity.ts`) — so a
 * signature over one kind can never be replayed as another. Spec: spec/audit.md §export, §retention.
 */
import { sign as nodeSign, verify as nodeVerify, type KeyObject } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { SigningKey } from './tenant-keys.ts';

/** The signature a signed document carries (base64url of the 64-byte P1363 form). */
export interface DocumentSignature {
  kid: string;
  alg: 'ES256';
  value: string;
}

/** The bytes the signature covers: `domain` ‖ canonical JSON of `doc` without `signature`. */
export function documentMaterial(domain: number, doc: { signature?: DocumentSignature }): Buffer {
  const { signature: _signature, ...unsigned } = doc;
  return Buffer.concat([Buffer.from([domain]), Buffer.from(canonicalize(unsigned) ?? '', 'utf8')]);
}

/** `doc` with its `signature` made by `key` over `documentMaterial(domain, doc)`. */
export function signDocument<T extends { signature?: DocumentSignature }>(
  domain: number,
  doc: T,
  key: SigningKey,
): T {
  const value = nodeSign('sha256', documentMaterial(domain, doc), {
    key: key.keyObject,
    dsaEncoding: 'ieee-p1363',
  }).toString('base64url');
  return { ...doc, signature: { kid: key.kid, alg: 'ES256', value } };
}

/**
 * Does `doc`'s signature verify with `key` for `domain`? False for any malformed signature,
 * including a non-canonical base64url spelling of a valid one.
 */
export function documentSignatureValid(
  domain: number,
  doc: { signature?: DocumentSignature },
  key: KeyObject,
): boolean {
  const s = doc.signature;
  if (s === undefined || typeof s.value !== 'string') return false;
  try {
    const sig = Buffer.from(s.value, 'base64url');
    return (
      sig.length === 64 &&
      sig.toString('base64url') === s.value &&
      nodeVerify('sha256', documentMaterial(domain, doc), { key, dsaEncoding: 'ieee-p1363' }, sig)
    );
  } catch {
    return false;
  }
}
