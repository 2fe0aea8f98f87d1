/**
 * The people of a tenant (table `users`, runtime migration 12): who may sign in as a human, with
 * which role. A user becomes `active` with their first credential (a passkey or the TOTP
 * fallback, enrolled through a one-time link: enrolment.ts), and `disabled` stops every sign-in
 * and ends nothing else (their API keys are agent credentials, managed apart).
 *
 * API keys keep their `user_id`: a key acts *for* a user, but it is an agent credential and never
 * signs a human in (spec/consent.md §human-sign-in). A user's id is shared with the keys made for
 * them, so the audit log names the same person whether they acted through an agent or approved
 * on the approval page.
 */
import type { Queryable, StoreTx } from '../store/store.ts';
import { ROLES, type Role } from '../spec/types.ts';

/** A user's lifecycle: invited (no credential yet) → active → disabled. */
export type UserStatus = 'invited' | 'active' | 'disabled';

/** One row of `users`. Times ISO 8601. */
export interface User {
  company_id: number;
  user_id: number;
  name: string;
  role: Role;
  status: UserStatus;
  created_at: string;
}

/** A user with what they can sign in with (for `solid users list`). */
export interface UserListing extends User {
  passkeys: number;
  totp: boolean;
}

/** Longest accepted user name, in UTF-16 code units. */
export const MAX_USER_NAME_LENGTH = 100;

function rowToUser(row: Record<string, unknown>): User {
  return {
    company_id: Number(row.company_id),
    user_id: Number(row.user_id),
    name: String(row.name),
    role: row.role as Role,
    status: row.status as UserStatus,
    created_at: String(row.created_at),
  };
}

/** Whether `value` is one of the four roles. */
export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/**
 * A user name as given, trimmed; undefined when empty, longer than MAX_USER_NAME_LENGTH, or
 * holding a control character (the name is printed in the dashboard and in receipts' words).
 */
export function cleanUserName(name: unknown): string | undefined {
  if (typeof name !== 'string') return undefined;
  const n = name.trim();
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (n === '' || n.length > MAX_USER_NAME_LENGTH || /[\u0000-\u001f\u007f]/.test(n)) return undefined;
  return n;
}

/** The user, or undefined. */
export async function getUser(q: Queryable, companyId: number, userId: number): Promise<User | undefined> {
  const row = await q.get<Record<string, unknown>>(
    'SELECT company_id, user_id, name, role, status, created_at FROM users WHERE company_id = ? AND user_id = ?',
    [companyId, userId],
  );
  return row === undefined ? undefined : rowToUser(row);
}

/** The tenant's users by user_id, with their credential counts. */
export async function listUsers(q: Queryable, companyId: number): Promise<UserListing[]> {
  const rows = await q.all<Record<string, unknown>>(
    `SELECT u.company_id, u.user_id, u.name, u.role, u.status, u.created_at,
            (SELECT COUNT(*) FROM user_passkeys p WHERE p.company_id = u.company_id AND p.user_id = u.user_id) AS passkeys,
            (SELECT COUNT(*) FROM user_totp t WHERE t.company_id = u.company_id AND t.user_id = u.user_id AND t.confirmed_at IS NOT NULL) AS totp
     FROM users u WHERE u.company_id = ? ORDER BY u.user_id`,
    [companyId],
  );
  return rows.map((r) => ({ ...rowToUser(r), passkeys: Number(r.passkeys), totp: Number(r.totp) > 0 }));
}

/**
 * Add a user (status `invited`). Without `user_id` the next free id of the tenant is taken: one
 * above every user and every API key's user_id, so a new person never inherits the keys of
 * another. Throws the store's unique-key error when `user_id` is taken. Users of one tenant are
 * made one at a time (the tenant's head row is locked first), so two nodes inviting at once never
 * draw the same id.
 */
export async function insertUser(
  tx: StoreTx,
  u: { company_id: number; user_id?: number; name: string; role: Role },
  now: Date,
): Promise<User> {
  await tx.lockTenantHead(u.company_id);
  let userId = u.user_id;
  if (userId === undefined) {
    const row = await tx.get<{ m: number | string | null }>(
      `SELECT MAX(m) AS m FROM (SELECT MAX(user_id) AS m FROM users WHERE company_id = ?
                                UNION ALL SELECT MAX(user_id) AS m FROM api_keys WHERE company_id = ?) AS x`,
      [u.company_id, u.company_id],
    );
    userId = row?.m === null || row?.m === undefined ? 1 : Number(row.m) + 1;
  }
  const user: User = {
    company_id: u.company_id,
    user_id: userId,
    name: u.name,
    role: u.role,
    status: 'invited',
    created_at: now.toISOString(),
  };
  await tx.run(
    'INSERT INTO users (company_id, user_id, name, role, status, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    [user.company_id, user.user_id, user.name, user.role, user.status, user.created_at],
  );
  return user;
}

/** Set a user's status; returns whether a row changed. */
export async function setUserStatus(
  tx: StoreTx,
  companyId: number,
  userId: number,
  status: UserStatus,
): Promise<boolean> {
  const r = await tx.run('UPDATE users SET status = ? WHERE company_id = ? AND user_id = ? AND status <> ?', [
    status,
    companyId,
    userId,
    status,
  ]);
  return r.changes > 0;
}

/** Whether the user holds a credential a human signs in with (a passkey or a confirmed TOTP). */
export async function hasCredential(q: Queryable, companyId: number, userId: number): Promise<boolean> {
  const row = await q.get(
    `SELECT 1 AS one FROM user_passkeys WHERE company_id = ? AND user_id = ?
     UNION ALL SELECT 1 AS one FROM user_totp WHERE company_id = ? AND user_id = ? AND confirmed_at IS NOT NULL`,
    [companyId, userId, companyId, userId],
  );
  return row !== undefined;
}

/** Whether any user of the tenant holds a credential (the bootstrap is over once one does). */
export async function anyCredential(q: Queryable, companyId: number): Promise<boolean> {
  const row = await q.get(
    `SELECT 1 AS one FROM user_passkeys WHERE company_id = ?
     UNION ALL SELECT 1 AS one FROM user_totp WHERE company_id = ? AND confirmed_at IS NOT NULL`,
    [companyId, companyId],
  );
  return row !== undefined;
}

/**
 * The tenant's owner user, created when the tenant has none: the user of its oldest active owner
 * API key (so the owner's keys and the owner's sign-in name one person), else the next free id.
 * Used by `solid serve --demo` and `solid init`, which print the owner's enrolment link. Several
 * nodes starting at once on one database agree on one owner: the tenant's head row is locked
 * before the owner is looked for (spec/store.md §multi-node).
 */
export async function ensureOwnerUser(
  tx: StoreTx,
  companyId: number,
  now: Date,
  name = 'Owner',
): Promise<User> {
  await tx.lockTenantHead(companyId);
  const existing = await tx.get<Record<string, unknown>>(
    "SELECT company_id, user_id, name, role, status, created_at FROM users WHERE company_id = ? AND role = 'owner' ORDER BY user_id LIMIT 1",
    [companyId],
  );
  if (existing !== undefined) return rowToUser(existing);
  const key = await tx.get<{ user_id: number | string }>(
    "SELECT user_id FROM api_keys WHERE company_id = ? AND role = 'owner' AND revoked_at IS NULL ORDER BY created_at, key_id LIMIT 1",
    [companyId],
  );
  const taken = key === undefined ? undefined : await getUser(tx, companyId, Number(key.user_id));
  return insertUser(
    tx,
    {
      company_id: companyId,
      ...(key !== undefined && taken === undefined ? { user_id: Number(key.user_id) } : {}),
      name,
      role: 'owner',
    },
    now,
  );
}
