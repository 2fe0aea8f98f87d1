/**
 * The reference payments connector (src/connectors/payments, spec/vault.md §connectors) against a
 * fake Stripe-like provider that fails, times out and answers late: a charge waits for a human's
 * typed phrase, leaves through the outbox with one provider idempotency key derived from the
 * verb's, and is made exactly once whatever the faults; every revert is refunded through the
 * provider; a call that keeps failing is retried with backoff and ends a visible dead letter.
 * The credential comes from the vault and never shows. Both engines.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { consented } from '../support/counter-verbs.ts';
import { dispatchAs } from '../support/keyed.ts';
import {
  chargesPerKey,
  fakePaymentsProvider,
  type SandboxProvider,
} from '../support/fake-payments-provider.ts';
import { installPack } from '../../src/runtime/pack.ts';
import { paymentsConnectorPack, providerIdempotencyKey } from '../../src/connectors/payments/pack.ts';
import { revokeVaultSecret, setVaultSecret } from '../../src/runtime/vault/vault.ts';
import { queueOutboxMessage } from '../../src/runtime/ledger/write/outbox.ts';
import type { Envelope } from '../../src/spec/types.ts';

const KEY = 'sk_test_fake_provider_key_7c1d';

/** Poll `check` every 20 ms until it is true or `ms` pass (a bounded wait, not a timing assertion). */
async function until(check: () => Promise<boolean>, ms = 15_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

async function setup(
  t: TestContext,
  o: { maxAttempts?: number; vault?: boolean } = {},
): Promise<{ h: TestRuntime; provider: SandboxProvider }> {
  const h = await createTestRuntime(t, {
    outbox: {
      baseDelayMs: 20,
      maxDelayMs: 80,
      pollIntervalMs: 100,
      attemptTimeoutMs: 3000,
      maxAttempts: o.maxAttempts ?? 8,
    },
  });
  const provider = await fakePaymentsProvider(t, { keys: [KEY], lateMs: 700 });
  await installPack(h.rt, paymentsConnectorPack({ baseUrl: provider.url, timeoutMs: 300 }));
  if (o.vault !== false)
    await h.rt.store.write((tx) =>
      setVaultSecret(tx, h.rt.secrets, {
        company_id: h.companyId,
        name: 'payments.api_key',
        secret: KEY,
        actor: undefined,
        now: h.rt.clock(),
      }),
    );
  return { h, provider };
}

type ChargeView = {
  status: string;
  provider_charge_id: string | null;
  provider_idempotency_key: string;
  delivery: { attempts: number; last_error: string | null };
  refund: { state: string; provider_refund_id: string | null } | null;
};

async function view(h: TestRuntime, ref: string): Promise<ChargeView> {
  const env = await dispatchAs(
    h.rt,
    { apiKey: h.keys.read_only, surface: 'cli' },
    'integrations.charge_get',
    {
      charge_ref: ref,
    },
  );
  assert.equal(env.ok, true, JSON.stringify(env.error));
  return (env.result as { data: ChargeView }).data;
}

function charge(h: TestRuntime, customer: string, cents: number, key?: string): Promise<Envelope> {
  return consented(
    h,
    h.keys.admin,
    'integrations.charge',
    { customer, amount_cents: cents, currency: 'usd' },
    key !== undefined ? { idempotency_key: key } : {},
  );
}

const refOf = (env: Envelope) => String((env.result as { charge_ref: string }).charge_ref);

it('a charge waits for the typed phrase, leaves once with the key derived from the idempotency_key; revert refunds it', async (t) => {
  const { h, provider } = await setup(t);
  const args = { customer: 'cus_ada', amount_cents: 1250, currency: 'usd' };
  // The agent's call: pending behind a typed phrase, with the preview of what it would do.
  const pending = await dispatchAs(
    h.rt,
    { apiKey: h.keys.admin, surface: 'cli' },
    'integrations.charge',
    args,
  );
  assert.equal(pending.error?.reason, 'dispatch_pending');
  assert.equal(pending.consent?.gate, 'typed_phrase');
  assert.deepEqual((pending.consent?.preview as { delta?: unknown } | undefined)?.delta, {
    charges: 1,
    charged_cents: 1250,
  });
  assert.equal(
    (await dispatchAs(h.rt, { apiKey: h.keys.employee, surface: 'cli' }, 'integrations.charge', args)).error
      ?.reason,
    'role_denied',
  );
  assert.equal(provider.requests.length, 0, 'nothing called before consent');

  const done = await charge(h, 'cus_ada', 1250, 'order-1001');
  assert.equal(done.ok, true, JSON.stringify(done.error));
  const receipt = done.result as Record<string, unknown>;
  assert.equal(
    receipt.provider_idempotency_key,
    providerIdempotencyKey(h.companyId, 'integrations.charge', 'order-1001'),
  );
  assert.equal(typeof receipt.rollback_handle, 'string');
  const ref = refOf(done);
  assert.ok(await until(async () => (await view(h, ref)).status === 'succeeded'));
  const v = await view(h, ref);
  const made = provider.charges.get(v.provider_charge_id!);
  assert.ok(made !== undefined, 'the provider id recorded is the provider charge');
  assert.equal(made.idempotency_key, receipt.provider_idempotency_key);
  assert.equal(made.amount, 1250);

  // The same idempotency key again: the stored receipt, no second call.
  const again = await charge(h, 'cus_ada', 1250, 'order-1001');
  assert.equal(again.ok, true);
  assert.equal(refOf(again), ref);
  await h.rt.deliverOutbox();
  assert.equal(provider.charges.size, 1);

  // Revert replays the inverse through the provider: a refund.
  const reverted = await consented(h, h.keys.admin, 'audit.revert', { audit_id: done.audit_id });
  assert.equal(reverted.ok, true, JSON.stringify(reverted.error));
  assert.ok(await until(async () => (await view(h, ref)).refund?.state === 'refunded'));
  assert.equal(provider.refunds.size, 1);
  assert.equal(made.refunded, true);
  assert.equal((await view(h, ref)).refund?.provider_refund_id, [...provider.refunds.keys()][0]);
  // The credential is nowhere in what an agent can read.
  const trail = await dispatchAs(h.rt, { apiKey: h.keys.owner, surface: 'cli' }, 'audit.trail', {
    limit: 100,
  });
  assert.ok(!JSON.stringify(trail).includes(KEY));
});

it('under 500s, lost successes, timeouts, late answers and duplicate deliveries: 0 double charges, every revert refunded', async (t) => {
  const { h, provider } = await setup(t);
  provider.faults.push('fail', 'fail_after', 'hang', 'late', 'fail', 'fail_after', 'late', 'hang', 'fail');
  const refs: string[] = [];
  const audits: number[] = [];
  for (let i = 0; i < 6; i++) {
    const env = await charge(h, `cus_n${i}`, 1000 + i, `order-${i}`);
    assert.equal(env.ok, true, JSON.stringify(env.error));
    refs.push(refOf(env));
    audits.push(env.audit_id!);
    // A duplicate delivery of the same charge: a second message for it, delivered at once too.
    if (i % 2 === 0)
      await h.rt.store.write((tx) =>
        queueOutboxMessage(tx, {
          companyId: h.companyId,
          kind: 'integrations.charge',
          payload: { charge_ref: refs[i]! },
          auditId: env.audit_id ?? null,
          now: h.rt.clock(),
        }),
      );
    h.rt.kickOutbox();
  }
  // Half are reverted at once, some before their charge has reached the provider.
  const reverted = new Set<string>();
  for (const i of [0, 2, 5]) {
    const r = await consented(h, h.keys.admin, 'audit.revert', { audit_id: audits[i]! });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    reverted.add(refs[i]!);
  }
  assert.ok(
    await until(async () => {
      for (const ref of refs) {
        const v = await view(h, ref);
        if (v.status !== 'succeeded') return false;
        if (reverted.has(ref) && v.refund?.state !== 'refunded') return false;
      }
      return true;
    }, 30_000),
    'every charge made and every revert refunded',
  );
  // Exactly one provider charge per charge, whatever was retried or delivered twice.
  assert.equal(provider.charges.size, refs.length);
  assert.ok(
    [...chargesPerKey(provider).values()].every((n) => n === 1),
    'no key charged twice',
  );
  for (const ref of refs) {
    const v = await view(h, ref);
    const c = provider.charges.get(v.provider_charge_id!)!;
    assert.equal(c.idempotency_key, v.provider_idempotency_key);
    assert.equal(c.refunded, reverted.has(ref), `${ref} refunded iff reverted`);
  }
  assert.equal(provider.refunds.size, reverted.size);
  // The faults were met: some calls were retried (the same key seen more than once).
  const keys = provider.requests.filter((r) => r.path === '/v1/charges').map((r) => r.key);
  assert.ok(keys.length > refs.length, 'retries happened');
  assert.ok(provider.faults.length === 0, 'every fault was served');
});

it('a call that keeps failing is retried with backoff, then dead-lettered where the owner sees it', async (t) => {
  const { h, provider } = await setup(t, { maxAttempts: 3 });
  provider.faults.push('fail', 'hang', 'fail');
  const env = await charge(h, 'cus_unlucky', 5000, 'order-dead');
  assert.equal(env.ok, true, JSON.stringify(env.error));
  const ref = refOf(env);
  const deadRow = async () =>
    h.rt.store.read((q) =>
      q.get<{ status: string; attempts: number }>(
        "SELECT status, attempts FROM outbox WHERE company_id = ? AND kind = 'integrations.charge'",
        [h.companyId],
      ),
    );
  assert.ok(await until(async () => (await deadRow())?.status === 'dead'));
  assert.equal(Number((await deadRow())!.attempts), 3);
  // Each attempt carried the same provider key; nothing was charged.
  const seen = provider.requests.filter((r) => r.path === '/v1/charges');
  assert.equal(seen.length, 3);
  assert.equal(new Set(seen.map((r) => r.key)).size, 1);
  assert.equal(provider.charges.size, 0);
  // What the owner sees: the charge still pending with its attempts and last error, and the dead letter in telemetry.
  const v = await view(h, ref);
  assert.equal(v.status, 'pending');
  assert.equal(v.delivery.attempts, 3);
  assert.match(v.delivery.last_error ?? '', /provider/);
  const telemetry = await dispatchAs(h.rt, { apiKey: h.keys.owner, surface: 'cli' }, 'system.telemetry', {});
  assert.equal(telemetry.ok, true, JSON.stringify(telemetry.error));
  const queues = (
    telemetry.result as { queues: { outbox_dead: number; dead_letters: Array<{ kind: string }> } }
  ).queues;
  assert.equal(queues.outbox_dead, 1);
  assert.equal(queues.dead_letters[0]?.kind, 'integrations.charge');
});

it('without a live vault credential nothing is sent and the error names the vault, never a key; a declined charge reverts with nothing to refund', async (t) => {
  const { h, provider } = await setup(t, { maxAttempts: 2 });
  await h.rt.store.write((tx) =>
    revokeVaultSecret(tx, {
      company_id: h.companyId,
      name: 'payments.api_key',
      actor: undefined,
      now: h.rt.clock(),
    }),
  );
  const env = await charge(h, 'cus_nokey', 900, 'order-nokey');
  assert.equal(env.ok, true, JSON.stringify(env.error));
  const ref = refOf(env);
  assert.ok(await until(async () => (await view(h, ref)).delivery.attempts >= 2));
  assert.equal(provider.requests.length, 0);
  assert.match((await view(h, ref)).delivery.last_error ?? '', /solid vault set payments\.api_key/);

  await h.rt.store.write((tx) =>
    setVaultSecret(tx, h.rt.secrets, {
      company_id: h.companyId,
      name: 'payments.api_key',
      secret: KEY,
      actor: undefined,
      now: h.rt.clock(),
    }),
  );
  const declined = await charge(h, 'cus_card_decline', 700, 'order-decline');
  const dref = refOf(declined);
  assert.ok(await until(async () => (await view(h, dref)).status === 'failed'));
  const r = await consented(h, h.keys.admin, 'audit.revert', { audit_id: declined.audit_id });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.ok(await until(async () => (await view(h, dref)).refund?.state === 'not_needed'));
  assert.equal(provider.requests.filter((x) => x.path === '/v1/refunds').length, 0);
  assert.equal(provider.charges.size, 0);
});
