/**
 * A charge's refund from its receipt (issue 32 item 4): charge_invoice has no revert, and its
 * `undone_by` names issue_refund with arguments taken from the charge's signed receipt — what the
 * dashboard's receipt view offers as one gated action. The refund goes through its own gate
 * (WRITE_FINANCIAL, a typed phrase): an agent's credential — an API key, an OAuth token — can
 * never complete it, not by sending the phrase, not by approving its approval; a human can.
 * Runs on the seeded demo business (phrase_channel human, the default).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Envelope } from '../../src/spec/types.ts';
import { openDemoRuntime, type DemoRuntime } from '../support/demo.ts';
import { formatCents } from '../../src/runtime/consent/typed-phrase.ts';
import { mintTestToken, tokenPrincipal } from '../oauth/mint.ts';

function ok(env: Envelope): Envelope {
  assert.equal(env.ok, true, `${env.verb}: ${JSON.stringify(env.error)}`);
  return env;
}

/** Charge the open invoice as a human, then build the refund's arguments from its receipt. */
async function chargeAndRefundArgs(d: DemoRuntime): Promise<Record<string, unknown>> {
  const inv = d.fixtures.open_invoice;
  const charge = ok(
    await d.commit('admin', 'charge_invoice', { invoice_number: inv.number, amount_cents: 2500 }),
  );
  const receipt = (
    ok(await d.call('admin', 'audit.receipt', { audit_id: charge.audit_id })).result as {
      data: { receipt: Record<string, unknown> };
    }
  ).data.receipt;
  const by = d.rt.registry.get('charge_invoice')!.definition.undone_by!;
  assert.equal(by.verb, 'issue_refund');
  assert.equal(d.rt.registry.get(by.verb)!.consentClass, 'WRITE_FINANCIAL');
  const args = Object.fromEntries(Object.entries(by.args).map(([name, member]) => [name, receipt[member]]));
  assert.deepEqual(args, { charge_ref: receipt.charge_ref, amount_cents: 2500 });
  assert.match(String(args.charge_ref), /^ch_/);
  return args;
}

async function refunded(d: DemoRuntime, chargeRef: unknown): Promise<number> {
  const row = await d.rt.store.read((q) =>
    q.get<{ refunded_cents: unknown }>('SELECT refunded_cents FROM payments WHERE charge_ref = ?', [
      chargeRef,
    ]),
  );
  return Number(row!.refunded_cents);
}

/** An agent credential tries everything: the phrase, then approving its own approval. */
async function agentCannotRefund(
  d: DemoRuntime,
  send: (verb: string, args: Record<string, unknown>, opts?: Record<string, unknown>) => Promise<Envelope>,
  args: Record<string, unknown>,
): Promise<void> {
  const phrase = `REFUND ${formatCents(Number(args.amount_cents))} on charge ${String(args.charge_ref)}`;
  const pending = await send('issue_refund', args);
  assert.equal(pending.error?.reason, 'dispatch_pending');
  assert.equal(pending.consent?.typed_phrase, undefined, 'the agent is not shown the phrase');
  const typed = await send('issue_refund', args, {
    confirm: true,
    nonce: pending.consent!.nonce,
    typed_phrase: phrase,
  });
  assert.equal(typed.ok, false);
  assert.equal(typed.error?.reason, 'phrase_channel_human', 'a phrase an agent sends is not consent');
  const approve = await send('approvals.approve', { approval_id: pending.consent!.approval_id });
  assert.equal(approve.ok, false);
  assert.equal(approve.error?.reason, 'human_required', 'approving as an agent is refused');
  const after = await send('issue_refund', args, { confirm: true, nonce: pending.consent!.nonce });
  assert.equal(after.ok, false, 'nothing was approved, so confirming alone does not refund either');
  assert.equal(await refunded(d, args.charge_ref), 0, 'no money moved');
}

test("an admin's API key cannot complete a charge's refund; a human can", async (t) => {
  const d = await openDemoRuntime(t);
  const args = await chargeAndRefundArgs(d);
  await agentCannotRefund(d, (verb, a, opts = {}) => d.call('admin', verb, a, opts), args);
  ok(await d.commit('admin', 'issue_refund', args));
  assert.equal(await refunded(d, args.charge_ref), 2500);
});

test("an admin's OAuth token cannot complete a charge's refund", async (t) => {
  const d = await openDemoRuntime(t);
  const args = await chargeAndRefundArgs(d);
  const token = await mintTestToken(d.rt, {
    company_id: d.companyId,
    user_id: d.fixtures.admin_user_id,
    role: 'admin',
  });
  const principal = await tokenPrincipal(d.rt, token);
  assert.equal(principal.actor ?? 'agent', 'agent');
  await agentCannotRefund(
    d,
    (verb, a, opts = {}) => d.rt.dispatch({ principal, surface: 'http' }, verb, structuredClone(a), opts),
    args,
  );
});
