/**
 * Test support for the human factor at the CLI's terminal (src/identity/terminal-human.ts): enrol
 * a user's authenticator app (TOTP) the way the enrolment page does, and a terminal prompt that
 * answers the one-time code question with the current code of that secret (the person holding the
 * authenticator) and every other question with the test's answer.
 */
import { Secret, TOTP } from 'otpauth';
import type { Role } from '../../src/spec/types.ts';
import type { Secrets } from '../../src/runtime/secrets.ts';
import type { Store } from '../../src/store/store.ts';
import { startTotp, verifyTotp } from '../../src/identity/totp.ts';
import { ensureOwnerUser, getUser, insertUser, setUserStatus } from '../../src/identity/users.ts';

interface Rt {
  store: Store;
  secrets: Secrets;
}

/** The current code of a base32 secret (RFC 6238, 6 digits, 30 s). */
export function totpCode(secret: string, at: Date = new Date()): string {
  return new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: at.getTime(),
  });
}

/**
 * Make `userId` (or the tenant's owner user when `userId` is undefined) an active user with a
 * confirmed TOTP secret; returns the user id and the secret (what the person's app holds).
 */
export async function enrolTotp(
  rt: Rt,
  companyId: number,
  who: { user_id?: number; role?: Role; name?: string } = {},
): Promise<{ user_id: number; secret: string }> {
  const now = new Date();
  const user = await rt.store.write(async (tx) => {
    if (who.user_id === undefined) return ensureOwnerUser(tx, companyId, now);
    return (
      (await getUser(tx, companyId, who.user_id)) ??
      insertUser(
        tx,
        {
          company_id: companyId,
          user_id: who.user_id,
          name: who.name ?? `User ${who.user_id}`,
          role: who.role ?? 'owner',
        },
        now,
      )
    );
  });
  const started = await rt.store.write((tx) => startTotp(tx, rt.secrets, user, 'Test Co', now));
  if (started === undefined) throw new Error(`user ${user.user_id} already has a confirmed TOTP`);
  const ok = await rt.store.write((tx) =>
    verifyTotp(tx, rt.secrets, user, totpCode(started.secret, now), now, true),
  );
  if (!ok) throw new Error('the enrolment code did not verify');
  await rt.store.write(async (tx) => {
    await setUserStatus(tx, companyId, user.user_id, 'active');
    // The enrolment spent this time step; a test types the next code within the same 30 s.
    await tx.run('UPDATE user_totp SET last_step = NULL WHERE company_id = ? AND user_id = ?', [
      companyId,
      user.user_id,
    ]);
  });
  return { user_id: user.user_id, secret: started.secret };
}

/**
 * A terminal prompt for the CLI harnesses: the one-time code question gets the current code of
 * `secret` (its spent time step is cleared first: tests run several invocations within one 30 s
 * step, which a person could not), "who is at this terminal" gets `userId`, anything else `answer`.
 * `asked` collects every question.
 */
export function promptWithCode(
  rt: Rt,
  companyId: number,
  enrolled: { user_id: number; secret: string },
  answer: (q: string) => string | Promise<string>,
  asked: string[] = [],
): (q: string) => Promise<string> {
  return async (q) => {
    asked.push(q);
    if (/One-time code of/.test(q)) {
      await rt.store.write((tx) =>
        tx.run('UPDATE user_totp SET last_step = NULL WHERE company_id = ? AND user_id = ?', [
          companyId,
          enrolled.user_id,
        ]),
      );
      return totpCode(enrolled.secret);
    }
    if (/Who is at this terminal/.test(q)) return String(enrolled.user_id);
    return answer(q);
  };
}

const enrolledUsers = new WeakMap<Rt, Map<string, Promise<{ user_id: number; secret: string }>>>();

/**
 * {@link promptWithCode} for the person `who` (a user id and role; enrolled on the first call, once
 * per runtime): the prompt of someone holding that user's authenticator app.
 */
export async function humanPrompt(
  rt: Rt,
  companyId: number,
  who: { user_id: number; role: Role; name?: string },
  answer: (q: string) => string | Promise<string>,
  asked?: string[],
): Promise<(q: string) => Promise<string>> {
  let byUser = enrolledUsers.get(rt);
  if (byUser === undefined) enrolledUsers.set(rt, (byUser = new Map()));
  const key = `${companyId}:${who.user_id}`;
  let enrolled = byUser.get(key);
  if (enrolled === undefined) byUser.set(key, (enrolled = enrolTotp(rt, companyId, who)));
  return promptWithCode(rt, companyId, await enrolled, answer, asked);
}

/** The test runtime's users behind its keys (test/support/runtime.ts). */
export const OWNER = { user_id: 1, role: 'owner', name: 'Olivia Owner' } as const;
export const ADMIN = { user_id: 2, role: 'admin', name: 'Adam Admin' } as const;
