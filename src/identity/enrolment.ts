/**
 * One-time enrolment links (table `enrolment_links`, runtime migration 12): how a person gets
 * their first human credential. The operator (`solid users invite`, `solid serve --demo`,
 * `solid init`) or a signed-in human owner makes a link `<public url>/enrol/<token>`; the person
 * opens it and registers a passkey (or the TOTP fallback). The token is 256 random bits, shown
 * once; only its SHA-256 is stored. A link expires (default 24 h) and works once: the credential's
 * registration consumes it in the same store transaction that stores the credential.
 *
 * An API key can never make a link: an agent must not be able to enrol itself as a human.
 * spec/consent.md §human-sign-in
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Queryable, StoreTx } from '../store/store.ts';
import { getUser, type User } from './users.ts';

/** Default lifetime of an enrolment link: 24 hours, in seconds. */
export const DEFAULT_ENROLMENT_TTL_SECONDS = 24 * 3600;

const TOKEN_PREFIX = 'enr1_';
const TOKEN_PATTERN = /^enr1_[A-Za-z0-9_-]{43}$/;

/** SHA-256 hex of an enrolment token (the row key; safe to log). */
export function enrolmentTokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Whether `token` has the shape of an enrolment token (nothing about whether it is live). */
export function isEnrolmentTokenShape(token: unknown): token is string {
  return typeof token === 'string' && TOKEN_PATTERN.test(token);
}

/** A new link's facts: the token (plaintext, shown once) and its absolute expiry (ISO 8601). */
export interface EnrolmentLink {
  token: string;
  expires_at: string;
}

/**
 * Make a one-time enrolment link for a user (inside `tx`). Earlier unused links of the same user
 * stay valid until they expire or one is used (each `solid serve --demo` start prints a fresh one).
 */
export async function createEnrolmentLink(
  tx: StoreTx,
  user: { company_id: number; user_id: number },
  now: Date,
  ttlSeconds = DEFAULT_ENROLMENT_TTL_SECONDS,
): Promise<EnrolmentLink> {
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000).toISOString();
  await tx.run('DELETE FROM enrolment_links WHERE expires_at <= ?', [now.toISOString()]);
  await tx.run(
    'INSERT INTO enrolment_links (token_hash, company_id, user_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
    [enrolmentTokenHash(token), user.company_id, user.user_id, now.toISOString(), expiresAt],
  );
  return { token, expires_at: expiresAt };
}

/** The URL of a link: `<base>/enrol/<token>` (base without a trailing slash). */
export function enrolmentUrl(base: string, token: string): string {
  return `${base.replace(/\/+$/, '')}/enrol/${token}`;
}

/**
 * The user a live link enrols (unused, unexpired, user not disabled), without consuming it; else
 * undefined (the route answers `enrolment_invalid`, never saying which of these it was).
 */
export async function peekEnrolment(
  q: Queryable,
  token: unknown,
  now: Date,
): Promise<{ user: User; expires_at: string } | undefined> {
  if (!isEnrolmentTokenShape(token)) return undefined;
  const row = await q.get<{ company_id: number | string; user_id: number | string; expires_at: string }>(
    'SELECT company_id, user_id, expires_at FROM enrolment_links WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?',
    [enrolmentTokenHash(token), now.toISOString()],
  );
  if (row === undefined) return undefined;
  const user = await getUser(q, Number(row.company_id), Number(row.user_id));
  if (user === undefined || user.status === 'disabled') return undefined;
  return { user, expires_at: row.expires_at };
}

/**
 * Consume a live link inside `tx` (the transaction that stores the credential). Returns whether
 * this call consumed it: false when it was used (also concurrently), expired or unknown.
 */
export async function consumeEnrolment(tx: StoreTx, token: string, now: Date): Promise<boolean> {
  if (!isEnrolmentTokenShape(token)) return false;
  const r = await tx.run(
    'UPDATE enrolment_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?',
    [now.toISOString(), enrolmentTokenHash(token), now.toISOString()],
  );
  return r.changes === 1;
}
