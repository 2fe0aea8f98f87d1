/**
 * Idempotency (Stripe + IETF draft semantics): one execution per key under concurrency, replays
 * marked and pointing at the original audit row, key reuse with other args refused (422), a
 * failed attempt executes again, keys scoped per tenant and principal, bad keys refused.
 * Spec: spec/idempotency.md.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { counterRuntime, consented, counter, lockCounter, pendingNonce } from '../support/counter-verbs.ts';
import { reasonInfo } from '../../src/spec/reasons.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { dispatchAs } from '../support/keyed.ts';

describe('idempotency', () => {
  it('50 concurrent dispatches with one key execute exactly once; the others replay it or answer idempotency_key_in_use', async (t) => {
    const h = await counterRuntime(t);
    const args = { name: 'race', by: 1 };
    const { nonce } = await pendingNonce(h, h.keys.employee, 'counter.add', args);
    const caller = { surface: 'cli' as const, apiKey: h.keys.employee };
    const all = await Promise.all(
      Array.from({ length: 50 }, () =>
        dispatchAs(h.rt, caller, 'counter.add', args, {
          confirm: true,
          nonce,
          idempotency_key: 'race-key-1',
        }),
      ),
    );
    assert.deepEqual(await counter(h, 'race'), { value: 1, changes: 1 }, 'the effect happened exactly once');
    const executed = all.filter((e) => e.ok && e.replayed !== true);
    assert.equal(executed.length, 1);
    const original = executed[0]!;
    for (const e of all) {
      if (e === original) continue;
      if (e.ok) {
        assert.equal(e.replayed, true);
        assert.equal(e.audit_id, original.audit_id);
      } else {
        assert.equal(e.error?.reason, 'idempotency_key_in_use', JSON.stringify(e.error));
        assert.equal(reasonInfo('idempotency_key_in_use').status, 409);
      }
    }
    const rows = await h.rt.store.read((q) =>
      q.get<{ n: number }>(
        `SELECT COUNT(*) AS n FROM audit_log WHERE action_type = 'counter.add' AND status = 'completed'`,
      ),
    );
    assert.equal(Number(rows!.n), 1, 'one completed audit row');
  });

  it('a replay returns the original receipt, marked replayed, with the original audit_id, and runs nothing', async (t) => {
    const h = await counterRuntime(t);
    const first = await consented(
      h,
      h.keys.employee,
      'counter.add',
      { name: 'r', by: 5 },
      { idempotency_key: 'k-replay' },
    );
    assert.equal(first.ok, true);
    assert.equal(first.replayed, undefined);
    // No consent round trip is needed to read back a stored result: nothing executes.
    const again = await dispatchAs(
      h.rt,
      { surface: 'cli', apiKey: h.keys.employee },
      'counter.add',
      { name: 'r', by: 5 },
      { idempotency_key: 'k-replay' },
    );
    assert.equal(again.ok, true);
    assert.equal(again.replayed, true);
    assert.equal((again.result as { replayed?: boolean }).replayed, true);
    assert.equal(again.audit_id, first.audit_id);
    assert.equal((again.result as { audit_id: number }).audit_id, first.audit_id);
    assert.equal(again.rollback_handle, first.rollback_handle);
    assert.deepEqual(await counter(h, 'r'), { value: 5, changes: 1 });
    await h.rt.auditBuffer.flush();
    const replayRow = await h.rt.store.read((q) =>
      q.get<{ parent_id: number }>(`SELECT parent_id FROM audit_log WHERE status = 'replayed'`),
    );
    assert.equal(replayRow?.parent_id, first.audit_id, 'the replay is audited, pointing at the original');
  });

  it('the same key with other args (or another verb) is refused with idempotency_key_reused (HTTP 422) and runs nothing', async (t) => {
    const h = await counterRuntime(t);
    await consented(h, h.keys.employee, 'counter.add', { name: 'x', by: 1 }, { idempotency_key: 'k-reuse' });
    const other = await consented(
      h,
      h.keys.employee,
      'counter.add',
      { name: 'x', by: 2 },
      { idempotency_key: 'k-reuse' },
    );
    assert.equal(other.ok, false);
    assert.equal(other.error?.reason, 'idempotency_key_reused');
    assert.equal(reasonInfo('idempotency_key_reused').status, 422);
    const otherVerb = await consented(
      h,
      h.keys.employee,
      'counter.email',
      { name: 'x' },
      { idempotency_key: 'k-reuse' },
    );
    assert.equal(otherVerb.error?.reason, 'idempotency_key_reused');
    assert.deepEqual(await counter(h, 'x'), { value: 1, changes: 1 });
    assert.deepEqual(await counter(h, 'emails:x'), { value: 0, changes: 0 });
  });

  it('after a failure the same key executes again (nothing was stored for it)', async (t) => {
    const h = await counterRuntime(t);
    await lockCounter(h, 'flaky', true);
    const failed = await consented(
      h,
      h.keys.employee,
      'counter.add',
      { name: 'flaky', by: 1 },
      { idempotency_key: 'k-retry' },
    );
    assert.equal(failed.ok, false);
    assert.equal(failed.error?.reason, 'counter_broken');
    assert.deepEqual(await counter(h, 'flaky'), { value: 0, changes: 0 }, 'the failed attempt rolled back');
    await lockCounter(h, 'flaky', false);
    const retried = await consented(
      h,
      h.keys.employee,
      'counter.add',
      { name: 'flaky', by: 1 },
      { idempotency_key: 'k-retry' },
    );
    assert.equal(retried.ok, true, JSON.stringify(retried.error));
    assert.notEqual(retried.replayed, true);
    assert.deepEqual(await counter(h, 'flaky'), { value: 1, changes: 1 });
  });

  it('keys are scoped by tenant and principal: the same key from another user or tenant is a different key', async (t) => {
    const h = await counterRuntime(t);
    const a = await consented(
      h,
      h.keys.employee,
      'counter.add',
      { name: 's', by: 1 },
      { idempotency_key: 'shared' },
    );
    const b = await consented(
      h,
      h.keys.admin,
      'counter.add',
      { name: 's', by: 1 },
      { idempotency_key: 'shared' },
    );
    const c = await consented(
      h,
      h.otherOwnerKey,
      'counter.add',
      { name: 's', by: 1 },
      { idempotency_key: 'shared' },
    );
    for (const e of [a, b, c]) assert.equal(e.ok && e.replayed !== true, true, JSON.stringify(e.error));
    assert.deepEqual(await counter(h, 's'), { value: 2, changes: 2 });
    assert.deepEqual(await counter(h, 's', h.otherCompanyId), { value: 1, changes: 1 });
  });

  it('refuses keys that are empty, longer than 255 characters or not printable ASCII, before anything runs', async (t) => {
    const h = await counterRuntime(t);
    for (const key of ['', 'x'.repeat(256), 'tab\there', 'é-accent']) {
      const env: Envelope = await dispatchAs(
        h.rt,
        { surface: 'cli', apiKey: h.keys.employee },
        'counter.add',
        { name: 'k', by: 1 },
        { idempotency_key: key },
      );
      assert.equal(env.error?.reason, 'idempotency_key_invalid', `key ${JSON.stringify(key)}`);
    }
    const ok = await consented(
      h,
      h.keys.employee,
      'counter.add',
      { name: 'k', by: 1 },
      { idempotency_key: 'x'.repeat(255) },
    );
    assert.equal(ok.ok, true);
  });

  it('without a key the runtime generates one per call: two identical calls both run', async (t) => {
    const h = await counterRuntime(t);
    const a = await consented(h, h.keys.employee, 'counter.add', { name: 'g', by: 1 });
    const b = await consented(h, h.keys.employee, 'counter.add', { name: 'g', by: 1 });
    assert.equal(typeof a.idempotency_key, 'string');
    assert.notEqual(a.idempotency_key, b.idempotency_key);
    assert.deepEqual(await counter(h, 'g'), { value: 2, changes: 2 });
  });

  it('a stored key expires after its retention: the same key then executes again', async (t) => {
    let now = new Date('2026-03-01T10:00:00.000Z');
    const h = await counterRuntime(t, { clock: () => now, idempotencyTtlSeconds: 3600 });
    await consented(h, h.keys.employee, 'counter.add', { name: 'e', by: 1 }, { idempotency_key: 'k-exp' });
    now = new Date('2026-03-01T10:59:00.000Z');
    const replay = await dispatchAs(
      h.rt,
      { surface: 'cli', apiKey: h.keys.employee },
      'counter.add',
      { name: 'e', by: 1 },
      { idempotency_key: 'k-exp' },
    );
    assert.equal(replay.replayed, true);
    now = new Date('2026-03-01T11:00:01.000Z');
    const fresh = await consented(
      h,
      h.keys.employee,
      'counter.add',
      { name: 'e', by: 1 },
      { idempotency_key: 'k-exp' },
    );
    assert.equal(fresh.ok, true);
    assert.notEqual(fresh.replayed, true);
    assert.deepEqual(await counter(h, 'e'), { value: 2, changes: 2 });
  });
  it('a replay returns the stored envelope whole, while the receipt is stored once (in its receipts row)', async (t) => {
    const h = await counterRuntime(t);
    const caller = { surface: 'cli' as const, apiKey: h.keys.employee };
    const first = await consented(
      h,
      h.keys.employee,
      'counter.add',
      { name: 'w', by: 2 },
      { idempotency_key: 'k-whole' },
    );
    assert.equal(first.ok, true, JSON.stringify(first.error));
    const stored = await h.rt.store.read((q) =>
      q.get<{ envelope: unknown }>('SELECT envelope FROM idempotency WHERE key = ?', ['k-whole']),
    );
    const envelope = (
      typeof stored!.envelope === 'string' ? JSON.parse(stored!.envelope) : stored!.envelope
    ) as Envelope;
    assert.equal(envelope.result, undefined, 'the receipt is not copied into the idempotency record');
    const again = await dispatchAs(
      h.rt,
      caller,
      'counter.add',
      { name: 'w', by: 2 },
      { idempotency_key: 'k-whole' },
    );
    const unsign = (e: Envelope) => {
      const { replayed: _r, ...env } = e;
      const {
        replayed: _rr,
        attestation,
        ...result
      } = e.result as Record<string, unknown> & {
        attestation: Record<string, unknown>;
      };
      const { jws: _j, ...att } = attestation;
      return { ...env, result: { ...result, attestation: att } };
    };
    assert.equal(again.replayed, true);
    assert.deepEqual(unsign(again), unsign(first));
  });
});
