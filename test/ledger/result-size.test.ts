/**
 * Nothing commits whose answer cannot be sent (issue 30 row 7): a write whose result exceeds the
 * runtime's maxResultBytes, or the transport's limit on the Caller, is refused result_too_large
 * inside its transaction — the effect rolls back, the refusal is an audited envelope, and the
 * chain verifies. Spec: spec/transports.md §mcp-results.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { consented, counter, counterRuntime } from '../support/counter-verbs.ts';
import { validateEnvelope } from '../../src/spec/validators.ts';
import { verifyStoreChain } from '../../src/runtime/ledger/verify/verify.ts';
import { dispatchAs } from '../support/keyed.ts';

const LONG = 'n'.repeat(300);

test('a write whose result is over the runtime limit rolls back and answers result_too_large, audited', async (t) => {
  const h = await counterRuntime(t, { maxResultBytes: 2200 });
  const small = await consented(h, h.keys.owner, 'counter.add', { name: 'a', by: 1 });
  assert.equal(small.ok, true, JSON.stringify(small));
  const big = await consented(h, h.keys.owner, 'counter.add', { name: LONG, by: 5 });
  assert.equal(big.ok, false);
  assert.ok(validateEnvelope(big).valid, JSON.stringify(big));
  assert.equal(big.error!.reason, 'result_too_large');
  assert.equal(big.error!.details!.limit_bytes, 2200);
  assert.equal(typeof big.error!.hint, 'string');
  assert.equal(typeof big.audit_id, 'number', 'the refusal is audited');
  assert.deepEqual(await counter(h, LONG), { value: 0, changes: 0 }, 'nothing committed');
  const row = await h.rt.store.read((q) =>
    q.get<{ reason: string; action_type: string }>(
      'SELECT reason, action_type FROM audit_log WHERE audit_id = ?',
      [big.audit_id],
    ),
  );
  assert.equal(row?.reason, 'result_too_large');
  assert.equal(row?.action_type, 'counter.add');
  const report = await verifyStoreChain(h.rt.store);
  assert.equal(report.ok, true, JSON.stringify(report));
});

test("the transport's own limit on the Caller applies too (MCP passes its maxResultBytes)", async (t) => {
  const h = await counterRuntime(t);
  const caller = { surface: 'mcp_stdio' as const, apiKey: h.keys.owner, maxResultBytes: 2200 };
  const first = await dispatchAs(h.rt, caller, 'counter.add', { name: LONG, by: 1 });
  assert.equal(first.error?.reason, 'dispatch_pending');
  const env = await dispatchAs(
    h.rt,
    caller,
    'counter.add',
    { name: LONG, by: 1 },
    { confirm: true, nonce: first.consent!.nonce },
  );
  assert.equal(env.error?.reason, 'result_too_large', JSON.stringify(env));
  assert.deepEqual(await counter(h, LONG), { value: 0, changes: 0 });
});
