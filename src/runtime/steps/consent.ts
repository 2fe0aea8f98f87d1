/**
 * Step 11, consent (writes): none / confirmation / typed phrase. A first call answers
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
  findRetryApprovals,
  insertPendingApproval,
  recordPendingAction,
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
  // confirmation_channel human: an agent's confirm does not count; a human approves the request
  // (the approval page's Approve button, the dashboard, the operator's terminal). §channels
  const humanConfirm = !typed && !mayConsent(p, 'confirm', settings);
  const hasNonce = options.nonce !== undefined && options.nonce !== null && options.nonce !== '';
  if (!hasNonce) {
    if (options.confirm === true) {
      throw new VerbError('nonce_required', 'confirm was sent without the nonce from the pending answer.', {
        hint: `Call ${verb.name} without confirm first; it answers dispatch_pending with a nonce. Then confirm with that nonce${typed ? ' and the typed phrase' : ''}.`,
      });
    }
    const plainRetry = options.plain_retry === true;
    if (plainRetry) {
      const retried = await retryOfPending(c, gate, phrase, humanOnly, humanConfirm);
      if (retried !== undefined) return retried;
    }
    // A row is kept for typed phrases (a human approves them), for confirmations only a human
    // may give, and for any gate asked over a plain-retry transport (the retry finds it).
    return pending(c, gate, phrase, humanOnly, settings, humanConfirm || plainRetry);
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
    allowExpired: typed || humanConfirm,
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
  // The nonce's approvals row, when its pending answer kept one (a plain-retry transport, a
  // human-only confirmation), is consumed with the effect: one request, one execution, whichever
  // path confirms it; a human's rejection of it wins. No row: nothing to consume — a nonce sealed
  // with `r: 0` (its pending answer kept none, and no row is ever made for a nonce afterwards)
  // skips the look; any other nonce is looked up.
  decided.burnApproval = payload.r !== 0;
  if (!typed && !humanConfirm) return decided;
  if (humanConfirm) {
    // Only a human's approval of this request counts as the confirmation.
    const approval = await rt.store.read((q) => findApprovalByJti(q, p.company_id, payload.j));
    // A nonce issued before the owner chose `human` has no request a human could approve: ask now.
    if (approval === undefined) return pending(c, gate, undefined, false, settings, true);
    return answerFromApproval(c, gate, decided, approval, options.nonce!, undefined, false);
  }
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
    const auditId = await recordPending(c, true, undefined, payload.j);
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

/**
 * The answer of a call whose consent rests on an approvals row (a human-only confirmation, or a
 * plain retry): approved and inside its retry window → the consent (with who approved, where);
 * rejected, superseded, used → the refusal; expired → `nonce_expired`; still pending → the same
 * pending answer again (same nonce, same approval), audited as another attempt.
 */
async function answerFromApproval(
  c: Keyed,
  gate: RaisedGate,
  decided: Consent,
  approval: ApprovalRecord,
  nonce: string,
  phrase: string | undefined,
  humanOnly: boolean,
): Promise<Consent | Envelope> {
  const verb = c.verb;
  const typed = phrase !== undefined;
  decided.approvalId = approval.approval_id;
  refuseClosed(verb.name, approval);
  const status = effectiveStatus(approval, c.now.toISOString());
  if (status === 'approved') {
    decided.requiresApproval = true;
    decided.approvedBy = Number(approval.decided_by);
    decided.approvedAt = approval.decided_at as string;
    if (approval.decided_channel !== null) decided.approvedChannel = approval.decided_channel;
    if (approval.decided_role !== null) decided.approvedRole = approval.decided_role;
    if (approval.decided_name !== null) decided.approvedName = approval.decided_name;
    return decided;
  }
  if (status === 'expired') throw approvalExpired(verb.name, approval);
  const auditId = await recordPending(c, typed, undefined, approval.jti);
  return pendingEnvelope(
    c,
    {
      class: gate.consentClass,
      gate: typed ? 'typed_phrase' : 'confirmation',
      nonce,
      expires_at: approval.expires_at > decided.nonceExpires! ? approval.expires_at : decided.nonceExpires!,
      summary: approval.summary,
      ...(typed ? { typed_phrase: phrase } : {}),
      ...(humanOnly ? { phrase_channel: 'human' as const } : {}),
      approval_id: approval.approval_id,
      ...agentTextOf(c),
      ...raisedByOf(gate),
    },
    typed ? 'Waiting for a human to approve this request.' : 'Waiting for a human to confirm this request.',
    auditId,
    gate.roleFloor,
    true,
  );
}

/**
 * A plain retry (DispatchOptions.plain_retry: the caller cannot send a nonce): the approvals row
 * of an earlier pending answer of the identical call — same tenant, verb, canonical arguments,
 * user and API key — decides. Approved (any gate) → it runs, consuming the row in the effect's
 * transaction, exactly once. Still pending: a confirmation gate the agent may confirm
 * (confirmation_channel `any`) runs while that answer's nonce lives — the retry is the agent's
 * confirmation after asking in the conversation; a typed phrase never does (only a human's
 * approval completes it). Rejected while its request is live → `approval_rejected`. No live row
 * (none, used, expired) → undefined: the caller answers a fresh pending. spec/consent.md §plain-retry
 */
async function retryOfPending(
  c: Keyed,
  gate: RaisedGate,
  phrase: string | undefined,
  humanOnly: boolean,
  humanConfirm: boolean,
): Promise<Consent | Envelope | undefined> {
  const { rt, verb, principal: p } = c;
  const cls = gate.consentClass;
  const hash = argsHash(c.args, c);
  const nowIso = c.now.toISOString();
  const rows = (
    await rt.store.read((q) =>
      findRetryApprovals(q, {
        companyId: p.company_id,
        verb: verb.name,
        argsHash: hash,
        userId: p.user_id,
        keyId: p.key_id ?? null,
      }),
    )
  ).filter((r) => r.consent_class === cls && r.nonce_expires_at !== null);
  const row =
    rows.find((r) => effectiveStatus(r, nowIso) === 'approved') ??
    rows.find((r) => (r.status === 'pending' || r.status === 'rejected') && r.expires_at > nowIso);
  if (row === undefined) return undefined;
  const nonceExpires = row.nonce_expires_at!;
  const decided: Consent = {
    jti: row.jti,
    nonceExpires,
    requiresApproval: false,
    burnApproval: true,
    argsHash: hash,
    gateClass: cls,
    approvalId: row.approval_id,
    ...(gate.raisedBy.length > 0 ? { raisedBy: gate.raisedBy.map((r) => r.id) } : {}),
  };
  if (row.status === 'pending' && phrase === undefined && !humanConfirm && nonceExpires > nowIso) {
    // The agent's own confirmation (confirmation_channel any), exactly once: the row is consumed
    // and the nonce id burned with the effect.
    return decided;
  }
  // The nonce of that pending answer, sealed again (same id and expiry) for the waiting answer.
  const nonce = issueNonce(rt.secrets, {
    verb: verb.name,
    argsHash: hash,
    companyId: p.company_id,
    userId: p.user_id,
    consentClass: cls,
    phraseHash: phrase === undefined ? null : phraseHash(phrase),
    nowMs: c.now.getTime(),
    reissue: { jti: row.jti, expiresAtSec: Math.floor(Date.parse(nonceExpires) / 1000) },
  }).nonce;
  return answerFromApproval(c, gate, decided, row, nonce, phrase, humanOnly);
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
  keepRow = false,
): Promise<Envelope> {
  const { rt, verb, principal: p } = c;
  const cls = gate.consentClass;
  const typed = phrase !== undefined;
  // Only a human's decision completes this gate: a typed phrase, or a confirmation the tenant
  // counts only from a human (confirmation_channel human).
  const asksHuman = typed || !mayConsent(p, 'confirm', settings);
  // A cap already used up today (or 0) refuses now: no nonce, approval or phrase for a write that
  // could not run. The confirmed write still counts atomically (execute).
  const capClass = capClassOf(c);
  if (capClass !== null && capClass !== 'READ' && capClass !== 'BLOCKED') {
    await rt.store.read((q) => assertDailyCapOpen(q, settings, p.company_id, capClass, c.now));
  }
  const keepsRow = typed || keepRow;
  const issued = issueNonce(rt.secrets, {
    verb: verb.name,
    argsHash: argsHash(c.args, c),
    companyId: p.company_id,
    userId: p.user_id,
    consentClass: cls,
    phraseHash: typed ? phraseHash(phrase) : null,
    nowMs: c.now.getTime(),
    ttlSeconds: rt.options.nonceTtlSeconds,
    // Sealed in the nonce: its confirm then skips looking for an approvals row to consume.
    approvalRow: keepsRow,
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
  if (keepsRow) approvalId = `apv_${issued.jti.slice(0, 16)}`;
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
    ...(typed ? { typed_phrase: phrase } : {}),
    ...(approvalId !== undefined ? { approval_id: approvalId } : {}),
    ...(humanOnly ? { phrase_channel: 'human' as const } : {}),
    ...(preview !== undefined ? { preview } : {}),
    ...agentText,
    ...raisedByOf(gate),
  };
  const auditId = await recordPending(
    c,
    typed,
    async (tx) => {
      if (approvalId !== undefined) {
        await insertPendingApproval(tx, {
          approvalId,
          companyId: p.company_id,
          jti: issued.jti,
          verb: verb.name,
          argsJson: JSON.stringify(redact(c.args, verb.secretPaths)),
          argsHash: argsHash(c.args, c),
          consentClass: cls,
          typedPhrase: phrase ?? null,
          summary,
          ...(agentText.agent_text !== undefined ? { agentText: agentText.agent_text } : {}),
          requestedBy: p.user_id,
          requestedRole: p.role,
          agentType: p.agent_type,
          createdAt: c.now.toISOString(),
          expiresAt: approvalExpires,
          roleFloor: gate.roleFloor,
          requestedKey: p.key_id ?? null,
          nonceExpiresAt: issued.expiresAt,
        });
        // The approval.requested webhook, queued in the same transaction (docs/webhooks.md), when a
        // human has something to decide (not for a confirmation the agent's retry completes).
        if (!asksHuman) return;
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
    },
    issued.jti,
    // No approval row: the nonce alone carries the consent request, so a power cut that lost
    // this answer's row would lose no state a later call needs (the commit skips its fsync).
    approvalId === undefined,
  );
  return pendingEnvelope(c, given, undefined, auditId, gate.roleFloor, typed || asksHuman);
}

/**
 * Append the `pending` / `dispatch_pending` audit row of a consent answer (after `before`, in the
 * same store transaction) and settle the outcome. Returns the row's audit_id. `jti`: the id of
 * the answer's nonce, kept with the row in `pending_actions` so the write that later burns that
 * nonce can be linked to it (spec/audit.md §fold). `relaxed`: the answer kept no approval row, so
 * its commit need not be fsynced before the answer (spec/store.md §durability, relaxed commits:
 * a kill -9 loses nothing; a power cut may lose the row until the next durable commit, such as
 * the confirmed write's, fsyncs the WAL that holds it).
 */
async function recordPending(
  c: Keyed,
  typed: boolean,
  before?: (tx: StoreTx) => Promise<void>,
  jti?: string,
  relaxed = false,
): Promise<number> {
  const rt = c.rt;
  const latency = performance.now() - c.t0;
  const row = await rt.store.write(
    async (tx) => {
      await before?.(tx);
      const pendingRow = await appendAudit(
        tx,
        entryFor(c, 'pending', 'dispatch_pending', latency, { requiresApproval: typed }),
      );
      if (jti !== undefined) await recordPendingAction(tx, c.principal.company_id, pendingRow.audit_id, jti);
      tx.afterCommit(() => rt.afterWrite(pendingRow));
      return pendingRow;
    },
    relaxed ? RELAXED : undefined,
  );
  settle(c, false, 'dispatch_pending', latency, row.audit_id);
  return row.audit_id;
}

const RELAXED = { durable: false } as const;

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

/**
 * The dispatch_pending envelope: the consent request (`consent`), and in words what happens
 * next. `needsHuman`: only a human's decision completes this gate (a typed phrase, or a
 * confirmation under confirmation_channel `human`). On a plain-retry transport
 * (DispatchOptions.plain_retry) the answer also carries `consent.retry` — who acts first
 * (`user_confirms`: the agent asks the user in the conversation; `human_approves`: a signed-in
 * human approves at `approval_url`), then the same tool is called again with the same arguments.
 * spec/consent.md §pending §plain-retry
 */
function pendingEnvelope(
  c: Keyed,
  pending: NonNullable<Envelope['consent']>,
  message?: string,
  auditId?: number,
  gateFloor?: string,
  needsHuman = pending.gate === 'typed_phrase',
): Envelope {
  // The approval page's link, when the runtime knows its public URL. spec/consent.md §approval-page
  const approvalUrl = approvalUrlOf(c.rt.options.publicUrl, pending.approval_id);
  const plainRetry = c.options.plain_retry === true;
  const given: NonNullable<Envelope['consent']> = {
    ...pending,
    ...(approvalUrl !== undefined ? { approval_url: approvalUrl } : {}),
    ...(plainRetry
      ? {
          retry: {
            after: needsHuman ? ('human_approves' as const) : ('user_confirms' as const),
            same_arguments: true as const,
          },
        }
      : {}),
  };
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
  const where =
    approvalUrl !== undefined
      ? `at ${approvalUrl}`
      : humanApprovalPlaces(shown.approval_id === undefined ? undefined : String(shown.approval_id));
  const how = plainRetry
    ? needsHuman
      ? `Tell the human: ${shown.summary} A user with the ${floor} role or higher approves ${shown.approval_id} ${where}; then call ${verb.name} again with the same arguments (no nonce needed). It runs once; other arguments start a new request.`
      : `Ask the user to confirm: ${shown.summary} If they agree, call ${verb.name} again with the same arguments before ${shown.expires_at}: that call is the confirmation, and it runs once.`
    : withheld
      ? `This tenant counts a typed phrase only from a human where they type it, so the phrase is not shown here. Tell the human: ${shown.summary} Ask a user with the ${floor} role or higher to approve ${shown.approval_id} ${humanApprovalPlaces(shown.approval_id === undefined ? undefined : String(shown.approval_id))}; then call ${verb.name} again with the same arguments, confirm=true and the nonce (no typed_phrase).`
      : typed
        ? `Show the human this exact phrase: "${shown.typed_phrase}". When they type it, call ${verb.name} again with the same arguments, confirm=true, the nonce and typed_phrase set to what they typed. Or have a user with the ${floor} role or higher approve ${shown.approval_id} out of band (approvals.approve with the typed phrase, or \`solid approvals approve ${shown.approval_id}\`), then call ${verb.name} again with the same arguments, confirm=true and the nonce (no typed_phrase).`
        : needsHuman
          ? `This tenant counts a confirmation only from a human. Tell the human: ${shown.summary} A user with the ${floor} role or higher approves ${shown.approval_id} ${where}; then call ${verb.name} again with the same arguments, confirm=true and the nonce.`
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
        (approvalUrl === undefined || !needsHuman
          ? ''
          : ` A human approves it at ${approvalUrl} (signed in on this server's approval page); then call ${verb.name} again with the same arguments${plainRetry ? '' : ', confirm=true and the nonce'}.`),
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
