/**
 * Revert: undo one recorded write with the revert handler its verb declared at registration.
 * A revert is a new audited action (its own audit row, `parent_id` = the original row); history
 * is never rewritten. The `reversals` table (primary key = the original audit_id) is claimed in the
 * revert's own store transaction before the handler runs, so an action is reverted at most once,
 * even under concurrent reverts (already_reverted).
 *
 * Consent is delegated: a revert passes the consent gate, role floor and tier floor of the verb it
 * undoes (a WRITE_FINANCIAL action needs an admin and the typed phrase `REVERT <verb> #<audit_id>`
 * unless the verb's `revert.phrase` says otherwise). A transaction's parent row is gated by the
 * strictest of its steps.
 *
 * Spec: spec/receipts.md §revert, spec/transactions.md §revert.
 */
import type { Role, Tier, VerbClass } from '../../../spec/types.ts';
import type { Queryable } from '../../../store/store.ts';
import { StoreError } from '../../../store/store.ts';
import { VerbError, isVerbError } from '../../errors.ts';
import type { CompiledVerb, DelegatedConsent, OriginalAction, SystemVerbContext } from '../../verb.ts';
import { ROLE_RANK, TIER_RANK } from '../../verb.ts';
import type { RuntimeCore } from '../../core.ts';
import { getAuditRow, type AuditRow } from '../write/audit.ts';
import { openRollbackHandle } from './rollback-handle.ts';
import { findRevertData } from '../write/receipt-store.ts';
import { refuse } from '../../refusals.ts';
import { reasonInfo } from '../../../spec/reasons.ts';
import { ledgerContext, revertContext } from '../../verb-context.ts';
import { reachDenied } from '../../verb-checks.ts';

/** Input of audit.revert: exactly one of the two. */
export interface RevertArgs {
  audit_id?: number;
  rollback_handle?: string;
  /** Revert even when the entity changed after the action (skips changed_since; consent still applies). */
  force?: boolean;
}

/** Output of audit.revert (shape revert), before the runtime adds the receipt fields. */
export interface RevertOutput {
  reverted: boolean;
  /** The original action's audit row. */
  audit_id: number;
  original_action: string;
  revert_action?: string;
  /** The audit row of this revert. */
  revert_audit_id?: number;
  /** With reverted=false (a handler that undid only part): partially_reverted, already_delivered, … */
  reason?: string;
  message: string;
  [k: string]: unknown;
}

const CLASS_RANK: Readonly<Record<VerbClass, number>> = {
  READ: 0,
  WRITE_REVERSIBLE: 1,
  WRITE_FINANCIAL: 2,
  IRREVERSIBLE: 3,
  BLOCKED: 4,
};

function notFound(id: unknown): VerbError {
  return refuse.notFound(
    'audit row',
    id,
    'Pass the audit_id of a receipt of this tenant (audit.trail lists them).',
  );
}

/**
 * Resolve `{ audit_id }` or `{ rollback_handle }` to the caller's audit row. Another tenant's row
 * answers exactly like a missing one (not_found: nothing leaks). A forged, altered or foreign
 * handle → rollback_handle_invalid. Neither or both → invalid_input.
 */
export async function resolveRevertTarget(
  q: Queryable,
  rt: RuntimeCore,
  companyId: number,
  args: RevertArgs,
): Promise<AuditRow> {
  const hasId = args.audit_id !== undefined && args.audit_id !== null;
  const hasHandle = args.rollback_handle !== undefined && args.rollback_handle !== null;
  if (hasId === hasHandle) {
    throw new VerbError('invalid_input', 'Pass exactly one of audit_id or rollback_handle.', {
      path: hasId ? '/rollback_handle' : '/audit_id',
      hint: 'Use the audit_id (or the rollback_handle) from the receipt of the action to undo.',
    });
  }
  if (hasId) {
    const row = await getAuditRow(q, companyId, Number(args.audit_id));
    if (row === undefined) throw notFound(args.audit_id);
    return row;
  }
  const opened = openRollbackHandle(rt.secrets, args.rollback_handle, companyId);
  const row = await getAuditRow(q, companyId, opened.auditId);
  if (row === undefined || row.rollback_handle !== args.rollback_handle) {
    // Authentic for this tenant but not the handle recorded on that row (e.g. a rotated copy).
    throw new VerbError(
      'rollback_handle_invalid',
      'The rollback_handle does not match the one recorded for that action.',
      {
        hint: 'Copy the rollback_handle exactly as received, or pass the audit_id instead.',
      },
    );
  }
  return row;
}

/**
 * The first later write that changed the entity `row` touched: a completed write audit row of the
 * same tenant with the same entity_type / entity_id and a larger audit_id, not itself reverted, and
 * not the revert row of such a later action. A revert row of `row` itself (its parent_id is `row`)
 * never counts: a concurrent revert of the same action that commits while this one is being checked
 * is for the reversal claim to refuse (already_reverted), not a later change. Rows of
 * `skipTransaction` are ignored (a transaction's revert undoes its own steps in reverse order
 * first), and so are rows of the `commuting` verbs (the additive verbs when `row`'s own undo is
 * additive: isAdditive). Undefined when the row names no entity.
 */
export async function laterChange(
  q: Queryable,
  row: AuditRow,
  skipTransaction?: string | null,
  commuting: readonly string[] = [],
): Promise<{ audit_id: number; action_type: string } | undefined> {
  if (row.entity_type === null || row.entity_id === null) return undefined;
  const skip = skipTransaction ?? null;
  const later = await q.get<{ audit_id: number; action_type: string }>(
    `SELECT a.audit_id, a.action_type FROM audit_log a
      WHERE a.company_id = ? AND a.entity_type = ? AND a.entity_id = ? AND a.audit_id > ?
        AND a.status = 'completed' AND a.consent_class IS NOT NULL AND a.consent_class <> 'READ'
        AND NOT (a.action_type = 'audit.revert' AND a.parent_id IS NOT NULL AND a.parent_id = ?)
        ${skip === null ? '' : 'AND (a.transaction_id IS NULL OR a.transaction_id <> ?)'}
        ${commuting.length === 0 ? '' : `AND a.action_type NOT IN (${commuting.map(() => '?').join(', ')})`}
        AND NOT EXISTS (SELECT 1 FROM reversals r WHERE r.company_id = a.company_id AND r.audit_id = a.audit_id)
        AND NOT EXISTS (SELECT 1 FROM reversals r WHERE r.company_id = a.company_id
                          AND r.revert_audit_id = a.audit_id AND r.audit_id > ?)
      ORDER BY a.audit_id LIMIT 1`,
    [
      row.company_id,
      row.entity_type,
      row.entity_id,
      row.audit_id,
      row.audit_id,
      ...(skip === null ? [] : [skip]),
      ...commuting,
      row.audit_id,
    ],
  );
  return later === undefined
    ? undefined
    : { audit_id: Number(later.audit_id), action_type: String(later.action_type) };
}

/** Is the undo of `action` additive (it removes only what the action added: RevertDefinition.additive)? */
export function isAdditive(rt: Pick<RuntimeCore, 'registry'>, action: string): boolean {
  return rt.registry.get(action)?.definition.revert?.additive === true;
}

/**
 * The later actions that commute with undoing `target`: every additive verb's name when `target`'s
 * own undo is additive (two additions to one entity never overwrite each other), else none.
 */
function commutingWith(rt: Pick<RuntimeCore, 'registry'>, target: AuditRow): string[] {
  if (!isAdditive(rt, target.action_type)) return [];
  return rt.registry
    .all()
    .filter((v) => v.definition.revert?.additive === true)
    .map((v) => v.name);
}

/** A later write found by firstLaterChange: the row it blocks (`target`) and the later row. */
export interface LaterChange {
  target: AuditRow;
  later: { audit_id: number; action_type: string };
}

/**
 * The first later write (laterChange) that changed the entity of `row` — or, for a transaction's
 * parent, of any of its steps not already reverted on its own. spec/receipts.md §revert rule 7.
 */
export async function firstLaterChange(
  q: Queryable,
  rt: Pick<RuntimeCore, 'registry'>,
  row: AuditRow,
  steps: number[] | undefined,
): Promise<LaterChange | undefined> {
  const targets: AuditRow[] = [];
  if (steps === undefined) targets.push(row);
  else
    for (const id of steps) {
      const step = await getAuditRow(q, row.company_id, id);
      const done = await q.get('SELECT 1 AS x FROM reversals WHERE audit_id = ? AND company_id = ?', [
        id,
        row.company_id,
      ]);
      // A step already reverted on its own is skipped by the transaction's revert.
      if (step !== undefined && done === undefined) targets.push(step);
    }
  for (const target of targets) {
    const later = await laterChange(
      q,
      target,
      steps !== undefined ? row.transaction_id : null,
      commutingWith(rt, target),
    );
    if (later !== undefined) return { target, later };
  }
  return undefined;
}

/**
 * The changed_since refusal for reverting `row` over `found`: the message and
 * `details.later_audit_id` / `later_action` name the later row, the hint says how to force.
 */
export function changedSinceError(row: AuditRow, found: LaterChange, additive = false): VerbError {
  const { target: t, later } = found;
  const what = `${t.entity_type} ${t.entity_id}`;
  const label = `${row.action_type} #${row.audit_id}`;
  const message = additive
    ? `${what} changed after ${t.action_type} #${t.audit_id}: ${later.action_type} #${later.audit_id} wrote it later and may have changed what ${label} added.`
    : `${what} changed after ${t.action_type} #${t.audit_id}: ${later.action_type} #${later.audit_id} wrote it later, so reverting ${label} would discard that change.`;
  const force = additive
    ? `to remove what ${label} added anyway (the later change stays as it is; the consent gate still applies)`
    : `to restore ${label} anyway (discarding the later change; the consent gate still applies)`;
  return new VerbError('changed_since', message, {
    hint: `${additive ? 'Check' : 'Revert'} audit row ${later.audit_id} first, or call audit.revert again with { "audit_id": ${row.audit_id}, "force": true } ${force}.`,
    details: {
      audit_id: row.audit_id,
      entity_type: t.entity_type,
      entity_id: t.entity_id,
      later_audit_id: later.audit_id,
      later_action: later.action_type,
    },
  });
}

/** A row that can be reverted: the verb whose handler undoes it and the revert data it recorded. */
export interface Revertability {
  kind: 'handler';
  verb: CompiledVerb;
  data: Record<string, unknown>;
}

/**
 * not_revertible for a completed write nothing can undo automatically: `details` carry the
 * audit_id, the original_action and `cause: "no_revert_handler"` (the upstream word for it).
 * spec/receipts.md §revert rule 3.
 */
function noRevertHandler(row: AuditRow, why: string): VerbError {
  return new VerbError('not_revertible', `${why} Nothing was undone; manual intervention is needed.`, {
    hint: `Undo its effect by hand or with the verb that compensates it (solid verbs show ${row.action_type}); audit.revert cannot.`,
    details: { audit_id: row.audit_id, original_action: row.action_type, cause: 'no_revert_handler' },
  });
}

/**
 * Decide whether `row` can be reverted. Throws not_revertible when it is not a completed write,
 * or when nothing can undo it (its verb declares no revert handler, is no longer registered, or
 * the call recorded no rollback: `details.cause` no_revert_handler), already_reverted, or — when
 * `checkLater` (the default) — changed_since (a later write changed the same entity,
 * firstLaterChange). Everything it reads is in the audit row, the registry and the revert data,
 * so it answers before consent is asked (revertConsent) and again inside the write (runRevert).
 */
export async function assessRevert(
  q: Queryable,
  rt: RuntimeCore,
  row: AuditRow,
  checkLater = true,
): Promise<Revertability> {
  const label = `${row.action_type} #${row.audit_id}`;
  const verb = rt.registry.get(row.action_type);
  const isWrite =
    verb !== undefined ? verb.isWrite : row.consent_class !== null && row.consent_class !== 'READ';
  if (!isWrite) {
    throw new VerbError('not_revertible', `${label} is a read; only writes can be reverted.`, {
      hint: 'Pick the audit_id of a write receipt (audit.trail with status completed).',
    });
  }
  if (row.status !== 'completed') {
    throw new VerbError(
      'not_revertible',
      `${label} is ${row.status}, not a completed write; it changed nothing to undo.`,
      {
        hint: 'Only completed writes can be reverted; audit.trail shows each row’s status.',
      },
    );
  }
  const reversal = await q.get<{ revert_audit_id: number }>(
    'SELECT revert_audit_id FROM reversals WHERE audit_id = ? AND company_id = ?',
    [row.audit_id, row.company_id],
  );
  if (reversal !== undefined) {
    const by = Number(reversal.revert_audit_id);
    throw refuse.alreadyReverted(label, row.audit_id, by);
  }
  if (verb === undefined) {
    throw noRevertHandler(
      row,
      `${label} cannot be undone: ${row.action_type} is no longer registered, so no revert handler exists.`,
    );
  }
  if (!verb.revertible) {
    throw noRevertHandler(row, `${label} cannot be undone: ${row.action_type} declares no revert handler.`);
  }
  const parsed = await findRevertData(q, row.company_id, row.audit_id);
  if (parsed === undefined) {
    throw noRevertHandler(
      row,
      `${label} cannot be undone: the call recorded no rollback (its verb did not say how to undo this particular call).`,
    );
  }
  if (checkLater) {
    const found = await firstLaterChange(q, rt, row, compositeSteps(row, parsed));
    if (found !== undefined) throw changedSinceError(row, found, isAdditive(rt, found.target.action_type));
  }
  return { kind: 'handler', verb, data: parsed };
}

/** The OriginalAction a revert handler receives. `args` are as audited (secret fields redacted). */
export function originalAction(row: AuditRow, data: Record<string, unknown>): OriginalAction {
  return {
    audit_id: row.audit_id,
    verb: row.action_type,
    args: row.request_data,
    rollback: data,
    rollback_handle: row.rollback_handle,
    entity_type: row.entity_type,
    entity_id: row.entity_id,
    created_at: row.created_at,
  };
}

/** Audit ids of the steps of a composite row (a transaction's parent), from its rollback data. */
export function compositeSteps(row: AuditRow, data: Record<string, unknown>): number[] | undefined {
  if (row.shape !== 'transaction' || !Array.isArray(data.steps)) return undefined;
  return (data.steps as unknown[]).map(Number).filter((n) => Number.isSafeInteger(n) && n > 0);
}

interface Gate {
  consentClass: VerbClass;
  roleFloor: Role;
  tierFloor: Tier;
  /** The verbs the revert reaches (each step's, for a transaction). */
  verbs?: string[];
}

/** The strictest gate among the steps' verbs (class, role floor, tier floor). */
async function compositeGate(q: Queryable, rt: RuntimeCore, row: AuditRow, steps: number[]): Promise<Gate> {
  const gate: Gate = {
    consentClass: 'WRITE_REVERSIBLE',
    roleFloor: 'employee',
    tierFloor: 'starter',
    verbs: [],
  };
  for (const id of steps) {
    const step = await getAuditRow(q, row.company_id, id);
    const v = step === undefined ? undefined : rt.registry.get(step.action_type);
    if (step !== undefined) gate.verbs!.push(step.action_type);
    const cls = (v?.consentClass ??
      (step?.consent_class as VerbClass | null) ??
      'WRITE_REVERSIBLE') as VerbClass;
    if (CLASS_RANK[cls] > CLASS_RANK[gate.consentClass] && cls !== 'BLOCKED') gate.consentClass = cls;
    if (v !== undefined && ROLE_RANK[v.roleFloor] > ROLE_RANK[gate.roleFloor]) gate.roleFloor = v.roleFloor;
    if (v !== undefined && TIER_RANK[v.tierFloor] > TIER_RANK[gate.tierFloor]) gate.tierFloor = v.tierFloor;
  }
  return gate;
}

/**
 * Deny wins: the floors of the action being undone are checked before anything else is said about
 * it (already_reverted, not_revertible), so a caller below them learns only
 * role_denied / tier_denied. A revert row's floors are those of the action it reverted (walked up
 * parent_id, at most 16 rows); every revert needs at least the employee role (it is a write).
 */
async function denyBelowFloor(ctx: SystemVerbContext, rt: RuntimeCore, row: AuditRow): Promise<void> {
  let role: Role = 'employee';
  let tier: Tier = 'starter';
  let cur: AuditRow | undefined = row;
  for (let hops = 0; cur !== undefined && hops < 16; hops++) {
    const v = rt.registry.get(cur.action_type);
    if (v !== undefined && v.name !== 'audit.revert') {
      if (ROLE_RANK[v.roleFloor] > ROLE_RANK[role]) role = v.roleFloor;
      if (TIER_RANK[v.tierFloor] > TIER_RANK[tier]) tier = v.tierFloor;
    }
    if (cur.action_type !== 'audit.revert' || cur.parent_id === null) break;
    cur = await getAuditRow(ctx.db, cur.company_id, cur.parent_id);
  }
  const p = ctx.principal;
  if (TIER_RANK[p.tier] < TIER_RANK[tier]) {
    throw new VerbError(
      'tier_denied',
      `audit.revert of ${row.action_type} needs the ${tier} tier; this tenant is on ${p.tier}.`,
      {
        hint: 'Upgrade the subscription tier (subscription_upgrade_tier) or ask the operator.',
      },
    );
  }
  if (ROLE_RANK[p.role] < ROLE_RANK[role]) {
    throw refuse.roleDenied(`audit.revert of ${row.action_type}`, role, p.role);
  }
}

/**
 * audit.revert's delegated consent: the gate of the verb being undone (spec/receipts.md §revert).
 * Throws role_denied / tier_denied first, then not_found, rollback_handle_invalid,
 * not_revertible (also for an action nothing can undo), already_reverted, changed_since — all
 * before any consent is asked.
 */
export async function revertConsent(ctx: SystemVerbContext, args: RevertArgs): Promise<DelegatedConsent> {
  const rt = ctx.runtime;
  const row = await resolveRevertTarget(ctx.db, rt, ctx.principal.company_id, args);
  await denyBelowFloor(ctx, rt, row);
  // Deny wins here too: a limited key learns nothing more about an action it could not have
  // called (the scope step checks the steps and the transport's narrowing; consent.md §api-keys).
  const target = row.shape === 'transaction' ? undefined : rt.registry.get(row.action_type);
  const outside =
    target === undefined
      ? undefined
      : reachDenied({ principal: ctx.principal, ...ctx.narrowing }, target, ctx.now, 'audit.revert');
  if (outside !== undefined) throw outside;
  // An early answer before consent is asked; runRevert checks again inside its transaction.
  const a = await assessRevert(ctx.db, rt, row, args.force !== true);
  const steps = compositeSteps(row, a.data);
  const gate: Gate =
    steps !== undefined
      ? await compositeGate(ctx.db, rt, row, steps)
      : { consentClass: a.verb.consentClass, roleFloor: a.verb.roleFloor, tierFloor: a.verb.tierFloor };
  const original = originalAction(row, a.data);
  const typed = gate.consentClass === 'WRITE_FINANCIAL' || gate.consentClass === 'IRREVERSIBLE';
  const phrase = typed
    ? (a.verb.definition.revert?.phrase?.(original) ?? `REVERT ${row.action_type} #${row.audit_id}`)
    : undefined;
  return {
    consentClass: gate.consentClass,
    roleFloor: gate.roleFloor,
    tierFloor: gate.tierFloor,
    ...(phrase !== undefined ? { phrase } : {}),
    summary: await undoWords(rt, row, target, steps?.length, original),
    capClass: gate.consentClass,
    targets: gate.verbs ?? [row.action_type],
  };
}

/**
 * The undo's consent summary in the owner's words: what the action did (its verb's consent
 * summary over the row's redacted arguments, else its title), when, in the tenant's time zone, and
 * by whom — e.g. `Undo “Add the note "ship the order"” (receipt #12), done by user 3 (employee) on
 * 7 Dec 2026, 13:05 (America/New_York).` A verb whose revert has `describe` names the change
 * before → after instead: `Undo “Phone of Ada Lovelace: +1 555 0100 → +1 555 0199” (receipt #12)…`.
 * The receipt number stays for the reviewer; the verb's name and the UTC timestamp do not
 * (issue 32 row 8).
 */
async function undoWords(
  rt: RuntimeCore,
  row: AuditRow,
  target: CompiledVerb | undefined,
  steps: number | undefined,
  original: OriginalAction,
): Promise<string> {
  // The change before → after in the verb's own words (revert.describe), else its summary.
  let what: string | undefined;
  try {
    what = nonEmpty(target?.definition.revert?.describe?.(original))?.replace(/[.]$/, '');
  } catch {
    what = undefined;
  }
  if (what === undefined)
    try {
      const w = target?.definition.summary?.(row.request_data ?? {});
      if (typeof w === 'string' && w !== '' && !w.includes('undefined')) what = w.replace(/[.]$/, '');
    } catch {
      what = undefined;
    }
  what ??= target?.definition.title ?? (steps !== undefined ? 'a transaction' : row.action_type);
  const zone = (await rt.tenants.get(row.company_id))?.settings?.time_zone ?? 'UTC';
  let when: string;
  try {
    when = new Date(row.created_at).toLocaleString('en-GB', {
      dateStyle: 'medium',
      timeStyle: 'short',
      timeZone: zone,
    });
  } catch {
    when = row.created_at;
  }
  const by = row.user_id === null ? '' : ` by user ${row.user_id}${row.role ? ` (${row.role})` : ''}`;
  const tail = steps !== undefined ? ` Its ${steps} steps are undone in reverse order.` : '';
  return `Undo “${what}” (receipt #${row.audit_id}), done${by} on ${when} (${zone}).${tail}`;
}

/** `v` when it is a non-empty string naming no `undefined` value, else undefined. */
function nonEmpty(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' && !v.includes('undefined') ? v : undefined;
}

function revertFailed(rt: RuntimeCore, row: AuditRow, err: unknown): VerbError {
  const label = `${row.action_type} #${row.audit_id}`;
  if (isVerbError(err)) {
    // A denial (who asks may not do this undo: human_required, role_denied…) is the caller's answer
    // as it stands, audited with its own reason; it is not a failure of the undo itself.
    if (reasonInfo(err.reason, rt.registry.reasons).denial) return err;
    return new VerbError('revert_failed', `The revert handler could not undo ${label}: ${err.message}`, {
      hint: 'Nothing was changed by this attempt. Fix the cause and retry, or undo the action by hand.',
      details: { audit_id: row.audit_id, verb: row.action_type, cause_reason: err.reason },
    });
  }
  rt.logger.error({ err, audit_id: row.audit_id, verb: row.action_type }, 'revert handler failed');
  return new VerbError(
    'revert_failed',
    `The revert handler of ${row.action_type} failed unexpectedly while undoing ${label}; it has been logged.`,
    {
      hint: 'Nothing was changed by this attempt. Undo the action by hand or report the audit_id to the operator.',
      details: { audit_id: row.audit_id, verb: row.action_type, cause_reason: 'internal_error' },
    },
  );
}

/**
 * The audit.revert handler, inside the revert's own store transaction: resolve and re-check the
 * target, link this row to it (parent_id), claim the reversal, run the verb's revert handler,
 * emit `action.reverted`. A handler that answers `reverted: false` (a transaction revert that
 * stopped part-way) releases the claim so a later revert can finish the job.
 *
 * Returns RevertOutput. Throws not_found, rollback_handle_invalid, not_revertible (also for an
 * action without a revert handler), already_reverted, changed_since, revert_failed (everything
 * this attempt did rolls back).
 */
export async function runRevert(ctx: SystemVerbContext, args: RevertArgs): Promise<RevertOutput> {
  const c = ledgerContext(ctx);
  const rt = ctx.runtime;
  const p = ctx.principal;
  const row = await resolveRevertTarget(c.tx, rt, p.company_id, args);
  // changed_since is decided below, after the reversal claim (see there).
  const a = await assessRevert(c.tx, rt, row, false);
  c.setAuditLink({
    parent_id: row.audit_id,
    ...(row.transaction_id !== null ? { transaction_id: row.transaction_id } : {}),
  });
  if (row.entity_type !== null && row.entity_id !== null) ctx.setEntity(row.entity_type, row.entity_id);
  const label = `${row.action_type} #${row.audit_id}`;
  try {
    await c.tx.run(
      'INSERT INTO reversals (audit_id, company_id, revert_audit_id, reverted_by, reverted_at) VALUES (?, ?, ?, ?, ?)',
      [row.audit_id, p.company_id, c.auditId, p.user_id, ctx.now.toISOString()],
    );
  } catch (err) {
    if (err instanceof StoreError && err.code === 'unique_violation') {
      throw refuse.alreadyReverted(label, row.audit_id);
    }
    throw err;
  }
  // After the claim: a concurrent revert of the same action has either lost the claim to this one
  // or committed before it (already_reverted above), so what this sees as a later change is a
  // write of someone else. A forced revert of a plain action names what it discards.
  const found = await firstLaterChange(c.tx, rt, row, compositeSteps(row, a.data));
  // An additive undo removes only what the action added: the later change is kept, and said so.
  const additive = found !== undefined && isAdditive(rt, found.target.action_type);
  let discarded: { discarded_audit_id: number } | undefined;
  let kept: { kept_audit_id: number } | undefined;
  if (found !== undefined) {
    if (args.force !== true) throw changedSinceError(row, found, additive);
    if (row.transaction_id === null) {
      if (additive) kept = { kept_audit_id: found.later.audit_id };
      else discarded = { discarded_audit_id: found.later.audit_id };
    }
  }
  let out: { revert_action: string; [k: string]: unknown };
  try {
    out = await a.verb.definition.revert!.handler(revertContext(c, a.verb), originalAction(row, a.data));
  } catch (err) {
    throw revertFailed(rt, row, err);
  }
  const {
    revert_action,
    reverted: handlerReverted,
    reason: handlerReason,
    message: handlerMessage,
    ...extra
  } = out;
  if (handlerReverted === false) {
    await c.tx.run('DELETE FROM reversals WHERE audit_id = ? AND company_id = ? AND revert_audit_id = ?', [
      row.audit_id,
      p.company_id,
      c.auditId,
    ]);
    return {
      ...extra,
      reverted: false,
      audit_id: row.audit_id,
      original_action: row.action_type,
      revert_action,
      revert_audit_id: c.auditId,
      reason: typeof handlerReason === 'string' ? handlerReason : 'revert_incomplete',
      message: typeof handlerMessage === 'string' ? handlerMessage : `${label} was only partly undone.`,
    };
  }
  ctx.emit({
    type: 'action.reverted',
    entity_type: row.entity_type ?? 'audit',
    entity_id: row.entity_id ?? row.audit_id,
    payload: { audit_id: row.audit_id, verb: row.action_type, revert_audit_id: c.auditId, revert_action },
  });
  const message =
    typeof handlerMessage === 'string' ? handlerMessage : `Reverted ${label}: ${revert_action}.`;
  return {
    ...extra,
    reverted: true,
    audit_id: row.audit_id,
    original_action: row.action_type,
    revert_action,
    revert_audit_id: c.auditId,
    ...(discarded !== undefined ? { forced: true, ...discarded } : {}),
    ...(kept !== undefined ? { forced: true, ...kept } : {}),
    message:
      discarded !== undefined
        ? `${message} Forced: the later change of audit row ${discarded.discarded_audit_id} was discarded.`
        : kept !== undefined
          ? `${message} Forced: the later change of audit row ${kept.kept_audit_id} stays; this undo removed only what ${label} added.`
          : message,
  };
}
