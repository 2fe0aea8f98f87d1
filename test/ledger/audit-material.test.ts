/**
 * The flat fast path of a row's request_data text (src/runtime/ledger/audit.ts canonicalFlat) is
 * exactly RFC 8785 (canonicalize) for every flat object it accepts, and declines everything the
 * general path must handle. Spec: spec/audit.md §chain.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import canonicalize from 'canonicalize';
import { canonicalFlat } from '../../src/runtime/ledger/audit.ts';

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
