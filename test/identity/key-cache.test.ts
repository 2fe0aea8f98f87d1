/**
 * The key check's hot path (src/runtime/tenants.ts Tenants.authenticate): a key that verified a
 * moment ago answers without hashing its secret again, yet a revocation, an expiry or a
 * suspension of its tenant still refuses the very next call, audited like any refusal.
 * Spec: spec/transports.md §auth, spec/consent.md §api-keys, spec/platform.md §lifecycle.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { createTestRuntime } from '../support/runtime.ts';
import { dispatchAs } from '../support/keyed.ts';
import type { Envelope } from '../../src/spec/types.ts';

async function ownerRows(h: Awaited<ReturnType<typeof createTestRuntime>>, action: string) {
  return h.rt.store.read((q) =>
    q.all<{ action_type: string; status: string }>(
      'SELECT action_type, status FROM audit_log WHERE company_id = ? AND action_type = ?',
      [h.companyId, action],
    ),
  );
}

const read = (h: Awaited<ReturnType<typeof createTestRuntime>>, apiKey: string): Promise<Envelope> =>
  dispatchAs(h.rt, { surface: 'http', apiKey }, 'verbs.list', {});

test('a key revoked in this process is refused on the very next call, though it answered just before', async (t) => {
  const h = await createTestRuntime(t, { authFailureWindowMs: 0 });
  const key = h.keys.employee;
  for (let i = 0; i < 3; i++) assert.equal((await read(h, key)).ok, true, 'the key answers, again and again');
  const keyId = h.rt.tenants.keyIdOf(key)!;
  // Straight through the key store, without the verb's cache drop: revokeKey alone must do.
  await h.rt.store.write((tx) => h.rt.tenants.revokeKey(tx, h.companyId, keyId, new Date()));
  const refused = await read(h, key);
  assert.equal(refused.ok, false);
  assert.equal(refused.error?.reason, 'auth_invalid');
  assert.deepEqual(
    (await ownerRows(h, 'api_key.revoked')).map((r) => ({ ...r })),
    [{ action_type: 'api_key.revoked', status: 'denied' }],
    'the owning tenant has the refusal in its log',
  );
  assert.equal((await read(h, h.keys.owner)).ok, true, 'another key of the tenant still answers');
});

test('a key that answered at 11:59:59.999 is refused at its expiry instant, on the next call', async (t) => {
  let now = new Date('2026-12-08T11:59:59.000Z');
  const h = await createTestRuntime(t, { clock: () => now, authFailureWindowMs: 0 });
  const key = await h.rt.createApiKey({
    company_id: h.companyId,
    user_id: 1,
    role: 'owner',
    scope: { expires_at: '2026-12-08T12:00:00.000Z' },
  });
  assert.equal((await read(h, key)).ok, true);
  now = new Date('2026-12-08T11:59:59.999Z');
  assert.equal((await read(h, key)).ok, true, 'a millisecond before its expiry it still answers');
  now = new Date('2026-12-08T12:00:00.000Z');
  const refused = await read(h, key);
  assert.equal(refused.error?.reason, 'key_expired', JSON.stringify(refused));
  assert.equal((await ownerRows(h, 'api_key.expired')).length, 1, 'audited in its tenant');
});

test('a wrong secret for a key id that verified a moment ago is still refused', async (t) => {
  const h = await createTestRuntime(t, { authFailureWindowMs: 0 });
  const key = h.keys.employee;
  assert.equal((await read(h, key)).ok, true);
  const wrong = `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
  const refused = await read(h, wrong);
  assert.equal(refused.error?.reason, 'auth_invalid');
  assert.equal((await ownerRows(h, 'api_key.wrong_secret')).length, 1);
  assert.equal((await read(h, key)).ok, true, 'the right key still answers');
});

test('a suspended tenant: a key that answered a moment ago is refused with tenant_suspended', async (t) => {
  const h = await createTestRuntime(t, { authFailureWindowMs: 0 });
  const key = h.keys.employee;
  assert.equal((await read(h, key)).ok, true);
  await h.rt.store.write((tx) =>
    tx.run("UPDATE tenants SET status = 'suspended' WHERE company_id = ?", [h.companyId]),
  );
  h.rt.tenants.invalidate(); // what platform.tenants.suspend does in the process that suspends
  const refused = await read(h, key);
  assert.equal(refused.error?.reason, 'tenant_suspended', JSON.stringify(refused));
  assert.equal(typeof refused.audit_id, 'number', 'the refusal is audited');
});
