/**
 * UCP configuration, in two places:
 *
 * 1. Server options (one per `solid serve` process; the plugin's options or the environment):
 *      SOLID_UCP_BASE_URL   public origin the profile advertises, e.g. https://api.example.com
 *                           (default: the request's own scheme and Host — dev only)
 *      SOLID_UCP_TENANT     company_id served at /.well-known/ucp (default: the lowest tenant
 *                           that is not the sandbox)
 *      SOLID_UCP_NAMESPACE  default reverse-domain namespace (default: from the base URL's host,
 *                           else `com.example`)
 *      SOLID_UCP_DEV=1      development mode: platform profiles on http loopback URLs are fetched
 *
 * 2. Tenant settings (`tenants.settings.ucp`, JSON; shared by every node; `solid ucp config set`):
 *      {
 *        "namespace": "com.example",                 // this business's reverse domain
 *        "capability_version": "2026-08-25",         // version date of our capabilities
 *        "sub_agents": { "crm": "sales", "email_send": "marketing" },  // category or verb → sub-agent
 *        "extends": { "<verb>": ["<parent verb>"] },  // extra `extends` edges
 *        "platforms": [{                              // the trust list
 *          "profile": "https://platform.example/.well-known/ucp",  // as sent in UCP-Agent
 *          "name": "Example platform",
 *          "role": "read_only",                      // principal role (default read_only)
 *          "allow": ["com.example.sales.*"],         // capability names or `prefix.*` (default: all)
 *          "max_class": "READ",                      // consent a signature implies: READ | WRITE_REVERSIBLE
 *          "keys": [{ "kty": "EC", ... }]            // pinned public JWKs: no profile fetch
 *        }],
 *        "any_platform": { "role": "read_only", "allow": [...], "max_class": "READ" }  // unlisted platforms
 *      }
 *    Without `platforms` / `any_platform` every platform is `profile_not_trusted` (403).
 *
 * Spec: spec/transports.md §ucp-config.
 */
import { z } from 'zod';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import type { Role, VerbClass } from '../../spec/types.ts';
import { ROLES } from '../../spec/types.ts';
import {
  SUB_AGENTS,
  VERSION_PATTERN,
  UCP_VERSION,
  namespaceProblem,
  namespaceFromUrl,
  type SubAgent,
} from './capability-names.ts';
import { lowestTenantIds } from '../../runtime/tenants.ts';

/** Consent classes a signature may imply (typed-phrase classes never are). */
export const IMPLIABLE_CLASSES = ['READ', 'WRITE_REVERSIBLE'] as const;
export type ImpliableClass = (typeof IMPLIABLE_CLASSES)[number];

/** The default namespace when neither the settings, the environment nor the base URL give one. */
export const FALLBACK_NAMESPACE = 'com.example';

const jwkSchema = z.looseObject({ kty: z.string(), kid: z.string().min(1).max(200) });

const platformPolicySchema = z.strictObject({
  name: z.string().max(200).optional(),
  role: z.enum(ROLES).optional(),
  allow: z.array(z.string().min(1).max(300)).max(1000).optional(),
  max_class: z.enum(IMPLIABLE_CLASSES).optional(),
});

const platformSchema = platformPolicySchema.extend({
  profile: z.string().min(1).max(2048),
  keys: z.array(jwkSchema).min(1).max(50).optional(),
});

const tenantConfigSchema = z.strictObject({
  namespace: z.string().max(200).optional(),
  capability_version: z.string().regex(VERSION_PATTERN, 'must be a date YYYY-MM-DD').optional(),
  sub_agents: z.record(z.string().min(1).max(200), z.enum(SUB_AGENTS)).optional(),
  extends: z.record(z.string().min(1).max(200), z.array(z.string().min(1).max(200)).max(50)).optional(),
  platforms: z.array(platformSchema).max(1000).optional(),
  any_platform: platformPolicySchema.optional(),
});

/** `settings.ucp` as stored. */
export type UcpTenantSettings = z.infer<typeof tenantConfigSchema>;

/** A platform's policy after defaults. */
export interface PlatformPolicy {
  /** The profile URL (normalized), or undefined for the `any_platform` policy. */
  profile: string | undefined;
  name: string | undefined;
  role: Role;
  /** Capability names or `prefix.*` patterns; undefined = every capability. */
  allow: readonly string[] | undefined;
  maxClass: ImpliableClass;
  /** Pinned public JWKs (trust list); undefined = fetch the platform's profile. */
  keys: readonly Record<string, unknown>[] | undefined;
}

/** A tenant's UCP configuration after defaults. */
export interface UcpTenantConfig {
  namespace: string;
  capabilityVersion: string;
  subAgents: Readonly<Record<string, SubAgent>>;
  extends: Readonly<Record<string, readonly string[]>>;
  /** By normalized profile URL. */
  platforms: ReadonlyMap<string, PlatformPolicy>;
  anyPlatform: PlatformPolicy | undefined;
}

/**
 * Validate `settings.ucp` (unknown members refused). Returns the stored form.
 * @throws Error with a one-line message naming the member that is wrong
 */
export function parseUcpSettings(raw: unknown): UcpTenantSettings {
  const parsed = tenantConfigSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(
      `settings.ucp${issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')}: ${issue.message}`,
    );
  }
  const s = parsed.data;
  if (s.namespace !== undefined) {
    const problem = namespaceProblem(s.namespace);
    if (problem !== undefined) throw new Error(`settings.ucp.namespace: ${problem}`);
  }
  for (const [i, p] of (s.platforms ?? []).entries()) {
    if (normalizeProfileUrl(p.profile) === undefined)
      throw new Error(`settings.ucp.platforms[${i}].profile: not an absolute http(s) URL`);
  }
  return s;
}

/** A profile URL in the one form used for matching (WHATWG serialization); undefined when not http(s). */
export function normalizeProfileUrl(url: string): string | undefined {
  try {
    const u = new URL(url);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return undefined;
    u.hash = '';
    return u.href;
  } catch {
    return undefined;
  }
}

/**
 * The tenant's configuration with defaults. `defaultNamespace` is the server's (options/env).
 * @throws Error when `settings.ucp` is invalid (see parseUcpSettings)
 */
export function resolveTenantConfig(rawSettingsUcp: unknown, defaultNamespace: string): UcpTenantConfig {
  const s = parseUcpSettings(rawSettingsUcp);
  const policy = (
    p: z.infer<typeof platformPolicySchema> & { profile?: string; keys?: Record<string, unknown>[] },
  ): PlatformPolicy => ({
    profile: p.profile === undefined ? undefined : normalizeProfileUrl(p.profile),
    name: p.name,
    role: p.role ?? 'read_only',
    allow: p.allow,
    maxClass: p.max_class ?? 'READ',
    keys: p.keys,
  });
  const platforms = new Map<string, PlatformPolicy>();
  for (const p of s.platforms ?? []) {
    const resolved = policy(p);
    platforms.set(resolved.profile!, resolved);
  }
  return {
    namespace: s.namespace ?? defaultNamespace,
    capabilityVersion: s.capability_version ?? UCP_VERSION,
    subAgents: s.sub_agents ?? {},
    extends: s.extends ?? {},
    platforms,
    anyPlatform: s.any_platform === undefined ? undefined : policy(s.any_platform),
  };
}

/** Does the policy allow this capability? `allow` entries are exact names or `prefix.*`. */
export function capabilityAllowed(policy: PlatformPolicy, capability: string): boolean {
  if (policy.allow === undefined) return true;
  return policy.allow.some((a) =>
    a.endsWith('.*') ? capability.startsWith(a.slice(0, -1)) : a === capability,
  );
}

const CLASS_RANK: Readonly<Record<VerbClass, number>> = {
  READ: 0,
  WRITE_REVERSIBLE: 1,
  WRITE_FINANCIAL: 2,
  IRREVERSIBLE: 3,
  BLOCKED: 4,
};

/** Is `cls` at or below the class a platform's signature implies? */
export function classImplied(cls: VerbClass, maxClass: ImpliableClass): boolean {
  return CLASS_RANK[cls] <= CLASS_RANK[maxClass];
}

/** Server-level options of the UCP plugin (see the header for the environment variables). */
export interface UcpServerConfig {
  /** Public origin, no trailing slash (https in production). Undefined: derived per request. */
  baseUrl: string | undefined;
  /** company_id served at the root routes; undefined: the lowest non-sandbox tenant. */
  primaryTenant: number | undefined;
  /** Namespace of tenants that configure none. */
  defaultNamespace: string;
  /** Development mode: http and loopback platform profile URLs are allowed. */
  dev: boolean;
}

/**
 * Read the server options from the environment (SOLID_UCP_BASE_URL, SOLID_UCP_TENANT,
 * SOLID_UCP_NAMESPACE, SOLID_UCP_DEV).
 * @throws Error naming the variable that is malformed
 */
export function ucpConfigFromEnv(env: NodeJS.ProcessEnv = process.env): UcpServerConfig {
  const baseUrl =
    env.SOLID_UCP_BASE_URL === undefined || env.SOLID_UCP_BASE_URL === ''
      ? undefined
      : checkBaseUrl(env.SOLID_UCP_BASE_URL, 'SOLID_UCP_BASE_URL');
  let primaryTenant: number | undefined;
  if (env.SOLID_UCP_TENANT !== undefined && env.SOLID_UCP_TENANT !== '') {
    primaryTenant = Number(env.SOLID_UCP_TENANT);
    if (!Number.isSafeInteger(primaryTenant) || primaryTenant < 1)
      throw new Error('SOLID_UCP_TENANT must be a positive integer (a company_id)');
  }
  const ns =
    env.SOLID_UCP_NAMESPACE === undefined || env.SOLID_UCP_NAMESPACE === ''
      ? undefined
      : env.SOLID_UCP_NAMESPACE;
  if (ns !== undefined && namespaceProblem(ns) !== undefined)
    throw new Error(`SOLID_UCP_NAMESPACE: ${namespaceProblem(ns)!}`);
  return {
    baseUrl,
    primaryTenant,
    defaultNamespace:
      ns ?? (baseUrl === undefined ? undefined : namespaceFromUrl(baseUrl)) ?? FALLBACK_NAMESPACE,
    dev: env.SOLID_UCP_DEV === '1' || env.SOLID_UCP_DEV === 'true',
  };
}

/** An absolute http(s) origin without a trailing slash. @throws Error naming `what` */
export function checkBaseUrl(url: string, what = 'baseUrl'): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`${what} must be an absolute URL such as https://api.example.com`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new Error(`${what} must use https (http only for local development)`);
  if (u.search !== '' || u.hash !== '' || u.username !== '' || u.password !== '')
    throw new Error(`${what} must not carry a query, fragment or credentials`);
  return u.href.replace(/\/+$/, '');
}

/**
 * The business served at the root routes (and the CLI's default tenant): `configured` when given,
 * else the lowest company_id that is not the runtime's sandbox tenant, else the sandbox; undefined
 * when the database has no tenant.
 */
export async function primaryTenantOf(rt: Runtime, configured?: number): Promise<number | undefined> {
  if (configured !== undefined) return configured;
  let sandbox: number | undefined;
  try {
    sandbox = (await rt.sandboxPrincipal()).company_id;
  } catch {
    sandbox = undefined;
  }
  const ids = await rt.store.read((q) => lowestTenantIds(q, 2));
  return ids.find((i) => i !== sandbox) ?? ids[0];
}
