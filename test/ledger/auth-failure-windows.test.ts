/**
 * Repeated unauthenticated failures are counted per window (src/identity/auth-failure-log.ts,
 * spec/audit.md §auth-failure-windows): bounded rows, the count recorded, the chain intact.
 * The HTTP flood (1000 bad-key calls, two PostgreSQL nodes) is in test/transports/http/rate-limit.test.ts.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestRuntime } from '../support/runtime.ts';
import { AUTH_FAILURES_ACTION } from '../../src/runtime/ledger/write/refusal-rows.ts';
import { verifyStoreChain } from '../../src/runtime/ledger/verify/verify.ts';
import { dispatchAs } from '../support/keyed.ts';

const T0 = Date.parse('2026-03-02T10:00:00.000Z');

it('a window per reason and address: its first row, one aggregated row with the count, a new window after it ends', async (t) => {
  let now = T0;
  const h = await createTestRuntime(t, { clock: () => new Date(now) });
  const rows = async () =>
    (
      await h.rt.store.read((q) =>
        q.all<{ action_type: string; reason: string; request_data: unknown }>(
          'SELECT action_type, reason, request_data FROM audit_log WHERE company_id = ? ORDER BY seq',
          [h.sandboxId],
        ),
      )
    ).map((r) => ({
      action: r.action_type,
      reason: r.reason,
      data: (typeof r.request_data === 'string' ? JSON.parse(r.request_data) : r.request_data) as Record<
        string,
        unknown
      >,
    }));
  const before = (await rows()).length;
  const bad = (address: string) =>
    dispatchAs(h.rt, { surface: 'http', apiKey: 'sk_solid_garbage', address }, 'verbs.list', {});

  const first = await bad('192.0.2.1');
  const answers = await Promise.all(Array.from({ length: 99 }, () => bad('192.0.2.1')));
  assert.ok(answers.every((e) => e.error?.reason === 'auth_invalid' && e.audit_id === first.audit_id));
  const other = await bad('192.0.2.2'); // another address: its own window and row
  assert.notEqual(other.audit_id, first.audit_id);
  now += 30_000;
  await bad('192.0.2.1'); // still the first window
  assert.equal((await rows()).length - before, 2);

  now += 30_000; // the first window ended: the next failure closes it and opens another
  const next = await bad('192.0.2.1');
  assert.notEqual(next.audit_id, first.audit_id);
  await h.rt.authFailures.flushAll();
  const added = (await rows()).slice(before);
  const agg = added.filter((r) => r.action === AUTH_FAILURES_ACTION);
  assert.equal(agg.length, 1, 'windows of one attempt leave no aggregated row');
  assert.deepEqual(agg[0], {
    action: AUTH_FAILURES_ACTION,
    reason: 'auth_invalid',
    data: {
      aggregated: true,
      count: 101,
      first_at: new Date(T0).toISOString(),
      last_at: new Date(T0 + 30_000).toISOString(),
      address: '192.0.2.1',
      surface: 'http',
      first_audit_id: first.audit_id,
    },
  });
  assert.equal(added.length, 4, '2 windows of 192.0.2.1 (first row + aggregate, first row), 1 of 192.0.2.2');
  const report = await verifyStoreChain(h.rt.store);
  assert.equal(report.ok, true);
});

it('authFailureWindowMs 0 keeps one row per attempt', async (t) => {
  const h = await createTestRuntime(t, { authFailureWindowMs: 0 });
  const ids = new Set<number | undefined>();
  for (let i = 0; i < 5; i++)
    ids.add(
      (
        await dispatchAs(
          h.rt,
          { surface: 'http', apiKey: 'sk_solid_garbage', address: 'a' },
          'verbs.list',
          {},
        )
      ).audit_id,
    );
  assert.equal(ids.size, 5);
});
