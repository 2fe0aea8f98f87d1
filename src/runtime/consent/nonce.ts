/**
 * Consent nonces: single-use, signed tokens issued at preflight and checked at confirmation.
 *
 * A nonce is `n1.<kid>.<payload>.<mac>` where the MAC is HMAC-SHA256 (key derived from the nonce
 * secret for purpose "nonce", key id inside so secrets can rotate) over a payload that binds the
 * verb, the canonical args (RFC 8785, hashed), company_id, user_id, the typed phrase (hashed), the
 * consent class and the expiry. Any change to any of them after preflight fails verification.
 * Single use is enforced by the ledger: the nonce's `jti` is inserted in the same store transaction
 * as the effect, so a replay is refused (`nonce_replayed`).
 *
 * Spec: spec/consent.md §nonce.
 */
import { randomBytes } from 'node:crypto';
import type { Secrets } from '../secrets.ts';
import type { VerbClass } from '../../spec/types.ts';
import { VerbError } from '../errors.ts';
import { refuse } from '../refusals.ts';

export const NONCE_TTL_SECONDS = 300;

export interface NoncePayload {
  /** verb name */
  v: string;
  /** SHA-256 (base64url) of the canonical args */
  a: string;
  /** company_id */
  c: number;
  /** user_id */
  u: number;
  /** consent class */
  k: VerbClass;
  /** SHA-256 of the typed phrase, or null for a confirmation click */
  p: string | null;
  /** expiry, unix seconds */
  e: number;
  /** unique id (burned on use) */
  j: string;
  /**
   * 0: the pending answer that issued this nonce kept no approvals row for it (a plain
   * confirmation), so its confirm has no row to consume. Absent: it may have one.
   */
  r?: 0;
}

export interface IssueNonceInput {
  verb: string;
  argsHash: string;
  companyId: number;
  userId: number;
  consentClass: VerbClass;
  phraseHash: string | null;
  nowMs: number;
  ttlSeconds?: number;
  /**
   * Re-seal the nonce of an earlier pending answer (its id and expiry, unix seconds) instead of
   * a fresh one: a plain retry that is still waiting answers with the same nonce. §plain-retry
   */
  reissue?: { jti: string; expiresAtSec: number };
  /** false: no approvals row is kept for this nonce (sealed as `r: 0`); default true. */
  approvalRow?: boolean;
}

/** Issue a nonce. Returns the token, its jti and its expiry (ISO 8601). */
export function issueNonce(
  secrets: Secrets,
  input: IssueNonceInput,
): { nonce: string; jti: string; expiresAt: string } {
  const e =
    input.reissue?.expiresAtSec ?? Math.floor(input.nowMs / 1000) + (input.ttlSeconds ?? NONCE_TTL_SECONDS);
  const j = input.reissue?.jti ?? randomBytes(16).toString('base64url');
  const payload: NoncePayload = {
    v: input.verb,
    a: input.argsHash,
    c: input.companyId,
    u: input.userId,
    k: input.consentClass,
    p: input.phraseHash,
    e,
    j,
  };
  if (input.approvalRow === false) payload.r = 0;
  return {
    nonce: secrets.sealToken('nonce', 'n1', payload as unknown as Record<string, unknown>),
    jti: j,
    expiresAt: new Date(e * 1000).toISOString(),
  };
}

export interface VerifyNonceInput {
  verb: string;
  argsHash: string;
  companyId: number;
  userId: number;
  nowMs: number;
  /**
   * Answer an expired but otherwise valid nonce instead of throwing `nonce_expired`: its
   * `expired` is then true. Only for a typed-phrase gate, whose approval may outlive the nonce
   * (a per-class approval TTL); the caller decides from the approval row. spec/consent.md §approvals
   */
  allowExpired?: boolean;
}

/**
 * Verify a nonce against the call it confirms. Throws VerbError:
 * `nonce_invalid` (malformed, forged, other tenant/user/verb, args changed), `nonce_expired`.
 * Replay is detected later, by the burn in the effect's transaction.
 */
export function verifyNonce(
  secrets: Secrets,
  token: unknown,
  input: VerifyNonceInput,
): NoncePayload & { expired?: true } {
  const p = secrets.openToken<NoncePayload>('nonce', 'n1', token);
  if (p === undefined || typeof p.j !== 'string' || typeof p.e !== 'number')
    throw refuse.nonceInvalid('The nonce is malformed or its signature does not verify.');
  if (p.c !== input.companyId || p.u !== input.userId)
    throw refuse.nonceInvalid('The nonce was issued to another tenant or user.');
  if (p.v !== input.verb)
    throw refuse.nonceInvalid(`The nonce was issued for verb ${p.v}, not ${input.verb}.`);
  if (p.a !== input.argsHash)
    throw refuse.nonceInvalid(
      'The arguments changed after the nonce was issued; the consent covered other arguments.',
    );
  if (input.nowMs >= p.e * 1000) {
    if (input.allowExpired === true) return { ...p, expired: true };
    throw new VerbError('nonce_expired', `The nonce expired at ${new Date(p.e * 1000).toISOString()}.`, {
      hint: 'Nonces live 300 seconds. Call the verb again without confirm to get a fresh one.',
    });
  }
  return p;
}
