/**
 * The built-in system verbs every runtime gets.
 */
import type { VerbDefinition } from '../runtime/verb.ts';
import { verbsList } from './discovery.ts';
import { auditTrail } from './trail.ts';
import { approvalVerbs } from './approvals.ts';
import { tenantSettingsVerbs } from './tenant-settings.ts';
import { consentSettingsVerbs } from './consent-settings.ts';
import { apiKeyVerbs } from './api-keys.ts';
import { webhookVerbs } from './webhooks.ts';
import { auditRevert } from './revert.ts';
import { transactionVerbs } from './transaction.ts';
import { eventVerbs } from './events.ts';
import { verbsReputation } from './reputation.ts';
import { macroVerbs } from './macros.ts';
import { systemTelemetry } from './telemetry.ts';
import { agentSuggestNextVerb } from './suggest.ts';
import { auditExplain } from './explain.ts';
import { auditReceipt, auditVerifyReceipt } from './receipt.ts';
import { auditMoneyMoved } from './money.ts';

export const systemVerbs: VerbDefinition[] = [
  verbsList,
  auditTrail,
  ...approvalVerbs,
  ...tenantSettingsVerbs,
  ...consentSettingsVerbs,
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
];
