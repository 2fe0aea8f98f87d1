/**
 * The demo's integrations category (src/connectors/payments/demo.ts): in sandbox mode a tenant
 * without a provider key gets a sandbox one in its vault (never replacing the owner's), and a
 * charge goes through the in-process sandbox provider and is refunded on revert; with a real
 * provider URL nothing is seeded.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestRuntime } from '../support/runtime.ts';
import { consented } from '../support/counter-verbs.ts';
import { dispatchAs } from '../support/keyed.ts';
import { installPack } from '../../src/runtime/pack.ts';
import { KNOWN_PACKS } from '../../src/packs.ts';
import { seedSandboxCredential } from '../../src/connectors/payments/demo.ts';
import { listVaultSecrets, readVaultSecret, setVaultSecret } from '../../src/runtime/vault/vault.ts';

async function until(check: () => Promise<boolean>, ms = 15_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

it('sandbox mode: a sandbox key for tenants without one, a charge through the sandbox, refunded on revert', async (t) => {
  const h = await createTestRuntime(t, { outbox: { baseDelayMs: 20, maxDelayMs: 80, pollIntervalMs: 100 } });
  await installPack(h.rt, await KNOWN_PACKS.integrations!());
  await h.rt.store.write((tx) =>
    setVaultSecret(tx, h.rt.secrets, {
      company_id: h.otherCompanyId,
      name: 'payments.api_key',
      secret: 'sk_live_the_owners_own_key_1234',
      actor: undefined,
      now: h.rt.clock(),
    }),
  );
  assert.deepEqual(
    await seedSandboxCredential(h.rt, { SOLID_PAYMENTS_PROVIDER_URL: 'https://api.example.com/' }),
    [],
  );
  const seeded = await seedSandboxCredential(h.rt, {});
  assert.ok(seeded.includes(h.companyId) && !seeded.includes(h.otherCompanyId));
  assert.match(await readVaultSecret(h.rt, h.companyId, 'payments.api_key'), /^sk_test_sandbox_/);
  assert.equal(
    await readVaultSecret(h.rt, h.otherCompanyId, 'payments.api_key'),
    'sk_live_the_owners_own_key_1234',
  );
  assert.deepEqual(await seedSandboxCredential(h.rt, {}), [], 'once');
  assert.equal((await h.rt.store.read((q) => listVaultSecrets(q, h.companyId)))[0]!.version, 1);

  const env = await consented(h, h.keys.admin, 'integrations.charge', {
    customer: 'cus_demo',
    amount_cents: 4200,
    currency: 'usd',
  });
  assert.equal(env.ok, true, JSON.stringify(env.error));
  const ref = (env.result as { charge_ref: string }).charge_ref;
  const get = async () =>
    (
      (
        await dispatchAs(h.rt, { apiKey: h.keys.read_only, surface: 'cli' }, 'integrations.charge_get', {
          charge_ref: ref,
        })
      ).result as {
        data: { status: string; provider_charge_id: string | null; refund: { state: string } | null };
      }
    ).data;
  assert.ok(await until(async () => (await get()).status === 'succeeded'));
  assert.match((await get()).provider_charge_id ?? '', /^ch_/);
  const reverted = await consented(h, h.keys.admin, 'audit.revert', { audit_id: env.audit_id });
  assert.equal(reverted.ok, true, JSON.stringify(reverted.error));
  assert.ok(await until(async () => (await get()).refund?.state === 'refunded'));
});
