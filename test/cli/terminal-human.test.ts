/**
 * A terminal is not a person (issue: bypasses B1, B2). A script the agent drives at a
 * pseudo-terminal reads every prompt and types every phrase back; what it cannot type is the
 * one-time code of an enrolled user's authenticator app. So: without the code nothing a human
 * decides happens at the CLI (approve, reject, loosen a consent setting, mint a human by an
 * enrolment link); with it, the act is that user's and the provenance names them.
 * Spec: spec/consent.md §channels, §phrase-channel (its threat model); src/identity/terminal-human.ts.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { consentHarness, pendingOf, type ConsentHarness } from '../consent/support.ts';
import { parseProvenance } from '../../src/runtime/consent/provenance.ts';
import { ownerEnrolmentLink } from '../../src/identity/invite.ts';
import { ADMIN, enrolTotp, humanPrompt, OWNER, promptWithCode, totpCode } from '../support/terminal-human.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PACK = fileURLToPath(new URL('../consent/pack.ts', import.meta.url));
const SOLID = ['--import', 'tsx', '--import', PACK, 'bin/solid.js'];
const ARGS = { invoice_id: 4242, amount_cents: 5000 };
const PHRASE = 'CHARGE $50.00 to invoice #4242';

const realTime = (t: Parameters<typeof consentHarness>[0]) =>
  consentHarness(t, { start: new Date().toISOString() });

async function approvalStatus(h: ConsentHarness, id: string): Promise<string | undefined> {
  const row = await h.rt.store.read((q) =>
    q.get<{ status: string }>('SELECT status FROM approvals WHERE approval_id = ?', [id]),
  );
  return row?.status;
}

/** What a script at a pty types: the phrase it just read, for every question (it has no code). */
const scriptAtPty = (asked: string[]) => async (q: string) => {
  asked.push(q);
  return /yes/.test(q) ? 'yes' : PHRASE;
};

test('a script at a terminal types the phrase but no code: approve is refused, nothing decided, audited', async (t) => {
  const h = await realTime(t);
  await enrolTotp(h.rt, h.companyId, OWNER);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const asked: string[] = [];
  const r = await h.cli(['approvals', 'approve', String(c.approval_id)], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: scriptAtPty(asked),
  });
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /signin_failed/);
  assert.match(asked[0] ?? '', /One-time code of Olivia Owner/);
  assert.ok(!`${r.stdout}${r.stderr}`.includes(PHRASE), 'the phrase is not shown before the code');
  assert.equal(await approvalStatus(h, String(c.approval_id)), 'pending');
  const denied = await h.audit({ action_type: 'terminal.human_factor' });
  assert.deepEqual(
    denied.map((row) => [row.status, row.reason]),
    [['denied', 'signin_failed']],
  );
  // The agent's retry still waits: no charge.
  pendingOf(await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce }));
  assert.equal(await h.effects('charge_invoice'), 0);
});

test('with the code of an enrolled user the same approve counts, and the provenance names that user', async (t) => {
  const h = await realTime(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const r = await h.cli(['approvals', 'approve', String(c.approval_id)], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: await humanPrompt(h.rt, h.companyId, OWNER, () => PHRASE),
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /✓ Olivia Owner \(user 1, owner\) at this terminal/);
  const done = await h.call('admin', 'charge_invoice', ARGS, { confirm: true, nonce: c.nonce });
  assert.equal(done.ok, true, JSON.stringify(done));
  const row = await h.rt.store.read((q) =>
    q.get<{ consent: string | null }>('SELECT consent FROM audit_log WHERE audit_id = ?', [done.audit_id]),
  );
  const provenance = parseProvenance(row?.consent);
  assert.equal(provenance?.user_id, OWNER.user_id);
  assert.equal(provenance?.user_name, OWNER.name);
  assert.equal(provenance?.channel, 'operator_terminal');
});

test("the code's user must meet the floor: an admin's code does not approve an owner-floor request", async (t) => {
  const h = await realTime(t);
  const del = pendingOf(await h.call('owner', 'gdpr_delete_contact', { contact_id: 9 }));
  // The owner's key opened the database; the person who typed a code is the admin.
  const r = await h.cli(['approvals', 'approve', String(del.approval_id), '--json'], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: await humanPrompt(h.rt, h.companyId, ADMIN, () => 'DELETE CONTACT 9 PERMANENTLY'),
  });
  assert.notEqual(r.code, 0);
  assert.equal(await approvalStatus(h, String(del.approval_id)), 'pending');
});

test('a code works once: typed again (a replay), the terminal is refused', async (t) => {
  const h = await realTime(t);
  const owner = await enrolTotp(h.rt, h.companyId, OWNER);
  const code = totpCode(owner.secret);
  const first = await h.cli(['tenant', 'confirmation-channel', 'human'], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: async (q) => (/One-time code/.test(q) ? code : ''),
  });
  assert.equal(first.code, 0, first.stderr);
  const again = await h.cli(['tenant', 'confirmation-channel', 'any'], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: async (q) => (/One-time code/.test(q) ? code : ''),
  });
  assert.equal(again.code, 3, again.stderr);
  assert.match(again.stderr, /signin_failed/);
  h.rt.tenants.invalidate();
  assert.equal((await h.rt.consentSettings(h.companyId)).confirmation_channel, 'human');
});

test('loosening a consent setting at a terminal without the code is refused; with it, it counts', async (t) => {
  const h = await realTime(t);
  await h.setSettings({ phrase_channel: 'human', confirmation_channel: 'human' });
  const owner = await enrolTotp(h.rt, h.companyId, OWNER);
  for (const argv of [
    ['tenant', 'confirmation-channel', 'any'],
    ['tenant', 'phrase-channel', 'any'],
  ]) {
    const r = await h.cli(argv, { apiKey: h.keys.owner, tty: true, prompt: scriptAtPty([]) });
    assert.equal(r.code, 3, `${argv.join(' ')}: ${r.stderr}`);
  }
  h.rt.tenants.invalidate();
  const kept = await h.rt.consentSettings(h.companyId);
  assert.equal(kept.confirmation_channel, 'human');
  assert.equal(kept.phrase_channel, 'human');
  const ok = await h.cli(['tenant', 'confirmation-channel', 'any'], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: promptWithCode(h.rt, h.companyId, owner, () => ''),
  });
  assert.equal(ok.code, 0, ok.stderr);
  h.rt.tenants.invalidate();
  assert.equal((await h.rt.consentSettings(h.companyId)).confirmation_channel, 'any');
});

test('a passkey-only tenant: the terminal answers human_required, pointing to the dashboard or TOTP', async (t) => {
  const h = await realTime(t);
  const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
  const r = await h.cli(['approvals', 'approve', String(c.approval_id)], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: scriptAtPty([]),
  });
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /human_required/);
  assert.match(r.stderr, /dashboard or on the approval page with your passkey/);
  assert.match(r.stderr, /enrol an authenticator app/);
  assert.equal(await approvalStatus(h, String(c.approval_id)), 'pending');
});

test('after the bootstrap every enrolment link (users link, users invite at any role) needs an owner/admin code', async (t) => {
  const h = await realTime(t);
  const tenant = ['--tenant', String(h.companyId)];
  // Bootstrap: no one has a credential yet, the operator prints the owner's first link.
  const first = await h.cli(['users', 'invite', '--name', 'Olivia Owner', '--role', 'owner', ...tenant]);
  assert.equal(first.code, 0, first.stderr);
  const ownerId = Number(/user (\d+), owner/.exec(first.stdout)?.[1]);
  const owner = await enrolTotp(h.rt, h.companyId, { user_id: ownerId, role: 'owner' });
  const bare = await h.cli(['users', 'link', String(ownerId), ...tenant]);
  assert.equal(bare.code, 3, bare.stdout + bare.stderr);
  assert.match(bare.stderr, /human_required/);
  assert.doesNotMatch(bare.stdout, /\/enrol\//);
  const guessed = await h.cli(['users', 'link', String(ownerId), ...tenant], {
    tty: true,
    prompt: async () => '000000',
  });
  assert.notEqual(guessed.code, 0);
  assert.doesNotMatch(guessed.stdout, /\/enrol\//);
  // Minting a new person is the same act at every role: an employee is a human too (with its own
  // session an agent would confirm the employee-floor writes a tenant reserves to people).
  const owner2 = await h.cli(['users', 'invite', '--name', 'Mallory', '--role', 'owner', ...tenant]);
  assert.equal(owner2.code, 3, owner2.stdout);
  const employee = await h.cli(['users', 'invite', '--name', 'Erin', '--role', 'employee', ...tenant]);
  assert.equal(employee.code, 3, employee.stdout);
  assert.match(employee.stderr, /human_required/);
  assert.doesNotMatch(employee.stdout, /\/enrol\//);
  const vouchedEmployee = await h.cli(
    ['users', 'invite', '--name', 'Erin', '--role', 'employee', ...tenant],
    {
      tty: true,
      prompt: promptWithCode(h.rt, h.companyId, owner, () => ''),
    },
  );
  assert.equal(vouchedEmployee.code, 0, vouchedEmployee.stderr);
  assert.match(vouchedEmployee.stdout, /\/enrol\//);
  const vouched = await h.cli(['users', 'link', String(ownerId), ...tenant], {
    tty: true,
    prompt: promptWithCode(h.rt, h.companyId, owner, () => ''),
  });
  assert.equal(vouched.code, 0, vouched.stderr);
  assert.match(vouched.stdout, /\/enrol\//);
  const rows = await h.audit({ action_type: 'users.enrolment_link' });
  assert.equal(rows.at(-1)?.user_id, ownerId, 'the audit names the person who vouched');
});

const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

test(
  'B2 on a real pty (`script -qfec`): the script reads the prompt and types back, and is refused',
  { timeout: 120_000, skip: hasScript ? false : 'util-linux `script` (a pty) is not installed' },
  async (t) => {
    const h = await realTime(t);
    await enrolTotp(h.rt, h.companyId, OWNER);
    const c = pendingOf(await h.call('admin', 'charge_invoice', ARGS));
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const command = [
      process.execPath,
      ...SOLID,
      '--db',
      h.dbPath,
      'approvals',
      'approve',
      String(c.approval_id),
    ]
      .map(quote)
      .join(' ');
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, SOLID_LOG_LEVEL: 'silent', SOLID_API_KEY: h.keys.owner },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    t.after(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let out = '';
    let typed = 0;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      // The agent's script answers each prompt it sees with what it has: the phrase.
      const prompts = (out.match(/: $|> $/gm) ?? []).length;
      if (prompts > typed) {
        typed = prompts;
        child.stdin.write(`${PHRASE}\r`);
      }
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    assert.equal(code, 3, out);
    assert.match(out, /One-time code of Olivia Owner/);
    assert.match(out, /signin_failed/);
    assert.equal(await approvalStatus(h, String(c.approval_id)), 'pending');
    assert.equal(await h.effects('charge_invoice'), 0);
  },
);

test("the owner's first link (init, serve) ends with the bootstrap: once anyone enrolled, none is printed", async (t) => {
  const h = await realTime(t);
  assert.notEqual(await ownerEnrolmentLink(h.rt.store, h.companyId, new Date()), undefined);
  // An admin enrolled, the owner not yet: a printed owner link would be a way in for the agent.
  await enrolTotp(h.rt, h.companyId, ADMIN);
  assert.equal(await ownerEnrolmentLink(h.rt.store, h.companyId, new Date()), undefined);
});

test('no authenticator enrolled: `agent dispatch --confirm` at a terminal stays the key (an agent), loosening is refused', async (t) => {
  const h = await realTime(t);
  await h.setSettings({ phrase_channel: 'human', confirmation_channel: 'any' });
  const confirmed = await h.cli(
    [
      'agent',
      'dispatch',
      'ct.note_update',
      '--args',
      JSON.stringify({ contact_id: 7, note: 'x' }),
      '--confirm',
    ],
    { apiKey: h.keys.owner, tty: true, prompt: scriptAtPty([]) },
  );
  assert.equal(confirmed.code, 0, confirmed.stderr);
  assert.match(confirmed.stderr, /this terminal acts as the API key \(an agent\)/);
  assert.match(confirmed.stdout, /channel +agent\n/);
  const loosen = await h.cli(['tenant', 'phrase-channel', 'any'], {
    apiKey: h.keys.owner,
    tty: true,
    prompt: scriptAtPty([]),
  });
  assert.equal(loosen.code, 3, loosen.stderr);
  h.rt.tenants.invalidate();
  assert.equal((await h.rt.consentSettings(h.companyId)).phrase_channel, 'human');
});
