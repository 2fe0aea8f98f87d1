/**
 * The one write core: a write's effect inside ONE store transaction. The pipeline's execute step,
 * transaction commits (each step) and transaction reverts all run their writes through
 * `executeInTx`: nonce burn, role floor (unless the caller checked it), the handler, the daily cap,
 * the audit row (hash chain), revert data, events, outbox. Throws VerbError on a denial or a domain
 * failure; the caller's transaction then rolls back everything.
 *
 * Spec: spec/consent.md §nonce §role-floors §caps, spec/receipts.md, spec/audit.md.
 */
import { queueOutboxMessage } from './outbox.ts';
import { emitWebhookEvent } from './webhook-endpoints.ts';
import { performance } from 'node:perf_hooks';
import type { Principal, Receipt, Role, VerbClass } from '../../../spec/types.ts';
import type { StoreTx } from '../../../store/store.ts';
import { StoreError } from '../../../store/store.ts';
import type { CompiledVerb } from '../../verb.ts';
import { writeContext } from '../../verb-context.ts';
import { checkOutput } from '../../verb-checks.ts';
import { countDailyCap } from '../../consent/daily-caps.ts';
import { ROLE_RANK } from '../../verb.ts';
import type { Caller, RuntimeCore } from '../../core.ts';
import {
  appendAudit,
  auditEntry,
  redact,
  wellFormedDeep,
  type AuditEntry,
  type AuditRow,
  type AuditStatus,
} from './audit.ts';
import { appendEvents, eventsChannel } from './events.ts';
import { sealRollbackHandle } from '../transactions/rollback-handle.ts';
import { insertRevertData } from './receipt-store.ts';
import {
  consumeApprovalByJti,
  linkPendingAction,
  findApprovalByJti,
  insertBurnedNonce,
  supersedeSameAction,
} from '../../consent/approvals-store.ts';
import { approvalRejected, approvalSuperseded, nonceReplayed } from '../../consent/refusals.ts';
import { argsHash } from './idempotency.ts';
import { channelOfCall, provenanceText, type ConsentProvenance } from '../../consent/provenance.ts';
import { refuse } from '../../refusals.ts';
import { VerbError } from '../../errors.ts';

/**
 * Default largest write result that may commit (bytes of its JSON): 4 MiB = 4_194_304, the MCP
 * transport's result limit (src/transports/mcp/envelope-map.ts DEFAULT_MAX_RESULT_BYTES).
 */
export const DEFAULT_MAX_WRITE_RESULT_BYTES = 4 * 1024 * 1024;

/** Room left in the limit for the receipt's own fields (status, audit_id, timestamp, keys, handle). */
const RECEIPT_FIELDS_BYTES = 2048;

/**
 * Refuse a write result that could not be sent, before anything commits: its JSON
 * is measured against the smaller of the runtime's `maxResultBytes` and the caller's transport
 * limit (`Caller.maxResultBytes`), less RECEIPT_FIELDS_BYTES. Cheap for the usual small result: a
 * UTF-16 unit is at most 3 UTF-8 bytes, so the byte count is only taken near the limit.
 * @throws VerbError result_too_large (details: bytes, limit_bytes); the write's transaction rolls back.
 */
export function assertResultFits(verb: string, result: Record<string, unknown>, limit: number): void {
  const room = Math.max(0, limit - RECEIPT_FIELDS_BYTES);
  const json = JSON.stringify(result);
  if (json.length * 3 <= room) return;
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes <= room) return;
  throw new VerbError(
    'result_too_large',
    `${verb} would answer ${bytes} bytes, more than the ${limit} bytes this call can be sent; nothing was written.`,
    {
      hint: 'Write less in one call (split the input over several calls), or raise the limit of the server (maxResultBytes).',
      details: { bytes, limit_bytes: limit },
    },
  );
}

/** The consent decision of a confirmed call (what the execute step must burn/consume). */
export interface Consent {
  jti?: string;
  /**
   * The nonce's own expiry (ISO 8601, from its signed payload): required with `jti`. The burn row
   * is keyed (expires_at, jti) on SQLite (migration 10), so it must be the same for every use.
   */
  nonceExpires?: string;
  /**
   * The nonce's approvals row (created at preflight: typed-phrase gates, and confirmation gates
   * under a human confirmation_channel or asked over a plain-retry transport) is consumed in the
   * effect's transaction, only while still pending or approved. spec/consent.md §nonce §plain-retry
   */
  burnApproval?: boolean;
  approvalId?: string;
  approvedBy?: number;
  approvedAt?: string;
  /** Where the approval was decided and the approver's role then (spec/consent.md §provenance). */
  approvedChannel?: string;
  approvedRole?: string;
  approvedName?: string;
  /** SHA-256 of the call's canonical arguments (the nonce's `a`), when the consent step computed it. */
  argsHash?: string;
  /** The class of the gate that applied (the declared class, or higher when a rule raised it). */
  gateClass?: VerbClass;
  /** Ids of the owner's rules that raised the gate. spec/consent.md §conditional-gates */
  raisedBy?: string[];
  requiresApproval: boolean;
}

/** Input of the shared write core (dispatch and transaction commit both use it). */
export interface ExecuteInput {
  verb: CompiledVerb;
  principal: Principal;
  args: Record<string, unknown>;
  now: Date;
  caller: Caller;
  consentClass: VerbClass | null;
  capClass: VerbClass | null;
  /** The role floor that applies (delegated floors differ from the verb's); default the verb's. */
  roleFloor?: Role;
  /**
   * The caller already checked this principal's role floor for this verb (the pipeline's floors
   * step, a transaction commit's re-check): not checked again here. Otherwise it is.
   */
  floorChecked?: boolean;
  consent: Consent;
  idempotencyKey: string | null;
  t0: number;
  transactionId?: string;
  parentId?: number;
  /**
   * The caller stores this write's receipt row in the same transaction (the pipeline's execute
   * step, via claimIdempotency): the revert data is returned as `revertData` for that row instead
   * of being inserted into revert_data (one B-tree less per write; spec/receipts.md §stored).
   */
  revertDataInReceipt?: boolean;
  /**
   * The consent provenance to record instead of the one derived from `consent` and the caller:
   * a transaction step's, given when it was appended. spec/consent.md §provenance
   */
  provenance?: ConsentProvenance;
}

export interface ExecuteResult {
  receipt: Receipt;
  row: AuditRow;
  result: Record<string, unknown>;
  /** The verb's `secret_result` members, taken out of the receipt: for this caller only, never stored. */
  secret?: Record<string, unknown>;
  /** The revert data (JSON) the caller must store with the receipt (`revertDataInReceipt`). */
  revertData?: string;
}

/**
 * Single use of a confirmation, inside the effect's transaction (spec/consent.md §nonce):
 * - a typed-phrase gate first consumes its approvals row, only while it is pending or approved —
 *   the row lock makes a concurrent second use or a concurrent rejection lose or win cleanly
 *   (nonce_replayed, approval_rejected); a decision recorded meanwhile becomes approved_by/at;
 * - then the nonce id goes into `nonces` (every burned nonce is there), whose primary key refuses
 *   a second use (nonce_replayed).
 */
async function burnNonce(
  tx: StoreTx,
  c: Consent,
  jti: string,
  verbName: string,
  companyId: number,
  nowIso: string,
): Promise<void> {
  if (c.burnApproval) {
    const used = await consumeApprovalByJti(tx, companyId, jti);
    if (used !== undefined) {
      c.approvalId = used.approval_id;
      if (c.approvedBy === undefined && used.decided_by !== null) {
        c.approvedBy = used.decided_by;
        c.approvedAt = used.decided_at ?? undefined;
        c.approvedChannel = used.decided_channel ?? undefined;
        c.approvedRole = used.decided_role ?? undefined;
        c.approvedName = used.decided_name ?? undefined;
      }
    } else {
      const row = await findApprovalByJti(tx, companyId, jti);
      if (row?.status === 'rejected') throw approvalRejected(verbName, row.approval_id, row.decision_note);
      if (row?.status === 'superseded')
        throw approvalSuperseded(verbName, row.approval_id, row.decision_note);
      if (row?.status === 'consumed') throw nonceReplayed(verbName);
      // expired by the sweep (clock skew between nodes) or never stored: the nonces row decides alone.
    }
  }
  // The burn's key includes the expiry: a made-up one (the time of use) would not collide twice.
  if (c.nonceExpires === undefined) throw new Error(`${verbName}: a nonce burn without the nonce's expiry`);
  try {
    await insertBurnedNonce(tx, jti, companyId, nowIso, c.nonceExpires);
  } catch (err) {
    if (err instanceof StoreError && err.code === 'unique_violation') throw nonceReplayed(verbName);
    throw err;
  }
}

/**
 * Run one write inside `tx`: burn the nonce, check the role floor (unless `floorChecked`), run the
 * handler, count the daily cap, append the audit row, events, outbox and revert data. Throws
 * VerbError (role_denied, nonce_replayed, approval_rejected, daily_cap_exceeded, the handler's own)
 * on a denial or a domain failure; the caller's transaction then rolls back everything.
 */
export async function executeInTx(rt: RuntimeCore, tx: StoreTx, input: ExecuteInput): Promise<ExecuteResult> {
  const { verb, principal: p, args, now } = input;
  const nowIso = now.toISOString();
  // The role floor at execution, for callers that reach this point without the pipeline's floors
  // step (transaction reverts, direct calls). spec/consent.md §role-floors
  if (input.floorChecked !== true) {
    const roleFloor = input.roleFloor ?? verb.roleFloor;
    if (ROLE_RANK[p.role] < ROLE_RANK[roleFloor]) {
      throw refuse.roleDenied(verb.name, roleFloor, p.role);
    }
  }
  const consent = input.consent;
  if (consent.jti !== undefined) await burnNonce(tx, consent, consent.jti, verb.name, p.company_id, nowIso);
  const auditId = await tx.nextAuditId();
  // The pending rows of this nonce (the preflight) now belong to this write: one Activity row.
  if (consent.jti !== undefined) await linkPendingAction(tx, p.company_id, consent.jti, auditId);
  const { ctx, effects } = writeContext(rt, tx, {
    verb,
    principal: p,
    now,
    caller: input.caller,
    auditId,
    idempotencyKey: input.idempotencyKey,
  });
  // Well-formed text only: the receipt is signed over the RFC 8785 form of the result (which has
  // none for a lone surrogate) after the commit, and the idempotency record keeps it.
  const result = wellFormedDeep((await verb.definition.handler(ctx, args)) ?? {}) as Record<string, unknown>;
  // Secret result members (a new API key) leave the result before it is receipted, stored or
  // audited: only the envelope of this one call carries them (spec/envelope.md §secret).
  let secret: Record<string, unknown> | undefined;
  for (const k of verb.definition.secret_result ?? []) {
    if (!(k in result)) continue;
    (secret ??= {})[k] = result[k];
    delete result[k];
  }
  assertResultFits(
    verb.name,
    result,
    Math.min(rt.options.maxResultBytes, input.caller.maxResultBytes ?? Infinity),
  );
  // The tenant-wide rows (daily counter, then the chain head) are locked as late as possible, after
  // the handler: on PostgreSQL every writer of the tenant queues on them until commit, so the
  // locked section is the tail of the transaction only. Over the cap → the whole write rolls back.
  if (input.capClass !== null && input.capClass !== 'READ' && input.capClass !== 'BLOCKED') {
    const counted = await countDailyCap(
      tx,
      (await rt.tenants.get(p.company_id))?.settings,
      p.company_id,
      input.capClass,
      now,
    );
    if (counted !== undefined && counted.count === counted.cap) {
      // This write uses the day's last allowed one: announce it with the write (docs/webhooks.md).
      const data = {
        consent_class: input.capClass,
        cap: counted.cap,
        day: counted.day,
        verb: verb.name,
      };
      await emitWebhookEvent(tx, { companyId: p.company_id, type: 'cap.reached', data, now, auditId }, () =>
        rt.kickOutbox(),
      );
    }
  }
  const { events, outbox, rollback, entity, link } = effects;
  const rollbackHandle =
    rollback !== undefined ? sealRollbackHandle(rt.secrets, rollback.handle, p.company_id, auditId) : null;
  const latency = performance.now() - input.t0;
  const entry = newEntry(verb.name, verb, p, now, 'completed', null, redact(args, verb.secretPaths), latency);
  entry.consent_class = input.consentClass;
  entry.entity_type = entity?.type ?? null;
  entry.entity_id = entity?.id ?? null;
  entry.is_reversible = rollback !== undefined && verb.revertible ? 1 : 0;
  entry.rollback_handle = rollbackHandle;
  entry.idempotency_key = input.idempotencyKey;
  entry.transaction_id = link.transaction_id ?? input.transactionId ?? null;
  entry.parent_id = link.parent_id ?? input.parentId ?? null;
  entry.requires_approval = consent.requiresApproval ? 1 : 0;
  entry.approved_by = consent.approvedBy ?? null;
  entry.approved_at = consent.approvedAt ?? null;
  const provenance = input.provenance ?? provenanceOf(input, nowIso);
  if (provenance !== undefined) entry.consent = provenanceText(provenance);
  const row = await appendAudit(tx, entry, auditId);
  // An approval answers one attempt: the identical action is done, so its other open approvals
  // (another nonce, another path) can never run it again. spec/consent.md §approvals
  if (consent.requiresApproval) {
    await supersedeSameAction(tx, {
      companyId: p.company_id,
      verb: verb.name,
      argsHash: consent.argsHash ?? argsHash(args),
      exceptApprovalId: consent.approvalId,
      at: nowIso,
      auditId,
    });
  }
  let revertData: string | undefined;
  if (rollback !== undefined) {
    revertData = JSON.stringify(rollback.data);
    if (input.revertDataInReceipt !== true) {
      await insertRevertData(tx, auditId, p.company_id, revertData);
      revertData = undefined;
    }
  }
  if (events.length > 0) {
    await appendEvents(tx, p.company_id, events, { auditId, actor: actorOf(p), occurredAt: nowIso });
    tx.afterCommit(() => rt.store.notify(eventsChannel(p.company_id)));
  }
  for (const o of outbox) {
    await queueOutboxMessage(tx, { companyId: p.company_id, kind: o.kind, payload: o.payload, auditId, now });
  }
  if (outbox.length > 0) tx.afterCommit(() => rt.kickOutbox());
  tx.afterCommit(() => rt.afterWrite(row));
  const receipt: Receipt = {
    ...result,
    status: typeof result.status === 'string' ? result.status : 'completed',
    audit_id: typeof result.audit_id === 'number' ? result.audit_id : auditId,
    timestamp: typeof result.timestamp === 'string' ? result.timestamp : nowIso,
  };
  if (input.idempotencyKey !== null) receipt.idempotency_key = input.idempotencyKey;
  if (rollbackHandle !== null) receipt.rollback_handle = rollbackHandle;
  // Signed with the receipt (spec/receipts.md §consent): who consented, where, when, which approval.
  if (provenance !== undefined) receipt.consent = provenance;
  checkOutput(rt.options, verb, receipt);
  const out: ExecuteResult = { receipt, row, result };
  if (secret !== undefined) out.secret = secret;
  if (revertData !== undefined) out.revertData = revertData;
  return out;
}

/**
 * The consent provenance of a write that passed a gate (none for ungated writes): an out-of-band
 * approval names its approver and channel; a confirm or typed phrase on the call itself names
 * the caller when the call came through a human channel, else "agent". spec/consent.md §provenance
 */
export function provenanceOf(input: ExecuteInput, nowIso: string): ConsentProvenance | undefined {
  const c = input.consent;
  const cls = c.gateClass ?? input.consentClass;
  if (c.jti === undefined || cls === null || cls === 'READ') return undefined;
  const typed = cls === 'WRITE_FINANCIAL' || cls === 'IRREVERSIBLE';
  const raised = c.raisedBy !== undefined && c.raisedBy.length > 0 ? { raised_by: c.raisedBy } : {};
  const approval = c.approvalId !== undefined ? { approval_id: c.approvalId } : {};
  if (c.approvedBy !== undefined) {
    return {
      class: cls,
      // A confirmation gate a human approved with a click (confirmation_channel human) is a confirmation.
      act: typed ? 'typed_phrase' : 'confirmation',
      channel: (c.approvedChannel as ConsentProvenance['channel'] | undefined) ?? 'dashboard',
      user_id: c.approvedBy,
      ...(c.approvedRole !== undefined ? { role: c.approvedRole } : {}),
      ...(c.approvedName !== undefined ? { user_name: c.approvedName } : {}),
      ...approval,
      at: c.approvedAt ?? nowIso,
      ...raised,
    };
  }
  // Who is behind the call: the principal's actor, set only by src/identity.
  const p = input.principal;
  const human = p.actor === 'human';
  const channel = channelOfCall(
    human,
    input.caller.surface,
    p.actor === 'human' ? p.consent_channel : undefined,
  );
  return {
    class: cls,
    act: typed ? 'typed_phrase' : 'confirmation',
    channel,
    user_id: channel === 'agent' ? 'agent' : p.user_id,
    ...(channel === 'agent' ? {} : { role: p.role }),
    ...(channel !== 'agent' && p.user_name !== undefined ? { user_name: p.user_name } : {}),
    ...approval,
    at: nowIso,
    ...raised,
  };
}

/** The actor of a principal's events: `user:<id>` or `user:<id> via <agent_type>`. */
export function actorOf(p: Principal): string {
  return `user:${p.user_id}${p.agent_type ? ` via ${p.agent_type}` : ''}`;
}

/**
 * A fresh audit entry with the attempt's identity filled in. Built as one object literal on
 * purpose: spreading large objects is a slow path in V8 (tens of µs), and this runs per dispatch.
 */
export function newEntry(
  name: string,
  verb: CompiledVerb | undefined,
  p: Principal,
  now: Date,
  status: AuditStatus,
  reason: string | null,
  requestData: Record<string, unknown>,
  latency: number | null,
): AuditEntry {
  const e = auditEntry({
    company_id: p.company_id,
    now,
    action: name,
    category: verb?.category ?? 'unknown',
    status,
    principal: p,
  });
  e.shape = verb?.shape ?? null;
  e.consent_class = verb ? verb.consentClass : null;
  e.reason = reason;
  e.request_data = requestData;
  e.latency_ms = latency;
  return e;
}
