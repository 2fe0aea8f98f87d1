/**
 * The TOTP fallback (RFC 6238 through the `otpauth` library: SHA-1, 6 digits, 30 s steps, ±1 step
 * of clock drift) for people whose device has no platform authenticator. Table `user_totp`
 * (runtime migration 12).
 *
 * - The secret (160 random bits) is made by the library, shown once at enrolment as an
 *   `otpauth://` URI and as base32, and stored AES-256-GCM encrypted under the runtime's master
 *   key (`Secrets.encrypt`, bound to the tenant and user), never in a log or an audit row.
 * - A secret counts only once confirmed: the enrolment page asks for one code before the link is
 *   consumed and the user becomes active.
 * - A code counts once per time step: the step a code matched is stored (`last_step`) and a code
 *   of that step or an earlier one is refused, with a conditional UPDATE so two concurrent
 *   sign-ins with the same code cannot both pass.
 * spec/consent.md §human-sign-in
 */
import type { TOTP } from 'otpauth';
import type { Secrets } from '../runtime/secrets.ts';
import type { Queryable, StoreTx } from '../store/store.ts';

/** Steps of clock drift accepted either side of now. */
export const TOTP_WINDOW = 1;
/** Seconds per step. */
export const TOTP_PERIOD_SECONDS = 30;

function aad(companyId: number, userId: number): string {
  return `totp:${companyId}:${userId}`;
}

/** The otpauth library, imported on the first TOTP enrolment or check (issue 36: start-up). */
const otpauth = () => import('otpauth');

async function totpFor(secretBase32: string, label: string, issuer: string): Promise<TOTP> {
  const { Secret, TOTP } = await otpauth();
  return new TOTP({
    issuer,
    label,
    algorithm: 'SHA1',
    digits: 6,
    period: TOTP_PERIOD_SECONDS,
    secret: Secret.fromBase32(secretBase32),
  });
}

/** What the enrolment page shows once: the URI for an authenticator app and the secret typed by hand. */
export interface TotpEnrolment {
  /** `otpauth://totp/…` (render as a QR code or open on the phone). */
  uri: string;
  /** The same secret in base32, for typing into an app. */
  secret: string;
}

/**
 * Start (or restart) a TOTP enrolment inside `tx`: a new secret, stored encrypted and unconfirmed,
 * replacing an earlier unconfirmed one. Returns undefined when the user already has a confirmed
 * TOTP secret (a link does not silently replace a working credential).
 */
export async function startTotp(
  tx: StoreTx,
  secrets: Secrets,
  user: { company_id: number; user_id: number; name: string },
  issuer: string,
  now: Date,
): Promise<TotpEnrolment | undefined> {
  const existing = await tx.get<{ confirmed_at: string | null }>(
    'SELECT confirmed_at FROM user_totp WHERE company_id = ? AND user_id = ?',
    [user.company_id, user.user_id],
  );
  if (existing !== undefined && existing.confirmed_at !== null) return undefined;
  const secret = new (await otpauth()).Secret({ size: 20 }).base32;
  const sealed = secrets.encrypt(secret, aad(user.company_id, user.user_id));
  await tx.run('DELETE FROM user_totp WHERE company_id = ? AND user_id = ?', [user.company_id, user.user_id]);
  await tx.run(
    'INSERT INTO user_totp (company_id, user_id, secret_sealed, confirmed_at, last_step, created_at) VALUES (?, ?, ?, NULL, NULL, ?)',
    [user.company_id, user.user_id, sealed, now.toISOString()],
  );
  return { uri: (await totpFor(secret, user.name, issuer)).toString(), secret };
}

/**
 * Check a code inside `tx` and spend its time step. `confirming`: the enrolment's first code
 * (accepts an unconfirmed secret and confirms it); otherwise only a confirmed secret counts.
 * Returns whether the code counted: false for no secret, a wrong code, a code outside ±1 step, or
 * a step already used (a replay). Throws only when the stored secret cannot be decrypted (the
 * master key changed).
 */
export async function verifyTotp(
  tx: StoreTx,
  secrets: Secrets,
  user: { company_id: number; user_id: number },
  code: string,
  now: Date,
  confirming = false,
): Promise<boolean> {
  if (!/^[0-9]{6}$/.test(code)) return false;
  const row = await tx.get<{
    secret_sealed: string;
    confirmed_at: string | null;
    last_step: number | string | null;
  }>('SELECT secret_sealed, confirmed_at, last_step FROM user_totp WHERE company_id = ? AND user_id = ?', [
    user.company_id,
    user.user_id,
  ]);
  if (row === undefined) return false;
  if (!confirming && row.confirmed_at === null) return false;
  const secret = secrets.decrypt(row.secret_sealed, aad(user.company_id, user.user_id));
  const totp = await totpFor(secret, '', '');
  const timestamp = now.getTime();
  const delta = totp.validate({ token: code, timestamp, window: TOTP_WINDOW });
  if (delta === null) return false;
  const step = totp.counter({ timestamp }) + delta;
  const r = await tx.run(
    `UPDATE user_totp SET last_step = ?, confirmed_at = COALESCE(confirmed_at, ?)
     WHERE company_id = ? AND user_id = ? AND (last_step IS NULL OR last_step < ?)`,
    [step, now.toISOString(), user.company_id, user.user_id, step],
  );
  return r.changes === 1;
}

/** Whether the user has a confirmed TOTP secret. */
export async function hasTotp(q: Queryable, companyId: number, userId: number): Promise<boolean> {
  const row = await q.get(
    'SELECT 1 AS one FROM user_totp WHERE company_id = ? AND user_id = ? AND confirmed_at IS NOT NULL',
    [companyId, userId],
  );
  return row !== undefined;
}
