/**
 * Transactions: the checks of a step — when it is appended (input, consent gate, order rules) and
 * again at commit (floors and blocklist) — and the audit entry of a step. Spec: spec/transactions.md.
 */
import type { Principal } from '../../../spec/types.ts';
import { VerbError } from '../../errors.ts';
import type { CompiledVerb, SystemVerbContext } from '../../verb.ts';
import { ROLE_RANK, TIER_RANK } from '../../verb.ts';
import { surfaceDenied, schemaIssue } from '../../verb-checks.ts';
import { auditEntry, type AuditEntry, type AuditStatus } from '../write/audit.ts';
import {
  MAX_TRANSACTION_STEPS,
  refused,
  type StoredStep,
  type TransactionRecord,
} from './transaction-record.ts';

/**
 * Check a step before it is appended (and again inside the append's transaction): the verb exists,
 * is not blocked, is a plain write of this surface, comes after no irreversible step, and its
 * args pass its input_schema (paths under /args). Returns the compiled verb.
 * Reasons: unknown_verb, blocked_verb, surface_denied, transaction_step_refused,
 * identity_override, invalid_input.
 */
export async function checkStep(
  ctx: SystemVerbContext,
  t: TransactionRecord,
  verbName: string,
  args: unknown,
): Promise<CompiledVerb> {
  const rt = ctx.runtime;
  if (await rt.isBlocked(verbName, ctx.principal.company_id)) {
    throw new VerbError(
      'blocked_verb',
      `The verb "${verbName}" is blocked and is never executed, in a transaction or not.`,
      { path: '/verb', hint: 'Use a safe alternative listed by verbs.list.' },
    );
  }
  const verb = rt.registry.get(verbName);
  if (verb === undefined) {
    const closest = rt.registry.closest(verbName);
    throw new VerbError('unknown_verb', `No verb named "${verbName}" is registered.`, {
      path: '/verb',
      hint:
        closest.length > 0
          ? `Did you mean ${closest.join(', ')}?`
          : 'List the available verbs with verbs.list.',
      details: { closest },
    });
  }
  if (verb.consentClass === 'BLOCKED')
    throw new VerbError(
      'blocked_verb',
      `The verb "${verb.name}" is declared BLOCKED and is never executed.`,
      { path: '/verb' },
    );
  const denied = surfaceDenied(verb, ctx.surface, ctx.webmcpSurface, {
    context: ', so it cannot be a step of a transaction made there',
    path: '/verb',
  });
  if (denied !== undefined) throw denied;
  if (!verb.isWrite) {
    throw refused(
      `${verb.name} only reads; a transaction holds writes.`,
      `Call ${verb.name} directly, before or after the transaction.`,
    );
  }
  if (verb.delegated || verb.shape === 'transaction' || verb.shape === 'macro') {
    throw refused(
      `${verb.name} cannot be a step: transactions do not nest, and verbs that decide their consent from another action (revert, macros) run on their own.`,
      `Call ${verb.name} outside the transaction.`,
    );
  }
  if ((verb.definition.secret_result?.length ?? 0) > 0) {
    throw refused(
      `${verb.name} answers a secret shown once (${verb.definition.secret_result!.join(', ')}); a step's answer is never shown, so the secret would be lost.`,
      `Call ${verb.name} on its own, outside the transaction.`,
    );
  }
  if (t.steps.length >= MAX_TRANSACTION_STEPS) {
    throw refused(
      `A transaction holds at most ${MAX_TRANSACTION_STEPS} steps.`,
      'Commit this transaction and start another for the rest.',
    );
  }
  const lastIrreversible = t.steps.findIndex((s) => !s.revertible);
  if (lastIrreversible >= 0) {
    const s = t.steps[lastIrreversible]!;
    throw refused(
      `Step ${lastIrreversible + 1} (${s.verb}) cannot be reverted, so it must be the last step; nothing may follow it.`,
      'Abort and append the steps again with the irreversible one last, or commit now and run the rest separately.',
      { irreversible_step: lastIrreversible, verb: s.verb },
    );
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    throw new VerbError('invalid_input', '/args must be a JSON object of the step verb’s arguments.', {
      path: '/args',
      hint: `See the input_schema of ${verb.name}.`,
    });
  }
  for (const k of ['company_id', 'user_id'] as const) {
    if (k in (args as object)) {
      throw new VerbError(
        'identity_override',
        `${k} may not be passed as an argument: the runtime sets it from your credentials.`,
        { path: `/args/${k}`, hint: `Remove ${k} from the step's arguments.` },
      );
    }
  }
  if (!verb.validate(args)) {
    const { path, what, details } = schemaIssue(verb);
    throw new VerbError('invalid_input', `/args${path} ${what} (step verb ${verb.name}).`, {
      path: `/args${path}`,
      hint: `Fix the step's argument at /args${path} to match the input_schema of ${verb.name}.`,
      details,
    });
  }
  return verb;
}

export function stepEntry(
  p: Principal,
  now: Date,
  verb: CompiledVerb | undefined,
  name: string,
  fields: Partial<AuditEntry> & { status: AuditStatus; request_data: Record<string, unknown> },
): AuditEntry {
  const e = auditEntry({
    company_id: p.company_id,
    now,
    action: name,
    category: verb?.category ?? 'unknown',
    status: fields.status,
    principal: p,
  });
  e.shape = verb?.shape ?? null;
  e.consent_class = verb?.consentClass ?? null;
  return Object.assign(e, fields);
}

/** Floors and blocklist again at commit, before any step runs (denials, not step failures). */
export async function recheckStep(
  ctx: SystemVerbContext,
  step: StoredStep,
  index: number,
): Promise<CompiledVerb> {
  const rt = ctx.runtime;
  const p = ctx.principal;
  const details = { index, verb: step.verb };
  if (await rt.isBlocked(step.verb, p.company_id)) {
    throw new VerbError(
      'blocked_verb',
      `Step ${index + 1} (${step.verb}) is blocked for this tenant now; nothing ran.`,
      { details, hint: 'Abort this transaction.' },
    );
  }
  const verb = rt.registry.get(step.verb);
  if (verb === undefined || !verb.isWrite || verb.delegated) {
    throw new VerbError(
      'transaction_step_refused',
      `Step ${index + 1} (${step.verb}) is no longer a registered write verb; nothing ran.`,
      { details, hint: 'Abort this transaction and start again.' },
    );
  }
  if (TIER_RANK[p.tier] < TIER_RANK[verb.tierFloor]) {
    throw new VerbError(
      'tier_denied',
      `Step ${index + 1} (${verb.name}) needs the ${verb.tierFloor} tier; this tenant is on ${p.tier}. Nothing ran.`,
      { details },
    );
  }
  if (ROLE_RANK[p.role] < ROLE_RANK[verb.roleFloor]) {
    throw new VerbError(
      'role_denied',
      `Step ${index + 1} (${verb.name}) needs the ${verb.roleFloor} role or higher; this key has ${p.role}. Nothing ran.`,
      {
        details,
        hint: `Commit with a key of the ${verb.roleFloor} role or higher.`,
      },
    );
  }
  return verb;
}
