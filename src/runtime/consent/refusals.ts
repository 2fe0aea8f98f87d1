/**
 * The consent refusals built in more than one place: by the pipeline's consent step, by the nonce
 * burn inside a write's transaction (ledger/write/execute.ts) and by the approvals verbs.
 *
 * Spec: spec/consent.md §nonce, §approvals, §phrase-channel; spec/reasons.md.
 */
import { VerbError } from '../errors.ts';
import { mayConsent, type ConsentSettings } from '../../identity/consent-predicate.ts';
import type { Principal } from '../../spec/types.ts';

/** Where a human approves an approval, in words for hints (spec/consent.md §phrase-channel). */
export function humanApprovalPlaces(approvalId: string | undefined): string {
  const id = approvalId ?? '<approval_id>';
  return `on the approval page (the pending answer's approval_url), in the dashboard ("Waiting for you"), or with \`solid approvals approve ${id}\` typed at a terminal on the server`;
}

/**
 * human_required: an agent credential (API key, OAuth token, a session opened with a key, a
 * program the agent drives) tried to approve or reject a pending action. Only a signed-in human
 * decides, whatever the tenant's phrase_channel; the approval stays as it was. spec/consent.md §channels
 */
export function humanMustDecide(
  decision: 'approve' | 'reject',
  floor: string,
  approvalId: string,
): VerbError {
  return new VerbError(
    'human_required',
    `Only a signed-in human may ${decision} approval ${approvalId}; an agent's credential cannot. Nothing changed.`,
    {
      hint: `Ask a user with the ${floor} role or higher to decide it ${humanApprovalPlaces(approvalId)}.`,
      details: { approval_id: approvalId },
    },
  );
}

/**
 * phrase_channel_human: a typed phrase arrived through an agent channel while the tenant counts
 * one only from a human channel. spec/consent.md §phrase-channel, spec/reasons.md
 */
export function phraseChannelRefusal(
  verbName: string,
  floor: string,
  approvalId: string | undefined,
  expiresAt: string,
): VerbError {
  return new VerbError(
    'phrase_channel_human',
    `This tenant counts a typed phrase only when a human types it where they approve; a phrase sent through this channel is not consent. Nothing ran${approvalId ? ` and approval ${approvalId} stays pending` : ''}.`,
    {
      hint: `Ask a user with the ${floor} role or higher to approve ${approvalId ?? 'the pending request'} ${humanApprovalPlaces(approvalId)}; then call ${verbName} again with the same arguments, confirm=true and the nonce (no typed_phrase) before ${expiresAt}.`,
      details: { ...(approvalId ? { approval_id: approvalId } : {}), expires_at: expiresAt },
    },
  );
}

/** approval_rejected: a human rejected the approval of this call (deny wins). spec/consent.md §approvals */
export function approvalRejected(
  verbName: string,
  approvalId: string | undefined,
  note?: string | null,
): VerbError {
  const said = note !== undefined && note !== null && note !== '';
  return new VerbError(
    'approval_rejected',
    `A human rejected this ${verbName} request${approvalId ? ` (approval ${approvalId})` : ''}.${said ? ` The human's words: "${note}"` : ''}`,
    {
      hint: said
        ? "Do not retry the same action; read the human's words (details.human_note) and ask them what they want instead."
        : 'Do not retry the same action; ask the human what they want instead.',
      details: {
        ...(approvalId ? { approval_id: approvalId } : {}),
        ...(said ? { human_note: note, human_note_label: "The approver's own words, not the agent's." } : {}),
      },
    },
  );
}

/** nonce_replayed: the confirmation nonce was already spent. spec/consent.md §nonce */
export function nonceReplayed(verbName: string): VerbError {
  return new VerbError('nonce_replayed', 'This confirmation nonce was already used; each nonce works once.', {
    hint: `Call ${verbName} again without confirm for a new nonce.`,
  });
}

/**
 * approval_superseded: the approval (and so the nonce of its call) answered an attempt that is
 * over — the identical action completed by another path, or the pending call was withdrawn. An
 * approval answers one attempt (spec/consent.md §approvals); nothing ran.
 */
export function approvalSuperseded(verbName: string, approvalId: string, note: string | null): VerbError {
  return new VerbError(
    'approval_superseded',
    `Approval ${approvalId} no longer answers this ${verbName} call: ${note ?? 'it was superseded.'} Nothing ran.`,
    {
      hint: `Check the outcome in audit.trail before acting again; if ${verbName} is still needed, call it again without confirm for a fresh pending request.`,
      details: { approval_id: approvalId, status: 'superseded' },
    },
  );
}

/**
 * A change to how this business's consent works (loosening a cap or the blocklist, gate rules,
 * approval TTL, the channel settings, where webhooks go) is a human's act: returns when identity's
 * predicate allows `change_consent_settings` to `principal`, else throws `human_required` naming
 * `what` (spec/consent.md §channels). The one check every such verb calls.
 * @throws VerbError human_required
 */
export function requireHumanToChange(
  principal: Principal | null | undefined,
  settings: ConsentSettings | undefined,
  what: string,
): void {
  if (mayConsent(principal, 'change_consent_settings', settings)) return;
  throw new VerbError(
    'human_required',
    `Only a signed-in human may change ${what}; an agent's credential cannot. Nothing changed.`,
    {
      hint: 'A person signs in to the dashboard (passkey or TOTP) and changes it there, or runs the solid command at a terminal on the server with their authenticator code.',
    },
  );
}
