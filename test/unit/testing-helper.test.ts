/**
 * `solid-verbs/testing`: createTestBusiness opens a pack's test business, `call` consents as a
 * human (nonce and typed phrase), denials stay envelopes, outputs are validated, the audit verifies.
 * Spec: spec/manifest.md §packs, spec/consent.md §protocol.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestBusiness } from '../../src/testing.ts';
import { definePack, PackError, type Pack } from '../../src/runtime/pack.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { formatCents } from '../../src/runtime/consent/typed-phrase.ts';

function till(options: { badOutput?: boolean } = {}): Pack {
  return definePack({
    name: 'till',
    description: 'A shop till: a balance in cents.',
    migrations: [
      {
        version: 1,
        name: 'balance',
        sqlite: 'CREATE TABLE till_balance (company_id INTEGER PRIMARY KEY, cents INTEGER NOT NULL)',
      },
    ],
    verbs: [
      defineVerb({
        name: 'till.balance',
        description: 'The balance of the till, in cents.',
        shape: 'aggregate',
        category: 'till',
        input: { type: 'object', properties: {}, additionalProperties: false },
        async handler(ctx) {
          const row = await ctx.db.get<{ cents: number }>(
            'SELECT cents FROM till_balance WHERE company_id = ?',
            [ctx.principal.company_id],
          );
          const data = { cents: Number(row?.cents ?? 0) };
          return options.badOutput
            ? { data }
            : { entity_type: 'till', entity_id: ctx.principal.company_id, data };
        },
      }),
      defineVerb<{ cents: number }>({
        name: 'till.pay_out',
        description: 'Pay cash out of the till.',
        shape: 'receipt',
        category: 'till',
        consent: 'WRITE_FINANCIAL',
        input: {
          type: 'object',
          properties: { cents: { type: 'integer', minimum: 1 } },
          required: ['cents'],
          additionalProperties: false,
        },
        phrase: (args) => `PAY OUT ${formatCents(args.cents)}`,
        async handler(ctx, args) {
          await ctx.db.run(
            `INSERT INTO till_balance (company_id, cents) VALUES (?, ?)
             ON CONFLICT (company_id) DO UPDATE SET cents = cents + excluded.cents`,
            [ctx.principal.company_id, -args.cents],
          );
          return { entity_type: 'till', entity_id: ctx.principal.company_id, data: { paid_out: args.cents } };
        },
      }),
    ],
  });
}

test('call confirms a typed-phrase write as a human would; dispatch shows the pending step', async (t) => {
  const shop = await createTestBusiness({ packs: [till()] });
  t.after(() => shop.close());
  const pending = await shop.dispatch('till.pay_out', { cents: 1250 });
  assert.equal(pending.error?.reason, 'dispatch_pending');
  assert.equal(pending.consent?.gate, 'typed_phrase');
  const paid = await shop.call('till.pay_out', { cents: 1250 });
  assert.equal(paid.ok, true, JSON.stringify(paid));
  assert.equal(typeof paid.audit_id, 'number');
  const balance = await shop.call('till.balance', {}, { role: 'read_only' });
  assert.deepEqual((balance.result as { data: unknown }).data, { cents: -1250 });
  const report = await shop.verifyAudit();
  assert.equal(report.ok, true, JSON.stringify(report));
  assert.ok(report.rows_checked >= 3, `${report.rows_checked} rows`);
});

test('denials are envelopes: a role below the floor, bad input, and consent: false', async (t) => {
  const shop = await createTestBusiness({ packs: [till()] });
  t.after(() => shop.close());
  assert.equal(
    (await shop.call('till.pay_out', { cents: 5 }, { role: 'employee' })).error?.reason,
    'role_denied',
  );
  assert.equal((await shop.call('till.pay_out', { cents: -5 })).error?.reason, 'invalid_input');
  const held = await shop.call('till.pay_out', { cents: 5 }, { consent: false });
  assert.equal(held.error?.reason, 'dispatch_pending');
});

test('an output that breaks its shape schema fails in the test, not at an MCP client', async (t) => {
  const shop = await createTestBusiness({ packs: [till({ badOutput: true })] });
  t.after(() => shop.close());
  const env = await shop.call('till.balance');
  assert.equal(env.ok, false);
  assert.equal(env.error?.reason, 'internal_error');
});

test('a bad pack is refused before anything opens', async () => {
  const pack = { ...till(), verbs: [{ ...till().verbs[0]!, name: 'audit.trail' }] };
  await assert.rejects(
    createTestBusiness({ packs: [pack] }),
    (err: unknown) => err instanceof PackError && /already served by the runtime/.test(err.message),
  );
});
