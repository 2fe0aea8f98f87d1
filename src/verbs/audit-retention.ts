/**
 * The tenant's audit retention policy (spec/audit.md §retention):
 *
 * - tenant.audit_retention_set  WRITE_REVERSIBLE, owner, from a human channel: archive the audit
 *   rows older than N days (30…36,500) and prune them behind a signed continuity record, on the
 *   maintenance timer; or null to keep them forever (the default).
 *
 * Pruning evidence is destructive, so changing the policy — either way — is a human act like the
 * consent settings: an agent's credential is refused `human_required` (audited). The policy does
 * not change any consent gate; it only says how long rows stay in the database (the archive keeps
 * them). The archive directory is the operator's (`solid serve --audit-archive-dir`), never a path
 * the owner types into the dashboard.
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import { requireHumanToChange } from '../runtime/consent/refusals.ts';
import {
  RETENTION_MAX_DAYS,
  RETENTION_MIN_DAYS,
  auditRetentionDays,
} from '../runtime/ledger/retention/policy.ts';
import { readTenantSettings, writeTenantSettings } from './settings-row.ts';

const WHAT = 'the audit retention policy (pruning evidence)';

export const tenantAuditRetentionSet = defineSystemVerb<{ archive_after_days: number | null }>({
  name: 'tenant.audit_retention_set',
  title: 'Set how long audit rows stay',
  description: `Set the audit retention policy: archive_after_days ${RETENTION_MIN_DAYS}–${RETENTION_MAX_DAYS} archives the audit rows older than that many days to a verified export in the operator's archive directory and prunes them from the database behind a signed continuity record (maintenance timer); null keeps every row forever (the default). Owner only, from a human channel (human_required otherwise: pruning evidence is never an agent's act); needs a confirmation.`,
  shape: 'receipt',
  category: 'consent',
  consent: 'WRITE_REVERSIBLE',
  cap_exempt: true,
  role_floor: 'owner',
  surfaces: ['http', 'cli'],
  input: {
    type: 'object',
    properties: {
      archive_after_days: {
        type: ['integer', 'null'],
        minimum: RETENTION_MIN_DAYS,
        maximum: RETENTION_MAX_DAYS,
        description:
          'Days a row stays in the database before it is archived and pruned; null keeps rows forever.',
      },
    },
    required: ['archive_after_days'],
    additionalProperties: false,
  },
  summary: (a) =>
    a.archive_after_days === null
      ? 'Keep every audit row in the database forever.'
      : `Archive audit rows older than ${a.archive_after_days} days and prune them from the database.`,
  async handler(ctx, args) {
    const settings = await readTenantSettings(ctx.db, ctx.principal.company_id);
    requireHumanToChange(ctx.principal, settings, WHAT);
    const previous = auditRetentionDays(settings);
    if (args.archive_after_days === null) delete settings.audit_retention_days;
    else settings.audit_retention_days = args.archive_after_days;
    await writeTenantSettings(ctx, settings);
    ctx.setEntity('tenant', ctx.principal.company_id);
    ctx.setRollback('tenant:audit_retention', { previous });
    return { status: 'completed', archive_after_days: args.archive_after_days, previous };
  },
  revert: {
    async handler(ctx, original) {
      const settings = await readTenantSettings(ctx.db, ctx.principal.company_id);
      requireHumanToChange(ctx.principal, settings, WHAT);
      const previous = (original.rollback as { previous?: number | null }).previous ?? null;
      if (previous === null) delete settings.audit_retention_days;
      else settings.audit_retention_days = previous;
      await writeTenantSettings(ctx, settings);
      ctx.setEntity('tenant', ctx.principal.company_id);
      return {
        revert_action: `audit retention restored to ${previous === null ? 'keep forever' : `${previous} days`}`,
      };
    },
  },
});

export const auditRetentionVerbs = [tenantAuditRetentionSet];
