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
import { humanSettingVerb } from './human-setting.ts';
import {
  RETENTION_MAX_DAYS,
  RETENTION_MIN_DAYS,
  auditRetentionDays,
} from '../runtime/ledger/retention/policy.ts';

export const tenantAuditRetentionSet = humanSettingVerb<{ archive_after_days: number | null }>({
  name: 'tenant.audit_retention_set',
  title: 'Set how long audit rows stay',
  description: `Set the audit retention policy: archive_after_days ${RETENTION_MIN_DAYS}–${RETENTION_MAX_DAYS} archives the audit rows older than that many days to a verified export in the operator's archive directory and prunes them from the database behind a signed continuity record (maintenance timer); null keeps every row forever (the default). Owner only, from a human channel (human_required otherwise: pruning evidence is never an agent's act); needs a confirmation.`,
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
  what: 'the audit retention policy (pruning evidence)',
  set(_ctx, args, settings) {
    const previous = auditRetentionDays(settings);
    if (args.archive_after_days === null) delete settings.audit_retention_days;
    else settings.audit_retention_days = args.archive_after_days;
    return {
      result: { status: 'completed', archive_after_days: args.archive_after_days, previous },
      rollback: { handle: 'tenant:audit_retention', data: { previous } },
    };
  },
  restore(settings, rollback) {
    const previous = (rollback as { previous?: number | null }).previous ?? null;
    if (previous === null) delete settings.audit_retention_days;
    else settings.audit_retention_days = previous;
    return `audit retention restored to ${previous === null ? 'keep forever' : `${previous} days`}`;
  },
});

export const auditRetentionVerbs = [tenantAuditRetentionSet];
