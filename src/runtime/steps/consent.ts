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
import { issueNonce, verifyNonce } from '../consent/nonce.ts';
import { phraseHash, phrasesMatch, withoutPhrase } from '../consent/typed-phrase.ts';
import {
  effectiveStatus,
  findApprovalByJti,
  insertPendingApproval,
  type ApprovalRecord,
} from '../consent/approvals-store.ts';
import { emitWebhookEvent } from '../ledger/write/webhook-endpoints.ts';
import { assertDailyCapOpen } from '../consent/daily-caps.ts';
import { describeRule, raiseGate, raisedPhrase, type RaisedGate } from '../consent/gate-rules.ts';
import { agentTextValues } from '../consent/agent-text.ts';
import {
  approvalRejected,
  approvalSuperseded,
  humanApprovalPlaces,
  nonceReplayed,
  phraseChannelRefusal,
} from '../consent/refusals.ts';
import { refuse } from '../refusals.ts';
import { ROLE_RANK } from '../verb.ts';
import type { TenantSettings } from '../tenants.ts';
import { mayConsent, phraseChannelOf } from '../../identity/consent-predicate.ts';
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

/** The approval TTL of a typed-phrase class for a tenant (seconds), never below the nonce TTL. */
function approvalTtlSeconds(settings: TenantSettings | undefined, cls: string, nonceTtl: number): number {
  const minutes = settings?.approval_ttl_minutes?.[cls as 'WRITE_FINANCIAL' | 'IRREVERSIBLE'];
  return typeof minutes === 'number' && Number.isFinite(minutes)
    ? Math.max(nonceTtl, minutes * 60)
    : nonceTtl;
}

/**
 * The gate of this call: the declared (or delegated) class and floor, raised by the tenant's
 * conditional-gate rules for a verb called directly (a delegated verb's target applies its own:
 * transaction.append raises in its delegated consent). spec/consent.md §conditional-gates
 */
function gateOf(c: Keyed, settings: TenantSettings | undefined): RaisedGate {
  const declared = c.consentClass!;
  const floor = c.delegated?.roleFloor ?? c.verb.roleFloor;
  if (c.delegated) {
    return { consentClass: declared, roleFloor: floor, raisedBy: c.delegated.raisedBy ?? [] };
  }
  return raiseGate(settings?.gate_rules, c.verb.name, declared, floor, c.args);
}

async function consentGate(c: Keyed): Promise<Consent | Envelope> {
  const { rt, verb, principal: p, options } = c;
  if (c.consentClass === null || c.consentClass === 'READ') return { requiresApproval: false };
  const settings = (await rt.tenants.get(p.company_id))?.settings;
  const gate = gateOf(c, settings);
  // A rule that raised the floor is checked here, before any nonce or phrase is shown.
  if (ROLE_RANK[p.role] < ROLE_RANK[gate.roleFloor]) {
    throw refuse.roleDenied(verb.name, gate.roleFloor, p.role);
  }
  const cls = gate.consentClass;
  const typed = cls === 'WRITE_FINANCIAL' || cls === 'IRREVERSIBLE';
  const phrase = typed
    ? c.delegated
      ? c.delegated.phrase
      : (verb.definition.phrase?.(c.args) ?? raisedPhrase(verb.name, gate.raisedBy))
    : undefined;
  if (typed && (phrase === undefined || phrase === ''))
    throw new Error(`${verb.name}: typed-phrase class without a phrase`);
  // phrase_channel human (the default): a typed phrase counts only from a human principal; who is
  // human is decided by src/identity, what they may do by its one predicate. spec/consent.md §channels
  const humanOnly = typed && phraseChannelOf(settings) === 'human';
  const hasNonce = options.nonce !== undefined && options.nonce !== null && options.nonce !== '';
  if (!hasNonce) {
    if (options.confirm === true) {
      throw new VerbError('nonce_required', 'confirm was sent without the nonce from the pending answer.', {
        hint: `Call ${verb.name} without confirm first; it answers dispatch_pending with a nonce. Then confirm with that nonce${typed ? ' and the typed phrase' : ''}.`,
      });
    }
    return pending(c, gate, phrase, humanOnly, settings);
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
  const hash = argsHash(c.args, c);
  // A typed-phrase nonce may outlive its TTL while its approval waits (a per-class approval TTL):
  // the approval row decides below; the direct phrase path keeps the nonce's own expiry.
  const payload = verifyNonce(rt.secrets, options.nonce, {
    verb: verb.name,
    argsHash: hash,
    companyId: p.company_id,
    userId: p.user_id,
    nowMs: c.now.getTime(),
    allowExpired: typed,
  });
  if (payload.k !== cls || (typed ? payload.p !== phraseHash(phrase!) : payload.p !== null)) {
    throw refuse.nonceInvalid('The nonce was issued for another consent gate or phrase.', verb.name);
  }
  const decided: Consent = {
    jti: payload.j,
    nonceExpires: new Date(payload.e * 1000).toISOString(),
    requiresApproval: typed,
    argsHash: hash,
    gateClass: cls,
    ...(gate.raisedBy.length > 0 ? { raisedBy: gate.raisedBy.map((r) => r.id) } : {}),
  };
  if (!typed) return decided;
  decided.burnApproval = true;
  const nowIso = c.now.toISOString();
  if (options.typed_phrase === undefined || options.typed_phrase === null) {
    // No phrase: only an out-of-band decision can let this call through.
    const approval = await rt.store.read((q) => findApprovalByJti(q, p.company_id, payload.j));
    if (approval !== undefined) {
      decided.approvalId = approval.approval_id;
      refuseClosed(verb.name, approval);
      const status = effectiveStatus(approval, nowIso);
      if (status === 'approved') {
        decided.approvedBy = Number(approval.decided_by);
        decided.approvedAt = approval.decided_at as string;
        if (approval.decided_channel !== null) decided.approvedChannel = approval.decided_channel;
        if (approval.decided_role !== null) decided.approvedRole = approval.decided_role;
        if (approval.decided_name !== null) decided.approvedName = approval.decided_name;
        return decided;
      }
      if (status === 'expired') throw approvalExpired(verb.name, approval);
    } else if (payload.expired === true) {
      throw nonceExpired(payload.e);
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
        expires_at:
          approval !== undefined && approval.expires_at > decided.nonceExpires!
            ? approval.expires_at
            : decided.nonceExpires!,
        summary: approval?.summary ?? summaryOf(c),
        typed_phrase: phrase!,
        ...(humanOnly ? { phrase_channel: 'human' as const } : {}),
        ...(decided.approvalId ? { approval_id: decided.approvalId } : {}),
        ...agentTextOf(c),
        ...raisedByOf(gate),
      },
      'Waiting for the typed phrase or an out-of-band approval.',
      auditId,
      gate.roleFloor,
    );
  }
  // The direct phrase path: the nonce's own TTL holds (the human types it now).
  if (payload.expired === true) throw nonceExpired(payload.e);
  if (!mayConsent(p, 'type_phrase', settings)) {
    // Refused whatever the phrase (matching or not: no oracle); nothing is consumed. A rejection
    // recorded by a human still wins (§approvals: deny wins).
    const approval = await rt.store.read((q) => findApprovalByJti(q, p.company_id, payload.j));
    const approvalId = approval?.approval_id;
    if (approval !== undefined) refuseClosed(verb.name, approval);
    throw phraseChannelRefusal(verb.name, gate.roleFloor, approvalId, decided.nonceExpires!);
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

/** Refuse a confirm whose approval is closed: rejected (with the human's words), superseded, used. */
function refuseClosed(verbName: string, approval: ApprovalRecord): void {
  if (approval.status === 'rejected')
    throw approvalRejected(verbName, approval.approval_id, approval.decision_note);
  if (approval.status === 'superseded')
    throw approvalSuperseded(verbName, approval.approval_id, approval.decision_note);
  if (approval.status === 'consumed') throw nonceReplayed(verbName);
}

function nonceExpired(e: number): VerbError {
  return new VerbError('nonce_expired', `The nonce expired at ${new Date(e * 1000).toISOString()}.`, {
    hint: 'Nonces live 300 seconds. Call the verb again without confirm to get a fresh one.',
  });
}

/** The approval expired unanswered, or its retry window (opened at the approval) closed. */
function approvalExpired(verbName: string, approval: ApprovalRecord): VerbError {
  const at =
    approval.status === 'approved' ? (approval.retry_expires_at ?? approval.expires_at) : approval.expires_at;
  return new VerbError(
    'nonce_expired',
    approval.status === 'approved'
      ? `Approval ${approval.approval_id} was approved, but the confirm came after its window closed at ${at}.`
      : `Approval ${approval.approval_id} expired at ${at} without a decision.`,
    {
      hint: `Call ${verbName} again without confirm for a fresh pending request.`,
      details: { approval_id: approval.approval_id, expires_at: at },
    },
  );
}

/** The consent member naming the rules that raised this call's gate (absent when none did). */
function raisedByOf(gate: RaisedGate): { raised_by?: Array<{ rule_id: string; description: string }> } {
  if (gate.raisedBy.length === 0) return {};
  return { raised_by: gate.raisedBy.map((r) => ({ rule_id: r.id, description: describeRule(r) })) };
}

/**
 * The agent's free text of this call (the verb's `agent_text` arguments, e.g. a refund's reason):
 * shown apart from the summary, labelled as the agent's words. spec/consent.md §pending
 */
function agentTextOf(c: Resolved): { agent_text?: Record<string, string> } {
  if (c.delegated) {
    const given = c.delegated.agentText;
    return given === undefined || Object.keys(given).length === 0 ? {} : { agent_text: given };
  }
  const out = agentTextValues(c.verb.definition.agent_text, c.args);
  return out === undefined ? {} : { agent_text: out };
}

/**
 * The sentence the human consents to: the verb's summary builder, or the arguments without the
 * agent's free text. A summary that quotes any of the agent's free text is not used (the
 * fallback is): the agent's words are never inside the sentence consented to. spec/consent.md §pending
 */
function summaryOf(c: Resolved): string {
  const verb = c.verb;
  if (c.delegated) return c.delegated.summary;
  const free = agentTextOf(c).agent_text;
  const built = verb.definition.summary?.(c.args);
  const quotes =
    built !== undefined &&
    free !== undefined &&
    Object.values(free).some((t) => t.length >= 3 && built.includes(t));
  if (built !== undefined && !quotes) return built;
  const typedArgs = { ...c.args };
  for (const f of verb.definition.agent_text ?? []) delete typedArgs[f];
  return `Run ${verb.name} with ${JSON.stringify(redact(typedArgs, verb.secretPaths))}.`;
}

/** The first answer of a gated call: a fresh nonce, the preview, and for a typed phrase an approval row. */
async function pending(
  c: Keyed,
  gate: RaisedGate,
  phrase: string | undefined,
  humanOnly: boolean,
  settings: TenantSettings | undefined,
): Promise<Envelope> {
  const { rt, verb, principal: p } = c;
  const cls = gate.consentClass;
  const typed = phrase !== undefined;
  // A cap already used up today (or 0) refuses now: no nonce, approval or phrase for a write that
  // could not run. The confirmed write still counts atomically (execute).
  const capClass = capClassOf(c);
  if (capClass !== null && capClass !== 'READ' && capClass !== 'BLOCKED') {
    const caps = settings?.caps;
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
  // The approval may wait longer than the nonce lives (the owner's per-class TTL); its retry
  // window opens when a human approves it. spec/consent.md §approvals
  const approvalExpires = typed
    ? new Date(
        c.now.getTime() + approvalTtlSeconds(settings, cls, rt.options.nonceTtlSeconds ?? 300) * 1000,
      ).toISOString()
    : issued.expiresAt;
  const agentText = agentTextOf(c);
  const given = {
    class: cls,
    gate: typed ? ('typed_phrase' as const) : ('confirmation' as const),
    nonce: issued.nonce,
    expires_at: approvalExpires > issued.expiresAt ? approvalExpires : issued.expiresAt,
    summary,
    ...(typed ? { typed_phrase: phrase, approval_id: approvalId } : {}),
    ...(humanOnly ? { phrase_channel: 'human' as const } : {}),
    ...(preview !== undefined ? { preview } : {}),
    ...agentText,
    ...raisedByOf(gate),
  };
  const auditId = await recordPending(c, typed, async (tx) => {
    if (phrase !== undefined && approvalId !== undefined) {
      await insertPendingApproval(tx, {
        approvalId,
        companyId: p.company_id,
        jti: issued.jti,
        verb: verb.name,
        argsJson: JSON.stringify(redact(c.args, verb.secretPaths)),
        argsHash: argsHash(c.args, c),
        consentClass: cls,
        typedPhrase: phrase,
        summary,
        ...(agentText.agent_text !== undefined ? { agentText: agentText.agent_text } : {}),
        requestedBy: p.user_id,
        requestedRole: p.role,
        agentType: p.agent_type,
        createdAt: c.now.toISOString(),
        expiresAt: approvalExpires,
        roleFloor: gate.roleFloor,
      });
      // The approval.requested webhook, queued in the same transaction (docs/webhooks.md).
      const data = {
        approval_id: approvalId,
        verb: verb.name,
        summary,
        consent_class: cls,
        requested_by: p.user_id,
        requested_role: p.role,
        agent_type: p.agent_type,
        expires_at: issued.expiresAt,
      };
      await emitWebhookEvent(
        tx,
        { companyId: p.company_id, type: 'approval.requested', data, now: c.now },
        () => c.rt.kickOutbox(),
      );
    }
  });
  return pendingEnvelope(c, given, undefined, auditId, gate.roleFloor);
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

/** " The gate was raised by rule R (…)." when an owner's rule raised it. */
function raisedWords(given: NonNullable<Envelope['consent']>): string {
  const raised = given.raised_by;
  if (raised === undefined || raised.length === 0) return '';
  return ` The owner's ${raised.map((r) => r.description).join('; ')} raised this call's gate.`;
}

/** " The agent's own words (consent.agent_text) are not part of what the human consents to." */
function agentWords(given: NonNullable<Envelope['consent']>): string {
  return given.agent_text === undefined
    ? ''
    : " Show the agent's own words (consent.agent_text) apart, labelled as the agent's; they are not part of what the human consents to.";
}

function pendingEnvelope(
  c: Keyed,
  pending: NonNullable<Envelope['consent']>,
  message?: string,
  auditId?: number,
  gateFloor?: string,
): Envelope {
  // The approval page's link, when the runtime knows its public URL. spec/consent.md §approval-page
  const approvalUrl = approvalUrlOf(c.rt.options.publicUrl, pending.approval_id);
  const given = approvalUrl === undefined ? pending : { ...pending, approval_url: approvalUrl };
  const verb = c.verb;
  const typed = given.gate === 'typed_phrase';
  const floor = gateFloor ?? c.delegated?.roleFloor ?? verb.roleFloor;
  // phrase_channel human: an agent channel does not see the phrase (the in-process transport that
  // asks a human still can: pendingPhrase). spec/consent.md §phrase-channel
  const withheld =
    typed &&
    given.phrase_channel === 'human' &&
    !mayConsent(c.principal, 'type_phrase', { phrase_channel: given.phrase_channel });
  let shown = given;
  if (withheld) {
    const { typed_phrase: _hidden, ...rest } = given;
    shown = rest;
    // Nor in the preview a verb computed (a pack's preview may quote its phrase).
    if (rest.preview !== undefined)
      shown = {
        ...rest,
        preview: withoutPhrase(rest.preview, given.typed_phrase ?? '') as typeof rest.preview,
      };
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
        (message ??
          (typed
            ? `${verb.name} needs a human to type a confirmation phrase before it runs.`
            : `${verb.name} needs a human confirmation before it runs.`)) +
        (approvalUrl === undefined
          ? ''
          : ` A human approves it at ${approvalUrl} (signed in on this server's approval page); then call ${verb.name} again with the same arguments, confirm=true and the nonce.`),
      hint: `${how}${raisedWords(shown)}${agentWords(shown)} The nonce expires at ${shown.expires_at}.`,
    },
    consent: shown,
  };
  if (auditId !== undefined) env.audit_id = auditId;
  return env;
}

/**
 * The approval page of an approval: `<publicUrl>/approvals/<approval_id>` (id URL-encoded), or
 * undefined without a public URL or an approval id. spec/consent.md §approval-page
 */
export function approvalUrlOf(
  publicUrl: string | undefined,
  approvalId: string | undefined,
): string | undefined {
  if (publicUrl === undefined || publicUrl === '' || approvalId === undefined) return undefined;
  return `${publicUrl.replace(/\/+$/, '')}/approvals/${encodeURIComponent(approvalId)}`;
}
