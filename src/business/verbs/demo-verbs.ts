/**
 * Every verb of the demo business pack, domain by domain (docs/demo.md lists them by category).
 */
import type { VerbDefinition } from '../../runtime/verb.ts';
import { analyticsVerbs } from './analytics.ts';
import { crmVerbs } from './crm.ts';
import { customerVerbs } from './customer.ts';
import { dealVerbs } from './deals.ts';
import { emailVerbs } from './email.ts';
import { gdprVerbs } from './gdpr.ts';
import { infrastructureVerbs } from './infrastructure.ts';
import { inventoryVerbs } from './inventory.ts';
import { invoiceVerbs } from './invoices.ts';
import { kbVerbs } from './kb.ts';
import { paymentVerbs } from './payments.ts';
import { schedulingVerbs } from './scheduling.ts';
import { subscriptionVerbs } from './subscriptions.ts';
import { teamVerbs } from './team.ts';
import { predictVerbs } from './predict.ts';
import { socialVerbs } from './social.ts';
import { voiceVerbs } from './voice.ts';

export const demoVerbs: VerbDefinition[] = [
  ...customerVerbs,
  ...crmVerbs,
  ...dealVerbs,
  ...schedulingVerbs,
  ...invoiceVerbs,
  ...paymentVerbs,
  ...inventoryVerbs,
  ...emailVerbs,
  ...kbVerbs,
  ...teamVerbs,
  ...subscriptionVerbs,
  ...infrastructureVerbs,
  ...gdprVerbs,
  ...analyticsVerbs,
  ...voiceVerbs,
  ...socialVerbs,
  ...predictVerbs,
];
