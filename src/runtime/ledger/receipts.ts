/**
 * Receipts as attestations. A receipt carries `attestation = { kid, alg: "ES256", seq, row_hash,
 * prev_hash, jws }` where `jws` is a compact JWS with detached payload (`header..signature`,
 * RFC 7515 Appendix F) over the RFC 8785 canonical JSON of the receipt with `attestation.jws`
 * removed. Anyone holding the tenant's public key verifies it offline; `seq` and `row_hash` let a
 * client later prove the audit log was not rewritten or truncated below that point.
 *
 * Spec: spec/receipts.md §attestation.
 */
import {
  webcrypto,
  sign as nodeSign,
  verify as nodeVerify,
  type KeyObject,
  createPublicKey,
} from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Envelope, Receipt, ReceiptAttestation } from '../../spec/types.ts';
import type { SigningKey, PublicJwk, TenantKeys } from './tenant-keys.ts';

const enc = new TextEncoder();

function b64url(data: Uint8Array | string): string {
  return Buffer.from(typeof data === 'string' ? enc.encode(data) : data).toString('base64url');
}

/** The bytes a receipt's JWS signs: the canonical receipt without `attestation.jws`. */
export function receiptSigningPayload(receipt: Receipt): string {
  const { attestation, ...rest } = receipt;
  const copy: Record<string, unknown> = { ...rest };
  if (attestation !== undefined) {
    const { jws: _jws, ...att } = attestation;
    copy.attestation = att;
  }
  return canonicalize(copy) ?? '{}';
}

/** How a receipt is signed: on the thread pool (WebCrypto) or on the calling thread (node:crypto). */
export interface SignOptions {
  /**
   * true (default): WebCrypto on the libuv thread pool — the event loop stays free for other
   * callers, at ≈ 2× the CPU. false: node:crypto's synchronous sign with the key's KeyObject —
   * cheaper and no thread hop, for a caller that has nothing else to run meanwhile.
   */
  offload?: boolean;
}

/** The JWS protected header of a key, base64url (the same for every receipt it signs). */
export function jwsHeader(kid: string): string {
  return b64url(JSON.stringify({ alg: 'ES256', kid, typ: 'solid-receipt+jws' }));
}

/**
 * Attach an attestation to a receipt: sign with the tenant's active key (WebCrypto, off the event
 * loop, unless `options.offload` is false). Returns a new receipt object.
 */
export async function attestReceipt(
  receipt: Receipt,
  key: SigningKey,
  chain: { seq: number; row_hash: string; prev_hash: string },
  options: SignOptions = {},
): Promise<Receipt> {
  const attestation: Omit<ReceiptAttestation, 'jws'> = {
    kid: key.kid,
    alg: 'ES256',
    seq: chain.seq,
    row_hash: chain.row_hash,
    prev_hash: chain.prev_hash,
  };
  const unsigned: Receipt = { ...receipt, attestation: attestation as ReceiptAttestation };
  const header = key.jwsHeader ?? jwsHeader(key.kid);
  const signingInput = enc.encode(`${header}.${b64url(receiptSigningPayload(unsigned))}`);
  const sig =
    options.offload === false
      ? nodeSign('sha256', signingInput, { key: key.keyObject, dsaEncoding: 'ieee-p1363' })
      : new Uint8Array(
          await webcrypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.cryptoKey, signingInput),
        );
  unsigned.attestation = { ...attestation, jws: `${header}..${b64url(sig)}` };
  return unsigned;
}

/**
 * Bind a receipt to its audit row (seq, row_hash, prev_hash) without signing yet: the runtime
 * stores this form with the idempotency record inside the effect's transaction and signs after
 * commit (so the signature is computed outside the write lock, on the thread pool).
 */
export function chainReceipt(
  receipt: Receipt,
  chain: { seq: number; row_hash: string; prev_hash: string },
): Receipt {
  return {
    ...receipt,
    attestation: {
      alg: 'ES256',
      seq: chain.seq,
      row_hash: chain.row_hash,
      prev_hash: chain.prev_hash,
    } as ReceiptAttestation,
  };
}

/** Sign a receipt made by `chainReceipt` (or re-sign a replayed one) with the tenant's current key. */
export async function signChainedReceipt(
  receipt: Receipt,
  key: SigningKey,
  options: SignOptions = {},
): Promise<Receipt> {
  const att = receipt.attestation;
  if (att === undefined) return receipt;
  const { attestation: _a, ...rest } = receipt;
  return attestReceipt(
    rest as Receipt,
    key,
    { seq: att.seq, row_hash: att.row_hash, prev_hash: att.prev_hash },
    options,
  );
}

/**
 * Sign the receipt in an envelope whose attestation is still unsigned (fresh writes and
 * replays) with the tenant's active key. spec/receipts.md §attestation
 */
export async function signEnvelope(
  keys: TenantKeys,
  companyId: number,
  env: Envelope,
  options: SignOptions = {},
): Promise<Envelope> {
  const r = env.result as Receipt | undefined;
  if (r?.attestation === undefined) return env;
  const key = await keys.signingKey(companyId);
  return { ...env, result: await signChainedReceipt(r, key, options) };
}

/** A value's JSON kind, for messages: "a string", "null", "an array", "a number"… */
function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

export interface ReceiptVerification {
  valid: boolean;
  kid?: string;
  errors: string[];
}

/**
 * Verify a receipt's attestation with a public key (KeyObject, or a JWK, or a JWKS-like array in
 * which the receipt's kid is looked up). Pure and offline. Never throws.
 */
export function verifyReceipt(
  receipt: unknown,
  keys: KeyObject | PublicJwk | readonly PublicJwk[],
): ReceiptVerification {
  const errors: string[] = [];
  if (receipt === null || typeof receipt !== 'object')
    return { valid: false, errors: ['receipt must be an object'] };
  const r = receipt as Receipt;
  const att = r.attestation;
  if (att === undefined) return { valid: false, errors: ['receipt has no attestation'] };
  if (att === null || typeof att !== 'object' || Array.isArray(att))
    return {
      valid: false,
      errors: [`attestation is malformed: an object { kid, jws, … } was expected, got ${kindOf(att)}`],
    };
  if (typeof att.jws !== 'string')
    return {
      valid: false,
      ...(typeof att.kid === 'string' ? { kid: att.kid } : {}),
      errors: [
        `attestation is malformed: attestation.jws must be a compact JWS string, got ${kindOf(att.jws)}`,
      ],
    };
  const parts = att.jws.split('.');
  if (parts.length !== 3 || parts[1] !== '')
    return {
      valid: false,
      kid: att.kid,
      errors: ['attestation.jws must be a compact JWS with detached payload (header..signature)'],
    };
  let header: { alg?: string; kid?: string };
  try {
    header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as {
      alg?: string;
      kid?: string;
    };
  } catch {
    return { valid: false, kid: att.kid, errors: ['attestation.jws header is not JSON'] };
  }
  if (header.alg !== 'ES256') errors.push(`unsupported alg ${String(header.alg)}`);
  if (header.kid !== att.kid) errors.push('the JWS kid does not match attestation.kid');
  let key: KeyObject | undefined;
  if (Array.isArray(keys)) {
    const jwk = (keys as readonly PublicJwk[]).find((k) => k.kid === att.kid);
    if (jwk === undefined) errors.push(`no public key with kid ${att.kid}`);
    else key = createPublicKey({ key: jwk as unknown as import('node:crypto').JsonWebKey, format: 'jwk' });
  } else if ((keys as PublicJwk).kty !== undefined) {
    key = createPublicKey({ key: keys as unknown as import('node:crypto').JsonWebKey, format: 'jwk' });
  } else {
    key = keys as KeyObject;
  }
  if (key === undefined || errors.length > 0) return { valid: false, kid: att.kid, errors };
  const signingInput = `${parts[0]}.${b64url(receiptSigningPayload(r))}`;
  const sig = Buffer.from(parts[2]!, 'base64url');
  // 64 bytes in canonical unpadded base64url (86 characters): a decoder would also take spellings
  // that differ in the last character's spare bits, and the receipt must have exactly one form.
  if (sig.length !== 64 || sig.toString('base64url') !== parts[2])
    return {
      valid: false,
      kid: att.kid,
      errors: ['signature must be 64 bytes (raw r‖s) in canonical base64url'],
    };
  const ok = nodeVerify('sha256', enc.encode(signingInput), { key, dsaEncoding: 'ieee-p1363' }, sig);
  if (!ok) errors.push('signature does not verify: the receipt was altered or signed by another key');
  return { valid: errors.length === 0, kid: att.kid, errors };
}
