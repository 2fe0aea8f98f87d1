/**
 * One working call per verb of the demo pack, in an order that runs on one freshly seeded demo
 * runtime (test/support/demo.ts): later calls may use what earlier ones created (a booked visit,
 * a draft invoice). Used by the output-schema test (every verb, every shape) and kept complete
 * by it: a pack verb without a sample fails that test.
 */
import type { DemoRuntime } from '../../support/demo.ts';
import type { Envelope } from '../../../src/spec/types.ts';

export interface SampleState {
  booked?: number;
  slots?: Array<{ starts_at: string; technician_user_id: number }>;
  draftInvoice?: number;
  startedVisit?: number;
}

export type Sample = (
  d: DemoRuntime,
  s: SampleState,
) => Promise<Record<string, unknown>> | Record<string, unknown>;

const DAY = 86_400_000;
const at = (d: DemoRuntime, ms: number): string => new Date(d.rt.clock().getTime() + ms).toISOString();

/** Verbs that never run (BLOCKED), by design. */
export const NEVER_RUN = new Set(['subscription_cancel_immediate']);

/** A result of a read, or throw with the envelope (for readable failures). */
export function resultOf(env: Envelope): Record<string, unknown> {
  if (!env.ok) throw new Error(`${env.verb} failed: ${JSON.stringify(env.error)}`);
  return env.result!;
}

export const SAMPLES: Record<string, Sample> = {
  // customer
  'customer.full_context': (d) => ({ customer_id: d.fixtures.customer_id }),
  'customer.explain_balance': (d) => ({ customer_id: d.fixtures.customer_id }),
  'customer.suggest_next_service': (d) => ({ customer_id: d.fixtures.customer_id }),
  'customer.preview_quote_request': () => ({
    name: 'Rosa Delgado',
    email: 'rosa.delgado@example.com',
    service: 'Water softener install',
    description: 'Hard water spots everywhere; wants a quote this week.',
    budget_cents: 180000,
  }),
  'customer.request_quote': () => ({
    name: 'Rosa Delgado',
    email: 'rosa.delgado@example.com',
    service: 'Water softener install',
    description: 'Hard water spots everywhere; wants a quote this week.',
    budget_cents: 180000,
  }),
  // crm
  crm_contacts_search: () => ({ query: 'a', status: 'active', limit: 5 }),
  'crm.preview_contact_create': () => ({
    name: 'Dana Whitfield',
    email: 'dana.whitfield@example.com',
    phone: '+18015550142',
    city: 'Sandy',
  }),
  crm_contact_create: () => ({
    name: 'Dana Whitfield',
    email: 'dana.whitfield@example.com',
    phone: '+18015550142',
    city: 'Sandy',
  }),
  'crm.preview_contact_update': (d) => ({
    contact_id: d.fixtures.customer_id,
    phone: '+18015550199',
    tags: ['vip', 'commercial', 'maintenance-plan'],
  }),
  crm_contact_update: (d) => ({
    contact_id: d.fixtures.customer_id,
    phone: '+18015550199',
    tags: ['vip', 'commercial', 'maintenance-plan'],
  }),
  'crm.preview_add_note': (d) => ({
    contact_id: d.fixtures.customer_id,
    body: 'Asked for a second quote on the rooftop unit.',
  }),
  'crm.add_note': (d) => ({
    contact_id: d.fixtures.customer_id,
    body: 'Asked for a second quote on the rooftop unit.',
  }),
  'crm.explain_contact_state': (d) => ({ contact_id: d.fixtures.customer_id }),
  // deals
  'deals.search': () => ({ open: true, limit: 5 }),
  'deals.get': (d) => ({ deal_id: d.fixtures.proposal_deal_id }),
  'deals.preview_create': (d) => ({
    contact_id: d.fixtures.customer_id,
    title: 'Water softener install',
    amount_cents: 250000,
  }),
  deals_create: (d) => ({
    contact_id: d.fixtures.customer_id,
    title: 'Water softener install',
    amount_cents: 250000,
  }),
  'deals.preview_move_stage': (d) => ({
    deal_id: d.fixtures.open_deal_ids.find((id) => id !== d.fixtures.proposal_deal_id)!,
    to_stage: 'qualified',
  }),
  'deals.move_stage': (d) => ({
    deal_id: d.fixtures.open_deal_ids.find((id) => id !== d.fixtures.proposal_deal_id)!,
    to_stage: 'qualified',
  }),
  'deals.preview_update': (d) => ({ deal_id: d.fixtures.proposal_deal_id, amount_cents: 90000 }),
  'deals.update': (d) => ({ deal_id: d.fixtures.proposal_deal_id, amount_cents: 90000 }),
  'deals.explain_stage': (d) => ({ deal_id: d.fixtures.proposal_deal_id }),
  'deal.suggest_next_action': (d) => ({ deal_id: d.fixtures.proposal_deal_id }),
  // scheduling
  'scheduling.search_appointments': (d) => ({ contact_id: d.fixtures.customer_id, limit: 10 }),
  'scheduling.technician_availability': (d) => ({ from: at(d, DAY), to: at(d, 3 * DAY) }),
  'scheduling.suggest_slots': async (d, s) => {
    const args = { service: 'AC tune-up', contact_id: d.fixtures.customer_id, days_ahead: 5, limit: 5 };
    const r = resultOf(await d.call('read_only', 'scheduling.suggest_slots', args));
    s.slots = (r.suggestions as Array<{ args: { starts_at: string; technician_user_id: number } }>).map(
      (x) => x.args,
    );
    return args;
  },
  'scheduling.preview_booking': (d, s) => ({
    contact_id: d.fixtures.customer_id,
    service: 'AC tune-up',
    starts_at: s.slots![0]!.starts_at,
    technician_user_id: s.slots![0]!.technician_user_id,
  }),
  'scheduling.book_appointment': (d, s) => ({
    contact_id: d.fixtures.customer_id,
    service: 'AC tune-up',
    starts_at: s.slots![0]!.starts_at,
    technician_user_id: s.slots![0]!.technician_user_id,
  }),
  'scheduling.preview_reschedule': (_d, s) => ({
    appointment_id: s.booked!,
    starts_at: s.slots![1]!.starts_at,
    technician_user_id: s.slots![1]!.technician_user_id,
  }),
  'scheduling.reschedule_appointment': (_d, s) => ({
    appointment_id: s.booked!,
    starts_at: s.slots![1]!.starts_at,
    technician_user_id: s.slots![1]!.technician_user_id,
  }),
  'scheduling.preview_cancel': (d) => ({
    appointment_id: d.fixtures.upcoming_appointment_id,
    reason: 'Customer travelling',
  }),
  'scheduling.cancel_appointment': (d) => ({
    appointment_id: d.fixtures.upcoming_appointment_id,
    reason: 'Customer travelling',
  }),
  'scheduling.explain_appointment': (d) => ({ appointment_id: d.fixtures.upcoming_appointment_id }),
  // invoices
  'invoices.search': () => ({ status: 'open', limit: 5 }),
  'invoices.get': (d) => ({ invoice_id: d.fixtures.open_invoice.id }),
  'invoices.preview_create': (d) => ({
    contact_id: d.fixtures.customer_id,
    lines: [
      { description: 'Water softener (40k grain)', quantity: 1, unit_price_cents: 145000 },
      { description: 'Install labour', quantity: 3, unit_price_cents: 13500 },
    ],
  }),
  'invoices.create': (d) => ({
    contact_id: d.fixtures.customer_id,
    lines: [
      { description: 'Water softener (40k grain)', quantity: 1, unit_price_cents: 145000 },
      { description: 'Install labour', quantity: 3, unit_price_cents: 13500 },
    ],
  }),
  'invoices.preview_issue': (_d, s) => ({ invoice_id: s.draftInvoice! }),
  'invoices.issue': (_d, s) => ({ invoice_id: s.draftInvoice! }),
  'invoices.preview_void': (_d, s) => ({ invoice_id: s.draftInvoice! }),
  'invoices.void': (_d, s) => ({ invoice_id: s.draftInvoice! }),
  'invoices.preview_reminder': (d) => ({
    invoice_id: d.fixtures.open_invoice.id,
    message: 'We can also take ACH.',
  }),
  'invoices.send_reminder': (d) => ({
    invoice_id: d.fixtures.open_invoice.id,
    message: 'We can also take ACH.',
  }),
  // payments
  'payments.preview_charge': (d) => ({ invoice_number: d.fixtures.open_invoice.number, amount_cents: 5000 }),
  charge_invoice: (d) => ({ invoice_number: d.fixtures.open_invoice.number, amount_cents: 5000 }),
  'payments.preview_refund_impact': (d) => ({
    transaction_id: d.fixtures.captured_payment.id,
    refund_amount_cents: 5000,
  }),
  issue_refund: (d) => ({
    charge_ref: d.fixtures.captured_payment.charge_ref,
    amount_cents: 5000,
    reason: 'Customer goodwill',
  }),
  'payments.search': (d) => ({ contact_id: d.fixtures.customer_id }),
  'payments.get': (d) => ({ payment_id: d.fixtures.captured_payment.id }),
  'payments.explain_payment': (d) => ({ payment_id: d.fixtures.captured_payment.id }),
  // inventory
  'inventory.search_parts': () => ({ query: 'valve' }),
  'inventory.low_stock': () => ({}),
  'inventory.part_detail': (d) => ({ part_id: d.fixtures.low_stock_part_id }),
  'inventory.preview_adjust_stock': (d) => ({
    part_id: d.fixtures.low_stock_part_id,
    delta: 12,
    reason: 'supplier delivery',
  }),
  'inventory.adjust_stock': (d) => ({
    part_id: d.fixtures.low_stock_part_id,
    delta: 12,
    reason: 'supplier delivery',
  }),
  'inventory.preview_usage': (d) => ({
    appointment_id: d.fixtures.upcoming_appointment_id,
    part_id: d.fixtures.low_stock_part_id,
    quantity: 1,
  }),
  'inventory.record_usage': (d) => ({
    appointment_id: d.fixtures.upcoming_appointment_id,
    part_id: d.fixtures.low_stock_part_id,
    quantity: 1,
  }),
  'inventory.suggest_reorder': () => ({}),
  // email
  'email.preview_send': (d) => ({
    contact_id: d.fixtures.customer_id,
    subject: 'Your estimate',
    body: 'Hi, the estimate for the rooftop unit is attached.',
  }),
  email_send: (d) => ({
    contact_id: d.fixtures.customer_id,
    subject: 'Your estimate',
    body: 'Hi, the estimate for the rooftop unit is attached.',
  }),
  'email.outbox': () => ({ status: 'queued' }),
  // kb
  'kb.search': () => ({ query: 'refund' }),
  'kb.get_article': () => ({ slug: 'refund-policy' }),
  'kb.preview_publish': () => ({
    title: 'Water softener sizing',
    body: 'Grains per gallon × people × 75 gallons a day gives the daily grain load.',
    tags: ['plumbing', 'sales'],
  }),
  'kb.publish_article': () => ({
    title: 'Water softener sizing',
    body: 'Grains per gallon × people × 75 gallons a day gives the daily grain load.',
    tags: ['plumbing', 'sales'],
  }),
  // team
  'team.list_employees': () => ({ title: 'technician' }),
  'team.preview_set_role': () => ({ employee_user_id: 5, role: 'admin' }),
  'team.set_role': () => ({ employee_user_id: 5, role: 'admin' }),
  'team.preview_set_active': () => ({ employee_user_id: 8, active: false }),
  'team.set_active': () => ({ employee_user_id: 8, active: false }),
  // subscriptions
  'subscription.status': () => ({}),
  'subscription.preview_tier_change': () => ({ tier: 'enterprise' }),
  subscription_upgrade_tier: () => ({ tier: 'enterprise' }),
  // infrastructure
  infrastructure_diagnose: () => ({}),
  'infrastructure.preview_resize': () => ({ size: 'MEDIUM' }),
  infrastructure_resize: () => ({ size: 'MEDIUM' }),
  'infrastructure.preview_scale_workers': () => ({ delta: 2 }),
  infrastructure_scale_workers: () => ({ delta: 2 }),
  'infrastructure.explain_droplet_state': () => ({}),
  // gdpr
  'gdpr.export_contact_data': () => ({ contact_id: 43 }),
  'gdpr.preview_delete_contact': () => ({ contact_id: 43 }),
  gdpr_delete_contact: () => ({ contact_id: 43 }),
  // analytics
  'analytics.revenue_summary': () => ({}),
  'analytics.pipeline_report': () => ({}),
  'analytics.technician_utilization': () => ({}),
  'analytics.ar_aging': () => ({}),
  // voice
  'voice.calls': () => ({ days: 14 }),
  'voice.explain_voicemail': async (d) => ({ voicemail_id: await firstId(d, 'voicemails') }),
  'voice.preview_callback': async (d) => ({ call_id: await unreturnedCall(d), due_at: at(d, DAY) }),
  'voice.schedule_callback': async (d) => ({ call_id: await unreturnedCall(d), due_at: at(d, DAY) }),
  // social
  'social.overview': () => ({ unreplied: true }),
  'social.preview_reply': async (d) => ({ review_id: await unrepliedReview(d), body: 'Thank you!' }),
  'social.reply_to_review': async (d) => ({ review_id: await unrepliedReview(d), body: 'Thank you!' }),
  'social.preview_post': (d) => ({
    channel: 'facebook',
    body: 'Spring AC tune-ups.',
    publish_at: at(d, DAY),
  }),
  'social.schedule_post': (d) => ({
    channel: 'facebook',
    body: 'Spring AC tune-ups.',
    publish_at: at(d, DAY),
  }),
  // predict
  'predict.weekly_visits': () => ({ history_weeks: 12, weeks_ahead: 4 }),
  // scheduling outcome last: it moves the clock past a visit booked 30 minutes ahead
  'scheduling.preview_outcome': async (d, s) => {
    if (s.startedVisit === undefined) {
      const env = await d.commit('owner', 'scheduling.book_appointment', {
        contact_id: d.fixtures.customer_id,
        service: 'Leak repair',
        starts_at: at(d, 30 * 60_000),
        duration_minutes: 60,
      });
      s.startedVisit = Number(resultOf(env).appointment_id);
      d.advance(45 * 60_000);
    }
    return { appointment_id: s.startedVisit, outcome: 'completed' };
  },
  'scheduling.record_outcome': (_d, s) => ({ appointment_id: s.startedVisit!, outcome: 'completed' }),
};

/** The lowest id of a table's rows of company 2. */
async function firstId(d: DemoRuntime, table: string): Promise<number> {
  const row = await d.rt.store.read((q) =>
    q.get<{ id: unknown }>(`SELECT MIN(id) AS id FROM ${table} WHERE company_id = ?`, [d.companyId]),
  );
  return Number(row!.id);
}

/** An inbound call of company 2 that was not answered and has no call-back. */
export async function unreturnedCall(d: DemoRuntime): Promise<number> {
  const row = await d.rt.store.read((q) =>
    q.get<{ id: unknown }>(
      `SELECT MIN(id) AS id FROM calls c WHERE company_id = ? AND direction = 'inbound' AND outcome <> 'answered' AND NOT EXISTS (SELECT 1 FROM callbacks b WHERE b.company_id = c.company_id AND b.call_id = c.id)`,
      [d.companyId],
    ),
  );
  return Number(row!.id);
}

/** A review of company 2 without a reply. */
export async function unrepliedReview(d: DemoRuntime): Promise<number> {
  const row = await d.rt.store.read((q) =>
    q.get<{ id: unknown }>(
      `SELECT MIN(id) AS id FROM reviews r WHERE company_id = ? AND NOT EXISTS (SELECT 1 FROM review_replies p WHERE p.company_id = r.company_id AND p.review_id = r.id)`,
      [d.companyId],
    ),
  );
  return Number(row!.id);
}

/** After a successful write, remember what later samples need. */
export function afterSample(verb: string, result: Record<string, unknown>, s: SampleState): void {
  if (verb === 'scheduling.book_appointment') s.booked = Number(result.appointment_id);
  if (verb === 'invoices.create') s.draftInvoice = Number(result.invoice_id);
}
