/**
 * Step 12, execute (writes): ONE store transaction holding the idempotency key's lock across nodes
 * (`idempotency_key_in_use`) and a last look for its stored receipt, then the write core
 * (ledger/write/execute.ts: nonce burn, daily cap, handler, audit row, events, outbox, revert data) and
 * the idempotency claim. The receipt is signed (ES256) after commit: on the thread pool while other
 * writes are in flight in this process (the event loop stays theirs), on the calling thread when
 * this write is the only one (no one to give the loop to; a third of the CPU, no thread hop).
 * Spec: spec/receipts.md, spec/idempotency.md, spec/store.md §idempotency-across-nodes.
 */
import { performance } from 'node:perf_hooks';
import type { Envelope } from '../../spec/types.ts';
import type { AuditRow } from '../ledger/write/audit.ts';
import { executeInTx } from '../ledger/write/execute.ts';
import {
  claimIdempotency,
  findIdempotency,
  fingerprint,
  principalScope,
} from '../ledger/write/idempotency.ts';
import { chainReceipt, signEnvelope } from '../ledger/keys/receipts.ts';
import { capClassOf, settle, type Consented, type Step } from './call.ts';
import { inUse, replayOrRefuse } from './idempotency.ts';

type Committed =
  { replay: Envelope } | { envelope: Envelope; row: AuditRow; secret?: Record<string, unknown> };

/** Writes of this process between their execute step's start and their signature. */
let running = 0;

export const execute: Step<Consented> = {
  name: 'execute',
  async run(c) {
    running++;
    try {
      return await run(c);
    } finally {
      running--;
    }
  },
};

async function run(c: Consented): Promise<Envelope> {
  const { rt, verb, principal: p } = c;
  const key = c.idempotencyKey;
  const committed = await rt.store.write(async (tx): Promise<Committed> => {
    const scope = c.inflight; // held iff the caller sent the key (idempotency step)
    if (scope !== undefined) {
      // Another node running the same key right now: answer in_use at once (spec/store.md §idempotency-across-nodes).
      if (tx.tryLockKey !== undefined && !(await tx.tryLockKey(scope))) throw inUse();
      const stored = await findIdempotency(tx, p.company_id, principalScope(p), key, c.now.toISOString());
      if (stored !== undefined) return { replay: replayOrRefuse(c, stored) };
    }
    const exec = await executeInTx(rt, tx, {
      verb,
      principal: p,
      args: c.args,
      now: c.now,
      caller: c.caller,
      consentClass: c.consentClass,
      capClass: capClassOf(c),
      roleFloor: c.delegated?.roleFloor ?? verb.roleFloor,
      floorChecked: true,
      consent: c.consent,
      idempotencyKey: key,
      t0: c.t0,
      revertDataInReceipt: true,
    });
    const receipt = chainReceipt(exec.receipt, exec.row);
    const envelope: Envelope = {
      ok: true,
      verb: verb.name,
      result: receipt,
      audit_id: exec.row.audit_id,
      idempotency_key: key,
    };
    if (receipt.rollback_handle !== undefined) envelope.rollback_handle = receipt.rollback_handle;
    await claimIdempotency(tx, {
      companyId: p.company_id,
      principal: principalScope(p),
      key,
      verb: verb.name,
      fingerprint: fingerprint(verb.name, c.args, c),
      auditId: exec.row.audit_id,
      envelope,
      nowIso: c.now.toISOString(),
      ttlSeconds: rt.options.idempotencyTtlSeconds,
      ...(exec.revertData !== undefined ? { revertData: exec.revertData } : {}),
    });
    return exec.secret === undefined
      ? { envelope, row: exec.row }
      : { envelope, row: exec.row, secret: exec.secret };
  });
  const sign = { offload: running > 1 };
  if ('replay' in committed) return signEnvelope(rt.keys, p.company_id, committed.replay, sign);
  let signed = await signEnvelope(rt.keys, p.company_id, committed.envelope, sign);
  if (committed.secret !== undefined) signed = { ...signed, secret: committed.secret };
  settle(c, true, null, performance.now() - c.t0, committed.row.audit_id);
  return signed;
}
