/**
 * Test verbs for the observe-and-learn suites: a per-tenant counter table (test migration) and
 * verbs over it — counter.bump (a write with no gate at its level, emits counter.bumped, can be
 * told to fail after writing so its transaction rolls back), counter.get (READ), counter.charge
 * (WRITE_FINANCIAL: typed-phrase gate), counter.touch (WRITE_REVERSIBLE: confirmation gate).
 */
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createTestRuntime, type TestRuntime } from './runtime.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { VerbError } from '../../src/runtime/errors.ts';
import type { Envelope, Principal, Role } from '../../src/spec/types.ts';
import type { RuntimeOptions } from '../../src/runtime/options.ts';
import { validateShapeOutput } from '../../src/spec/validators.ts';
import { packReason } from '../../src/spec/reasons.ts';

export const counterVerbs = [
  defineVerb<{ name: string; by?: number; fail?: boolean }>({
    name: 'counter.bump',
    description: 'Add to a named counter.',
    shape: 'receipt',
    category: 'test',
    input: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1 },
        by: { type: 'integer' },
        fail: { type: 'boolean' },
      },
      required: ['name'],
      additionalProperties: false,
    },
    delegateConsent: async () => ({ consentClass: null, roleFloor: 'employee', summary: 'Bump a counter.' }),
    async handler(ctx, args) {
      const row = await ctx.db.get<{ value: number }>(
        `INSERT INTO counters (company_id, name, value) VALUES (?, ?, ?)
         ON CONFLICT (company_id, name) DO UPDATE SET value = counters.value + excluded.value RETURNING value`,
        [ctx.principal.company_id, args.name, args.by ?? 1],
      );
      const value = Number(row!.value);
      ctx.setEntity('counter', args.name);
      ctx.emit({
        type: 'counter.bumped',
        entity_type: 'counter',
        entity_id: args.name,
        payload: { by: args.by ?? 1, state: { value } },
      });
      if (args.fail === true)
        throw new VerbError(packReason('bump_refused'), 'This bump was told to fail after writing.');
      return { name: args.name, value };
    },
  }),
  defineVerb<{ name: string }>({
    name: 'counter.get',
    description: 'Read a named counter.',
    shape: 'aggregate',
    category: 'test',
    input: {
      type: 'object',
      properties: { name: { type: 'string', minLength: 1 } },
      required: ['name'],
      additionalProperties: false,
    },
    async handler(ctx, args) {
      const row = await ctx.db.get<{ value: number }>(
        'SELECT value FROM counters WHERE company_id = ? AND name = ?',
        [ctx.principal.company_id, args.name],
      );
      return { entity_id: args.name, data: { value: row === undefined ? 0 : Number(row.value) } };
    },
  }),
  defineVerb<{ name: string; amount: number }>({
    name: 'counter.charge',
    description: 'Charge an amount (cents) to a counter.',
    shape: 'receipt',
    category: 'test',
    consent: 'WRITE_FINANCIAL',
    phrase: (a) => `CHARGE ${a.amount} to ${a.name}`,
    input: {
      type: 'object',
      properties: { name: { type: 'string', minLength: 1 }, amount: { type: 'integer', minimum: 1 } },
      required: ['name', 'amount'],
      additionalProperties: false,
    },
    async handler(ctx, args) {
      await ctx.db.run(
        `INSERT INTO counters (company_id, name, value) VALUES (?, ?, ?)
         ON CONFLICT (company_id, name) DO UPDATE SET value = counters.value + excluded.value`,
        [ctx.principal.company_id, args.name, args.amount],
      );
      ctx.emit({
        type: 'counter.charged',
        entity_type: 'counter',
        entity_id: args.name,
        payload: { amount: args.amount },
      });
      return { name: args.name, charged: args.amount };
    },
  }),
  defineVerb<{ name: string }>({
    name: 'counter.touch',
    description: 'Touch a counter (confirmation gate).',
    shape: 'receipt',
    category: 'test',
    consent: 'WRITE_REVERSIBLE',
    input: {
      type: 'object',
      properties: { name: { type: 'string', minLength: 1 } },
      required: ['name'],
      additionalProperties: false,
    },
    async handler(ctx, args) {
      ctx.emit({ type: 'counter.touched', entity_type: 'counter', entity_id: args.name });
      return { name: args.name };
    },
  }),
];

/** A test runtime with the counter table and verbs. */
export async function createObserveRuntime(
  t: TestContext | undefined,
  options: Partial<RuntimeOptions> = {},
): Promise<TestRuntime> {
  const h = await createTestRuntime(t, options);
  await h.rt.store.migrate('observe-test', [
    {
      version: 1,
      name: 'counters',
      sqlite:
        'CREATE TABLE counters (company_id INTEGER NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL, PRIMARY KEY (company_id, name))',
      postgres:
        'CREATE TABLE counters (company_id BIGINT NOT NULL, name TEXT NOT NULL, value BIGINT NOT NULL, PRIMARY KEY (company_id, name))',
    },
  ]);
  h.rt.register(...counterVerbs);
  return h;
}

/** Dispatch as a role of the main tenant (or another principal) over HTTP. */
export function call(
  h: TestRuntime,
  who: Role | Principal,
  verb: string,
  args?: unknown,
  options?: Record<string, unknown>,
): Promise<Envelope> {
  const principal = typeof who === 'string' ? h.principal(who) : who;
  return h.rt.dispatch({ principal, surface: 'http' }, verb, args, options);
}

/** Assert ok and that the result matches its shape's schema; returns the result. */
export function okResult(env: Envelope, shape: string): Record<string, unknown> {
  assert.equal(env.ok, true, `expected ok, got ${JSON.stringify(env.error)}`);
  const v = validateShapeOutput(shape, env.result);
  assert.deepEqual(v.errors, [], `${shape} output invalid`);
  return env.result!;
}

/** Assert a refusal with this reason; returns the error. */
export function refused(env: Envelope, reason: string): NonNullable<Envelope['error']> {
  assert.equal(env.ok, false, `expected ${reason}, got ok`);
  assert.equal(
    env.error?.reason,
    reason,
    `expected ${reason}, got ${env.error?.reason}: ${env.error?.message}`,
  );
  return env.error!;
}
