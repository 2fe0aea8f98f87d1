/**
 * The plain retry (issue 33 item 2): a caller that cannot send a nonce (an MCP client with no
 * consent `_meta`: OpenAI Agents, the Vercel AI SDK, LangChain) completes a gated write by
 * calling again with the same arguments — after a human approved it (typed phrases; confirmations
 * under confirmation_channel `human`), or, for a confirmation the agent may give (`any`), while
 * the pending answer's nonce lives. Exactly once, bound to the key, the verb and the canonical
 * arguments. spec/consent.md §plain-retry §channels
 */
import { describe, it } from 'node:test';
import { strict as assert } from 'node:assert';
import type { Envelope } from '../../src/spec/types.ts';
import type { DispatchOptions } from '../../src/runtime/core.ts';
import { parseProvenance } from '../../src/runtime/consent/provenance.ts';
import { consentHarness, expectDenied, pendingOf, type ConsentHarness } from './support.ts';
import { humanPrompt, OWNER } from '../support/terminal-human.ts';
import { dispatchAs } from '../support/keyed.ts';

const CHARGE = { invoice_id: 4242, amount_cents: 5000 };
const PHRASE = 'CHARGE $50.00 to invoice #4242';
const NOTE = { contact_id: 7, note: 'called back' };
/** What the MCP transport passes for a tools/call with no consent `_meta`. */
const PLAIN: DispatchOptions = { plain_retry: true };

/** The owner's agent key calling as an MCP client without `_meta` would. */
function retry(h: ConsentHarness, verb: string, args: unknown, key?: string): Promise<Envelope> {
  return key === undefined
    ? h.call('owner', verb, args, PLAIN)
    : dispatchAs(h.rt, { surface: 'mcp_stdio', apiKey: key }, verb, args, PLAIN);
}

async function consentOf(h: ConsentHarness, auditId: number) {
  const row = await h.rt.store.read((q) =>
    q.get<{ consent: string | null }>('SELECT consent FROM audit_log WHERE audit_id = ?', [auditId]),
  );
  return parseProvenance(row?.consent);
}

async function approvalStatus(h: ConsentHarness, approvalId: string): Promise<string | undefined> {
  const row = await h.rt.store.read((q) =>
    q.get<{ status: string }>('SELECT status FROM approvals WHERE approval_id = ?', [approvalId]),
  );
  return row?.status;
}

describe('plain retry of a typed-phrase gate', () => {
  it('waits while pending; after a human approves, the identical retry runs exactly once', async (t) => {
    const h = await consentHarness(t);
    const first = pendingOf(await retry(h, 'charge_invoice', CHARGE));
    assert.deepEqual(first.retry, { after: 'human_approves', same_arguments: true });
    const approvalId = String(first.approval_id);
    // Not approved yet: the same pending request again (same approval, same nonce id), nothing runs.
    const waiting = pendingOf(await retry(h, 'charge_invoice', CHARGE));
    assert.equal(waiting.approval_id, approvalId);
    assert.equal(waiting.nonce.split('.')[2], first.nonce.split('.')[2], 'the same nonce payload');
    assert.equal(await h.effects('charge_invoice'), 0);
    const approved = await h.callAsHuman('owner', 'approvals.approve', {
      approval_id: approvalId,
      typed_phrase: PHRASE,
    });
    assert.equal(approved.ok, true, JSON.stringify(approved));
    const done = await retry(h, 'charge_invoice', CHARGE);
    assert.equal(done.ok, true, JSON.stringify(done));
    assert.equal(await h.effects('charge_invoice'), 1);
    const provenance = await consentOf(h, done.audit_id!);
    assert.equal(provenance?.user_id, 1, 'the human approver is named');
    assert.equal(provenance?.approval_id, approvalId);
    assert.equal(await approvalStatus(h, approvalId), 'consumed');
    // Used: the next identical call is a new request, not a second charge.
    const again = pendingOf(await retry(h, 'charge_invoice', CHARGE));
    assert.notEqual(again.approval_id, approvalId);
    assert.equal(await h.effects('charge_invoice'), 1);
  });

  it('a retry with other arguments or from another key does not use the approval', async (t) => {
    const h = await consentHarness(t);
    const first = pendingOf(await retry(h, 'charge_invoice', CHARGE));
    const approvalId = String(first.approval_id);
    await h.callAsHuman('owner', 'approvals.approve', { approval_id: approvalId, typed_phrase: PHRASE });
    const other = pendingOf(await retry(h, 'charge_invoice', { ...CHARGE, amount_cents: 5001 }));
    assert.notEqual(other.approval_id, approvalId);
    // The same user's second key: another credential, so another request.
    const secondKey = await h.rt.createApiKey({
      company_id: h.companyId,
      user_id: 1,
      role: 'owner',
      agent_type: 'test',
    });
    const fromOtherKey = pendingOf(await retry(h, 'charge_invoice', CHARGE, secondKey));
    assert.notEqual(fromOtherKey.approval_id, approvalId);
    assert.equal(await h.effects('charge_invoice'), 0);
    assert.equal(
      await approvalStatus(h, approvalId),
      'approved',
      'the approval is still there for its caller',
    );
    const done = await retry(h, 'charge_invoice', CHARGE);
    assert.equal(done.ok, true, JSON.stringify(done));
    assert.equal(await h.effects('charge_invoice'), 1);
  });

  it('after a rejection the retry answers approval_rejected; after the retry window, a fresh request', async (t) => {
    const h = await consentHarness(t);
    const first = pendingOf(await retry(h, 'charge_invoice', CHARGE));
    const rejected = await h.callAsHuman('owner', 'approvals.reject', {
      approval_id: String(first.approval_id),
      note: 'not this month',
    });
    assert.equal(rejected.ok, true, JSON.stringify(rejected));
    await expectDenied(h, await retry(h, 'charge_invoice', CHARGE), 'approval_rejected');

    const other = { invoice_id: 4243, amount_cents: 100 };
    const second = pendingOf(await retry(h, 'charge_invoice', other));
    await h.callAsHuman('owner', 'approvals.approve', {
      approval_id: String(second.approval_id),
      typed_phrase: 'CHARGE $1.00 to invoice #4243',
    });
    h.clock.ms += 301_000; // past the retry window (the nonce TTL from the decision)
    const late = pendingOf(await retry(h, 'charge_invoice', other));
    assert.notEqual(late.approval_id, second.approval_id);
    assert.equal(await h.effects('charge_invoice'), 0);
  });

  it('two identical retries at once: one charge, the other refused cleanly', async (t) => {
    const h = await consentHarness(t);
    const first = pendingOf(await retry(h, 'charge_invoice', CHARGE));
    await h.callAsHuman('owner', 'approvals.approve', {
      approval_id: String(first.approval_id),
      typed_phrase: PHRASE,
    });
    const both = await Promise.all([retry(h, 'charge_invoice', CHARGE), retry(h, 'charge_invoice', CHARGE)]);
    assert.equal(both.filter((e) => e.ok).length, 1, JSON.stringify(both));
    const loser = both.find((e) => !e.ok)!;
    assert.ok(
      ['nonce_replayed', 'dispatch_pending'].includes(loser.error!.reason),
      JSON.stringify(loser.error),
    );
    assert.equal(await h.effects('charge_invoice'), 1);
  });

  it('the agent holding the credential cannot complete a phrase gate by itself (phrase_channel human)', async (t) => {
    const h = await consentHarness(t);
    await h.setSettings({ phrase_channel: 'human' });
    const first = pendingOf(await retry(h, 'charge_invoice', CHARGE));
    const approvalId = String(first.approval_id);
    // Every path an agent's key has: retrying, confirming with the nonce, typing the (guessable)
    // phrase, approving, loosening the tenant's rule.
    for (let i = 0; i < 3; i++) pendingOf(await retry(h, 'charge_invoice', CHARGE));
    pendingOf(await h.call('owner', 'charge_invoice', CHARGE, { confirm: true, nonce: first.nonce }));
    await expectDenied(
      h,
      await h.call('owner', 'charge_invoice', CHARGE, {
        confirm: true,
        nonce: first.nonce,
        typed_phrase: PHRASE,
      }),
      'phrase_channel_human',
    );
    await expectDenied(
      h,
      await h.call('owner', 'approvals.approve', { approval_id: approvalId, typed_phrase: PHRASE }),
      'human_required',
    );
    const loosen = pendingOf(await h.call('owner', 'tenant.phrase_channel_set', { phrase_channel: 'any' }));
    await expectDenied(
      h,
      await h.call(
        'owner',
        'tenant.phrase_channel_set',
        { phrase_channel: 'any' },
        { confirm: true, nonce: loosen.nonce },
      ),
      'phrase_channel_human',
    );
    pendingOf(await retry(h, 'charge_invoice', CHARGE));
    assert.equal(await h.effects('charge_invoice'), 0);
    assert.equal(await approvalStatus(h, approvalId), 'pending');
  });
});

describe('plain retry of a confirmation gate', () => {
  it("confirmation_channel any: the identical retry is the agent's confirmation, once", async (t) => {
    const h = await consentHarness(t);
    const first = pendingOf(await retry(h, 'ct.note_update', NOTE));
    assert.equal(first.gate, 'confirmation');
    assert.deepEqual(first.retry, { after: 'user_confirms', same_arguments: true });
    // Nobody has to decide it: not in the human's queue (still readable by its id).
    const queue = await h.callAsHuman('owner', 'approvals.list', {});
    assert.deepEqual(queue.result!.approvals, []);
    assert.equal((queue.result!.data as { pending: number }).pending, 0);
    const byId = await h.callAsHuman('owner', 'approvals.list', { approval_id: String(first.approval_id) });
    assert.equal((byId.result!.approvals as unknown[]).length, 1);
    const done = await retry(h, 'ct.note_update', NOTE);
    assert.equal(done.ok, true, JSON.stringify(done));
    const provenance = await consentOf(h, done.audit_id!);
    assert.equal(provenance?.act, 'confirmation');
    assert.equal(provenance?.user_id, 'agent', 'the receipt says the agent confirmed');
    pendingOf(await retry(h, 'ct.note_update', NOTE));
    // Other arguments are their own request.
    pendingOf(await retry(h, 'ct.note_update', { ...NOTE, note: 'other' }));
    assert.equal(await h.effects('ct.note_update'), 1);
  });

  it('confirmed with the nonce instead (a host that sends _meta), the request is used: the next retry asks again', async (t) => {
    const h = await consentHarness(t);
    const first = pendingOf(await retry(h, 'ct.note_update', NOTE));
    const viaNonce = await h.call('owner', 'ct.note_update', NOTE, { confirm: true, nonce: first.nonce });
    assert.equal(viaNonce.ok, true, JSON.stringify(viaNonce));
    assert.equal(await approvalStatus(h, String(first.approval_id)), 'consumed');
    const next = pendingOf(await retry(h, 'ct.note_update', NOTE));
    assert.notEqual(next.approval_id, first.approval_id);
    // A human's rejection of a request wins over the agent's confirm with its nonce.
    await h.callAsHuman('owner', 'approvals.reject', { approval_id: String(next.approval_id) });
    await expectDenied(
      h,
      await h.call('owner', 'ct.note_update', NOTE, { confirm: true, nonce: next.nonce }),
      'approval_rejected',
    );
    assert.equal(await h.effects('ct.note_update'), 1);
  });

  it('a confirmation retry after the nonce expired, or over a transport that sends nonces, does not run', async (t) => {
    const h = await consentHarness(t);
    pendingOf(await retry(h, 'ct.note_update', NOTE));
    h.clock.ms += 301_000;
    pendingOf(await retry(h, 'ct.note_update', NOTE));
    // HTTP/CLI callers send confirm and the nonce: a bare second call there stays a preflight.
    pendingOf(await h.call('owner', 'ct.note_update', NOTE));
    pendingOf(await h.call('owner', 'ct.note_update', NOTE));
    assert.equal(await h.effects('ct.note_update'), 0);
  });

  it("confirmation_channel human: neither the agent's confirm nor its retry counts until a human approves", async (t) => {
    const h = await consentHarness(t);
    await h.setSettings({ confirmation_channel: 'human' });
    const first = pendingOf(await h.call('owner', 'ct.note_update', NOTE));
    assert.ok(first.approval_id !== undefined, 'a human has a request to approve');
    const queue = await h.callAsHuman('owner', 'approvals.list', {});
    assert.deepEqual(
      (queue.result!.approvals as Array<{ approval_id: string }>).map((a) => a.approval_id),
      [first.approval_id],
    );
    pendingOf(await h.call('owner', 'ct.note_update', NOTE, { confirm: true, nonce: first.nonce }));
    const viaRetry = pendingOf(await retry(h, 'ct.note_update', NOTE));
    assert.deepEqual(viaRetry.retry, { after: 'human_approves', same_arguments: true });
    assert.equal(viaRetry.approval_id, first.approval_id, 'the retry waits on the same request');
    await expectDenied(
      h,
      await h.call('owner', 'approvals.approve', { approval_id: String(viaRetry.approval_id) }),
      'human_required',
    );
    assert.equal(await h.effects('ct.note_update'), 0);
    const approved = await h.callAsHuman('owner', 'approvals.approve', {
      approval_id: String(viaRetry.approval_id),
    });
    assert.equal(approved.ok, true, JSON.stringify(approved));
    const done = await retry(h, 'ct.note_update', NOTE);
    assert.equal(done.ok, true, JSON.stringify(done));
    const provenance = await consentOf(h, done.audit_id!);
    assert.equal(provenance?.act, 'confirmation');
    assert.equal(provenance?.user_id, 1);
    assert.equal(provenance?.channel, 'dashboard');
    // One approval, one execution, whichever path uses it: the nonce of that request is spent.
    await expectDenied(
      h,
      await h.call('owner', 'ct.note_update', NOTE, { confirm: true, nonce: first.nonce }),
      'nonce_replayed',
    );
    assert.equal(await h.effects('ct.note_update'), 1);
  });

  it('a human at the dashboard still confirms directly under confirmation_channel human', async (t) => {
    const h = await consentHarness(t);
    await h.setSettings({ confirmation_channel: 'human' });
    const first = pendingOf(await h.callAsHuman('owner', 'ct.note_update', NOTE));
    const done = await h.callAsHuman('owner', 'ct.note_update', NOTE, { confirm: true, nonce: first.nonce });
    assert.equal(done.ok, true, JSON.stringify(done));
  });
});

describe('the operator at the terminal', () => {
  it('sets confirmation-channel human, sees it, and approves a confirmation with yes', async (t) => {
    // The CLI runs on the real clock: so does this runtime.
    const h = await consentHarness(t, { start: new Date().toISOString() });
    const set = await h.cli(['tenant', 'confirmation-channel', 'human', '--json'], { apiKey: h.keys.owner });
    assert.equal(set.code, 0, `${set.stdout}${set.stderr}`);
    const shown = await h.cli(['tenant', 'show'], { apiKey: h.keys.owner });
    assert.match(shown.stdout, /confirmations count from: a human only/);
    h.rt.tenants.invalidate();
    const asked = pendingOf(await retry(h, 'ct.note_update', NOTE));
    const id = String(asked.approval_id);
    const no = await h.cli(['approvals', 'approve', id], {
      apiKey: h.keys.owner,
      tty: true,
      prompt: await humanPrompt(h.rt, h.companyId, OWNER, () => 'no'),
    });
    assert.notEqual(no.code, 0);
    pendingOf(await retry(h, 'ct.note_update', NOTE));
    const yes = await h.cli(['approvals', 'approve', id], {
      apiKey: h.keys.owner,
      tty: true,
      prompt: await humanPrompt(h.rt, h.companyId, OWNER, () => 'yes'),
    });
    assert.equal(yes.code, 0, `${yes.stdout}${yes.stderr}`);
    const done = await retry(h, 'ct.note_update', NOTE);
    assert.equal(done.ok, true, JSON.stringify(done));
    const provenance = await consentOf(h, done.audit_id!);
    assert.equal(provenance?.channel, 'operator_terminal');
    assert.equal(provenance?.user_id, OWNER.user_id, 'the person whose code was typed is named');
  });
});

describe('tenant.confirmation_channel_set', () => {
  it('an agent may tighten; loosening needs a human; tenant.settings shows it; revert restores it', async (t) => {
    const h = await consentHarness(t);
    const confirmSet = async (who: 'agent' | 'human', channel: 'any' | 'human'): Promise<Envelope> => {
      const call = who === 'agent' ? h.call.bind(h, 'owner') : h.callAsHuman.bind(h, 'owner');
      const args = { confirmation_channel: channel };
      const p = await call('tenant.confirmation_channel_set', args);
      if (p.ok || p.error?.reason !== 'dispatch_pending') return p;
      return call('tenant.confirmation_channel_set', args, { confirm: true, nonce: p.consent!.nonce });
    };
    const tightened = await confirmSet('agent', 'human');
    assert.equal(tightened.ok, true, JSON.stringify(tightened));
    const shown = await h.call('owner', 'tenant.settings', {});
    assert.equal((shown.result!.data as { confirmation_channel: string }).confirmation_channel, 'human');
    // The agent's own confirm does not count any more, so its attempt to loosen waits for a human…
    pendingOf(await confirmSet('agent', 'any'));
    // …and even approved by a human, the agent's loosening is refused (a human must loosen).
    const loosenAsk = pendingOf(
      await h.call('owner', 'tenant.confirmation_channel_set', { confirmation_channel: 'any' }),
    );
    await h.callAsHuman('owner', 'approvals.approve', { approval_id: String(loosenAsk.approval_id) });
    await expectDenied(
      h,
      await h.call(
        'owner',
        'tenant.confirmation_channel_set',
        { confirmation_channel: 'any' },
        { confirm: true, nonce: loosenAsk.nonce },
      ),
      'human_required',
    );
    // A human loosens; reverting that (a tightening) is open to the agent's key.
    const loosened = await confirmSet('human', 'any');
    assert.equal(loosened.ok, true, JSON.stringify(loosened));
    const shownAny = await h.call('owner', 'tenant.settings', {});
    assert.equal((shownAny.result!.data as { confirmation_channel: string }).confirmation_channel, 'any');
    const revertAsk = pendingOf(await h.call('owner', 'audit.revert', { audit_id: loosened.audit_id }));
    const reverted = await h.call(
      'owner',
      'audit.revert',
      { audit_id: loosened.audit_id },
      { confirm: true, nonce: revertAsk.nonce },
    );
    assert.equal(reverted.ok, true, JSON.stringify(reverted));
    const back = await h.call('owner', 'tenant.settings', {});
    assert.equal((back.result!.data as { confirmation_channel: string }).confirmation_channel, 'human');
  });
});
