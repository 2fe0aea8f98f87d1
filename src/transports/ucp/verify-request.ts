/**
 * Authenticating an inbound UCP request: RFC 9421 signatures over the raw body bytes, with the
 * covered components UCP requires, the signer's key found in its profile or in the tenant's trust
 * list. The verified platform becomes the dispatch principal (capability-dispatch.ts).
 *
 * Order: Signature-Input/Signature present (signature_missing) → `UCP-Agent` parsed as an RFC 8941
 * dictionary, member `profile` an sf-string URL (invalid_profile_url) → the platform is trusted by
 * the tenant (profile_not_trusted) → per signature label (any label verifying authenticates):
 * coverage of `@method @authority @path`, `@query` when the URL has a query, `ucp-agent`,
 * `idempotency-key` and `solid-consent-nonce` when present, `content-digest content-type` when a
 * body is present (components_missing) → `created` within skew and age, `expires` not passed
 * (signature_expired) → key by `keyid`: pinned trust-list keys, else the profile (one forced
 * refetch for an unknown kid; key_not_found) → Content-Digest over the raw body (digest_mismatch)
 * → ES256 raw r‖s (signature_invalid; `alg` other than ecdsa-p256-sha256 is
 * algorithm_unsupported) → replay of the same signature within its window (signature_replayed).
 * We additionally require `created` (signature_invalid without it): it bounds the replay window.
 *
 * Spec: spec/transports.md §ucp-verify; the UCP specification (discovery, REST headers, request signing).
 */
import { createHash, type KeyObject } from 'node:crypto';
import { parseDictionary } from 'structured-headers';
import { verifyMessage, type HttpMessage, type VerifiedSignature } from './rfc9421.ts';
import type { ReplayGuard } from './replay-cache.ts';
import { SignatureError } from './signature-error.ts';
import { UcpError, fromSignatureError } from './ucp-error.ts';
import { checkProfileUrl, importPublicJwk, type PlatformProfiles } from './platform-profiles.ts';
import { normalizeProfileUrl, type PlatformPolicy, type UcpTenantConfig } from './ucp-config.ts';
import type { P256JwkInput } from './jwk.ts';

/** The header a platform uses to confirm a typed-phrase action after an out-of-band approval. */
export const CONSENT_NONCE_HEADER = 'solid-consent-nonce';

/** A request as received: raw target, field lines, raw body bytes. */
export interface InboundRequest {
  method: string;
  /** Absolute URL as the client addressed it: scheme, Host, raw path and query. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** The exact body bytes; absent or empty = no body. */
  body?: Uint8Array;
}

/** Who signed the request. */
export interface VerifiedPlatform {
  /** The profile URL from UCP-Agent (normalized). */
  profileUrl: string;
  /** host[:port] of the profile URL, for `agent_type` ("ucp:<host>"). */
  host: string;
  policy: PlatformPolicy;
  signature: VerifiedSignature;
}

export interface VerifyRequestOptions {
  config: UcpTenantConfig;
  profiles: PlatformProfiles;
  replay?: ReplayGuard;
  /** Current time (the runtime clock). */
  now: Date;
  /** Clock skew on created/expires, seconds (default 60). */
  skewSeconds?: number;
  /** Oldest acceptable `created`, seconds (default 300). */
  maxAgeSeconds?: number;
}

function headerLines(headers: InboundRequest['headers'], name: string): string[] | undefined {
  const v = headers[name];
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v : [v];
}

/**
 * The `profile` URL of a `UCP-Agent` header (an RFC 8941 dictionary: `profile="https://…"`).
 * @throws UcpError invalid_profile_url (absent, not a dictionary, no sf-string `profile`)
 */
export function profileUrlOf(header: string | readonly string[] | undefined): string {
  if (header === undefined || header.length === 0)
    throw new UcpError(
      'invalid_profile_url',
      'The UCP-Agent header is missing; send UCP-Agent: profile="https://…/.well-known/ucp".',
    );
  let dict: ReturnType<typeof parseDictionary>;
  try {
    dict = parseDictionary(typeof header === 'string' ? header : header.join(', '));
  } catch (cause) {
    throw new UcpError('invalid_profile_url', 'The UCP-Agent header is not a structured-field dictionary.', {
      cause,
    });
  }
  const member = dict.get('profile');
  const value = member === undefined || Array.isArray(member[0]) ? undefined : member[0];
  if (typeof value !== 'string')
    throw new UcpError('invalid_profile_url', 'UCP-Agent has no profile="…" string member.');
  return value;
}

/** The components every UCP request signature must cover, for this request. */
export function requiredComponents(req: InboundRequest): string[] {
  const out = ['@method', '@authority', '@path'];
  const q = req.url.indexOf('?');
  if (q !== -1 && q < (req.url.indexOf('#') === -1 ? Infinity : req.url.indexOf('#'))) out.push('@query');
  out.push('ucp-agent');
  if (headerLines(req.headers, 'idempotency-key') !== undefined) out.push('idempotency-key');
  if (headerLines(req.headers, CONSENT_NONCE_HEADER) !== undefined) out.push(CONSENT_NONCE_HEADER);
  if (req.body !== undefined && req.body.length > 0) out.push('content-digest', 'content-type');
  return out;
}

/** The deterministic user_id of a platform: 1 000 000 000 + (first 4 bytes of SHA-256(profile URL)) mod 10⁹. */
export function platformUserId(profileUrl: string): number {
  return (
    1_000_000_000 + (createHash('sha256').update(profileUrl, 'utf8').digest().readUInt32BE(0) % 1_000_000_000)
  );
}

/** UCP-Agent header text → its normalized, checked profile URL (successes only; bounded). */
const agentCache = new Map<string, { profileUrl: string; host: string }>();
const AGENT_CACHE_LIMIT = 256;

/**
 * The normalized profile URL and host of a UCP-Agent header, cached by the header's text and
 * `dev` (the same text always gives the same answer; only successes are kept).
 * @throws UcpError invalid_profile_url
 */
function platformOf(
  header: readonly string[] | undefined,
  dev: boolean,
): { profileUrl: string; host: string } {
  const text = header === undefined ? undefined : header.join(', ');
  const cacheKey = text === undefined ? undefined : `${dev ? 1 : 0}${text}`;
  const hit = cacheKey === undefined ? undefined : agentCache.get(cacheKey);
  if (hit !== undefined) return hit;
  const profileUrl = normalizeProfileUrl(profileUrlOf(header));
  if (profileUrl === undefined)
    throw new UcpError('invalid_profile_url', 'The UCP-Agent profile is not an absolute https URL.');
  const found = { profileUrl, host: checkProfileUrl(profileUrl, dev).host };
  if (cacheKey !== undefined) {
    if (agentCache.size >= AGENT_CACHE_LIMIT) agentCache.clear();
    agentCache.set(cacheKey, found);
  }
  return found;
}

const pinnedCache = new WeakMap<
  readonly Record<string, unknown>[],
  Map<string, KeyObject | SignatureError>
>();

function pinnedKeys(keys: readonly Record<string, unknown>[]): Map<string, KeyObject | SignatureError> {
  let map = pinnedCache.get(keys);
  if (map === undefined) {
    map = new Map();
    for (const jwk of keys) {
      const kid = String(jwk.kid);
      if (!map.has(kid)) map.set(kid, importPublicJwk(jwk as P256JwkInput));
    }
    pinnedCache.set(keys, map);
  }
  return map;
}

/**
 * Verify a UCP request (see the header for the order and codes).
 * @returns the platform and the signature that verified
 * @throws UcpError with the UCP code and status of the first failure
 */
export async function verifyUcpRequest(
  req: InboundRequest,
  options: VerifyRequestOptions,
): Promise<VerifiedPlatform> {
  if (
    headerLines(req.headers, 'signature-input') === undefined ||
    headerLines(req.headers, 'signature') === undefined
  ) {
    throw new UcpError(
      'signature_missing',
      'The request is not signed: send Signature-Input and Signature (RFC 9421, ES256).',
    );
  }
  const { profileUrl, host } = platformOf(headerLines(req.headers, 'ucp-agent'), options.profiles.dev);
  const policy = options.config.platforms.get(profileUrl) ?? options.config.anyPlatform;
  if (policy === undefined) {
    throw new UcpError(
      'profile_not_trusted',
      `The platform ${profileUrl} is not in this business's trust list.`,
    );
  }
  const pinned =
    policy.profile !== undefined && policy.keys !== undefined ? pinnedKeys(policy.keys) : undefined;
  const resolveKey = async (kid: string): Promise<KeyObject | undefined> => {
    if (pinned !== undefined) {
      const k = pinned.get(kid);
      if (k instanceof SignatureError) throw k;
      return k;
    }
    return options.profiles.resolveKey(profileUrl, kid);
  };
  const message: HttpMessage = {
    method: req.method,
    url: req.url,
    headers: req.headers,
    ...(req.body !== undefined ? { body: req.body } : {}),
  };
  let signature: VerifiedSignature;
  try {
    signature = await verifyMessage(message, {
      resolveKey,
      requiredComponents: requiredComponents(req),
      now: options.now,
      maxSkewSeconds: options.skewSeconds ?? 60,
      maxAgeSeconds: options.maxAgeSeconds ?? 300,
      ...(options.replay !== undefined ? { replayCache: options.replay } : {}),
      requireCreated: true,
    });
  } catch (err) {
    if (err instanceof SignatureError) throw fromSignatureError(err);
    throw err;
  }
  return { profileUrl, host, policy, signature };
}
