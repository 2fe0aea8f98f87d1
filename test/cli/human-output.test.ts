/**
 * Human output of the CLI (without --json): objects as aligned key/value blocks, lists of objects
 * as tables, receipts as a summary with the revert command (only when the action can be undone),
 * long output through the pager only when stdout is a terminal; --json is unchanged.
 * Spec: spec/transports.md §cli-output.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { spawnSync } from 'node:child_process';
import { createPager, objectTable, renderOk, renderValue } from '../../src/transports/cli/human-output.ts';
import { printEnvelope, type Io } from '../../src/transports/cli/output.ts';
import type { Envelope } from '../../src/spec/types.ts';

test('objects print as aligned key/value lines, nested objects indented, lists of objects as tables', () => {
  const text = renderValue({
    name: 'Franey Auto Repair',
    open_deals: 2,
    tags: ['vip', 'commercial'],
    address: { city: 'Draper', region: 'UT' },
    deals: [
      { id: 76, title: 'Bathroom rough-in', amount_cents: 42000 },
      { id: 49, title: 'Kitchen remodel plumbing', amount_cents: 85000, stage: 'proposal_sent' },
    ],
    notes: [],
    erased_at: null,
  });
  assert.equal(
    text,
    [
      'name        Franey Auto Repair',
      'open_deals  2',
      'tags        vip, commercial',
      'address:',
      '  city    Draper',
      '  region  UT',
      'deals (2):',
      '  ID  TITLE                     AMOUNT_CENTS  STAGE',
      '  --  ------------------------  ------------  -------------',
      '  76  Bathroom rough-in         42000         —',
      '  49  Kitchen remodel plumbing  85000         proposal_sent',
      'notes       (none)',
      'erased_at   —',
    ].join('\n'),
  );
});

test('table cells are cut at 48 characters and tables keep at most 8 columns', () => {
  const row = Object.fromEntries(
    Array.from({ length: 10 }, (_, i) => [`c${i}`, i === 0 ? 'x'.repeat(80) : i]),
  );
  const [head, , first] = objectTable([row]).split('\n');
  assert.equal(head!.split(/\s{2,}/).length, 8);
  assert.match(first!, /^x{47}… /);
});

test('a receipt prints a summary line, its fields, and the revert command only when it can be undone', () => {
  const receipt: Envelope = {
    ok: true,
    verb: 'deals_create',
    audit_id: 91,
    idempotency_key: 'k-1',
    rollback_handle: 'rb1.sealed',
    result: {
      status: 'created',
      deal_id: 121,
      audit_id: 91,
      timestamp: '2026-05-23T14:00:00.000Z',
      rollback_handle: 'rb1.sealed',
      idempotency_key: 'k-1',
      attestation: { kid: 'k2-1', alg: 'ES256' },
    },
  };
  assert.equal(
    renderOk(receipt),
    [
      '✓ deals_create · created · audit_id 91 · signed receipt (k2-1)',
      '  deal_id  121',
      '  at 2026-05-23T14:00:00.000Z · idempotency key k-1',
      `undo: solid agent dispatch audit.revert --args '{"audit_id":91}' --confirm`,
    ].join('\n'),
  );
  const charge: Envelope = {
    ok: true,
    verb: 'charge_invoice',
    audit_id: 92,
    result: { status: 'captured', payment_id: 7, audit_id: 92 },
  };
  assert.match(renderOk(charge), /\nnot revertible: there is no automatic undo for this action$/);
  assert.equal(
    renderOk({ ok: true, verb: 'x', replayed: true, result: {} }),
    '✓ x (replayed: the original result of this idempotency key)',
  );
});

test('long output goes through the pager only when stdout is a terminal; --json never does', () => {
  const calls: { cmd: string; input: string }[] = [];
  const spawn = ((_sh: string, args: string[], options: { input: string }) => {
    calls.push({ cmd: args[1]!, input: options.input });
    return { status: 0, error: undefined };
  }) as unknown as typeof spawnSync;
  const long = Array.from({ length: 50 }, (_, i) => `line ${i}`).join('\n');
  assert.equal(createPager({ isTTY: false, rows: 24, spawn })(long), false, 'not a terminal: print');
  assert.equal(createPager({ isTTY: true, rows: 60, spawn })(long), false, 'fits on the screen: print');
  assert.equal(createPager({ isTTY: true, rows: 24, pager: 'cat', spawn })(long), false);
  assert.equal(createPager({ isTTY: true, rows: 24, spawn })(long), true);
  assert.equal(createPager({ isTTY: true, rows: 24, pager: 'more', spawn })(long), true);
  assert.deepEqual(
    calls.map((c) => c.cmd),
    ['less -FRX', 'more'],
  );
  assert.equal(calls[0]!.input, `${long}\n`);
  const missing = (() => ({ status: 127, error: undefined })) as unknown as typeof spawnSync;
  assert.equal(
    createPager({ isTTY: true, rows: 24, pager: 'no-such-pager', spawn: missing })(long),
    false,
    'a pager that cannot start: print',
  );

  const paged: string[] = [];
  const out: string[] = [];
  const io: Io = {
    out: (s) => out.push(s),
    err: () => {},
    isTTY: true,
    page: (text) => (paged.push(text), true),
  };
  const env: Envelope = {
    ok: true,
    verb: 'crm_contacts_search',
    result: { items: Array.from({ length: 40 }, (_, i) => ({ id: i, name: `c${i}` })) },
  };
  assert.equal(printEnvelope(io, env, false), 0);
  assert.equal(paged.length, 1);
  assert.equal(out.length, 0);
  assert.equal(printEnvelope(io, env, true), 0);
  assert.equal(paged.length, 1, '--json is never paged');
  assert.deepEqual(JSON.parse(out[0]!), env);
});
