/**
 * The audit append hot path (profile-driven, issue 11) must stay exactly the chain the spec
 * defines: the hand-written row material equals RFC 8785 canonicalize() of the hashed columns for
 * any values, and a batch append (the read-audit buffer's flush: one head update per tenant)
 * stores the same rows as appending them one by one, and the chain verifies. Spec: spec/audit.md.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import {
  AUDIT_COLUMNS,
  appendAudit,
  appendAuditRows,
  auditEntry,
  canonicalAuditMaterial,
  getAuditRow,
  hashAuditRow,
  type AuditEntry,
  type AuditRow,
} from '../../src/runtime/ledger/write/audit.ts';
import { verifyDatabaseFile } from '../../src/runtime/ledger/verify/verify-file.ts';
import { createTestRuntime } from '../support/runtime.ts';

const HASHED = AUDIT_COLUMNS.filter((c) => c !== 'row_hash');

function reference(row: Omit<AuditRow, 'row_hash'>): string {
  const src = row as unknown as Record<string, unknown>;
  // `consent` is hashed only when present: rows written before it existed hash as they did.
  const columns = HASHED.filter((c) => c !== 'consent' || src[c] != null);
  return canonicalize(Object.fromEntries(columns.map((c) => [c, src[c] ?? null]))) ?? '';
}

const STRINGS = [
  '',
  'plain',
  'quote " and \\ backslash',
  'line\nbreak\ttab',
  'ünïcödé ✓ 🎉',
  '\u0000\u001f control',
  '\u2028\u2029 separators',
  '<script>&',
];
const NUMBERS = [0, -0, 1, -1, 0.1, 1.5e-7, 123456789.125, 2 ** 53 - 1, 1e21, 3.14159];

function row(i: number): Omit<AuditRow, 'row_hash'> {
  const s = (k: number) => STRINGS[(i + k) % STRINGS.length]!;
  const n = (k: number) => NUMBERS[(i + k) % NUMBERS.length]!;
  const maybe = <T>(k: number, v: T): T | null => ((i + k) % 3 === 0 ? null : v);
  return {
    audit_id: i + 1,
    company_id: 2,
    seq: i + 1,
    created_at: new Date(Date.UTC(2026, 0, 1) + i * 997).toISOString(),
    user_id: maybe(1, i),
    role: maybe(2, s(1)),
    agent_type: maybe(3, s(2)),
    key_id: maybe(4, s(3)),
    action_type: `verb.${s(4)}`,
    category: s(5),
    shape: maybe(5, 'receipt'),
    consent_class: maybe(6, 'WRITE_FINANCIAL'),
    status: 'completed',
    reason: maybe(7, s(6)),
    request_data: {
      [s(7)]: [n(1), s(0), null, true, { z: n(2), a: s(3), é: [] }],
      nested: { b: 1, a: [n(3)] },
    },
    entity_type: maybe(8, s(1)),
    entity_id: maybe(9, String(i)),
    is_reversible: i % 2,
    rollback_handle: maybe(10, s(2)),
    idempotency_key: maybe(11, s(4)),
    transaction_id: maybe(12, s(5)),
    parent_id: maybe(13, i * 7),
    requires_approval: (i + 1) % 2,
    approved_by: maybe(14, i + 3),
    approved_at: maybe(15, s(0)),
    consent: maybe(17, '{"act":"confirmation","at":"' + s(4) + '"}'),
    latency_ms: maybe(16, n(4)),
    prev_hash: 'f'.repeat(64),
  };
}

describe('audit append hot path', () => {
  it('the row material is RFC 8785 canonical JSON of every hashed column, for any values', () => {
    for (let i = 0; i < 200; i++) {
      const r = row(i);
      assert.equal(canonicalAuditMaterial(r), reference(r), `row ${i}`);
    }
  });

  it('the row hash is SHA-256 over the byte 0x00 then the UTF-8 of the canonical row, for any values', () => {
    for (const r of Array.from({ length: 50 }, (_, i) => row(i))) {
      const expected = createHash('sha256')
        .update(Buffer.from([0x00]))
        .update(Buffer.from(reference(r), 'utf8'))
        .digest('hex');
      assert.equal(hashAuditRow(r), expected);
    }
  });

  it('SQLite binds booleans as 0/1, undefined as NULL and named parameters by name', async (t) => {
    const { rt } = await createTestRuntime(t, { engine: 'sqlite' });
    const out = await rt.store.write(async (tx) => {
      await tx.run('CREATE TEMP TABLE bind_probe (a, b, c)');
      await tx.run('INSERT INTO bind_probe (a, b, c) VALUES (?, ?, ?)', [true, undefined, 'x']);
      await tx.run('INSERT INTO bind_probe (a, b, c) VALUES (@a, @b, @c)', [{ a: 2, b: null, c: 'y' }]);
      return tx.all('SELECT a, b, c FROM bind_probe ORDER BY a');
    });
    assert.deepEqual(out, [
      { a: 1, b: null, c: 'x' },
      { a: 2, b: null, c: 'y' },
    ]);
  });

  it('a batch append stores the rows one-by-one appends would, moves each tenant head once, and the chain verifies', async (t) => {
    const a = await createTestRuntime(t, { engine: 'sqlite' });
    const b = await createTestRuntime(t, { engine: 'sqlite' });
    const entries: AuditEntry[] = Array.from({ length: 40 }, (_, i) =>
      auditEntry(
        {
          company_id: i % 3 === 0 ? a.otherCompanyId : a.companyId,
          now: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
          action: `bench.verb_${i % 4}`,
          category: 'test',
          status: 'completed',
          principal: { user_id: 1 + (i % 2), role: 'owner', agent_type: 'test' },
        },
        {
          request_data: { i, text: STRINGS[i % STRINGS.length]! },
          latency_ms: i / 7,
          shape: 'aggregate',
          consent_class: 'READ',
        },
      ),
    );
    await a.rt.auditBuffer.flush();
    await b.rt.auditBuffer.flush();
    const batch = await a.rt.store.write((tx) => appendAuditRows(tx, entries));
    const single = await b.rt.store.write(async (tx) => {
      const out: AuditRow[] = [];
      for (const e of entries) out.push(await appendAudit(tx, e));
      return out;
    });
    // Both runtimes were set up identically, so the rows (ids, seqs, links, hashes) match.
    assert.deepEqual(batch, single);
    for (const r of batch) assert.equal(hashAuditRow(r), r.row_hash);
    const heads = await a.rt.store.read((q) =>
      q.all<{ company_id: number; audit_seq: number; audit_hash: string }>(
        'SELECT company_id, audit_seq, audit_hash FROM tenant_heads ORDER BY company_id',
      ),
    );
    for (const company of [a.companyId, a.otherCompanyId]) {
      const last = batch.filter((r) => r.company_id === company).at(-1)!;
      assert.deepEqual(
        heads.find((h) => Number(h.company_id) === company),
        { company_id: company, audit_seq: last.seq, audit_hash: last.row_hash },
      );
    }
    await a.rt.close();
    const report = await verifyDatabaseFile(a.dbPath);
    assert.equal(report.ok, true, JSON.stringify(report.tenants.flatMap((x) => x.findings).slice(0, 3)));
  });

  it('a batch stores the same rows whether a group of 8 takes the short read INSERT or the full one (either engine)', async (t) => {
    // 8 plain read rows (the short INSERT, NULL/0 written as literals), 8 where one row has an
    // entity, a reason or a flag (the full INSERT for the group), then a tail of 5 one by one.
    const { rt, companyId } = await createTestRuntime(t);
    await rt.auditBuffer.flush();
    const odd: Partial<AuditEntry>[] = [
      { entity_type: 'contact', entity_id: '7' },
      { reason: 'not_found' },
      { is_reversible: 1 },
      { requires_approval: 1 },
      { idempotency_key: 'k1', transaction_id: 'tx1' },
    ];
    const entries: AuditEntry[] = Array.from({ length: 21 }, (_, i) =>
      auditEntry(
        {
          company_id: companyId,
          now: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
          action: 'bench.search',
          category: 'test',
          status: 'completed',
          principal: { user_id: 1, role: 'owner', agent_type: 'test', key_id: 'key_1' },
        },
        {
          request_data: { q: STRINGS[i % STRINGS.length]! },
          latency_ms: i / 7,
          shape: 'aggregate',
          ...(i === 11 ? odd[0] : i >= 17 ? odd[i % odd.length] : {}),
        },
      ),
    );
    const rows = await rt.store.write((tx) => appendAuditRows(tx, entries));
    for (const r of rows) {
      const stored = await rt.store.read((q) => getAuditRow(q, companyId, r.audit_id));
      assert.deepEqual(stored, r, `seq ${r.seq}`);
      assert.equal(hashAuditRow(stored!), r.row_hash);
    }
    for (let i = 1; i < rows.length; i++) assert.equal(rows[i]!.prev_hash, rows[i - 1]!.row_hash);
    assert.equal(rows[11]!.entity_type, 'contact');
    assert.equal(rows[0]!.entity_type, null);
    assert.equal(rows[0]!.is_reversible, 0);
  });

  it('the SQLite writer keeps statement journals in memory once migrated (no temp-file pwrites per INSERT)', async (t) => {
    const { rt } = await createTestRuntime(t, { engine: 'sqlite' });
    const store = rt.store as unknown as { rawDatabase: { pragma(p: string, o: { simple: true }): unknown } };
    // 2 = MEMORY: a multi-row INSERT's statement journal never spills to /var/tmp.
    assert.equal(store.rawDatabase.pragma('temp_store', { simple: true }), 2);
  });
});
