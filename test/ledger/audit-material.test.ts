/**
 * The flat fast path of a row's request_data text (src/runtime/ledger/write/audit.ts canonicalFlat) is
 * exactly RFC 8785 (canonicalize) for every flat object it accepts, and declines everything the
 * general path must handle; the quoting of column strings (jsonString) and the whole row material
 * (canonicalAuditMaterial) are byte-identical to canonicalize for arbitrary strings (lone
 * surrogates, quotes, control characters, U+2028 included). Spec: spec/audit.md §chain.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import {
  AUDIT_COLUMNS,
  canonicalAuditMaterial,
  canonicalFlat,
  jsonString,
  wellFormedText,
  type AuditRow,
} from '../../src/runtime/ledger/write/audit.ts';

/** Strings of any UTF-16 code units, weighted towards what JSON escapes or leaves as is by a hair. */
const anyString = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({
    unit: fc.constantFrom(
      'a',
      'Z',
      ' ',
      '"',
      '\\',
      '/',
      '\u0000',
      '\u001f',
      '\u007f',
      '\u2028',
      '\u2029',
      '\ud800',
      '\udfff',
      '\ud83d',
      '\ude00',
      'é',
      '\uffff',
    ),
  }),
  fc.string(),
);

const KEYS = [
  'a',
  'b',
  'Z',
  '',
  'é',
  'z',
  '\uffff',
  '😀',
  'key "quoted"',
  'line\nbreak',
  '10',
  '9',
  '\u0001',
];
const VALUES: unknown[] = [
  '',
  'plain',
  'quote " and \\ backslash',
  '\u0000\u001f control',
  '\u2028\u2029 separators',
  'ünïcödé ✓ 🎉',
  0,
  -0,
  1.5e-7,
  123456789.125,
  2 ** 53 - 1,
  1e21,
  -3.14159,
  true,
  false,
  null,
  undefined,
];

describe('canonicalFlat', () => {
  it('equals canonicalize for flat objects of strings, finite numbers, booleans and null', () => {
    for (let i = 0; i < 400; i++) {
      const o: Record<string, unknown> = {};
      const n = i % 7;
      for (let k = 0; k < n; k++)
        o[KEYS[(i * 3 + k * 5) % KEYS.length]!] = VALUES[(i + k * 7) % VALUES.length];
      assert.equal(canonicalFlat(o), canonicalize(o), JSON.stringify(o));
    }
  });

  it('declines what the general path handles: nesting, lone surrogates, non-finite numbers, other objects', () => {
    class Box {
      a = 1;
    }
    const declined: unknown[] = [
      { a: { b: 1 } },
      { a: [1] },
      { a: '\ud800' },
      { '\udc00': 1 },
      { a: Number.NaN },
      { a: Infinity },
      { a: 1n },
      { toJSON: () => 1 },
      new Box(),
      Object.create(null) as object,
      [1, 2],
      'text',
      null,
    ];
    declined.forEach((o, i) => assert.equal(canonicalFlat(o), undefined, `case ${i}`));
  });
});

describe('jsonString and the row material', () => {
  it('jsonString(s) is JSON.stringify(s), byte for byte, for any string', () => {
    fc.assert(
      fc.property(anyString, (s) => {
        assert.equal(jsonString(s), JSON.stringify(s));
      }),
      { numRuns: 3000 },
    );
  });

  it('canonicalFlat equals canonicalize for flat objects of arbitrary keys and strings it accepts', () => {
    fc.assert(
      fc.property(
        fc.dictionary(anyString, fc.oneof(anyString, fc.double(), fc.boolean(), fc.constant(null))),
        (o) => {
          const flat = canonicalFlat(o);
          if (flat !== undefined) assert.equal(flat, canonicalize(o));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('canonicalAuditMaterial equals canonicalize of the hashed columns for arbitrary column strings', () => {
    const hashed = AUDIT_COLUMNS.filter((c) => c !== 'row_hash');
    // RFC 8785 has no form for a lone surrogate (canonicalize refuses one): a row never holds one,
    // buildRow stores text through wellFormedText first.
    const wellFormed = anyString.map((x) => wellFormedText(x));
    const text = fc.option(wellFormed, { nil: null });
    fc.assert(
      fc.property(
        fc.record({
          role: text,
          agent_type: text,
          key_id: text,
          action_type: wellFormed,
          category: wellFormed,
          shape: text,
          consent_class: text,
          status: wellFormed,
          reason: text,
          entity_type: text,
          entity_id: text,
          rollback_handle: text,
          idempotency_key: text,
          transaction_id: text,
          approved_at: text,
          created_at: wellFormed,
          prev_hash: wellFormed,
          latency_ms: fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }), { nil: null }),
          q: wellFormed,
        }),
        (v) => {
          const row = {
            audit_id: 7,
            company_id: 2,
            seq: 3,
            user_id: null,
            is_reversible: 0,
            parent_id: null,
            requires_approval: 1,
            approved_by: 4,
            ...v,
            request_data: { q: v.q },
          } as unknown as Omit<AuditRow, 'row_hash'>;
          const src = row as unknown as Record<string, unknown>;
          const reference = canonicalize(Object.fromEntries(hashed.map((c) => [c, src[c] ?? null])));
          assert.equal(canonicalAuditMaterial(row), reference);
        },
      ),
      { numRuns: 500 },
    );
  });
});
