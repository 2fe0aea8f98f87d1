/**
 * Key rotation through `solid keys` on the database a running UCP server uses: the profile shows
 * a new key before it signs, the old key keeps verifying during its grace, and stops after it is
 * retired (or when the grace is over); every change is an audited operator action.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { profileKeys, verifyResponse } from '../../../src/transports/ucp/ucp-client.ts';
import { SignatureError } from '../../../src/transports/ucp/signature-error.ts';
import { createSharedUcpHarness, type UcpHarness, type UcpResponse } from './harness.ts';

const COUNT = 'com.example.sales.notes_count';

async function verifyWithProfile(u: UcpHarness, res: UcpResponse): Promise<string> {
  const profile = (await u.get('/.well-known/ucp')).json();
  return (
    await verifyResponse({
      status: res.status,
      headers: res.headers,
      body: res.bytes,
      url: res.url,
      keys: profileKeys(profile),
    })
  ).keyid;
}

async function profileKids(u: UcpHarness): Promise<string[]> {
  return (await u.get('/.well-known/ucp'))
    .json<{ keys: Array<{ kid: string }> }>()
    .keys.map((k) => k.kid)
    .sort();
}

describe('solid keys rotation with a running UCP server', () => {
  it('publishes before signing, accepts the old key during grace, refuses it after retire', async (t) => {
    const { u, cli } = await createSharedUcpHarness(t);
    const old = (await u.h.rt.keys.signingKey(u.h.companyId)).kid;
    const before = await u.call(COUNT, {});
    assert.equal(await verifyWithProfile(u, before), old);

    const step1 = await cli(['keys', 'rotate', '--tenant', String(u.h.companyId), '--json']);
    assert.equal(step1.code, 0, step1.stderr);
    const published = JSON.parse(step1.stdout) as { step: string; key: { kid: string; state: string } };
    assert.equal(published.step, 'published');
    assert.equal(published.key.state, 'pending');
    const fresh = published.key.kid;
    assert.deepEqual(await profileKids(u), [fresh, old].sort(), 'the new key is published before it signs');
    assert.equal(await verifyWithProfile(u, await u.call(COUNT, {})), old, 'still signing with the old key');

    const early = await cli(['keys', 'rotate', '--tenant', String(u.h.companyId)]);
    assert.equal(early.code, 2, 'too early: platforms may not have the new key yet');
    assert.match(early.stderr, /--force/);

    const step2 = await cli(['keys', 'rotate', '--tenant', String(u.h.companyId), '--force', '--json']);
    assert.equal(step2.code, 0, step2.stderr);
    assert.equal((JSON.parse(step2.stdout) as { key: { kid: string; state: string } }).key.kid, fresh);
    const after = await u.call(COUNT, {});
    assert.equal(await verifyWithProfile(u, after), fresh, 'answers are signed with the new key');
    assert.deepEqual(
      await profileKids(u),
      [fresh, old].sort(),
      'the old key stays published during its grace',
    );
    assert.equal(await verifyWithProfile(u, before), old, 'an answer signed by the old key still verifies');

    const list = JSON.parse(
      (await cli(['keys', 'list', '--tenant', String(u.h.companyId), '--json'])).stdout,
    ) as { keys: Array<{ kid: string; state: string; published: boolean }> };
    assert.deepEqual(Object.fromEntries(list.keys.map((k) => [k.kid, [k.state, k.published]])), {
      [fresh]: ['active', true],
      [old]: ['rotating', true],
    });

    const activeRetire = await cli(['keys', 'retire', fresh, '--tenant', String(u.h.companyId)]);
    assert.equal(activeRetire.code, 2, 'the active key cannot be retired');
    const retired = await cli(['keys', 'retire', old, '--tenant', String(u.h.companyId)]);
    assert.equal(retired.code, 0, retired.stderr);
    assert.deepEqual(await profileKids(u), [fresh]);
    await assert.rejects(
      verifyWithProfile(u, before),
      (err: unknown) => err instanceof SignatureError && err.code === 'key_not_found',
    );

    await u.h.rt.auditBuffer.flush();
    const rows = await u.h.rt.store.read((q) =>
      q.all<{ action_type: string; agent_type: string; entity_id: string }>(
        "SELECT action_type, agent_type, entity_id FROM audit_log WHERE category = 'keys' ORDER BY audit_id",
      ),
    );
    assert.deepEqual(
      rows.map((r) => [r.action_type, r.entity_id]),
      [
        ['keys.rotate', fresh],
        ['keys.rotate', fresh],
        ['keys.retire', old],
      ],
    );
    assert.ok(rows.every((r) => r.agent_type === 'cli:operator'));
    const verify = await cli(['audit', 'verify', '--json']);
    assert.equal(verify.code, 0, verify.stdout);
  });

  it('create + activate, unknown kid, and a rotating key leaving the profile when its grace ends', async (t) => {
    const { u, cli } = await createSharedUcpHarness(t);
    const tenant = ['--tenant', String(u.h.companyId)];
    const old = (await u.h.rt.keys.signingKey(u.h.companyId)).kid;
    const created = await cli(['keys', 'create', ...tenant, '--json']);
    assert.equal(created.code, 0);
    const kid = (JSON.parse(created.stdout) as { key: { kid: string } }).key.kid;
    assert.equal((await cli(['keys', 'activate', kid, ...tenant])).code, 2, 'published < 300 s ago');
    assert.equal((await cli(['keys', 'activate', 'k-nope', ...tenant, '--force'])).code, 5);
    const activated = await cli(['keys', 'activate', kid, ...tenant, '--force', '--grace-days', '0']);
    assert.equal(activated.code, 0, activated.stderr);
    assert.deepEqual(await profileKids(u), [kid], 'no grace: the old key is no longer published');
    assert.notEqual(kid, old);
    assert.equal(await verifyWithProfile(u, await u.call(COUNT, {})), kid);
    assert.equal((await cli(['keys', 'list', '--tenant', '99'])).code, 5);
    assert.equal((await cli(['keys', 'list', '--tenant', 'two'])).code, 2);
    const text = await cli(['keys', 'list', ...tenant]);
    assert.match(text.stdout, new RegExp(`${kid}\\s+active\\s+yes`));
    assert.match(text.stdout, new RegExp(`${old}\\s+rotating\\s+no`));
  });
});
