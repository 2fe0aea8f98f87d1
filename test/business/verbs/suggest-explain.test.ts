/**
 * Suggest verbs are computed from the data, not canned: deal.suggest_next_action's confidences
 * and sample sizes are the company's real stage-transition counts (and move when the pipeline
 * moves), bands follow the documented thresholds and say "learning" when the sample is thin.
 * Explain verbs build their causal chain from the event log and the audit log, oldest first,
 * with actor, timestamp, action and a plain-language detail and reasoning.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  confidenceBand,
  HIGH_AT,
  LEARNING_BELOW,
  MEDIUM_AT,
} from '../../../src/business/verbs/confidence-band.ts';
import type { Queryable } from '../../../src/store/store.ts';
import { openDemoRuntime, type DemoRuntime } from '../../support/demo.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- results read loosely in assertions
type R = Record<string, any>;

async function transitionsOut(d: DemoRuntime, company: number, stage: string): Promise<Map<string, number>> {
  const rows = await d.rt.store.read((q: Queryable) =>
    q.all<{ to_stage: string; n: number }>(
      'SELECT to_stage, COUNT(*) AS n FROM deal_stage_history WHERE company_id = ? AND from_stage = ? GROUP BY to_stage',
      [company, stage],
    ),
  );
  return new Map(rows.map((r) => [r.to_stage, Number(r.n)]));
}

test('confidence bands follow the documented thresholds', () => {
  assert.equal(LEARNING_BELOW, 20);
  assert.equal(confidenceBand(0.99, LEARNING_BELOW - 1), 'learning');
  assert.equal(confidenceBand(HIGH_AT, LEARNING_BELOW), 'high');
  assert.equal(confidenceBand(HIGH_AT - 0.0001, 100), 'medium');
  assert.equal(confidenceBand(MEDIUM_AT, 100), 'medium');
  assert.equal(confidenceBand(MEDIUM_AT - 0.0001, 100), 'low');
});

test('deal.suggest_next_action ranks the next stages by the real transition counts, with the true sample size', async (t) => {
  const d = await openDemoRuntime(t);
  const dealId = d.fixtures.proposal_deal_id;
  const counts = await transitionsOut(d, d.companyId, 'proposal_sent');
  const n = [...counts.values()].reduce((s, x) => s + x, 0);
  assert.ok(n >= LEARNING_BELOW, 'the main business has a real history out of proposal_sent');
  const r = (await d.call('read_only', 'deal.suggest_next_action', { deal_id: dealId, limit: 6 }))
    .result as R;
  assert.equal(r.suggestions.length, counts.size);
  let previous = 1;
  for (const s of r.suggestions) {
    const count = counts.get(s.args.to_stage)!;
    assert.equal(s.sample_size, n);
    assert.equal(s.confidence, Math.round((count / n) * 10_000) / 10_000);
    assert.equal(s.confidence_band, confidenceBand(s.confidence, n));
    assert.ok(s.confidence <= previous, 'best first');
    previous = s.confidence;
    assert.match(s.reason, new RegExp(`Of ${n} deals that left proposal_sent in this company, ${count} `));
    assert.equal(s.model_version, 'deal-stage-transitions-v1');
  }

  // Computed, not canned: another deal leaving proposal_sent for won changes the statistics.
  const other = await d.rt.store.read((q) =>
    q.get<{ id: number }>(
      `SELECT id FROM deals WHERE company_id = ? AND stage = 'proposal_sent' AND id <> ? LIMIT 1`,
      [d.companyId, dealId],
    ),
  );
  assert.equal(
    (await d.commit('employee', 'deals.move_stage', { deal_id: other!.id, to_stage: 'won' })).ok,
    true,
  );
  const after = (await d.call('read_only', 'deal.suggest_next_action', { deal_id: dealId, limit: 6 }))
    .result as R;
  const won = after.suggestions.find((s: R) => s.args.to_stage === 'won');
  assert.equal(won.sample_size, n + 1);
  assert.equal(won.confidence, Math.round(((counts.get('won')! + 1) / (n + 1)) * 10_000) / 10_000);
});

test('a thin history is "learning": the second business has fewer than 20 transitions out of a stage', async (t) => {
  const d = await openDemoRuntime(t);
  const deal = await d.rt.store.read((q) =>
    q.get<{ id: number; stage: string }>(
      `SELECT id, stage FROM deals WHERE company_id = ? AND stage IN ('new','qualified','estimate_scheduled','proposal_sent','negotiation') ORDER BY id LIMIT 1`,
      [d.secondCompanyId],
    ),
  );
  const counts = await transitionsOut(d, d.secondCompanyId, deal!.stage);
  const n = [...counts.values()].reduce((s, x) => s + x, 0);
  assert.ok(n < LEARNING_BELOW, `only ${n} transitions out of ${deal!.stage}`);
  const r = (await d.call({ apiKey: d.secondOwnerKey }, 'deal.suggest_next_action', { deal_id: deal!.id }))
    .result as R;
  assert.ok(r.suggestions.length > 0);
  for (const s of r.suggestions) {
    assert.equal(s.confidence_band, 'learning');
    assert.equal(s.sample_size, n);
  }
});

test('customer.suggest_next_service counts what followed the customer’s last completed service across customers', async (t) => {
  const d = await openDemoRuntime(t);
  const rows = await d.rt.store.read((q) =>
    q.all<{ contact_id: number; service: string }>(
      `SELECT contact_id, service FROM appointments WHERE company_id = ? AND status = 'completed' ORDER BY contact_id, starts_at, id`,
      [d.companyId],
    ),
  );
  const last = rows.filter((r) => r.contact_id === d.fixtures.customer_id).at(-1)!.service;
  const follow = new Map<string, number>();
  for (let i = 0; i + 1 < rows.length; i++) {
    if (rows[i]!.contact_id === rows[i + 1]!.contact_id && rows[i]!.service === last)
      follow.set(rows[i + 1]!.service, (follow.get(rows[i + 1]!.service) ?? 0) + 1);
  }
  const n = [...follow.values()].reduce((s, x) => s + x, 0);
  const r = (
    await d.call('read_only', 'customer.suggest_next_service', {
      customer_id: d.fixtures.customer_id,
      limit: 10,
    })
  ).result as R;
  assert.equal(r.last_completed_service, last);
  for (const s of r.suggestions) {
    assert.equal(s.sample_size, n);
    assert.equal(s.confidence, Math.round((follow.get(s.service)! / n) * 10_000) / 10_000);
    assert.deepEqual(s.args, { contact_id: d.fixtures.customer_id, service: s.service });
  }
});

test('crm.explain_contact_state: a causal chain from the event log and the audit log, refused attempts included, with a plain reasoning', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  assert.equal(
    (await d.call('read_only', 'crm_contact_update', { contact_id: id, status: 'inactive' })).error?.reason,
    'role_denied',
  );
  const r = (await d.call('read_only', 'crm.explain_contact_state', { contact_id: id, limit: 500 }))
    .result as R;
  const chain = r.causal_chain as R[];
  for (const i of chain) {
    for (const k of ['timestamp', 'action', 'actor', 'detail'])
      assert.equal(typeof i[k], 'string', `${k} of ${JSON.stringify(i)}`);
    assert.match(i.timestamp, /(Z|[+-]\d{2}:\d{2})$/);
  }
  const times = chain.map((i) => i.timestamp);
  assert.deepEqual(times, [...times].sort(), 'oldest first');
  const seeded = await d.rt.store.read((q) =>
    q.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM events WHERE company_id = ? AND entity_type = 'contact' AND entity_id = ?`,
      [d.companyId, String(id)],
    ),
  );
  assert.equal(
    chain.filter((i) => i.entity_type === 'contact' && i.source === 'event').length,
    Number(seeded!.n),
    'every event of the contact is in the chain',
  );
  assert.equal(chain[0]!.action, 'contact.created');
  assert.match(chain[0]!.detail, /^created contact "/);
  const denied = chain.find((i) => i.action === 'crm_contact_update');
  assert.ok(denied, 'the refused attempt is part of the story');
  assert.equal(denied.status, 'denied');
  assert.match(denied.detail, /role_denied/);
  assert.ok(
    chain.some((i) => i.action === 'deal.created' && i.entity_type === 'deal'),
    'related deals are in the chain',
  );
  assert.match(r.reasoning, new RegExp(`contact ${id}\\) is ${r.current_state.status}`));
  assert.match(r.reasoning, /refused or failed \(verb call refused \(role_denied\)\)/);
});

test('infrastructure.explain_droplet_state tells the resize that just happened, with its actor', async (t) => {
  const d = await openDemoRuntime(t);
  assert.equal((await d.commit('admin', 'infrastructure_resize', { size: 'LARGE' })).ok, true);
  const r = (await d.call('read_only', 'infrastructure.explain_droplet_state', {})).result as R;
  const last = (r.causal_chain as R[]).at(-1)!;
  assert.equal(last.action, 'droplet.resized');
  assert.match(last.actor, new RegExp(`^user:${d.fixtures.admin_user_id}`));
  assert.match(last.detail, /from SMALL \(s-2vcpu-4gb\) to LARGE \(s-8vcpu-16gb\)/);
  assert.equal(r.current_state.size, 'LARGE');
  assert.match(r.reasoning, /is LARGE \(s-8vcpu-16gb\)/);
});
