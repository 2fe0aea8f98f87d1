/**
 * A write's receipt outlives its idempotency record: audit.receipt answers it signed by audit_id
 * after the 24 h key expiry and the maintenance pass, audit.verify_receipt checks it against the
 * tenant's keys and log, an altered copy or another tenant's receipt is not valid, and a read or
 * an unknown audit_id has no receipt. Spec: spec/receipts.md §stored.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { counterRuntime, consented } from '../support/counter-verbs.ts';
import { runMaintenance } from '../../src/runtime/maintenance.ts';
import { verifyReceipt } from '../../src/runtime/ledger/keys/receipts.ts';
import { databaseKeys } from '../../src/runtime/ledger/verify/verify.ts';
import type { Envelope, Receipt } from '../../src/spec/types.ts';
import type { TestRuntime } from '../support/runtime.ts';
import { dispatchAs } from '../support/keyed.ts';

function call(h: TestRuntime, key: string, verb: string, args: Record<string, unknown>): Promise<Envelope> {
  return dispatchAs(h.rt, { apiKey: key, surface: 'http' }, verb, args);
}

describe('stored receipts', () => {
  it('audit.receipt answers the signed receipt after the idempotency record is gone, and it verifies', async (t) => {
    const h = await counterRuntime(t);
    const env = await consented(h, h.keys.employee, 'counter.add', { name: 'visits', by: 2 });
    assert.equal(env.ok, true, JSON.stringify(env.error));
    const original = env.result as Receipt;
    const later = new Date(Date.now() + 25 * 3600 * 1000);
    const swept = await runMaintenance(h.rt.store, later);
    assert.ok(swept.idempotency_deleted >= 1, 'the idempotency record expired and was deleted');

    const got = await call(h, h.keys.read_only, 'audit.receipt', { audit_id: env.audit_id });
    assert.equal(got.ok, true, JSON.stringify(got.error));
    const r = (got.result as { data: { receipt: Receipt } }).data.receipt;
    assert.equal(r.audit_id, env.audit_id);
    assert.equal(r.added, 2, 'the domain fields are kept');
    assert.equal(r.rollback_handle, original.rollback_handle);
    assert.equal(r.idempotency_key, original.idempotency_key);
    assert.equal(r.attestation!.row_hash, original.attestation!.row_hash);
    const keys = await h.rt.store.read((q) => databaseKeys(q, h.companyId));
    assert.equal(verifyReceipt(r, keys).valid, true);

    const v = await call(h, h.keys.read_only, 'audit.verify_receipt', { receipt: r });
    const data = (v.result as { data: Record<string, unknown> }).data;
    assert.equal(data.valid, true, JSON.stringify(data));
    assert.equal((data.log as { status: string }).status, 'present');
    assert.equal((data.signature as { kid: string }).kid, r.attestation!.kid);

    const altered = { ...r, added: 3 };
    const bad = (await call(h, h.keys.read_only, 'audit.verify_receipt', { receipt: { result: altered } }))
      .result as { data: { valid: boolean; signature: { errors: string[] } } };
    assert.equal(bad.data.valid, false);
    assert.match(bad.data.signature.errors.join(' '), /altered/);
  });

  it("audit.verify_receipt takes audit.receipt's whole envelope, its result or its data as pasted", async (t) => {
    const h = await counterRuntime(t);
    const env = await consented(h, h.keys.employee, 'counter.add', { name: 'visits', by: 1 });
    assert.equal(env.ok, true, JSON.stringify(env.error));
    const got = await call(h, h.keys.read_only, 'audit.receipt', { audit_id: env.audit_id });
    assert.equal(got.ok, true, JSON.stringify(got.error));
    const result = got.result as { data: { receipt: Receipt } };
    const forms: Array<[string, unknown]> = [
      ['the audit.receipt envelope', got],
      ['its result', result],
      ['its data', result.data],
      ['the write envelope', env],
    ];
    for (const [what, doc] of forms) {
      const v = await call(h, h.keys.read_only, 'audit.verify_receipt', {
        receipt: doc as Record<string, unknown>,
      });
      const data = (v.result as { data: { valid: boolean; audit_id: number | null } }).data;
      assert.equal(data.valid, true, `${what}: ${JSON.stringify(data)}`);
      assert.equal(data.audit_id, env.audit_id, what);
    }
    // A wrapper that claims another action changes nothing: the answer names the attested one.
    const claimed = { ...env, verb: 'payments.refund' };
    const named = await call(h, h.keys.read_only, 'audit.verify_receipt', { receipt: claimed });
    const nd = (named.result as { data: { valid: boolean; verb: string | null } }).data;
    assert.equal(nd.valid, true);
    assert.equal(nd.verb, 'counter.add', 'the log row names the action the receipt proves');
    const altered = structuredClone(got) as unknown as { result: { data: { receipt: { by?: number } } } };
    altered.result.data.receipt.by = 9;
    const bad = await call(h, h.keys.read_only, 'audit.verify_receipt', {
      receipt: altered as unknown as Record<string, unknown>,
    });
    assert.equal(
      (bad.result as { data: { valid: boolean } }).data.valid,
      false,
      'an altered receipt inside an envelope',
    );
  });

  it("audit.verify_receipt: a malformed attestation or an edited seq/hash is the receipt's fault, never the log's", async (t) => {
    const h = await counterRuntime(t);
    await consented(h, h.keys.employee, 'counter.add', { name: 'visits', by: 1 });
    const env = await consented(h, h.keys.employee, 'counter.add', { name: 'visits', by: 2 });
    const r = env.result as Receipt;
    const att = r.attestation!;
    const cases: Array<[string, unknown]> = [
      ['null', null],
      ['a string', 'forged'],
      ['seq 1', { ...att, seq: 1 }],
      ['zero row_hash', { ...att, row_hash: '0'.repeat(64) }],
    ];
    for (const [what, attestation] of cases) {
      const v = await call(h, h.keys.read_only, 'audit.verify_receipt', { receipt: { ...r, attestation } });
      assert.equal(v.ok, true, `${what}: ${JSON.stringify(v.error)}`);
      const data = (v.result as { data: { valid: boolean; log: unknown; signature: { errors: string[] } } })
        .data;
      assert.equal(data.valid, false, what);
      assert.equal(data.log, null, `${what}: the log is not judged by an unsigned seq or hash`);
      assert.ok(data.signature.errors.length > 0, what);
    }
  });

  it('a read, an unknown audit_id and another tenant have no receipt', async (t) => {
    const h = await counterRuntime(t);
    const env = await consented(h, h.keys.employee, 'counter.add', { name: 'visits', by: 1 });
    const read = await call(h, h.keys.employee, 'counter.get', { name: 'visits' });
    assert.equal(read.ok, true, JSON.stringify(read.error));
    await h.rt.auditBuffer.flush();
    const readRow = await h.rt.store.read((q) =>
      q.get<{ audit_id: number }>("SELECT audit_id FROM audit_log WHERE action_type = 'counter.get'"),
    );
    for (const id of [Number(readRow!.audit_id), 99_999]) {
      const got = await call(h, h.keys.read_only, 'audit.receipt', { audit_id: id });
      assert.equal(got.error?.reason, 'not_found', `audit_id ${id}`);
      assert.ok(got.error?.hint);
    }
    const other = await call(h, h.otherOwnerKey, 'audit.receipt', { audit_id: env.audit_id });
    assert.equal(other.error?.reason, 'not_found', 'another tenant');
    const foreign = await call(h, h.otherOwnerKey, 'audit.verify_receipt', { receipt: env.result });
    const data = (foreign.result as { data: { valid: boolean; log: unknown } }).data;
    assert.equal(data.valid, false);
    assert.equal(data.log, null, "another tenant's log row is not looked at");
  });
});
