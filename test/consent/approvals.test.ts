/**
 * Out-of-band approval (issue 3 §4, spec/consent.md §approvals): list, approve with the typed
 * phrase, reject; the agent's re-call with the nonce alone; approved_by / approved_at on the audit
 * row; role floors of approvers; expiry; races between a rejection and the execution.
 */
import { test, type TestContext } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, expectDenied, pendingOf, type ConsentHarness } from './support.ts';
import { createTestRuntime } from '../support/runtime.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { dispatchAs } from '../support/keyed.ts';

const ARGS = { invoice_id: 4242, amount_cents: 5000, card_token: 'tok_secret' };
const PHRASE = 'CHARGE $50.00 to invoice #4242';

async function pendingCharge(h: ConsentHarness, role = 'admin', args: Record<string, unknown> = ARGS) {
  return pendingOf(await h.call(role, 'charge_invoice', args));
}

test('approve end to end: a human types the phrase, the agent re-calls with confirm + nonce (no phrase), the action runs once with approved_by/approved_at', async (t) => {
  const h = await consentHarness(t);
  const c = await pendingCharge(h);
  const list = await h.call('owner', 'approvals.list', {});
  assert.equal(list.ok, true, JSON.stringify(list));
  const items = list.result!.approvals as Array<Record<string, unknown>>;
  assert.equal(items.length, 1);
  assert.deepEqual(
    { ...items[0], created_at: undefined },
    {
      approval_id: c.approval_id,
      verb: 'charge_invoice',
      consent_class: 'WRITE_FINANCIAL',
      summary: 'Charge $50.00 to invoice #4242.',
      typed_phrase: PHRASE,
      args: { invoice_id: 4242, amount_cents: 5000, card_token: '[REDACTED]' },
      requested_by: 2,
      requested_role: 'admin',
      agent_type: 'test',
      status: 'pending',
      role_floor: 'admin',
      can_decide: true,
      created_at: undefined,
      expires_at: '2026-03-10T12:05:00.000Z',
      decided_by: null,
      decided_at: null,
      decided_channel: null,
      decision_note: null,
    },
  );
  assert.deepEqual(list.result!.data, { pending: 1, expired: 0, approved_unused: 0 });

  h.clock.ms += 60_000;
  const approved = await h.callAsHuman('owner', 'approvals.approve', {
    approval_id: c.approval_id,
    typed_phrase: PHRASE,
  });
  assert.equal(approved.ok, true, JSON.stringify(approved));
  assert.equal(approved.result!.status, 'approved');
  assert.equal(approved.result!.approved_by, 1);
  assert.equal(approved.result!.self_approved, false);
  assert.equal(await h.effects(), 0, 'approving does not execute the action');
  const approveRow = await h.lastAudit({ action_type: 'approvals.approve' });
  assert.equal(approveRow.status, 'completed');
  assert.equal(approveRow.role, 'owner');
  assert.equal(approveRow.entity_type, 'approval');
  assert.equal(approveRow.entity_id, c.approval_id);

  h.clock.ms += 30_000;
  const done = await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce });
  assert.equal(done.ok, true, JSON.stringify(done));
  assert.equal(await h.effects('charge_invoice'), 1);
  const row = await h.lastAudit({ action_type: 'charge_invoice', status: 'completed' });
  assert.equal(row.approved_by, 1);
  assert.equal(row.approved_at, '2026-03-10T12:01:00.000Z');
  assert.equal(row.requires_approval, 1);
  assert.equal(row.user_id, 2, 'the action is still the requester’s');

  // the approval is used up: listing shows it consumed, the nonce cannot run again
  const after = await h.call('owner', 'approvals.list', { status: 'all' });
  assert.equal((after.result!.approvals as Array<{ status: string }>)[0]!.status, 'consumed');
  const again = await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce });
  await expectDenied(h, again, 'nonce_replayed', { role: 'admin' });
  assert.equal(await h.effects(), 1);
});

test('before a decision, the agent re-calling with the nonce alone is told to wait (pending again), nothing runs; every re-call is audited and observed', async (t) => {
  const h = await consentHarness(t);
  const seen: Array<[string | null, number | null]> = [];
  h.rt.onDispatch((o) => seen.push([o.reason, o.audit_id]));
  const c = await pendingCharge(h);
  const ids = new Set<number>();
  for (let i = 0; i < 3; i++) {
    const env = await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce });
    assert.equal(pendingOf(env).approval_id, c.approval_id);
    assert.equal(pendingOf(env).nonce, c.nonce, 'the same nonce');
    assert.equal(typeof env.audit_id, 'number');
    ids.add(env.audit_id!);
  }
  assert.equal(ids.size, 3, 'one row per re-call');
  const rows = await h.audit({ action_type: 'charge_invoice', status: 'pending' });
  assert.equal(rows.length, 4, 'the first pending answer and the three re-calls');
  for (const r of rows) {
    assert.equal(r.reason, 'dispatch_pending');
    assert.equal(Number(r.requires_approval), 1);
  }
  assert.deepEqual(
    seen
      .filter(([reason]) => reason === 'dispatch_pending')
      .map(([, id]) => id)
      .slice(1),
    [...ids],
  );
  assert.equal(await h.effects(), 0);
});

test('reject: the agent re-call answers approval_rejected, audited; the direct phrase path is refused too (deny wins)', async (t) => {
  const h = await consentHarness(t);
  const c = await pendingCharge(h);
  const rejected = await h.rt.dispatch({ surface: 'cli', principal: h.human('owner') }, 'approvals.reject', {
    approval_id: c.approval_id,
    note: 'wrong customer',
  });
  assert.equal(rejected.ok, true, JSON.stringify(rejected));
  assert.equal(rejected.result!.status, 'rejected');
  assert.equal(rejected.result!.note, 'wrong customer');
  const rejectRow = await h.lastAudit({ action_type: 'approvals.reject' });
  assert.equal(rejectRow.status, 'completed');
  assert.equal(rejectRow.entity_id, c.approval_id);

  const recall = await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce });
  await expectDenied(h, recall, 'approval_rejected', {
    role: 'admin',
    args: { ...ARGS, card_token: '[REDACTED]' },
  });
  const direct = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  await expectDenied(h, direct, 'approval_rejected', { role: 'admin' });
  assert.equal(await h.effects(), 0);
  const listed = await h.call('owner', 'approvals.list', { status: 'rejected' });
  const item = (listed.result!.approvals as Array<Record<string, unknown>>)[0]!;
  assert.equal(item.decision_note, 'wrong customer');
  assert.equal(item.decided_by, 1);
});

test('an approval can be withdrawn (rejected) after approve and before the agent uses it', async (t) => {
  const h = await consentHarness(t);
  const c = await pendingCharge(h);
  assert.equal(
    (await h.callAsHuman('owner', 'approvals.approve', { approval_id: c.approval_id, typed_phrase: PHRASE }))
      .ok,
    true,
  );
  assert.equal(
    (
      await h.rt.dispatch({ surface: 'cli', principal: h.human('admin') }, 'approvals.reject', {
        approval_id: c.approval_id,
      })
    ).ok,
    true,
  );
  await expectDenied(
    h,
    await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce }),
    'approval_rejected',
  );
  assert.equal(await h.effects(), 0);
});

test('a rejection that lands after the consent step read the approval still wins: the effect rolls back', async (t) => {
  const h = await consentHarness(t);
  const c = await pendingCharge(h);
  assert.equal(
    (await h.callAsHuman('owner', 'approvals.approve', { approval_id: c.approval_id, typed_phrase: PHRASE }))
      .ok,
    true,
  );
  // reject inside the gap between the consent step (a read) and the write transaction
  const origWrite = h.rt.store.write.bind(h.rt.store);
  let injected = false;
  (h.rt.store as { write: typeof origWrite }).write = async (fn, opts) => {
    if (!injected && opts === undefined) {
      injected = true;
      await origWrite((tx) =>
        tx.run(
          `UPDATE approvals SET status = 'rejected', decided_by = 1, decided_at = ? WHERE approval_id = ?`,
          ['2026-03-10T12:00:00.000Z', c.approval_id],
        ),
      );
    }
    return origWrite(fn, opts);
  };
  t.after(() => {
    (h.rt.store as { write: typeof origWrite }).write = origWrite;
  });
  const env = await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce });
  assert.equal(injected, true);
  await expectDenied(h, env, 'approval_rejected', { role: 'admin' });
  assert.equal(await h.effects(), 0);
});

test('the approver must meet the target verb floor: admin cannot approve an IRREVERSIBLE action, employee nothing', async (t) => {
  const h = await consentHarness(t);
  const del = pendingOf(await h.call('owner', 'gdpr_delete_contact', { contact_id: 4242 }));
  const byAdmin = await h.callAsHuman('admin', 'approvals.approve', {
    approval_id: del.approval_id,
    typed_phrase: 'DELETE CONTACT 4242 PERMANENTLY',
  });
  await expectDenied(h, byAdmin, 'role_denied', {
    role: 'admin',
    args: { approval_id: del.approval_id, typed_phrase: 'DELETE CONTACT 4242 PERMANENTLY' },
  });
  assert.match(byAdmin.error!.message, /needs the owner role/);
  await expectDenied(
    h,
    await h.rt.dispatch({ surface: 'cli', principal: h.human('admin') }, 'approvals.reject', {
      approval_id: del.approval_id,
    }),
    'role_denied',
    { role: 'admin' },
  );
  const charge = await pendingCharge(h);
  await expectDenied(
    h,
    await h.callAsHuman('employee', 'approvals.approve', {
      approval_id: charge.approval_id,
      typed_phrase: PHRASE,
    }),
    'role_denied',
    { role: 'employee' },
  );
  await expectDenied(
    h,
    await h.rt.dispatch({ surface: 'cli', principal: h.human('employee') }, 'approvals.reject', {
      approval_id: charge.approval_id,
    }),
    'role_denied',
    { role: 'employee' },
  );
  // employees cannot list the queue; admins see IRREVERSIBLE ones as not decidable
  await expectDenied(h, await h.call('employee', 'approvals.list', {}), 'role_denied', { role: 'employee' });
  const seen = (await h.call('admin', 'approvals.list', {})).result!.approvals as Array<{
    verb: string;
    can_decide: boolean;
    role_floor: string;
  }>;
  assert.deepEqual(seen.map((a) => [a.verb, a.role_floor, a.can_decide]).sort(), [
    ['charge_invoice', 'admin', true],
    ['gdpr_delete_contact', 'owner', false],
  ]);
  // an employee id probe does not reveal whether the id exists
  await expectDenied(
    h,
    await h.callAsHuman('employee', 'approvals.approve', {
      approval_id: 'apv_doesnotexist',
      typed_phrase: 'x',
    }),
    'role_denied',
  );
  // the owner can
  assert.equal(
    (
      await h.callAsHuman('owner', 'approvals.approve', {
        approval_id: del.approval_id,
        typed_phrase: 'DELETE CONTACT 4242 PERMANENTLY',
      })
    ).ok,
    true,
  );
  assert.equal(
    (await h.call('owner', 'gdpr_delete_contact', { contact_id: 4242 }, { confirm: true, nonce: del.nonce }))
      .ok,
    true,
  );
  assert.equal(await h.effects('gdpr_delete_contact'), 1);
});

test('approve with a wrong phrase → phrase_mismatch, audited; the approval stays pending', async (t) => {
  const h = await consentHarness(t);
  const c = await pendingCharge(h);
  for (const typed of [
    'charge $50.00 to invoice #4242',
    'CH\u0410RGE $50.00 to invoice #4242',
    `${PHRASE} `,
    '',
  ]) {
    const env = await h.callAsHuman('owner', 'approvals.approve', {
      approval_id: c.approval_id,
      typed_phrase: typed,
    });
    await expectDenied(h, env, 'phrase_mismatch', {
      role: 'owner',
      args: { approval_id: c.approval_id, typed_phrase: typed },
    });
  }
  const item = (
    (await h.call('owner', 'approvals.list', {})).result!.approvals as Array<{ status: string }>
  )[0]!;
  assert.equal(item.status, 'pending');
  const recall = await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce });
  pendingOf(recall);
  assert.equal(await h.effects(), 0);
});

test('unknown, foreign-tenant and already-decided approvals: approval_not_found / approval_not_pending', async (t) => {
  const h = await consentHarness(t);
  const foreign = pendingOf(await h.call('other_owner', 'charge_invoice', ARGS));
  const notFound = await h.callAsHuman('owner', 'approvals.approve', {
    approval_id: foreign.approval_id,
    typed_phrase: PHRASE,
  });
  assert.equal(notFound.error?.reason, 'approval_not_found');
  assert.equal(
    (
      await h.rt.dispatch({ surface: 'cli', principal: h.human('owner') }, 'approvals.reject', {
        approval_id: 'apv_nope',
      })
    ).error?.reason,
    'approval_not_found',
  );
  const row = await h.lastAudit({ action_type: 'approvals.approve' });
  assert.equal(row.reason, 'approval_not_found');
  assert.equal(row.status, 'failed');
  // the other tenant's approval is untouched
  const theirs = (await dispatchAs(h.rt, { surface: 'cli', apiKey: h.otherOwnerKey }, 'approvals.list', {}))
    .result!.approvals as Array<{ status: string }>;
  assert.equal(theirs[0]!.status, 'pending');

  const c = await pendingCharge(h);
  assert.equal(
    (await h.callAsHuman('owner', 'approvals.approve', { approval_id: c.approval_id, typed_phrase: PHRASE }))
      .ok,
    true,
  );
  const twice = await h.callAsHuman('owner', 'approvals.approve', {
    approval_id: c.approval_id,
    typed_phrase: PHRASE,
  });
  assert.equal(twice.error?.reason, 'approval_not_pending');
  assert.match(twice.error!.message, /already approved by user 1/);
  assert.equal((await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce })).ok, true);
  const afterUse = await h.rt.dispatch({ surface: 'cli', principal: h.human('owner') }, 'approvals.reject', {
    approval_id: c.approval_id,
  });
  assert.equal(afterUse.error?.reason, 'approval_not_pending');
  assert.match(afterUse.error!.message, /already used/);
});

test('expired approvals are listed as expired and cannot be approved; the nonce is expired too', async (t) => {
  const h = await consentHarness(t);
  const c = await pendingCharge(h);
  h.clock.ms += 300_000;
  const list = await h.call('owner', 'approvals.list', {});
  const item = (list.result!.approvals as Array<{ status: string; can_decide: boolean }>)[0]!;
  assert.equal(item.status, 'expired');
  assert.equal(item.can_decide, false);
  assert.deepEqual(list.result!.data, { pending: 0, expired: 1, approved_unused: 0 });
  const env = await h.callAsHuman('owner', 'approvals.approve', {
    approval_id: c.approval_id,
    typed_phrase: PHRASE,
  });
  assert.equal(env.error?.reason, 'approval_not_pending');
  assert.match(env.error!.message, /expired at 2026-03-10T12:05:00\.000Z/);
  await expectDenied(
    h,
    await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce }),
    'nonce_expired',
  );
  // after the maintenance sweep it is still listed as expired
  await h.rt.maintenance();
  const swept = await h.call('owner', 'approvals.list', { status: 'expired' });
  assert.equal((swept.result!.approvals as Array<{ status: string }>)[0]!.status, 'expired');
  assert.equal(await h.effects(), 0);
});

test('self-approval: the requesting user may approve by typing the phrase (same as the direct path); the receipt says so', async (t) => {
  const h = await consentHarness(t);
  const c = await pendingCharge(h, 'admin');
  const self = await h.callAsHuman('admin', 'approvals.approve', {
    approval_id: c.approval_id,
    typed_phrase: PHRASE,
  });
  assert.equal(self.ok, true, JSON.stringify(self));
  assert.equal(self.result!.self_approved, true);
  assert.equal((await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce })).ok, true);
  const row = await h.lastAudit({ action_type: 'charge_invoice', status: 'completed' });
  assert.equal(row.approved_by, row.user_id);
});

test('approve and reject are not in agents’ tool lists (mcp_stdio, webmcp, ucp); list is', async (t) => {
  const h = await consentHarness(t);
  for (const name of ['approvals.approve', 'approvals.reject']) {
    assert.deepEqual(h.rt.registry.get(name)!.surfaces, ['http', 'cli']);
    const env = await dispatchAs(h.rt, { surface: 'mcp_stdio', apiKey: h.keys.owner }, name, {
      approval_id: 'apv_x',
      typed_phrase: 'x',
    });
    assert.equal(env.error?.reason, 'surface_denied');
  }
  assert.equal(h.rt.registry.get('approvals.list')!.surfaces.length, 5);
});

test('approve is one call (no nonce round trip of its own) and does not count against any daily cap', async (t) => {
  const h = await consentHarness(t);
  await h.setSettings({ caps: { WRITE_FINANCIAL: 1, WRITE_REVERSIBLE: 0 } });
  const c = await pendingCharge(h);
  const approved = await h.callAsHuman('owner', 'approvals.approve', {
    approval_id: c.approval_id,
    typed_phrase: PHRASE,
  });
  assert.equal(approved.ok, true, JSON.stringify(approved));
  assert.equal(approved.consent, undefined);
  assert.equal((await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce })).ok, true);
  const counts = await h.rt.store.read((q) =>
    q.all<{ consent_class: string; count: number }>(
      'SELECT consent_class, count FROM daily_counts WHERE company_id = ?',
      [h.companyId],
    ),
  );
  assert.deepEqual(
    counts.map((r) => [r.consent_class, Number(r.count)]),
    [['WRITE_FINANCIAL', 1]],
  );
});

const ownerOnlyCharge = defineVerb<{ n: number }>({
  name: 'floor_test.owner_charge',
  description: 'A revertible WRITE_FINANCIAL action only an owner may take (like subscription_upgrade_tier).',
  shape: 'receipt',
  category: 'floor_test',
  consent: 'WRITE_FINANCIAL',
  role_floor: 'owner',
  input: {
    type: 'object',
    properties: { n: { type: 'integer' } },
    required: ['n'],
    additionalProperties: false,
  },
  phrase: (a) => `CHARGE ${a.n}`,
  async handler(ctx, a) {
    ctx.setRollback(`floor_test:${a.n}`, { n: a.n });
    return { status: 'charged' };
  },
  revert: {
    phrase: (o) => `UNDO CHARGE ${String(o.rollback.n)}`,
    async handler() {
      return { revert_action: 'undone' };
    },
  },
});

/**
 * The owner runs an owner-only charge, then the owner's agent (MCP: it cannot send a typed phrase)
 * asks to revert it, which opens an approval.
 */
async function ownerRevertAsked(t: TestContext, n: number) {
  const h = await createTestRuntime(t, { engine: 'sqlite' });
  h.rt.register(ownerOnlyCharge);
  const owner = { surface: 'cli' as const, apiKey: h.keys.owner };
  const ownersAgent = { surface: 'mcp_stdio' as const, apiKey: h.keys.owner };
  const admin = { surface: 'http' as const, apiKey: h.keys.admin };
  const pre = await dispatchAs(h.rt, owner, 'floor_test.owner_charge', { n });
  const done = await dispatchAs(
    h.rt,
    owner,
    'floor_test.owner_charge',
    { n },
    { confirm: true, nonce: pre.consent!.nonce, typed_phrase: `CHARGE ${n}` },
  );
  assert.equal(done.ok, true, JSON.stringify(done));
  const asked = pendingOf(await dispatchAs(h.rt, ownersAgent, 'audit.revert', { audit_id: done.audit_id }));
  return { h, owner, ownersAgent, admin, done, asked };
}

test('the approver of a revert must meet the floor of the action reverted (owner), not the revert verb’s own; the floor is recorded on the approval', async (t) => {
  const { h, ownersAgent, admin, done, asked } = await ownerRevertAsked(t, 7);
  assert.equal(asked.gate, 'typed_phrase');
  const listed = (await dispatchAs(h.rt, admin, 'approvals.list', {})).result!.approvals as Array<{
    approval_id: string;
    verb: string;
    role_floor: string;
    can_decide: boolean;
  }>;
  assert.deepEqual(
    listed
      .filter((a) => a.approval_id === asked.approval_id)
      .map((a) => [a.verb, a.role_floor, a.can_decide]),
    [['audit.revert', 'owner', false]],
  );

  const byAdmin = await h.rt.dispatch({ surface: 'http', principal: h.human('admin') }, 'approvals.approve', {
    approval_id: asked.approval_id,
    typed_phrase: asked.typed_phrase,
  });
  assert.equal(byAdmin.error?.reason, 'role_denied', JSON.stringify(byAdmin));
  assert.match(byAdmin.error!.message, /owner/);
  assert.equal(
    (await dispatchAs(h.rt, admin, 'approvals.reject', { approval_id: asked.approval_id })).error?.reason,
    'role_denied',
  );
  // Still undecided: the agent is told to wait and nothing is reverted.
  const waiting = await dispatchAs(
    h.rt,
    ownersAgent,
    'audit.revert',
    { audit_id: done.audit_id },
    { confirm: true, nonce: asked.nonce },
  );
  assert.equal(waiting.error?.reason, 'dispatch_pending');

  // The owner approves; the agent's re-call runs the revert with approved_by = the owner.
  const byOwner = await h.rt.dispatch({ surface: 'http', principal: h.human('owner') }, 'approvals.approve', {
    approval_id: asked.approval_id,
    typed_phrase: asked.typed_phrase,
  });
  assert.equal(byOwner.ok, true, JSON.stringify(byOwner));
  const run = await dispatchAs(
    h.rt,
    ownersAgent,
    'audit.revert',
    { audit_id: done.audit_id },
    { confirm: true, nonce: asked.nonce },
  );
  assert.equal(run.ok, true, JSON.stringify(run));
  const row = await h.rt.store.read((q) =>
    q.get<{ approved_by: number; user_id: number }>(
      'SELECT approved_by, user_id FROM audit_log WHERE audit_id = ?',
      [run.audit_id],
    ),
  );
  assert.equal(Number(row!.approved_by), Number(row!.user_id), 'approved by the owner');
});

test('an approval without a recorded floor (written before migration 5) or with a value that is not a role needs the owner: the check fails closed', async (t) => {
  for (const stored of [null, 'OWNER', 'toString', '__proto__', 'constructor']) {
    const { h, admin, asked } = await ownerRevertAsked(t, 3);
    await h.rt.store.write((tx) =>
      tx.run('UPDATE approvals SET role_floor = ? WHERE approval_id = ?', [stored, asked.approval_id]),
    );
    const listed = (
      (await dispatchAs(h.rt, admin, 'approvals.list', {})).result!.approvals as Array<{
        approval_id: string;
        role_floor: string;
        can_decide: boolean;
      }>
    ).find((a) => a.approval_id === asked.approval_id)!;
    assert.deepEqual([listed.role_floor, listed.can_decide], ['owner', false], String(stored));
    const byAdmin = await h.rt.dispatch(
      { surface: 'http', principal: h.human('admin') },
      'approvals.approve',
      {
        approval_id: asked.approval_id,
        typed_phrase: asked.typed_phrase,
      },
    );
    assert.equal(byAdmin.error?.reason, 'role_denied', String(stored));
    assert.equal(
      (
        await h.rt.dispatch({ surface: 'http', principal: h.human('owner') }, 'approvals.approve', {
          approval_id: asked.approval_id,
          typed_phrase: asked.typed_phrase,
        })
      ).ok,
      true,
      String(stored),
    );
  }
});
