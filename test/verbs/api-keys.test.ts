/**
 * API keys as verbs (api_keys.list / create / revoke): role floors, the key shown once and kept
 * nowhere (audit rows, receipts, idempotency records, logs), revocation, tenant isolation and
 * replay. Spec: spec/consent.md §api-keys, spec/envelope.md §secret.
 */
import { test, type TestContext } from 'node:test';
import { strict as assert } from 'node:assert';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import type { DispatchOptions } from '../../src/runtime/core.ts';
import type { Envelope, Role } from '../../src/spec/types.ts';
import { createHttpServer } from '../../src/transports/http/server.ts';
import { dispatchAs } from '../support/keyed.ts';

interface Harness extends TestRuntime {
  logs: string[];
  call(key: string, verb: string, args?: unknown, options?: DispatchOptions): Promise<Envelope>;
  /** Call a confirmation- or phrase-gated write through its pending answer. */
  confirmed(key: string, verb: string, args: unknown, options?: DispatchOptions): Promise<Envelope>;
  /** Every row of every table as JSON, prefixed with the table name. */
  dump(): Promise<string[]>;
}

async function harness(t: TestContext): Promise<Harness> {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const h = await createTestRuntime(t, { logger: pino({ level: 'trace' }, sink) });
  const call = (key: string, verb: string, args: unknown = {}, options?: DispatchOptions) =>
    dispatchAs(h.rt, { surface: 'http', apiKey: key }, verb, args, options);
  return {
    ...h,
    logs,
    call,
    async confirmed(key, verb, args, options = {}) {
      const pending = await call(key, verb, args, options);
      assert.equal(pending.error?.reason, 'dispatch_pending', JSON.stringify(pending));
      const c = pending.consent!;
      return call(key, verb, args, {
        ...options,
        confirm: true,
        nonce: c.nonce,
        ...(c.typed_phrase !== undefined ? { typed_phrase: c.typed_phrase } : {}),
      });
    },
    async dump() {
      await h.rt.auditBuffer.flush();
      return h.rt.store.read(async (q) => {
        // SQLite lists its tables; on PostgreSQL the test schema's tables (SOLID_TEST_ENGINE=postgres).
        const tables = await q
          .all<{ name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
          )
          .catch(() =>
            q.all<{ name: string }>(
              'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()',
            ),
          );
        const out: string[] = [];
        for (const { name } of tables) {
          for (const row of await q.all<Record<string, unknown>>(`SELECT * FROM "${name}"`))
            out.push(`${name}: ${JSON.stringify(row)}`);
        }
        return out;
      });
    },
  };
}

test('an owner creates a key over HTTP: it is in the answer once and works; it is in no row, receipt or log', async (t) => {
  const h = await harness(t);
  const app = createHttpServer(h.rt);
  t.after(() => app.close());
  const post = async (key: string, verb: string, body: unknown) =>
    (
      await app.inject({
        method: 'POST',
        url: `/api/v1/agent/dispatch/${verb}`,
        payload: body as object,
        headers: { authorization: `Bearer ${key}` },
      })
    ).json() as Envelope;
  const args = { name: 'billing agent', role: 'employee' };
  const pending = await post(h.keys.owner, 'api_keys.create', { args });
  assert.equal(pending.consent?.gate, 'confirmation', JSON.stringify(pending));
  const env = await post(h.keys.owner, 'api_keys.create', {
    args,
    confirm: true,
    nonce: pending.consent!.nonce,
  });
  assert.equal(env.ok, true, JSON.stringify(env));
  const apiKey = env.secret?.api_key as string;
  assert.match(apiKey, /^sk_solid_[0-9a-f]{12}_/);
  const secretPart = apiKey.slice('sk_solid_'.length + 13);
  assert.equal(JSON.stringify(env.result).includes(secretPart), false, 'not in the signed receipt');
  const result = env.result as Record<string, unknown>;
  assert.equal(result.role, 'employee');
  assert.equal(result.api_key, undefined);

  const used = await h.call(apiKey, 'api_keys.list');
  assert.equal(used.error?.reason, 'role_denied', 'the new key authenticates, as an employee');
  const principal = await h.rt.tenants.authenticate(apiKey);
  assert.equal(principal.role, 'employee');
  assert.equal(principal.company_id, h.companyId);

  const rows = await h.dump();
  assert.ok(
    rows.some((r) => r.startsWith('receipts:') && r.includes(result.key_id as string)),
    'a receipt is kept',
  );
  assert.ok(rows.some((r) => r.startsWith('audit_log:') && r.includes('api_keys.create')));
  const leaks = rows.filter((r) => r.includes(secretPart));
  assert.deepEqual(leaks, [], 'the secret is in no table (audit_log, receipts, idempotency, …)');
  assert.ok(h.logs.length > 0, 'the runtime logged');
  assert.equal(
    h.logs.some((l) => l.includes(secretPart)),
    false,
    'the secret is in no log line',
  );
  const receipt = await h.call(h.keys.owner, 'audit.receipt', { audit_id: env.audit_id });
  assert.equal(receipt.ok, true, JSON.stringify(receipt));
  assert.equal(JSON.stringify(receipt).includes(secretPart), false);
});

test('a replay of the same idempotency key returns the key info without the secret and says so', async (t) => {
  const h = await harness(t);
  const args = { name: 'ci', role: 'admin' };
  const first = await h.confirmed(h.keys.owner, 'api_keys.create', args, {
    idempotency_key: 'create-ci-key-1',
  });
  assert.equal(first.ok, true, JSON.stringify(first));
  const secretPart = (first.secret!.api_key as string).slice(22);
  // The stored answer is replayed before any consent step: a retry gets it at once.
  const again = await h.call(h.keys.owner, 'api_keys.create', args, {
    idempotency_key: 'create-ci-key-1',
  });
  assert.equal(again.ok, true, JSON.stringify(again));
  assert.equal(again.replayed, true);
  assert.equal(again.secret, undefined);
  assert.equal(JSON.stringify(again).includes(secretPart), false);
  const r = again.result as Record<string, unknown>;
  assert.equal(r.key_id, (first.result as Record<string, unknown>).key_id);
  assert.match(String(r.api_key_note), /shown once.*replay.*does not return it/);
  const list = await h.call(h.keys.owner, 'api_keys.list');
  const keys = (list.result as { data: { keys: unknown[] } }).data.keys;
  assert.equal(keys.length, 5, 'one key created, not two (4 from the harness)');
});

test('roles: employee sees nothing, admin lists, only the owner creates; no role above the own', async (t) => {
  const h = await harness(t);
  for (const role of ['employee', 'read_only'] as Role[]) {
    const env = await h.call(h.keys[role], 'api_keys.list');
    assert.equal(env.error?.reason, 'role_denied', role);
  }
  const list = await h.call(h.keys.admin, 'api_keys.list');
  assert.equal(list.ok, true, JSON.stringify(list));
  const keys = (list.result as { data: { keys: Record<string, unknown>[] } }).data.keys;
  assert.deepEqual(keys.map((k) => k.role).sort(), ['admin', 'employee', 'owner', 'read_only']);
  for (const k of keys) {
    assert.deepEqual(Object.keys(k).sort(), [
      'agent_type',
      'created_at',
      'expires_at',
      'key_id',
      'last_used_at',
      'name',
      'revoked_at',
      'role',
      'scope',
      'user_id',
    ]);
  }
  assert.equal(JSON.stringify(list).includes('secret_hash'), false);
  const byAdmin = await h.call(h.keys.admin, 'api_keys.create', { name: 'x', role: 'employee' });
  assert.equal(byAdmin.error?.reason, 'role_denied');
  assert.equal(typeof byAdmin.audit_id, 'number', 'the denial is audited');
  const byEmployee = await h.call(h.keys.employee, 'api_keys.revoke', { key_id: 'aaaaaaaaaaaa' });
  assert.equal(byEmployee.error?.reason, 'role_denied');
  const pending = await h.call(h.keys.owner, 'api_keys.create', { name: 'x', role: 'owner' });
  assert.equal(pending.error?.reason, 'dispatch_pending', 'creating a credential asks for a confirmation');
  assert.equal(pending.consent?.gate, 'confirmation');
});

test('revoke: the key stops working, another tenant’s key is not_found, the last owner key is kept', async (t) => {
  const h = await harness(t);
  const created = await h.confirmed(h.keys.owner, 'api_keys.create', { name: 'temp', role: 'admin' });
  const apiKey = created.secret!.api_key as string;
  const keyId = (created.result as { key_id: string }).key_id;
  assert.equal((await h.call(apiKey, 'api_keys.list')).ok, true);

  const pending = await h.call(h.keys.owner, 'api_keys.revoke', { key_id: keyId });
  assert.equal(pending.consent?.gate, 'typed_phrase', 'revoking cannot be undone: a typed phrase');
  const revoked = await h.confirmed(h.keys.owner, 'api_keys.revoke', { key_id: keyId });
  assert.equal(revoked.ok, true, JSON.stringify(revoked));
  const after = await h.call(apiKey, 'api_keys.list');
  assert.equal(after.error?.reason, 'auth_invalid', 'the revoked key is refused');
  const list = await h.call(h.keys.owner, 'api_keys.list');
  const row = (list.result as { data: { keys: Record<string, unknown>[] } }).data.keys.find(
    (k) => k.key_id === keyId,
  );
  assert.equal(typeof row?.revoked_at, 'string');

  const otherKeyId = h.otherOwnerKey.slice('sk_solid_'.length, 'sk_solid_'.length + 12);
  const cross = await h.confirmed(h.keys.owner, 'api_keys.revoke', { key_id: otherKeyId });
  assert.equal(cross.error?.reason, 'not_found');
  assert.equal(
    (await h.call(h.otherOwnerKey, 'api_keys.list')).ok,
    true,
    "the other tenant's key still works",
  );

  const ownKeyId = h.keys.owner.slice('sk_solid_'.length, 'sk_solid_'.length + 12);
  const self = await h.confirmed(h.keys.owner, 'api_keys.revoke', { key_id: ownKeyId });
  assert.equal(self.error?.reason, 'invalid_input');
  assert.match(self.error!.message, /last active owner key/);
  assert.match(self.error!.hint ?? '', /Create another owner key first/);
  assert.equal((await h.call(h.keys.owner, 'api_keys.list')).ok, true, 'still signed in');

  const second = await h.confirmed(h.keys.owner, 'api_keys.create', { name: 'spare owner', role: 'owner' });
  assert.equal(second.ok, true);
  const selfNow = await h.confirmed(h.keys.owner, 'api_keys.revoke', { key_id: ownKeyId });
  assert.equal(selfNow.ok, true, 'with another active owner key, the own key may go');
  assert.equal((await h.call(second.secret!.api_key as string, 'api_keys.list')).ok, true);
});

test('audit.revert of a create revokes the created key', async (t) => {
  const h = await harness(t);
  const created = await h.confirmed(h.keys.owner, 'api_keys.create', { name: 'undo me', role: 'employee' });
  const apiKey = created.secret!.api_key as string;
  await h.rt.tenants.authenticate(apiKey);
  const undone = await h.confirmed(h.keys.owner, 'audit.revert', { audit_id: created.audit_id });
  assert.equal(undone.ok, true, JSON.stringify(undone));
  await assert.rejects(h.rt.tenants.authenticate(apiKey), /not valid/);
});

test('the CLI prints the new key once, marked as not stored', async () => {
  const { renderOk } = await import('../../src/transports/cli/human-output.ts');
  const text = renderOk({
    ok: true,
    verb: 'api_keys.create',
    audit_id: 5,
    result: { status: 'completed', key_id: 'abcdefabcdef', timestamp: '2026-03-10T12:00:00.000Z' },
    secret: { api_key: 'sk_solid_abcdefabcdef_secretsecretsecret' },
  });
  assert.match(
    text,
    /shown once, not stored — copy it now:\n\s+api_key\s+sk_solid_abcdefabcdef_secretsecretsecret/,
  );
  const replay = renderOk({
    ok: true,
    verb: 'api_keys.create',
    audit_id: 5,
    replayed: true,
    result: { status: 'completed', key_id: 'abcdefabcdef' },
  });
  assert.doesNotMatch(replay, /shown once, not stored/);
});

test('api_keys.create cannot be a transaction step: its shown-once secret would be lost', async (t) => {
  const h = await harness(t);
  const start = await h.call(h.keys.owner, 'transaction.start', {});
  assert.equal(start.ok, true, JSON.stringify(start.error));
  const id = (start.result as { transaction_id: string }).transaction_id;
  const append = await h.call(h.keys.owner, 'transaction.append', {
    transaction_id: id,
    verb: 'api_keys.create',
    args: { name: 'in a transaction', role: 'employee' },
  });
  assert.equal(append.ok, false);
  assert.equal(append.error?.reason, 'transaction_step_refused');
  assert.match(append.error?.message ?? '', /secret shown once/);
  const keys = await h.call(h.keys.owner, 'api_keys.list', {});
  assert.ok(!JSON.stringify(keys.result).includes('in a transaction'), 'no key was created');
});

test('api_keys.list shows when each key was last used, a new key never, a refused key not at all', async (t) => {
  const h = await harness(t);
  const created = await h.confirmed(h.keys.owner, 'api_keys.create', { name: 'fresh', role: 'employee' });
  assert.equal(created.ok, true, JSON.stringify(created.error));
  const fresh = {
    key_id: (created.result as { key_id: string }).key_id,
    api_key: created.secret!.api_key as string,
  };
  const lastUsed = async (): Promise<Map<string, string | null>> => {
    await h.rt.tenants.flushKeyUse();
    const list = await h.call(h.keys.owner, 'api_keys.list');
    await h.rt.tenants.flushKeyUse();
    const keys = (list.result as { data: { keys: Array<{ key_id: string; last_used_at: string | null }> } })
      .data.keys;
    return new Map(keys.map((k) => [k.key_id, k.last_used_at]));
  };
  const ownerId = h.keys.owner.split('_')[2]!;
  const before = await lastUsed();
  assert.equal(before.get(fresh.key_id), null, 'a key not used yet');
  const ownerAt = before.get(ownerId);
  assert.ok(ownerAt !== null && ownerAt !== undefined, 'the key that just called');
  assert.ok(Math.abs(Date.parse(ownerAt) - Date.now()) < 60_000, ownerAt);

  const wrong = `sk_solid_${fresh.key_id}_${'x'.repeat(24)}`;
  assert.equal((await h.call(wrong, 'api_keys.list')).error?.reason, 'auth_invalid');
  assert.equal((await lastUsed()).get(fresh.key_id), null, 'a refused secret is not a use');

  const used = await h.call(fresh.api_key, 'audit.trail', { limit: 1 });
  assert.equal(used.ok, true, JSON.stringify(used.error));
  const after = (await lastUsed()).get(fresh.key_id);
  assert.ok(after !== null && after !== undefined, 'the new key, once it called');
  assert.ok(after >= ownerAt, 'not earlier than the first use recorded');
});
