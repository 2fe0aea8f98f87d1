/**
 * Passkeys (WebAuthn) through `@simplewebauthn/server`: two functions per ceremony, as the library
 * is meant to be used — registration (options, verify) at enrolment, authentication (options,
 * verify) at sign-in. Tables `user_passkeys` and `webauthn_challenges` (runtime migration 12).
 *
 * - **Relying party.** The RP ID is the host name of the page's origin: the configured public URL
 *   or the request's own origin (routes pass it). WebAuthn refuses an IP address as RP ID, which
 *   is why every link this server prints uses `localhost`, never `127.0.0.1`.
 * - **Challenges** are made by the library, stored server-side as SHA-256 with the ceremony
 *   (`registration` for one user, `authentication` for anyone), an expiry of 5 minutes, and
 *   deleted when a response presents them: single use, whatever the outcome.
 * - **User verification is required** (a PIN or biometric on the authenticator): a passkey
 *   sign-in stands for a person, not a device left unlocked.
 * - **Credentials**: the credential id, COSE public key (base64url), signature counter and
 *   transports. Nothing secret is stored; the library refuses a counter that went backwards.
 * spec/consent.md §human-sign-in
 */
import { createHash } from 'node:crypto';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  type WebAuthnCredential,
} from '@simplewebauthn/server';
import type { Queryable, Store, StoreTx } from '../store/store.ts';

/** How long a ceremony's challenge lives: 5 minutes, in ms. */
export const CHALLENGE_TTL_MS = 5 * 60_000;

/** The relying party of a ceremony: the page's origin and its host name. */
export interface RelyingParty {
  /** e.g. `http://localhost:4400` — the origin the browser reports in clientDataJSON. */
  origin: string;
  /** The origin's host name, e.g. `localhost`. */
  rpID: string;
  /** Shown by the browser and authenticator: the business's name. */
  rpName: string;
}

/**
 * The relying party for an origin, or undefined when its host is an IP address (WebAuthn refuses
 * one; the route answers `passkey_unavailable` saying to open the `localhost` link).
 */
export function relyingPartyOf(origin: string, rpName: string): RelyingParty | undefined {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return undefined;
  }
  const host = url.hostname;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(host) || host.startsWith('[')) return undefined;
  return { origin: url.origin, rpID: host, rpName };
}

function challengeHash(challenge: string): string {
  return createHash('sha256').update(challenge, 'utf8').digest('hex');
}

async function storeChallenge(
  store: Store,
  challenge: string,
  purpose: 'registration' | 'authentication',
  user: { company_id: number; user_id: number } | undefined,
  now: Date,
): Promise<void> {
  await store.write(async (tx) => {
    await tx.run('DELETE FROM webauthn_challenges WHERE expires_at <= ?', [now.toISOString()]);
    await tx.run(
      'INSERT INTO webauthn_challenges (challenge_hash, purpose, company_id, user_id, expires_at) VALUES (?, ?, ?, ?, ?)',
      [
        challengeHash(challenge),
        purpose,
        user?.company_id ?? null,
        user?.user_id ?? null,
        new Date(now.getTime() + CHALLENGE_TTL_MS).toISOString(),
      ],
    );
  });
}

/** Delete a live challenge of this ceremony (and user); true when this call consumed it. */
async function consumeChallenge(
  store: Store,
  challenge: string,
  purpose: 'registration' | 'authentication',
  user: { company_id: number; user_id: number } | undefined,
  now: Date,
): Promise<boolean> {
  const r = await store.write((tx) =>
    user === undefined
      ? tx.run(
          'DELETE FROM webauthn_challenges WHERE challenge_hash = ? AND purpose = ? AND expires_at > ?',
          [challengeHash(challenge), purpose, now.toISOString()],
        )
      : tx.run(
          'DELETE FROM webauthn_challenges WHERE challenge_hash = ? AND purpose = ? AND company_id = ? AND user_id = ? AND expires_at > ?',
          [challengeHash(challenge), purpose, user.company_id, user.user_id, now.toISOString()],
        ),
  );
  return r.changes === 1;
}

/** The WebAuthn user handle of a tenant user: `<company_id>:<user_id>` as bytes (no personal data). */
function userHandle(user: { company_id: number; user_id: number }): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Buffer.from(`${user.company_id}:${user.user_id}`, 'utf8'));
}

/**
 * Registration, step 1: the options for `navigator.credentials.create` (via
 * `@simplewebauthn/browser`'s `startRegistration`), with the challenge stored for this user.
 * Existing passkeys of the user are excluded (one authenticator registers once).
 */
export async function passkeyRegistrationOptions(
  store: Store,
  rp: RelyingParty,
  user: { company_id: number; user_id: number; name: string },
  now: Date,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const existing = await store.read((q) => credentialsOf(q, user.company_id, user.user_id));
  const options = await generateRegistrationOptions({
    rpName: rp.rpName,
    rpID: rp.rpID,
    userName: user.name,
    userDisplayName: user.name,
    userID: userHandle(user),
    attestationType: 'none',
    excludeCredentials: existing.map((c) => ({ id: c.id, transports: c.transports ?? [] })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
  });
  await storeChallenge(store, options.challenge, 'registration', user, now);
  return options;
}

/**
 * Registration, step 2: verify the browser's response against the stored challenge (consumed),
 * this origin and RP ID, with user verification. On success the credential is stored inside
 * `storeIn` (the caller's transaction, which also consumes the enrolment link) and its id
 * returned; undefined when the response does not verify (never throws for a bad response).
 */
export async function verifyPasskeyRegistration(
  store: Store,
  rp: RelyingParty,
  user: { company_id: number; user_id: number },
  response: unknown,
  now: Date,
  storeIn: (save: (tx: StoreTx) => Promise<void>) => Promise<boolean>,
): Promise<string | undefined> {
  let verified;
  try {
    verified = await verifyRegistrationResponse({
      response: response as RegistrationResponseJSON,
      expectedChallenge: (c) => consumeChallenge(store, c, 'registration', user, now),
      expectedOrigin: rp.origin,
      expectedRPID: rp.rpID,
      requireUserVerification: true,
    });
  } catch {
    return undefined;
  }
  if (!verified.verified) return undefined;
  const cred = verified.registrationInfo.credential;
  const saved = await storeIn(async (tx) => {
    await tx.run(
      'INSERT INTO user_passkeys (credential_id, company_id, user_id, public_key, counter, transports, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [
        cred.id,
        user.company_id,
        user.user_id,
        Buffer.from(cred.publicKey).toString('base64url'),
        cred.counter,
        JSON.stringify(cred.transports ?? []),
        now.toISOString(),
      ],
    );
  });
  return saved ? cred.id : undefined;
}

/**
 * Authentication, step 1: options for `navigator.credentials.get` (discoverable credentials: no
 * user named, the authenticator offers the passkeys it holds for this RP), challenge stored.
 */
export async function passkeyAuthenticationOptions(
  store: Store,
  rp: RelyingParty,
  now: Date,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const options = await generateAuthenticationOptions({ rpID: rp.rpID, userVerification: 'required' });
  await storeChallenge(store, options.challenge, 'authentication', undefined, now);
  return options;
}

/**
 * Authentication, step 2: find the credential by the response's id, verify the assertion against
 * the stored challenge (consumed), origin, RP ID and stored public key with user verification,
 * and move the signature counter. Returns the user it signs in, or undefined (unknown credential,
 * bad signature, reused challenge, counter gone backwards): never throws for a bad response.
 */
export async function verifyPasskeyAuthentication(
  store: Store,
  rp: RelyingParty,
  response: unknown,
  now: Date,
): Promise<{ company_id: number; user_id: number; credential_id: string } | undefined> {
  const id = (response as { id?: unknown } | null)?.id;
  if (typeof id !== 'string' || id === '' || id.length > 1024) return undefined;
  const row = await store.read((q) =>
    q.get<Record<string, unknown>>(
      'SELECT credential_id, company_id, user_id, public_key, counter, transports FROM user_passkeys WHERE credential_id = ?',
      [id],
    ),
  );
  if (row === undefined) return undefined;
  const credential = rowToCredential(row);
  let verified;
  try {
    verified = await verifyAuthenticationResponse({
      response: response as AuthenticationResponseJSON,
      expectedChallenge: (c) => consumeChallenge(store, c, 'authentication', undefined, now),
      expectedOrigin: rp.origin,
      expectedRPID: rp.rpID,
      credential,
      requireUserVerification: true,
    });
  } catch {
    return undefined;
  }
  if (!verified.verified) return undefined;
  const moved = await store.write((tx) =>
    tx.run(
      'UPDATE user_passkeys SET counter = ?, last_used_at = ? WHERE credential_id = ? AND (counter < ? OR counter = 0)',
      [
        verified.authenticationInfo.newCounter,
        now.toISOString(),
        credential.id,
        verified.authenticationInfo.newCounter,
      ],
    ),
  );
  if (moved.changes !== 1) return undefined;
  return { company_id: Number(row.company_id), user_id: Number(row.user_id), credential_id: credential.id };
}

function rowToCredential(row: Record<string, unknown>): WebAuthnCredential {
  let transports: string[] = [];
  try {
    const t = typeof row.transports === 'string' ? (JSON.parse(row.transports) as unknown) : row.transports;
    if (Array.isArray(t)) transports = t.filter((x): x is string => typeof x === 'string');
  } catch {
    transports = [];
  }
  return {
    id: String(row.credential_id),
    publicKey: new Uint8Array(Buffer.from(String(row.public_key), 'base64url')),
    counter: Number(row.counter),
    transports: transports as WebAuthnCredential['transports'],
  };
}

/** The user's passkeys (for excludeCredentials and `solid users list`). */
export async function credentialsOf(
  q: Queryable,
  companyId: number,
  userId: number,
): Promise<WebAuthnCredential[]> {
  const rows = await q.all<Record<string, unknown>>(
    'SELECT credential_id, public_key, counter, transports FROM user_passkeys WHERE company_id = ? AND user_id = ?',
    [companyId, userId],
  );
  return rows.map(rowToCredential);
}
