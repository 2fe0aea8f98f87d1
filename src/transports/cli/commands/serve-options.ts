/**
 * The flags of `solid serve` and what they resolve to with the environment: reverse-proxy options,
 * time limits, rate limits, anchor sinks and a trusted external OAuth issuer. Each resolver throws the VerbError envelope of a bad
 * value; serve.ts turns it into a usage line. Spec: spec/transports.md §cli-serve §http-proxy
 * §rate-limits, spec/audit.md §anchors, docs/operations.md §time-limits.
 */
import { resolve } from 'node:path';
import { VerbError } from '../../../runtime/errors.ts';
import {
  normalizeAllowedOrigins,
  parseTrustProxy,
  type TrustProxy,
} from '../../../identity/origin-policy.ts';
import { DEFAULT_RATE_LIMITS, type RateLimits } from '../../http/rate-limit.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../../http/deadline.ts';
import { directorySink, httpSink, type AnchorSink } from '../../../runtime/ledger/keys/anchors.ts';
import { checkIssuerUrl, type ExternalIssuerOptions } from '../../../oauth/external.ts';
import { s3SettingsFromEnv, s3Sink } from '../../../runtime/ledger/keys/anchors-s3.ts';

/** The parsed flags of `solid serve` (commander's camelCase names; every value a string as typed). */
export interface ServeFlags {
  demo?: boolean;
  port: string;
  host: string;
  durability: string;
  bodyLimit?: string;
  /** `--request-timeout-ms <ms>`: the per-request deadline (0 = none). */
  requestTimeoutMs?: string;
  /** `--shutdown-timeout-ms <ms>`: the bound of a SIGTERM shutdown. */
  shutdownTimeoutMs?: string;
  conformancePack?: boolean;
  toolsets?: string;
  dynamicToolsets?: boolean;
  /** `--mcp-schema-profile <name>`: the default served schema profile of /mcp. */
  mcpSchemaProfile?: string;
  /** `--trust-proxy [value]`: true when given bare. */
  trustProxy?: string | boolean;
  /** `--public-url <url>`: the base of printed links and of pending answers' approval_url. */
  publicUrl?: string;
  /** `--allowed-origin <origin>`, repeatable. */
  allowedOrigin?: string[];
  /** `--metrics-port <port>`: serve /metrics on its own listener. */
  metricsPort?: string;
  /** `--rate-limit-key|session|address <n>` calls per window, `--rate-limit-window <seconds>`. */
  rateLimitKey?: string;
  rateLimitSession?: string;
  rateLimitAddress?: string;
  rateLimitWindow?: string;
  /** `--anchor-dir <dir>`, `--anchor-url <url>`, `--anchor-interval <seconds>` (spec/audit.md §anchors). */
  anchorDir?: string;
  anchorUrl?: string;
  /** `--anchor-s3 s3://bucket/prefix` (ledger/keys/anchors-s3.ts). */
  anchorS3?: string;
  anchorInterval?: string;
  /** `--oauth-issuer <url>` / `--oauth-tenant <id>`: trust an external authorization server. */
  oauthIssuer?: string;
  oauthTenant?: string;
}

/**
 * The trusted external authorization server of `solid serve` (spec/oauth.md §external-issuer):
 * `--oauth-issuer <url>` (else SOLID_OAUTH_ISSUER) and the tenant of tokens that name none,
 * `--oauth-tenant <id>` (else SOLID_OAUTH_TENANT). Undefined when no issuer is named.
 * @throws VerbError invalid_input — an issuer that is not https (http only on loopback) or has a
 *   query; a tenant that is not a positive integer; a tenant without an issuer.
 */
export function externalIssuerOf(
  flags: Pick<ServeFlags, 'oauthIssuer' | 'oauthTenant'>,
  env: NodeJS.ProcessEnv,
): ExternalIssuerOptions | undefined {
  const issuer = flags.oauthIssuer ?? (env.SOLID_OAUTH_ISSUER || undefined);
  const tenant = flags.oauthTenant ?? (env.SOLID_OAUTH_TENANT || undefined);
  if (issuer === undefined) {
    if (tenant !== undefined)
      throw new VerbError('invalid_input', '--oauth-tenant (SOLID_OAUTH_TENANT) needs --oauth-issuer.', {
        hint: 'Name the external issuer with --oauth-issuer https://… (SOLID_OAUTH_ISSUER).',
      });
    return undefined;
  }
  checkIssuerUrl(issuer);
  if (tenant === undefined) return { issuer };
  const n = Number(tenant);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new VerbError(
      'invalid_input',
      `--oauth-tenant must be a tenant id (a positive integer), not ${JSON.stringify(tenant.slice(0, 40))}.`,
      {
        hint: 'List tenants with `solid tenant show`.',
      },
    );
  return { issuer, tenant: n };
}

/**
 * The reverse-proxy options of `solid serve`: `--trust-proxy [value]` (else SOLID_TRUST_PROXY,
 * else off) and `--allowed-origin` (repeatable; else SOLID_ALLOWED_ORIGINS, comma-separated).
 * Spec: spec/transports.md §http-proxy.
 * @throws VerbError invalid_request — a malformed origin or trust-proxy value.
 */
export function proxyOptionsOf(
  flags: Pick<ServeFlags, 'trustProxy' | 'allowedOrigin'>,
  env: NodeJS.ProcessEnv,
): { trustProxy: TrustProxy; allowedOrigins: string[] } {
  const trustProxy =
    flags.trustProxy !== undefined
      ? parseTrustProxy(flags.trustProxy)
      : env.SOLID_TRUST_PROXY !== undefined && env.SOLID_TRUST_PROXY !== ''
        ? parseTrustProxy(env.SOLID_TRUST_PROXY)
        : false;
  const given =
    flags.allowedOrigin !== undefined && flags.allowedOrigin.length > 0
      ? flags.allowedOrigin
      : (env.SOLID_ALLOWED_ORIGINS ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
  return { trustProxy, allowedOrigins: normalizeAllowedOrigins(given) };
}

/** Default bound of a SIGTERM shutdown (ms): below a container runtime's usual 10 s grace. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 8000;

/**
 * The time limits of `solid serve`: `--request-timeout-ms` (else SOLID_REQUEST_TIMEOUT_MS, else
 * DEFAULT_REQUEST_TIMEOUT_MS; 0 = none) and `--shutdown-timeout-ms` (else
 * SOLID_SHUTDOWN_TIMEOUT_MS, else DEFAULT_SHUTDOWN_TIMEOUT_MS; at least 1), both in ms.
 * Spec: docs/operations.md §time-limits.
 * @throws VerbError invalid_request — a value that is not a whole number of ms.
 */
export function timeLimitsOf(
  flags: Pick<ServeFlags, 'requestTimeoutMs' | 'shutdownTimeoutMs'>,
  env: NodeJS.ProcessEnv,
): { requestTimeoutMs: number; shutdownTimeoutMs: number } {
  const read = (flag: string | undefined, name: string, option: string, fallback: number, min: number) => {
    const raw = flag ?? (env[name] === undefined || env[name] === '' ? undefined : env[name]);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min)
      throw new VerbError(
        'invalid_request',
        `${option} (${name}) must be a whole number of milliseconds ≥ ${min}, got ${JSON.stringify(raw)}.`,
        { hint: 'See docs/operations.md §time-limits.' },
      );
    return n;
  };
  return {
    requestTimeoutMs: read(
      flags.requestTimeoutMs,
      'SOLID_REQUEST_TIMEOUT_MS',
      '--request-timeout-ms',
      DEFAULT_REQUEST_TIMEOUT_MS,
      0,
    ),
    shutdownTimeoutMs: read(
      flags.shutdownTimeoutMs,
      'SOLID_SHUTDOWN_TIMEOUT_MS',
      '--shutdown-timeout-ms',
      DEFAULT_SHUTDOWN_TIMEOUT_MS,
      1,
    ),
  };
}

/**
 * The rate limits of `solid serve`: each flag, else its SOLID_RATE_LIMIT_* variable, else
 * DEFAULT_RATE_LIMITS. Counts are calls per window; the window is in seconds (returned in ms).
 * @throws VerbError invalid_request — a value that is not a whole number ≥ 0.
 */
export function rateLimitsOf(
  flags: Pick<ServeFlags, 'rateLimitKey' | 'rateLimitSession' | 'rateLimitAddress' | 'rateLimitWindow'>,
  env: NodeJS.ProcessEnv,
): RateLimits {
  const read = (flag: string | undefined, name: string, option: string, fallback: number): number => {
    const raw = flag ?? (env[name] === undefined || env[name] === '' ? undefined : env[name]);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n))
      throw new VerbError(
        'invalid_request',
        `${option} (${name}) must be a whole number ≥ 0, got ${JSON.stringify(raw)}.`,
        {
          hint: '0 turns that limit off; see docs/configuration.md.',
        },
      );
    return n;
  };
  const d = DEFAULT_RATE_LIMITS;
  return {
    perKey: read(flags.rateLimitKey, 'SOLID_RATE_LIMIT_KEY', '--rate-limit-key', d.perKey),
    perSession: read(
      flags.rateLimitSession,
      'SOLID_RATE_LIMIT_SESSION',
      '--rate-limit-session',
      d.perSession,
    ),
    perAddress: read(
      flags.rateLimitAddress,
      'SOLID_RATE_LIMIT_ADDRESS',
      '--rate-limit-address',
      d.perAddress,
    ),
    windowMs:
      read(flags.rateLimitWindow, 'SOLID_RATE_LIMIT_WINDOW', '--rate-limit-window', d.windowMs / 1000) * 1000,
  };
}

/**
 * The anchor sinks and interval of `solid serve` from its flags and the environment
 * (SOLID_ANCHOR_DIR, SOLID_ANCHOR_URL, SOLID_ANCHOR_TOKEN, SOLID_ANCHOR_S3 with SOLID_ANCHOR_S3_ENDPOINT
 * and the AWS SDK's region and credentials, SOLID_ANCHOR_INTERVAL).
 * @throws VerbError invalid_args — a URL that is not http(s), an interval that is not a positive number of seconds,
 *   an S3 location that is not s3://bucket/prefix or without @aws-sdk/client-s3 installed
 */
export function anchorOptionsOf(
  flags: Pick<ServeFlags, 'anchorDir' | 'anchorUrl' | 'anchorS3' | 'anchorInterval'>,
  env: NodeJS.ProcessEnv,
): { sinks: AnchorSink[]; intervalMs: number } {
  const sinks: AnchorSink[] = [];
  const dir = flags.anchorDir ?? (env.SOLID_ANCHOR_DIR || undefined);
  if (dir !== undefined) sinks.push(directorySink(resolve(dir)));
  const url = flags.anchorUrl ?? (env.SOLID_ANCHOR_URL || undefined);
  if (url !== undefined) {
    const ok = URL.canParse(url) && /^https?:$/.test(new URL(url).protocol);
    if (!ok)
      throw new VerbError(
        'invalid_args',
        `--anchor-url must be an http(s) URL, got ${JSON.stringify(url.slice(0, 80))}.`,
        {
          hint: 'e.g. --anchor-url https://anchors.example.org/solid/acme',
        },
      );
    sinks.push(httpSink(url, { token: env.SOLID_ANCHOR_TOKEN }));
  }
  const s3 = flags.anchorS3 ?? (env.SOLID_ANCHOR_S3 || undefined);
  if (s3 !== undefined) sinks.push(s3Sink(s3, s3SettingsFromEnv(env)));
  const raw = flags.anchorInterval ?? (env.SOLID_ANCHOR_INTERVAL || undefined);
  const seconds = raw === undefined ? 300 : Number(raw);
  if (!(seconds > 0) || !Number.isFinite(seconds))
    throw new VerbError(
      'invalid_args',
      `--anchor-interval must be a positive number of seconds, got ${JSON.stringify(String(raw).slice(0, 40))}.`,
      {
        hint: 'e.g. --anchor-interval 300',
      },
    );
  return { sinks, intervalMs: Math.round(seconds * 1000) };
}
