/**
 * Human identity without a browser: tenant users, one-time enrolment links (hashed, expiring,
 * single use), the TOTP fallback (secret encrypted at rest, a code once per time step), the
 * owner's first link, the `solid users` commands, and `consent.approval_url` in pending answers.
 * Passkey ceremonies run in Chromium (test/browser/humans.test.ts).
 * Spec: spec/consent.md §human-sign-in, §approval-page.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import { consentHarness, pendingOf } from '../consent/support.ts';
import { cliHarness } from '../support/cli.ts';
import { consumeEnrolment, enrolmentTokenHash, peekEnrolment } from '../../src/identity/enrolment.ts';
import { disableUser, inviteUser, ownerEnrolmentLink } from '../../src/identity/invite.ts';
import { relyingPartyOf } from '../../src/identity/passkeys.ts';
import { startTotp, verifyTotp } from '../../src/identity/totp.ts';
import { getUser, hasCredential, listUsers } from '../../src/identity/users.ts';

function codeAt(secret: string, ms: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: ms,
  });
}

describe('tenant users and enrolment links', () => {
  it('invites a user with a hashed one-time link that expires and works once', async (t) => {
    const h = await consentHarness(t);
    const now = () => new Date(h.clock.ms);
    const { user, link } = await inviteUser(
      h.rt.store,
      { company_id: h.companyId, name: 'Jane Ruiz', role: 'admin' },
      undefined,
      now(),
    );
    assert.equal(user.status, 'invited');
    assert.ok(user.user_id > 4, 'a new person never takes the user id of existing API keys');
    assert.match(link.token, /^enr1_[A-Za-z0-9_-]{43}$/);
    const stored = await h.rt.store.read((q) =>
      q.all<Record<string, unknown>>('SELECT * FROM enrolment_links'),
    );
    assert.equal(stored.length, 1);
    assert.equal(stored[0]!.token_hash, enrolmentTokenHash(link.token));
    assert.ok(!JSON.stringify(stored).includes(link.token), 'the token itself is not stored');
    const audit = await h.lastAudit({ action_type: 'users.invite' });
    assert.ok(!JSON.stringify(audit).includes(link.token), 'the token is in no audit row');

    assert.equal((await h.rt.store.read((q) => peekEnrolment(q, link.token, now())))?.user.name, 'Jane Ruiz');
    assert.equal(
      await h.rt.store.read((q) =>
        peekEnrolment(q, link.token.slice(0, -1) + (link.token.endsWith('A') ? 'B' : 'A'), now()),
      ),
      undefined,
    );
    assert.equal(await h.rt.store.write((tx) => consumeEnrolment(tx, link.token, now())), true);
    assert.equal(
      await h.rt.store.write((tx) => consumeEnrolment(tx, link.token, now())),
      false,
      'single use',
    );
    assert.equal(await h.rt.store.read((q) => peekEnrolment(q, link.token, now())), undefined);

    const second = await inviteUser(
      h.rt.store,
      { company_id: h.companyId, name: 'Sam', role: 'employee' },
      undefined,
      now(),
    );
    h.clock.ms += 24 * 3600 * 1000;
    assert.equal(
      await h.rt.store.read((q) => peekEnrolment(q, second.link.token, now())),
      undefined,
      'expired',
    );
    assert.equal(await h.rt.store.write((tx) => consumeEnrolment(tx, second.link.token, now())), false);
  });

  it('a disabled user cannot enrol from a live link', async (t) => {
    const h = await consentHarness(t);
    const now = new Date(h.clock.ms);
    const { user, link } = await inviteUser(
      h.rt.store,
      { company_id: h.companyId, name: 'Al', role: 'employee' },
      undefined,
      now,
    );
    assert.equal(await disableUser(h.rt.store, h.companyId, user.user_id, undefined, now), true);
    assert.equal(await h.rt.store.read((q) => peekEnrolment(q, link.token, now)), undefined);
    assert.equal((await h.lastAudit({ action_type: 'users.disable' })).status, 'completed');
  });

  it("the owner's link: made for the owner key's user while they have no credential", async (t) => {
    const h = await consentHarness(t);
    const now = () => new Date(h.clock.ms);
    const first = await ownerEnrolmentLink(h.rt.store, h.companyId, now());
    assert.ok(first !== undefined);
    assert.equal(first.user.user_id, 1, 'the user of the owner API key');
    assert.equal(first.user.role, 'owner');
    const again = await ownerEnrolmentLink(h.rt.store, h.companyId, now());
    assert.notEqual(again!.link.token, first.link.token, 'a fresh link each start');
    // The owner enrols with TOTP: no more links.
    const started = await h.rt.store.write((tx) => startTotp(tx, h.rt.secrets, first.user, 'Main Co', now()));
    assert.ok(started !== undefined);
    assert.equal(
      await h.rt.store.write((tx) =>
        verifyTotp(tx, h.rt.secrets, first.user, codeAt(started.secret, h.clock.ms), now(), true),
      ),
      true,
    );
    assert.equal(await h.rt.store.read((q) => hasCredential(q, h.companyId, 1)), true);
    assert.equal(await ownerEnrolmentLink(h.rt.store, h.companyId, now()), undefined);
  });
});

describe('TOTP fallback', () => {
  it('stores the secret encrypted, counts a code once per step, refuses wrong and unconfirmed codes', async (t) => {
    const h = await consentHarness(t);
    const now = () => new Date(h.clock.ms);
    const { user } = await inviteUser(
      h.rt.store,
      { company_id: h.companyId, name: 'Jo', role: 'owner' },
      undefined,
      now(),
    );
    const started = (await h.rt.store.write((tx) => startTotp(tx, h.rt.secrets, user, 'Main Co', now())))!;
    assert.match(started.uri, /^otpauth:\/\/totp\//);
    assert.ok(started.uri.includes(`secret=${started.secret}`));
    const row = await h.rt.store.read((q) => q.get<Record<string, unknown>>('SELECT * FROM user_totp'));
    assert.ok(!JSON.stringify(row).includes(started.secret), 'the secret is encrypted at rest');

    const code = codeAt(started.secret, h.clock.ms);
    const check = (c: string, confirming = false) =>
      h.rt.store.write((tx) => verifyTotp(tx, h.rt.secrets, user, c, now(), confirming));
    assert.equal(await check(code), false, 'an unconfirmed secret does not sign in');
    assert.equal(await check(code, true), true, 'the enrolment confirms it');
    assert.equal(await check(code), false, 'the same code again in its step: a replay');
    assert.equal(await check(code === '000000' ? '111111' : '000000'), false, 'a wrong code');
    assert.equal(await check('12345'), false, 'not six digits');
    h.clock.ms += 30_000;
    assert.equal(await check(codeAt(started.secret, h.clock.ms)), true, 'the next step counts');
    assert.equal(
      await h.rt.store.write((tx) => startTotp(tx, h.rt.secrets, user, 'Main Co', now())),
      undefined,
      'a link does not replace a confirmed secret',
    );
    const listed = await h.rt.store.read((q) => listUsers(q, h.companyId));
    assert.deepEqual(
      listed.map((u) => [u.name, u.totp, u.passkeys]),
      [['Jo', true, 0]],
    );
    assert.equal((await h.rt.store.read((q) => getUser(q, h.companyId, user.user_id)))?.status, 'invited');
  });
});

describe('passkeys: relying party', () => {
  it('takes the host name of the origin and refuses an IP address', () => {
    assert.deepEqual(relyingPartyOf('http://localhost:4400', 'Acme'), {
      origin: 'http://localhost:4400',
      rpID: 'localhost',
      rpName: 'Acme',
    });
    assert.equal(relyingPartyOf('http://127.0.0.1:4400', 'Acme'), undefined);
    assert.equal(relyingPartyOf('http://[::1]:4400', 'Acme'), undefined);
    assert.equal(relyingPartyOf('not a url', 'Acme'), undefined);
  });
});

describe('approval_url in pending answers', () => {
  it('is present when the runtime knows its public URL, and the message says a human approves there', async (t) => {
    const h = await consentHarness(t);
    const args = { invoice_id: 1, amount_cents: 100 };
    const without = pendingOf(await h.call('admin', 'charge_invoice', args));
    assert.equal(without.approval_url, undefined);
    h.rt.options.publicUrl = 'http://localhost:4400';
    const env = await h.call('admin', 'charge_invoice', { invoice_id: 2, amount_cents: 100 });
    const c = pendingOf(env);
    assert.equal(c.approval_url, `http://localhost:4400/approvals/${c.approval_id}`);
    assert.match(env.error!.message, /A human approves it at http:\/\/localhost:4400\/approvals\/apv_/);
    // A re-call with the nonce (still waiting) carries it too.
    const again = pendingOf(
      await h.call(
        'admin',
        'charge_invoice',
        { invoice_id: 2, amount_cents: 100 },
        { confirm: true, nonce: c.nonce },
      ),
    );
    assert.equal(again.approval_url, c.approval_url);
  });
});

describe('solid users', () => {
  it('invite prints a localhost link, list shows the user, disable stops them', async (t) => {
    const h = await consentHarness(t);
    const invited = await h.cli([
      'users',
      'invite',
      '--tenant',
      '2',
      '--name',
      'Jane Ruiz',
      '--role',
      'admin',
    ]);
    assert.equal(invited.code, 0, invited.stderr);
    assert.match(invited.stdout, /http:\/\/localhost:\d+\/enrol\/enr1_[A-Za-z0-9_-]{43}/);
    const listed = await h.cli(['users', 'list', '--tenant', '2', '--json']);
    const users = JSON.parse(listed.stdout) as Array<{ user_id: number; name: string; status: string }>;
    const jane = users.find((u) => u.name === 'Jane Ruiz')!;
    assert.equal(jane.status, 'invited');
    const disabled = await h.cli(['users', 'disable', String(jane.user_id), '--tenant', '2']);
    assert.equal(disabled.code, 0, disabled.stderr);
    const bad = await h.cli(['users', 'invite', '--tenant', '2', '--name', 'X', '--role', 'king']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /--role must be one of/);
  });
});

describe('solid init', () => {
  it("prints the owner's one-time enrolment link beside the owner API key", async (t) => {
    const cli = cliHarness(t);
    const r = await cli.run(['init', '--name', 'Acme', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const out = r.json<{ owner_enrolment_url: string; company_id: number }>();
    assert.match(out.owner_enrolment_url, /^http:\/\/localhost:\d+\/enrol\/enr1_[A-Za-z0-9_-]{43}$/);
    const listed = await cli.run(['users', 'list', '--json']);
    const users = JSON.parse(listed.stdout) as Array<{ user_id: number; role: string; status: string }>;
    assert.deepEqual(
      users.map((u) => [u.user_id, u.role, u.status]),
      [[1, 'owner', 'invited']],
      "the owner user is the owner API key's user",
    );
  });
});
