/**
 * The human-only setters, built by one factory (src/verbs/human-setting.ts): for each of
 * tenant.audit_retention_set, tenant.time_zone_set, tenant.approval_ttl_set and
 * tenant.gate_rules_set, an agent holding the owner's API key is refused `human_required`
 * (audited, nothing changed) on the set and on the revert of a human's set; the signed-in owner
 * sets it and undoes it. spec/consent.md §channels.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import type { Envelope, Principal } from '../../src/spec/types.ts';
import { humanPrincipal, onChannel } from '../../src/identity/principal.ts';
import { consentHarness, expectDenied, pendingOf, type ConsentHarness } from '../consent/support.ts';

/** Each setter with arguments that change its setting, and the settings member it writes. */
const SETTERS: Array<{ verb: string; args: Record<string, unknown>; member: string }> = [
  { verb: 'tenant.audit_retention_set', args: { archive_after_days: 400 }, member: 'audit_retention_days' },
  { verb: 'tenant.time_zone_set', args: { time_zone: 'Europe/Berlin' }, member: 'time_zone' },
  {
    verb: 'tenant.approval_ttl_set',
    args: { consent_class: 'WRITE_FINANCIAL', minutes: 60 },
    member: 'approval_ttl_minutes',
  },
  {
    verb: 'tenant.gate_rules_set',
    args: {
      rules: [
        {
          id: 'big',
          verb: 'charge_invoice',
          when: { pointer: '/amount_cents', op: 'gt', value: 50_000 },
          raise_to: 'IRREVERSIBLE',
        },
      ],
    },
    member: 'gate_rules',
  },
];

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

async function confirmAs(h: ConsentHarness, p: Principal, verb: string, args: unknown): Promise<Envelope> {
  const caller = { surface: 'http' as const, principal: p };
  const pre = await h.rt.dispatch(caller, verb, args);
  return h.rt.dispatch(caller, verb, args, { confirm: true, nonce: pendingOf(pre).nonce });
}

/** The agent with the owner's API key: preflight, then confirm with the nonce. */
async function confirmAsAgent(h: ConsentHarness, verb: string, args: unknown): Promise<Envelope> {
  const pre = await h.call('owner', verb, args);
  return h.call('owner', verb, args, { confirm: true, nonce: pendingOf(pre).nonce });
}

async function member(h: ConsentHarness, name: string): Promise<unknown> {
  h.rt.tenants.invalidate();
  return ((await h.rt.tenants.get(h.companyId))!.settings as Record<string, unknown>)[name];
}

for (const s of SETTERS)
  test(`${s.verb}: an agent's owner key is refused on the set and on the revert; a human does both`, async (t) => {
    const h = await consentHarness(t);
    const before = await member(h, s.member);
    await expectDenied(h, await confirmAsAgent(h, s.verb, s.args), 'human_required', { role: 'owner' });
    assert.deepEqual(await member(h, s.member), before, 'nothing changed');

    const set = await confirmAs(h, ownerHuman(h), s.verb, s.args);
    assert.equal(set.ok, true, JSON.stringify(set.error));
    assert.notDeepEqual(await member(h, s.member), before, 'the human changed it');
    const changed = await member(h, s.member);

    const undoByAgent = await confirmAsAgent(h, 'audit.revert', { audit_id: set.audit_id });
    await expectDenied(h, undoByAgent, 'human_required');
    assert.deepEqual(await member(h, s.member), changed, 'the agent did not undo it');

    const undo = await confirmAs(h, ownerHuman(h), 'audit.revert', { audit_id: set.audit_id });
    assert.equal(undo.ok, true, JSON.stringify(undo.error));
    assert.deepEqual(await member(h, s.member), before, 'the human undid it');
  });
