/**
 * Retention by policy (spec/audit.md §retention): on the maintenance timer, every tenant whose
 * owner set `audit_retention_days` (tenant.audit_retention_set, a human's act) has its rows older
 * than that archived into `<archive dir>/tenant-<id>/` and pruned (archive.ts). Without an archive
 * directory (RuntimeOptions.auditArchiveDir, SOLID_AUDIT_ARCHIVE_DIR) nothing is pruned: a policy
 * never deletes a row that was not first written to an archive.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Store } from '../../../store/store.ts';
import { parseJson } from '../../../store/store.ts';
import type { TenantKeys } from '../keys/tenant-keys.ts';
import { archiveAuditLog } from './archive.ts';

/** Bounds of a retention policy, in days. */
export const RETENTION_MIN_DAYS = 30;
export const RETENTION_MAX_DAYS = 36_500;

/** A tenant's retention in days from its settings, or null (keep forever: the default). */
export function auditRetentionDays(settings: Record<string, unknown> | null | undefined): number | null {
  const v = settings?.audit_retention_days;
  return typeof v === 'number' && Number.isInteger(v) && v >= RETENTION_MIN_DAYS && v <= RETENTION_MAX_DAYS
    ? v
    : null;
}

/**
 * One retention pass at `now`: archive and prune, per tenant with a policy, the rows created more
 * than its days ago. Returns the rows pruned. A tenant whose range does not verify is left whole
 * and logged (error); other tenants go on.
 */
export async function runRetention(deps: {
  store: Store;
  keys: TenantKeys;
  logger: Logger;
  dir: string;
  now: Date;
}): Promise<number> {
  const tenants = await deps.store.read((q) =>
    q.all<{ company_id: number; settings: unknown }>(
      'SELECT company_id, settings FROM tenants ORDER BY company_id',
    ),
  );
  let pruned = 0;
  for (const t of tenants) {
    const days = auditRetentionDays(parseJson<Record<string, unknown>>(t.settings));
    if (days === null) continue;
    const companyId = Number(t.company_id);
    const before = new Date(deps.now.getTime() - days * 86_400_000);
    try {
      const r = await archiveAuditLog(deps.store, deps.keys, {
        companyId,
        before,
        dir: join(deps.dir, `tenant-${companyId}`),
        now: deps.now,
      });
      if (!r.ok) {
        deps.logger.error(
          { company_id: companyId, findings: r.finding_count },
          'retention: the rows to archive do not verify; nothing was pruned (run solid audit verify)',
        );
        continue;
      }
      if (r.archived > 0)
        deps.logger.info(
          { company_id: companyId, rows: r.archived, through_seq: r.record?.rows.last_seq, file: r.rowsPath },
          'retention: audit rows archived and pruned',
        );
      pruned += r.archived;
    } catch (err) {
      deps.logger.error(
        { company_id: companyId, err: (err as Error).message },
        'retention: archiving failed',
      );
    }
  }
  return pruned;
}
