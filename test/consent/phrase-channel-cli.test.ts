/**
 * The CLI under the tenant setting `phrase_channel: human` (spec/consent.md §phrase-channel): the
 * phrase typed at the terminal prompt counts; a `--phrase` flag (what a script passes) or a call
 * without a terminal does not, for `agent dispatch` and `approvals approve` alike; loosening the
 * setting needs the terminal too.
 */
import { phraseChannelOf } from '../../src/identity/consent-predicate.ts';
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, pendingOf } from './support.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { ADMIN, humanPrompt, OWNER } from '../support/terminal-human.ts';

const ARGS = { invoice_id: 4242, amount_cents: 5000 };
const PHRASE = 'CHARGE $50.00 to invoice #4242';
const human = (t: Parameters<typeof consentHarness>[0]) =>
  consentHarness(t, { start: new Date().toISOString() }).then(async (h) => {
    await h.setSettings({ phrase_channel: 'human' });
    return h;
  });
const dispatchArgv = (...flags: string[]) => [
  'agent',
  'dispatch',
  'charge_invoice',
  '--args',
  JSON.stringify(ARGS),
  ...flags,
];

test('cli human: the terminal prompt counts; --phrase is refused and nothing runs', async (t) => {
  const h = await human(t);
  const flag = await h.cli(dispatchArgv('--confirm', '--phrase', PHRASE, '--json'), {
    apiKey: h.keys.admin,
    tty: true,
  });
  const env = JSON.parse(flag.stdout) as Envelope;
  assert.equal(env.error?.reason, 'phrase_channel_human');
  assert.equal(flag.code, 3);
  assert.equal(await h.effects(), 0);
  assert.equal((await h.lastAudit({ reason: 'phrase_channel_human' })).status, 'denied');

  const noTty = await h.cli(dispatchArgv('--confirm', '--json'), { apiKey: h.keys.admin });
  const pending = JSON.parse(noTty.stdout) as Envelope;
  assert.equal(pending.error?.reason, 'dispatch_pending');
  assert.equal(pending.consent!.typed_phrase, undefined, 'no terminal: the phrase is not printed');
  assert.ok(!noTty.stdout.includes(PHRASE));

  const asked: string[] = [];
  const prompted = await h.cli(dispatchArgv('--confirm'), {
    apiKey: h.keys.admin,
    tty: true,
    prompt: await humanPrompt(h.rt, h.companyId, ADMIN, (q) => {
      asked.push(q);
      return PHRASE;
    }),
  });
  assert.equal(prompted.code, 0, prompted.stderr);
  assert.equal(asked.length, 1);
  assert.match(prompted.stderr, /To consent, type exactly: {2}CHARGE \$50\.00 to invoice #4242/);
  assert.equal(await h.effects(), 1);
});

test('cli human: approvals approve counts from the prompt, not from --phrase', async (t) => {
  const h = await human(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const id = String(c.approval_id);
  const flag = await h.cli(['approvals', 'approve', id, '--phrase', PHRASE, '--json'], {
    apiKey: h.keys.owner,
    tty: true,
  });
  assert.equal((JSON.parse(flag.stdout) as Envelope).error?.reason, 'human_required');
  const noTty = await h.cli(['approvals', 'approve', id], { apiKey: h.keys.owner });
  assert.equal(noTty.code, 3);
  assert.ok(!`${noTty.stdout}${noTty.stderr}`.includes(PHRASE), 'no terminal: the phrase is not printed');
  const list = await h.cli(['approvals', 'list'], { apiKey: h.keys.owner });
  assert.ok(!list.stdout.includes(PHRASE));
  const ok = await h.cli(['approvals', 'approve', id], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: await humanPrompt(h.rt, h.companyId, OWNER, () => PHRASE),
  });
  assert.equal(ok.code, 0, ok.stderr);
  const done = await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce });
  assert.equal(done.ok, true, JSON.stringify(done));
});

test('cli: solid tenant phrase-channel sets it (audited); back to any only at a terminal', async (t) => {
  const h = await consentHarness(t, { start: new Date().toISOString() });
  const set = await h.cli(['tenant', 'phrase-channel', 'human', '--json'], { apiKey: h.keys.owner });
  assert.equal(set.code, 0, set.stdout);
  assert.equal(phraseChannelOf(await h.rt.consentSettings(h.companyId)), 'human');
  const shown = await h.cli(['tenant', 'show'], { apiKey: h.keys.owner });
  assert.match(shown.stdout, /typed phrases count from: a human only/);
  const script = await h.cli(['tenant', 'phrase-channel', 'any', '--json'], { apiKey: h.keys.owner });
  assert.equal((JSON.parse(script.stdout) as Envelope).error?.reason, 'phrase_channel_human');
  h.rt.tenants.invalidate();
  assert.equal(phraseChannelOf(await h.rt.consentSettings(h.companyId)), 'human');
  const atTerminal = await h.cli(['tenant', 'phrase-channel', 'any'], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: await humanPrompt(h.rt, h.companyId, OWNER, () => ''),
  });
  assert.equal(atTerminal.code, 0, atTerminal.stderr + atTerminal.stdout);
  h.rt.tenants.invalidate();
  assert.equal(phraseChannelOf(await h.rt.consentSettings(h.companyId)), 'any');
  const rows = await h.audit({ action_type: 'tenant.phrase_channel_set' });
  assert.deepEqual(
    rows.map((r) => r.status),
    ['pending', 'completed', 'pending', 'denied', 'pending', 'completed'],
  );
  const bad = await h.cli(['tenant', 'phrase-channel', 'robots'], { apiKey: h.keys.owner });
  assert.equal(bad.code, 2);
});
