/**
 * Receipts as attestations: every write's receipt carries the spec fields and an ES256 signature
 * over the canonical receipt that anyone verifies offline with the tenant's public key; altering
 * any field breaks it; `solid receipt verify` checks a saved envelope and its row in the local log.
 * Spec: spec/receipts.md.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { bump, counterRuntime, consented, counter } from '../support/counter-verbs.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { verifyReceipt } from '../../src/runtime/ledger/keys/receipts.ts';
import { validateEnvelope, validateShapeOutput } from '../../src/spec/validators.ts';
import { upstreamValidator } from '../support/upstream.ts';
import { runCli } from '../../src/transports/cli/main.ts';
import type { Io } from '../../src/transports/cli/output.ts';
import type { Receipt } from '../../src/spec/types.ts';
import { alterMiddle, spareBitTwin } from '../support/base64url.ts';
import { dispatchAs } from '../support/keyed.ts';

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (s) => out.push(s), err: (s) => err.push(s), isTTY: false };
  const code = await runCli(args, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('receipts', () => {
  it('a write answers a receipt with status, audit_id, rollback_handle, idempotency_key, timestamp and its domain fields, valid against the receipt shape (ours and upstream)', async (t) => {
    const h = await counterRuntime(t);
    const env = await consented(
      h,
      h.keys.employee,
      'counter.add',
      { name: 'visits', by: 3 },
      { idempotency_key: 'receipt-fields-1' },
    );
    assert.equal(env.ok, true, JSON.stringify(env.error));
    const r = env.result as Receipt;
    assert.equal(r.status, 'completed');
    assert.equal(typeof r.audit_id, 'number');
    assert.equal(r.audit_id, env.audit_id);
    assert.equal(r.idempotency_key, 'receipt-fields-1');
    assert.equal(env.idempotency_key, 'receipt-fields-1');
    assert.ok(!Number.isNaN(Date.parse(r.timestamp!)), 'timestamp is ISO 8601');
    assert.match(r.rollback_handle!, /^counter:add:visits:3~/);
    assert.equal(env.rollback_handle, r.rollback_handle);
    assert.equal(r.counter, 'visits');
    assert.equal(r.added, 3);
    assert.deepEqual(validateShapeOutput('receipt', r), { valid: true, errors: [] });
    assert.deepEqual(validateEnvelope(env), { valid: true, errors: [] });
    const upstream = upstreamValidator('shapes/receipt');
    if (upstream !== undefined) assert.equal(upstream(r), true, JSON.stringify(upstream.errors));
  });

  it('the attestation verifies offline with the tenant public key and binds the audit row (seq, row_hash, prev_hash)', async (t) => {
    const h = await counterRuntime(t);
    const env = await consented(h, h.keys.employee, 'counter.add', { name: 'a', by: 1 });
    const r = env.result as Receipt;
    const keys = await h.rt.store.read((q) => h.rt.keys.publishable(q, h.companyId));
    assert.deepEqual(verifyReceipt(r, keys), { valid: true, kid: r.attestation!.kid, errors: [] });
    const row = await h.rt.store.read((q) =>
      q.get<{ seq: number; row_hash: string; prev_hash: string }>(
        'SELECT seq, row_hash, prev_hash FROM audit_log WHERE audit_id = ?',
        [r.audit_id],
      ),
    );
    assert.equal(r.attestation!.seq, row!.seq);
    assert.equal(r.attestation!.row_hash, row!.row_hash);
    assert.equal(r.attestation!.prev_hash, row!.prev_hash);
    // Another tenant's key does not verify it.
    const otherKeys = await h.rt.store.read((q) => h.rt.keys.publishable(q, h.otherCompanyId));
    assert.equal(verifyReceipt(r, otherKeys).valid, false);
  });

  it('altering any field of a receipt (domain field, status, audit_id, timestamp, handle, key, seq, row_hash) breaks the attestation', async (t) => {
    const h = await counterRuntime(t);
    const env = await consented(h, h.keys.employee, 'counter.add', { name: 'a', by: 7 });
    const r = env.result as Receipt;
    const keys = await h.rt.store.read((q) => h.rt.keys.publishable(q, h.companyId));
    const alterations: Array<[string, (x: Receipt) => void]> = [
      ['added', (x) => (x.added = 700)],
      ['counter', (x) => (x.counter = 'b')],
      ['status', (x) => (x.status = 'failed')],
      ['audit_id', (x) => (x.audit_id = x.audit_id + 1)],
      ['timestamp', (x) => (x.timestamp = new Date(0).toISOString())],
      ['rollback_handle', (x) => (x.rollback_handle = `${x.rollback_handle}x`)],
      ['idempotency_key', (x) => (x.idempotency_key = 'other')],
      ['extra field', (x) => (x.refund = true)],
      ['removed field', (x) => delete x.counter],
      ['attestation.seq', (x) => (x.attestation!.seq += 1)],
      ['attestation.row_hash', (x) => (x.attestation!.row_hash = '0'.repeat(64))],
      ['attestation.prev_hash', (x) => (x.attestation!.prev_hash = 'f'.repeat(64))],
      [
        'attestation.jws, respelt with the same signature bytes',
        (x) => (x.attestation!.jws = spareBitTwin(x.attestation!.jws)),
      ],
      [
        'attestation.jws signature',
        (x) =>
          (x.attestation!.jws = `${x.attestation!.jws.split('.').slice(0, 2).join('.')}.${alterMiddle(x.attestation!.jws.split('.')[2]!)}`),
      ],
    ];
    for (const [what, alter] of alterations) {
      const copy = structuredClone(r);
      alter(copy);
      const v = verifyReceipt(copy, keys);
      assert.equal(v.valid, false, `altering ${what} must break the signature`);
    }
  });

  it('a receipt without an attestation and one with a malformed attestation are told apart', async (t) => {
    const h = await counterRuntime(t);
    const env = await consented(h, h.keys.employee, 'counter.add', { name: 'a', by: 3 });
    const r = env.result as Receipt;
    const keys = await h.rt.store.read((q) => h.rt.keys.publishable(q, h.companyId));
    const none = structuredClone(r) as Partial<Receipt>;
    delete none.attestation;
    assert.deepEqual(verifyReceipt(none, keys), { valid: false, errors: ['receipt has no attestation'] });
    for (const fake of ['forged', 42, null, [], { kid: r.attestation!.kid }, { jws: 7, kid: 'k' }]) {
      const copy = { ...structuredClone(r), attestation: fake } as unknown as Receipt;
      const v = verifyReceipt(copy, keys);
      assert.equal(v.valid, false, JSON.stringify(fake));
      assert.equal(v.errors.length, 1, JSON.stringify(v));
      assert.match(v.errors[0]!, /^attestation is malformed: /, JSON.stringify(fake));
    }
  });

  it('solid receipt verify accepts a saved envelope, refuses an altered one, and finds its row missing from a truncated log', async (t) => {
    const h = await counterRuntime(t, { engine: 'sqlite' }); // the CLI opens the SQLite file
    const env = await consented(h, h.keys.employee, 'counter.add', { name: 'a', by: 2 });
    const later = await consented(h, h.keys.employee, 'counter.add', { name: 'a', by: 1 });
    assert.equal(later.ok, true);
    await h.rt.close();
    const file = join(h.dir, 'receipt.json');
    writeFileSync(file, JSON.stringify(env));
    const keysFile = join(h.dir, 'keys.json');
    const exported = await cli(['--db', h.dbPath, 'audit', 'export-keys', '--out', keysFile]);
    assert.equal(exported.code, 0, exported.err);

    const ok = await cli(['--db', h.dbPath, 'receipt', 'verify', file, '--keys', keysFile, '--json']);
    assert.equal(ok.code, 0, ok.err);
    const verdict = JSON.parse(ok.out) as { valid: boolean; log: { status: string } };
    assert.equal(verdict.valid, true);
    assert.equal(verdict.log.status, 'present');

    const altered = structuredClone(env);
    (altered.result as Receipt).added = 2000;
    writeFileSync(file, JSON.stringify(altered));
    const bad = await cli(['--db', h.dbPath, 'receipt', 'verify', file, '--keys', keysFile]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /signature invalid/);

    // Truncate the log below the receipt (an attacker with the file, triggers dropped).
    writeFileSync(file, JSON.stringify(env));
    const raw = new Database(h.dbPath);
    raw.exec('DROP TRIGGER audit_log_no_delete');
    raw
      .prepare('DELETE FROM audit_log WHERE company_id = ? AND seq >= ?')
      .run(h.companyId, (env.result as Receipt).attestation!.seq);
    raw.close();
    const truncated = await cli(['--db', h.dbPath, 'receipt', 'verify', file, '--keys', keysFile, '--json']);
    assert.notEqual(truncated.code, 0);
    const v2 = JSON.parse(truncated.out) as {
      valid: boolean;
      signature: { valid: boolean };
      log: { status: string };
    };
    assert.equal(v2.signature.valid, true, 'the receipt itself is still authentic');
    assert.equal(v2.log.status, 'missing');
    assert.equal(v2.valid, false);
  });

  it('solid receipt verify: a malformed attestation is one line saying so, with no claim about the log', async (t) => {
    const h = await counterRuntime(t, { engine: 'sqlite' });
    const env = await consented(h, h.keys.employee, 'counter.add', { name: 'm', by: 1 });
    await h.rt.close();
    const file = join(h.dir, 'receipt.json');
    for (const attestation of [null, 'forged', 42, [], { kid: 'k1', seq: 1 }]) {
      writeFileSync(file, JSON.stringify({ ...env, result: { ...(env.result as Receipt), attestation } }));
      const r = await cli(['--db', h.dbPath, 'receipt', 'verify', file]);
      const what = JSON.stringify(attestation);
      assert.equal(r.code, 1, `${what}: ${r.err}`);
      assert.equal(r.out, '', what);
      assert.equal(r.err.split('\n').length, 1, `${what}: one line: ${r.err}`);
      assert.match(r.err, /^✗ .*attestation is malformed/, what);
      assert.doesNotMatch(r.err, /internal_error|undefined|audit log|rewritten|holds no key/, what);
      const j = await cli(['--db', h.dbPath, 'receipt', 'verify', file, '--json']);
      assert.equal(j.code, 1, `${what}: ${j.err}`);
      const v = JSON.parse(j.out) as { valid: boolean; log: unknown; seq: unknown };
      assert.deepEqual(
        { valid: v.valid, log: v.log, seq: v.seq },
        { valid: false, log: null, seq: null },
        what,
      );
    }
  });

  it('solid receipt verify blames the receipt, not the log, when an edited receipt no longer verifies', async (t) => {
    const h = await counterRuntime(t, { engine: 'sqlite' });
    await consented(h, h.keys.employee, 'counter.add', { name: 'e', by: 1 });
    const env = await consented(h, h.keys.employee, 'counter.add', { name: 'e', by: 2 });
    await h.rt.close();
    const file = join(h.dir, 'receipt.json');
    const att = (env.result as Receipt).attestation!;
    for (const edit of [{ seq: 1 }, { row_hash: '0'.repeat(64) }, { prev_hash: '0'.repeat(64) }]) {
      const what = JSON.stringify(edit);
      const edited = { ...env, result: { ...(env.result as Receipt), attestation: { ...att, ...edit } } };
      writeFileSync(file, JSON.stringify(edited));
      const r = await cli(['--db', h.dbPath, 'receipt', 'verify', file]);
      assert.equal(r.code, 1, what);
      assert.match(r.err, /✗ signature invalid: .*altered or signed by another key/, what);
      assert.doesNotMatch(r.err, /rewritten|truncated|✗ audit log/, `${what}: ${r.err}`);
      assert.match(r.err, /· audit log: not checked/, what);
      const j = await cli(['--db', h.dbPath, 'receipt', 'verify', file, '--json']);
      const v = JSON.parse(j.out) as { valid: boolean; log: unknown };
      assert.deepEqual({ valid: v.valid, log: v.log }, { valid: false, log: null }, what);
    }
  });

  it('a replayed receipt verifies as received and attests the original row (same audit_id, seq and row_hash)', async (t) => {
    const h = await counterRuntime(t);
    const first = await consented(
      h,
      h.keys.employee,
      'counter.add',
      { name: 'a', by: 1 },
      { idempotency_key: 'replay-sig' },
    );
    const again = await dispatchAs(
      h.rt,
      { surface: 'cli', apiKey: h.keys.employee },
      'counter.add',
      { name: 'a', by: 1 },
      { idempotency_key: 'replay-sig' },
    );
    assert.equal(again.replayed, true);
    const keys = await h.rt.store.read((q) => h.rt.keys.publishable(q, h.companyId));
    const r = again.result as Receipt;
    assert.equal(r.replayed, true);
    assert.equal(verifyReceipt(r, keys).valid, true);
    const f = first.result as Receipt;
    assert.equal(r.audit_id, f.audit_id);
    assert.equal(r.attestation!.seq, f.attestation!.seq);
    assert.equal(r.attestation!.row_hash, f.attestation!.row_hash);
    assert.equal(r.timestamp, f.timestamp);
  });
});

describe('receipts of results with broken text', () => {
  it('a write whose result or rollback handle holds a lone surrogate (a label cut inside an emoji) answers its signed receipt once, with U+FFFD — not internal_error after the commit', async (t) => {
    const h = await counterRuntime(t);
    h.rt.register(
      defineVerb<{ name: string }>({
        name: 'counter.tag',
        description: 'Bump a counter and answer its short label (the first 5 UTF-16 units).',
        shape: 'receipt',
        category: 'test',
        consent: 'WRITE_REVERSIBLE',
        input: {
          type: 'object',
          properties: { name: { type: 'string' } },
          required: ['name'],
          additionalProperties: false,
        },
        async handler(ctx, a) {
          await bump(ctx, a.name, 1);
          ctx.setRollback(`tag:${a.name.slice(0, 5)}`, { name: a.name });
          return { label: a.name.slice(0, 5) };
        },
        revert: {
          async handler() {
            return { revert_action: 'untagged' };
          },
        },
      }),
    );
    const first = await consented(
      h,
      h.keys.employee,
      'counter.tag',
      { name: 'abcd😀' },
      { idempotency_key: 'tag-1' },
    );
    assert.equal(first.ok, true, JSON.stringify(first.error));
    const r = first.result as Receipt;
    assert.equal(r.label, 'abcd\ufffd');
    assert.match(r.rollback_handle!, /^tag:abcd\ufffd~/);
    const keys = await h.rt.store.read((q) => h.rt.keys.publishable(q, h.companyId));
    assert.equal(verifyReceipt(r, keys).valid, true);
    const again = await consented(
      h,
      h.keys.employee,
      'counter.tag',
      { name: 'abcd😀' },
      { idempotency_key: 'tag-1' },
    );
    assert.equal(again.replayed, true);
    assert.equal(verifyReceipt(again.result as Receipt, keys).valid, true);
    assert.equal((await counter(h, 'abcd😀')).changes, 1, 'the effect ran once');
    const undo = await consented(h, h.keys.employee, 'audit.revert', { rollback_handle: r.rollback_handle });
    assert.equal(undo.ok, true, JSON.stringify(undo.error));
  });
});

describe('receipt signing payload', () => {
  it('is the RFC 8785 text of the receipt without attestation.jws, byte for byte what canonicalize writes (nested members, arrays, undefined, Date, non-ASCII keys), and refuses what canonicalize refuses', async () => {
    const { default: canonicalize } = await import('canonicalize');
    const { receiptSigningPayload } = await import('../../src/runtime/ledger/keys/receipts.ts');
    const reference = (r: Record<string, unknown>): string | undefined => {
      const { attestation, ...rest } = r as { attestation?: Record<string, unknown> };
      const copy: Record<string, unknown> = { ...rest };
      if (attestation !== undefined) {
        const { jws: _jws, ...att } = attestation;
        copy.attestation = att;
      }
      return canonicalize(copy);
    };
    const receipts: Array<Record<string, unknown>> = [
      {
        status: 'completed',
        audit_id: 12,
        timestamp: '2026-12-03T10:00:00.000Z',
        phone: '+1 555',
        attestation: { kid: 'k1', alg: 'ES256', seq: 3, row_hash: 'ab', prev_hash: 'cd', jws: 'h..s' },
      },
      {
        b: [1, 'x', null, undefined, { z: 1, a: [true, false] }],
        a: { é: 1, e: 2, éx: { y: -0, x: 1e21, w: 0.1 } },
        u: undefined,
        d: new Date(0),
        '': 'empty',
        '😀': 'emoji',
        s: 'quote"back\\slash\nnl\u2028',
        nested: { deep: { deeper: [[[]]], o: {} } },
      },
      {},
    ];
    for (const r of receipts) assert.equal(receiptSigningPayload(r as Receipt), reference(r));
    for (const bad of [{ x: '\ud800' }, { x: Number.NaN }, { ['\udc00']: 1 }, { x: [Infinity] }]) {
      assert.throws(() => reference(bad));
      assert.throws(() => receiptSigningPayload(bad as unknown as Receipt));
    }
  });
});
