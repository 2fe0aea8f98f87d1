/**
 * Step 10, consent (writes): none / confirmation / typed phrase. A first call answers
 * `dispatch_pending` with a nonce (and, for a typed phrase, a pending approval row); the confirmed
 * call brings the nonce back and is checked here: `nonce_required`, `nonce_invalid`,
 * `nonce_expired`, `phrase_channel_human` (the tenant counts a typed phrase only from a human
 * channel), `phrase_mismatch`, `approval_rejected`. The nonce is burned later, in the effect's own
 * transaction (ledger/write/execute.ts), so deny wins even against a decision made meanwhile.
 * Spec: spec/consent.md §protocol §nonce §approvals §phrase-channel.
 */
import { performance } from 'node:perf_hooks';
import type { Envelope } from '../../spec/types.ts';
import type { StoreTx } from '../../store/store.ts';
import { reasonInfo } from '../../spec/reasons.ts';
import { VerbError, isVerbError } from '../errors.ts';
import { appendAudit, redact } from '../ledger/write/audit.ts';
import { argsHash } from '../ledger/write/idempotency.ts';
import type { Consent } from '../ledger/write/execute.ts';
import { issueNonce, verifyNonce, type NoncePayload } from '../consent/nonce.ts';
import { phraseHash, phrasesMatch } from '../consent/typed-phrase.ts';
import { findApproval, insertPendingApproval } from '../consent/approvals-store.ts';
import { assertDailyCapOpen } from '../consent/daily-caps.ts';
import {
  approvalRejected,
  humanApprovalPlaces,
  nonceReplayed,
  phraseChannelRefusal,
} from '../consent/refusals.ts';
import { capClassOf, entryFor, settle, type Keyed, type Resolved, type Step } from './call.ts';

export const consent: Step<Keyed> = {
  name: 'consent',
  async run(c) {
    const decided = await consentGate(c);
    if ('ok' in decided) return decided;
    c.consent = decided;
    return undefined;
  },
};

/**
 * The phrase of a typed-phrase pending answer, for the transport that must show it to a human
 * (MCP elicitation) even when the answer withholds it from the agent (`phrase_channel: human`).
 * Held beside the envelope's `consent` object, never in it: it is lost in any serialisation, so
 * only in-process transport code can read it. spec/consent.md §phrase-channel
 */
const PENDING_PHRASES = new WeakMap<object, string>();

/** The phrase of a pending answer's typed-phrase gate (in-process only; see PENDING_PHRASES). */
export function pendingPhrase(envelope: Envelope): string | undefined {
  const c = envelope.consent;
  if (c === undefined) return undefined;
  return PENDING_PHRASES.get(c) ?? c.typed_phrase;
}

async function consentGate(c: Keyed): Promise<Consent | Envelope> {
  const { rt, verb, principal: p, options, caller } = c;
  const cls = c.consentClass;
  if (cls === null || cls === 'READ') return { requiresApproval: false };
  const typed = cls === 'WRITE_FINANCIAL' || cls === 'IRREVERSIBLE';
  const phrase = typed ? (c.delegated ? c.delegated.phrase : verb.definition.phrase!(c.args)) : undefined;
  if (typed && (phrase === undefined || phrase === ''))
    throw new Error(`${verb.name}: typed-phrase class without a phrase`);
  // phrase_channel human: a typed phrase counts only from a human channel (spec/consent.md §phrase-channel).
  const humanOnly = typed && (await rt.phraseChannel(p.company_id)) === 'human';
  const hasNonce = options.nonce !== undefined && options.nonce !== null && options.nonce !== '';
  if (!hasNonce) {
    if (options.confirm === true) {
      throw new VerbError('nonce_required', 'confirm was sent without the nonce from the pending answer.', {
        hint: `Call ${verb.name} without confirm first; it answers dispatch_pending with a nonce. Then confirm with that nonce${typed ? ' and the typed phrase' : ''}.`,
      });
    }
    return pending(c, phrase, humanOnly);
  }
  if (options.confirm !== true) {
    // A nonce is the pending answer's token; only an explicit confirm=true spends it. A caller
    // sending confirm=false (or leaving it out) has not confirmed: nothing runs.
    throw new VerbError(
      'invalid_request',
      'A nonce confirms a pending call only together with confirm=true; nothing was run.',
      {
        hint: `To run ${verb.name}, call it again with the same arguments, confirm=true and the nonce${typed ? ' (and the typed phrase)' : ''}; to decline, do nothing — the nonce expires.`,
      },
    );
  }
  const payload: NoncePayload = verifyNonce(rt.secrets, options.nonce, {
    verb: verb.name,
    argsHash: argsHash(c.args, c),
    companyId: p.company_id,
    userId: p.user_id,
    nowMs: c.now.getTime(),
  });
  if (payload.k !== cls || (typed ? payload.p !== phraseHash(phrase!) : payload.p !== null)) {
    throw new VerbError('nonce_invalid', 'The nonce was issued for another consent gate or phrase.', {
      hint: `Call ${verb.name} again without confirm to get a fresh nonce.`,
    });
  }
  const decided: Consent = {
    jti: payload.j,
    nonceExpires: new Date(payload.e * 1000).toISOString(),
    requiresApproval: typed,
  };
  if (!typed) return decided;
  decided.burnApproval = true;
  if (options.typed_phrase === undefined || options.typed_phrase === null) {
    // No phrase: only an out-of-band decision can let this call through.
    const approval = await rt.store.read((q) => findApproval(q, payload.j, p.company_id));
    if (approval !== undefined) {
      decided.approvalId = approval.approval_id;
      if (approval.status === 'approved') {
        decided.approvedBy = Number(approval.decided_by);
        decided.approvedAt = approval.decided_at as string;
        return decided;
      }
      if (approval.status === 'rejected') throw approvalRejected(verb.name, decided.approvalId);
      if (approval.status === 'consumed') throw nonceReplayed(verb.name);
    }
    // Still waiting for the human: answer pending again with the same nonce — audited like the
    // first pending answer, so an agent polling for a decision leaves a row per attempt.
    const auditId = await recordPending(c, true);
    return pendingEnvelope(
      c,
      {
        class: cls,
        gate: 'typed_phrase',
        nonce: options.nonce!,
        expires_at: decided.nonceExpires!,
        summary: summaryOf(c),
        typed_phrase: phrase!,
        ...(humanOnly ? { phrase_channel: 'human' as const } : {}),
        ...(decided.approvalId ? { approval_id: decided.approvalId } : {}),
      },
      'Waiting for the typed phrase or an out-of-band approval.',
      auditId,
    );
  }
  if (humanOnly && caller.phraseChannel !== 'human') {
    // Refused whatever the phrase (matching or not: no oracle); nothing is consumed. A rejection
    // recorded by a human still wins (§approvals: deny wins).
    const approval = await rt.store.read((q) => findApproval(q, payload.j, p.company_id));
    const approvalId = approval?.approval_id;
    if (approval?.status === 'rejected') throw approvalRejected(verb.name, approvalId);
    throw phraseChannelRefusal(
      verb.name,
      c.delegated?.roleFloor ?? verb.roleFloor,
      approvalId,
      decided.nonceExpires!,
    );
  }
  if (!phrasesMatch(phrase!, options.typed_phrase)) {
    throw new VerbError(
      'phrase_mismatch',
      'The typed phrase does not match the phrase shown, character for character.',
      {
        hint: humanOnly
          ? 'Type the phrase exactly as it is shown where you type it (same case, spaces and letters).'
          : `The human must type exactly: ${phrase}`,
      },
    );
  }
  // A rejection or an earlier use of this nonce is found when the approval is consumed, in the
  // effect's own transaction (executeInTx): deny wins even against a decision made meanwhile.
  return decided;
}

function summaryOf(c: Resolved): string {
  const verb = c.verb;
  if (c.delegated) return c.delegated.summary;
  return (
    verb.definition.summary?.(c.args) ??
    `Run ${verb.name} with ${JSON.stringify(redact(c.args, verb.secretPaths))}.`
  );
}

/** The first answer of a gated call: a fresh nonce, the preview, and for a typed phrase an approval row. */
async function pending(c: Keyed, phrase: string | undefined, humanOnly: boolean): Promise<Envelope> {
  const { rt, verb, principal: p } = c;
  const cls = c.consentClass!;
  const typed = phrase !== undefined;
  // A cap already used up today (or 0) refuses now: no nonce, approval or phrase for a write that
  // could not run. The confirmed write still counts atomically (execute).
  const capClass = capClassOf(c);
  if (capClass !== null && capClass !== 'READ' && capClass !== 'BLOCKED') {
    const caps = (await rt.tenants.get(p.company_id))?.settings.caps;
    await rt.store.read((q) => assertDailyCapOpen(q, caps, p.company_id, capClass, c.now));
  }
  const issued = issueNonce(rt.secrets, {
    verb: verb.name,
    argsHash: argsHash(c.args, c),
    companyId: p.company_id,
    userId: p.user_id,
    consentClass: cls,
    phraseHash: typed ? phraseHash(phrase) : null,
    nowMs: c.now.getTime(),
    ttlSeconds: rt.options.nonceTtlSeconds,
  });
  const summary = summaryOf(c);
  // The preview runs before any consent is asked: when it finds the action impossible (an unknown
  // or foreign id, a domain rule), that answer is the call's answer — no nonce, no approval row.
  let preview: Record<string, unknown> | undefined;
  try {
    preview = await rt.previewFor(verb, p, c.args, c.caller);
  } catch (err) {
    const kind = isVerbError(err) ? reasonInfo(err.reason, rt.registry.reasons).kind : undefined;
    if (kind === 'not_found' || kind === 'domain' || kind === 'conflict') throw err;
    preview = undefined;
  }
  let approvalId: string | undefined;
  if (typed) approvalId = `apv_${issued.jti.slice(0, 16)}`;
  const given = {
    class: cls,
    gate: typed ? ('typed_phrase' as const) : ('confirmation' as const),
    nonce: issued.nonce,
    expires_at: issued.expiresAt,
    summary,
    ...(typed ? { typed_phrase: phrase, approval_id: approvalId } : {}),
    ...(humanOnly ? { phrase_channel: 'human' as const } : {}),
    ...(preview !== undefined ? { preview } : {}),
  };
  const auditId = await recordPending(c, typed, async (tx) => {
    if (phrase !== undefined && approvalId !== undefined) {
      await insertPendingApproval(tx, {
        approvalId,
        companyId: p.company_id,
        jti: issued.jti,
        verb: verb.name,
        argsJson: JSON.stringify(redact(c.args, verb.secretPaths)),
        consentClass: cls,
        typedPhrase: phrase,
        summary,
        requestedBy: p.user_id,
        requestedRole: p.role,
        agentType: p.agent_type,
        createdAt: c.now.toISOString(),
        expiresAt: issued.expiresAt,
        roleFloor: c.delegated?.roleFloor ?? verb.roleFloor,
      });
    }
  });
  return pendingEnvelope(c, given, undefined, auditId);
}

/**
 * Append the `pending` / `dispatch_pending` audit row of a consent answer (after `before`, in the
 * same store transaction) and settle the outcome. Returns the row's audit_id.
 */
async function recordPending(
  c: Keyed,
  typed: boolean,
  before?: (tx: StoreTx) => Promise<void>,
): Promise<number> {
  const rt = c.rt;
  const latency = performance.now() - c.t0;
  const row = await rt.store.write(async (tx) => {
    await before?.(tx);
    const pendingRow = await appendAudit(
      tx,
      entryFor(c, 'pending', 'dispatch_pending', latency, { requiresApproval: typed }),
    );
    tx.afterCommit(() => rt.afterWrite(pendingRow));
    return pendingRow;
  });
  settle(c, false, 'dispatch_pending', latency, row.audit_id);
  return row.audit_id;
}

function pendingEnvelope(
  c: Keyed,
  given: NonNullable<Envelope['consent']>,
  message?: string,
  auditId?: number,
): Envelope {
  const verb = c.verb;
  const typed = given.gate === 'typed_phrase';
  const floor = c.delegated?.roleFloor ?? verb.roleFloor;
  // phrase_channel human: an agent channel does not see the phrase (the in-process transport that
  // asks a human still can: pendingPhrase). spec/consent.md §phrase-channel
  const withheld = typed && given.phrase_channel === 'human' && c.caller.phraseChannel !== 'human';
  let shown = given;
  if (withheld) {
    const { typed_phrase: _hidden, ...rest } = given;
    shown = rest;
    PENDING_PHRASES.set(shown, given.typed_phrase!);
  }
  const how = withheld
    ? `This tenant counts a typed phrase only from a human where they type it, so the phrase is not shown here. Tell the human: ${shown.summary} Ask a user with the ${floor} role or higher to approve ${shown.approval_id} ${humanApprovalPlaces(shown.approval_id === undefined ? undefined : String(shown.approval_id))}; then call ${verb.name} again with the same arguments, confirm=true and the nonce (no typed_phrase).`
    : typed
      ? `Show the human this exact phrase: "${shown.typed_phrase}". When they type it, call ${verb.name} again with the same arguments, confirm=true, the nonce and typed_phrase set to what they typed. Or have a user with the ${floor} role or higher approve ${shown.approval_id} out of band (approvals.approve with the typed phrase, or \`solid approvals approve ${shown.approval_id}\`), then call ${verb.name} again with the same arguments, confirm=true and the nonce (no typed_phrase).`
      : `Ask the human to confirm: ${shown.summary} Then call ${verb.name} again with the same arguments, confirm=true and the nonce.`;
  const env: Envelope = {
    ok: false,
    verb: verb.name,
    error: {
      reason: 'dispatch_pending',
      message:
        message ??
        (typed
          ? `${verb.name} needs a human to type a confirmation phrase before it runs.`
          : `${verb.name} needs a human confirmation before it runs.`),
      hint: `${how} The nonce expires at ${shown.expires_at}.`,
    },
    consent: shown,
  };
  if (auditId !== undefined) env.audit_id = auditId;
  return env;
}
