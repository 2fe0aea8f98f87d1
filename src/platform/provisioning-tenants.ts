/**
 * The tenant lifecycle verbs of provisioning (spec/platform.md §api): platform.tenants.create
 * (idempotent by external id), get, list, update, suspend, resume, export (the signed audit export,
 * at most PLATFORM_EXPORT_MAX_ROWS rows, else `result_too_large`) and delete (only a suspended
 * tenant, only after an export of its chain's current head, else `export_required`; the evidence
 * tables of KEPT_ON_DELETE stay). Each is a handler of provisioning-context.ts run by callPlatform
 * (provisioning.ts); every change writes the platform log and the tenant's chain in one transaction.
 */
import { randomBytes } from 'node:crypto';
import { StoreError, type StoreTx } from '../store/store.ts';
import { VerbError } from '../runtime/errors.ts';
import { insertTenant, tenantOfRow } from '../runtime/tenants.ts';
import { buildAuditExport } from '../runtime/ledger/verify/export.ts';
import type { ExportFormat } from '../runtime/ledger/keys/export-manifest.ts';
import {
  PLATFORM_TENANT_SQL,
  assertNotDeleted,
  bad,
  log,
  onlyKeys,
  positiveInt,
  tenantOf,
  tenantRow,
  text,
  tierOf,
  timeZoneOf,
  view,
  type Handler,
} from './provisioning-context.ts';

/** The most audit rows one export answer carries (as audit.export). */
export const PLATFORM_EXPORT_MAX_ROWS = 20_000;

/** The verb platform.tenants.create. */
export const create: Handler = async (ctx, args) => {
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

/** The verb platform.tenants.get. */
export const get: Handler = async (ctx, args) => {
  onlyKeys(args, ['external_id']);
  const external_id = text(args, 'external_id', true);
  const t = await ctx.rt.store.read((q) => tenantOf(q, ctx, external_id));
  await ctx.rt.store.write((tx) => log(tx, ctx, 'platform.tenants.get', { external_id }, {}));
  return { data: { tenant: view(t) } };
};

/** The verb platform.tenants.list. */
export const list: Handler = async (ctx, args) => {
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

/** The verb platform.tenants.update. */
export const update: Handler = async (ctx, args) => {
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

/** The verbs platform.tenants.suspend (`suspended`) and platform.tenants.resume (`active`). */
export function setStatus(to: 'suspended' | 'active'): Handler {
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

/** The verb platform.tenants.export. */
export const exportTenant: Handler = async (ctx, args) => {
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

/** The verb platform.tenants.delete. */
export const remove: Handler = async (ctx, args) => {
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
