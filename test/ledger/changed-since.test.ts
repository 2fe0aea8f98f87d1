/**
 * audit.revert refuses with changed_since when a later write changed the same entity, unless
 * forced; one check for every revert handler (spec/receipts.md §revert rule 7). Runs on the
 * seeded demo business (also on PostgreSQL with SOLID_TEST_ENGINE=postgres).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Envelope } from '../../src/spec/types.ts';
import { appendAudit, auditEntry } from '../../src/runtime/ledger/write/audit.ts';
import { openDemoRuntime, type DemoRuntime } from '../support/demo.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- results read loosely in assertions
type R = Record<string, any>;

function ok(env: Envelope): R {
  assert.equal(env.ok, true, `${env.verb}: ${JSON.stringify(env.error)}`);
  return env.result as R;
}

async function phone(d: DemoRuntime, id: number): Promise<string> {
  const r = ok(await d.call('read_only', 'customer.full_context', { customer_id: id }));
  return String(r.data.phone);
}

async function update(d: DemoRuntime, id: number, p: string): Promise<number> {
  const env = await d.commit('employee', 'crm_contact_update', { contact_id: id, phone: p });
  ok(env);
  return Number(env.audit_id);
}

test('reverting an older update after a newer one of the same contact → changed_since naming the newer, nothing restored', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  const original = await phone(d, id);
  const first = await update(d, id, '+18015550101');
  const second = await update(d, id, '+18015550102');
  const refused = await d.commit('employee', 'audit.revert', { audit_id: first });
  assert.equal(refused.ok, false);
  assert.equal(refused.error?.reason, 'changed_since');
  assert.match(refused.error!.message, new RegExp(`#${second}\\b`));
  assert.match(refused.error!.hint ?? '', new RegExp(`\\{ "audit_id": ${first}, "force": true \\}`));
  assert.equal((refused.error?.details as R).later_audit_id, second);
  assert.equal(await phone(d, id), '+18015550102', 'the newer value stays');
  const audited = await d.rt.store.read((q) =>
    q.get<{ status: string; reason: string }>(
      `SELECT status, reason FROM audit_log WHERE action_type = 'audit.revert' AND reason = 'changed_since'`,
    ),
  );
  assert.ok(audited !== undefined, 'the refusal is audited');
  assert.notEqual(audited.status, 'completed');

  const forcedEnv = await d.commit('employee', 'audit.revert', { audit_id: first, force: true });
  const forced = ok(forcedEnv);
  assert.equal(forced.reverted, true);
  assert.equal(forced.forced, true);
  assert.equal(forced.discarded_audit_id, second, 'the answer names the discarded later change');
  assert.match(String(forced.message), new RegExp(`Forced: .*audit row ${second}\\b`));
  assert.equal(await phone(d, id), original, 'force restores the older snapshot');
  // Forcing is itself audited: the revert row records force: true and points at the original.
  const row = await d.rt.store.read((q) =>
    q.get<{ status: string; parent_id: number; request_data: unknown }>(
      'SELECT status, parent_id, request_data FROM audit_log WHERE audit_id = ?',
      [forcedEnv.audit_id],
    ),
  );
  assert.equal(row?.status, 'completed');
  assert.equal(Number(row?.parent_id), first);
  const req = typeof row?.request_data === 'string' ? JSON.parse(row.request_data) : row?.request_data;
  assert.equal((req as R).force, true);
});

test('reverting the newer update first, then the older, is allowed and restores the original', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  const original = await phone(d, id);
  const first = await update(d, id, '+18015550101');
  const second = await update(d, id, '+18015550102');
  assert.equal(ok(await d.commit('employee', 'audit.revert', { audit_id: second })).reverted, true);
  assert.equal(await phone(d, id), '+18015550101');
  assert.equal(ok(await d.commit('employee', 'audit.revert', { audit_id: first })).reverted, true);
  assert.equal(await phone(d, id), original);
});

test('a later read of the contact, a later write to another contact and another tenant’s rows do not block', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  const original = await phone(d, id);
  const first = await update(d, id, '+18015550101');
  ok(await d.call('read_only', 'customer.full_context', { customer_id: id }));
  ok(await d.call('employee', 'crm.explain_contact_state', { contact_id: id }));
  const other = await d.rt.store.read((q) =>
    q.get<{ id: number }>('SELECT id FROM contacts WHERE company_id = ? AND id <> ? ORDER BY id LIMIT 1', [
      d.companyId,
      id,
    ]),
  );
  await update(d, Number(other!.id), '+18015550177');
  // Another tenant's completed write naming the same entity (ids are per tenant in a pack's eyes).
  await d.rt.auditBuffer.flush();
  await d.rt.store.write((tx) =>
    appendAudit(
      tx,
      auditEntry(
        {
          company_id: d.secondCompanyId,
          now: new Date(),
          action: 'crm_contact_update',
          category: 'crm',
          status: 'completed',
        },
        { consent_class: 'WRITE_REVERSIBLE', entity_type: 'contact', entity_id: String(id) },
      ),
    ),
  );
  const entity = await d.rt.store.read((q) =>
    q.get<{ entity_type: string; entity_id: string }>(
      'SELECT entity_type, entity_id FROM audit_log WHERE audit_id = ?',
      [first],
    ),
  );
  assert.deepEqual({ ...entity }, { entity_type: 'contact', entity_id: String(id) });
  assert.equal(ok(await d.commit('employee', 'audit.revert', { audit_id: first })).reverted, true);
  assert.equal(await phone(d, id), original);
});

test('deny wins: a read_only key reverting a changed entity gets role_denied, not changed_since', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  const first = await update(d, id, '+18015550101');
  await update(d, id, '+18015550102');
  const denied = await d.commit('read_only', 'audit.revert', { audit_id: first });
  assert.equal(denied.error?.reason, 'role_denied');
});

test('a later revert of a different, earlier action on the entity counts as a later change', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  const first = await update(d, id, '+18015550101');
  const second = await update(d, id, '+18015550102');
  // Forcing the revert of the first writes the entity again, after the second.
  const forced = await d.commit('employee', 'audit.revert', { audit_id: first, force: true });
  ok(forced);
  const refused = await d.commit('employee', 'audit.revert', { audit_id: second });
  assert.equal(refused.error?.reason, 'changed_since');
  assert.equal((refused.error?.details as R).later_audit_id, forced.audit_id);
});

test('force does not bypass consent: a read_only key is still denied', async (t) => {
  const d = await openDemoRuntime(t);
  const id = d.fixtures.customer_id;
  const first = await update(d, id, '+18015550101');
  await update(d, id, '+18015550102');
  const denied = await d.commit('read_only', 'audit.revert', { audit_id: first, force: true });
  assert.equal(denied.error?.reason, 'role_denied');
  assert.equal(await phone(d, id), '+18015550102');
});
