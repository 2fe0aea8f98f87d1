/**
 * Running one capability for a verified platform through the one pipeline
 * (`rt.dispatch({ surface: 'ucp', principal })`), and the answer's body and status.
 *
 * Principal: the tenant of the route; `user_id` = platformUserId(profile URL) (deterministic, in
 * [10⁹, 2·10⁹)); `role` = the platform's configured role (default read_only); the tenant's tier;
 * `agent_type` = `ucp:<profile host>`; `key_id` = `ucp:<keyid>` (audit).
 *
 * Consent: a verified signature counts as the human's confirmation only up to the class the
 * operator allows the platform (`max_class`, READ by default, at most WRITE_REVERSIBLE):
 *   - the capability is not in the platform's allow-list → 403 capability_not_allowed (no dispatch;
 *     the refusal is an audit row in the tenant, its audit_id in the answer);
 *   - a confirmation-gated answer (WRITE_REVERSIBLE) within the allowance → the transport confirms
 *     it at once with the nonce it was given (preflight + confirm: two audit rows, pending then
 *     completed); above the allowance → 403 consent_not_implied and the nonce is withheld;
 *   - a typed-phrase answer (WRITE_FINANCIAL, IRREVERSIBLE) is never implied: 202 with the
 *     pending answer (nonce, approval_id) and a hint to approve out of band; after the approval
 *     the platform repeats the signed request with `Solid-Consent-Nonce: <nonce>` (confirm, no
 *     phrase). A typed phrase is never accepted over UCP.
 *
 * Answer body: the solid-verbs envelope with a `ucp` member `{ version, status, capabilities }`
 * (the capability and the ones it extends) and, when not ok, UCP `messages[]` `{ type: "error",
 * code: <reason>, content, severity }`. Status: the reason table (envelopeToHttp) except
 * `idempotency_key_reused` → 409 (UCP: same key, different body), dispatch_pending → 202.
 *
 * Spec: spec/transports.md §ucp-dispatch, spec/consent.md.
 */
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import type { Envelope, Principal, Tier } from '../../spec/types.ts';
import { envelopeToHttp } from '../http/envelope-map.ts';
import { packReason, type ReasonTable } from '../../spec/reasons.ts';
import { UCP_VERSION, type CapabilityEntry } from './capability-names.ts';
import { capabilityAllowed, classImplied } from './ucp-config.ts';
import type { VerifiedPlatform } from './verify-request.ts';
import { agentPrincipal } from '../../identity/principal.ts';
import { VerbError } from '../../runtime/errors.ts';

/** What the transport answers: status, extra headers, JSON body (signed by the plugin). */
export interface CapabilityAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export interface CapabilityCall {
  rt: Runtime;
  tenant: { company_id: number; tier: Tier };
  entry: CapabilityEntry;
  capabilityVersion: string;
  platform: VerifiedPlatform;
  /** The platform's user_id (PlatformUsers.userIdOf its profile URL). */
  userId: number;
  args: unknown;
  idempotencyKey?: string;
  /** `Solid-Consent-Nonce`: confirm a typed-phrase call a human approved out of band. */
  consentNonce?: string;
  signal?: AbortSignal;
}

/** The dispatch principal of a verified platform on a tenant; `userId` from PlatformUsers.userIdOf. */
export function platformPrincipal(
  tenant: { company_id: number; tier: Tier },
  platform: VerifiedPlatform,
  userId: number,
): Principal {
  return agentPrincipal({
    company_id: tenant.company_id,
    user_id: userId,
    role: platform.policy.role,
    tier: tenant.tier,
    agent_type: `ucp:${platform.host}`,
    key_id: `ucp:${platform.signature.keyid}`.slice(0, 200),
  });
}

/** UCP message severity of a refusal. */
function severityOf(status: number): string {
  if (status === 202) return 'requires_buyer_review';
  if (status === 401 || status === 403 || status === 404) return 'unrecoverable';
  return 'recoverable';
}

/** The `ucp` member: version, status, and the capability with the ones it extends. */
export function ucpMember(
  entry: CapabilityEntry | undefined,
  capabilityVersion: string,
  ok: boolean,
): Record<string, unknown> {
  const capabilities: Record<string, unknown[]> = {};
  if (entry !== undefined) {
    capabilities[entry.name] = [{ version: capabilityVersion }];
    for (const parent of entry.extends) capabilities[parent] = [{ version: capabilityVersion }];
  }
  return { version: UCP_VERSION, status: ok ? 'success' : 'error', capabilities };
}

/**
 * Map an envelope to the UCP answer (see the header). `status` overrides the reason table's.
 */
export function answerOf(
  envelope: Envelope,
  entry: CapabilityEntry | undefined,
  capabilityVersion: string,
  status?: number,
  reasons?: ReasonTable,
): CapabilityAnswer {
  const mapped = envelopeToHttp(envelope, undefined, reasons);
  const headers = { ...mapped.headers };
  delete headers['www-authenticate'];
  let code = status ?? mapped.status;
  if (status === undefined && envelope.error?.reason === 'idempotency_key_reused') code = 409;
  const body: Record<string, unknown> = { ucp: ucpMember(entry, capabilityVersion, envelope.ok) };
  if (!envelope.ok) {
    const e = envelope.error!;
    body.messages = [
      {
        type: 'error',
        code: e.reason,
        content: e.hint === undefined ? e.message : `${e.message} ${e.hint}`,
        severity: severityOf(code),
      },
    ];
  }
  Object.assign(body, envelope);
  return { status: code, headers, body };
}

/** A refusal decided by the transport itself (not a dispatch outcome), in the same answer shape. */
export function refusalOf(
  verb: string,
  entry: CapabilityEntry | undefined,
  capabilityVersion: string,
  status: number,
  reason: string,
  message: string,
  hint?: string,
  extra: Partial<Envelope> = {},
): CapabilityAnswer {
  const envelope: Envelope = {
    ok: false,
    verb,
    error: { reason, message, ...(hint !== undefined ? { hint } : {}) },
    ...extra,
  };
  return answerOf(envelope, entry, capabilityVersion, status);
}

/**
 * Run the capability (see the header for the consent rules).
 * @returns the answer to sign and send; never throws for domain outcomes
 */
export async function runCapability(call: CapabilityCall): Promise<CapabilityAnswer> {
  const { rt, entry, platform, capabilityVersion } = call;
  const verb = entry.verb.name;
  if (!capabilityAllowed(platform.policy, entry.name)) {
    const recorded = await rt.recordRefusal(
      { surface: 'ucp', principal: platformPrincipal(call.tenant, platform, call.userId) },
      verb,
      new VerbError(
        packReason('capability_not_allowed'),
        `The platform ${platform.profileUrl} may not use ${entry.name}.`,
        {
          hint: "Ask the business to add the capability to this platform's allow-list (settings.ucp.platforms[].allow).",
        },
      ),
    );
    return refusalOf(
      verb,
      entry,
      capabilityVersion,
      recorded.error!.reason === 'capability_not_allowed' ? 403 : 503,
      recorded.error!.reason,
      recorded.error!.message,
      recorded.error!.hint,
      recorded.audit_id !== undefined ? { audit_id: recorded.audit_id } : {},
    );
  }
  const caller = {
    surface: 'ucp' as const,
    principal: platformPrincipal(call.tenant, platform, call.userId),
    ...(call.signal ? { signal: call.signal } : {}),
  };
  const base = call.idempotencyKey === undefined ? {} : { idempotency_key: call.idempotencyKey };
  if (call.consentNonce !== undefined) {
    return typedPhraseHint(
      await rt.dispatch(caller, verb, call.args, { ...base, confirm: true, nonce: call.consentNonce }),
      entry,
      capabilityVersion,
      rt.registry.reasons,
    );
  }
  const first = await rt.dispatch(caller, verb, call.args, base);
  const consent = first.consent;
  if (first.error?.reason !== 'dispatch_pending' || consent === undefined)
    return answerOf(first, entry, capabilityVersion, undefined, rt.registry.reasons);
  if (consent.gate === 'typed_phrase')
    return typedPhraseHint(first, entry, capabilityVersion, rt.registry.reasons);
  if (consent.class !== 'BLOCKED' && classImplied(consent.class, platform.policy.maxClass)) {
    // The signature is the click: confirm with the nonce the preflight issued.
    return answerOf(
      await rt.dispatch(caller, verb, call.args, { ...base, confirm: true, nonce: consent.nonce }),
      entry,
      capabilityVersion,
      undefined,
      rt.registry.reasons,
    );
  }
  return refusalOf(
    verb,
    entry,
    capabilityVersion,
    403,
    'consent_not_implied',
    `${verb} is ${consent.class}; a signature from ${platform.profileUrl} implies consent up to ${platform.policy.maxClass} only.`,
    'A human must run this action on another surface (dashboard, CLI), or the business raises max_class for this platform (settings.ucp.platforms[].max_class).',
    { ...(first.audit_id !== undefined ? { audit_id: first.audit_id } : {}) },
  );
}

/** A typed-phrase pending answer: 202 with the out-of-band approval path in the hint. */
function typedPhraseHint(
  envelope: Envelope,
  entry: CapabilityEntry,
  capabilityVersion: string,
  reasons: ReasonTable,
): CapabilityAnswer {
  const consent = envelope.consent;
  if (
    envelope.error?.reason !== 'dispatch_pending' ||
    consent === undefined ||
    consent.gate !== 'typed_phrase'
  )
    return answerOf(envelope, entry, capabilityVersion, undefined, reasons);
  const approval = consent.approval_id ?? '(see approvals.list)';
  const hint =
    `A typed phrase cannot be given over UCP: a user of this business with the required role must approve ${approval} out of band ` +
    `(the dashboard, approvals.approve, or \`solid approvals approve ${approval}\`). Then repeat this signed request with the same body ` +
    `and the header Solid-Consent-Nonce: ${consent.nonce} (covered by the signature). The nonce expires at ${consent.expires_at}.`;
  return answerOf(
    { ...envelope, error: { ...envelope.error, hint } },
    entry,
    capabilityVersion,
    202,
    reasons,
  );
}
