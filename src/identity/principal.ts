/**
 * The only place a principal's `actor` (and, for humans, `consent_channel` and `user_name`) is
 * set. Every credential becomes a principal through one of these functions:
 *
 *   agentPrincipal      an API key (and later an OAuth token), a UCP platform: `agent`
 *   sandboxPrincipal    the keyless caller of a tenant (read_only): `agent`
 *   humanPrincipal      a tenant user signed in by a human ceremony (passkey, TOTP): `human`
 *   onChannel           a human session's principal on one human channel (dashboard, approval page)
 *   actingForUser       WebMCP page tool calls: an in-page agent on a human's session → `agent`
 *   operatorAtTerminal  the local CLI's terminal on a local database, after the one-time code of an
 *                       enrolled user's authenticator app (terminal-human.ts) → `human`, channel
 *                       `operator_terminal`, naming that user
 *
 * test/docs/architecture.test.ts checks that no file outside src/identity assigns `actor:`.
 * Spec: spec/consent.md §channels.
 */
import type { ConsentChannel, Principal } from '../spec/types.ts';

/** A principal's facts without the identity fields this module sets. */
export type PrincipalFacts = Omit<Principal, 'actor' | 'consent_channel' | 'user_name'>;

/**
 * An agent principal: every API key, OAuth token, UCP platform and the keyless sandbox.
 * Drops any human fields the facts might carry (a spread of a human principal).
 */
export function agentPrincipal(facts: PrincipalFacts): Principal {
  const {
    actor: _a,
    consent_channel: _c,
    user_name: _u,
    ...rest
  } = facts as PrincipalFacts & Partial<Pick<Principal, 'actor' | 'consent_channel' | 'user_name'>>;
  return { ...rest, actor: 'agent' };
}

/**
 * The keyless principal of a tenant (the sandbox): an agent, user 0, read_only, `agent_type:
 * 'sandbox'`, `sandbox: true`. Every call that presents no credential reads as it (spec/transports.md §auth).
 */
export function sandboxPrincipal(tenant: { company_id: number; tier: Principal['tier'] }): Principal {
  return agentPrincipal({
    company_id: tenant.company_id,
    user_id: 0,
    role: 'read_only',
    tier: tenant.tier,
    agent_type: 'sandbox',
    sandbox: true,
  });
}

/**
 * A human principal: a tenant user signed in by a human ceremony (never from an API key). No
 * `key_id`. The channel is added per route by {@link onChannel}.
 */
export function humanPrincipal(
  facts: Omit<PrincipalFacts, 'key_id' | 'sandbox'>,
  user: { user_name: string },
): Principal {
  return {
    company_id: facts.company_id,
    user_id: facts.user_id,
    role: facts.role,
    tier: facts.tier,
    agent_type: facts.agent_type,
    actor: 'human',
    user_name: user.user_name,
  };
}

/**
 * A human principal on one human channel (the dashboard's API routes, the approval page). An
 * agent principal stays an agent (a channel never makes a human). `agent_type` names the route
 * for the audit (e.g. `dashboard`).
 */
export function onChannel(
  p: Principal,
  channel: Exclude<ConsentChannel, 'operator_terminal'>,
  agentType: string,
): Principal {
  if (p.actor !== 'human') return agentPrincipal({ ...p, agent_type: agentType });
  return { ...p, agent_type: agentType, consent_channel: channel };
}

/**
 * The principal of a call an agent makes on a human's behalf (WebMCP page tool calls: the
 * browser's in-page agent calls tools on the signed-in user's session): the user's tenant, id and
 * role, but `actor: 'agent'`, no consent channel.
 */
export function actingForUser(p: Principal, agentType: string): Principal {
  return agentPrincipal({ ...p, agent_type: agentType });
}

/**
 * The operator at the local CLI's terminal: a human on the `operator_terminal` channel. The CLI
 * reaches it only through terminal-human.ts's `verifyHumanAtTerminal`, after the person typed the
 * one-time code of an enrolled user's authenticator app at the terminal (a TTY alone is not a
 * person: a script at a pseudo-terminal has one). `user` is that user: the principal takes their
 * id, role and name (the act needs their role to meet its floor; provenance names them), keeping
 * the tenant, tier and key_id of `p`. Without `user` (the in-process testing kit, src/testing.ts)
 * the principal keeps `p`'s user. spec/consent.md §channels
 */
export function operatorAtTerminal(
  p: Principal,
  user?: { user_id: number; role: Principal['role']; user_name: string },
): Principal {
  if (user === undefined) return { ...p, actor: 'human', consent_channel: 'operator_terminal' };
  return {
    ...p,
    user_id: user.user_id,
    role: user.role,
    actor: 'human',
    consent_channel: 'operator_terminal',
    user_name: user.user_name,
  };
}

/** Is this principal a human (a signed-in user or the operator at the terminal)? */
export function isHuman(p: Principal | null | undefined): boolean {
  return p?.actor === 'human';
}
