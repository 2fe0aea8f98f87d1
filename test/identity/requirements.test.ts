/**
 * One test per row of the credential table (src/identity/requirements.ts, spec/consent.md
 * §channels): the row's principal is built the way its transport builds it, the tenant is on the
 * product's defaults (typed phrases from humans only), and the test tries to type a phrase,
 * approve, change a consent setting and open a session. An agent row is refused each time and
 * nothing runs; a human row succeeds (the control that the attempt itself was well formed).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { consentHarness, pendingOf, type ConsentHarness } from '../consent/support.ts';
import { CREDENTIAL_REQUIREMENTS, type CredentialRequirement } from '../../src/identity/requirements.ts';
import { mayConsent } from '../../src/identity/consent-predicate.ts';
import { actingForUser, humanPrincipal, onChannel } from '../../src/identity/principal.ts';
import { verifyHumanAtTerminal } from '../../src/identity/terminal-human.ts';
import { enrolTotp, OWNER, totpCode } from '../support/terminal-human.ts';
import { SessionStore, createHumanSession } from '../../src/identity/session-store.ts';
import { VerbError } from '../../src/runtime/errors.ts';
import { mintTestToken, tokenPrincipal } from '../oauth/mint.ts';
import type { Envelope, Principal } from '../../src/spec/types.ts';

const ARGS = { invoice_id: 7, amount_cents: 5000 };
const PHRASE = 'CHARGE $50.00 to invoice #7';

/** The owner (user 1) as a person signed in: the session the sign-in routes mint. */
async function humanSession(h: ConsentHarness, sessions: SessionStore): Promise<Principal> {
  const person = humanPrincipal(
    { company_id: h.companyId, user_id: 1, role: 'owner', tier: 'professional', agent_type: 'dashboard' },
    { user_name: 'Jane Ruiz' },
  );
  const { token } = await createHumanSession(sessions, person);
  return (await sessions.lookup(token))!.principal;
}

/** The row's principal, built as its transport builds it (all as the owner, user 1). */
const PRINCIPALS: Record<string, (h: ConsentHarness, sessions: SessionStore) => Promise<Principal>> = {
  api_key: (h) => h.rt.tenants.authenticate(h.keys.owner),
  async api_key_session(h, sessions) {
    const { token } = await sessions.createForApiKey(await h.rt.tenants.authenticate(h.keys.owner));
    // What the dashboard API route does with the session's principal.
    return onChannel((await sessions.lookup(token))!.principal, 'dashboard', 'dashboard');
  },
  // The resource server's principal for a stored access token of an owner's grant (src/oauth).
  oauth_token: async (h) =>
    tokenPrincipal(h.rt, await mintTestToken(h.rt, { company_id: h.companyId, user_id: 1, role: 'owner' })),
  // The MCP server dispatches the form's answer, and the URL-mode retry, as the client's caller.
  mcp_form_elicitation: (h) => h.rt.tenants.authenticate(h.keys.owner, 'mcp'),
  mcp_url_elicitation: (h) => h.rt.tenants.authenticate(h.keys.owner, 'mcp'),
  webmcp: async (h, sessions) => actingForUser(await humanSession(h, sessions), 'webmcp:dashboard'),
  human_session: async (h, sessions) => onChannel(await humanSession(h, sessions), 'dashboard', 'dashboard'),
  // The CLI's LocalTarget: the owner's key opened the database, the person typed the owner's code.
  async local_cli_tty(h) {
    const owner = await enrolTotp(h.rt, h.companyId, OWNER);
    const key = await h.rt.tenants.authenticate(h.keys.owner);
    return verifyHumanAtTerminal(
      h.rt,
      key,
      { ask: async () => totpCode(owner.secret), say: () => {} },
      'test',
    );
  },
  // The same terminal driven by a script: it answers the code question with what it read.
  async local_cli_pty_script(h) {
    await enrolTotp(h.rt, h.companyId, OWNER);
    const key = await h.rt.tenants.authenticate(h.keys.owner);
    await assert.rejects(
      verifyHumanAtTerminal(h.rt, key, { ask: async () => PHRASE, say: () => {} }, 'test'),
      (e: unknown) => e instanceof VerbError && e.reason === 'signin_failed',
    );
    // The factor refused: whatever the CLI still dispatches is the key's.
    return key;
  },
};

function as(h: ConsentHarness, p: Principal, verb: string, args: unknown, opts = {}): Promise<Envelope> {
  return h.rt.dispatch({ surface: 'http', principal: p }, verb, args, opts);
}

/** Asserts an agent's refusal or a human's success. */
function expectOutcome(row: CredentialRequirement, allowed: boolean, env: Envelope, reason: string): void {
  if (allowed) assert.equal(env.ok, true, `${row.id}: ${JSON.stringify(env.error)}`);
  else assert.equal(env.error?.reason, reason, `${row.id}: ${JSON.stringify(env)}`);
}

test('every row of the credential table has a test', () => {
  assert.deepEqual(Object.keys(PRINCIPALS).sort(), CREDENTIAL_REQUIREMENTS.map((r) => r.id).sort());
});

for (const row of CREDENTIAL_REQUIREMENTS) {
  test(`${row.id} (${row.actor}): type a phrase, approve, change consent settings, open a session`, async (t) => {
    const h = await consentHarness(t, { start: new Date().toISOString() });
    // The product's defaults: no setting stored, so typed phrases count only from humans.
    await h.rt.store.write((tx) =>
      tx.run("UPDATE tenants SET settings = '{}' WHERE company_id = ?", [h.companyId]),
    );
    h.rt.tenants.invalidate();
    const sessions = new SessionStore(h.rt);
    await sessions.migrate();
    const p = await PRINCIPALS[row.id]!(h, sessions);
    assert.equal(p.actor, row.actor);
    if (row.channel !== undefined) assert.equal(p.consent_channel, row.channel);
    const settings = await h.rt.consentSettings(h.companyId);
    for (const act of ['type_phrase', 'approve', 'change_consent_settings', 'open_session'] as const)
      assert.equal(mayConsent(p, act, settings), row.may[act], `${row.id} ${act}`);

    // Type the phrase on the direct path.
    const asked = pendingOf(await as(h, p, 'charge_invoice', ARGS));
    if (row.actor === 'agent')
      assert.equal(asked.typed_phrase, undefined, 'an agent is not shown the phrase');
    const typed = await as(h, p, 'charge_invoice', ARGS, {
      confirm: true,
      nonce: asked.nonce,
      typed_phrase: PHRASE,
    });
    expectOutcome(row, row.may.type_phrase, typed, 'phrase_channel_human');
    assert.equal(await h.effects('charge_invoice'), row.may.type_phrase ? 1 : 0);

    // Approve an agent's request out of band.
    const other = { invoice_id: 8, amount_cents: 5000 };
    const waiting = pendingOf(await h.call('owner', 'charge_invoice', other));
    const approved = await as(h, p, 'approvals.approve', {
      approval_id: waiting.approval_id,
      typed_phrase: 'CHARGE $50.00 to invoice #8',
    });
    expectOutcome(row, row.may.approve, approved, 'human_required');

    // Change consent settings: loosen the phrase channel, lengthen the approval wait, set retention.
    for (const [verb, args, reason] of [
      ['tenant.phrase_channel_set', { phrase_channel: 'any' }, 'phrase_channel_human'],
      ['tenant.approval_ttl_set', { consent_class: 'WRITE_FINANCIAL', minutes: 60 }, 'human_required'],
      // Pruning evidence (spec/audit.md §retention): the same human act.
      ['tenant.audit_retention_set', { archive_after_days: 365 }, 'human_required'],
    ] as const) {
      const first = await as(h, p, verb, args);
      const done =
        first.error?.reason === 'dispatch_pending'
          ? await as(h, p, verb, args, { confirm: true, nonce: first.consent!.nonce })
          : first;
      expectOutcome(row, row.may.change_consent_settings, done, reason);
      // Put the default back for the next attempt.
      await h.rt.store.write((tx) =>
        tx.run("UPDATE tenants SET settings = '{}' WHERE company_id = ?", [h.companyId]),
      );
      h.rt.tenants.invalidate();
    }

    // Open a web session with this credential.
    const opened = await createHumanSession(sessions, p).then(
      () => true,
      (err: unknown) => {
        assert.ok(err instanceof VerbError && err.reason === 'session_requires_human', String(err));
        return false;
      },
    );
    assert.equal(opened, row.may.open_session, `${row.id}: open_session`);

    // Every refusal of a caller we can name is audited.
    if (row.actor === 'agent') {
      const denials = await h.audit({ status: 'denied' });
      assert.ok(denials.some((r) => r.reason === 'phrase_channel_human'));
    }
  });
}
