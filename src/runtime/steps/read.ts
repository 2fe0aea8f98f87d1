/**
 * Step 9, read: READ verbs run here against committed data, their audit row buffered (flushed
 * every 100 ms or 256 rows). Verbs marked `detached` (events.poll long-polls, macros.run dispatching
 * its steps) run here too, outside any store transaction or snapshot. Before a trail or a detached
 * write, the tenant's buffered read rows go to the log (before any other write, the idempotency
 * step sends them): audit_id order is answer order within a tenant. While read audit rows cannot
 * be written (a store fault: rt.auditBuffer.unwritable), a read is refused with
 * `store_unavailable` instead of being answered without its row (docs/operations.md §faults).
 * Spec: spec/audit.md §read-rows, spec/shapes.md §macro §subscribe.
 */
import { performance } from 'node:perf_hooks';
import type { Envelope } from '../../spec/types.ts';
import { appendAudit } from '../ledger/write/audit.ts';
import type { VerbContext } from '../verb.ts';
import { readContext } from '../verb-context.ts';
import { checkOutput } from '../verb-checks.ts';
import { entryFor, settle, type Resolved, type Step } from './call.ts';
import { VerbError } from '../errors.ts';

export const read: Step<Resolved> = {
  name: 'read',
  run(c) {
    const verb = c.verb;
    if (!verb.isWrite && c.rt.auditBuffer.unwritable) throw auditUnwritable();
    // No async wrapper on the hot read path: a read's answer is runRead's own promise. A trail
    // and a detached write flush the tenant's buffered rows here; any other write does so in the
    // idempotency step, after its replay check, so replays' rows are buffered like reads'.
    if (verb.definition.shape === 'trail' || (verb.isWrite && verb.definition.detached === true))
      return c.rt.auditBuffer.flushTenant(c.principal.company_id).then(() => route(c));
    return route(c);
  },
};

/** The refusal of a read while its audit row could not be written (a store fault). */
function auditUnwritable(): VerbError {
  return new VerbError(
    'store_unavailable',
    'Reads are paused: their audit rows cannot be written (the database is full, read-only or unreachable); nothing was read.',
    {
      hint: 'Retry after Retry-After seconds; the operator sees /readyz 503 and the solid_read_audit_unwritable metric.',
      details: { retry_after_seconds: 1 },
    },
  );
}

function route(c: Resolved): Promise<Envelope> | undefined {
  if (c.verb.definition.detached === true) return runDetached(c);
  if (!c.verb.isWrite) return runRead(c);
  return undefined;
}

async function runRead(c: Resolved): Promise<Envelope> {
  const { rt, verb } = c;
  let entity: { type: string; id: string } | undefined;
  const result = (await rt.store.read(async (q) => {
    const ctx = readContext(c, q);
    ctx.setEntity = (type, id) => {
      entity = { type, id: String(id) };
    };
    return verb.definition.handler(ctx, c.args);
  })) as Record<string, unknown>;
  checkOutput(rt.options, verb, result);
  const latency = performance.now() - c.t0;
  rt.auditBuffer.push(entryFor(c, 'completed', null, latency, { entity }));
  settle(c, true, null, latency, null);
  return { ok: true, verb: verb.name, result };
}

/**
 * A detached verb (VerbDefinition.detached) runs outside any store transaction or snapshot: it
 * may wait (long-poll) or dispatch other verbs, each of which passes every gate itself. A write
 * one must delegate consent with class null (no gate, no idempotency, no receipt at its level);
 * its audit row is written after the handler returns (a read one's is buffered like any read).
 */
async function runDetached(c: Resolved): Promise<Envelope> {
  const { rt, verb, options } = c;
  if (verb.isWrite && c.consentClass !== null)
    throw new Error(`${verb.name}: a detached write verb must delegate consent with class null`);
  let entity: { type: string; id: string } | undefined;
  const ctx: VerbContext = {
    ...readContext(c),
    consentReply: { confirm: options.confirm, nonce: options.nonce, typed_phrase: options.typed_phrase },
  };
  ctx.setEntity = (type, id) => {
    entity = { type, id: String(id) };
  };
  const result = ((await verb.definition.handler(ctx, c.args)) ?? {}) as Record<string, unknown>;
  checkOutput(rt.options, verb, result);
  const latency = performance.now() - c.t0;
  const entry = entryFor(c, 'completed', null, latency, { entity });
  if (!verb.isWrite) {
    rt.auditBuffer.push(entry);
    settle(c, true, null, latency, null);
    return { ok: true, verb: verb.name, result };
  }
  const row = await rt.store.write(async (tx) => {
    const r = await appendAudit(tx, entry);
    tx.afterCommit(() => rt.afterWrite(r));
    return r;
  });
  settle(c, true, null, latency, row.audit_id);
  return { ok: true, verb: verb.name, result, audit_id: row.audit_id };
}
