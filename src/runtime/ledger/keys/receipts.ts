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
import type { Envelope, Receipt, ReceiptAttestation } from '../../../spec/types.ts';
import type { SigningKey, PublicJwk, TenantKeys } from './tenant-keys.ts';

const enc = new TextEncoder();

function b64url(data: Uint8Array | string): string {
  return (typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data)).toString('base64url');
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * RFC 8785 text of a JSON value, exactly as the canonicalize package writes it (sorted keys,
 * JSON.stringify for primitives), without its per-node Set and key re-canonicalization: plain
 * objects, arrays and primitives here, anything else (toJSON, lone surrogates, non-finite
 * numbers, cycles) through canonicalize itself, which then also raises its own errors.
 */
function canonical(v: unknown, depth = 0): string | undefined {
  if (typeof v === 'string') return LONE_SURROGATE.test(v) ? canonicalize(v) : JSON.stringify(v);
  if (typeof v === 'number') return Number.isFinite(v) ? JSON.stringify(v) : canonicalize(v);
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (depth > 32) return canonicalize(v);
  if (Array.isArray(v)) {
    let out = '[';
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      out += (i === 0 ? '' : ',') + canonical(x === undefined || typeof x === 'symbol' ? null : x, depth + 1);
    }
    return out + ']';
  }
  if (
    Object.getPrototypeOf(v) !== Object.prototype ||
    typeof (v as { toJSON?: unknown }).toJSON === 'function'
  ) {
    return canonicalize(v);
  }
  return canonicalMembers(v as Record<string, unknown>, undefined, undefined, depth);
}

/** `{…}` of `o`'s members in RFC 8785 order, with member `replaceKey` (if given) taking `replaceValue`. */
function canonicalMembers(
  o: Record<string, unknown>,
  replaceKey: string | undefined,
  replaceValue: unknown,
  depth: number,
): string {
  const keys = Object.keys(o);
  if (replaceKey !== undefined && !(replaceKey in o)) keys.push(replaceKey);
  keys.sort();
  let out = '{';
  for (const k of keys) {
    const x = k === replaceKey ? replaceValue : o[k];
    if (x === undefined || typeof x === 'symbol') continue;
    if (LONE_SURROGATE.test(k)) return canonicalize(o) ?? '{}'; // throws like canonicalize
    out += (out.length === 1 ? '' : ',') + JSON.stringify(k) + ':' + canonical(x, depth + 1);
  }
  return out + '}';
}

/** The bytes a receipt's JWS signs: the canonical receipt without `attestation.jws`. */
export function receiptSigningPayload(receipt: Receipt): string {
  const attestation = receipt.attestation;
  if (attestation === undefined)
    return canonicalMembers(receipt as Record<string, unknown>, undefined, undefined, 0);
  const { jws: _jws, ...att } = attestation;
  return canonicalMembers(receipt as Record<string, unknown>, 'attestation', att, 0);
}

/** The canonical receipt `receipt` would be with `attestation` (no jws) in place of its own. */
function signingPayloadWith(receipt: Receipt, attestation: Omit<ReceiptAttestation, 'jws'>): string {
  return canonicalMembers(receipt as Record<string, unknown>, 'attestation', attestation, 0);
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
  const header = key.jwsHeader ?? jwsHeader(key.kid);
  // The JWS signing input is ASCII (base64url and '.'): latin1 is its bytes, without an encoder.
  const signingInput = Buffer.from(`${header}.${b64url(signingPayloadWith(receipt, attestation))}`, 'latin1');
  const sig =
    options.offload === false
      ? nodeSign('sha256', signingInput, { key: key.keyObject, dsaEncoding: 'ieee-p1363' })
      : new Uint8Array(
          await webcrypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.cryptoKey, signingInput),
        );
  // One copy of the receipt: its members in order without any attestation, then the signed one.
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(receipt))
    if (k !== 'attestation') out[k] = (receipt as Record<string, unknown>)[k];
  out.attestation = { ...attestation, jws: `${header}..${b64url(sig)}` };
  return out as unknown as Receipt;
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
  // attestReceipt ignores the receipt's own attestation (its chain members are passed here).
  return attestReceipt(
    receipt,
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

/** The result of `verifyReceipt`: `valid`, the key id it was checked with, and what failed (`errors`). spec/receipts.md §attestation */
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
