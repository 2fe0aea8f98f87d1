/**
 * Conditional gates (issue 35, "What to build" 5): owner rules that raise a verb's gate by its
 * arguments are set by a human only, shown in the catalogue (verbs.list `conditional_gates`,
 * valid against the discovery shape's schema) and named in the pending answer (`raised_by`).
 * spec/consent.md §conditional-gates.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import type { Envelope, Principal } from '../../src/spec/types.ts';
import { humanPrincipal, onChannel } from '../../src/identity/principal.ts';
import { validateShapeOutput } from '../../src/spec/validators.ts';
import { consentHarness, expectDenied, pendingOf, type ConsentHarness } from './support.ts';

const RULE = {
  id: 'big_charges',
  verb: 'charge_invoice',
  when: { pointer: '/amount_cents', op: 'gt', value: 50_000 },
  raise_to: 'IRREVERSIBLE',
  role_floor: 'owner',
} as const;

/** The owner, signed in as a human on the dashboard. */
function ownerHuman(h: ConsentHarness): Principal {
  return onChannel(
    humanPrincipal(
      { company_id: h.companyId, user_id: 1, role: 'owner', tier: 'professional', agent_type: 'dashboard' },
      { user_name: 'Olive Owner' },
    ),
    'dashboard',
    'dashboard',
  );
}

/** A confirmation-gated call by a human: preflight, then confirm with the nonce. */
async function confirmAsHuman(
  h: ConsentHarness,
  p: Principal,
  verb: string,
  args: unknown,
): Promise<Envelope> {
  const caller = { surface: 'http' as const, principal: p };
  const pre = await h.rt.dispatch(caller, verb, args);
  const nonce = pendingOf(pre).nonce;
  return h.rt.dispatch(caller, verb, args, { confirm: true, nonce });
}

async function gatesListed(h: ConsentHarness): Promise<Array<{ description: string }> | undefined> {
  const env = await h.call('employee', 'verbs.list', {});
  assert.equal(env.ok, true, JSON.stringify(env));
  const v = validateShapeOutput('discovery', env.result);
  assert.equal(v.valid, true, JSON.stringify(v));
  return env.result!.conditional_gates as Array<{ description: string }> | undefined;
}

test('conditional gates: set by a human, shown in the catalogue and in the pending answer', async (t) => {
  const h = await consentHarness(t);
  assert.equal(await gatesListed(h), undefined, 'no rules, no conditional_gates member');

  // An agent holding the owner's key cannot set a rule (nor loosen one later).
  const pre = await h.call('owner', 'tenant.gate_rules_set', { rules: [RULE] });
  const byAgent = await h.call(
    'owner',
    'tenant.gate_rules_set',
    { rules: [RULE] },
    { confirm: true, nonce: pendingOf(pre).nonce },
  );
  await expectDenied(h, byAgent, 'human_required');

  const set = await confirmAsHuman(h, ownerHuman(h), 'tenant.gate_rules_set', { rules: [RULE] });
  assert.equal(set.ok, true, JSON.stringify(set));

  // The catalogue states the declared gate in the VerbRecord and the owner's rule beside it.
  const gates = await gatesListed(h);
  assert.deepEqual(gates, [
    {
      verb: 'charge_invoice',
      rule_id: 'big_charges',
      raise_to: 'IRREVERSIBLE',
      role_floor: 'owner',
      description: 'rule big_charges (/amount_cents > 50000 → IRREVERSIBLE, owner)',
    },
  ]);
  const onlyReceipts = await h.call('employee', 'verbs.list', { shape: 'discovery' });
  assert.equal(onlyReceipts.result!.conditional_gates, undefined, 'rules of verbs not listed are left out');

  // A small charge keeps its declared gate; a big one is raised and says by which rule.
  const small = pendingOf(await h.call('admin', 'charge_invoice', { invoice_id: 7, amount_cents: 5_000 }));
  assert.equal(small.class, 'WRITE_FINANCIAL');
  assert.equal(small.raised_by, undefined);
  const bigArgs = { invoice_id: 7, amount_cents: 90_000 };
  await expectDenied(h, await h.call('admin', 'charge_invoice', bigArgs), 'role_denied');
  const big = pendingOf(await h.call('owner', 'charge_invoice', bigArgs));
  assert.equal(big.class, 'IRREVERSIBLE');
  assert.deepEqual(big.raised_by, [{ rule_id: 'big_charges', description: gates![0]!.description }]);
});
