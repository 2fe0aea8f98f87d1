/**
 * audit.revert: a new audited action pointing at the original, through the original verb's
 * consent gate; once only (also under concurrency); never across tenants; best effort
 * (an action without a revert handler is refused: not_revertible). Spec: spec/receipts.md §revert.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { counterRuntime, consented, counter, pendingNonce } from '../support/counter-verbs.ts';
import { validateShapeOutput } from '../../src/spec/validators.ts';
import type { Envelope } from '../../src/spec/types.ts';
import type { Queryable } from '../../src/store/store.ts';
import { getAuditRow } from '../../src/runtime/ledger/write/audit.ts';
import { assessRevert } from '../../src/runtime/ledger/transactions/revert.ts';
import { dispatchAs } from '../support/keyed.ts';

type RevertResult = {
  reverted: boolean;
  audit_id: number;
  original_action: string;
  revert_action?: string;
  revert_audit_id?: number;
  reason?: string;
  message: string;
};

describe('audit.revert', () => {
  it('reverts a write with its handler: the effect is undone, a new row points at the original, history stays', async (t) => {
    const h = await counterRuntime(t);
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'v', by: 4 });
    const before = await h.rt.store.read((q) =>
      q.get<Record<string, unknown>>('SELECT * FROM audit_log WHERE audit_id = ?', [add.audit_id]),
    );
    const rev = await consented(h, h.keys.employee, 'audit.revert', { audit_id: add.audit_id });
    assert.equal(rev.ok, true, JSON.stringify(rev.error));
    const r = rev.result as RevertResult;
    assert.equal(r.reverted, true);
    assert.equal(r.audit_id, add.audit_id);
    assert.equal(r.original_action, 'counter.add');
    assert.equal(r.revert_action, 'subtracted 4 from v');
    assert.equal(r.revert_audit_id, rev.audit_id);
    assert.deepEqual(validateShapeOutput('revert', r), { valid: true, errors: [] });
    assert.deepEqual(await counter(h, 'v'), { value: 0, changes: 2 });
    const row = await h.rt.store.read((q) =>
      q.get<Record<string, unknown>>(
        'SELECT action_type, status, parent_id, entity_type, entity_id FROM audit_log WHERE audit_id = ?',
        [rev.audit_id],
      ),
    );
    assert.deepEqual(
      { ...row },
      {
        action_type: 'audit.revert',
        status: 'completed',
        parent_id: add.audit_id,
        entity_type: 'counter',
        entity_id: 'v',
      },
    );
    const after = await h.rt.store.read((q) =>
      q.get<Record<string, unknown>>('SELECT * FROM audit_log WHERE audit_id = ?', [add.audit_id]),
    );
    assert.deepEqual(after, before, 'the original row is unchanged');
    const ev = await h.rt.store.read((q) =>
      q.get<{ type: string; audit_id: number }>(
        `SELECT type, audit_id FROM events WHERE type = 'action.reverted'`,
      ),
    );
    assert.equal(ev?.audit_id, rev.audit_id);
  });

  it('accepts the rollback_handle from the receipt instead of the audit_id', async (t) => {
    const h = await counterRuntime(t);
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'h', by: 2 });
    const rev = await consented(h, h.keys.employee, 'audit.revert', { rollback_handle: add.rollback_handle });
    assert.equal((rev.result as RevertResult).reverted, true);
    assert.equal((rev.result as RevertResult).audit_id, add.audit_id);
    assert.deepEqual(await counter(h, 'h'), { value: 0, changes: 2 });
  });

  it('refuses a forged or altered rollback_handle (rollback_handle_invalid) and runs nothing', async (t) => {
    const h = await counterRuntime(t);
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'f', by: 2 });
    const handle = add.rollback_handle!;
    const cut = handle.lastIndexOf('~');
    const forged = [
      'counter:add:f:2', // no seal
      handle.replace('counter:add:f:2', 'counter:add:f:200'), // altered body
      `${handle.slice(0, -2)}AA`, // altered tag
      handle.slice(0, cut + 1) + handle.slice(cut + 1).replace(/^\d+/, String(add.audit_id! + 1)), // other audit_id
      'tx:anything:rollback_all~1.kid.tag',
    ];
    for (const f of forged) {
      const env = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.employee }, 'audit.revert', {
        rollback_handle: f,
      });
      assert.equal(env.ok, false);
      assert.equal(env.error?.reason, 'rollback_handle_invalid', f);
    }
    // Another tenant's key with this tenant's genuine handle: invalid for that tenant.
    const foreign = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.otherOwnerKey }, 'audit.revert', {
      rollback_handle: handle,
    });
    assert.equal(foreign.error?.reason, 'rollback_handle_invalid');
    assert.deepEqual(await counter(h, 'f'), { value: 2, changes: 1 });
  });

  it('refuses a second revert (already_reverted) and leaves the effect undone once', async (t) => {
    const h = await counterRuntime(t);
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'd', by: 3 });
    const first = await consented(h, h.keys.employee, 'audit.revert', { audit_id: add.audit_id });
    assert.equal((first.result as RevertResult).reverted, true);
    const second = await consented(h, h.keys.employee, 'audit.revert', { audit_id: add.audit_id });
    assert.equal(second.ok, false);
    assert.equal(second.error?.reason, 'already_reverted');
    assert.equal((second.error?.details as { revert_audit_id: number }).revert_audit_id, first.audit_id);
    assert.deepEqual(await counter(h, 'd'), { value: 0, changes: 2 });
  });

  it('two concurrent confirmed reverts of one action: exactly one reverts, the other answers already_reverted', async (t) => {
    const h = await counterRuntime(t);
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'cc', by: 10 });
    const args = { audit_id: add.audit_id };
    const n1 = await pendingNonce(h, h.keys.employee, 'audit.revert', args);
    const n2 = await pendingNonce(h, h.keys.employee, 'audit.revert', args);
    const caller = { surface: 'cli' as const, apiKey: h.keys.employee };
    const both = await Promise.all([
      dispatchAs(h.rt, caller, 'audit.revert', args, { confirm: true, nonce: n1.nonce }),
      dispatchAs(h.rt, caller, 'audit.revert', args, { confirm: true, nonce: n2.nonce }),
    ]);
    assert.equal(both.filter((e) => e.ok && (e.result as RevertResult).reverted).length, 1);
    assert.equal(both.filter((e) => e.error?.reason === 'already_reverted').length, 1);
    assert.deepEqual(await counter(h, 'cc'), { value: 0, changes: 2 });
    const reversals = await h.rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM reversals'),
    );
    assert.equal(Number(reversals!.n), 1);
  });

  it('a concurrent revert of the same action committing mid-check is not a later change: assessRevert still lets the claim decide (already_reverted, never changed_since)', async (t) => {
    const h = await counterRuntime(t);
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'mid', by: 5 });
    const row = await h.rt.store.read((q) => getAuditRow(q, h.companyId, add.audit_id!));
    // Each statement sees what is committed when it starts (READ COMMITTED on PostgreSQL). The
    // competing revert commits right after the already_reverted lookup, before the later-write check.
    let raced = false;
    const q: Queryable = {
      get: async (sql, params) => {
        const r = await h.rt.store.read((x) => x.get(sql, params));
        if (!raced && sql.includes('FROM reversals WHERE audit_id')) {
          raced = true;
          const other = await consented(h, h.keys.employee, 'audit.revert', { audit_id: add.audit_id });
          assert.equal((other.result as RevertResult).reverted, true, JSON.stringify(other.error));
        }
        return r as never;
      },
      all: (sql, params) => h.rt.store.read((x) => x.all(sql, params)) as never,
      run: () => Promise.reject(new Error('read only')),
    };
    const a = await assessRevert(q, h.rt, row!);
    assert.equal(raced, true);
    assert.equal(a.kind, 'handler', 'the revert row of this same action is no later change');
    const again = await consented(h, h.keys.employee, 'audit.revert', { audit_id: add.audit_id });
    assert.equal(again.error?.reason, 'already_reverted');
    assert.deepEqual(await counter(h, 'mid'), { value: 0, changes: 2 });
  });

  it("another tenant's audit_id answers not_found, exactly like a missing one (nothing leaks, nothing runs)", async (t) => {
    const h = await counterRuntime(t);
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'iso', by: 1 });
    const foreign = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.otherOwnerKey }, 'audit.revert', {
      audit_id: add.audit_id,
    });
    const missing = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.otherOwnerKey }, 'audit.revert', {
      audit_id: 999_999,
    });
    assert.equal(foreign.error?.reason, 'not_found');
    assert.equal(missing.error?.reason, 'not_found');
    assert.equal(
      foreign.error?.message.replace(String(add.audit_id), 'N'),
      missing.error?.message.replace('999999', 'N'),
    );
    assert.deepEqual(await counter(h, 'iso'), { value: 1, changes: 1 });
  });

  it('goes through the consent gate of the undone verb: a WRITE_REVERSIBLE revert is pending until confirmed', async (t) => {
    const h = await counterRuntime(t);
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'g', by: 1 });
    const pending = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.employee }, 'audit.revert', {
      audit_id: add.audit_id,
    });
    assert.equal(pending.error?.reason, 'dispatch_pending');
    assert.equal(pending.consent?.class, 'WRITE_REVERSIBLE');
    assert.equal(pending.consent?.gate, 'confirmation');
    assert.deepEqual(await counter(h, 'g'), { value: 1, changes: 1 }, 'nothing ran before the confirmation');
    const confirmed = await dispatchAs(
      h.rt,
      { surface: 'cli', apiKey: h.keys.employee },
      'audit.revert',
      { audit_id: add.audit_id },
      { confirm: true, nonce: pending.consent!.nonce },
    );
    assert.equal((confirmed.result as RevertResult).reverted, true);
    // A read_only key cannot revert an employee-floor action.
    const add2 = await consented(h, h.keys.employee, 'counter.add', { name: 'g', by: 1 });
    const ro = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.read_only }, 'audit.revert', {
      audit_id: add2.audit_id,
    });
    assert.equal(ro.error?.reason, 'role_denied');
  });

  it('reverting a WRITE_FINANCIAL action needs an admin and the typed phrase "REVERT <verb> #<audit_id>"', async (t) => {
    const h = await counterRuntime(t);
    const charge = await consented(h, h.keys.admin, 'counter.charge', { name: 'pay', cents: 500 });
    assert.equal(charge.ok, true, JSON.stringify(charge.error));
    const byEmployee = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.employee }, 'audit.revert', {
      audit_id: charge.audit_id,
    });
    assert.equal(byEmployee.error?.reason, 'role_denied');
    const pending = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.admin }, 'audit.revert', {
      audit_id: charge.audit_id,
    });
    assert.equal(pending.error?.reason, 'dispatch_pending');
    assert.equal(pending.consent?.gate, 'typed_phrase');
    assert.equal(pending.consent?.class, 'WRITE_FINANCIAL');
    assert.equal(pending.consent?.typed_phrase, `REVERT counter.charge #${charge.audit_id}`);
    const wrong = await dispatchAs(
      h.rt,
      { surface: 'cli', apiKey: h.keys.admin },
      'audit.revert',
      { audit_id: charge.audit_id },
      { confirm: true, nonce: pending.consent!.nonce, typed_phrase: 'REVERT' },
    );
    assert.equal(wrong.error?.reason, 'phrase_mismatch');
    assert.deepEqual(await counter(h, 'pay'), { value: 500, changes: 1 });
    const right = await dispatchAs(
      h.rt,
      { surface: 'cli', apiKey: h.keys.admin },
      'audit.revert',
      { audit_id: charge.audit_id },
      {
        confirm: true,
        nonce: pending.consent!.nonce,
        typed_phrase: `REVERT counter.charge #${charge.audit_id}`,
      },
    );
    assert.equal((right.result as RevertResult).reverted, true, JSON.stringify(right.error));
    assert.equal((right.result as RevertResult).revert_action, 'refunded 500 cents to pay');
    assert.deepEqual(await counter(h, 'pay'), { value: 0, changes: 2 });
  });

  it('refuses an action it cannot undo (not_revertible, cause no_revert_handler) before any consent, audited, never ok', async (t) => {
    const h = await counterRuntime(t);
    const email = await consented(h, h.keys.employee, 'counter.email', { name: 'n' });
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'n2', by: 1 });
    const rev = await consented(h, h.keys.employee, 'audit.revert', { audit_id: add.audit_id });
    assert.equal((rev.result as RevertResult).reverted, true, JSON.stringify(rev.error));
    // A verb without a revert handler, and a revert row (a revert is not itself revertible).
    for (const [id, verb] of [
      [email.audit_id!, 'counter.email'],
      [rev.audit_id!, 'audit.revert'],
    ] as const) {
      for (let attempt = 0; attempt < 2; attempt++) {
        const env: Envelope = await dispatchAs(
          h.rt,
          { surface: 'cli', apiKey: h.keys.owner },
          'audit.revert',
          {
            audit_id: id,
          },
        );
        assert.equal(env.ok, false, `audit_id ${id}: ${JSON.stringify(env)}`);
        assert.equal(env.error?.reason, 'not_revertible', 'refused, not asked for consent');
        assert.equal(env.consent, undefined);
        assert.equal(env.result, undefined, 'no receipt for what was not undone');
        const details = env.error?.details as { audit_id: number; original_action: string; cause: string };
        assert.deepEqual(
          { audit_id: details.audit_id, original_action: details.original_action, cause: details.cause },
          { audit_id: id, original_action: verb, cause: 'no_revert_handler' },
        );
        assert.match(env.error!.message, /cannot be undone/);
        assert.equal(typeof env.audit_id, 'number', 'the refusal is audited');
        const row = await h.rt.store.read((q) =>
          q.get<{ status: string; reason: string }>(
            'SELECT status, reason FROM audit_log WHERE audit_id = ?',
            [env.audit_id],
          ),
        );
        assert.notEqual(row?.status, 'completed');
        assert.equal(row?.reason, 'not_revertible');
      }
    }
    const completedReverts = await h.rt.store.read((q) =>
      q.get<{ n: number }>(
        `SELECT COUNT(*) AS n FROM audit_log WHERE action_type = 'audit.revert' AND status = 'completed'`,
      ),
    );
    assert.equal(Number(completedReverts!.n), 1, 'only the real revert completed');
    assert.deepEqual(await counter(h, 'emails:n'), { value: 1, changes: 1 });
  });

  it("assessRevert (also run inside the revert's own write) throws not_revertible for an action without a handler", async (t) => {
    const h = await counterRuntime(t);
    const email = await consented(h, h.keys.employee, 'counter.email', { name: 'nc' });
    const row = await h.rt.store.read((q) => getAuditRow(q, h.companyId, email.audit_id!));
    await assert.rejects(
      h.rt.store.read((q) => assessRevert(q, h.rt, row!, false)),
      (err: { reason?: string }) => err.reason === 'not_revertible',
    );
  });

  it('refuses to revert what is not a completed write: a read, a denied attempt, a pending one (not_revertible)', async (t) => {
    const h = await counterRuntime(t);
    const denied = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.read_only }, 'counter.add', {
      name: 'z',
      by: 1,
    });
    assert.equal(denied.error?.reason, 'role_denied');
    const pending = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.employee }, 'counter.add', {
      name: 'z',
      by: 1,
    });
    assert.equal(pending.error?.reason, 'dispatch_pending');
    await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.employee }, 'counter.get', { name: 'z' });
    await h.rt.auditBuffer.flush();
    const read = await h.rt.store.read((q) =>
      q.get<{ audit_id: number }>(`SELECT audit_id FROM audit_log WHERE action_type = 'counter.get'`),
    );
    for (const id of [denied.audit_id, pending.audit_id, read!.audit_id]) {
      const env = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.owner }, 'audit.revert', {
        audit_id: id,
      });
      assert.equal(env.error?.reason, 'not_revertible', `audit_id ${id}: ${JSON.stringify(env.error)}`);
    }
  });

  it('a failing revert handler answers revert_failed, changes nothing and can be retried', async (t) => {
    const h = await counterRuntime(t);
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'stuck-1', by: 1 });
    const failed = await consented(h, h.keys.employee, 'audit.revert', { audit_id: add.audit_id });
    assert.equal(failed.error?.reason, 'revert_failed');
    assert.equal((failed.error?.details as { cause_reason: string }).cause_reason, 'counter_stuck');
    assert.deepEqual(await counter(h, 'stuck-1'), { value: 1, changes: 1 });
    const reversals = await h.rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM reversals'),
    );
    assert.equal(Number(reversals!.n), 0, 'the claim rolled back with the failed attempt');
  });

  it('needs exactly one of audit_id or rollback_handle', async (t) => {
    const h = await counterRuntime(t);
    const none = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.employee }, 'audit.revert', {});
    assert.equal(none.error?.reason, 'invalid_input');
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'b', by: 1 });
    const both = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.employee }, 'audit.revert', {
      audit_id: add.audit_id,
      rollback_handle: add.rollback_handle,
    });
    assert.equal(both.error?.reason, 'invalid_input');
  });
});

describe('audit.revert: deny wins first', () => {
  it('a key below the floor gets role_denied, never already_reverted or a revert of a revert row', async (t) => {
    const h = await counterRuntime(t);
    const charge = await consented(h, h.keys.admin, 'counter.charge', { name: 'dw', cents: 300 });
    const rev = await consented(h, h.keys.admin, 'audit.revert', { audit_id: charge.audit_id });
    assert.equal(rev.ok, true, JSON.stringify(rev.error));
    for (const key of [h.keys.read_only, h.keys.employee]) {
      for (const audit_id of [charge.audit_id!, rev.audit_id!]) {
        const env = await dispatchAs(h.rt, { surface: 'cli', apiKey: key }, 'audit.revert', { audit_id });
        assert.equal(env.error?.reason, 'role_denied', `audit_id ${audit_id}: ${JSON.stringify(env.error)}`);
        assert.equal(typeof env.audit_id, 'number', 'the denial is audited');
      }
    }
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'dw2', by: 1 });
    const ro = await dispatchAs(h.rt, { surface: 'cli', apiKey: h.keys.read_only }, 'audit.revert', {
      audit_id: add.audit_id,
    });
    assert.equal(ro.error?.reason, 'role_denied', 'a read_only key never reverts');
  });
  it('reverts from the revert data in the receipt row, and from a revert_data row of an older write', async (t) => {
    const h = await counterRuntime(t);
    const add = await consented(h, h.keys.employee, 'counter.add', { name: 'r', by: 3 });
    assert.equal(add.ok, true, JSON.stringify(add.error));
    const kept = await h.rt.store.read(async (q) => ({
      receipt: await q.get<{ revert_data: unknown }>('SELECT revert_data FROM receipts WHERE audit_id = ?', [
        add.audit_id,
      ]),
      rows: await q.get<{ n: number }>('SELECT COUNT(*) AS n FROM revert_data WHERE audit_id = ?', [
        add.audit_id,
      ]),
    }));
    assert.notEqual(kept.receipt?.revert_data ?? null, null, 'the receipt row holds the revert data');
    assert.equal(Number(kept.rows!.n), 0, 'no revert_data row of its own');
    const rev = await consented(h, h.keys.employee, 'audit.revert', { audit_id: add.audit_id });
    assert.equal((rev.result as RevertResult).reverted, true, JSON.stringify(rev.error));
    assert.deepEqual(await counter(h, 'r'), { value: 0, changes: 2 });

    // A write from before migration 10: its revert data is a revert_data row, its receipt has none.
    const old = await consented(h, h.keys.employee, 'counter.add', { name: 'r', by: 5 });
    await h.rt.store.write(async (tx) => {
      const r = await tx.get<{ revert_data: unknown }>(
        'SELECT revert_data FROM receipts WHERE audit_id = ?',
        [old.audit_id],
      );
      await tx.run('UPDATE receipts SET revert_data = NULL WHERE audit_id = ?', [old.audit_id]);
      await tx.run('INSERT INTO revert_data (audit_id, company_id, data) VALUES (?, ?, ?)', [
        old.audit_id,
        h.companyId,
        typeof r!.revert_data === 'string' ? r!.revert_data : JSON.stringify(r!.revert_data),
      ]);
    });
    const rev2 = await consented(h, h.keys.employee, 'audit.revert', { audit_id: old.audit_id });
    assert.equal((rev2.result as RevertResult).reverted, true, JSON.stringify(rev2.error));
    assert.deepEqual(await counter(h, 'r'), { value: 0, changes: 4 });
  });
});
