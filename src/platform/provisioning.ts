/**
 * Provisioning for platforms (spec/platform.md): the verbs a platform's backend program calls with
 * its platform credential to create and manage the businesses (tenants) it hosts, and to provision
 * their first people (as enrolment links) and their agents' API keys.
 *
 *   platform.tenants.create  { external_id, name, tier, time_zone? }   idempotent by external_id
 *   platform.tenants.get     { external_id }
 *   platform.tenants.list    { after?, limit? }
 *   platform.tenants.update  { external_id, name?, tier?, time_zone? }
 *   platform.tenants.suspend { external_id, note? }       every credential of the tenant refused
 *   platform.tenants.resume  { external_id }
 *   platform.tenants.export  { external_id, format? }     the audit export (ledger/verify/export.ts)
 *   platform.tenants.delete  { external_id, export_id }   only suspended, after an export of its head
 *   platform.users.invite    { external_id, name, role }  an enrolment link, only during the bootstrap
 *   platform.users.link      { external_id, user_id }     a fresh link, only during the bootstrap
 *   platform.api_keys.create { external_id, role ≤ admin, name?, agent_type?, user_id?, scope? }
 *   platform.api_keys.list   { external_id }
 *   platform.api_keys.revoke { external_id, key_id }
 *
 * Every call answers an envelope `{ ok, verb, result: { data }, secret?, error? }`; every call —
 * completed, refused or failed — leaves a row in the platform log (platform-log.ts), and a change
 * that touches a tenant also leaves a row in that tenant's own chain, in the same transaction
 * (agent_type `platform:<key_id>`). Secrets (a new API key, an enrolment link) are in `secret`,
 * shown once, never logged.
 *
 * What a platform credential can never do (the rule "agents act; humans consent"): approve, type a
 * phrase, change a tenant's consent settings (no verb here takes `settings`), open a human
 * session, act inside a tenant's verbs, make an owner key, or make a link for a person once the
 * tenant's bootstrap is over (someone of the tenant holds a passkey or TOTP): `human_required`.
 * Platform verbs act only on the tenants a platform created (with an external id): the operator's
 * own tenants (`solid init`, the sandbox) are `not_found` to them.
 *
 * Reasons: auth_invalid, platform_credential_required, invalid_input (with `path`), not_found,
 * role_denied, human_required, tenant_suspended (a deleted tenant), export_required,
 * result_too_large, store_unavailable, internal_error.
 */
import { randomBytes } from 'node:crypto';
import type { Envelope, EnvelopeError, Role, Tier } from '../spec/types.ts';
import { ROLES, TIERS } from '../spec/types.ts';
import { reasonInfo } from '../spec/reasons.ts';
import { StoreError, type Queryable, type StoreTx } from '../store/store.ts';
import { VerbError } from '../runtime/errors.ts';
import { insertApiKey, insertTenant, tenantOfRow, type Tenant } from '../runtime/tenants.ts';
import { appendAudit, auditEntry, type AuditRow } from '../runtime/ledger/write/audit.ts';
import { buildAuditExport } from '../runtime/ledger/verify/export.ts';
import type { ExportFormat } from '../runtime/ledger/keys/export-manifest.ts';
import type { TransportRuntime } from '../transports/runtime-surface.ts';
import { enrolmentUrl } from '../identity/enrolment.ts';
import { inviteUser, newEnrolmentLink } from '../identity/invite.ts';
import { anyCredential, cleanUserName, getUser, hasCredential } from '../identity/users.ts';
import { appendPlatformLog } from './platform-log.ts';
import { authenticatePlatformKey, type PlatformPrincipal } from './platform-keys.ts';

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

/** The most audit rows one export answer carries (as audit.export). */
export const PLATFORM_EXPORT_MAX_ROWS = 20_000;

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

interface Outcome {
  data: Record<string, unknown>;
  secret?: Record<string, unknown>;
}

interface Ctx {
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

type Handler = (ctx: Ctx, args: Record<string, unknown>) => Promise<Outcome>;

// ---------------------------------------------------------------- input

function bad(path: string, message: string, hint?: string): VerbError {
  return new VerbError('invalid_input', message, { path, ...(hint !== undefined ? { hint } : {}) });
}

function onlyKeys(args: Record<string, unknown>, allowed: readonly string[]): void {
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
function text(args: Record<string, unknown>, key: string, required: true): string;
function text(args: Record<string, unknown>, key: string, required: false): string | undefined;
function text(args: Record<string, unknown>, key: string, required: boolean): string | undefined {
  const v = args[key];
  if (v === undefined && !required) return undefined;
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (typeof v !== 'string' || v.trim() === '' || v.length > 200 || /[\u0000-\u001f\u007f]/.test(v))
    throw bad(`/${key}`, `${key} must be a string of 1 to 200 printable characters.`);
  return v.trim();
}

function tierOf(args: Record<string, unknown>, required: boolean): Tier | undefined {
  const v = args.tier;
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || !(TIERS as readonly string[]).includes(v))
    throw bad('/tier', `tier must be one of ${TIERS.join(', ')}.`);
  return v as Tier;
}

/** An IANA time zone name Intl knows (e.g. Europe/Paris); `UTC` by default. */
function timeZoneOf(args: Record<string, unknown>): string | undefined {
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

function positiveInt(args: Record<string, unknown>, key: string): number | undefined {
  const v = args[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1)
    throw bad(`/${key}`, `${key} must be a positive integer.`);
  return v;
}

// ---------------------------------------------------------------- tenants

const PLATFORM_TENANT_SQL = 'SELECT * FROM tenants WHERE external_id = ?';

function view(t: Tenant): PlatformTenantView {
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
async function tenantOf(q: Queryable, ctx: Ctx, externalId: string): Promise<Tenant> {
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
async function tenantRow(
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

async function log(
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

const create: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'name', 'tier', 'time_zone']);
  const external_id = text(args, 'external_id', true);
  const name = text(args, 'name', true);
  const tier = tierOf(args, true)!;
  const time_zone = timeZoneOf(args) ?? 'UTC';
  ctx.external_id = external_id;
  const request = { external_id, name, tier, time_zone };
  for (let attempt = 0; ; attempt++) {
    try {
      const out = await ctx.rt.store.write(
        async (tx) => {
          const existing = await tx.get<Record<string, unknown>>(PLATFORM_TENANT_SQL, [external_id]);
          if (existing !== undefined) {
            const t = tenantOfRow(existing);
            ctx.company_id = t.company_id;
            // Idempotent by external id: the same tenant, unchanged (platform.tenants.update changes it).
            await log(tx, ctx, 'platform.tenants.create', request, {
              company_id: t.company_id,
              created: false,
            });
            return { tenant: view(t), created: false };
          }
          const next = await tx.get<{ next: number | string }>(
            'SELECT COALESCE(MAX(company_id), 0) + 1 AS next FROM tenants',
          );
          const company_id = Number(next!.next);
          ctx.company_id = company_id;
          const t = await insertTenant(tx, { company_id, name, tier }, ctx.now);
          await tx.run('UPDATE tenants SET external_id = ?, time_zone = ? WHERE company_id = ?', [
            external_id,
            time_zone,
            company_id,
          ]);
          await tx.lockTenantHead(company_id);
          await ctx.rt.keys.create(tx, company_id, 'active', ctx.now);
          await tenantRow(tx, ctx, company_id, 'platform.tenants.create', request);
          await log(tx, ctx, 'platform.tenants.create', request, { company_id, created: true });
          return { tenant: view({ ...t, external_id, time_zone }), created: true };
        },
        { label: 'platform.tenants.create' },
      );
      ctx.rt.tenants.invalidate();
      return { data: out };
    } catch (err) {
      // Two creates at once (another node, the same external id or the same next company_id):
      // the loser's transaction rolled back; the next attempt finds the winner's tenant.
      if (err instanceof StoreError && err.code === 'unique_violation' && attempt < 3) {
        ctx.rows = [];
        continue;
      }
      throw err;
    }
  }
};

const get: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id']);
  const external_id = text(args, 'external_id', true);
  const t = await ctx.rt.store.read((q) => tenantOf(q, ctx, external_id));
  await ctx.rt.store.write((tx) => log(tx, ctx, 'platform.tenants.get', { external_id }, {}));
  return { data: { tenant: view(t) } };
};

const list: Handler = async (ctx, args) => {
  onlyKeys(args, ['after', 'limit']);
  const after = positiveInt(args, 'after') ?? 0;
  const limit = positiveInt(args, 'limit') ?? 100;
  if (limit > 1000) throw bad('/limit', 'limit is at most 1000.');
  const rows = await ctx.rt.store.read((q) =>
    q.all<Record<string, unknown>>(
      'SELECT * FROM tenants WHERE external_id IS NOT NULL AND company_id > ? ORDER BY company_id LIMIT ?',
      [after, limit],
    ),
  );
  const tenants = rows.map((r) => view(tenantOfRow(r)));
  await ctx.rt.store.write((tx) =>
    log(tx, ctx, 'platform.tenants.list', { after, limit }, { count: tenants.length }),
  );
  return {
    data: { tenants, next_after: tenants.length === limit ? tenants[tenants.length - 1]!.company_id : null },
  };
};

/** Refuse a change to a deleted tenant (its external id is released, so this is rare). */
function assertNotDeleted(t: Tenant): void {
  if (t.status === 'deleted')
    throw new VerbError('tenant_suspended', `Tenant ${t.company_id} was deleted.`, {
      hint: 'A deleted tenant cannot be changed; create a new one.',
    });
}

const update: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'name', 'tier', 'time_zone']);
  const external_id = text(args, 'external_id', true);
  const name = text(args, 'name', false);
  const tier = tierOf(args, false);
  const time_zone = timeZoneOf(args);
  if (name === undefined && tier === undefined && time_zone === undefined)
    throw bad('', 'Give at least one of name, tier, time_zone.');
  const out = await ctx.rt.store.write(async (tx) => {
    const t = await tenantOf(tx, ctx, external_id);
    assertNotDeleted(t);
    const next = { name: name ?? t.name, tier: tier ?? t.tier, time_zone: time_zone ?? t.time_zone };
    const changed: Record<string, { from: string; to: string }> = {};
    for (const k of ['name', 'tier', 'time_zone'] as const)
      if (next[k] !== t[k]) changed[k] = { from: t[k], to: next[k] };
    if (Object.keys(changed).length > 0) {
      await tx.run('UPDATE tenants SET name = ?, tier = ?, time_zone = ? WHERE company_id = ?', [
        next.name,
        next.tier,
        next.time_zone,
        t.company_id,
      ]);
      await tenantRow(tx, ctx, t.company_id, 'platform.tenants.update', { changed });
    }
    await log(tx, ctx, 'platform.tenants.update', { external_id, name, tier, time_zone }, { changed });
    return { tenant: view({ ...t, ...next }), changed: Object.keys(changed) };
  });
  ctx.rt.tenants.invalidate();
  return { data: out };
};

function setStatus(to: 'suspended' | 'active'): Handler {
  const action = to === 'suspended' ? 'platform.tenants.suspend' : 'platform.tenants.resume';
  return async (ctx, args) => {
    onlyKeys(args, to === 'suspended' ? ['external_id', 'note'] : ['external_id']);
    const external_id = text(args, 'external_id', true);
    const note = to === 'suspended' ? text(args, 'note', false) : undefined;
    const out = await ctx.rt.store.write(async (tx) => {
      const t = await tenantOf(tx, ctx, external_id);
      assertNotDeleted(t);
      const changed = t.status !== to;
      if (changed) {
        await tx.run('UPDATE tenants SET status = ?, status_changed_at = ? WHERE company_id = ?', [
          to,
          ctx.now.toISOString(),
          t.company_id,
        ]);
        await tenantRow(tx, ctx, t.company_id, action, note === undefined ? {} : { note });
      }
      await log(tx, ctx, action, { external_id, ...(note !== undefined ? { note } : {}) }, { changed });
      return { tenant: view({ ...t, status: to }), changed };
    });
    // This process refuses at once; other nodes within their tenants cache (5 s).
    ctx.rt.tenants.invalidate();
    return { data: out };
  };
}

const exportTenant: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'format']);
  const external_id = text(args, 'external_id', true);
  const format = (args.format ?? 'ndjson') as ExportFormat;
  if (format !== 'ndjson' && format !== 'csv') throw bad('/format', 'format is "ndjson" or "csv".');
  const t = await ctx.rt.store.read((q) => tenantOf(q, ctx, external_id));
  assertNotDeleted(t);
  // The tenant's buffered read rows go to its chain first, so the export covers them.
  await ctx.rt.auditBuffer.flush();
  const name = `audit-${t.company_id}-${ctx.now.toISOString().slice(0, 10)}.${format}`;
  const chunks: string[] = [];
  const built = await buildAuditExport(
    (fn) => ctx.rt.store.read(fn),
    ctx.rt.keys,
    {
      companyId: t.company_id,
      from: new Date(0),
      to: new Date('9999-12-31T23:59:59.999Z'),
      format,
      now: ctx.now,
      rowsFile: name,
      maxRows: PLATFORM_EXPORT_MAX_ROWS,
    },
    (s) => chunks.push(s),
  );
  if (!built.ok && 'limit' in built)
    throw new VerbError(
      'result_too_large',
      `Tenant ${t.company_id} holds ${built.rows} audit rows; one answer carries at most ${built.limit}.`,
      { hint: 'Export on the server with `solid audit export --tenant <company_id>`.' },
    );
  if (!built.ok)
    throw new VerbError('internal_error', "The tenant's audit chain does not verify: nothing was signed.", {
      hint: 'Run `solid audit verify` on the server and report the findings to the operator.',
      details: { findings: built.findings.slice(0, 20), finding_count: built.finding_count },
    });
  const manifest = built.manifest;
  const export_id = `exp_${randomBytes(9).toString('base64url')}`;
  const lastSeq = manifest.rows.last_seq ?? 0;
  const lastHash = manifest.chain.head_hash ?? '';
  const rowsSha = manifest.digest.hex;
  await ctx.rt.store.write(async (tx) => {
    await tx.run(
      'INSERT INTO tenant_exports (export_id, company_id, created_at, head_seq, head_hash, rows_sha256, key_id) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [export_id, t.company_id, ctx.now.toISOString(), lastSeq, lastHash, rowsSha, ctx.platform.key_id],
    );
    await log(
      tx,
      ctx,
      'platform.tenants.export',
      { external_id, format },
      { export_id, head_seq: lastSeq, rows_sha256: rowsSha },
    );
  });
  return {
    data: {
      export_id,
      head_seq: lastSeq,
      rows_file: {
        name,
        media_type: format === 'ndjson' ? 'application/x-ndjson' : 'text/csv',
        content: chunks.join(''),
      },
      manifest_file: `${name}.manifest.json`,
      manifest,
    },
  };
};

/** Tables whose rows a deletion keeps: the evidence (spec/platform.md §delete). */
export const KEPT_ON_DELETE: readonly string[] = [
  'tenants',
  'tenant_heads',
  'audit_log',
  'audit_checkpoints',
  'receipts',
  'reversals',
  'tenant_keys',
  'tenant_exports',
  'platform_audit',
];

/** Every table holding a `company_id` column, the newest first (children before their parents). */
async function tenantTables(tx: StoreTx, engine: 'sqlite' | 'postgres'): Promise<string[]> {
  const rows =
    engine === 'sqlite'
      ? await tx.all<{ name: string }>(
          "SELECT m.name AS name FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table' AND p.name = 'company_id' ORDER BY m.rowid DESC",
        )
      : await tx.all<{ name: string }>(
          "SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid WHERE n.nspname = current_schema() AND c.relkind = 'r' AND a.attname = 'company_id' AND NOT a.attisdropped ORDER BY c.oid DESC",
        );
  return rows.map((r) => r.name).filter((n) => !KEPT_ON_DELETE.includes(n));
}

const remove: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'export_id']);
  const external_id = text(args, 'external_id', true);
  const export_id = text(args, 'export_id', true);
  await ctx.rt.auditBuffer.flush();
  const out = await ctx.rt.store.write(
    async (tx) => {
      const t = await tenantOf(tx, ctx, external_id);
      assertNotDeleted(t);
      const head = await tx.lockTenantHead(t.company_id);
      const exp = await tx.get<{ head_seq: number | string; head_hash: string }>(
        'SELECT head_seq, head_hash FROM tenant_exports WHERE export_id = ? AND company_id = ?',
        [export_id, t.company_id],
      );
      const covered =
        exp !== undefined && Number(exp.head_seq) === head.audit_seq && exp.head_hash === head.audit_hash;
      if (t.status !== 'suspended' || !covered)
        throw new VerbError(
          'export_required',
          t.status !== 'suspended'
            ? `Tenant ${t.company_id} is ${t.status}: suspend it, export it, then delete it.`
            : exp === undefined
              ? `No export ${export_id} of tenant ${t.company_id}.`
              : `Export ${export_id} covers the chain up to seq ${exp.head_seq}; its head is now at ${head.audit_seq}.`,
          {
            hint: 'Call platform.tenants.suspend, then platform.tenants.export (keep its two files), then delete with its export_id.',
            details: {
              status: t.status,
              head_seq: head.audit_seq,
              export_head_seq: exp === undefined ? null : Number(exp.head_seq),
            },
          },
        );
      if (ctx.rt.store.engine === 'sqlite') await tx.run('PRAGMA defer_foreign_keys = ON');
      const removed: Record<string, number> = {};
      for (const table of await tenantTables(tx, ctx.rt.store.engine)) {
        const r = await tx.run(`DELETE FROM "${table}" WHERE company_id = ?`, [t.company_id]);
        if (r.changes > 0) removed[table] = r.changes;
      }
      // The private signing keys are destroyed; the public keys stay, so the export still verifies.
      await tx.run(
        "UPDATE tenant_keys SET private_enc = '', state = 'retired', retired_at = COALESCE(retired_at, ?) WHERE company_id = ?",
        [ctx.now.toISOString(), t.company_id],
      );
      // A tombstone: the id is never reused, the external id is released for a new tenant.
      await tx.run(
        "UPDATE tenants SET status = 'deleted', status_changed_at = ?, external_id = NULL, name = ?, settings = '{}' WHERE company_id = ?",
        [ctx.now.toISOString(), `deleted tenant ${t.company_id}`, t.company_id],
      );
      const result = {
        company_id: t.company_id,
        export_id,
        head_seq: head.audit_seq,
        head_hash: head.audit_hash,
        removed,
      };
      await log(tx, ctx, 'platform.tenants.delete', { external_id, export_id }, result);
      return result;
    },
    { label: 'platform.tenants.delete', budgetMs: 0 },
  );
  ctx.rt.tenants.invalidate();
  return { data: { deleted: true, ...out } };
};

// ---------------------------------------------------------------- people and keys

/** The bootstrap: no one of the tenant holds a human credential yet (terminal-human.ts's rule). */
async function assertBootstrap(q: Queryable, t: Tenant, what: string): Promise<void> {
  if (await anyCredential(q, t.company_id))
    throw new VerbError(
      'human_required',
      `Someone of tenant ${t.company_id} has enrolled: from now on only its people invite people (${what}).`,
      {
        hint: "The tenant's owner invites from the dashboard (Settings → People) while signed in; a platform credential provisions only the first people.",
      },
    );
}

function roleOf(args: Record<string, unknown>, ceiling: readonly Role[]): Role {
  const v = args.role;
  if (typeof v !== 'string' || !(ROLES as readonly string[]).includes(v))
    throw bad('/role', `role must be one of ${ROLES.join(', ')}.`);
  if (!ceiling.includes(v as Role))
    throw new VerbError('role_denied', `A platform credential cannot provision the role ${v} here.`, {
      hint: `Allowed: ${ceiling.join(', ')}.`,
    });
  return v as Role;
}

const invite: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'name', 'role']);
  const external_id = text(args, 'external_id', true);
  const name = cleanUserName(args.name);
  if (name === undefined) throw bad('/name', 'name must be 1-100 characters with no control characters.');
  const role = roleOf(args, ROLES);
  const t = await ctx.rt.store.read(async (q) => {
    const t = await tenantOf(q, ctx, external_id);
    assertNotDeleted(t);
    await assertBootstrap(q, t, 'users.invite');
    return t;
  });
  const inviter = { user_id: 0, role: 'admin' as Role, agent_type: `platform:${ctx.platform.key_id}` };
  const { user, link } = await inviteUser(
    ctx.rt.store,
    { company_id: t.company_id, name, role },
    inviter,
    ctx.now,
  );
  await ctx.rt.store.write((tx) =>
    log(
      tx,
      ctx,
      'platform.users.invite',
      { external_id, name, role },
      { user_id: user.user_id, link_expires_at: link.expires_at },
    ),
  );
  return {
    data: { user, link_expires_at: link.expires_at },
    secret: { enrolment_url: enrolmentUrl(ctx.opts.publicUrl, link.token) },
  };
};

const link: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'user_id']);
  const external_id = text(args, 'external_id', true);
  const userId = positiveInt(args, 'user_id');
  if (userId === undefined) throw bad('/user_id', 'user_id is required.');
  const t = await ctx.rt.store.read(async (q) => {
    const t = await tenantOf(q, ctx, external_id);
    assertNotDeleted(t);
    await assertBootstrap(q, t, 'users.enrolment_link');
    if (await hasCredential(q, t.company_id, userId))
      throw new VerbError('human_required', `User ${userId} has enrolled: a link would be a way in as them.`);
    return t;
  });
  const inviter = { user_id: 0, role: 'admin' as Role, agent_type: `platform:${ctx.platform.key_id}` };
  const made = await newEnrolmentLink(ctx.rt.store, t.company_id, userId, inviter, ctx.now);
  if (made === undefined)
    throw new VerbError('not_found', `No enabled user ${userId} in tenant ${t.company_id}.`, {
      hint: 'Invite one with platform.users.invite.',
    });
  await ctx.rt.store.write((tx) =>
    log(
      tx,
      ctx,
      'platform.users.link',
      { external_id, user_id: userId },
      { link_expires_at: made.link.expires_at },
    ),
  );
  return {
    data: { user: made.user, link_expires_at: made.link.expires_at },
    secret: { enrolment_url: enrolmentUrl(ctx.opts.publicUrl, made.link.token) },
  };
};

/** The roles a platform may give an agent key: never owner (an owner's powers are a person's). */
export const PLATFORM_KEY_ROLES: readonly Role[] = ['read_only', 'employee', 'admin'];

const keyCreate: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'role', 'name', 'agent_type', 'user_id', 'expires_at', 'read_only']);
  const external_id = text(args, 'external_id', true);
  const role = roleOf(args, PLATFORM_KEY_ROLES);
  const name = text(args, 'name', false) ?? '';
  const agent_type = text(args, 'agent_type', false) ?? 'api';
  if (agent_type.startsWith('human'))
    throw bad('/agent_type', 'An API key is an agent credential: its agent_type cannot start with "human".');
  const userId = positiveInt(args, 'user_id');
  let expires_at: string | undefined;
  if (args.expires_at !== undefined) {
    const ms = typeof args.expires_at === 'string' ? Date.parse(args.expires_at) : NaN;
    if (Number.isNaN(ms) || ms <= ctx.now.getTime())
      throw bad('/expires_at', 'expires_at must be a future ISO 8601 date-time.');
    expires_at = new Date(ms).toISOString();
  }
  if (args.read_only !== undefined && typeof args.read_only !== 'boolean')
    throw bad('/read_only', 'read_only is a boolean.');
  const read_only = args.read_only === true;
  const out = await ctx.rt.store.write(async (tx) => {
    const t = await tenantOf(tx, ctx, external_id);
    assertNotDeleted(t);
    let user_id = userId;
    if (user_id !== undefined) {
      const u = await getUser(tx, t.company_id, user_id);
      if (u === undefined || u.status === 'disabled')
        throw new VerbError('not_found', `No enabled user ${user_id} in tenant ${t.company_id}.`);
      if (ROLES.indexOf(u.role) < ROLES.indexOf(role))
        throw new VerbError(
          'role_denied',
          `User ${user_id} is ${u.role}: a key for them is at most that role.`,
        );
    } else {
      // An agent of no person: the next id above every user and key of the tenant (users.ts's rule).
      await tx.lockTenantHead(t.company_id);
      const row = await tx.get<{ m: number | string | null }>(
        `SELECT MAX(m) AS m FROM (SELECT MAX(user_id) AS m FROM users WHERE company_id = ?
                                  UNION ALL SELECT MAX(user_id) AS m FROM api_keys WHERE company_id = ?) AS x`,
        [t.company_id, t.company_id],
      );
      user_id = row?.m === null || row?.m === undefined ? 1 : Number(row.m) + 1;
    }
    const scope = {
      ...(read_only ? { read_only: true } : {}),
      ...(expires_at !== undefined ? { expires_at } : {}),
    };
    const { apiKey, info } = await insertApiKey(
      tx,
      {
        company_id: t.company_id,
        user_id,
        role,
        agent_type,
        name,
        ...(Object.keys(scope).length > 0 ? { scope } : {}),
      },
      ctx.now,
    );
    const facts = {
      key_id: info.key_id,
      user_id,
      role,
      agent_type,
      name,
      read_only,
      expires_at: info.expires_at,
    };
    await tenantRow(tx, ctx, t.company_id, 'api_keys.create', facts, { type: 'api_key', id: info.key_id });
    await log(
      tx,
      ctx,
      'platform.api_keys.create',
      { external_id, role, name, agent_type, user_id, read_only, expires_at },
      { key_id: info.key_id },
    );
    return { apiKey, info };
  });
  return { data: { key: out.info }, secret: { api_key: out.apiKey } };
};

const keyList: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id']);
  const external_id = text(args, 'external_id', true);
  const keys = await ctx.rt.store.read(async (q) => {
    const t = await tenantOf(q, ctx, external_id);
    return ctx.rt.tenants.listKeys(q, t.company_id);
  });
  await ctx.rt.store.write((tx) =>
    log(tx, ctx, 'platform.api_keys.list', { external_id }, { count: keys.length }),
  );
  return { data: { keys } };
};

const keyRevoke: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id', 'key_id']);
  const external_id = text(args, 'external_id', true);
  const key_id = text(args, 'key_id', true);
  const revoked = await ctx.rt.store.write(async (tx) => {
    const t = await tenantOf(tx, ctx, external_id);
    const done = await ctx.rt.tenants.revokeKey(tx, t.company_id, key_id, ctx.now);
    if (!done)
      throw new VerbError('not_found', `No live API key ${key_id} in tenant ${t.company_id}.`, {
        hint: 'List them with platform.api_keys.list.',
      });
    await tenantRow(tx, ctx, t.company_id, 'api_keys.revoke', { key_id }, { type: 'api_key', id: key_id });
    await log(tx, ctx, 'platform.api_keys.revoke', { external_id, key_id }, { revoked: true });
    return true;
  });
  ctx.rt.tenants.invalidate();
  return { data: { revoked } };
};

/** The provisioning verbs by name (spec/platform.md §api). */
export const PLATFORM_VERBS: Readonly<Record<string, Handler>> = {
  'platform.tenants.create': create,
  'platform.tenants.get': get,
  'platform.tenants.list': list,
  'platform.tenants.update': update,
  'platform.tenants.suspend': setStatus('suspended'),
  'platform.tenants.resume': setStatus('active'),
  'platform.tenants.export': exportTenant,
  'platform.tenants.delete': remove,
  'platform.users.invite': invite,
  'platform.users.link': link,
  'platform.api_keys.create': keyCreate,
  'platform.api_keys.list': keyList,
  'platform.api_keys.revoke': keyRevoke,
};

/** Is `name` a provisioning verb? */
export function isPlatformVerb(name: string): boolean {
  return Object.hasOwn(PLATFORM_VERBS, name);
}

function errorOf(err: unknown): EnvelopeError {
  if (err instanceof VerbError) return err.toEnvelopeError();
  if (err instanceof StoreError)
    return {
      reason: 'store_unavailable',
      message: 'The database is unavailable; nothing was written.',
      hint: 'Retry shortly.',
    };
  return {
    reason: 'internal_error',
    message: 'An unexpected error; it was logged.',
    hint: 'Retry; if it persists, tell the operator.',
  };
}

/**
 * Run one provisioning verb for the holder of `credential` (a platform key, `pk_solid_…`).
 * Never throws: every outcome is an envelope, and every outcome is in the platform log (a refusal
 * in its own transaction; a bad credential with the key id when that id exists).
 */
export async function callPlatform(
  rt: PlatformRuntime,
  credential: unknown,
  verb: string,
  args: unknown,
  opts: PlatformCallOptions,
): Promise<Envelope> {
  const now = rt.clock();
  let platform: PlatformPrincipal | undefined;
  const ctx: Ctx = { rt, platform: { key_id: '', name: '' }, now, opts, rows: [] };
  try {
    platform = await authenticatePlatformKey(rt.store, credential);
    ctx.platform = platform;
    const handler = Object.hasOwn(PLATFORM_VERBS, verb) ? PLATFORM_VERBS[verb] : undefined;
    if (handler === undefined)
      throw new VerbError('unknown_verb', `No provisioning verb "${verb.slice(0, 100)}".`, {
        details: { verbs: Object.keys(PLATFORM_VERBS) },
      });
    if (typeof args !== 'object' || args === null || Array.isArray(args))
      throw new VerbError('invalid_input', 'The arguments must be a JSON object.', { path: '' });
    const out = await handler(ctx, args as Record<string, unknown>);
    for (const row of ctx.rows) rt.afterWrite(row);
    const env: Envelope = { ok: true, verb, result: { data: out.data } };
    if (out.secret !== undefined) env.secret = out.secret;
    return env;
  } catch (err) {
    const error = errorOf(err);
    if (error.reason === 'internal_error') rt.logger.error({ err, verb }, 'provisioning failed');
    const info = reasonInfo(error.reason);
    const keyId = platform?.key_id ?? (error.details?.key_id as string | undefined) ?? null;
    try {
      await rt.store.write((tx) =>
        appendPlatformLog(tx, rt.store.engine, {
          key_id: keyId,
          action: verb.slice(0, 200),
          status: info.denial || info.kind === 'auth' ? 'denied' : 'failed',
          reason: error.reason,
          company_id: ctx.company_id ?? null,
          external_id: ctx.external_id ?? null,
          request_data: {},
          now,
        }),
      );
    } catch (logErr) {
      rt.logger.error({ err: logErr, verb }, 'could not write the platform log row of a refusal');
    }
    if (error.reason === 'auth_invalid' && error.details !== undefined) delete error.details;
    return { ok: false, verb, error };
  }
}
