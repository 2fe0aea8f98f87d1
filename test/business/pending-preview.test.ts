/**
 * A gated write whose preview finds the action impossible answers that reason (not_found, a domain
 * rule) instead of asking a human to consent to it. Spec: spec/consent.md §pending.
 */
import { pendingPhrase } from '../../src/runtime/steps/consent.ts';
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { openDemoRuntime } from '../support/demo.ts';
import { dispatchAs } from '../support/keyed.ts';

it("charging an unknown or another tenant's invoice answers not_found, with no nonce and no approval row", async (t) => {
  const d = await openDemoRuntime(t);
  const approvalsBefore = await d.rt.store.read((q) =>
    q.get<{ n: number }>('SELECT COUNT(*) AS n FROM approvals'),
  );
  const env = await dispatchAs(d.rt, { surface: 'cli', apiKey: d.keys.owner }, 'charge_invoice', {
    invoice_number: 999999,
    amount_cents: 5000,
  });
  assert.equal(env.ok, false);
  assert.equal(env.error?.reason, 'not_found', JSON.stringify(env));
  assert.equal(env.consent, undefined);
  const approvalsAfter = await d.rt.store.read((q) =>
    q.get<{ n: number }>('SELECT COUNT(*) AS n FROM approvals'),
  );
  assert.equal(approvalsAfter!.n, approvalsBefore!.n);
  const ok = await dispatchAs(d.rt, { surface: 'cli', apiKey: d.keys.owner }, 'charge_invoice', {
    invoice_number: 4304,
    amount_cents: 5000,
  });
  assert.equal(ok.error?.reason, 'dispatch_pending', 'a possible charge still asks for consent');
  assert.equal(pendingPhrase(ok), 'CHARGE $50.00 to invoice #4304');
});
