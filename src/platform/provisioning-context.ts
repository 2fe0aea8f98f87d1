/**
 * The shared ground of the provisioning verbs (spec/platform.md): what a verb handler is given
 * (`Ctx`: the runtime, the calling platform, the clock, the tenant once known, the tenant-chain rows
 * it committed) and answers (`Outcome`), the input checks every verb uses (each a VerbError
 * `invalid_input` with `path`), and the tenant helpers: the platform-managed tenant of an external
 * id (`not_found` otherwise), a row of the tenant's own chain, a row of the platform log, and the
 * refusal of a deleted tenant (`tenant_suspended`). The verbs are in provisioning-tenants.ts and
 * provisioning-people.ts; the runner in provisioning.ts.
 */
import type { Tier } from '../spec/types.ts';
import { TIERS } from '../spec/types.ts';
import type { Queryable, StoreTx } from '../store/store.ts';
import { VerbError } from '../runtime/errors.ts';
import { tenantOfRow, type Tenant } from '../runtime/tenants.ts';
import { appendAudit, auditEntry, type AuditRow } from '../runtime/ledger/write/audit.ts';
import type { TransportRuntime } from '../transports/runtime-surface.ts';
import { appendPlatformLog } from './platform-log.ts';
import type { PlatformPrincipal } from './platform-keys.ts';

/** What provisioning needs of the runtime. */
export type PlatformRuntime = Pick<
  TransportRuntime,
  'store' | 'tenants' | 'keys' | 'clock' | 'afterWrite' | 'logger' | 'auditBuffer'
>;

/** Options of a provisioning call. */
export interface PlatformCallOptions {
  /** Base of enrolment links (`<base>/enrol/<token>`), e.g. the server's public URL. */
  publicUrl: string;
}
/** A tenant as provisioning shows it. */
export interface PlatformTenantView {
  company_id: number;
  external_id: string;
  name: string;
  tier: Tier;
  time_zone: string;
  status: Tenant['status'];
  created_at: string;
}

/** What a verb handler answers: the envelope's `data`, and its `secret` (shown once, never logged). */
export interface Outcome {
  data: Record<string, unknown>;
  secret?: Record<string, unknown>;
}

/** What a verb handler is given: the runtime, the calling platform, the call's clock and options. */
export interface Ctx {
  rt: PlatformRuntime;
  platform: PlatformPrincipal;
  now: Date;
  opts: PlatformCallOptions;
  /** Filled by handlers as soon as the tenant is known (for the refusal row). */
  company_id?: number;
  external_id?: string;
  /** Tenant-chain rows committed by the call (checkpoint cadence, observers). */
  rows: AuditRow[];
}

/** A provisioning verb: checks its arguments, acts, writes its log rows; throws VerbError to refuse. */
export type Handler = (ctx: Ctx, args: Record<string, unknown>) => Promise<Outcome>;

// ---------------------------------------------------------------- input

/** An `invalid_input` refusal at the JSON pointer `path`. */
export function bad(path: string, message: string, hint?: string): VerbError {
  return new VerbError('invalid_input', message, { path, ...(hint !== undefined ? { hint } : {}) });
}

/** Refuse (`invalid_input`) an argument not in `allowed`; consent settings get their own hint. */
export function onlyKeys(args: Record<string, unknown>, allowed: readonly string[]): void {
  for (const k of Object.keys(args))
    if (!allowed.includes(k))
      throw bad(
        `/${k}`,
        `Unknown argument "${k}".`,
        k === 'settings' || k.endsWith('_channel') || k === 'caps'
          ? "A platform never changes a tenant's consent settings: its owner does, as a signed-in person."
          : `Accepted: ${allowed.join(', ')}.`,
      );
}

/** A printable identifier: 1–200 characters, no control characters. */
export function text(args: Record<string, unknown>, key: string, required: true): string;
export function text(args: Record<string, unknown>, key: string, required: false): string | undefined;
export function text(args: Record<string, unknown>, key: string, required: boolean): string | undefined {
  const v = args[key];
  if (v === undefined && !required) return undefined;
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (typeof v !== 'string' || v.trim() === '' || v.length > 200 || /[\u0000-\u001f\u007f]/.test(v))
    throw bad(`/${key}`, `${key} must be a string of 1 to 200 printable characters.`);
  return v.trim();
}

/** The `tier` argument, one of TIERS (`invalid_input` otherwise). */
export function tierOf(args: Record<string, unknown>, required: boolean): Tier | undefined {
  const v = args.tier;
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || !(TIERS as readonly string[]).includes(v))
    throw bad('/tier', `tier must be one of ${TIERS.join(', ')}.`);
  return v as Tier;
}

/** An IANA time zone name Intl knows (e.g. Europe/Paris); `UTC` by default. */
export function timeZoneOf(args: Record<string, unknown>): string | undefined {
  const v = args.time_zone;
  if (v === undefined) return undefined;
  if (typeof v === 'string' && v.length <= 64) {
    try {
      return new Intl.DateTimeFormat('en', { timeZone: v }).resolvedOptions().timeZone;
    } catch {
      /* refused below */
    }
  }
  throw bad(
    '/time_zone',
    'time_zone must be an IANA time zone name.',
    'e.g. "Europe/Paris", "America/New_York", "UTC".',
  );
}

/** A positive safe integer argument (`invalid_input` otherwise), or undefined when absent. */
export function positiveInt(args: Record<string, unknown>, key: string): number | undefined {
  const v = args[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1)
    throw bad(`/${key}`, `${key} must be a positive integer.`);
  return v;
}

// ---------------------------------------------------------------- tenants

/** The tenant of an external id (only platform-managed tenants have one). */
export const PLATFORM_TENANT_SQL = 'SELECT * FROM tenants WHERE external_id = ?';

/** A tenant as provisioning shows it. */
export function view(t: Tenant): PlatformTenantView {
  return {
    company_id: t.company_id,
    external_id: t.external_id ?? '',
    name: t.name,
    tier: t.tier,
    time_zone: t.time_zone,
    status: t.status,
    created_at: t.created_at,
  };
}

/** The platform-managed tenant of an external id, or VerbError not_found. */
export async function tenantOf(q: Queryable, ctx: Ctx, externalId: string): Promise<Tenant> {
  ctx.external_id = externalId;
  const row = await q.get<Record<string, unknown>>(PLATFORM_TENANT_SQL, [externalId]);
  if (row === undefined)
    throw new VerbError('not_found', `No tenant with external id "${externalId}".`, {
      hint: 'Create it with platform.tenants.create, or list yours with platform.tenants.list.',
    });
  const t = tenantOfRow(row);
  ctx.company_id = t.company_id;
  return t;
}

/** A row of the tenant's own chain recording a platform action (same transaction as the change). */
export async function tenantRow(
  tx: StoreTx,
  ctx: Ctx,
  companyId: number,
  action: string,
  request_data: Record<string, unknown>,
  entity?: { type: string; id: string },
): Promise<void> {
  const row = await appendAudit(
    tx,
    auditEntry(
      {
        company_id: companyId,
        now: ctx.now,
        action,
        category: 'platform',
        status: 'completed',
        agent_type: `platform:${ctx.platform.key_id}`,
      },
      {
        request_data,
        entity_type: entity?.type ?? 'tenant',
        entity_id: entity?.id ?? String(companyId),
      },
    ),
  );
  ctx.rows.push(row);
}

/** The platform log row of a completed call (same transaction as the change). */
export async function log(
  tx: StoreTx,
  ctx: Ctx,
  action: string,
  request: Record<string, unknown>,
  result: Record<string, unknown>,
): Promise<void> {
  await appendPlatformLog(tx, ctx.rt.store.engine, {
    key_id: ctx.platform.key_id,
    action,
    status: 'completed',
    company_id: ctx.company_id ?? null,
    external_id: ctx.external_id ?? null,
    request_data: request,
    result_data: result,
    now: ctx.now,
  });
}

/** Refuse a change to a deleted tenant (its external id is released, so this is rare). */
export function assertNotDeleted(t: Tenant): void {
  if (t.status === 'deleted')
    throw new VerbError('tenant_suspended', `Tenant ${t.company_id} was deleted.`, {
      hint: 'A deleted tenant cannot be changed; create a new one.',
    });
}
