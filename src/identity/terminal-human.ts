/**
 * The human factor at the local CLI's terminal: the one place the CLI turns a call into a human's.
 *
 * A terminal is not a person: a script at a pseudo-terminal (`script -qc "solid approvals approve
 * …"`) has `isTTY` true and can read any prompt and type any phrase back. So the terminal counts as
 * a human only after the person at it types the current one-time code of an **enrolled, active
 * user's authenticator app** (TOTP, totp.ts): a program the agent controls does not hold that
 * secret. The principal then names that user (user_id, role, user_name): the act needs that
 * user's role to meet its floor, and the provenance says who typed.
 *
 * - The code is asked at the terminal only (the CLI's prompt on a TTY stdin), never read from a
 *   flag, an environment variable or a piped stdin: callers pass a {@link TerminalPrompt} only when
 *   stdin is a terminal.
 * - A code counts once (verifyTotp spends its time step), failures are audited
 *   (`terminal.human_factor`, denied, `signin_failed`) and throttled with the sign-in routes'
 *   per-user budget (signin-throttle.ts), so guessing at the CLI and at the browser share one limit.
 * - No active user with a confirmed TOTP (a passkey-only tenant): `human_required`, audited, whose
 *   hint names the dashboard or approval page (a passkey in the browser) or enrolling an
 *   authenticator app.
 *
 * Refusals (thrown VerbError): `human_required`, `signin_failed`, `rate_limited`.
 * Spec: spec/consent.md §channels, §phrase-channel (its threat model).
 */
import { VerbError } from '../runtime/errors.ts';
import type { Secrets } from '../runtime/secrets.ts';
import type { Principal } from '../spec/types.ts';
import type { Store } from '../store/store.ts';
import { appendHumanAudit } from './human-audit.ts';
import { operatorAtTerminal } from './principal.ts';
import { assertNotThrottled, noteFailure } from './signin-throttle.ts';
import { verifyTotp } from './totp.ts';
import { anyCredential, type User } from './users.ts';

/** The terminal's prompt: given only when stdin is a terminal (never a pipe, flag or env). */
export interface TerminalPrompt {
  /** Ask one line at the terminal (the code is not echoed when the terminal can hide it). */
  ask(question: string): Promise<string>;
  /** Tell the person something (stderr). */
  say(line: string): void;
}

/** What the human factor needs of the runtime. */
export interface TerminalFactorRuntime {
  store: Store;
  secrets: Secrets;
  clock: () => Date;
}

const AGENT_TYPE = 'cli:operator';

/** Where a person approves without a code at this terminal (the hint of every refusal here). */
export const TERMINAL_HUMAN_HINT =
  'Approve in the dashboard or on the approval page with your passkey, or enrol an authenticator app ' +
  '(`solid users link <user_id>` prints an enrolment link; choose the authenticator-app option) to ' +
  'approve at this terminal with its one-time code.';

/** The tenant's active users with a confirmed TOTP secret, by user_id. */
async function totpUsers(store: Store, companyId: number): Promise<User[]> {
  return store.read(async (q) => {
    const rows = await q.all<Record<string, unknown>>(
      `SELECT u.company_id, u.user_id, u.name, u.role, u.status, u.created_at FROM users u
       WHERE u.company_id = ? AND u.status = 'active' AND EXISTS (
         SELECT 1 FROM user_totp t WHERE t.company_id = u.company_id AND t.user_id = u.user_id AND t.confirmed_at IS NOT NULL)
       ORDER BY u.user_id`,
      [companyId],
    );
    return rows.map((r) => ({
      company_id: Number(r.company_id),
      user_id: Number(r.user_id),
      name: String(r.name),
      role: r.role as User['role'],
      status: r.status as User['status'],
      created_at: String(r.created_at),
    }));
  });
}

async function auditFactor(
  rt: TerminalFactorRuntime,
  companyId: number,
  status: 'completed' | 'denied',
  user: User | undefined,
  reason: string | undefined,
  purpose: string,
): Promise<void> {
  await rt.store.write((tx) =>
    appendHumanAudit(tx, {
      company_id: companyId,
      action: 'terminal.human_factor',
      status,
      ...(reason !== undefined ? { reason } : {}),
      ...(status === 'completed' && user !== undefined
        ? { actor: { user_id: user.user_id, role: user.role }, agent_type: 'human:operator_terminal' }
        : { agent_type: AGENT_TYPE }),
      request_data: { purpose, factor: 'totp', ...(user !== undefined ? { user_id: user.user_id } : {}) },
      ...(user !== undefined ? { subject_user_id: user.user_id } : {}),
      now: rt.clock(),
    }),
  );
}

/**
 * Ask the person at the terminal for the one-time code of an enrolled user (one of `roles`, when
 * given) and return that user when the code counts. The lower half of
 * {@link verifyHumanAtTerminal}, also used by the operator commands that mint a human
 * (`solid users invite|link`, {@link assertMayMintHuman}). `terminal` undefined (stdin is not a
 * terminal) is refused like a tenant without such a user.
 *
 * @throws VerbError `human_required`, `signin_failed`, `rate_limited` (see the header).
 */
export async function verifyTerminalUser(
  rt: TerminalFactorRuntime,
  companyId: number,
  terminal: TerminalPrompt | undefined,
  purpose: string,
  roles?: readonly User['role'][],
): Promise<User> {
  const users = (await totpUsers(rt.store, companyId)).filter(
    (u) => roles === undefined || roles.includes(u.role),
  );
  if (terminal === undefined || users.length === 0) {
    await auditFactor(rt, companyId, 'denied', undefined, 'human_required', purpose);
    const who = roles === undefined ? 'an enrolled user' : `an enrolled ${roles.join(' or ')}`;
    throw new VerbError(
      'human_required',
      terminal === undefined
        ? `This needs a person: the one-time code of ${who}'s authenticator app, typed at a terminal (stdin here is not one).`
        : `This terminal counts as a person only with the one-time code of ${who}'s authenticator app, and this tenant has none.`,
      { hint: TERMINAL_HUMAN_HINT },
    );
  }
  let user = users[0]!;
  if (users.length > 1) {
    const who = (
      await terminal.ask(
        `Who is at this terminal? (${users.map((u) => `${u.user_id} ${u.name}`).join(', ')}) user id or name: `,
      )
    ).trim();
    const named = users.find((u) => String(u.user_id) === who || u.name === who);
    if (named === undefined) {
      await auditFactor(rt, companyId, 'denied', undefined, 'human_required', purpose);
      throw new VerbError('human_required', `No active user with an authenticator app is named "${who}".`, {
        hint: TERMINAL_HUMAN_HINT,
      });
    }
    user = named;
  }
  const buckets = [`signin:user:${companyId}:${user.user_id}`];
  await assertNotThrottled(rt.store, buckets, rt.clock().getTime());
  const code = (await terminal.ask(`One-time code of ${user.name} (authenticator app): `)).trim();
  const now = rt.clock();
  const counted = await rt.store.write((tx) => verifyTotp(tx, rt.secrets, user, code, now));
  if (!counted) {
    await noteFailure(rt.store, buckets, now.getTime());
    await auditFactor(rt, companyId, 'denied', user, 'signin_failed', purpose);
    throw new VerbError(
      'signin_failed',
      'The one-time code did not verify (each code works once); this terminal does not count as a person.',
      { hint: `Type the current 6-digit code of ${user.name}'s authenticator app. ${TERMINAL_HUMAN_HINT}` },
    );
  }
  await auditFactor(rt, companyId, 'completed', user, undefined, purpose);
  terminal.say(`✓ ${user.name} (user ${user.user_id}, ${user.role}) at this terminal`);
  return user;
}

/**
 * Ask the person at the terminal for the one-time code of an enrolled user and, when it counts,
 * return the operator principal naming that user (`actor: 'human'`, channel `operator_terminal`;
 * company, tier and key_id from `keyPrincipal`, the key the CLI opened the database with).
 * `purpose` is a short word for the audit row (the verb). When the tenant has several such users
 * the person first says who they are (user id or name).
 *
 * @throws VerbError `human_required` (no user with TOTP, or no such user named), `signin_failed`
 *   (wrong, expired or reused code), `rate_limited` (too many failures for that user).
 */
export async function verifyHumanAtTerminal(
  rt: TerminalFactorRuntime,
  keyPrincipal: Principal,
  terminal: TerminalPrompt,
  purpose: string,
): Promise<Principal> {
  const user = await verifyTerminalUser(rt, keyPrincipal.company_id, terminal, purpose);
  return operatorAtTerminal(keyPrincipal, { user_id: user.user_id, role: user.role, user_name: user.name });
}

/** The roles whose enrolled person vouches, with a one-time code, for minting another. */
export const MINTING_ROLES: readonly User['role'][] = ['owner', 'admin'];

/**
 * May the operator command mint this human (an enrolment link: `solid users invite`, `solid users
 * link`) without a person at the terminal? A link is a human session for whoever opens it, so an
 * agent with the database file must not print one: once any user of the tenant has a credential (a
 * passkey or a confirmed TOTP), every link — for a new user at any role, or for a user who already
 * signs in (B1: the agent would enrol its own authenticator beside theirs) — needs the one-time
 * code of an enrolled owner or admin ({@link MINTING_ROLES}) at the terminal. Even an employee is
 * a human: with its own session an agent would confirm employee-floor writes a tenant reserves to
 * people (confirmation_channel human).
 * The bootstrap is the one exception: while no user has any credential, nobody can give a code,
 * and whoever holds the database is the operator (`solid init`, `npm start` print the owner's
 * first link). spec/consent.md §phrase-channel (its threat model).
 *
 * Returns the verified person (for the audit) or undefined when no factor was needed.
 * @throws VerbError `human_required`, `signin_failed`, `rate_limited` (see {@link verifyTerminalUser}).
 */
export async function assertMayMintHuman(
  rt: TerminalFactorRuntime,
  companyId: number,
  _target: { role: User['role']; user_id?: number },
  terminal: TerminalPrompt | undefined,
  purpose: string,
): Promise<User | undefined> {
  const bootstrap = await rt.store.read(async (q) => !(await anyCredential(q, companyId)));
  if (bootstrap) return undefined;
  return verifyTerminalUser(rt, companyId, terminal, purpose, MINTING_ROLES);
}
