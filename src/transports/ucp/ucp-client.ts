/**
 * The platform side of UCP, for clients, tests and `solid ucp call`: sign a request the way a UCP
 * business verifies it, verify a business's signed answer against the keys of its profile, and
 * call a capability end to end.
 *
 *   signRequest     RFC 9421 ES256 over `@method @authority @path [@query] ucp-agent
 *                   [idempotency-key] [solid-consent-nonce] [content-digest content-type]`,
 *                   label sig1, `created` + `keyid` (never `alg`), Content-Digest sha-256 over the
 *                   exact body bytes
 *   verifyResponse  requires `@status` and, with a body, `content-digest content-type`; the key by
 *                   `keyid` among the business profile's `keys[]` (or `signing_keys[]`)
 *   callCapability  GET the business profile, find the capability's service endpoint, POST the
 *                   signed request, verify the answer
 *
 * Spec: spec/transports.md §ucp-client; the UCP specification (REST request headers, request signing).
 */
import { randomUUID, type KeyObject } from 'node:crypto';
import { createContentDigest } from './content-digest.ts';
import { importJwk, type P256JwkInput } from './jwk.ts';
import { signMessage, verifyMessage, type VerifiedSignature } from './rfc9421.ts';
import { SignatureError } from './signature-error.ts';
import { importPublicJwk } from './platform-profiles.ts';
import { CONSENT_NONCE_HEADER } from './verify-request.ts';

export interface SignRequestOptions {
  /** Absolute URL as it will be requested (its authority becomes @authority). */
  url: string;
  /** Default POST. */
  method?: string;
  /** Raw bytes, a string (UTF-8), or a value serialized with JSON.stringify. Absent = no body. */
  body?: Uint8Array | string | object;
  /** Extra headers (lower-case names are used as given). */
  headers?: Record<string, string>;
  /** The platform's profile URL, sent as `UCP-Agent: profile="…"`. */
  profileUrl: string;
  keyid: string;
  /** P-256 private key: a KeyObject or a private JWK (with `d`). */
  privateKey: KeyObject | P256JwkInput;
  /** Sent as Idempotency-Key and covered. A UUID is generated for POST when omitted; `false` sends none. */
  idempotencyKey?: string | false;
  /** Unix seconds (default now). */
  created?: number;
  /** Unix seconds (optional). */
  expires?: number;
  label?: string;
  /** Components to cover in addition to the UCP set (their headers must be in `headers`). */
  extraComponents?: readonly string[];
}

/** A signed request ready to send. */
export interface SignedRequest {
  method: string;
  url: string;
  /** Lower-case header names: ucp-agent, signature-input, signature, [idempotency-key, content-type, content-digest], plus yours. */
  headers: Record<string, string>;
  body: Buffer | undefined;
}

function bodyBytes(body: SignRequestOptions['body']): Buffer | undefined {
  if (body === undefined) return undefined;
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  return Buffer.from(JSON.stringify(body), 'utf8');
}

function privateKeyOf(key: KeyObject | P256JwkInput): KeyObject {
  return 'd' in key || 'kty' in key ? importJwk(key as P256JwkInput) : (key as KeyObject);
}

/**
 * Sign a UCP request (see the header for the covered components).
 * @throws SignatureError algorithm_unsupported (not a P-256 private key), signature_invalid (bad label/params)
 */
export function signRequest(options: SignRequestOptions): SignedRequest {
  const method = (options.method ?? 'POST').toUpperCase();
  const body = bodyBytes(options.body);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.headers ?? {})) headers[k.toLowerCase()] = v;
  headers['ucp-agent'] = `profile="${options.profileUrl.replace(/["\\]/g, (c) => `\\${c}`)}"`;
  const idem =
    options.idempotencyKey === undefined
      ? method === 'POST'
        ? randomUUID()
        : undefined
      : options.idempotencyKey === false
        ? undefined
        : options.idempotencyKey;
  if (idem !== undefined) headers['idempotency-key'] = idem;
  if (body !== undefined && body.length > 0) {
    headers['content-type'] ??= 'application/json';
    headers['content-digest'] = createContentDigest(body);
  }
  const components = ['@method', '@authority', '@path'];
  const u = new URL(options.url);
  if (u.search !== '' || options.url.includes('?')) components.push('@query');
  components.push('ucp-agent');
  if (headers['idempotency-key'] !== undefined) components.push('idempotency-key');
  if (headers[CONSENT_NONCE_HEADER] !== undefined) components.push(CONSENT_NONCE_HEADER);
  if (body !== undefined && body.length > 0) components.push('content-digest', 'content-type');
  for (const c of options.extraComponents ?? []) if (!components.includes(c)) components.push(c);
  const signed = signMessage(
    { method, url: options.url, headers, ...(body !== undefined ? { body } : {}) },
    {
      keyid: options.keyid,
      privateKey: privateKeyOf(options.privateKey),
      components,
      created: options.created ?? Math.floor(Date.now() / 1000),
      ...(options.expires !== undefined ? { expires: options.expires } : {}),
      ...(options.label !== undefined ? { label: options.label } : {}),
    },
  );
  return { method, url: options.url, headers: { ...headers, ...signed }, body };
}

export interface VerifyResponseOptions {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The exact body bytes received. */
  body: Uint8Array;
  /** The request URL (the response's target). */
  url: string;
  /** The business's public JWKs (its profile's `keys[]`), or a lookup by kid. */
  keys:
    | readonly Record<string, unknown>[]
    | ((kid: string) => KeyObject | undefined | Promise<KeyObject | undefined>);
  /** Default: now. */
  now?: Date | number;
  maxSkewSeconds?: number;
  maxAgeSeconds?: number;
}

/** The public keys of a profile document: `keys[]` (2026-08-25) or `signing_keys[]` (2026-04-08). */
export function profileKeys(profile: unknown): Record<string, unknown>[] {
  const doc = profile as { keys?: unknown; signing_keys?: unknown } | null;
  const list = Array.isArray(doc?.keys) ? doc.keys : Array.isArray(doc?.signing_keys) ? doc.signing_keys : [];
  return list.filter((k): k is Record<string, unknown> => k !== null && typeof k === 'object');
}

/**
 * Verify a UCP business's signed answer.
 * @returns the verified signature (label, keyid, params)
 * @throws SignatureError (signature_missing, components_missing, key_not_found, digest_mismatch,
 *   signature_invalid, signature_expired, algorithm_unsupported)
 */
export async function verifyResponse(options: VerifyResponseOptions): Promise<VerifiedSignature> {
  const keys = options.keys;
  const resolveKey =
    typeof keys === 'function'
      ? keys
      : (kid: string) => {
          const jwk = keys.find((k) => k.kid === kid);
          if (jwk === undefined) return undefined;
          const key = importPublicJwk(jwk as P256JwkInput);
          if (key instanceof SignatureError) throw key;
          return key;
        };
  const required = options.body.length > 0 ? ['@status', 'content-digest', 'content-type'] : ['@status'];
  return verifyMessage(
    { status: options.status, url: options.url, headers: options.headers, body: options.body },
    {
      resolveKey,
      requiredComponents: required,
      ...(options.now !== undefined ? { now: options.now } : {}),
      ...(options.maxSkewSeconds !== undefined ? { maxSkewSeconds: options.maxSkewSeconds } : {}),
      ...(options.maxAgeSeconds !== undefined ? { maxAgeSeconds: options.maxAgeSeconds } : {}),
    },
  );
}

export interface CallCapabilityOptions {
  /** The business: its profile URL (…/.well-known/ucp) or its base URL. */
  target: string;
  /** Capability name from the business profile. */
  capability: string;
  /** The capability input (JSON body). */
  args: unknown;
  /** The calling platform's profile URL (UCP-Agent). */
  profileUrl: string;
  keyid: string;
  privateKey: KeyObject | P256JwkInput;
  idempotencyKey?: string;
  /** Solid-Consent-Nonce: confirm a typed-phrase call approved out of band. */
  consentNonce?: string;
  /** Per request, ms (default 10000). */
  timeoutMs?: number;
}

export interface CallCapabilityResult {
  status: number;
  /** The parsed JSON answer (undefined when not JSON). */
  body: unknown;
  headers: Record<string, string>;
  /** The endpoint called. */
  url: string;
  /** The verified signature, or why the answer's signature did not verify. */
  signature: VerifiedSignature | SignatureError;
}

async function fetchJson(url: string, timeoutMs: number): Promise<unknown> {
  const res = await fetch(url, {
    redirect: 'manual',
    signal: AbortSignal.timeout(timeoutMs),
    headers: { accept: 'application/json' },
  });
  if (res.status !== 200)
    throw new Error(
      `GET ${url} answered HTTP ${res.status}${res.status >= 300 && res.status < 400 ? ' (profiles are served without redirects)' : ''}`,
    );
  return res.json();
}

/** The endpoint of the REST service a capability belongs to (the longest service name prefixing it). */
export function endpointFor(profile: unknown, capability: string): string | undefined {
  const services = (profile as { ucp?: { services?: Record<string, unknown> } } | null)?.ucp?.services ?? {};
  let best: { name: string; endpoint: string } | undefined;
  for (const [name, bindings] of Object.entries(services)) {
    if (!capability.startsWith(`${name}.`) || !Array.isArray(bindings)) continue;
    const rest = bindings.find((b) => (b as { transport?: unknown }).transport === 'rest') as
      { endpoint?: unknown } | undefined;
    if (typeof rest?.endpoint === 'string' && (best === undefined || name.length > best.name.length))
      best = { name, endpoint: rest.endpoint };
  }
  return best?.endpoint;
}

/**
 * Call a capability of a UCP business (see the header).
 * @throws Error when the profile cannot be fetched or does not offer the capability
 */
export async function callCapability(options: CallCapabilityOptions): Promise<CallCapabilityResult> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const profileUrl = /\/\.well-known\/ucp$/.test(new URL(options.target).pathname)
    ? options.target
    : `${options.target.replace(/\/+$/, '')}/.well-known/ucp`;
  const profile = await fetchJson(profileUrl, timeoutMs);
  const capabilities =
    (profile as { ucp?: { capabilities?: Record<string, unknown> } }).ucp?.capabilities ?? {};
  if (!(options.capability in capabilities))
    throw new Error(`the business profile at ${profileUrl} does not offer ${options.capability}`);
  const endpoint = endpointFor(profile, options.capability);
  if (endpoint === undefined)
    throw new Error(`the business profile at ${profileUrl} has no REST endpoint for ${options.capability}`);
  const url = `${endpoint}/capabilities/${encodeURIComponent(options.capability)}`;
  const signed = signRequest({
    url,
    body: options.args ?? {},
    profileUrl: options.profileUrl,
    keyid: options.keyid,
    privateKey: options.privateKey,
    ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
    ...(options.consentNonce !== undefined
      ? { headers: { [CONSENT_NONCE_HEADER]: options.consentNonce } }
      : {}),
  });
  const res = await fetch(url, {
    method: 'POST',
    headers: signed.headers,
    body: signed.body === undefined ? undefined : new Uint8Array(signed.body),
    redirect: 'manual',
    signal: AbortSignal.timeout(timeoutMs),
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    headers[name] = value;
  });
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    body = undefined;
  }
  let signature: VerifiedSignature | SignatureError;
  try {
    signature = await verifyResponse({
      status: res.status,
      headers,
      body: bytes,
      url,
      keys: profileKeys(profile),
    });
  } catch (err) {
    if (!(err instanceof SignatureError)) throw err;
    signature = err;
  }
  return { status: res.status, body, headers, url, signature };
}
