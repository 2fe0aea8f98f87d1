/**
 * Out-of-band approval of typed-phrase dispatches (spec/consent.md §approvals).
 *
 * A WRITE_FINANCIAL or IRREVERSIBLE preflight answers dispatch_pending with an `approval_id` and
 * stores a pending row in `approvals` (dispatch.ts). A human elsewhere — whose own role meets the
 * target verb's role floor — lists it, types the phrase and approves it (or rejects it). The agent
 * then calls the original verb again with confirm=true and its nonce, without a phrase, and the
 * dispatch executes with approved_by / approved_at on its audit row; after a rejection that call
 * answers approval_rejected.
 *
 * - approvals.list    READ (aggregate), role floor admin: the tenant's queue, expired rows shown as expired.
 * - approvals.approve delegated consent, no gate of its own: the approver's typed phrase IS the
 *                     consent, so there is no second nonce round trip; role floor = the target
 *                     verb's floor (at least admin), checked at the floors step and again in the
 *                     write transaction; audited like every write.
 * - approvals.reject  same floor; no phrase (refusing is always safe); may also withdraw an
 *                     approval the agent has not used yet.
 *
 * Self-approval (approver = requesting user) is allowed: it needs the same phrase and the same
 * role as the direct path, so it grants nothing the requester did not already have; the receipt
 * says `self_approved: true` and the audit row shows approved_by = the requester.
 * approve/reject are projected on http and cli only (human-facing), not into agents' tool lists
 * (mcp_stdio, webmcp, ucp); the phrase and the role floor are the actual safeguards.
 */
import type { Role } from '../spec/types.ts';
import type { StoreTx } from '../store/store.ts';
import { VerbError } from '../runtime/errors.ts';
import {
  defineSystemVerb,
  ROLE_FLOOR_OF_CLASS,
  ROLE_RANK,
  type DelegatedConsent,
  type SystemVerbContext,
} from '../runtime/verb.ts';
import { phrasesMatch, withoutPhrase } from '../runtime/consent/typed-phrase.ts';
import { humanMustDecide } from '../runtime/consent/refusals.ts';
import { confirmationChannelOf, mayConsent } from '../identity/consent-predicate.ts';
import {
  APPROVAL_STATUSES,
  approveById,
  countApprovals,
  effectiveStatus,
  findApprovalById,
  listApprovals,
  rejectById,
  withdrawById,
  type ApprovalRecord,
  type ApprovalStatus,
} from '../runtime/consent/approvals-store.ts';
import { channelOfCall, type ConsentChannel } from '../runtime/consent/provenance.ts';
import { refuse } from '../runtime/refusals.ts';
import { emitWebhookEvent } from '../runtime/ledger/write/webhook-endpoints.ts';

export { APPROVAL_STATUSES, type ApprovalStatus };

/** Lowest role that may decide any approval (the WRITE_FINANCIAL floor). */
const MIN_APPROVER_ROLE: Role = ROLE_FLOOR_OF_CLASS.WRITE_FINANCIAL;

const APPROVAL_ID = {
  type: 'string',
  pattern: '^apv_[A-Za-z0-9_-]{1,64}$',
  description: 'The approval_id from the dispatch_pending answer or approvals.list.',
} as const;

type ApprovalRow = ApprovalRecord;

/**
 * The role floor an approver needs for this row, never below admin: the floor recorded when the
 * action was asked (for a verb whose consent follows its target, such as audit.revert, that is the
 * target's floor, not the revert verb's own; a conditional-gate rule's raised floor included).
 * Fails closed: a row without a recorded floor (written before migration 5) or with a value that
 * is not a role needs the owner.
 */
function approverFloor(row: Pick<ApprovalRow, 'role_floor'>): Role {
  const recorded =
    typeof row.role_floor === 'string' && Object.hasOwn(ROLE_RANK, row.role_floor) ? row.role_floor : 'owner';
  return ROLE_RANK[recorded] >= ROLE_RANK[MIN_APPROVER_ROLE] ? recorded : MIN_APPROVER_ROLE;
}

/** Where this decision is made (spec/consent.md §provenance): the caller's human channel, else the agent. */
function decisionChannel(ctx: SystemVerbContext): ConsentChannel {
  const p = ctx.principal;
  const human = p.actor === 'human';
  return channelOfCall(human, ctx.surface, p.actor === 'human' ? p.consent_channel : undefined);
}

const notFound = refuse.approvalNotFound;

function notPending(row: ApprovalRow, status: ApprovalStatus): VerbError {
  const what =
    status === 'expired'
      ? `expired at ${row.expires_at}`
      : status === 'consumed'
        ? 'was already used by the agent'
        : status === 'superseded'
          ? `was superseded: ${row.decision_note ?? 'it answered an attempt that is over'}`
          : `was already ${status}${row.decided_by !== null ? ` by user ${row.decided_by}` : ''}`;
  return new VerbError('approval_not_pending', `Approval ${row.approval_id} ${what}.`, {
    hint:
      status === 'expired'
        ? `The agent must call ${row.verb} again for a fresh pending request.`
        : 'Nothing to decide; list open approvals with approvals.list.',
    details: { status },
  });
}

/** The approval changed between our read and our update (another decision won the race). */
async function decidedMeanwhile(ctx: SystemVerbContext, row: ApprovalRow): Promise<VerbError> {
  const now = await findApprovalById(ctx.db, row.company_id, row.approval_id);
  return now === undefined
    ? notFound(row.approval_id)
    : notPending(now, effectiveStatus(now, ctx.now.toISOString()));
}

/** Consent of approve/reject: no gate of its own, the floor of the verb being decided. */
async function decisionConsent(
  ctx: SystemVerbContext,
  args: { approval_id: string },
  action: string,
): Promise<DelegatedConsent> {
  const row = await findApprovalById(ctx.db, ctx.principal.company_id, args.approval_id);
  if (row === undefined)
    return {
      consentClass: null,
      roleFloor: MIN_APPROVER_ROLE,
      summary: `${action} approval ${args.approval_id}.`,
    };
  return {
    consentClass: null,
    roleFloor: approverFloor(row),
    summary: `${action} ${row.verb}: ${row.summary}`,
  };
}

const approvalItem = {
  type: 'object',
  properties: {
    approval_id: { type: 'string' },
    verb: { type: 'string', description: 'The verb waiting for consent.' },
    consent_class: { type: 'string', enum: ['WRITE_REVERSIBLE', 'WRITE_FINANCIAL', 'IRREVERSIBLE'] },
    summary: { type: 'string', description: 'What will happen, in plain words.' },
    typed_phrase: {
      type: ['string', 'null'],
      description:
        "The exact phrase the approver must type; null when the tenant's phrase_channel is human and this list was asked through an agent channel (the phrase is shown only where a human approves).",
    },
    args: { type: 'object', description: 'The arguments of the pending call (secret fields redacted).' },
    requested_by: { type: 'integer', description: 'user_id of the requester.' },
    requested_role: { type: 'string' },
    agent_type: { type: ['string', 'null'] },
    status: { type: 'string', enum: [...APPROVAL_STATUSES] },
    agent_text: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        "The agent's own free text of the call (e.g. a refund's reason), by argument name: shown apart from summary, labelled as the agent's words; never part of what the approver consents to.",
    },
    decided_channel: {
      type: ['string', 'null'],
      description: 'Where the decision was made: approval_page, dashboard, operator_terminal, …',
    },
    retry_expires_at: {
      type: 'string',
      format: 'date-time',
      description: "After an approval: the agent's confirm must come before this time.",
    },
    role_floor: {
      type: 'string',
      enum: ['read_only', 'employee', 'admin', 'owner'],
      description: 'Role an approver needs.',
    },
    can_decide: { type: 'boolean', description: 'Whether the caller may approve or reject it now.' },
    preview: {
      type: 'object',
      description:
        'Pending only, when the verb declares a preview: its projected impact computed now (shape preview: current, projected, delta, reversible), so the approver sees before and after. Absent when the preview cannot run (the entity is gone, the arguments were redacted).',
    },
    created_at: { type: 'string', format: 'date-time' },
    expires_at: { type: 'string', format: 'date-time' },
    decided_by: { type: ['integer', 'null'] },
    decided_at: { type: ['string', 'null'] },
    decision_note: {
      type: ['string', 'null'],
      description:
        "The approver's words on a rejection (the agent reads them in approval_rejected), or why the approval was superseded.",
    },
  },
  required: [
    'approval_id',
    'verb',
    'consent_class',
    'summary',
    'typed_phrase',
    'requested_by',
    'status',
    'role_floor',
    'can_decide',
    'created_at',
    'expires_at',
  ],
} as const;

export interface ApprovalsListArgs {
  status?: ApprovalStatus | 'all';
  approval_id?: string;
  limit?: number;
}

export const approvalsList = defineSystemVerb<ApprovalsListArgs>({
  name: 'approvals.list',
  title: 'List approvals',
  description:
    "The tenant's approvals of typed-phrase actions, newest first: verb, summary, phrase, requester, status, expiry. Default: awaiting a decision (expired ones included). Admin role. A signed-in human decides them (approvals.approve / reject, the approval page).",
  shape: 'aggregate',
  category: 'consent',
  role_floor: 'admin',
  input: {
    type: 'object',
    properties: {
      status: {
        type: 'string',
        enum: [...APPROVAL_STATUSES, 'all'],
        description: 'Filter (default pending: awaiting a decision, expired ones included).',
      },
      approval_id: APPROVAL_ID,
      limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
    },
    additionalProperties: false,
  },
  output: {
    type: 'object',
    properties: {
      entity_type: { const: 'approval_queue' },
      entity_id: { type: 'integer', description: 'The tenant (company_id).' },
      data: {
        type: 'object',
        properties: {
          pending: { type: 'integer', minimum: 0 },
          expired: { type: 'integer', minimum: 0 },
          approved_unused: { type: 'integer', minimum: 0 },
        },
        required: ['pending', 'expired', 'approved_unused'],
      },
      approvals: { type: 'array', items: approvalItem },
      fetched_at: { type: 'string', format: 'date-time' },
    },
    required: ['entity_type', 'entity_id', 'data', 'approvals', 'fetched_at'],
  },
  idempotent: true,
  cli: { command: ['approvals', 'queue'] },
  async handler(ctx, args) {
    const companyId = ctx.principal.company_id;
    const nowIso = ctx.now.toISOString();
    const status =
      args.approval_id !== undefined && args.status === undefined ? 'all' : (args.status ?? 'pending');
    const settings = await ctx.runtime.consentSettings(companyId);
    // Under confirmation_channel any the agent's retry completes an open confirmation request:
    // not a queue item for a human (still shown when asked by id). spec/consent.md §plain-retry
    const agentConfirms = confirmationChannelOf(settings) === 'any';
    const rows = await listApprovals(ctx.db, companyId, {
      status,
      ...(args.approval_id !== undefined ? { approvalId: args.approval_id } : {}),
      limit: args.limit ?? 50,
      nowIso,
      hideAgentConfirmations: args.approval_id === undefined && agentConfirms,
    });
    // phrase_channel human: an agent channel does not see the phrases (spec/consent.md §phrase-channel).
    const hidePhrases = !mayConsent(ctx.principal, 'type_phrase', settings);
    const approvals = await Promise.all(
      rows.map(async (row) => {
        const st = effectiveStatus(row, nowIso);
        const floor = approverFloor(row);
        return {
          approval_id: row.approval_id,
          verb: row.verb,
          consent_class: row.consent_class,
          summary: row.summary,
          ...(row.agent_text !== null ? { agent_text: row.agent_text } : {}),
          typed_phrase: hidePhrases ? null : (row.typed_phrase ?? ''),
          args: row.args,
          requested_by: row.requested_by,
          requested_role: row.requested_role,
          agent_type: row.agent_type ?? null,
          status: st,
          role_floor: floor,
          can_decide:
            ROLE_RANK[ctx.principal.role] >= ROLE_RANK[floor] && (st === 'pending' || st === 'approved'),
          created_at: row.created_at,
          expires_at: row.expires_at,
          decided_by: row.decided_by,
          decided_at: row.decided_at ?? null,
          decided_channel: row.decided_channel ?? null,
          decision_note: row.decision_note ?? null,
          ...(row.retry_expires_at !== null ? { retry_expires_at: row.retry_expires_at } : {}),
          ...(st === 'pending'
            ? hidePhrases
              ? (withoutPhrase(await previewOf(ctx, row), row.typed_phrase ?? '') as Record<string, unknown>)
              : await previewOf(ctx, row)
            : {}),
        };
      }),
    );
    return {
      entity_type: 'approval_queue',
      entity_id: companyId,
      data: await countApprovals(ctx.db, companyId, nowIso, agentConfirms),
      approvals,
      fetched_at: nowIso,
    };
  },
});

/**
 * The projected impact of a pending approval's action, computed now by the verb's preview verb
 * (spec/shapes.md §preview), so the card shows before → after as of the decision; `{}` when the
 * verb declares none or the preview refuses or cannot run (it never fails the list).
 */
async function previewOf(
  ctx: SystemVerbContext,
  row: ApprovalRow,
): Promise<{ preview?: Record<string, unknown> }> {
  const verb = ctx.runtime.registry.get(row.verb);
  if (verb === undefined || verb.definition.preview === undefined) return {};
  try {
    const preview = await ctx.runtime.previewFor(verb, ctx.principal, row.args as Record<string, unknown>, {
      surface: ctx.surface ?? 'internal',
      signal: ctx.signal,
    });
    return preview === undefined ? {} : { preview };
  } catch (err) {
    ctx.logger.debug({ err, verb: row.verb }, 'the preview of a pending approval did not run');
    return {};
  }
}

export interface ApprovalsApproveArgs {
  approval_id: string;
  /** The phrase, typed exactly: required for a typed-phrase action, absent for a confirmation. */
  typed_phrase?: string;
}

export const approvalsApprove = defineSystemVerb<ApprovalsApproveArgs>({
  name: 'approvals.approve',
  title: 'Approve a pending action',
  description:
    "A human approves a pending action (from approvals.list): a typed-phrase action by typing its phrase exactly, a confirmation (WRITE_REVERSIBLE under a human confirmation_channel, or asked by an agent that cannot send a nonce) with no phrase. The approver's own role must meet the action's role floor (admin for WRITE_FINANCIAL, owner for IRREVERSIBLE). Afterwards the requesting agent calls the original verb again with confirm=true and its nonce (no phrase) and it executes, recorded with approved_by and approved_at. Reasons: phrase_mismatch, role_denied, approval_not_found, approval_not_pending.",
  shape: 'receipt',
  category: 'consent',
  surfaces: ['http', 'cli'],
  input: {
    type: 'object',
    properties: {
      approval_id: APPROVAL_ID,
      typed_phrase: {
        type: 'string',
        maxLength: 500,
        description:
          'The phrase shown, typed exactly (same case, spaces and letters); leave it out for a confirmation (no phrase).',
      },
    },
    required: ['approval_id'],
    additionalProperties: false,
  },
  output: {
    type: 'object',
    properties: {
      status: { const: 'approved' },
      audit_id: { type: 'integer', minimum: 1 },
      approval_id: { type: 'string' },
      verb: { type: 'string' },
      summary: { type: 'string' },
      approved_by: { type: 'integer' },
      approved_at: { type: 'string', format: 'date-time' },
      expires_at: {
        type: 'string',
        format: 'date-time',
        description: 'The agent must call again before this time.',
      },
      self_approved: {
        type: 'boolean',
        description:
          'The approver is the requesting user (equivalent to typing the phrase on the direct path).',
      },
      next_step: { type: 'string' },
    },
    required: [
      'status',
      'audit_id',
      'approval_id',
      'verb',
      'approved_by',
      'approved_at',
      'expires_at',
      'self_approved',
    ],
  },
  delegateConsent: (ctx, args) => decisionConsent(ctx, args, 'Approve'),
  async handler(ctx, args) {
    const p = ctx.principal;
    const row = await findApprovalById(ctx.db, p.company_id, args.approval_id);
    if (row === undefined) throw notFound(args.approval_id);
    ctx.setEntity('approval', row.approval_id);
    const nowIso = ctx.now.toISOString();
    const status = effectiveStatus(row, nowIso);
    if (status !== 'pending') throw notPending(row, status);
    if (!mayConsent(p, 'approve', await ctx.runtime.consentSettings(p.company_id))) {
      // An agent never approves, whatever the phrase (no oracle) or the tenant's phrase_channel;
      // the approval stays pending. spec/consent.md §channels
      throw humanMustDecide('approve', approverFloor(row), row.approval_id);
    }
    // A typed-phrase action needs its phrase; a confirmation is approved with a click (no phrase).
    if (
      row.typed_phrase !== null &&
      (args.typed_phrase === undefined || !phrasesMatch(row.typed_phrase, args.typed_phrase))
    ) {
      throw new VerbError(
        'phrase_mismatch',
        'The typed phrase does not match the phrase of this approval, character for character.',
        {
          hint: `Type exactly: ${row.typed_phrase ?? ''}`,
        },
      );
    }
    // The agent's retry window opens now, as long as a nonce lives: a long approval TTL does not
    // leave an approved action usable for as long. spec/consent.md §approvals
    const retryExpiresAt = new Date(
      ctx.now.getTime() + (ctx.runtime.options.nonceTtlSeconds ?? 300) * 1000,
    ).toISOString();
    const decided = await approveById(ctxTx(ctx), p.company_id, row.approval_id, {
      by: p.user_id,
      role: p.role,
      name: p.user_name ?? null,
      at: nowIso,
      channel: decisionChannel(ctx),
      retryExpiresAt,
    });
    if (!decided) throw await decidedMeanwhile(ctx, row);
    await emitWebhookEvent(
      ctx.db,
      {
        companyId: p.company_id,
        type: 'approval.decided',
        data: {
          approval_id: row.approval_id,
          verb: row.verb,
          decision: 'approved',
          decided_by: p.user_id,
          decided_at: nowIso,
        },
        now: ctx.now,
      },
      () => ctx.runtime.kickOutbox(),
    );
    return {
      status: 'approved',
      approval_id: row.approval_id,
      verb: row.verb,
      summary: row.summary,
      approved_by: p.user_id,
      approved_at: nowIso,
      expires_at: retryExpiresAt,
      self_approved: p.user_id === row.requested_by,
      next_step: `The requesting agent may now call ${row.verb} again with the same arguments — with confirm=true and its nonce (no typed_phrase), or, from a client that cannot send a nonce, just the same call — before ${retryExpiresAt}.`,
    };
  },
});

export interface ApprovalsRejectArgs {
  approval_id: string;
  note?: string;
}

export const approvalsReject = defineSystemVerb<ApprovalsRejectArgs>({
  name: 'approvals.reject',
  title: 'Reject a pending action',
  description:
    "A human rejects a pending typed-phrase action (or withdraws an approval the agent has not used yet). The requesting agent's next call with that nonce answers approval_rejected. Needs the action's role floor. Reasons: role_denied, approval_not_found, approval_not_pending.",
  shape: 'receipt',
  category: 'consent',
  surfaces: ['http', 'cli'],
  input: {
    type: 'object',
    properties: {
      approval_id: APPROVAL_ID,
      note: { type: 'string', maxLength: 500, description: 'Why (shown to whoever lists the approval).' },
    },
    required: ['approval_id'],
    additionalProperties: false,
  },
  output: {
    type: 'object',
    properties: {
      status: { const: 'rejected' },
      audit_id: { type: 'integer', minimum: 1 },
      approval_id: { type: 'string' },
      verb: { type: 'string' },
      rejected_by: { type: 'integer' },
      rejected_at: { type: 'string', format: 'date-time' },
      note: { type: ['string', 'null'] },
    },
    required: ['status', 'audit_id', 'approval_id', 'verb', 'rejected_by', 'rejected_at'],
  },
  delegateConsent: (ctx, args) => decisionConsent(ctx, args, 'Reject'),
  async handler(ctx, args) {
    const p = ctx.principal;
    const row = await findApprovalById(ctx.db, p.company_id, args.approval_id);
    if (row === undefined) throw notFound(args.approval_id);
    ctx.setEntity('approval', row.approval_id);
    const nowIso = ctx.now.toISOString();
    const status = effectiveStatus(row, nowIso);
    const open = status === 'pending' || status === 'approved';
    if (!open) throw notPending(row, status);
    // Rejecting is a human's decision too; the requester withdraws its own request with
    // approvals.withdraw. spec/consent.md §channels
    if (!mayConsent(p, 'approve', await ctx.runtime.consentSettings(p.company_id)))
      throw humanMustDecide('reject', approverFloor(row), row.approval_id);
    const decided = await rejectById(ctxTx(ctx), p.company_id, row.approval_id, {
      by: p.user_id,
      role: p.role,
      name: p.user_name ?? null,
      at: nowIso,
      channel: decisionChannel(ctx),
      note: args.note ?? null,
    });
    if (!decided) throw await decidedMeanwhile(ctx, row);
    await emitWebhookEvent(
      ctx.db,
      {
        companyId: p.company_id,
        type: 'approval.decided',
        data: {
          approval_id: row.approval_id,
          verb: row.verb,
          decision: 'rejected',
          decided_by: p.user_id,
          decided_at: nowIso,
          note: args.note ?? null,
        },
        now: ctx.now,
      },
      () => ctx.runtime.kickOutbox(),
    );
    return {
      status: 'rejected',
      approval_id: row.approval_id,
      verb: row.verb,
      rejected_by: p.user_id,
      rejected_at: nowIso,
      note: args.note ?? null,
    };
  },
});

export interface ApprovalsWithdrawArgs {
  approval_id: string;
}

export const approvalsWithdraw = defineSystemVerb<ApprovalsWithdrawArgs>({
  name: 'approvals.withdraw',
  title: 'Withdraw a pending request',
  description:
    'Withdraw your own pending typed-phrase request: the approval is superseded (no human can approve it; its nonce answers approval_superseded). Reasons: approval_not_found, approval_not_pending.',
  shape: 'receipt',
  category: 'consent',
  input: {
    type: 'object',
    properties: { approval_id: APPROVAL_ID },
    required: ['approval_id'],
    additionalProperties: false,
  },
  output: {
    type: 'object',
    properties: {
      status: { const: 'superseded' },
      audit_id: { type: 'integer', minimum: 1 },
      approval_id: { type: 'string' },
      verb: { type: 'string' },
      withdrawn_at: { type: 'string', format: 'date-time' },
    },
    required: ['status', 'audit_id', 'approval_id', 'verb', 'withdrawn_at'],
  },
  // Withdrawing removes a way to act and grants nothing: no gate, any role that could have asked.
  delegateConsent: async (_ctx, args) => ({
    consentClass: null,
    roleFloor: 'employee',
    summary: `Withdraw the pending request ${args.approval_id}.`,
  }),
  ungated:
    'withdrawing a request only removes a way to act (the approval can no longer be used); it grants nothing, so no human consent is asked.',
  async handler(ctx, args) {
    const p = ctx.principal;
    const row = await findApprovalById(ctx.db, p.company_id, args.approval_id);
    // Another user's request reads as unknown: a requester withdraws only its own.
    if (row === undefined || row.requested_by !== p.user_id)
      throw new VerbError(
        'approval_not_found',
        `No request ${args.approval_id.slice(0, 64)} of yours exists: a requester withdraws only its own.`,
        {
          hint: 'Withdraw the approval_id your own pending answer gave you; a human rejects others’ requests.',
        },
      );
    ctx.setEntity('approval', row.approval_id);
    const nowIso = ctx.now.toISOString();
    const status = effectiveStatus(row, nowIso);
    if (status !== 'pending' && status !== 'approved') throw notPending(row, status);
    const done = await withdrawById(
      ctxTx(ctx),
      p.company_id,
      row.approval_id,
      nowIso,
      'Withdrawn by the requester.',
    );
    if (!done) throw await decidedMeanwhile(ctx, row);
    return { status: 'superseded', approval_id: row.approval_id, verb: row.verb, withdrawn_at: nowIso };
  },
});

/** The write transaction of a write verb's context (approve, reject, withdraw run inside one). */
function ctxTx(ctx: SystemVerbContext): StoreTx {
  return ctx.db as StoreTx;
}

export const approvalVerbs = [approvalsList, approvalsApprove, approvalsReject, approvalsWithdraw];
