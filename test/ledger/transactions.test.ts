/**
 * Transactions: consent at append, all-or-nothing commit in one store transaction with a receipt
 * chain, the irreversible-step-last rule, expiry, reverse-order revert with partially_reverted,
 * outbox after commit. Spec: spec/transactions.md.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { counterAdd, counterRuntime, consented, counter, pendingNonce } from '../support/counter-verbs.ts';
import type { TestRuntime } from '../support/runtime.ts';
import { validateShapeOutput } from '../../src/spec/validators.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { dispatchAs } from '../support/keyed.ts';

type Tx = {
  transaction_id: string;
  status: string;
  steps: Array<{ verb: string; status: string; audit_id?: number }>;
  expires_at?: string;
  rollback_handle?: string;
  audit_id?: number;
};

async function start(
  h: TestRuntime,
  key = h.keys.admin,
  args: Record<string, unknown> = {},
): Promise<string> {
  const env = await consented(h, key, 'transaction.start', args);
  assert.equal(env.ok, true, JSON.stringify(env.error));
  return (env.result as Tx).transaction_id;
}

async function append(
  h: TestRuntime,
  id: string,
  verb: string,
  args: Record<string, unknown>,
  key = h.keys.admin,
): Promise<Envelope> {
  return consented(h, key, 'transaction.append', { transaction_id: id, verb, args });
}

async function auditRows(
  h: TestRuntime,
  where: string,
  params: unknown[] = [],
): Promise<Array<Record<string, unknown>>> {
  return h.rt.store.read((q) =>
    q.all<Record<string, unknown>>(
      `SELECT audit_id, action_type, status, reason, parent_id, transaction_id FROM audit_log WHERE ${where} ORDER BY audit_id`,
      params,
    ),
  );
}

describe('transactions', () => {
  it('commit runs every step in one go and answers the receipt chain: parent audit row, one child per step, tx:<id>:rollback_all', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    for (const [name, by] of [
      ['a', 1],
      ['b', 2],
    ] as const) {
      const env = await append(h, id, 'counter.add', { name, by });
      assert.equal(env.ok, true, JSON.stringify(env.error));
      assert.equal((env.result as Tx).status, 'appended');
    }
    assert.deepEqual(await counter(h, 'a'), { value: 0, changes: 0 }, 'nothing runs before commit');
    const c = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    assert.equal(c.ok, true, JSON.stringify(c.error));
    const r = c.result as Tx;
    assert.equal(r.transaction_id, id);
    assert.equal(r.status, 'committed');
    assert.equal(r.audit_id, c.audit_id);
    assert.match(c.rollback_handle!, new RegExp(`^tx:${id}:rollback_all~`));
    assert.deepEqual(validateShapeOutput('transaction', r), { valid: true, errors: [] });
    assert.deepEqual(
      r.steps.map((s) => [s.verb, s.status]),
      [
        ['counter.add', 'completed'],
        ['counter.add', 'completed'],
      ],
    );
    const children = await auditRows(h, 'parent_id = ?', [c.audit_id]);
    assert.deepEqual(
      children.map((x) => x.audit_id),
      r.steps.map((s) => s.audit_id),
    );
    for (const ch of children) {
      assert.equal(ch.transaction_id, id);
      assert.equal(ch.status, 'completed');
    }
    const parent = await auditRows(h, 'audit_id = ?', [c.audit_id]);
    assert.equal(parent[0]!.transaction_id, id);
    assert.deepEqual(await counter(h, 'a'), { value: 1, changes: 1 });
    assert.deepEqual(await counter(h, 'b'), { value: 2, changes: 1 });
    const status = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.admin }, 'transaction.status', {
      transaction_id: id,
    });
    assert.equal((status.result as Tx).status, 'committed');
  });

  it('a third step that fails rolls everything back: the first two leave no trace but audit rows', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    await append(h, id, 'counter.add', { name: 'one', by: 1, notify: true });
    await append(h, id, 'counter.add', { name: 'two', by: 2 });
    await append(h, id, 'counter.add', { name: 'three', by: 3, fail: true });
    const eventsBefore = await h.rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM events'),
    );
    const c = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    assert.equal(c.ok, false);
    assert.equal(c.error?.reason, 'transaction_step_failed');
    assert.deepEqual(c.error?.details, {
      transaction_id: id,
      index: 2,
      verb: 'counter.add',
      reason: 'counter_broken',
      message: 'Counter three refused the change.',
    });
    for (const name of ['one', 'two', 'three'])
      assert.deepEqual(await counter(h, name), { value: 0, changes: 0 }, name);
    const eventsAfter = await h.rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM events'),
    );
    assert.equal(eventsAfter!.n, eventsBefore!.n, 'no events');
    const outbox = await h.rt.store.read((q) => q.get<{ n: number }>('SELECT COUNT(*) AS n FROM outbox'));
    assert.equal(Number(outbox!.n), 0, 'no outbox effect');
    const reverts = await h.rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM revert_data'),
    );
    assert.equal(Number(reverts!.n), 0);
    // Only audit rows: the commit's failure row and one per step that ran.
    const failure = await auditRows(h, 'audit_id = ?', [c.audit_id]);
    assert.deepEqual(
      { ...failure[0] },
      {
        audit_id: c.audit_id,
        action_type: 'transaction.commit',
        status: 'failed',
        reason: 'transaction_step_failed',
        parent_id: null,
        transaction_id: id,
      },
    );
    const steps = await auditRows(h, 'parent_id = ?', [c.audit_id]);
    assert.deepEqual(
      steps.map((s) => [s.action_type, s.status, s.reason, s.transaction_id]),
      [
        ['counter.add', 'rolled_back', 'transaction_step_failed', id],
        ['counter.add', 'rolled_back', 'transaction_step_failed', id],
        ['counter.add', 'failed', 'counter_broken', id],
      ],
    );
    const status = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.admin }, 'transaction.status', {
      transaction_id: id,
    });
    assert.equal((status.result as Tx).status, 'failed');
    const again = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    assert.equal(again.error?.reason, 'transaction_not_open');
  });

  it('append runs the step verb’s consent gate: a financial step needs its typed phrase at append', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    const caller = { surface: 'cli' as const, apiKey: h.keys.admin };
    const args = { transaction_id: id, verb: 'counter.charge', args: { name: 'inv', cents: 250 } };
    const pending = await dispatchAs(h.rt, caller, 'transaction.append', args);
    assert.equal(pending.error?.reason, 'dispatch_pending');
    assert.equal(pending.consent?.class, 'WRITE_FINANCIAL');
    assert.equal(pending.consent?.typed_phrase, 'CHARGE 250 cents to inv');
    const wrong = await dispatchAs(h.rt, caller, 'transaction.append', args, {
      confirm: true,
      nonce: pending.consent!.nonce,
      typed_phrase: 'CHARGE 999 cents to inv',
    });
    assert.equal(wrong.error?.reason, 'phrase_mismatch');
    const st1 = await dispatchAs(h.rt, caller, 'transaction.status', { transaction_id: id });
    assert.equal((st1.result as Tx).steps.length, 0, 'a refused append adds nothing');
    const ok = await dispatchAs(h.rt, caller, 'transaction.append', args, {
      confirm: true,
      nonce: pending.consent!.nonce,
      typed_phrase: 'CHARGE 250 cents to inv',
    });
    assert.equal(ok.ok, true, JSON.stringify(ok.error));
    // An employee may not even ask to append a financial step.
    const empId = await start(h, h.keys.employee);
    const emp = await append(h, empId, 'counter.charge', { name: 'inv', cents: 1 }, h.keys.employee);
    assert.equal(emp.error?.reason, 'role_denied');
    const c = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    assert.equal(c.ok, true, JSON.stringify(c.error));
    assert.deepEqual(await counter(h, 'inv'), { value: 250, changes: 1 });
  });

  it('validates the step arguments at append, with the path under /args', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    const bad = await append(h, id, 'counter.add', { name: 'x', by: 'lots' });
    assert.equal(bad.error?.reason, 'invalid_input');
    assert.equal(bad.error?.path, '/args/by');
    const missing = await append(h, id, 'counter.add', { name: 'x' });
    assert.equal(missing.error?.path, '/args/by');
    const identity = await append(h, id, 'counter.add', { name: 'x', by: 1, company_id: 3 });
    assert.equal(identity.error?.reason, 'identity_override');
    const unknown = await append(h, id, 'counter.ad', { name: 'x', by: 1 });
    assert.equal(unknown.error?.reason, 'unknown_verb');
    const blocked = await append(h, id, 'customer_delete', {});
    assert.equal(blocked.error?.reason, 'blocked_verb');
  });

  it('refuses read verbs, nested transactions and revert as steps (transaction_step_refused, with a hint)', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    for (const [verb, args] of [
      ['counter.get', { name: 'x' }],
      ['transaction.start', {}],
      ['transaction.commit', { transaction_id: id }],
      ['audit.revert', { audit_id: 1 }],
    ] as const) {
      const env = await append(h, id, verb, args);
      assert.equal(env.error?.reason, 'transaction_step_refused', verb);
      assert.ok(env.error?.hint, 'a hint says what to do instead');
    }
  });

  it('on WebMCP a step must be exposed on the page surface the transaction is built from (surface_denied at append)', async (t) => {
    const h = await counterRuntime(t);
    h.rt.register({ ...counterAdd, name: 'counter.add_developer_page', webmcp_surfaces: ['developer'] });
    const page = { surface: 'webmcp' as const, webmcpSurface: 'dashboard' as const, apiKey: h.keys.admin };
    const confirmed = async (verb: string, args: Record<string, unknown>): Promise<Envelope> => {
      const first = await dispatchAs(h.rt, page, verb, args);
      if (first.ok || first.error?.reason !== 'dispatch_pending') return first;
      return dispatchAs(h.rt, page, verb, args, { confirm: true, nonce: first.consent!.nonce });
    };
    const started = await confirmed('transaction.start', {});
    assert.equal(started.ok, true, JSON.stringify(started.error));
    const id = (started.result as Tx).transaction_id;
    const refusedStep = await confirmed('transaction.append', {
      transaction_id: id,
      verb: 'counter.add_developer_page',
      args: { name: 'w', by: 1 },
    });
    assert.equal(refusedStep.error?.reason, 'surface_denied', JSON.stringify(refusedStep.error));
    assert.match(refusedStep.error!.message, /WebMCP dashboard surface/);
    const allowed = await confirmed('transaction.append', {
      transaction_id: id,
      verb: 'counter.add',
      args: { name: 'w', by: 1 },
    });
    assert.equal(allowed.ok, true, JSON.stringify(allowed.error));
  });

  it('concurrent appends to one transaction all land (none lost), each once', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    const caller = { surface: 'cli' as const, apiKey: h.keys.admin };
    const calls = [];
    for (let i = 0; i < 8; i++) {
      const args = { transaction_id: id, verb: 'counter.add', args: { name: 'race', by: i + 1 } };
      const { nonce } = await pendingNonce(h, h.keys.admin, 'transaction.append', args);
      calls.push({ args, nonce });
    }
    const all = await Promise.all(
      calls.map((c) =>
        dispatchAs(h.rt, caller, 'transaction.append', c.args, { confirm: true, nonce: c.nonce }),
      ),
    );
    for (const e of all) assert.equal(e.ok, true, JSON.stringify(e.error));
    const commit = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    assert.equal((commit.result as Tx).steps.length, 8);
    assert.deepEqual(await counter(h, 'race'), { value: 36, changes: 8 });
  });

  it('an irreversible step (no revert handler) must be the last one: anything appended after it is refused', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    assert.equal((await append(h, id, 'counter.add', { name: 'p', by: 1 })).ok, true);
    assert.equal((await append(h, id, 'counter.email', { name: 'p' })).ok, true);
    const after = await append(h, id, 'counter.add', { name: 'p', by: 1 });
    assert.equal(after.error?.reason, 'transaction_step_refused');
    assert.match(after.error!.message, /cannot be reverted, so it must be the last step/);
    assert.match(after.error!.hint!, /irreversible one last/);
    const c = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    assert.equal(c.ok, true, JSON.stringify(c.error));
    assert.equal((c.result as Tx).steps.length, 2);
  });

  it('reverting the parent reverts the children in reverse order, each as its own audited revert', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    await append(h, id, 'counter.add', { name: 'r1', by: 1 });
    await append(h, id, 'counter.add', { name: 'r2', by: 2 });
    await append(h, id, 'counter.add', { name: 'r3', by: 3 });
    const c = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    const stepIds = (c.result as Tx).steps.map((s) => s.audit_id!);
    const rev = await consented(h, h.keys.admin, 'audit.revert', { rollback_handle: c.rollback_handle });
    assert.equal(rev.ok, true, JSON.stringify(rev.error));
    const r = rev.result as {
      reverted: boolean;
      audit_id: number;
      reverted_audit_ids: number[];
      remaining_audit_ids: number[];
    };
    assert.equal(r.reverted, true);
    assert.equal(r.audit_id, c.audit_id);
    assert.deepEqual(r.reverted_audit_ids, [...stepIds].reverse());
    assert.deepEqual(r.remaining_audit_ids, []);
    for (const name of ['r1', 'r2', 'r3']) assert.equal((await counter(h, name)).value, 0);
    const childReverts = await auditRows(
      h,
      `action_type = 'audit.revert' AND status = 'completed' AND parent_id IN (${stepIds.join(',')})`,
    );
    assert.deepEqual(
      childReverts.map((x) => x.parent_id),
      [...stepIds].reverse(),
      'one revert row per step, in reverse order',
    );
    const status = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.admin }, 'transaction.status', {
      transaction_id: id,
    });
    assert.equal((status.result as Tx).status, 'reverted');
    const again = await consented(h, h.keys.admin, 'audit.revert', { audit_id: c.audit_id });
    assert.equal(again.error?.reason, 'already_reverted');
  });

  it('a later step of the same transaction on the same entity does not block the revert of the transaction (changed_since)', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    await append(h, id, 'counter.add', { name: 'same', by: 1 });
    await append(h, id, 'counter.add', { name: 'same', by: 2 });
    const c = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    const rev = await consented(h, h.keys.admin, 'audit.revert', { audit_id: c.audit_id });
    assert.equal(rev.ok, true, JSON.stringify(rev.error));
    assert.equal((rev.result as { reverted: boolean }).reverted, true);
    assert.equal((await counter(h, 'same')).value, 0);
  });

  it('a later write outside the transaction refuses its revert with changed_since, nothing undone; force reverts every step', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    await append(h, id, 'counter.add', { name: 'a', by: 1 });
    await append(h, id, 'counter.add', { name: 'b', by: 2 });
    const c = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    const later = await consented(h, h.keys.admin, 'counter.add', { name: 'a', by: 10 });
    assert.equal(later.ok, true, JSON.stringify(later.error));
    const refused = await consented(h, h.keys.admin, 'audit.revert', { audit_id: c.audit_id });
    assert.equal(refused.error?.reason, 'changed_since');
    assert.equal((refused.error?.details as { later_audit_id: number }).later_audit_id, later.audit_id);
    assert.equal((await counter(h, 'a')).value, 11);
    assert.equal((await counter(h, 'b')).value, 2, 'no step was undone');
    const forced = await consented(h, h.keys.admin, 'audit.revert', { audit_id: c.audit_id, force: true });
    assert.equal(forced.ok, true, JSON.stringify(forced.error));
    assert.equal((forced.result as { reverted: boolean }).reverted, true);
    assert.equal((await counter(h, 'a')).value, 10);
    assert.equal((await counter(h, 'b')).value, 0);
  });

  it('stops at a step that cannot be reverted and reports partially_reverted with what was reverted and what remains', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    await append(h, id, 'counter.add', { name: 'q1', by: 1 });
    await append(h, id, 'counter.add', { name: 'stuck-q2', by: 2 });
    await append(h, id, 'counter.add', { name: 'q3', by: 3 });
    const c = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    const [s1, s2, s3] = (c.result as Tx).steps.map((s) => s.audit_id!);
    const rev = await consented(h, h.keys.admin, 'audit.revert', { audit_id: c.audit_id });
    assert.equal(rev.ok, true, JSON.stringify(rev.error));
    const r = rev.result as {
      reverted: boolean;
      reason: string;
      partially_reverted: boolean;
      reverted_audit_ids: number[];
      remaining_audit_ids: number[];
      failed_step: { audit_id: number };
    };
    assert.equal(r.reverted, false);
    assert.equal(r.reason, 'partially_reverted');
    assert.equal(r.partially_reverted, true);
    assert.deepEqual(r.reverted_audit_ids, [s3]);
    assert.deepEqual(r.remaining_audit_ids, [s2, s1]);
    assert.equal(r.failed_step.audit_id, s2);
    assert.deepEqual(validateShapeOutput('revert', r), { valid: true, errors: [] });
    assert.equal((await counter(h, 'q3')).value, 0, 'the last step was reverted');
    assert.equal((await counter(h, 'stuck-q2')).value, 2, 'the failed revert changed nothing');
    assert.equal((await counter(h, 'q1')).value, 1, 'the remaining step was not touched');
    const failedRevert = await auditRows(
      h,
      `action_type = 'audit.revert' AND status = 'failed' AND parent_id = ?`,
      [s2],
    );
    assert.equal(failedRevert.length, 1, 'the failed attempt is audited');
    assert.equal(failedRevert[0]!.transaction_id, id);
    const status = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.admin }, 'transaction.status', {
      transaction_id: id,
    });
    assert.equal((status.result as Tx).status, 'partially_reverted');
    assert.deepEqual(
      (status.result as Tx).steps.map((s) => s.status),
      ['completed', 'completed', 'reverted'],
    );
    // After a manual fix, the step can be reverted on its own, then the parent finishes the job.
    const q1 = await consented(h, h.keys.admin, 'audit.revert', { audit_id: s1 });
    assert.equal(q1.ok && (q1.result as { reverted: boolean }).reverted, true);
    const retry = await consented(h, h.keys.admin, 'audit.revert', { audit_id: c.audit_id });
    const rr = retry.result as { reverted: boolean; remaining_audit_ids: number[] };
    assert.equal(rr.reverted, false);
    assert.deepEqual(rr.remaining_audit_ids, [s2], 'only the stuck step remains');
  });

  it('an open transaction expires: append and commit answer transaction_expired and nothing runs', async (t) => {
    let now = new Date('2026-05-01T09:00:00.000Z');
    const h = await counterRuntime(t, { clock: () => now });
    const id = await start(h);
    const started = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.admin }, 'transaction.status', {
      transaction_id: id,
    });
    assert.equal((started.result as Tx).expires_at, '2026-05-01T09:15:00.000Z', 'default 15 minutes');
    await append(h, id, 'counter.add', { name: 'late', by: 1 });
    now = new Date('2026-05-01T09:15:00.001Z');
    const app = await append(h, id, 'counter.add', { name: 'late', by: 1 });
    assert.equal(app.error?.reason, 'transaction_expired');
    const c = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    assert.equal(c.error?.reason, 'transaction_expired');
    assert.deepEqual(await counter(h, 'late'), { value: 0, changes: 0 });
    const status = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.admin }, 'transaction.status', {
      transaction_id: id,
    });
    assert.equal((status.result as Tx).status, 'expired');
  });

  it('abort discards the steps; a transaction belongs to the user who started it', async (t) => {
    const h = await counterRuntime(t);
    const id = await start(h);
    await append(h, id, 'counter.add', { name: 'ab', by: 1 });
    const otherUser = await consented(h, h.keys.owner, 'transaction.commit', { transaction_id: id });
    assert.equal(otherUser.error?.reason, 'transaction_not_found');
    const otherTenant = await consented(h, h.otherOwnerKey, 'transaction.status', { transaction_id: id });
    assert.equal(otherTenant.error?.reason, 'transaction_not_found');
    const a = await consented(h, h.keys.admin, 'transaction.abort', { transaction_id: id });
    assert.equal((a.result as Tx).status, 'aborted');
    const c = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    assert.equal(c.error?.reason, 'transaction_not_open');
    assert.deepEqual(await counter(h, 'ab'), { value: 0, changes: 0 });
  });

  it('counts daily caps per step at commit and re-checks role floors at commit', async (t) => {
    const h = await counterRuntime(t);
    await h.rt.store.write((tx) =>
      tx.run(`UPDATE tenants SET settings = ? WHERE company_id = ?`, [
        // The fixture's explicit phrase_channel any stays: its agent types the steps' phrases.
        JSON.stringify({ caps: { WRITE_REVERSIBLE: 3 }, phrase_channel: 'any' }),
        h.companyId,
      ]),
    );
    h.rt.tenants.invalidate();
    const id = await start(h, h.keys.employee);
    for (let i = 0; i < 4; i++)
      assert.equal((await append(h, id, 'counter.add', { name: 'cap', by: 1 }, h.keys.employee)).ok, true);
    const c = await consented(h, h.keys.employee, 'transaction.commit', { transaction_id: id });
    assert.equal(c.error?.reason, 'transaction_step_failed');
    assert.equal((c.error?.details as { reason: string; index: number }).reason, 'daily_cap_exceeded');
    assert.equal((c.error?.details as { index: number }).index, 3);
    assert.deepEqual(await counter(h, 'cap'), { value: 0, changes: 0 });
    // A financial step appended by an admin cannot be committed with a weaker key of the same user.
    const id2 = await start(h, h.keys.admin);
    assert.equal((await append(h, id2, 'counter.charge', { name: 'c', cents: 5 })).ok, true);
    const weaker = await h.rt.createApiKey({
      company_id: h.companyId,
      user_id: 2,
      role: 'employee',
      agent_type: 'test',
    });
    const c2 = await consented(h, weaker, 'transaction.commit', { transaction_id: id2 });
    assert.equal(c2.error?.reason, 'role_denied');
    assert.deepEqual(await counter(h, 'c'), { value: 0, changes: 0 });
  });

  it('outbox effects of the steps are written with the commit and delivered after it', async (t) => {
    const h = await counterRuntime(t);
    const delivered: Array<Record<string, unknown>> = [];
    h.rt.outboxHandlers.set('counter.notify', async (payload) => {
      delivered.push(payload);
    });
    const id = await start(h);
    await append(h, id, 'counter.add', { name: 'o', by: 1, notify: true });
    await append(h, id, 'counter.add', { name: 'o', by: 2, notify: true });
    const c = await consented(h, h.keys.admin, 'transaction.commit', { transaction_id: id });
    assert.equal(c.ok, true);
    const rows = await h.rt.store.read((q) =>
      q.all<{ audit_id: number }>('SELECT audit_id FROM outbox ORDER BY outbox_id'),
    );
    assert.deepEqual(
      rows.map((r) => Number(r.audit_id)),
      (c.result as Tx).steps.map((s) => s.audit_id),
    );
    // Delivered by the runtime after the commit (the commit kicks the outbox).
    for (let i = 0; i < 100 && delivered.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(delivered, [
      { name: 'o', by: 1 },
      { name: 'o', by: 2 },
    ]);
  });
});
