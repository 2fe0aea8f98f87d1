/**
 * RFC 9421 HTTP Message Signatures as UCP profiles them: ES256 (ecdsa-p256-sha256) with raw
 * r‖s signatures, `alg` never sent, any verifying label authenticates the message.
 *
 * Pure protocol code: no key storage, no profile fetching, no routes. A message is a plain object
 * (HttpMessage); keys are node KeyObjects (see jwk.ts to import/export JWKs).
 *
 * Spec: RFC 9421 §2 (components, signature base), §3 (sign/verify), §4 (Signature-Input /
 * Signature), §7.2.2 (replay); RFC 8941 (structured fields); the UCP
 * specification's profile of RFC 9421 (ES256 only, `alg` never sent); spec/transports.md §ucp-verify.
 */
import { createHash, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import {
  isInnerList,
  isValidKeyStr,
  parseDictionary,
  serializeDictionary,
  serializeItem,
  type Dictionary,
  type InnerList,
  type Item,
  type Parameters,
} from 'structured-headers';
import {
  MessageView,
  assertNoDuplicates,
  buildBase,
  invalid,
  parseComponentSpecs,
  toComponentId,
  toSfParameters,
  type ComponentId,
  type HttpMessage,
  type SignatureParameters,
} from './rfc9421-base.ts';
export { createSignatureBase, type HttpMessage, type SignatureParameters } from './rfc9421-base.ts';
import { verifyContentDigest } from './content-digest.ts';
import { isP256Key } from './jwk.ts';
import type { ReplayEntry, ReplayGuard } from './replay-cache.ts';
import { SignatureError, type SignatureErrorCode, type SignatureLabelFailure } from './signature-error.ts';

/** The RFC 9421 algorithm name for ES256; the only `alg` value a verifier accepts. */
export const ECDSA_P256_SHA256 = 'ecdsa-p256-sha256';

/** Options for signMessage. Components use the identifier syntax described at createSignatureBase. */
export interface SignOptions {
  /** Key id published with the public key (JWK `kid`). */
  keyid: string;
  /** P-256 private KeyObject. */
  privateKey: KeyObject;
  /** Signature label, an RFC 8941 key (default "sig1"). */
  label?: string;
  /** Covered components in signing order, e.g. ['@method', '@authority', '@path', 'content-digest']. */
  components: readonly string[];
  /** Creation time, unix seconds (integer). */
  created: number;
  /** Expiry time, unix seconds (integer). */
  expires?: number;
  nonce?: string;
  tag?: string;
}

/** The two header fields signMessage produces (lower-case names). */
export interface SignatureHeaders {
  'signature-input': string;
  signature: string;
}

/** Options for verifyMessage. */
export interface VerifyOptions {
  /** Key lookup by `keyid`; undefined when unknown (→ key_not_found). May be async. A thrown
   * SignatureError fails that label; any other thrown error propagates unchanged. */
  resolveKey(keyid: string): KeyObject | undefined | Promise<KeyObject | undefined>;
  /** Components a signature must cover to be considered (identifier syntax as createSignatureBase). */
  requiredComponents?: readonly string[];
  /** Current time: unix seconds, or a Date (default: the system clock). */
  now?: number | Date;
  /** Clock skew tolerated on `created`/`expires`, seconds (default 60). */
  maxSkewSeconds?: number;
  /** Oldest acceptable `created`, seconds before now (default 300; Infinity disables). Signatures
   * without `created` are not age-checked. */
  maxAgeSeconds?: number;
  /** When given, a verified signature seen before within its window is refused. */
  replayCache?: ReplayGuard;
  /** Refuse a signature without `created` (`signature_invalid`), before anything is recorded. */
  requireCreated?: boolean;
}

/** Most signature labels one message may carry; more is `signature_invalid` (bounds the work and the replay rows an attacker can cause). */
export const MAX_SIGNATURE_LABELS = 8;

/** What verifyMessage returns for the label that verified. */
export interface VerifiedSignature {
  label: string;
  keyid: string;
  key: KeyObject;
  /** Covered component identifiers, serialized (e.g. `"@method"`, `"example-dict";key="a"`). */
  components: string[];
  /** The signature parameters as received. */
  params: SignatureParameters;
}

/**
 * Sign a message with ES256 (RFC 9421 §3.1, `ecdsa-p256-sha256`, raw 64-byte r‖s, never DER).
 * Emits `created`, `expires`, `keyid`, `nonce`, `tag` in that order; never `alg` (UCP rule).
 * Compute and set `Content-Digest` (content-digest.ts) on the message before covering it.
 *
 * @returns the `signature-input` and `signature` values for `label`, e.g.
 *   `sig1=("@method" "@authority" "@path");created=1738617600;keyid="k1"` and `sig1=:<base64>:`.
 *   To add a second signature to a message already carrying these fields, append with ", ".
 * @throws SignatureError `algorithm_unsupported` when `privateKey` is not a P-256 private key;
 *   `signature_invalid` for an invalid label, component or parameter (see createSignatureBase)
 */
export function signMessage(message: HttpMessage, options: SignOptions): SignatureHeaders {
  const label = options.label ?? 'sig1';
  if (!isValidKeyStr(label))
    throw invalid(`signature label ${JSON.stringify(label)} is not a structured-field key`);
  const key = options.privateKey;
  if (key.type !== 'private' || !isP256Key(key)) {
    throw new SignatureError('algorithm_unsupported', 'signing needs a P-256 private key (ES256)');
  }
  const components = parseComponentSpecs(options.components);
  const sigParams = toSfParameters({
    created: options.created,
    expires: options.expires,
    keyid: options.keyid,
    nonce: options.nonce,
    tag: options.tag,
  });
  const base = buildBase(new MessageView(message), components, sigParams);
  const signature = cryptoSign('sha256', Buffer.from(base, 'latin1'), { key, dsaEncoding: 'ieee-p1363' });
  const innerList: InnerList = [components.map((id) => [id.name, id.params]), sigParams];
  return {
    'signature-input': serializeDictionary(new Map([[label, innerList]])),
    signature: serializeDictionary(new Map([[label, [signature, new Map()]]])),
  };
}

/** The components a signed JSON answer covers (signJsonAnswer), serialized as in Signature-Input. */
const ANSWER_COVERED = '("@status" "content-digest" "content-type")';
/** keyid → its serialized sf-string (validated once by toSfParameters); bounded. */
const answerKeyids = new Map<string, string>();

/**
 * Sign a JSON answer (status + exact body bytes) the way signMessage would with components
 * `@status content-digest content-type`, label sig1, `created` and `keyid` — the same field values
 * and signature base, built directly (no generic component parsing or dictionary serialization;
 * the body is hashed once). RFC 9421 §2.5 (base), §3.1 (ES256 raw r‖s); RFC 9530 (sha-256 digest).
 *
 * @param status the HTTP status, an integer in 100..999
 * @param body the exact body bytes sent
 * @returns the four header fields to send: content-type (application/json), content-digest,
 *   signature-input, signature
 * @throws SignatureError `algorithm_unsupported` (not a P-256 private key), `signature_invalid`
 *   (status out of range, keyid not printable ASCII, created not a non-negative integer)
 */
export function signJsonAnswer(
  status: number,
  body: Uint8Array,
  options: { keyid: string; privateKey: KeyObject; created: number },
): SignatureHeaders & { 'content-type': string; 'content-digest': string } {
  const key = options.privateKey;
  if (key.type !== 'private' || !isP256Key(key)) {
    throw new SignatureError('algorithm_unsupported', 'signing needs a P-256 private key (ES256)');
  }
  if (!Number.isInteger(status) || status < 100 || status > 999) throw invalid(`invalid status ${status}`);
  const { created, keyid } = options;
  let sfKeyid = answerKeyids.get(keyid);
  if (sfKeyid === undefined) {
    sfKeyid = serializeItem([toSfParameters({ keyid }).get('keyid')!, new Map()]);
    if (answerKeyids.size >= 64) answerKeyids.clear();
    answerKeyids.set(keyid, sfKeyid);
  }
  if (!Number.isSafeInteger(created) || created < 0)
    throw invalid('created must be a non-negative integer of unix seconds');
  const digest = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
  const params = `${ANSWER_COVERED};created=${created};keyid=${sfKeyid}`;
  const base =
    `"@status": ${status}\n"content-digest": ${digest}\n"content-type": application/json\n` +
    `"@signature-params": ${params}`;
  const signature = cryptoSign('sha256', Buffer.from(base, 'latin1'), { key, dsaEncoding: 'ieee-p1363' });
  return {
    'content-type': 'application/json',
    'content-digest': digest,
    'signature-input': `sig1=${params}`,
    signature: `sig1=:${signature.toString('base64')}:`,
  };
}

// ---------------------------------------------------------------------------------------------
// Verification (RFC 9421 §3.2, UCP §7.4–7.5)

interface ParsedSignature {
  label: string;
  components: ComponentId[];
  sfParams: Parameters;
  params: SignatureParameters;
  signature: Uint8Array;
}

function readHeaderDictionary(view: MessageView, name: string): Dictionary | undefined {
  const lines = view.field(name);
  if (lines === undefined) return undefined;
  try {
    return parseDictionary(lines.join(', '));
  } catch (cause) {
    throw invalid(`${name} is not a valid structured-field dictionary`, cause);
  }
}

function readSignatureParams(sfParams: Parameters): SignatureParameters {
  const params: SignatureParameters = {};
  for (const [name, value] of sfParams) {
    if (name === 'created' || name === 'expires') {
      if (typeof value !== 'number' || !Number.isSafeInteger(value))
        throw invalid(`${name} must be an integer`);
      params[name] = value;
    } else if (name === 'nonce' || name === 'alg' || name === 'keyid' || name === 'tag') {
      if (typeof value !== 'string') throw invalid(`${name} must be a string`);
      params[name] = value;
    }
    // Unknown parameters are covered by the signature (they are in @signature-params) and ignored.
  }
  return params;
}

function parseLabel(
  label: string,
  input: Item | InnerList | undefined,
  signature: Item | InnerList | undefined,
): ParsedSignature {
  if (input === undefined) throw invalid(`label ${label} is in Signature but not in Signature-Input`);
  if (signature === undefined) throw invalid(`label ${label} is in Signature-Input but not in Signature`);
  if (!isInnerList(input)) throw invalid(`Signature-Input member ${label} is not an inner list`);
  if (isInnerList(signature) || !(signature[0] instanceof ArrayBuffer)) {
    throw invalid(`Signature member ${label} is not a byte sequence`);
  }
  const components = input[0].map(toComponentId);
  assertNoDuplicates(components);
  return {
    label,
    components,
    sfParams: input[1],
    params: readSignatureParams(input[1]),
    signature: new Uint8Array(signature[0]),
  };
}

function toUnixSeconds(now: number | Date | undefined): number {
  if (now === undefined) return Math.floor(Date.now() / 1000);
  return Math.floor(now instanceof Date ? now.getTime() / 1000 : now);
}

/** Unix seconds until which a replay of this signature must be refused. */
function windowEnd(params: SignatureParameters, now: number, maxAge: number, skew: number): number {
  let end = params.expires === undefined ? Infinity : params.expires + skew;
  if (params.created !== undefined) end = Math.min(end, params.created + maxAge + skew);
  return Number.isFinite(end) ? end : now + (Number.isFinite(maxAge) ? maxAge : 86_400) + skew;
}

/** The order n of the P-256 group: ECDSA's s and n − s both verify (signature malleability). */
const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const P256_HALF_ORDER_BYTES = Buffer.from((P256_ORDER >> 1n).toString(16).padStart(64, '0'), 'hex');

/**
 * The replay-guard id of a signature: keyid plus the raw r‖s with s folded to the low half
 * (s ≤ n/2). An ECDSA signature (r, s) has a twin (r, n − s) that verifies just as well and that
 * anyone can compute from a captured request, so keying on the bytes as sent would let a replay
 * through as the twin. Non-64-byte values (unverified other labels) are keyed as sent.
 */
function replayId(keyid: string, signature: Uint8Array): string {
  let bytes = Buffer.from(signature.buffer, signature.byteOffset, signature.byteLength);
  // s > n/2 compared as 32 big-endian bytes first (no BigInt on the common low-s path).
  if (bytes.length === 64 && Buffer.compare(bytes.subarray(32), P256_HALF_ORDER_BYTES) > 0) {
    const s = BigInt(`0x${bytes.subarray(32).toString('hex')}`);
    bytes = Buffer.concat([
      bytes.subarray(0, 32),
      Buffer.from((P256_ORDER - s).toString(16).padStart(64, '0'), 'hex'),
    ]);
  }
  return `${keyid} ${bytes.toString('base64')}`;
}

const EMPTY_BODY = new Uint8Array(0);

/**
 * Verify an RFC 9421 signed message the UCP way: each label of `Signature-Input`/`Signature`
 * (RFC 8941 dictionaries) is tried on its own; the message is accepted when ANY label verifies.
 * Per label, in order: parse → `alg` absent or `ecdsa-p256-sha256` → required components covered
 * → `created`/`expires` within skew and max age → key lookup by `keyid` (must be P-256) →
 * signature base rebuilt from the received message → `Content-Digest` recomputed over
 * `message.body` (absent body = empty) when the message's own `content-digest` is covered →
 * 64-byte raw r‖s check → ES256 verify → replay check.
 *
 * A verified signature found in `replayCache` rejects the whole message (`signature_replayed`);
 * on success every label's signature is recorded until its window end (expires, or created +
 * maxAgeSeconds, plus skew), so stripping one label does not make a replay pass.
 *
 * @returns the first label that verified, with its key id, key, components and parameters
 * @throws SignatureError when no label verifies: the first label's failure is the error's code,
 *   all are listed in `failures`. Codes: `signature_missing` (no Signature-Input or Signature),
 *   `signature_invalid` (malformed headers/labels, missing covered field, wrong length or DER
 *   signature, bad signature), `algorithm_unsupported` (alg other than ecdsa-p256-sha256, non-P-256
 *   key, no supported digest), `components_missing`, `signature_expired`, `key_not_found`,
 *   `digest_mismatch`, `signature_replayed`. Errors thrown by resolveKey or replayCache that are
 *   not SignatureErrors propagate unchanged.
 */
export async function verifyMessage(
  message: HttpMessage,
  options: VerifyOptions,
): Promise<VerifiedSignature> {
  const view = new MessageView(message);
  const inputs = readHeaderDictionary(view, 'signature-input');
  const signatures = readHeaderDictionary(view, 'signature');
  if (inputs === undefined || signatures === undefined || inputs.size === 0 || signatures.size === 0) {
    throw new SignatureError('signature_missing', 'the message carries no Signature-Input/Signature');
  }
  const now = toUnixSeconds(options.now);
  const skew = options.maxSkewSeconds ?? 60;
  const maxAge = options.maxAgeSeconds ?? 300;
  const required = parseComponentSpecs(options.requiredComponents ?? []);
  const labels = [...new Set([...inputs.keys(), ...signatures.keys()])];
  if (labels.length > MAX_SIGNATURE_LABELS) {
    throw new SignatureError(
      'signature_invalid',
      `the message carries ${labels.length} signature labels; at most ${MAX_SIGNATURE_LABELS} are accepted`,
    );
  }
  const parsed = new Map<string, ParsedSignature>();
  const failures: SignatureLabelFailure[] = [];

  for (const label of labels) {
    try {
      const sig = parseLabel(label, inputs.get(label), signatures.get(label));
      parsed.set(label, sig);
      const verified = await verifyLabel(view, sig, options, required, now, skew, maxAge);
      if (options.replayCache !== undefined) {
        // The other labels' signatures are recorded too (stripping the verified label must not let a
        // replay pass on another one). They are unverified input, so their window is capped at the
        // longest any accepted signature can have: now + max age + skew.
        const cap = now + (Number.isFinite(maxAge) ? maxAge : 86_400) + skew;
        const others: ReplayEntry[] = [];
        for (const other of labels) {
          if (other === label) continue;
          const otherSig =
            parsed.get(other) ?? tryParseLabel(other, inputs.get(other), signatures.get(other));
          if (otherSig?.params.keyid === undefined) continue;
          others.push({
            id: replayId(otherSig.params.keyid, otherSig.signature),
            expiresAtSeconds: Math.min(windowEnd(otherSig.params, now, maxAge, skew), cap),
          });
        }
        const first = {
          id: replayId(verified.keyid, sig.signature),
          expiresAtSeconds: windowEnd(sig.params, now, maxAge, skew),
        };
        const fresh = await recordSignatures(options.replayCache, first, others, now);
        if (!fresh) {
          throw new SignatureError(
            'signature_replayed',
            `signature ${label} was already used within its window`,
            {
              failures: [...failures, { label, code: 'signature_replayed', message: 'replayed' }],
            },
          );
        }
      }
      return verified;
    } catch (error) {
      if (!(error instanceof SignatureError) || error.code === 'signature_replayed') throw error;
      failures.push({ label, code: error.code, message: error.message });
    }
  }
  const first = failures[0]!;
  throw new SignatureError(
    first.code,
    labels.length === 1 ? first.message : `no signature verified: ${first.label}: ${first.message}`,
    { failures },
  );
}

/** Check-and-record `first`, then record `others` — in one call when the guard can batch (one store transaction). */
async function recordSignatures(
  guard: ReplayGuard,
  first: ReplayEntry,
  others: ReplayEntry[],
  now: number,
): Promise<boolean> {
  if (guard.checkAndRecordAll !== undefined) return guard.checkAndRecordAll(first, others, now);
  if (!(await guard.checkAndRecord(first.id, first.expiresAtSeconds, now))) return false;
  for (const o of others) await guard.checkAndRecord(o.id, o.expiresAtSeconds, now);
  return true;
}

function tryParseLabel(
  label: string,
  input: Item | InnerList | undefined,
  signature: Item | InnerList | undefined,
): ParsedSignature | undefined {
  try {
    return parseLabel(label, input, signature);
  } catch {
    return undefined;
  }
}

function fail(code: SignatureErrorCode, message: string): SignatureError {
  return new SignatureError(code, message);
}

async function verifyLabel(
  view: MessageView,
  sig: ParsedSignature,
  options: VerifyOptions,
  required: readonly ComponentId[],
  now: number,
  skew: number,
  maxAge: number,
): Promise<VerifiedSignature> {
  const { label, params } = sig;
  if (params.alg !== undefined && params.alg !== ECDSA_P256_SHA256) {
    throw fail(
      'algorithm_unsupported',
      `signature ${label} uses alg ${params.alg}; only ${ECDSA_P256_SHA256} is accepted`,
    );
  }
  const covered = new Set(sig.components.map((id) => id.identity));
  const missing = required.filter((id) => !covered.has(id.identity)).map((id) => id.serialized);
  if (missing.length > 0) {
    throw fail('components_missing', `signature ${label} does not cover ${missing.join(' ')}`);
  }
  if (params.created === undefined && options.requireCreated === true) {
    throw fail(
      'signature_invalid',
      `signature ${label} has no created parameter; it is required (it bounds the replay window)`,
    );
  }
  if (params.created !== undefined) {
    if (params.created > now + skew)
      throw fail('signature_expired', `signature ${label} was created in the future`);
    if (params.created < now - maxAge - skew)
      throw fail('signature_expired', `signature ${label} is older than ${maxAge} s`);
  }
  if (params.expires !== undefined) {
    if (params.created !== undefined && params.expires < params.created) {
      throw fail('signature_invalid', `signature ${label} expires before it was created`);
    }
    if (params.expires < now - skew) throw fail('signature_expired', `signature ${label} has expired`);
  }
  const keyid = params.keyid;
  if (keyid === undefined) throw fail('signature_invalid', `signature ${label} has no keyid`);
  const key = await options.resolveKey(keyid);
  if (key === undefined || key === null)
    throw fail('key_not_found', `no key for keyid ${JSON.stringify(keyid)}`);
  if (key.type === 'secret' || !isP256Key(key)) {
    throw fail('algorithm_unsupported', `key ${JSON.stringify(keyid)} is not a P-256 key`);
  }
  const base = buildBase(view, sig.components, sig.sfParams);
  if (sig.components.some((id) => id.name === 'content-digest' && id.params.size === 0)) {
    verifyContentDigest(view.field('content-digest'), view.message.body ?? EMPTY_BODY);
  }
  if (sig.signature.length !== 64) {
    throw fail(
      'signature_invalid',
      `signature ${label} is ${sig.signature.length} bytes; ES256 needs 64 raw r‖s bytes (not DER)`,
    );
  }
  const ok = cryptoVerify(
    'sha256',
    Buffer.from(base, 'latin1'),
    { key, dsaEncoding: 'ieee-p1363' },
    sig.signature,
  );
  if (!ok) throw fail('signature_invalid', `signature ${label} does not verify`);
  return {
    label,
    keyid,
    key,
    components: sig.components.map((id) => id.serialized),
    params,
  };
}
