/**
 * THE pipeline. Every transport turns its request into one `dispatch(caller, verb, args,
 * options)` call and the envelope back into its own reply. This file is the runner: it composes
 * the steps of `steps/` (one module each, in the order of STEPS below; ARCHITECTURE.md draws the
 * same list and a test keeps them in sync) over one call context (`steps/call.ts`), and holds the
 * one error exit, `fail`.
 *
 * A step either enriches the call, answers it (returns the envelope: the remaining steps are
 * skipped, but `always` steps — observe — still run), or throws. Any VerbError becomes
 * `{ ok: false, error }`; any other throw becomes internal_error (or store_unavailable) with the
 * cause logged only. Every outcome leaves an audit row. Spec: spec/envelope.md, spec/consent.md,
 * spec/receipts.md, spec/idempotency.md, spec/audit.md.
 */
import { performance } from 'node:perf_hooks';
import type { Envelope, EnvelopeError, Principal } from '../spec/types.ts';
import { StoreError } from '../store/store.ts';
import { reasonInfo, type ReasonTable } from '../spec/reasons.ts';
import { HOW_TO_PASS_A_KEY, WHERE_KEYS_COME_FROM, isVerbError } from './errors.ts';
import { refuse } from './refusals.ts';
import type { Caller, DispatchOptions, RuntimeCore } from './core.ts';
import { appendAudit, type AuditStatus } from './ledger/write/audit.ts';
import { noteRefusal } from './ledger/write/refusal-burst.ts';
import {
  MAX_NAME_IN_AUDIT,
  entryFor,
  newCall,
  settle,
  type Call,
  type Step,
  type WithPrincipal,
} from './steps/call.ts';
import { resolvePrincipal } from './steps/resolve-principal.ts';
import { blocklist } from './steps/blocklist.ts';
import { resolveVerb } from './steps/resolve-verb.ts';
import { auth } from './steps/auth.ts';
import { surface } from './steps/surface.ts';
import { input } from './steps/input.ts';
import { floors } from './steps/floors.ts';
import { scope } from './steps/scope.ts';
import { read } from './steps/read.ts';
import { idempotency, releaseKey } from './steps/idempotency.ts';
import { consent } from './steps/consent.ts';
import { execute } from './steps/execute.ts';
import { observe } from './steps/observe.ts';

/** The pipeline, in order. Built once; each step's `run` is typed on the view its predecessors establish. */
const STEPS: readonly Step[] = [
  resolvePrincipal,
  blocklist,
  resolveVerb,
  auth,
  surface,
  input,
  floors,
  scope,
  read,
  idempotency,
  consent,
  execute,
  observe,
];

/** Names of the steps, in order: derived from STEPS (exported for the docs test and src/index.ts). */
export const PIPELINE_STEPS: readonly string[] = Object.freeze(STEPS.map((s) => s.name));
/** The steps until the answer, and those that run after every answer (observe). */
const UNTIL_ANSWER = STEPS.filter((s) => s.always !== true);
const AFTER_ANSWER = STEPS.filter((s) => s.always === true);

/**
 * Dispatch one verb call. Returns an envelope for every domain outcome; throws only for
 * programmer errors (never for bad input, denials or handler failures).
 */
export async function dispatch(
  rt: RuntimeCore,
  caller: Caller,
  verbName: unknown,
  args: unknown,
  options: DispatchOptions = {},
): Promise<Envelope> {
  const c = newCall(rt, caller, verbName, args, options);
  let env: Envelope | undefined;
  try {
    for (let i = 0; i < UNTIL_ANSWER.length && env === undefined; i++) {
      const out = UNTIL_ANSWER[i]!.run(c);
      env = out instanceof Promise ? await out : out;
    }
    if (env === undefined) throw new Error('the pipeline ended without an answer');
  } catch (err) {
    env = await fail(c, err);
  }
  releaseKey(c);
  for (let i = 0; i < AFTER_ANSWER.length; i++) {
    const out = AFTER_ANSWER[i]!.run(c);
    if (out instanceof Promise) await out;
  }
  return c.principal?.sandbox === true ? sandboxAnswer(env, c.principal, c.rt.registry.reasons) : env;
}

/**
 * Mark an envelope answered under the keyless (sandbox) principal: `tenant: { id, sandbox: true }`
 * on every outcome, and on a tenant-scoped not-found (`not_found`, `approval_not_found`, … every
 * reason of kind not_found but unknown_verb) a hint saying that the sandbox, not the caller's business,
 * was read and how to pass a key. Pure. Spec: spec/envelope.md §tenant.
 */
export function sandboxAnswer(env: Envelope, sandbox: Principal, reasons?: ReasonTable): Envelope {
  const out: Envelope = { ...env, tenant: { id: sandbox.company_id, sandbox: true } };
  const reason = env.error?.reason;
  if (reason !== undefined && reason !== 'unknown_verb' && reasonInfo(reason, reasons).kind === 'not_found') {
    const read =
      `This call carried no API key, so it read the sandbox tenant (company ${sandbox.company_id}), not your business: ids of your data are not found there. ` +
      `${HOW_TO_PASS_A_KEY} ${WHERE_KEYS_COME_FROM}`;
    out.error = { ...env.error!, hint: env.error!.hint ? `${env.error!.hint} ${read}` : read };
  }
  return out;
}

function hasPrincipal(c: Call): c is WithPrincipal {
  return c.principal !== undefined;
}

/** The one error exit: turn any failure into an envelope, audit it, settle the outcome. */
async function fail(c: Call, err: unknown): Promise<Envelope> {
  const rt = c.rt;
  releaseKey(c);
  let error: EnvelopeError;
  if (isVerbError(err)) {
    error = err.toEnvelopeError();
  } else if (err instanceof StoreError && err.code === 'invalid_value') {
    // The caller's value, not the database: e.g. an id beyond PostgreSQL's bigint (spec/store.md §errors).
    error = {
      reason: 'invalid_input',
      message:
        'An argument holds a value the store cannot hold or compare (a number out of range, a malformed value); nothing was written.',
      hint: 'Check the values against the verb’s input_schema: ids are positive integers below 2^53.',
      path: '',
    };
    rt.logger.info({ err, verb: c.name }, 'store refused a value of the arguments');
  } else if (err instanceof StoreError && err.code === 'timeout') {
    // The write body ran past its time budget inside its transaction: rolled back (spec/store.md §time-limits).
    error = {
      reason: 'store_unavailable',
      message: `The write ran longer than its time budget inside its transaction and was rolled back; nothing was written (${err.message}).`,
      hint: 'Retry with the same Idempotency-Key. If it persists, the verb waits inside its transaction: external calls belong in the outbox (docs/authoring.md §8), never inside the write.',
      details: { retry_after_seconds: 1 },
    };
    rt.logger.error({ err, verb: c.name }, 'write ran past its time budget');
  } else if (err instanceof StoreError && err.code !== 'unique_violation' && err.code !== 'append_only') {
    error = refuse.storeUnavailable().toEnvelopeError();
    rt.logger.error({ err, verb: c.name }, 'store error during dispatch');
  } else {
    error = {
      reason: 'internal_error',
      message: 'An internal error occurred; nothing was written. It has been logged.',
      hint: 'Retry later or report the audit_id to the operator.',
    };
    rt.logger.error({ err, verb: c.name }, 'internal error during dispatch');
  }
  const info = reasonInfo(error.reason, c.rt.registry.reasons);
  const status: AuditStatus =
    info.denial || info.kind === 'auth' || info.kind === 'denied'
      ? 'denied'
      : error.reason === 'approval_rejected'
        ? 'rejected'
        : 'failed';
  const latency = performance.now() - c.t0;
  let auditId: number | undefined;
  if (c.principal === undefined) {
    try {
      c.principal = await rt.sandboxPrincipal();
    } catch {
      /* no sandbox tenant: the failure is logged only */
    }
  }
  if (hasPrincipal(c) && error.reason !== 'store_unavailable') {
    const p = c.principal;
    const entry = entryFor(c, status, error.reason, latency);
    const failureAudit = isVerbError(err) ? err.failureAudit : undefined;
    if (failureAudit?.transaction_id !== undefined) entry.transaction_id = failureAudit.transaction_id;
    try {
      if (c.verb?.isWrite || status === 'denied') {
        await rt.auditBuffer.flushTenant(p.company_id);
        const row = await rt.store.write(async (tx) => {
          const row = await appendAudit(tx, entry);
          if (failureAudit?.record !== undefined) await failureAudit.record(tx, row);
          // An agent's credential collecting refusals is probing: the burst alert (refusal-burst.ts).
          if (status === 'denied' && p.actor === 'agent' && p.key_id !== undefined)
            await noteRefusal(
              tx,
              {
                companyId: p.company_id,
                keyId: p.key_id,
                agentType: p.agent_type,
                userId: p.user_id,
                verb: entry.action_type,
                reason: error.reason,
                now: c.now,
                auditId: row.audit_id,
              },
              () => rt.kickOutbox(),
            );
          tx.afterCommit(() => rt.afterWrite(row));
          return row;
        });
        auditId = row.audit_id;
      } else {
        rt.auditBuffer.push(entry);
      }
    } catch (auditErr) {
      rt.logger.error({ err: auditErr, verb: c.name }, 'could not write the audit row of a failed dispatch');
      if (error.reason !== 'internal_error') {
        error = refuse.storeUnavailable('Retry shortly.').toEnvelopeError();
      }
    }
  }
  settle(c, false, error.reason, latency, auditId ?? null);
  c.replay = false;
  const env: Envelope = { ok: false, verb: c.name.slice(0, MAX_NAME_IN_AUDIT), error };
  if (auditId !== undefined) env.audit_id = auditId;
  if (c.idempotencyKey !== undefined && c.callerKey) env.idempotency_key = c.idempotencyKey;
  return env;
}
