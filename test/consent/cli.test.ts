/**
 * The consent gates through the CLI (issue 3 §8 and "Bad input and attacks"), in-process with
 * captured output on a temp-dir database: `--confirm`, `--phrase`, `--nonce`, the TTY prompt, every
 * attack (denied with the right reason and exit code, nothing executed, the denial audited), and
 * `solid approvals …` / `solid tenant …`.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { consentHarness, pendingOf, type ConsentHarness } from './support.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { ADMIN, humanPrompt, OWNER } from '../support/terminal-human.ts';

const ARGS = { invoice_id: 4242, amount_cents: 5000, card_token: 'tok_secret' };
const REDACTED = { ...ARGS, card_token: '[REDACTED]' };
const PHRASE = 'CHARGE $50.00 to invoice #4242';

/** A harness whose clock is the wall clock at its start (the CLI's runtime uses the real clock). */
function realTimeHarness(t: Parameters<typeof consentHarness>[0]) {
  return consentHarness(t, { start: new Date().toISOString() });
}

async function dispatchCli(
  h: ConsentHarness,
  role: string,
  verb: string,
  args: unknown,
  flags: string[] = [],
  opts: { tty?: boolean; prompt?: (q: string) => Promise<string> } = {},
) {
  const key = role === 'other_owner' ? h.otherOwnerKey : (h.keys as Record<string, string>)[role]!;
  const r = await h.cli(
    [
      'agent',
      'dispatch',
      verb,
      '--args',
      typeof args === 'string' ? args : JSON.stringify(args),
      '--json',
      ...flags,
    ],
    { apiKey: key, ...opts },
  );
  return { ...r, env: r.stdout === '' ? undefined : (JSON.parse(r.stdout) as Envelope) };
}

/** The CLI answered a denial: exit code, reason, and the audit row (denied, reason, role, args). */
async function expectCliDenied(
  h: ConsentHarness,
  r: { code: number; env?: Envelope },
  reason: string,
  exit: number,
  role: string,
  args?: Record<string, unknown>,
) {
  assert.equal(r.env?.error?.reason, reason, JSON.stringify(r.env));
  assert.equal(r.code, exit);
  const rows = await h.rt.store.read((q) =>
    q.all<Record<string, unknown>>(
      'SELECT status, reason, role, request_data FROM audit_log WHERE audit_id = ?',
      [r.env!.audit_id],
    ),
  );
  assert.equal(rows.length, 1, 'the denial has its audit row');
  assert.equal(rows[0]!.status, 'denied');
  assert.equal(rows[0]!.reason, reason);
  assert.equal(rows[0]!.role, role);
  if (args !== undefined) assert.deepEqual(JSON.parse(rows[0]!.request_data as string), args);
}

test('cli: WRITE_REVERSIBLE without --confirm prints the pending envelope (exit 4); with --confirm it runs', async (t) => {
  const h = await realTimeHarness(t);
  const args = { contact_id: 7, note: 'hello' };
  const pending = await dispatchCli(h, 'employee', 'ct.note_update', args);
  assert.equal(pending.code, 4);
  assert.equal(pendingOf(pending.env!).gate, 'confirmation');
  assert.equal(await h.effects(), 0);
  const done = await dispatchCli(h, 'employee', 'ct.note_update', args, ['--confirm']);
  assert.equal(done.code, 0, done.stdout + done.stderr);
  assert.equal(done.env!.ok, true);
  assert.equal(await h.effects('ct.note_update'), 1);
  // human output names the phrase-free confirmation and the nonce
  const human = await h.cli(['agent', 'dispatch', 'ct.note_update', '--args', JSON.stringify(args)], {
    apiKey: h.keys.employee,
  });
  assert.equal(human.code, 4);
  assert.match(human.stderr, /dispatch_pending/);
  assert.match(human.stderr, /consent: WRITE_REVERSIBLE \(confirmation\)/);
  assert.match(human.stderr, /nonce: +n1\./);
});

test('cli: WRITE_FINANCIAL with --confirm --phrase runs; --confirm without a phrase and no terminal prints pending (exit 4) and runs nothing', async (t) => {
  const h = await realTimeHarness(t);
  const noPhrase = await dispatchCli(h, 'admin', 'charge_invoice', ARGS, ['--confirm']);
  assert.equal(noPhrase.code, 4);
  assert.equal(pendingOf(noPhrase.env!).typed_phrase, PHRASE);
  assert.equal(await h.effects(), 0);
  const ok = await dispatchCli(h, 'admin', 'charge_invoice', ARGS, ['--confirm', '--phrase', PHRASE]);
  assert.equal(ok.code, 0, ok.stdout);
  assert.equal(await h.effects('charge_invoice'), 1);
  const row = await h.lastAudit({ action_type: 'charge_invoice', status: 'completed' });
  assert.deepEqual(row.request_data, REDACTED);
});

test('cli: on a terminal the phrase is prompted for, showing it verbatim; a mistyped answer is phrase_mismatch', async (t) => {
  const h = await realTimeHarness(t);
  const asked: string[] = [];
  const r = await h.cli(
    ['agent', 'dispatch', 'charge_invoice', '--args', JSON.stringify(ARGS), '--confirm'],
    {
      apiKey: h.keys.admin,
      tty: true,
      prompt: await humanPrompt(h.rt, h.companyId, ADMIN, (q) => {
        asked.push(q);
        return PHRASE;
      }),
    },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(asked.length, 1);
  assert.match(r.stderr, /To consent, type exactly: {2}CHARGE \$50\.00 to invoice #4242/);
  assert.equal(await h.effects(), 1);
  const bad = await h.cli(
    [
      'agent',
      'dispatch',
      'charge_invoice',
      '--args',
      JSON.stringify({ ...ARGS, invoice_id: 1 }),
      '--confirm',
    ],
    {
      apiKey: h.keys.admin,
      tty: true,
      prompt: await humanPrompt(h.rt, h.companyId, ADMIN, () => 'charge $50.00 to invoice #1'),
    },
  );
  assert.equal(bad.code, 3);
  assert.match(bad.stderr, /phrase_mismatch/);
  assert.equal(await h.effects(), 1);
});

test('cli attack: args changed between preflight and confirm → nonce_invalid (exit 3)', async (t) => {
  const h = await realTimeHarness(t);
  const c = pendingOf((await dispatchCli(h, 'admin', 'charge_invoice', ARGS)).env!);
  const changed = { ...ARGS, amount_cents: 500000 };
  const r = await dispatchCli(h, 'admin', 'charge_invoice', changed, [
    '--nonce',
    c.nonce,
    '--phrase',
    'CHARGE $5,000.00 to invoice #4242',
  ]);
  await expectCliDenied(h, r, 'nonce_invalid', 3, 'admin', { ...changed, card_token: '[REDACTED]' });
  assert.equal(await h.effects(), 0);
});

test('cli attack: nonce from another tenant or another user → nonce_invalid', async (t) => {
  const h = await realTimeHarness(t);
  const foreign = pendingOf((await dispatchCli(h, 'other_owner', 'charge_invoice', ARGS)).env!);
  await expectCliDenied(
    h,
    await dispatchCli(h, 'owner', 'charge_invoice', ARGS, ['--nonce', foreign.nonce, '--phrase', PHRASE]),
    'nonce_invalid',
    3,
    'owner',
    REDACTED,
  );
  const owners = pendingOf((await dispatchCli(h, 'owner', 'charge_invoice', ARGS)).env!);
  await expectCliDenied(
    h,
    await dispatchCli(h, 'admin', 'charge_invoice', ARGS, ['--nonce', owners.nonce, '--phrase', PHRASE]),
    'nonce_invalid',
    3,
    'admin',
    REDACTED,
  );
  assert.equal(await h.effects(), 0);
});

test('cli attack: nonce reused → nonce_replayed, executed once', async (t) => {
  const h = await realTimeHarness(t);
  const c = pendingOf((await dispatchCli(h, 'admin', 'charge_invoice', ARGS)).env!);
  assert.equal(
    (await dispatchCli(h, 'admin', 'charge_invoice', ARGS, ['--nonce', c.nonce, '--phrase', PHRASE])).code,
    0,
  );
  await expectCliDenied(
    h,
    await dispatchCli(h, 'admin', 'charge_invoice', ARGS, ['--nonce', c.nonce, '--phrase', PHRASE]),
    'nonce_replayed',
    3,
    'admin',
    REDACTED,
  );
  assert.equal(await h.effects(), 1);
});

test('cli attack: nonce after 300 s → nonce_expired', async (t) => {
  const h = await realTimeHarness(t);
  h.clock.ms = Date.now() - 301_000; // preflight 301 s ago
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  await expectCliDenied(
    h,
    await dispatchCli(h, 'admin', 'charge_invoice', ARGS, ['--nonce', c.nonce, '--phrase', PHRASE]),
    'nonce_expired',
    3,
    'admin',
    REDACTED,
  );
  assert.equal(await h.effects(), 0);
});

test('cli attack: phrase with other case, extra spaces, look-alike letters, NFD → phrase_mismatch', async (t) => {
  const h = await realTimeHarness(t);
  const c = pendingOf((await dispatchCli(h, 'admin', 'charge_invoice', ARGS)).env!);
  for (const typed of [
    'charge $50.00 to invoice #4242',
    'CHARGE $50.00  to invoice #4242',
    'CHARGE $50.00 to invoice #4242 ',
    'CHARGE $50.00 to inv\u043eice #4242',
    '\u0421HARGE $50.00 to invoice #4242',
  ]) {
    await expectCliDenied(
      h,
      await dispatchCli(h, 'admin', 'charge_invoice', ARGS, ['--nonce', c.nonce, '--phrase', typed]),
      'phrase_mismatch',
      3,
      'admin',
      REDACTED,
    );
  }
  const refund = { charge_id: 'ch_1', amount_cents: 100, customer_name: 'Ren\u00e9e' };
  const rc = pendingOf((await dispatchCli(h, 'admin', 'ct.refund', refund)).env!);
  await expectCliDenied(
    h,
    await dispatchCli(h, 'admin', 'ct.refund', refund, [
      '--nonce',
      rc.nonce,
      '--phrase',
      rc.typed_phrase!.normalize('NFD'),
    ]),
    'phrase_mismatch',
    3,
    'admin',
    refund,
  );
  assert.equal(await h.effects(), 0);
});

test('cli attack: confirm without a nonce → nonce_required', async (t) => {
  const h = await realTimeHarness(t);
  await expectCliDenied(
    h,
    await dispatchCli(h, 'admin', 'charge_invoice', ARGS, ['--nonce', '', '--phrase', PHRASE]),
    'nonce_required',
    3,
    'admin',
    REDACTED,
  );
  await expectCliDenied(
    h,
    await dispatchCli(h, 'employee', 'ct.note_update', { contact_id: 1, note: 'n' }, ['--nonce', '']),
    'nonce_required',
    3,
    'employee',
  );
  assert.equal(await h.effects(), 0);
});

test('cli attack: role below the floor with a valid nonce and phrase → role_denied', async (t) => {
  const h = await realTimeHarness(t);
  const c = pendingOf((await dispatchCli(h, 'admin', 'charge_invoice', ARGS)).env!);
  await expectCliDenied(
    h,
    await dispatchCli(h, 'employee', 'charge_invoice', ARGS, ['--nonce', c.nonce, '--phrase', PHRASE]),
    'role_denied',
    3,
    'employee',
    REDACTED,
  );
  await expectCliDenied(
    h,
    await dispatchCli(h, 'admin', 'gdpr_delete_contact', { contact_id: 1 }, [
      '--confirm',
      '--phrase',
      'DELETE CONTACT 1 PERMANENTLY',
    ]),
    'role_denied',
    3,
    'admin',
    { contact_id: 1 },
  );
  assert.equal(await h.effects(), 0);
});

test('cli attack: blocked name with the owner role and a phrase → blocked_verb, audited as blocked', async (t) => {
  const h = await realTimeHarness(t);
  for (const name of ['customer_delete', 'employee_terminate']) {
    const r = await dispatchCli(h, 'owner', name, { id: 42 }, ['--confirm', '--phrase', `DELETE ${name}`]);
    await expectCliDenied(h, r, 'blocked_verb', 3, 'owner', { id: 42 });
  }
  assert.equal(await h.effects(), 0);
});

test('cli attack: company_id smuggled inside --args → identity_override (exit 2)', async (t) => {
  const h = await realTimeHarness(t);
  const r = await dispatchCli(h, 'owner', 'charge_invoice', { ...ARGS, company_id: 3 }, [
    '--confirm',
    '--phrase',
    PHRASE,
  ]);
  await expectCliDenied(h, r, 'identity_override', 2, 'owner', { ...REDACTED, company_id: 3 });
  assert.equal(await h.effects(), 0);
});

test('cli: solid approvals list / approve --phrase / the agent re-call with --nonce runs with approved_by', async (t) => {
  const h = await realTimeHarness(t);
  const c = pendingOf((await dispatchCli(h, 'admin', 'charge_invoice', ARGS)).env!);
  const list = await h.cli(['approvals', 'list'], { apiKey: h.keys.owner });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, new RegExp(`${c.approval_id} +charge_invoice +pending`));
  assert.match(list.stdout, /CHARGE \$50\.00 to invoice #4242/);
  assert.match(list.stdout, /1 pending, 0 expired, 0 approved and not yet used\./);
  const json = await h.cli(['approvals', 'list', '--json'], { apiKey: h.keys.owner });
  assert.equal((JSON.parse(json.stdout) as Envelope).result!.entity_type, 'approval_queue');

  // A --phrase flag is what a script passes: an agent never approves (spec/consent.md §channels).
  const scripted = await h.cli(['approvals', 'approve', c.approval_id!, '--phrase', PHRASE], {
    apiKey: h.keys.owner,
  });
  assert.equal(scripted.code, 3, scripted.stderr);
  assert.match(scripted.stdout + scripted.stderr, /human_required/);
  const approve = await h.cli(['approvals', 'approve', c.approval_id!], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: await humanPrompt(h.rt, h.companyId, OWNER, () => PHRASE),
  });
  assert.equal(approve.code, 0, approve.stderr);
  assert.match(approve.stdout, /The requesting agent may now call charge_invoice again/);
  const done = await dispatchCli(h, 'admin', 'charge_invoice', ARGS, ['--nonce', c.nonce]);
  assert.equal(done.code, 0, done.stdout);
  assert.equal((await h.lastAudit({ action_type: 'charge_invoice', status: 'completed' })).approved_by, 1);
  assert.equal(await h.effects(), 1);
});

test('cli: approvals approve prompts for the phrase on a terminal; without one a script is refused human_required (exit 3, audited)', async (t) => {
  const h = await realTimeHarness(t);
  const c = pendingOf((await dispatchCli(h, 'admin', 'charge_invoice', ARGS)).env!);
  const noTty = await h.cli(['approvals', 'approve', c.approval_id!], { apiKey: h.keys.owner });
  assert.equal(noTty.code, 3);
  assert.match(noTty.stderr, /human_required/);
  assert.match(
    noTty.stderr,
    new RegExp(`\`solid approvals approve ${c.approval_id}\` typed at a terminal on the server`),
  );
  const refused = await h.audit({ action_type: 'approvals.approve' });
  assert.deepEqual(
    refused.map((r) => [r.status, r.reason]),
    [['denied', 'human_required']],
  );

  const wrong = await h.cli(['approvals', 'approve', c.approval_id!], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: await humanPrompt(h.rt, h.companyId, OWNER, () => 'CHARGE $50.00 to invoice #4243'),
  });
  assert.equal(wrong.code, 3);
  assert.match(wrong.stderr, /phrase_mismatch/);
  const asked: string[] = [];
  const right = await h.cli(['approvals', 'approve', c.approval_id!], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: await humanPrompt(h.rt, h.companyId, OWNER, (q) => {
      asked.push(q);
      return PHRASE;
    }),
  });
  assert.equal(right.code, 0, right.stderr);
  assert.match(right.stderr, /To approve, type exactly: {2}CHARGE \$50\.00 to invoice #4242/);
  assert.equal(asked.length, 1);
  // an admin cannot approve an IRREVERSIBLE request even with the phrase
  const del = pendingOf((await dispatchCli(h, 'owner', 'gdpr_delete_contact', { contact_id: 9 })).env!);
  const byAdmin = await h.cli(
    ['approvals', 'approve', del.approval_id!, '--phrase', 'DELETE CONTACT 9 PERMANENTLY', '--json'],
    { apiKey: h.keys.admin },
  );
  assert.equal(byAdmin.code, 3);
  assert.equal((JSON.parse(byAdmin.stdout) as Envelope).error!.reason, 'role_denied');
});

test('cli: approvals reject --note; the agent re-call answers approval_rejected', async (t) => {
  const h = await realTimeHarness(t);
  const c = pendingOf((await dispatchCli(h, 'admin', 'charge_invoice', ARGS)).env!);
  const rej = await h.cli(['approvals', 'reject', c.approval_id!, '--note', 'not today', '--json'], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: await humanPrompt(h.rt, h.companyId, OWNER, () => ''),
  });
  assert.equal(rej.code, 0, rej.stdout);
  assert.equal((JSON.parse(rej.stdout) as Envelope).result!.note, 'not today');
  await expectCliDenied(
    h,
    await dispatchCli(h, 'admin', 'charge_invoice', ARGS, ['--nonce', c.nonce]),
    'approval_rejected',
    3,
    'admin',
    REDACTED,
  );
  const again = await h.cli(['approvals', 'reject', c.approval_id!], { apiKey: h.keys.owner });
  assert.equal(again.code, 6);
  assert.match(again.stderr, /approval_not_pending/);
  const missing = await h.cli(['approvals', 'reject', 'apv_missing'], { apiKey: h.keys.owner });
  assert.equal(missing.code, 5);
  assert.equal(await h.effects(), 0);
});

test('cli: solid tenant caps set / blocklist add / remove — owner only, confirmed by the command, audited; show lists them', async (t) => {
  const h = await realTimeHarness(t);
  const byAdmin = await h.cli(
    ['tenant', 'caps', 'set', '--class', 'WRITE_FINANCIAL', '--limit', '5', '--json'],
    { apiKey: h.keys.admin },
  );
  assert.equal(byAdmin.code, 3);
  assert.equal((JSON.parse(byAdmin.stdout) as Envelope).error!.reason, 'role_denied');
  const set = await h.cli(['tenant', 'caps', 'set', '--class', 'WRITE_FINANCIAL', '--limit', '5'], {
    apiKey: h.keys.owner,
  });
  assert.equal(set.code, 0, set.stderr);
  const row = await h.lastAudit({ action_type: 'tenant.caps_set', status: 'completed' });
  assert.deepEqual(row.request_data, { consent_class: 'WRITE_FINANCIAL', limit: 5 });
  assert.equal(row.role, 'owner');
  assert.equal(
    (
      await h.cli(['tenant', 'caps', 'set', '--class', 'WRITE_FINANCIAL', '--limit', 'lots'], {
        apiKey: h.keys.owner,
      })
    ).code,
    2,
  );
  assert.equal(
    (await h.cli(['tenant', 'caps', 'set', '--class', 'READ', '--limit', '5'], { apiKey: h.keys.owner }))
      .code,
    2,
  );

  assert.equal(
    (await h.cli(['tenant', 'blocklist', 'add', 'charge_invoice'], { apiKey: h.keys.owner })).code,
    0,
  );
  const show = await h.cli(['tenant', 'show'], { apiKey: h.keys.owner });
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, /WRITE_FINANCIAL +5 +0 +5 /);
  assert.match(show.stdout, /WRITE_REVERSIBLE +100 \(default\)/);
  assert.match(show.stdout, /blocked \(this tenant\): charge_invoice/);
  h.rt.tenants.invalidate();
  await expectCliDenied(
    h,
    await dispatchCli(h, 'owner', 'charge_invoice', ARGS, ['--confirm', '--phrase', PHRASE]),
    'blocked_verb',
    3,
    'owner',
    REDACTED,
  );
  const byAdminBlock = await h.cli(['tenant', 'blocklist', 'remove', 'charge_invoice'], {
    apiKey: h.keys.admin,
  });
  assert.equal(byAdminBlock.code, 3);
  // Unblocking loosens a consent setting: a script (no terminal) is refused, the owner at the
  // terminal of the database may (spec/consent.md §channels).
  const scripted = await h.cli(['tenant', 'blocklist', 'remove', 'charge_invoice', '--json'], {
    apiKey: h.keys.owner,
  });
  assert.equal((JSON.parse(scripted.stdout) as Envelope).error!.reason, 'human_required');
  assert.equal(
    (
      await h.cli(['tenant', 'blocklist', 'remove', 'charge_invoice'], {
        apiKey: h.keys.owner,
        tty: true,
        prompt: await humanPrompt(h.rt, h.companyId, OWNER, () => ''),
      })
    ).code,
    0,
  );
  assert.equal(
    (await h.cli(['tenant', 'blocklist', 'remove', 'customer_delete'], { apiKey: h.keys.owner })).code,
    2,
  );
  assert.equal(
    (await dispatchCli(h, 'owner', 'charge_invoice', ARGS, ['--confirm', '--phrase', PHRASE])).code,
    0,
  );
});
