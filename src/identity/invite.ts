/**
 * Inviting people and the owner's first link: the operator's side of human identity (`solid users
 * invite|list|disable`, `solid serve`, `solid init`) and a signed-in human owner's (the dashboard).
 * Never an API key: these functions take no principal from a key, and the routes that call them
 * require a human session (sign-in-routes.ts). Every change is audited in its own transaction.
 * spec/consent.md §human-sign-in
 */
import type { Store, StoreTx } from '../store/store.ts';
import type { Role } from '../spec/types.ts';
import { createEnrolmentLink, DEFAULT_ENROLMENT_TTL_SECONDS, type EnrolmentLink } from './enrolment.ts';
import { appendHumanAudit } from './human-audit.ts';
import {
  anyCredential,
  ensureOwnerUser,
  getUser,
  hasCredential,
  insertUser,
  setUserStatus,
  type User,
} from './users.ts';

/**
 * Who invites: the operator at the CLI (undefined), a signed-in human owner (the dashboard), or a
 * person verified at the CLI's terminal (`agent_type` `human:operator_terminal`, terminal-human.ts).
 */
export type Inviter = { user_id: number; role: Role; agent_type?: string } | undefined;

function actorFields(by: Inviter): { actor?: { user_id: number; role: string }; agent_type: string } {
  return by === undefined
    ? { agent_type: 'cli:operator' }
    : { actor: { user_id: by.user_id, role: by.role }, agent_type: by.agent_type ?? 'human:dashboard' };
}

/**
 * Add a user (status invited) and make their one-time enrolment link, audited as `users.invite`
 * (name, role, link expiry; never the token). Throws the store's unique-key error for a taken id.
 */
export async function inviteUser(
  store: Store,
  u: { company_id: number; name: string; role: Role; user_id?: number },
  by: Inviter,
  now: Date,
  ttlSeconds = DEFAULT_ENROLMENT_TTL_SECONDS,
): Promise<{ user: User; link: EnrolmentLink }> {
  return store.write((tx) => inviteUserInTx(tx, u, by, now, ttlSeconds));
}

/**
 * {@link inviteUser} inside the caller's transaction `tx`, so a caller's own checks and records
 * (platform.users.invite: the bootstrap check and its platform log row) commit with it or not at all.
 */
export async function inviteUserInTx(
  tx: StoreTx,
  u: { company_id: number; name: string; role: Role; user_id?: number },
  by: Inviter,
  now: Date,
  ttlSeconds = DEFAULT_ENROLMENT_TTL_SECONDS,
): Promise<{ user: User; link: EnrolmentLink }> {
  const user = await insertUser(tx, u, now);
  const link = await createEnrolmentLink(tx, user, now, ttlSeconds);
  await appendHumanAudit(tx, {
    company_id: u.company_id,
    action: 'users.invite',
    status: 'completed',
    ...actorFields(by),
    request_data: {
      user_id: user.user_id,
      name: user.name,
      role: user.role,
      link_expires_at: link.expires_at,
    },
    subject_user_id: user.user_id,
    now,
  });
  return { user, link };
}

/**
 * A fresh enrolment link for an existing user who is not disabled, audited as
 * `users.enrolment_link`; undefined when there is no such user.
 */
export async function newEnrolmentLink(
  store: Store,
  companyId: number,
  userId: number,
  by: Inviter,
  now: Date,
  ttlSeconds = DEFAULT_ENROLMENT_TTL_SECONDS,
): Promise<{ user: User; link: EnrolmentLink } | undefined> {
  return store.write(async (tx) => {
    const user = await getUser(tx, companyId, userId);
    if (user === undefined || user.status === 'disabled') return undefined;
    const link = await createEnrolmentLink(tx, user, now, ttlSeconds);
    await appendHumanAudit(tx, {
      company_id: companyId,
      action: 'users.enrolment_link',
      status: 'completed',
      ...actorFields(by),
      request_data: { user_id: userId, link_expires_at: link.expires_at },
      subject_user_id: userId,
      now,
    });
    return { user, link };
  });
}

/**
 * The owner's enrolment link during the bootstrap — while no user of the tenant has a credential:
 * the owner user is made when missing (ensureOwnerUser: the user of the owner API key), then a
 * fresh link each call. Undefined once anyone of the tenant has a passkey or a confirmed TOTP (the
 * link would be a way in for whoever reads the server's output; after the bootstrap an owner
 * link needs an owner's or admin's code at the terminal, `solid users link`, terminal-human.ts).
 * Used by `solid serve` and `solid init`. spec/consent.md §phrase-channel (its threat model)
 */
export async function ownerEnrolmentLink(
  store: Store,
  companyId: number,
  now: Date,
): Promise<{ user: User; link: EnrolmentLink } | undefined> {
  const owner = await store.write((tx) => ensureOwnerUser(tx, companyId, now));
  if (owner.status === 'disabled') return undefined;
  if (await store.read((q) => hasCredential(q, companyId, owner.user_id))) return undefined;
  if (await store.read((q) => anyCredential(q, companyId))) return undefined;
  return newEnrolmentLink(store, companyId, owner.user_id, undefined, now);
}

/**
 * Disable a user: every sign-in refused from now on, and their open browser sessions ended
 * (their rows deleted; none when the server never mounted the dashboard), audited as
 * `users.disable`. Their API keys are agent credentials, revoked apart (`solid api-keys revoke`).
 * Returns false when there is no such user or they were disabled already.
 */
export async function disableUser(
  store: Store,
  companyId: number,
  userId: number,
  by: Inviter,
  now: Date,
): Promise<boolean> {
  const changed = await store.write(async (tx) => {
    const changed = await setUserStatus(tx, companyId, userId, 'disabled');
    if (!changed) return false;
    await appendHumanAudit(tx, {
      company_id: companyId,
      action: 'users.disable',
      status: 'completed',
      ...actorFields(by),
      request_data: { user_id: userId },
      subject_user_id: userId,
      now,
    });
    return true;
  });
  if (changed)
    await store
      .write((tx) =>
        tx.run('DELETE FROM web_sessions WHERE company_id = ? AND user_id = ? AND key_id IS NULL', [
          companyId,
          userId,
        ]),
      )
      .catch(() => {
        /* no web_sessions table: this database never served the dashboard, so no session is open */
      });
  return changed;
}
