/**
 * The one place a verb handler's context is built. A handler runs in four places, each with its
 * own builder here; what each member does there (spec/manifest.md §handlers):
 *
 * | member                                   | read `readContext`     | write `writeContext`          | preview `previewContext` | revert `revertContext`           |
 * |------------------------------------------|------------------------|-------------------------------|--------------------------|----------------------------------|
 * | principal, now, signal, verb, logger     | yes                    | yes                           | yes                      | yes (the revert's)               |
 * | db                                       | committed-data view    | the write's store transaction | committed-data view      | the revert's store transaction   |
 * | runtime, manifest, principalsChanged     | yes (invalidate now)   | yes (invalidate after commit) | yes                      | yes (after commit)               |
 * | emit                                     | throws                 | committed with the write      | ignored                  | committed with the revert        |
 * | outbox                                   | throws                 | delivered after commit        | ignored                  | delivered after commit           |
 * | setRollback                              | throws                 | seals the rollback handle     | ignored                  | throws (a revert is not revertible) |
 * | setEntity                                | names the audit row's entity | names the audit row's entity | ignored            | names the revert row's entity    |
 * | progress                                 | the caller's           | the caller's                  | ignored                  | the caller's                     |
 * | idempotencyKey                           | —                      | the write's                   | —                        | the revert's                     |
 * | surface, webmcpSurface                   | the caller's           | the caller's                  | —                        | surface only                     |
 * | consentReply                             | detached verbs only    | —                             | —                        | —                                |
 * | auditId, tx, setAuditLink (LedgerContext) | —                     | yes                           | —                        | auditId, tx; setAuditLink throws |
 *
 * Reads run in the read step (steps/read.ts, also detached verbs and delegated-consent lookups),
 * writes in the one write core (ledger/write/execute.ts), previews for pending answers
 * (steps/consent.ts, approvals), reverts in ledger/transactions/revert.ts. docs/authoring.md
 * carries the same table for pack authors.
 */
import type { Principal } from '../spec/types.ts';
import type { Queryable, StoreTx } from '../store/store.ts';
import type { Caller, RuntimeCore } from './core.ts';
import type { CompiledVerb, EmittedEvent, SystemVerbContext } from './verb.ts';
import { wellFormedText } from './ledger/write/audit.ts';

const NEVER = new AbortController().signal;
const NOOP = (): void => {};

/**
 * The runtime-backed members of a handler context (runtime, logger, manifest, principalsChanged).
 * `db` is the call's store transaction or read view: a write's `principalsChanged` waits for its
 * commit.
 */
export function runtimeContextMembers(
  rt: RuntimeCore,
  db: Queryable,
): Pick<SystemVerbContext, 'runtime' | 'logger' | 'manifest' | 'principalsChanged'> {
  return {
    runtime: rt,
    logger: rt.logger,
    manifest: () => rt.registry.list(),
    principalsChanged() {
      const tx = db as Partial<StoreTx>;
      if (typeof tx.afterCommit === 'function') tx.afterCommit(() => rt.tenants.invalidate());
      else rt.tenants.invalidate();
    },
  };
}

/** What a read context is built from (the pipeline's resolved call has all of it). */
export interface ReadCall {
  readonly rt: RuntimeCore;
  readonly principal: Principal;
  readonly now: Date;
  readonly verb: CompiledVerb;
  readonly caller: Caller;
}

/** The handler context for reads (no events, no outbox, no rollback); `db` defaults to the read view. */
export function readContext(c: ReadCall, db: Queryable = c.rt.readView): SystemVerbContext {
  const { verb, caller } = c;
  return {
    principal: c.principal,
    db,
    now: c.now,
    signal: caller.signal ?? NEVER,
    ...runtimeContextMembers(c.rt, db),
    verb,
    emit() {
      throw new Error(`read verb ${verb.name} cannot emit events`);
    },
    outbox() {
      throw new Error(`read verb ${verb.name} cannot use the outbox`);
    },
    setRollback() {
      throw new Error(`read verb ${verb.name} cannot set a rollback`);
    },
    setEntity() {},
    surface: caller.surface,
    ...(caller.webmcpSurface !== undefined ? { webmcpSurface: caller.webmcpSurface } : {}),
    progress: caller.onProgress ?? NOOP,
    ...(caller.toolsets !== undefined || caller.readOnly === true
      ? { narrowing: { toolsets: caller.toolsets, readOnly: caller.readOnly } }
      : {}),
  };
}

/**
 * The handler context of a write inside the write core: the public SystemVerbContext plus the
 * ledger's own members (the reserved audit_id of this write, the raw transaction, the audit link).
 * Only writeContext and revertContext make one; `ledgerContext` finds it again.
 */
export interface LedgerContext extends SystemVerbContext {
  readonly auditId: number;
  readonly tx: StoreTx;
  setAuditLink(link: { parent_id?: number; transaction_id?: string }): void;
}

/** What a write's handler declared: read by the write core after the handler returns. */
export interface WriteEffects {
  events: EmittedEvent[];
  outbox: Array<{ kind: string; payload: Record<string, unknown> }>;
  rollback: { handle: string; data: Record<string, unknown> } | undefined;
  entity: { type: string; id: string } | undefined;
  link: { parent_id?: number; transaction_id?: string };
}

/** The contexts writeContext and revertContext built: what ledgerContext accepts. */
const LEDGER_CONTEXTS = new WeakSet<object>();

export interface WriteCall {
  readonly verb: CompiledVerb;
  readonly principal: Principal;
  readonly now: Date;
  readonly caller: Caller;
  readonly auditId: number;
  readonly idempotencyKey: string | null | undefined;
}

/** The handler context of one write in `tx`, and the effects its handler declares through it. */
export function writeContext(
  rt: RuntimeCore,
  tx: StoreTx,
  w: WriteCall,
): { ctx: LedgerContext; effects: WriteEffects } {
  const effects: WriteEffects = { events: [], outbox: [], rollback: undefined, entity: undefined, link: {} };
  const caller = w.caller;
  // One literal, no spreads: spreading objects into this ~20-member context is a slow path in V8.
  const ctx: LedgerContext = {
    principal: w.principal,
    db: tx,
    tx,
    now: w.now,
    signal: caller.signal ?? NEVER,
    runtime: rt,
    logger: rt.logger,
    manifest: () => rt.registry.list(),
    principalsChanged() {
      tx.afterCommit(() => rt.tenants.invalidate());
    },
    verb: w.verb,
    idempotencyKey: w.idempotencyKey ?? undefined,
    auditId: w.auditId,
    emit(e) {
      effects.events.push(e);
    },
    outbox(kind, payload) {
      effects.outbox.push({ kind, payload });
    },
    setRollback(handle, data) {
      effects.rollback = { handle: wellFormedText(handle), data };
    },
    setEntity(type, id) {
      effects.entity = { type, id: String(id) };
    },
    setAuditLink(l) {
      effects.link = l;
    },
    surface: caller.surface,
    progress: caller.onProgress ?? NOOP,
  };
  const optional = ctx as { webmcpSurface?: Caller['webmcpSurface'] };
  if (caller.webmcpSurface !== undefined) optional.webmcpSurface = caller.webmcpSurface;
  LEDGER_CONTEXTS.add(ctx);
  return { ctx, effects };
}

/**
 * A revert handler's context: the revert's own write context (its transaction, its audit row),
 * minus setRollback and setAuditLink (the revert row always points at the original).
 */
export function revertContext(ctx: LedgerContext, verb: CompiledVerb): LedgerContext {
  const out: LedgerContext = {
    auditId: ctx.auditId,
    tx: ctx.tx,
    setAuditLink() {
      throw new Error(`the revert handler of ${verb.name} cannot relink the revert's audit row`);
    },
    principal: ctx.principal,
    db: ctx.db,
    now: ctx.now,
    signal: ctx.signal,
    runtime: ctx.runtime,
    logger: ctx.logger,
    manifest: () => ctx.manifest(),
    principalsChanged: () => ctx.principalsChanged(),
    verb,
    ...(ctx.idempotencyKey !== undefined ? { idempotencyKey: ctx.idempotencyKey } : {}),
    ...(ctx.surface !== undefined ? { surface: ctx.surface } : {}),
    emit: (e) => ctx.emit(e),
    outbox: (kind, payload) => ctx.outbox(kind, payload),
    setRollback() {
      throw new Error(
        `the revert handler of ${verb.name} cannot declare a rollback (a revert is not itself revertible)`,
      );
    },
    setEntity: (type, id) => ctx.setEntity(type, id),
    progress: (done, total, message) => ctx.progress(done, total, message),
  };
  LEDGER_CONTEXTS.add(out);
  return out;
}

/** The ledger view of a write's context. Throws (programmer error) for a context the write core did not build. */
export function ledgerContext(ctx: SystemVerbContext): LedgerContext {
  if (!LEDGER_CONTEXTS.has(ctx)) {
    throw new Error(`${ctx.verb.name} must run inside the write pipeline (executeInTx)`);
  }
  return ctx as LedgerContext;
}

/** The handler context of a preview run for a pending answer: reads only, every effect ignored. */
export function previewContext(
  rt: RuntimeCore,
  q: Queryable,
  principal: Principal,
  verb: CompiledVerb,
  caller: Caller,
): SystemVerbContext {
  return {
    principal,
    db: q,
    now: rt.clock(),
    signal: caller.signal ?? new AbortController().signal,
    ...runtimeContextMembers(rt, q),
    verb,
    emit() {},
    outbox() {},
    setRollback() {},
    setEntity() {},
    progress() {},
  };
}

/**
 * Run the preview verb a write verb declares (`definition.preview`) against committed data, for
 * pending answers. Undefined when it declares none, the preview is not a read, or the args do not
 * fit the preview's input.
 */
export async function previewFor(
  rt: RuntimeCore,
  verb: CompiledVerb,
  principal: Principal,
  args: Record<string, unknown>,
  caller: Caller,
): Promise<Record<string, unknown> | undefined> {
  const name = verb.definition.preview;
  if (name === undefined) return undefined;
  const pv = rt.registry.get(name);
  if (pv === undefined || pv.isWrite) return undefined;
  if (!pv.validate(args)) return undefined;
  return (await rt.store.read((q) =>
    pv.definition.handler(previewContext(rt, q, principal, pv, caller), args),
  )) as Record<string, unknown>;
}
