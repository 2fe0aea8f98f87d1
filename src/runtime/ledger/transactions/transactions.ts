/**
 * Transactions: a group of writes that commit together or not at all.
 *
 * - start → an opaque transaction_id, open until expires_at (default 15 minutes).
 * - append `{ transaction_id, verb, args }` validates the step's input and runs the step verb's
 *   consent gate on the append call itself (typed phrase, nonce, approval); refuses read verbs,
 *   nested transaction (or other delegated) verbs, and any step after one that cannot be reverted
 *   (the irreversible step must be the last one).
 * - commit runs every step in ONE store transaction via executeInTx, each with its own child audit
 *   row (parent_id = the commit's row, all carrying transaction_id), daily caps counted per step,
 *   role and tier floors and the blocklist re-checked. A failing step rolls everything back; the
 *   attempt then leaves only audit rows (the commit's failure row and one row per step that ran:
 *   rolled_back, and failed for the one that failed).
 * - The commit's rollback_handle (`tx:<id>:rollback_all`, sealed) reverts the steps in reverse
 *   order; if one step cannot be reverted the revert stops there and reports partially_reverted
 *   with what was reverted and what remains (each attempt audited).
 * - Outbox effects of the steps are written in the commit's transaction and delivered after it.
 *
 * Layout: the stored record is in transaction-record.ts, the step checks (append and commit) in
 * transaction-checks.ts; this module runs start, append, commit, abort, status and revert.
 *
 * Spec: spec/transactions.md.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Principal, VerbClass } from '../../../spec/types.ts';
import type { StoreTx } from '../../../store/store.ts';
import { VerbError, isVerbError } from '../../errors.ts';
import type { CompiledVerb, DelegatedConsent, OriginalAction, SystemVerbContext } from '../../verb.ts';
import type { RuntimeCore } from '../../core.ts';
import { executeInTx } from '../write/execute.ts';
import { appendAudit, getAuditRow, redact, type AuditRow } from '../write/audit.ts';
import { ledgerContext, type LedgerContext } from '../../verb-context.ts';
import {
  TRANSACTION_TTL_SECONDS,
  REVERT_VERB,
  type StoredStatus,
  type TransactionRecord,
  type TransactionOutput,
  toRecord,
  loadTransaction,
  visibleStatus,
  assertOpen,
  stepsOut,
} from './transaction-record.ts';
import { checkStep, stepEntry, recheckStep } from './transaction-checks.ts';
import { raiseGate, raisedPhrase } from '../../consent/gate-rules.ts';
import { agentTextValues } from '../../consent/agent-text.ts';
import { parseProvenance } from '../../consent/provenance.ts';

/** transaction.start: open a transaction for the caller. */
export async function startTransaction(
  ctx: SystemVerbContext,
  args: { ttl_seconds?: number },
): Promise<TransactionOutput> {
  const c = ledgerContext(ctx);
  const p = ctx.principal;
  const id = `txn_${randomBytes(12).toString('base64url')}`;
  const nowIso = ctx.now.toISOString();
  const expires = new Date(
    ctx.now.getTime() + (args.ttl_seconds ?? TRANSACTION_TTL_SECONDS) * 1000,
  ).toISOString();
  await c.tx.run(
    `INSERT INTO transactions (transaction_id, company_id, user_id, status, steps, audit_id, created_at, expires_at, updated_at) VALUES (?, ?, ?, 'open', '[]', NULL, ?, ?, ?)`,
    [id, p.company_id, p.user_id, nowIso, expires, nowIso],
  );
  c.setAuditLink({ transaction_id: id });
  return { transaction_id: id, status: 'started', steps: [], expires_at: expires };
}

/**
 * transaction.append's delegated consent: the step verb's class, floors and typed phrase, so the
 * append call itself is what the human confirms. Caps are counted at commit, per step.
 */
export async function appendConsent(
  ctx: SystemVerbContext,
  args: { transaction_id: string; verb: string; args?: Record<string, unknown> },
): Promise<DelegatedConsent> {
  const t = await loadTransaction(ctx.db, ctx.principal, args.transaction_id);
  assertOpen(t, ctx.now);
  const stepArgs = args.args ?? {};
  const verb = await checkStep(ctx, t, args.verb, stepArgs);
  // The owner's conditional gates apply to a step as to the verb called directly.
  const settings = (await ctx.runtime.tenants.get(ctx.principal.company_id))?.settings;
  const gate = raiseGate(settings?.gate_rules, verb.name, verb.consentClass, verb.roleFloor, stepArgs);
  const typed = gate.consentClass === 'WRITE_FINANCIAL' || gate.consentClass === 'IRREVERSIBLE';
  const agentText = agentTextValues(verb.definition.agent_text, stepArgs);
  const typedArgs = { ...stepArgs };
  for (const f of verb.definition.agent_text ?? []) delete typedArgs[f];
  const what =
    verb.definition.summary?.(stepArgs) ??
    `Run ${verb.name} with ${JSON.stringify(redact(typedArgs, verb.secretPaths))}.`;
  return {
    consentClass: gate.consentClass,
    roleFloor: gate.roleFloor,
    tierFloor: verb.tierFloor,
    ...(typed
      ? { phrase: verb.definition.phrase?.(stepArgs) ?? raisedPhrase(verb.name, gate.raisedBy) }
      : {}),
    summary: `Step ${t.steps.length + 1} of transaction ${t.transaction_id}: ${what} It runs only when the transaction commits, together with the other steps or not at all.`,
    capClass: 'READ',
    targets: [verb.name],
    ...(agentText !== undefined ? { agentText } : {}),
    ...(gate.raisedBy.length > 0 ? { raisedBy: gate.raisedBy } : {}),
  };
}

/** transaction.append: record a consented step. */
export async function appendStep(
  ctx: SystemVerbContext,
  args: { transaction_id: string; verb: string; args?: Record<string, unknown> },
): Promise<TransactionOutput> {
  const c = ledgerContext(ctx);
  const stepArgs = args.args ?? {};
  // Optimistic: the update applies only if the steps are still those read, so two appends racing
  // on several nodes cannot lose one; the loser re-reads and appends after the winner.
  for (let attempt = 0; attempt < 5; attempt++) {
    const t = await loadTransaction(c.tx, ctx.principal, args.transaction_id);
    assertOpen(t, ctx.now);
    const verb = await checkStep(ctx, t, args.verb, stepArgs);
    const before = JSON.stringify(t.steps);
    t.steps.push({
      verb: verb.name,
      args: stepArgs,
      consent_class: verb.consentClass,
      append_audit_id: c.auditId,
      revertible: verb.revertible,
      status: 'pending',
    });
    const r = await c.tx.run(
      `UPDATE transactions SET steps = ?, updated_at = ? WHERE transaction_id = ? AND company_id = ? AND status = 'open' AND steps = ?`,
      [JSON.stringify(t.steps), ctx.now.toISOString(), t.transaction_id, t.company_id, before],
    );
    if (r.changes === 0) continue;
    c.setAuditLink({ transaction_id: t.transaction_id });
    return {
      transaction_id: t.transaction_id,
      status: 'appended',
      steps: stepsOut(t),
      expires_at: t.expires_at,
      step_index: t.steps.length - 1,
    };
  }
  throw new VerbError(
    'transaction_not_open',
    `Transaction ${args.transaction_id} kept changing while this step was appended.`,
    { hint: 'Retry the append.' },
  );
}
/**
 * transaction.commit: run every step in this (the commit's) store transaction. Returns the receipt
 * chain; the runtime adds the parent's audit_id and the sealed `tx:<id>:rollback_all` handle.
 * Reasons: transaction_not_found, transaction_expired, transaction_not_open, invalid_request (no
 * steps), blocked_verb / tier_denied / role_denied / transaction_step_refused (re-checks, nothing
 * ran), transaction_step_failed (details: index (0-based), verb, reason; nothing was applied).
 */
export async function commitTransaction(
  ctx: SystemVerbContext,
  args: { transaction_id: string },
): Promise<TransactionOutput> {
  const c = ledgerContext(ctx);
  const rt = ctx.runtime;
  const p = ctx.principal;
  const tx = c.tx;
  const t = await loadTransaction(tx, p, args.transaction_id);
  assertOpen(t, ctx.now);
  if (t.steps.length === 0) {
    throw new VerbError('invalid_request', `Transaction ${t.transaction_id} has no steps to commit.`, {
      hint: 'Append steps with transaction.append, or abort it.',
    });
  }
  c.setAuditLink({ transaction_id: t.transaction_id });
  const claimed = await tx.run(
    `UPDATE transactions SET status = 'committed', audit_id = ?, updated_at = ? WHERE transaction_id = ? AND company_id = ? AND status = 'open'`,
    [c.auditId, ctx.now.toISOString(), t.transaction_id, t.company_id],
  );
  if (claimed.changes === 0)
    throw new VerbError(
      'transaction_not_open',
      `Transaction ${t.transaction_id} was committed or aborted meanwhile.`,
      { hint: 'Check it with transaction.status.' },
    );
  const verbs: CompiledVerb[] = [];
  for (let i = 0; i < t.steps.length; i++) verbs.push(await recheckStep(ctx, t.steps[i]!, i));
  // Consent given at append expires like any other consent: a nonce's TTL from the confirmed
  // append, not the transaction's (up to 3600 s). spec/transactions.md §consent, consent.md §nonce
  const appends: Array<AuditRow | undefined> = [];
  for (let i = 0; i < t.steps.length; i++) {
    const step = t.steps[i]!;
    const append = await getAuditRow(tx, p.company_id, step.append_audit_id);
    appends.push(append);
    if (step.consent_class === null || step.consent_class === 'READ') continue;
    const expiresMs =
      new Date(append?.created_at ?? t.created_at).getTime() + rt.options.nonceTtlSeconds * 1000;
    if (ctx.now.getTime() >= expiresMs) {
      const at = new Date(expiresMs).toISOString();
      throw new VerbError(
        'nonce_expired',
        `The consent given for step ${i + 1} (${step.verb}) when it was appended expired at ${at}; nothing ran.`,
        {
          hint: `Consent inside a transaction lasts as long as a nonce (${rt.options.nonceTtlSeconds} s from the confirmed append). Abort this transaction, start a new one and append the steps again, then commit promptly.`,
          details: { index: i, verb: step.verb, consent_expired_at: at },
        },
      );
    }
  }
  const caller = {
    surface: ctx.surface ?? ('internal' as const),
    signal: ctx.signal,
    ...(ctx.webmcpSurface !== undefined ? { webmcpSurface: ctx.webmcpSurface } : {}),
  };
  for (let i = 0; i < t.steps.length; i++) {
    const step = t.steps[i]!;
    const verb = verbs[i]!;
    const append = appends[i];
    const provenance = parseProvenance(append?.consent);
    const gateClass = (provenance?.class ?? step.consent_class) as VerbClass | null;
    const typed = gateClass === 'WRITE_FINANCIAL' || gateClass === 'IRREVERSIBLE';
    try {
      if (!verb.validate(step.args))
        throw new VerbError(
          'invalid_input',
          `The arguments of ${verb.name} no longer match its input_schema.`,
        );
      const exec = await executeInTx(rt, tx, {
        verb,
        principal: p,
        args: step.args,
        now: ctx.now,
        caller,
        consentClass: step.consent_class,
        capClass: step.consent_class,
        // recheckStep checked this principal against the step verb's floors, before any step ran.
        floorChecked: true,
        consent: {
          requiresApproval: typed,
          ...(append?.approved_by != null ? { approvedBy: append.approved_by } : {}),
          ...(append?.approved_at != null ? { approvedAt: append.approved_at } : {}),
        },
        // The step's consent was given at its append: its provenance is the append's.
        ...(provenance !== undefined ? { provenance } : {}),
        idempotencyKey: null,
        t0: performance.now(),
        transactionId: t.transaction_id,
        parentId: c.auditId,
      });
      step.status = 'completed';
      step.audit_id = exec.row.audit_id;
    } catch (err) {
      throw stepFailed(rt, p, ctx.now, t, verbs, i, err);
    }
  }
  const stepIds = t.steps.map((s) => s.audit_id!);
  if (t.steps.some((s) => s.revertible))
    ctx.setRollback(`tx:${t.transaction_id}:rollback_all`, {
      transaction_id: t.transaction_id,
      steps: stepIds,
    });
  await tx.run('UPDATE transactions SET steps = ? WHERE transaction_id = ? AND company_id = ?', [
    JSON.stringify(t.steps),
    t.transaction_id,
    t.company_id,
  ]);
  return { transaction_id: t.transaction_id, status: 'committed', steps: stepsOut(t) };
}

/** The error of a failed step, carrying the audit rows to write after the rollback. */
function stepFailed(
  rt: RuntimeCore,
  p: Principal,
  now: Date,
  t: TransactionRecord,
  verbs: CompiledVerb[],
  index: number,
  err: unknown,
): VerbError {
  const failed = t.steps[index]!;
  let reason: string;
  let message: string;
  if (isVerbError(err)) {
    reason = err.reason;
    message = err.message;
  } else {
    rt.logger.error(
      { err, verb: failed.verb, transaction_id: t.transaction_id },
      'transaction step failed unexpectedly',
    );
    reason = 'internal_error';
    message = 'an internal error occurred (logged)';
  }
  const e = new VerbError(
    'transaction_step_failed',
    `Step ${index + 1} (${failed.verb}) failed: ${message} Nothing was applied: every step of transaction ${t.transaction_id} was rolled back.`,
    {
      hint: 'Fix the cause, then start a new transaction (this one is now failed).',
      details: { transaction_id: t.transaction_id, index, verb: failed.verb, reason, message },
    },
  );
  e.failureAudit = {
    transaction_id: t.transaction_id,
    async record(tx: StoreTx, row: AuditRow) {
      for (let j = 0; j <= index; j++) {
        const s = t.steps[j]!;
        const v = verbs[j];
        await appendAudit(
          tx,
          stepEntry(p, now, v, s.verb, {
            status: j < index ? 'rolled_back' : 'failed',
            reason: j < index ? 'transaction_step_failed' : reason,
            consent_class: s.consent_class,
            request_data: v !== undefined ? redact(s.args, v.secretPaths) : {},
            transaction_id: t.transaction_id,
            parent_id: row.audit_id,
          }),
        );
      }
      const steps = t.steps.map((s, j) => ({
        ...s,
        status: j < index ? 'rolled_back' : j === index ? 'failed' : 'pending',
        audit_id: undefined,
      }));
      await tx.run(
        `UPDATE transactions SET status = 'failed', steps = ?, updated_at = ? WHERE transaction_id = ? AND company_id = ? AND status = 'open'`,
        [JSON.stringify(steps), now.toISOString(), t.transaction_id, t.company_id],
      );
    },
  };
  return e;
}

/** transaction.abort: discard an open (or expired) transaction; nothing runs. */
export async function abortTransaction(
  ctx: SystemVerbContext,
  args: { transaction_id: string },
): Promise<TransactionOutput> {
  const c = ledgerContext(ctx);
  const t = await loadTransaction(c.tx, ctx.principal, args.transaction_id);
  if (t.status !== 'open') {
    throw new VerbError(
      'transaction_not_open',
      `Transaction ${t.transaction_id} is ${t.status}; only an open transaction can be aborted.`,
      {
        hint:
          t.status === 'committed'
            ? 'To undo a committed transaction, call audit.revert with its audit_id or rollback_handle.'
            : 'Nothing to do.',
        details: { status: t.status },
      },
    );
  }
  await c.tx.run(
    `UPDATE transactions SET status = 'aborted', updated_at = ? WHERE transaction_id = ? AND company_id = ? AND status = 'open'`,
    [ctx.now.toISOString(), t.transaction_id, t.company_id],
  );
  c.setAuditLink({ transaction_id: t.transaction_id });
  t.steps = t.steps.map((s) => ({ ...s, status: 'rolled_back' }));
  return { transaction_id: t.transaction_id, status: 'aborted', steps: stepsOut(t) };
}

/** transaction.status: the caller's transaction as it stands (read). */
export async function transactionStatus(
  ctx: SystemVerbContext,
  args: { transaction_id: string },
): Promise<TransactionOutput> {
  const t = await loadTransaction(ctx.db, ctx.principal, args.transaction_id);
  const status = visibleStatus(t, ctx.now);
  const out: TransactionOutput = { transaction_id: t.transaction_id, status, steps: stepsOut(t) };
  if (t.status === 'open') out.expires_at = t.expires_at;
  if (t.audit_id !== null) out.audit_id = t.audit_id;
  if (status === 'partially_reverted') out.partially_reverted = true;
  return out;
}

/**
 * Run `fn` inside a SAVEPOINT of `tx`: on a throw, everything it wrote is undone (audit rows
 * included: the tenant head view is restored) and its after-commit callbacks are dropped.
 */
async function withSavepoint<T>(tx: StoreTx, companyId: number, fn: (tx: StoreTx) => Promise<T>): Promise<T> {
  const head = await tx.lockTenantHead(companyId);
  const saved = { audit_seq: head.audit_seq, audit_hash: head.audit_hash, event_seq: head.event_seq };
  const callbacks: Array<() => void> = [];
  const inner: StoreTx = {
    get: (sql, params) => tx.get(sql, params),
    all: (sql, params) => tx.all(sql, params),
    run: (sql, params) => tx.run(sql, params),
    lockTenantHead: (id) => tx.lockTenantHead(id),
    nextAuditId: () => tx.nextAuditId(),
    afterCommit: (cb) => void callbacks.push(cb),
  };
  await tx.run('SAVEPOINT ledger_step');
  try {
    const out = await fn(inner);
    await tx.run('RELEASE SAVEPOINT ledger_step');
    for (const cb of callbacks) tx.afterCommit(cb);
    return out;
  } catch (err) {
    await tx.run('ROLLBACK TO SAVEPOINT ledger_step');
    await tx.run('RELEASE SAVEPOINT ledger_step');
    Object.assign(head, saved);
    throw err;
  }
}

/**
 * transaction.commit's revert handler: revert the steps in reverse order, each as its own
 * audit.revert row (parent_id = the step, transaction_id = the transaction) inside a savepoint.
 * Steps already reverted on their own are counted as reverted. At the first step that cannot be
 * reverted (no handler, or its handler failed) it stops: that attempt is undone and audited as a
 * failed audit.revert row, and the answer is `reverted: false, reason: "partially_reverted"` with
 * reverted_audit_ids and remaining_audit_ids.
 */
export async function revertTransactionSteps(
  ctx: SystemVerbContext,
  original: OriginalAction,
): Promise<{ revert_action: string; [k: string]: unknown }> {
  const c: LedgerContext = ledgerContext(ctx);
  const rt = ctx.runtime;
  const p = ctx.principal;
  const transactionId = String(original.rollback.transaction_id);
  const ids = (Array.isArray(original.rollback.steps) ? (original.rollback.steps as unknown[]) : [])
    .map(Number)
    .reverse();
  const revertVerb = rt.registry.get(REVERT_VERB);
  if (revertVerb === undefined) throw new Error(`${REVERT_VERB} must be registered to revert a transaction`);
  const reverted: number[] = [];
  let failure: { audit_id: number; verb: string; reason: string; message: string } | undefined;
  let remaining: number[] = [];
  for (const id of ids) {
    const done = await c.tx.get(
      'SELECT revert_audit_id FROM reversals WHERE audit_id = ? AND company_id = ?',
      [id, p.company_id],
    );
    if (done !== undefined) {
      reverted.push(id);
      continue;
    }
    const step = await getAuditRow(c.tx, p.company_id, id);
    try {
      await withSavepoint(c.tx, p.company_id, async (inner) => {
        const exec = await executeInTx(rt, inner, {
          verb: revertVerb,
          principal: p,
          // The parent's revert already refused (changed_since) or was forced for every step.
          args: { audit_id: id, force: true },
          now: ctx.now,
          caller: { surface: ctx.surface ?? 'internal', signal: ctx.signal },
          consentClass: (step?.consent_class as VerbClass | null) ?? null,
          capClass: null,
          consent: { requiresApproval: false },
          idempotencyKey: null,
          t0: performance.now(),
          transactionId,
        });
        if (exec.result.reverted !== true) {
          throw new VerbError(
            String(exec.result.reason ?? 'revert_failed'),
            String(exec.result.message ?? `Step #${id} was not reverted.`),
          );
        }
      });
      reverted.push(id);
    } catch (err) {
      const reason = isVerbError(err) ? err.reason : 'revert_failed';
      const message = isVerbError(err) ? err.message : 'the revert failed unexpectedly (logged)';
      if (!isVerbError(err))
        rt.logger.error(
          { err, audit_id: id, transaction_id: transactionId },
          'transaction step revert failed',
        );
      failure = { audit_id: id, verb: step?.action_type ?? 'unknown', reason, message };
      await appendAudit(
        c.tx,
        stepEntry(p, ctx.now, revertVerb, REVERT_VERB, {
          status: 'failed',
          reason,
          consent_class: step?.consent_class ?? null,
          request_data: { audit_id: id },
          transaction_id: transactionId,
          parent_id: id,
        }),
      );
      break;
    }
  }
  if (failure !== undefined) {
    // What remains: the steps from the failed one on that are not reverted (some may have been
    // reverted on their own earlier).
    const done = new Set(reverted);
    remaining = [];
    for (const id of ids.slice(ids.indexOf(failure.audit_id))) {
      const r = await c.tx.get(
        'SELECT revert_audit_id FROM reversals WHERE audit_id = ? AND company_id = ?',
        [id, p.company_id],
      );
      if (r === undefined) remaining.push(id);
      else if (!done.has(id)) reverted.push(id);
    }
  }
  const status: StoredStatus = failure === undefined ? 'reverted' : 'partially_reverted';
  const stored = await c.tx.get<Record<string, unknown>>(
    'SELECT * FROM transactions WHERE transaction_id = ? AND company_id = ?',
    [transactionId, p.company_id],
  );
  if (stored !== undefined) {
    const t = toRecord(stored);
    const done = new Set(reverted);
    t.steps = t.steps.map((s) =>
      s.audit_id !== undefined && done.has(s.audit_id) ? { ...s, status: 'reverted' } : s,
    );
    await c.tx.run(
      'UPDATE transactions SET status = ?, steps = ?, updated_at = ? WHERE transaction_id = ? AND company_id = ?',
      [status, JSON.stringify(t.steps), ctx.now.toISOString(), transactionId, p.company_id],
    );
  }
  const order = 'in reverse order';
  if (failure === undefined) {
    return {
      revert_action: `reverted the ${ids.length} steps of transaction ${transactionId} ${order}`,
      transaction_id: transactionId,
      reverted_audit_ids: reverted,
      remaining_audit_ids: [],
    };
  }
  return {
    reverted: false,
    reason: 'partially_reverted',
    partially_reverted: true,
    revert_action: `reverted ${reverted.length} of ${ids.length} steps of transaction ${transactionId} ${order}, then stopped`,
    message: `Transaction ${transactionId} is partially reverted: step #${failure.audit_id} (${failure.verb}) could not be reverted (${failure.reason}: ${failure.message}). Reverted: ${reverted.join(', ') || 'none'}; remaining: ${remaining.join(', ')}. Manual intervention is needed for the remaining steps, or revert them one by one.`,
    transaction_id: transactionId,
    reverted_audit_ids: reverted,
    remaining_audit_ids: remaining,
    failed_step: failure,
  };
}
