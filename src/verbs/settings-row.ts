/**
 * The tenant's settings row as the settings verbs read and write it (tenant.*, consent.*,
 * tenant.audit_retention_set): the JSON `settings` column of `tenants`, read inside the verb's
 * transaction and written back whole; after the commit the runtime's tenants cache is dropped so
 * the next call sees the change. Refusal: `tenant_not_found` when the row is gone.
 * Spec: spec/consent.md §conditional-gates (what the settings hold).
 */
import { parseJson, type StoreTx } from '../store/store.ts';
import { refuse } from '../runtime/refusals.ts';
import type { SystemVerbContext } from '../runtime/verb.ts';
import type { TenantSettings } from '../runtime/tenants.ts';

/** The settings of tenant `companyId` ({} when none were set). */
export async function readTenantSettings(
  q: SystemVerbContext['db'],
  companyId: number,
): Promise<TenantSettings> {
  const row = await q.get<{ settings: unknown }>('SELECT settings FROM tenants WHERE company_id = ?', [
    companyId,
  ]);
  if (row === undefined) throw refuse.tenantNotFound(companyId);
  return parseJson<TenantSettings>(row.settings) ?? {};
}

/** Write the caller's tenant's settings whole; the tenants cache is invalidated after the commit. */
export async function writeTenantSettings(ctx: SystemVerbContext, settings: TenantSettings): Promise<void> {
  await ctx.db.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
    JSON.stringify(settings),
    ctx.principal.company_id,
  ]);
  const tx = ctx.db as Partial<StoreTx>;
  if (typeof tx.afterCommit === 'function') tx.afterCommit(() => ctx.runtime.tenants.invalidate());
}
