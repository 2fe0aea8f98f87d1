/**
 * Step 10, idempotency (writes): the caller's key is checked (`idempotency_key_invalid`) and looked
 * up — a stored receipt for the same call is replayed (`replayed: true`), for another call refused
 * (`idempotency_key_reused`, 422) — or a key is generated. A caller-keyed write then holds the key
 * in flight on this node until the call ends (`idempotency_key_in_use`, 409; the execute step
 * also takes the key's lock across nodes). A write that is not a replay first sends its tenant's
 * buffered read-audit rows to the log, so its own row takes a later audit_id (a replay's row is
 * buffered: replays batch like reads).
 * Spec: spec/audit.md §read-rows, spec/idempotency.md, spec/store.md §idempotency-across-nodes.
 */
import { performance } from 'node:perf_hooks';
import type { Envelope } from '../../spec/types.ts';
import { VerbError } from '../errors.ts';
import {
  checkIdempotencyKey,
  findIdempotency,
  fingerprint,
  generateIdempotencyKey,
  principalScope,
  type StoredIdempotency,
} from '../ledger/write/idempotency.ts';
import { signEnvelope } from '../ledger/keys/receipts.ts';
import { entryFor, settle, type Call, type Resolved, type Step } from './call.ts';
import { refuse } from '../refusals.ts';

export const idempotency: Step<Resolved> = {
  name: 'idempotency',
  async run(c) {
    const { rt, principal: p } = c;
    const given = c.options.idempotency_key;
    if (given === undefined || given === null) {
      c.idempotencyKey = generateIdempotencyKey();
      await rt.auditBuffer.flushTenant(p.company_id);
      return undefined;
    }
    const key = checkIdempotencyKey(given);
    c.idempotencyKey = key;
    c.callerKey = true;
    const stored = await rt.store.read((q) =>
      findIdempotency(q, p.company_id, principalScope(p), key, c.now.toISOString()),
    );
    if (stored !== undefined) return signEnvelope(rt.keys, p.company_id, replayOrRefuse(c, stored));
    // Not a replay: this write will append its own row, so the tenant's buffered rows (reads and
    // replays answered before it) go first. A replay only buffers a row, so it does not flush.
    await rt.auditBuffer.flushTenant(p.company_id);
    const scope = `${p.company_id}|${principalScope(p)}|${key}`;
    if (!rt.inflight.acquire(scope)) throw inUse();
    c.inflight = scope;
    return undefined;
  },
};

/** idempotency_key_in_use: the same key is running (on this node, or another: execute step). */
export function inUse(): VerbError {
  return refuse.idempotencyKeyInUse();
}

/** Let go of the key held in flight (the runner calls this once the call has its answer). */
export function releaseKey(c: Call): void {
  if (c.inflight === undefined) return;
  c.rt.inflight.release(c.inflight);
  c.inflight = undefined;
}

/**
 * The stored answer of this key, marked `replayed`, when it was stored for the same verb and args
 * (its `replayed` audit row buffered); idempotency_key_reused otherwise. The receipt is still to
 * be signed (signEnvelope).
 */
export function replayOrRefuse(c: Resolved, stored: StoredIdempotency): Envelope {
  if (stored.fingerprint !== fingerprint(c.name, c.args)) {
    throw new VerbError(
      'idempotency_key_reused',
      `This idempotency key was already used for ${stored.verb === c.name ? 'other arguments' : `verb ${stored.verb}`}.`,
      {
        hint: 'Use a new idempotency key for a different operation; reuse a key only to retry the exact same call.',
        details: { original_audit_id: stored.audit_id },
      },
    );
  }
  const env: Envelope = { ...stored.envelope, replayed: true };
  if (env.result !== undefined) env.result = { ...env.result, replayed: true };
  const latency = performance.now() - c.t0;
  c.rt.auditBuffer.push(entryFor(c, 'replayed', null, latency, { parentId: stored.audit_id }));
  settle(c, true, null, latency, stored.audit_id);
  c.replay = true;
  return env;
}
