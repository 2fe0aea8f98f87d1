/**
 * The identity room's session API: a session is minted only for a human principal
 * (createHumanSession refuses every agent principal), and the consent predicate's table.
 * Spec: spec/consent.md §channels.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestRuntime } from '../support/runtime.ts';
import { SessionStore, createHumanSession } from '../../src/identity/session-store.ts';
import {
  agentPrincipal,
  actingForUser,
  humanPrincipal,
  onChannel,
  operatorAtTerminal,
} from '../../src/identity/principal.ts';
import { CONSENT_ACTS, mayConsent } from '../../src/identity/consent-predicate.ts';
import { VerbError } from '../../src/runtime/errors.ts';
import { signInHumanForTest } from '../../src/testing.ts';

test('createHumanSession refuses an API-key principal, a WebMCP page principal and the sandbox', async (t) => {
  const h = await createTestRuntime(t);
  const sessions = new SessionStore(h.rt);
  await sessions.migrate();
  const key = await h.rt.tenants.authenticate(h.keys.owner);
  assert.equal(key.actor, 'agent');
  const human = humanPrincipal(
    { company_id: h.companyId, user_id: 7, role: 'owner', tier: 'professional', agent_type: 'webmcp' },
    { user_name: 'Jane Ruiz' },
  );
  for (const p of [
    key,
    actingForUser(human, 'webmcp:dashboard'),
    await h.rt.sandboxPrincipal(),
    agentPrincipal(human),
  ]) {
    await assert.rejects(
      createHumanSession(sessions, p),
      (err: unknown) => err instanceof VerbError && err.reason === 'session_requires_human',
    );
  }
  const { token, session } = await createHumanSession(sessions, human);
  assert.equal(session.principal.actor, 'human');
  const again = await sessions.lookup(token);
  assert.equal(again?.principal.actor, 'human');
  assert.equal(again?.principal.user_name, 'Jane Ruiz');
  assert.equal(again?.principal.role, 'owner');
  assert.equal(again?.principal.key_id, undefined);
  const rows = await h.rt.store.read((q) => q.all<Record<string, unknown>>('SELECT * FROM web_sessions'));
  assert.equal(rows.length, 1);
  assert.ok(!JSON.stringify(rows).includes(token), 'only the hash of the token is stored');
});

test('signInHumanForTest gives a human session with cookie and CSRF token', async (t) => {
  const h = await createTestRuntime(t);
  const s = await signInHumanForTest(h.rt, { company_id: h.companyId, user_id: 1, role: 'admin' });
  assert.equal(s.principal.actor, 'human');
  assert.match(s.cookie, /^solid_session=ss1_/);
  assert.ok(s.csrfToken.length > 20);
});

test('the principal projections: a channel never makes an agent human', () => {
  const facts = {
    company_id: 2,
    user_id: 3,
    role: 'owner' as const,
    tier: 'professional' as const,
    agent_type: 'x',
  };
  const human = humanPrincipal(facts, { user_name: 'Jo' });
  assert.deepEqual(
    {
      actor: onChannel(human, 'dashboard', 'dashboard').actor,
      ch: onChannel(human, 'dashboard', 'dashboard').consent_channel,
    },
    { actor: 'human', ch: 'dashboard' },
  );
  const agent = agentPrincipal({ ...facts, key_id: 'k1' });
  assert.equal(onChannel(agent, 'dashboard', 'dashboard').actor, 'agent');
  assert.equal(onChannel(agent, 'dashboard', 'dashboard').consent_channel, undefined);
  const page = actingForUser(human, 'webmcp:dashboard');
  assert.equal(page.actor, 'agent');
  assert.equal(page.user_name, undefined);
  const op = operatorAtTerminal(agent);
  assert.equal(op.actor, 'human');
  assert.equal(op.consent_channel, 'operator_terminal');
});

test('mayConsent: a human may do every act; an agent only what the owner allows', () => {
  const facts = {
    company_id: 2,
    user_id: 3,
    role: 'owner' as const,
    tier: 'professional' as const,
    agent_type: 'x',
  };
  const human = humanPrincipal(facts, { user_name: 'Jo' });
  const agent = agentPrincipal(facts);
  for (const act of CONSENT_ACTS) {
    assert.equal(mayConsent(human, act, {}), true, act);
    assert.equal(
      mayConsent(human, act, { phrase_channel: 'human', confirmation_channel: 'human' }),
      true,
      act,
    );
  }
  // Defaults: phrase_channel human, confirmation_channel any.
  assert.equal(mayConsent(agent, 'type_phrase', {}), false);
  assert.equal(mayConsent(agent, 'type_phrase', { phrase_channel: 'any' }), true);
  assert.equal(
    mayConsent(agent, 'type_phrase', { phrase_channel: 'ANY' }),
    false,
    'only the exact value loosens',
  );
  assert.equal(mayConsent(agent, 'confirm', {}), true);
  assert.equal(mayConsent(agent, 'confirm', { confirmation_channel: 'human' }), false);
  for (const act of ['approve', 'change_consent_settings', 'open_session'] as const) {
    assert.equal(mayConsent(agent, act, { phrase_channel: 'any' }), false, act);
    assert.equal(mayConsent(null, act, { phrase_channel: 'any' }), false, act);
  }
  // A sandbox principal is never human, even if something marked it so.
  assert.equal(mayConsent({ ...human, sandbox: true }, 'approve', {}), false);
});
