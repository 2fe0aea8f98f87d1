/**
 * The write flows of the receipts and consent sections, on declared test verbs only: the pending
 * answer, the confirmation, the state read that shows the effect, the committed test write shared
 * by several checks, and the revert round trip. A refusal that is about the run rather than the
 * server (the key's role is below the floor, the daily cap is used up) skips with the reason.
 * Spec: spec/consent.md §protocol, spec/receipts.md §revert, spec/conformance.md §declaration.
 */
import { randomBytes } from 'node:crypto';
import type { Dispatched, KitContext, KitEnvelope } from './context.ts';
import type { DeclaredTestVerb } from './declaration.ts';
import { Fail, Skip, canonicalJson } from './outcome.ts';
import type { Evidence } from './types.ts';

/** A fresh idempotency key of this run (printable ASCII, ≤ 255). */
export function newKey(ctx: KitContext, label: string): string {
  return `conformance-${ctx.runId}-${label}-${randomBytes(4).toString('hex')}`;
}

/** The reason of an envelope, or undefined. */
export function reasonOf(env: KitEnvelope | undefined): string | undefined {
  const r = env?.error?.reason;
  return typeof r === 'string' ? r : undefined;
}

/** Skip when a refusal is about the run (key, caps), not the server. */
export function skipIfRunLimited(ctx: KitContext, d: Dispatched, what: string): void {
  const reason = reasonOf(d.env);
  if (reason === 'daily_cap_exceeded')
    throw new Skip(
      `the tenant's daily cap for ${what} is used up today (daily_cap_exceeded); run again after it resets`,
      [ctx.ev(d.answer)],
    );
  if (reason === 'role_denied' || reason === 'tier_denied')
    throw new Skip(`the API key may not call ${what} (${reason}); pass a key with a higher role`, [
      ctx.ev(d.answer),
    ]);
  if (reason === 'auth_required' || reason === 'auth_invalid')
    throw new Skip(`the API key is not accepted for ${what} (${reason})`, [ctx.ev(d.answer)]);
  if (reason === 'blocked_verb')
    throw new Skip(`${what} is blocked for this tenant (blocked_verb)`, [ctx.ev(d.answer)]);
}

export interface Pending {
  d: Dispatched;
  nonce: string;
  gate: string;
  phrase?: string;
  approvalId?: string;
}

/** The first call of a gated write: expects 202 dispatch_pending with a nonce (else Fail/Skip). */
export async function preflight(
  ctx: KitContext,
  verb: string,
  args: Record<string, unknown>,
  options: { idempotencyKey?: string } = {},
): Promise<Pending> {
  const d = await ctx.dispatch(verb, { args }, options);
  skipIfRunLimited(ctx, d, verb);
  const c = d.env?.consent;
  if (d.answer.status !== 202 || reasonOf(d.env) !== 'dispatch_pending' || typeof c?.nonce !== 'string')
    throw new Fail(`${verb} without consent did not answer 202 dispatch_pending with a nonce`, [
      ctx.ev(d.answer),
    ]);
  return {
    d,
    nonce: c.nonce,
    gate: String(c.gate),
    ...(typeof c.typed_phrase === 'string' ? { phrase: c.typed_phrase } : {}),
    ...(typeof c.approval_id === 'string' ? { approvalId: c.approval_id } : {}),
  };
}

/** The confirming call: the same arguments, confirm: true, the nonce (and a phrase when given). */
export function confirm(
  ctx: KitContext,
  verb: string,
  args: Record<string, unknown>,
  nonce: string,
  options: { phrase?: string; idempotencyKey?: string } = {},
): Promise<Dispatched> {
  return ctx.dispatch(
    verb,
    { args, confirm: true, nonce, ...(options.phrase !== undefined ? { typed_phrase: options.phrase } : {}) },
    options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {},
  );
}

/** Read the value the declaration's state read points at (undefined when none is declared). */
export async function readState(
  ctx: KitContext,
  tv: DeclaredTestVerb,
): Promise<{ value: unknown; evidence: Evidence } | undefined> {
  if (tv.state === undefined) return undefined;
  const d = await ctx.dispatch(tv.state.verb, { args: tv.state.args });
  if (d.env?.ok !== true)
    throw new Fail(`the declared state read ${tv.state.verb} failed`, [ctx.ev(d.answer)]);
  let cur: unknown = d.env.result;
  for (const part of tv.state.pointer.split('/').slice(1)) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[key] : undefined;
  }
  return { value: cur, evidence: ctx.ev(d.answer, { [tv.state.pointer]: cur }) };
}

/** Same JSON value (key order aside). */
export function same(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

export interface CommittedWrite {
  tv: DeclaredTestVerb;
  args: Record<string, unknown>;
  key: string;
  pending: Pending;
  confirmed: Dispatched;
  before?: { value: unknown; evidence: Evidence };
  after?: { value: unknown; evidence: Evidence };
}

/**
 * The run's committed test write (once per run): the revertible confirmation-gated test verb with
 * args[0] under a fresh Idempotency-Key, pending then confirmed; the state read before and after.
 * Fails when the confirmation does not answer 200 ok.
 */
export function committedWrite(ctx: KitContext): Promise<CommittedWrite> {
  return ctx.once('committed-write', async () => {
    const tv = await ctx.testVerb('confirmation', { revertible: true }).catch(async (err) => {
      if (err instanceof Skip) return ctx.testVerb('confirmation');
      throw err;
    });
    const args = tv.args[0];
    const key = newKey(ctx, 'write');
    const before = await readState(ctx, tv);
    const pending = await preflight(ctx, tv.verb, args, { idempotencyKey: key });
    const confirmed = await confirm(ctx, tv.verb, args, pending.nonce, { idempotencyKey: key });
    skipIfRunLimited(ctx, confirmed, tv.verb);
    if (confirmed.answer.status !== 200 || confirmed.env?.ok !== true)
      throw new Fail(`the confirmed ${tv.verb} did not answer 200 ok`, [
        ctx.ev(pending.d.answer),
        ctx.ev(confirmed.answer),
      ]);
    const after = await readState(ctx, tv);
    return {
      tv,
      args,
      key,
      pending,
      confirmed,
      ...(before !== undefined ? { before } : {}),
      ...(after !== undefined ? { after } : {}),
    };
  });
}

/**
 * `audit.revert { audit_id }` through its gate (the undone action's: a confirmation for a
 * reversible write). Returns the last answer; `pending` is the gate's answer when there was one.
 */
export async function revertFlow(
  ctx: KitContext,
  auditId: number,
): Promise<{ first: Dispatched; final: Dispatched; pending?: Pending }> {
  const args = { audit_id: auditId };
  const first = await ctx.dispatch('audit.revert', { args });
  skipIfRunLimited(ctx, first, 'audit.revert');
  const c = first.env?.consent;
  if (reasonOf(first.env) !== 'dispatch_pending' || typeof c?.nonce !== 'string')
    return { first, final: first };
  const pending: Pending = {
    d: first,
    nonce: c.nonce,
    gate: String(c.gate),
    ...(typeof c.typed_phrase === 'string' ? { phrase: c.typed_phrase } : {}),
  };
  const final = await confirm(ctx, 'audit.revert', args, c.nonce, {
    ...(pending.gate === 'typed_phrase' && pending.phrase !== undefined ? { phrase: pending.phrase } : {}),
  });
  return { first, final, pending };
}

export interface RevertedWrite {
  write: CommittedWrite;
  auditId: number;
  revert: { first: Dispatched; final: Dispatched; pending?: Pending };
  restored?: { value: unknown; evidence: Evidence };
}

/** The revert of the run's committed test write (once per run), with the state read after it. */
export function revertedWrite(ctx: KitContext): Promise<RevertedWrite> {
  return ctx.once('reverted-write', async () => {
    const write = await committedWrite(ctx);
    const auditId = write.confirmed.env?.audit_id;
    if (!Number.isInteger(auditId))
      throw new Skip('the test write answered no audit_id to revert (see receipts.fields)');
    if (!write.tv.revertible) throw new Skip(`the declared ${write.tv.verb} is not revertible`);
    const revert = await revertFlow(ctx, auditId as number);
    const restored = await readState(ctx, write.tv);
    return { write, auditId: auditId as number, revert, ...(restored !== undefined ? { restored } : {}) };
  });
}
