/**
 * Fetching and caching the profiles of calling platforms (the `UCP-Agent` header's `profile`
 * URL), following UCP's hosting rules as a consumer:
 *
 *   - https only; http only in development mode and only for loopback hosts;
 *   - hosts resolving to special-use addresses (private, link-local, loopback, multicast, …) are
 *     refused (`invalid_profile_url`), checked on the addresses actually connected to (the
 *     request's own DNS lookup), so a rebinding name cannot slip through; loopback is allowed in
 *     development mode only;
 *   - no redirects (a 3xx is `profile_unreachable`), a timeout (default 5 s) and a body cap
 *     (default 256 KiB) per fetch, JSON only;
 *   - cached for the response's `max-age` clamped to [60 s, 1 h] (60 s when absent); a refetch
 *     sends `If-None-Match`; concurrent fetches of one URL share one request; at most
 *     `maxEntries` profiles are kept (oldest dropped);
 *   - an unknown `kid` forces one refetch, at most once per minute per origin;
 *   - when a refetch fails as unreachable, a profile fetched less than `staleIfErrorSeconds` ago is
 *     still used.
 *
 * Keys: 2026-08-25 profiles list them in top-level `keys[]`, 2026-04-08 in `signing_keys[]`. A key
 * that cannot be used (other type, `use: "enc"`, malformed) fails only signatures naming its kid
 * (`algorithm_unsupported` / `key_not_found`), never the whole profile.
 *
 * Spec: spec/transports.md §ucp-verify; the UCP specification (profile hosting, discovery, key resolution).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';
import type { KeyObject } from 'node:crypto';
import { importJwk, type P256JwkInput } from './jwk.ts';
import { SignatureError } from './signature-error.ts';
import { UcpError } from './ucp-error.ts';
import { UCP_LEGACY_VERSION, UCP_VERSION, VERSION_PATTERN } from './capability-names.ts';

/** A fetched platform profile. */
export interface PlatformProfile {
  url: string;
  /** `ucp.version` of the profile. */
  version: string;
  /** kid → usable public key, or the error that makes it unusable. */
  keys: ReadonlyMap<string, KeyObject | SignatureError>;
  /** The profile's `ucp.capabilities` (for information; negotiation is the platform's side). */
  capabilities: Record<string, unknown>;
  /** When it was fetched (ms since epoch, the cache's clock). */
  fetchedAt: number;
  /** Cached until (ms). */
  expiresAt: number;
  etag: string | undefined;
}

export interface PlatformProfilesOptions {
  /** Development mode: http and loopback URLs allowed (default false). */
  dev?: boolean;
  /** Per fetch, ms (default 5000). */
  timeoutMs?: number;
  /** Largest profile body, bytes (default 262144 = 256 KiB; UCP: not below 128 KiB). */
  maxBytes?: number;
  /** Cache lifetime floor and ceiling, seconds (defaults 60 and 3600). */
  minTtlSeconds?: number;
  maxTtlSeconds?: number;
  /** Minimum spacing of forced refetches per origin, seconds (default 60). */
  forcedRefreshSeconds?: number;
  /** Use a profile this recent when its refetch fails as unreachable, seconds (default 600). */
  staleIfErrorSeconds?: number;
  /** Profiles kept (default 1000). */
  maxEntries?: number;
  /** Clock, ms since epoch (default Date.now). */
  now?: () => number;
}

/** UCP release versions whose platform profiles we accept. */
export const ACCEPTED_PLATFORM_VERSIONS: readonly string[] = [UCP_VERSION, UCP_LEGACY_VERSION];

const SPECIAL_USE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  SPECIAL_USE.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  SPECIAL_USE.addSubnet(net, bits, 'ipv6');
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Is `address` special-use (loopback included)? IPv4-mapped IPv6 addresses are checked as IPv4. */
export function isSpecialUseAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return SPECIAL_USE.check(mapped[1]!, 'ipv4');
  return SPECIAL_USE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Is `address` a loopback address (127/8, ::1, or IPv4-mapped 127/8)? */
export function isLoopbackAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return LOOPBACK.check(mapped[1]!, 'ipv4');
  const family = isIP(address);
  return family !== 0 && LOOPBACK.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

function isLoopbackName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/**
 * Check a profile URL's form: absolute, https (http only in dev mode for loopback hosts), no
 * userinfo, no fragment; an IP literal must not be special-use (loopback allowed in dev mode).
 * @throws UcpError invalid_profile_url
 */
export function checkProfileUrl(url: string, dev: boolean): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UcpError(
      'invalid_profile_url',
      `The profile URL ${JSON.stringify(url.slice(0, 200))} is not an absolute URL.`,
    );
  }
  if (u.username !== '' || u.password !== '')
    throw new UcpError('invalid_profile_url', 'The profile URL must not carry credentials.');
  const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const literal = isIP(host) !== 0;
  const loopback = literal ? isLoopbackAddress(host) : isLoopbackName(host);
  if (u.protocol === 'http:') {
    if (!(dev && loopback))
      throw new UcpError(
        'invalid_profile_url',
        'The profile URL must use https (http is accepted only for loopback hosts in development mode).',
      );
  } else if (u.protocol !== 'https:') {
    throw new UcpError('invalid_profile_url', 'The profile URL must use https.');
  }
  if (literal && isSpecialUseAddress(host) && !(dev && loopback)) {
    throw new UcpError('invalid_profile_url', `The profile URL names a special-use address (${host}).`);
  }
  if (!literal && loopback && !dev)
    throw new UcpError(
      'invalid_profile_url',
      'The profile URL names a loopback host (allowed in development mode only).',
    );
  return u;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A dns.lookup for http(s).request that refuses special-use addresses (loopback allowed in dev
 * mode): the addresses checked are the ones connected to. Fails with UcpError invalid_profile_url.
 */
export function guardedLookup(dev: boolean) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void => {
    dnsLookup(
      hostname,
      { all: true, verbatim: true, ...(options.family ? { family: options.family } : {}) },
      (err, addresses) => {
        if (err) return callback(err, []);
        const list = addresses as LookupAddress[];
        const bad = list.find(
          (a) => isSpecialUseAddress(a.address) && !(dev && isLoopbackAddress(a.address)),
        );
        if (bad !== undefined || list.length === 0) {
          const refusal = new UcpError(
            'invalid_profile_url',
            `The profile host ${hostname} resolves to a special-use address${bad ? ` (${bad.address})` : ''}.`,
          );
          return callback(refusal as unknown as NodeJS.ErrnoException, []);
        }
        if (options.all) callback(null, list);
        else callback(null, list[0]!.address, list[0]!.family);
      },
    );
  };
}

interface FetchedBody {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

function fetchOnce(
  url: URL,
  headers: Record<string, string>,
  dev: boolean,
  timeoutMs: number,
  maxBytes: number,
): Promise<FetchedBody> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, { method: 'GET', headers, lookup: guardedLookup(dev) as never, agent: false });
    const timer = setTimeout(
      () =>
        req.destroy(
          new UcpError('profile_unreachable', `The profile did not answer within ${timeoutMs} ms.`),
        ),
      timeoutMs,
    );
    const finish = (fn: () => void) => {
      clearTimeout(timer);
      fn();
    };
    req.on('error', (err) =>
      finish(() =>
        reject(
          err instanceof UcpError
            ? err
            : new UcpError(
                'profile_unreachable',
                `The profile could not be fetched: ${(err as Error).message}`,
                { cause: err },
              ),
        ),
      ),
    );
    req.on('response', (res) => {
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        req.destroy(new UcpError('profile_malformed', `The profile is larger than ${maxBytes} bytes.`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          req.destroy(new UcpError('profile_malformed', `The profile is larger than ${maxBytes} bytes.`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () =>
        finish(() =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        ),
      );
      res.on('error', (err) =>
        finish(() =>
          reject(
            err instanceof UcpError
              ? err
              : new UcpError('profile_unreachable', `The profile could not be read: ${err.message}`),
          ),
        ),
      );
    });
    req.end();
  });
}

/** Cache lifetime (s) from Cache-Control, clamped to [min, max]; min when absent or not cacheable. */
export function ttlFromCacheControl(header: string | undefined, minTtl: number, maxTtl: number): number {
  if (header === undefined) return minTtl;
  const m = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/i.exec(header);
  if (m === null || /(?:^|,)\s*(no-store|no-cache|private)\b/i.test(header)) return minTtl;
  return Math.min(maxTtl, Math.max(minTtl, Number(m[1])));
}

/**
 * Parse and check a platform profile document: a JSON object with `ucp.version` (YYYY-MM-DD) in
 * ACCEPTED_PLATFORM_VERSIONS, and its key list (`keys[]` for 2026-08-25, `signing_keys[]` for
 * 2026-04-08; absent = no keys).
 * @throws UcpError profile_malformed, version_unsupported
 */
export function parsePlatformProfile(
  url: string,
  body: Buffer,
  fetchedAt: number,
  ttlSeconds: number,
  etag: string | undefined,
): PlatformProfile {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch (cause) {
    throw new UcpError('profile_malformed', 'The profile is not valid JSON.', { cause });
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new UcpError('profile_malformed', 'The profile is not a JSON object.');
  const ucp = (doc as Record<string, unknown>).ucp;
  if (ucp === null || typeof ucp !== 'object' || Array.isArray(ucp))
    throw new UcpError('profile_malformed', 'The profile has no `ucp` object.');
  const version = (ucp as Record<string, unknown>).version;
  if (typeof version !== 'string' || !VERSION_PATTERN.test(version))
    throw new UcpError('profile_malformed', 'The profile has no valid `ucp.version`.');
  if (!ACCEPTED_PLATFORM_VERSIONS.includes(version)) {
    throw new UcpError(
      'version_unsupported',
      `The platform profile declares UCP ${version}; this business speaks ${ACCEPTED_PLATFORM_VERSIONS.join(' and ')}.`,
    );
  }
  const member = version === UCP_LEGACY_VERSION ? 'signing_keys' : 'keys';
  const list = (doc as Record<string, unknown>)[member] ?? [];
  if (!Array.isArray(list))
    throw new UcpError('profile_malformed', `The profile's \`${member}\` is not an array.`);
  const keys = new Map<string, KeyObject | SignatureError>();
  for (const jwk of list) {
    if (jwk === null || typeof jwk !== 'object' || typeof (jwk as { kid?: unknown }).kid !== 'string')
      continue;
    const kid = (jwk as { kid: string }).kid;
    if (keys.has(kid)) continue;
    keys.set(kid, importPublicJwk(jwk as P256JwkInput));
  }
  const capabilities = (ucp as Record<string, unknown>).capabilities;
  return {
    url,
    version,
    keys,
    capabilities:
      capabilities !== null && typeof capabilities === 'object' && !Array.isArray(capabilities)
        ? (capabilities as Record<string, unknown>)
        : {},
    fetchedAt,
    expiresAt: fetchedAt + ttlSeconds * 1000,
    etag,
  };
}

/** Import a published public JWK; a JWK with private members or an unusable type becomes its error. */
export function importPublicJwk(jwk: P256JwkInput): KeyObject | SignatureError {
  if ('d' in jwk)
    return new SignatureError(
      'key_not_found',
      `key ${String(jwk.kid)} is published with private members; refused`,
    );
  try {
    return importJwk(jwk);
  } catch (err) {
    if (err instanceof SignatureError) return err;
    return new SignatureError('key_not_found', `key ${String(jwk.kid)} cannot be imported`);
  }
}

/** The platform-profile cache (one per UCP plugin; see the header). */
export class PlatformProfiles {
  readonly #options: Required<PlatformProfilesOptions>;
  readonly #cache = new Map<string, PlatformProfile>();
  readonly #inflight = new Map<string, Promise<PlatformProfile>>();
  readonly #lastForced = new Map<string, number>();
  /** Number of network fetches made (for tests and metrics). */
  fetches = 0;

  constructor(options: PlatformProfilesOptions = {}) {
    this.#options = {
      dev: options.dev ?? false,
      timeoutMs: options.timeoutMs ?? 5000,
      maxBytes: options.maxBytes ?? 262_144,
      minTtlSeconds: options.minTtlSeconds ?? 60,
      maxTtlSeconds: options.maxTtlSeconds ?? 3600,
      forcedRefreshSeconds: options.forcedRefreshSeconds ?? 60,
      staleIfErrorSeconds: options.staleIfErrorSeconds ?? 600,
      maxEntries: options.maxEntries ?? 1000,
      now: options.now ?? Date.now,
    };
  }

  get dev(): boolean {
    return this.#options.dev;
  }

  /**
   * The profile at `url`, from the cache while fresh, else fetched.
   * @throws UcpError invalid_profile_url, profile_unreachable, profile_malformed, version_unsupported
   */
  async get(url: string, force = false): Promise<PlatformProfile> {
    const cached = this.#cache.get(url);
    if (!force && cached !== undefined && cached.expiresAt > this.#options.now()) return cached;
    const running = this.#inflight.get(url);
    if (running !== undefined) return running;
    const p = this.#fetch(url, cached).finally(() => this.#inflight.delete(url));
    this.#inflight.set(url, p);
    return p;
  }

  /**
   * The key `kid` of the profile at `url`. An unknown kid refetches the profile once (at most once
   * per `forcedRefreshSeconds` per origin, and not when the profile was fetched during this call).
   * @returns the key, or undefined when the profile does not list it
   * @throws SignatureError for a listed key that cannot be used (algorithm_unsupported, key_not_found);
   *   UcpError from fetching (see get)
   */
  async resolveKey(url: string, kid: string): Promise<KeyObject | undefined> {
    const started = this.#options.now();
    let profile = await this.get(url);
    let key = profile.keys.get(kid);
    if (key === undefined && profile.fetchedAt < started) {
      const origin = new URL(url).origin;
      const last = this.#lastForced.get(origin);
      if (last === undefined || started - last >= this.#options.forcedRefreshSeconds * 1000) {
        this.#lastForced.set(origin, started);
        profile = await this.get(url, true);
        key = profile.keys.get(kid);
      }
    }
    if (key instanceof SignatureError) throw key;
    return key;
  }

  /** Forget every cached profile. */
  clear(): void {
    this.#cache.clear();
    this.#lastForced.clear();
  }

  async #fetch(url: string, cached: PlatformProfile | undefined): Promise<PlatformProfile> {
    const o = this.#options;
    const parsed = checkProfileUrl(url, o.dev);
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'solid-verbs-ucp' };
    if (cached?.etag !== undefined) headers['if-none-match'] = cached.etag;
    this.fetches++;
    let res: FetchedBody;
    try {
      res = await fetchOnce(parsed, headers, o.dev, o.timeoutMs, o.maxBytes);
    } catch (err) {
      if (
        err instanceof UcpError &&
        err.code === 'profile_unreachable' &&
        cached !== undefined &&
        o.now() - cached.fetchedAt < o.staleIfErrorSeconds * 1000
      )
        return cached;
      throw err;
    }
    const now = o.now();
    const ttl = ttlFromCacheControl(headerOf(res.headers['cache-control']), o.minTtlSeconds, o.maxTtlSeconds);
    if (res.status === 304 && cached !== undefined) {
      const refreshed = { ...cached, fetchedAt: now, expiresAt: now + ttl * 1000 };
      this.#store(url, refreshed);
      return refreshed;
    }
    if (res.status >= 300 && res.status < 400)
      throw new UcpError(
        'profile_unreachable',
        `The profile answered a redirect (${res.status}); profiles are served without redirects.`,
      );
    if (res.status !== 200)
      throw new UcpError('profile_unreachable', `The profile answered HTTP ${res.status}.`);
    const type = headerOf(res.headers['content-type']) ?? '';
    if (!/^application\/(?:[a-z0-9.+-]*\+)?json\s*(?:;|$)/i.test(type))
      throw new UcpError(
        'profile_malformed',
        `The profile is served as ${JSON.stringify(type)}, not application/json.`,
      );
    const profile = parsePlatformProfile(url, res.body, now, ttl, headerOf(res.headers.etag));
    this.#store(url, profile);
    return profile;
  }

  #store(url: string, profile: PlatformProfile): void {
    this.#cache.delete(url);
    this.#cache.set(url, profile);
    while (this.#cache.size > this.#options.maxEntries) this.#cache.delete(this.#cache.keys().next().value!);
  }
}

function headerOf(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}
