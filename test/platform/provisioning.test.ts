/**
 * Provisioning for platforms over HTTP (`POST /api/v1/platform/{verb}`, spec/platform.md): a
 * platform credential creates a tenant (idempotent by its external id), looks it up, updates it,
 * provisions an owner enrolment link the customer enrols with, and agent keys; suspends it (every
 * credential refused with `tenant_suspended`, audited in the tenant's chain), resumes it, exports
 * it and deletes it (only suspended, after an export of its head). The platform log records every
 * call as one verifying hash chain; the tenant's chain records what was done to it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Secret, TOTP } from 'otpauth';
import type { Envelope } from '../../src/spec/types.ts';
import { createPlatformKey, revokePlatformKey } from '../../src/platform/platform-keys.ts';
import { readPlatformLog, verifyPlatformLog } from '../../src/platform/platform-log.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { verifyAuditExport } from '../../src/runtime/ledger/verify/export-check.ts';
import { verifyStoreChain } from '../../src/runtime/ledger/verify/verify.ts';
import type { TestRuntime } from '../support/runtime.ts';
import { platformFixture } from './support.ts';
import { dispatchAs } from '../support/keyed.ts';

function data(env: Envelope): Record<string, unknown> {
  assert.equal(env.ok, true, JSON.stringify(env.error));
  return (env.result as { data: Record<string, unknown> }).data;
}

async function tenantRows(h: TestRuntime, companyId: number, action: string) {
  await h.rt.auditBuffer.flush();
  return h.rt.store.read((q) =>
    q.all<{ agent_type: string; status: string; reason: string | null }>(
      'SELECT agent_type, status, reason FROM audit_log WHERE company_id = ? AND action_type = ? ORDER BY seq',
      [companyId, action],
    ),
  );
}

describe('provisioning for platforms', () => {
  it('creates a tenant idempotently by external id, looks it up and updates it; each change in both logs', async (t) => {
    const f = await platformFixture(t);
    const first = await f.call('platform.tenants.create', {
      external_id: 'acct_123',
      name: 'Happy Paws Grooming',
      tier: 'professional',
      time_zone: 'Europe/Paris',
    });
    assert.equal(first.status, 200);
    const made = data(first.env) as { tenant: { company_id: number; time_zone: string }; created: boolean };
    assert.equal(made.created, true);
    assert.equal(made.tenant.time_zone, 'Europe/Paris');
    const again = data(
      (
        await f.call('platform.tenants.create', {
          external_id: 'acct_123',
          name: 'Other name',
          tier: 'starter',
        })
      ).env,
    ) as { tenant: { company_id: number; name: string }; created: boolean };
    assert.equal(again.created, false);
    assert.equal(again.tenant.company_id, made.tenant.company_id, 'the same tenant for the same external id');
    assert.equal(again.tenant.name, 'Happy Paws Grooming', 'a second create changes nothing');

    const got = data((await f.call('platform.tenants.get', { external_id: 'acct_123' })).env) as {
      tenant: { company_id: number };
    };
    assert.equal(got.tenant.company_id, made.tenant.company_id);
    const missing = await f.call('platform.tenants.get', { external_id: 'acct_nope' });
    assert.equal(missing.status, 404);
    assert.equal(missing.env.error?.reason, 'not_found');
    // The operator's own tenants (no external id) are not a platform's to see.
    const listed = data((await f.call('platform.tenants.list', {})).env) as {
      tenants: { company_id: number }[];
    };
    assert.deepEqual(
      listed.tenants.map((x) => x.company_id),
      [made.tenant.company_id],
    );

    const upd = data(
      (
        await f.call('platform.tenants.update', {
          external_id: 'acct_123',
          tier: 'enterprise',
          time_zone: 'UTC',
        })
      ).env,
    ) as { tenant: { tier: string }; changed: string[] };
    assert.equal(upd.tenant.tier, 'enterprise');
    assert.deepEqual(upd.changed.sort(), ['tier', 'time_zone']);
    assert.equal((await f.h.rt.tenants.get(made.tenant.company_id))?.tier, 'enterprise');

    const badTz = await f.call('platform.tenants.update', {
      external_id: 'acct_123',
      time_zone: 'Mars/Olympus',
    });
    assert.equal(badTz.env.error?.reason, 'invalid_input');
    assert.equal(badTz.env.error?.path, '/time_zone');
    assert.ok(badTz.env.error?.hint);

    const rows = await tenantRows(f.h, made.tenant.company_id, 'platform.tenants.update');
    assert.equal(rows.length, 1);
    assert.match(rows[0]!.agent_type, /^platform:[0-9a-f]{12}$/);
    const log = await f.h.rt.store.read((q) => readPlatformLog(q));
    assert.deepEqual(
      log.map((r) => `${r.action}:${r.status}`),
      [
        'platform.tenants.create:completed',
        'platform.tenants.create:completed',
        'platform.tenants.get:completed',
        'platform.tenants.get:failed',
        'platform.tenants.list:completed',
        'platform.tenants.update:completed',
        'platform.tenants.update:failed',
      ],
    );
    assert.deepEqual(await verifyPlatformLog(f.h.rt.store), { rows: 7, broken_at: null });
  });

  it('two creates of one external id at once make one tenant', async (t) => {
    const f = await platformFixture(t);
    const both = await Promise.all(
      [0, 1, 2].map(() =>
        f.call('platform.tenants.create', { external_id: 'acct_race', name: 'Race', tier: 'starter' }),
      ),
    );
    const ids = new Set(both.map((b) => (data(b.env).tenant as { company_id: number }).company_id));
    assert.equal(ids.size, 1);
    assert.equal(both.filter((b) => data(b.env).created === true).length, 1);
  });

  it('suspends a tenant: each of its credentials is refused with tenant_suspended, audited in its chain; resume restores', async (t) => {
    const f = await platformFixture(t);
    const made = data(
      (await f.call('platform.tenants.create', { external_id: 'acct_s', name: 'S', tier: 'starter' })).env,
    );
    const companyId = (made.tenant as { company_id: number }).company_id;
    const k = await f.call('platform.api_keys.create', {
      external_id: 'acct_s',
      role: 'admin',
      name: 'assistant',
    });
    const apiKey = String(k.env.secret?.api_key);
    assert.equal((await dispatchAs(f.h.rt, { apiKey, surface: 'cli' }, 'verbs.list', {})).ok, true);

    const s = await f.call('platform.tenants.suspend', { external_id: 'acct_s', note: 'unpaid invoice' });
    assert.equal(data(s.env).changed, true);
    const refused = await dispatchAs(f.h.rt, { apiKey, surface: 'cli' }, 'verbs.list', {});
    assert.equal(refused.ok, false);
    assert.equal(refused.error?.reason, 'tenant_suspended');
    assert.ok(refused.error?.hint);
    // Over HTTP too, with its status; and a person's session principal is refused the same way.
    const human = await f.h.rt.dispatch(
      { principal: { ...f.h.human('owner'), company_id: companyId }, surface: 'webmcp' },
      'audit.trail',
      {},
    );
    assert.equal(human.error?.reason, 'tenant_suspended');
    const denied = await tenantRows(f.h, companyId, 'verbs.list');
    assert.ok(
      denied.some((r) => r.status === 'denied' && r.reason === 'tenant_suspended'),
      'the refusal is audited',
    );
    assert.equal((await tenantRows(f.h, companyId, 'platform.tenants.suspend')).length, 1);
    // Other tenants are untouched.
    assert.equal(
      (await dispatchAs(f.h.rt, { apiKey: f.h.keys.owner, surface: 'cli' }, 'verbs.list', {})).ok,
      true,
    );

    await f.call('platform.tenants.resume', { external_id: 'acct_s' });
    assert.equal((await dispatchAs(f.h.rt, { apiKey, surface: 'cli' }, 'verbs.list', {})).ok, true);
  });

  it('provisions the owner as an enrolment link the customer enrols with; agent keys at most admin', async (t) => {
    const f = await platformFixture(t);
    await f.call('platform.tenants.create', { external_id: 'acct_u', name: 'U', tier: 'starter' });
    const inv = await f.call('platform.users.invite', {
      external_id: 'acct_u',
      name: 'Dana Owner',
      role: 'owner',
    });
    const user = data(inv.env).user as { user_id: number; role: string; status: string };
    assert.equal(user.role, 'owner');
    assert.equal(user.status, 'invited');
    const url = String(inv.env.secret?.enrolment_url);
    assert.match(url, /\/enrol\/enr1_/);
    // No secret in the platform log.
    const log = JSON.stringify(await f.h.rt.store.read((q) => readPlatformLog(q)));
    assert.ok(!log.includes(url.split('/enrol/')[1]!), 'the enrolment token is never logged');

    const owner = await f.call('platform.api_keys.create', { external_id: 'acct_u', role: 'owner' });
    assert.equal(owner.status, 403);
    assert.equal(owner.env.error?.reason, 'role_denied');
    const agent = await f.call('platform.api_keys.create', {
      external_id: 'acct_u',
      role: 'employee',
      read_only: true,
    });
    const key = data(agent.env).key as { role: string; scope: unknown; user_id: number };
    assert.equal(key.role, 'employee');
    assert.deepEqual(key.scope, { read_only: true });
    assert.notEqual(key.user_id, user.user_id, 'an agent key of no person takes a fresh user id');
    assert.ok(!log.includes(String(agent.env.secret?.api_key)));

    // The customer enrols with their own authenticator app through the link.
    const token = url.split('/enrol/')[1]!;
    const headers = { origin: 'http://localhost', host: 'localhost' };
    const started = await f.app.inject({
      method: 'POST',
      url: '/api/v1/enrol/totp/start',
      headers,
      payload: { token },
    });
    const secret = String((started.json() as Envelope).result!.secret);
    const code = TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: f.h.rt.clock().getTime() });
    const verified = await f.app.inject({
      method: 'POST',
      url: '/api/v1/enrol/totp/verify',
      headers,
      payload: { token, code },
    });
    assert.equal((verified.json() as Envelope).ok, true);
  });

  it('exports and deletes a tenant only suspended and after an export of its head; the evidence stays', async (t) => {
    const f = await platformFixture(t);
    const made = data(
      (await f.call('platform.tenants.create', { external_id: 'acct_d', name: 'D', tier: 'starter' })).env,
    );
    const companyId = (made.tenant as { company_id: number }).company_id;
    const apiKey = String(
      (await f.call('platform.api_keys.create', { external_id: 'acct_d', role: 'admin' })).env.secret
        ?.api_key,
    );
    await f.call('platform.users.invite', { external_id: 'acct_d', name: 'Owner', role: 'owner' });
    await dispatchAs(f.h.rt, { apiKey, surface: 'cli' }, 'verbs.list', {});

    const early = await f.call('platform.tenants.delete', { external_id: 'acct_d', export_id: 'exp_none' });
    assert.equal(early.status, 409);
    assert.equal(early.env.error?.reason, 'export_required');
    assert.ok(early.env.error?.hint);

    await f.call('platform.tenants.suspend', { external_id: 'acct_d' });
    const ex = data((await f.call('platform.tenants.export', { external_id: 'acct_d' })).env) as {
      export_id: string;
      head_seq: number;
      rows_file: { name: string; content: string };
      manifest: Record<string, unknown>;
    };
    assert.ok(ex.head_seq >= 3);
    // The export checks offline from its two files alone.
    const rowsPath = join(f.h.dir, ex.rows_file.name);
    writeFileSync(rowsPath, ex.rows_file.content);
    writeFileSync(`${rowsPath}.manifest.json`, JSON.stringify(ex.manifest));
    const checked = await verifyAuditExport(rowsPath);
    assert.equal(checked.ok, true, JSON.stringify(checked.findings));
    assert.equal(checked.last_seq, ex.head_seq);

    // A row after the export (a refused call of the suspended tenant) moves the head: export again.
    await dispatchAs(f.h.rt, { apiKey, surface: 'cli' }, 'verbs.list', {});
    const stale = await f.call('platform.tenants.delete', { external_id: 'acct_d', export_id: ex.export_id });
    assert.equal(stale.env.error?.reason, 'export_required');
    const ex2 = data((await f.call('platform.tenants.export', { external_id: 'acct_d' })).env) as {
      export_id: string;
    };
    const del = await f.call('platform.tenants.delete', { external_id: 'acct_d', export_id: ex2.export_id });
    const gone = data(del.env) as { removed: Record<string, number>; head_hash: string };
    assert.ok(gone.removed.api_keys >= 1 && gone.removed.users >= 1, JSON.stringify(gone.removed));

    // Its credentials no longer exist; its name is gone; its chain and checkpoints stay and verify.
    const after = await dispatchAs(f.h.rt, { apiKey, surface: 'cli' }, 'verbs.list', {});
    assert.equal(after.error?.reason, 'auth_invalid');
    const counts = await f.h.rt.store.read(async (q) => ({
      keys: (await q.get<{ n: number }>('SELECT COUNT(*) AS n FROM api_keys WHERE company_id = ?', [
        companyId,
      ]))!.n,
      audit: (await q.get<{ n: number }>('SELECT COUNT(*) AS n FROM audit_log WHERE company_id = ?', [
        companyId,
      ]))!.n,
      priv: (await q.get<{ n: number }>(
        "SELECT COUNT(*) AS n FROM tenant_keys WHERE company_id = ? AND private_enc <> ''",
        [companyId],
      ))!.n,
      tenant: await q.get<{ name: string; status: string; external_id: string | null }>(
        'SELECT name, status, external_id FROM tenants WHERE company_id = ?',
        [companyId],
      ),
    }));
    assert.equal(Number(counts.keys), 0);
    assert.ok(Number(counts.audit) >= 3);
    assert.equal(Number(counts.priv), 0, 'the private signing keys are destroyed');
    assert.deepEqual(counts.tenant, {
      name: `deleted tenant ${companyId}`,
      status: 'deleted',
      external_id: null,
    });
    const report = await verifyStoreChain(f.h.rt.store);
    const mine = report.tenants.find((x) => x.company_id === companyId);
    assert.deepEqual(mine?.findings, []);
    // The platform log keeps the evidence: which export covered which head.
    const last = (await f.h.rt.store.read((q) => readPlatformLog(q))).at(-1)!;
    assert.equal(last.action, 'platform.tenants.delete');
    assert.equal(last.result_data?.head_hash, gone.head_hash);
    assert.equal((await verifyPlatformLog(f.h.rt.store)).broken_at, null);
    // The external id is free again: a new create makes a new tenant.
    const again = data(
      (await f.call('platform.tenants.create', { external_id: 'acct_d', name: 'D2', tier: 'starter' })).env,
    );
    assert.notEqual((again.tenant as { company_id: number }).company_id, companyId);
  });

  it('refuses a bad, revoked or tenant credential, each in the platform log', async (t) => {
    const f = await platformFixture(t);
    const none = await f.app.inject({
      method: 'POST',
      url: '/api/v1/platform/platform.tenants.list',
      payload: {},
    });
    assert.equal(none.statusCode, 401);
    assert.equal((none.json() as Envelope).error?.reason, 'auth_invalid');
    const tenantKey = await f.call('platform.tenants.list', {}, f.h.keys.owner);
    assert.equal(tenantKey.status, 403);
    assert.equal(tenantKey.env.error?.reason, 'platform_credential_required');
    const keyId = f.key.slice('pk_solid_'.length, 'pk_solid_'.length + 12);
    await f.h.rt.store.write((tx) => revokePlatformKey(tx, keyId, f.h.rt.clock()));
    const revoked = await f.call('platform.tenants.list', {});
    assert.equal(revoked.env.error?.reason, 'auth_invalid');
    assert.equal(revoked.env.error?.details, undefined, 'the caller learns nothing of the key id');
    const unknown = await f.call(
      'platform.nope',
      {},
      (await createPlatformKey(f.h.rt.store, 'b', f.h.rt.clock())).key,
    );
    assert.equal(unknown.env.error?.reason, 'unknown_verb');
    const log = await f.h.rt.store.read((q) => readPlatformLog(q));
    assert.deepEqual(
      log.map((r) => [r.status, r.reason, r.key_id === keyId]),
      [
        ['denied', 'auth_invalid', false],
        ['denied', 'platform_credential_required', false],
        ['denied', 'auth_invalid', true],
        ['failed', 'unknown_verb', false],
      ],
    );
  });
});
