/**
 * The built-in system verbs every runtime gets. Each module is named after its verbs:
 * `verbs-list.ts` (verbs.list), `verbs-reputation.ts`, `audit-trail.ts`, `audit-revert.ts`,
 * `audit-explain.ts`, `audit-receipt.ts` (audit.receipt, audit.verify_receipt), `audit-export.ts`,
 * `audit-money-moved.ts`, `audit-alerts.ts`, `agent-suggest-next-verb.ts`, `system-telemetry.ts`, and one module per
 * namespace for the rest: `approvals.ts`, `api-keys.ts`, `webhooks.ts`, `events.ts`,
 * `transaction.ts`, `macros.ts` (+ `macros-run.ts`, the model in `macro-chain.ts`),
 * `tenant-settings.ts` (tenant.settings, caps, blocklist, phrase channel) and
 * `consent-settings.ts` (tenant.approval_ttl_set, tenant.gate_rules, tenant.gate_rules_set).
 * `audit-retention.ts` (tenant.audit_retention_set).
 */
import type { VerbDefinition } from '../runtime/verb.ts';
import { verbsList } from './verbs-list.ts';
import { auditTrail } from './audit-trail.ts';
import { approvalVerbs } from './approvals.ts';
import { tenantSettingsVerbs } from './tenant-settings.ts';
import { consentSettingsVerbs } from './consent-settings.ts';
import { auditRetentionVerbs } from './audit-retention.ts';
import { apiKeyVerbs } from './api-keys.ts';
import { webhookVerbs } from './webhooks.ts';
import { auditRevert } from './audit-revert.ts';
import { transactionVerbs } from './transaction.ts';
import { eventVerbs } from './events.ts';
import { verbsReputation } from './verbs-reputation.ts';
import { macroVerbs } from './macros.ts';
import { systemTelemetry } from './system-telemetry.ts';
import { agentSuggestNextVerb } from './agent-suggest-next-verb.ts';
import { auditExplain } from './audit-explain.ts';
import { auditReceipt, auditVerifyReceipt } from './audit-receipt.ts';
import { auditMoneyMoved } from './audit-money-moved.ts';
import { auditExport } from './audit-export.ts';
import { auditAlerts } from './audit-alerts.ts';

/** The runtime's own verbs (audit, consent, events, system, tenants…): register them on every runtime with `rt.register(...systemVerbs)`. spec/manifest.md */
export const systemVerbs: VerbDefinition[] = [
  verbsList,
  auditTrail,
  ...approvalVerbs,
  ...tenantSettingsVerbs,
  ...consentSettingsVerbs,
  ...auditRetentionVerbs,
  ...apiKeyVerbs,
  ...webhookVerbs,
  auditRevert,
  ...transactionVerbs,
  ...eventVerbs,
  verbsReputation,
  ...macroVerbs,
  systemTelemetry,
  agentSuggestNextVerb,
  auditExplain,
  auditReceipt,
  auditVerifyReceipt,
  auditMoneyMoved,
  auditExport,
  auditAlerts,
];
