/**
 * The tenant setting `phrase_channel` (spec/consent.md §phrase-channel): with `human` a typed
 * phrase counts only from a channel a human types into, marked by the transport's own code
 * (Caller.phraseChannel); an agent channel is refused with phrase_channel_human (audited, nothing
 * consumed) and its pending answers do not show the phrase. `any` keeps the old behaviour.
 */
import { phraseChannelOf } from '../../src/identity/consent-predicate.ts';
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, pendingOf, type ConsentHarness } from './support.ts';
import { createHttpServer } from '../../src/transports/http/server.ts';
import { pendingPhrase } from '../../src/runtime/steps/consent.ts';
import { type DispatchOptions } from '../../src/runtime/core.ts';
import type { Envelope, Role } from '../../src/spec/types.ts';
import { validateEnvelope } from '../../src/spec/validators.ts';

const ARGS = { invoice_id: 7, amount_cents: 5000 };
const PHRASE = 'CHARGE $50.00 to invoice #7';

/** A dispatch by a human principal (a signed-in person, the operator at the terminal: src/identity). */
function asHuman(h: ConsentHarness, role: string, verb: string, args: unknown, opts?: DispatchOptions) {
  return h.rt.dispatch({ surface: 'cli', principal: h.human(role as Role) }, verb, args, opts);
}

async function approvalStatus(h: ConsentHarness, id: string): Promise<string> {
  const row = await h.rt.store.read((q) =>
    q.get<{ status: string }>('SELECT status FROM approvals WHERE approval_id = ?', [id]),
  );
  return row!.status;
}

test('any (the default): an agent channel still sees and sends the phrase', async (t) => {
  const h = await consentHarness(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  assert.equal(c.typed_phrase, PHRASE);
  assert.equal(c.phrase_channel, undefined);
  const env = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  assert.equal(env.ok, true, JSON.stringify(env));
});

test('human: an agent channel gets no phrase and is refused with the approval to use', async (t) => {
  const h = await consentHarness(t);
  await h.setSettings({ phrase_channel: 'human' });
  const pendingEnv = await h.call('admin', 'charge_invoice', ARGS);
  const c = pendingOf(pendingEnv);
  assert.equal(c.typed_phrase, undefined, 'the agent does not see the phrase');
  assert.equal(c.phrase_channel, 'human');
  assert.match(String(c.approval_id), /^apv_/);
  assert.ok(!JSON.stringify(pendingEnv).includes(PHRASE), 'the phrase is nowhere in the answer');
  assert.match(pendingEnv.error!.hint!, new RegExp(String(c.approval_id)));
  assert.match(pendingEnv.error!.hint!, /Waiting for you/);
  assert.equal(pendingPhrase(pendingEnv), PHRASE, 'in-process transport code can still show it to a human');
  assert.deepEqual(validateEnvelope(pendingEnv).errors, [], 'valid against schema/envelope.json');
  const { approval_id: _id, ...noApproval } = c;
  assert.equal(
    validateEnvelope({ ...pendingEnv, consent: noApproval }).valid,
    false,
    'withheld needs approval_id',
  );

  const refused = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  assert.equal(refused.error?.reason, 'phrase_channel_human');
  assert.match(refused.error!.hint!, new RegExp(`solid approvals approve ${String(c.approval_id)}`));
  assert.equal((refused.error as { details?: { approval_id?: string } }).details?.approval_id, c.approval_id);
  assert.ok(!JSON.stringify(refused).includes(PHRASE));
  const row = await h.lastAudit({ reason: 'phrase_channel_human' });
  assert.equal(row.status, 'denied');
  assert.equal(row.action_type, 'charge_invoice');
  assert.equal(await h.effects(), 0);
  assert.equal(await approvalStatus(h, String(c.approval_id)), 'pending', 'the approval stays pending');

  // A wrong phrase is refused the same way: no oracle on the phrase.
  const wrong = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: 'nope',
  });
  assert.equal(wrong.error?.reason, 'phrase_channel_human');

  // The nonce was not consumed: the human channel confirms with it.
  const done = await asHuman(h, 'admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  assert.equal(done.ok, true, JSON.stringify(done));
  assert.equal(await h.effects(), 1);
});

test('human: a human channel sees the phrase; a mismatch there does not repeat it', async (t) => {
  const h = await consentHarness(t);
  await h.setSettings({ phrase_channel: 'human' });
  const c = pendingOf(await asHuman(h, 'admin', 'charge_invoice', ARGS));
  assert.equal(c.typed_phrase, PHRASE);
  assert.equal(c.phrase_channel, 'human');
  const bad = await asHuman(h, 'admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE.toLowerCase(),
  });
  assert.equal(bad.error?.reason, 'phrase_mismatch');
  assert.ok(!bad.error!.hint!.includes(PHRASE));
});

test('human: approvals.approve counts only from a human channel; the agent then confirms with the nonce', async (t) => {
  const h = await consentHarness(t);
  await h.setSettings({ phrase_channel: 'human' });
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const id = String(c.approval_id);

  const listedByAgent = await h.call('owner', 'approvals.list', { approval_id: id });
  const item = (listedByAgent.result!.approvals as Array<{ typed_phrase: string | null }>)[0]!;
  assert.equal(item.typed_phrase, null, 'an agent channel does not read the phrase from the queue');
  const listedByHuman = await asHuman(h, 'owner', 'approvals.list', { approval_id: id });
  assert.equal((listedByHuman.result!.approvals as Array<{ typed_phrase: string }>)[0]!.typed_phrase, PHRASE);

  const byAgent = await h.call('owner', 'approvals.approve', { approval_id: id, typed_phrase: PHRASE });
  assert.equal(byAgent.error?.reason, 'human_required');
  assert.equal((await h.lastAudit({ action_type: 'approvals.approve' })).status, 'denied');
  assert.equal(await approvalStatus(h, id), 'pending');

  const byHuman = await asHuman(h, 'owner', 'approvals.approve', { approval_id: id, typed_phrase: PHRASE });
  assert.equal(byHuman.ok, true, JSON.stringify(byHuman));
  const done = await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce });
  assert.equal(done.ok, true, JSON.stringify(done));
  assert.notEqual(
    (await h.lastAudit({ action_type: 'charge_invoice', status: 'completed' })).approved_by,
    null,
  );
});

test('human: a rejection still wins over the channel refusal', async (t) => {
  const h = await consentHarness(t);
  await h.setSettings({ phrase_channel: 'human' });
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const rejected = await h.rt.dispatch({ surface: 'cli', principal: h.human('owner') }, 'approvals.reject', {
    approval_id: String(c.approval_id),
  });
  assert.equal(rejected.ok, true, JSON.stringify(rejected));
  const env = await h.call('admin', 'charge_invoice', ARGS, {
    confirm: true,
    nonce: c.nonce,
    typed_phrase: PHRASE,
  });
  assert.equal(env.error?.reason, 'approval_rejected');
});

test('tenant.phrase_channel_set: owner sets human (audited); loosening needs a human channel', async (t) => {
  const h = await consentHarness(t);
  const confirmAs = async (human: boolean, role: string, value: string): Promise<Envelope> => {
    const run = (opts?: DispatchOptions) =>
      human
        ? asHuman(h, role, 'tenant.phrase_channel_set', { phrase_channel: value }, opts)
        : h.call(role, 'tenant.phrase_channel_set', { phrase_channel: value }, opts);
    const first = await run();
    if (first.error?.reason !== 'dispatch_pending') return first;
    return run({ confirm: true, nonce: first.consent!.nonce });
  };
  assert.equal((await confirmAs(false, 'admin', 'human')).error?.reason, 'role_denied');
  const set = await confirmAs(false, 'owner', 'human');
  assert.equal(set.ok, true, JSON.stringify(set));
  assert.equal(set.result!.phrase_channel, 'human');
  assert.equal(set.result!.previous_phrase_channel, 'any');
  const row = await h.lastAudit({ action_type: 'tenant.phrase_channel_set', status: 'completed' });
  assert.equal(row.audit_id, set.audit_id);
  const shown = await h.call('admin', 'tenant.settings', {});
  assert.equal((shown.result!.data as { phrase_channel: string }).phrase_channel, 'human');

  const loosen = await confirmAs(false, 'owner', 'any');
  assert.equal(loosen.error?.reason, 'phrase_channel_human');
  assert.equal((await h.lastAudit({ action_type: 'tenant.phrase_channel_set' })).status, 'denied');
  // audit.revert of the tightening is a loosening too.
  const revert = await h.call('owner', 'audit.revert', { audit_id: set.audit_id });
  const revertDone =
    revert.error?.reason === 'dispatch_pending'
      ? await h.call(
          'owner',
          'audit.revert',
          { audit_id: set.audit_id },
          { confirm: true, nonce: revert.consent!.nonce },
        )
      : revert;
  assert.notEqual(revertDone.ok, true, JSON.stringify(revertDone));
  assert.equal(phraseChannelOf(await h.rt.consentSettings(h.companyId)), 'human');

  const byHuman = await confirmAs(true, 'owner', 'any');
  assert.equal(byHuman.ok, true, JSON.stringify(byHuman));
  assert.equal(phraseChannelOf(await h.rt.consentSettings(h.companyId)), 'any');
});

test('HTTP: no header, body member or arg claims the human channel', async (t) => {
  const h = await consentHarness(t);
  await h.setSettings({ phrase_channel: 'human' });
  const app = createHttpServer(h.rt, { logger: false });
  t.after(() => app.close());
  const post = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/agent/dispatch/charge_invoice',
      headers: { authorization: `Bearer ${h.keys.admin}`, 'content-type': 'application/json', ...headers },
      payload: JSON.stringify(body),
    });
    return { status: res.statusCode, env: res.json() as Envelope };
  };
  const first = await post({ args: ARGS });
  assert.equal(first.status, 202);
  assert.equal(first.env.consent!.typed_phrase, undefined);
  const nonce = first.env.consent!.nonce;
  const attempts: Array<[string, unknown, Record<string, string>?]> = [
    ['plain', { args: ARGS, confirm: true, nonce, typed_phrase: PHRASE }],
    [
      'header',
      { args: ARGS, confirm: true, nonce, typed_phrase: PHRASE },
      { 'solid-phrase-channel': 'human' },
    ],
    [
      'origin + surface header',
      { args: ARGS, confirm: true, nonce, typed_phrase: PHRASE },
      { origin: 'http://localhost', 'solid-surface': 'cli', 'x-phrase-channel': 'human' },
    ],
    ['body member', { args: ARGS, confirm: true, nonce, typed_phrase: PHRASE, phrase_channel: 'human' }],
    ['body camelCase', { args: ARGS, confirm: true, nonce, typed_phrase: PHRASE, phraseChannel: 'human' }],
    ['arg', { args: { ...ARGS, phrase_channel: 'human' }, confirm: true, nonce, typed_phrase: PHRASE }],
  ];
  for (const [label, body, headers] of attempts) {
    const { status, env } = await post(body, headers);
    assert.notEqual(env.ok, true, `${label}: ${JSON.stringify(env)}`);
    assert.ok(status >= 400, `${label}: ${status}`);
  }
  assert.equal(await h.effects(), 0);
  const plain = await post({ args: ARGS, confirm: true, nonce, typed_phrase: PHRASE });
  assert.equal(plain.status, 403);
  assert.equal(plain.env.error?.reason, 'phrase_channel_human');
});
