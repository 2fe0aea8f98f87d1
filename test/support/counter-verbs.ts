/**
 * Small verbs for the ledger tests: named counters per tenant (a test migration), with revert
 * handlers, a financial variant, an irreversible one (no revert handler), a failing switch, and an
 * outbox side effect. Plus `consented()`: the pending → confirm round trip a human would do.
 */
import type { TestContext } from 'node:test';
import { createTestRuntime, type TestRuntime, type TestRuntimeOptions } from './runtime.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { VerbError } from '../../src/runtime/errors.ts';
import type { DispatchOptions } from '../../src/runtime/core.ts';
import type { Envelope } from '../../src/spec/types.ts';
import { packReason } from '../../src/spec/reasons.ts';
import { dispatchAs } from './keyed.ts';

type AddArgs = { name: string; by: number; fail?: boolean; notify?: boolean };

/** Add `by` to counter `name` of the caller's tenant (creating it). */
export async function bump(
  ctx: { db: { run: (sql: string, p: unknown[]) => Promise<unknown> }; principal: { company_id: number } },
  name: string,
  by: number,
): Promise<void> {
  await ctx.db.run(
    `INSERT INTO counters (company_id, name, value, changes) VALUES (?, ?, ?, 1)
     ON CONFLICT (company_id, name) DO UPDATE SET value = counters.value + excluded.value, changes = counters.changes + 1`,
    [ctx.principal.company_id, name, by],
  );
}

export const counterAdd = defineVerb<AddArgs>({
  name: 'counter.add',
  description: 'Add to a named counter.',
  shape: 'receipt',
  category: 'test',
  consent: 'WRITE_REVERSIBLE',
  input: {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 1 },
      by: { type: 'integer' },
      fail: { type: 'boolean' },
      notify: { type: 'boolean' },
    },
    required: ['name', 'by'],
    additionalProperties: false,
  },
  summary: (a) => `Add ${a.by} to counter ${a.name}.`,
  async handler(ctx, a) {
    await bump(ctx, a.name, a.by);
    const locked = await ctx.db.get('SELECT 1 FROM counter_locks WHERE company_id = ? AND name = ?', [
      ctx.principal.company_id,
      a.name,
    ]);
    if (a.fail || locked !== undefined)
      throw new VerbError(packReason('counter_broken'), `Counter ${a.name} refused the change.`);
    ctx.setRollback(`counter:add:${a.name}:${a.by}`, { name: a.name, by: a.by });
    ctx.setEntity('counter', a.name);
    ctx.emit({ type: 'counter.changed', entity_type: 'counter', entity_id: a.name, payload: { by: a.by } });
    if (a.notify) ctx.outbox('counter.notify', { name: a.name, by: a.by });
    return { counter: a.name, added: a.by };
  },
  revert: {
    async handler(ctx, original) {
      const { name, by } = original.rollback as { name: string; by: number };
      if (name.startsWith('stuck'))
        throw new VerbError(packReason('counter_stuck'), `Counter ${name} cannot go back.`);
      await bump(ctx, name, -by);
      return { revert_action: `subtracted ${by} from ${name}` };
    },
  },
});

export const counterCharge = defineVerb<{ name: string; cents: number }>({
  name: 'counter.charge',
  description: 'Charge cents to a named counter (financial).',
  shape: 'receipt',
  category: 'payments',
  consent: 'WRITE_FINANCIAL',
  money_flow: 'in',
  input: {
    type: 'object',
    properties: { name: { type: 'string', minLength: 1 }, cents: { type: 'integer', minimum: 1 } },
    required: ['name', 'cents'],
    additionalProperties: false,
  },
  phrase: (a) => `CHARGE ${a.cents} cents to ${a.name}`,
  async handler(ctx, a) {
    await bump(ctx, a.name, a.cents);
    ctx.setRollback(`counter:charge:${a.name}:${a.cents}`, { name: a.name, cents: a.cents });
    return { counter: a.name, charged_cents: a.cents };
  },
  revert: {
    async handler(ctx, original) {
      const { name, cents } = original.rollback as { name: string; cents: number };
      await bump(ctx, name, -cents);
      return { revert_action: `refunded ${cents} cents to ${name}` };
    },
  },
});

/** Irreversible in practice: sends a message (outbox), declares no revert handler. */
export const counterEmail = defineVerb<{ name: string }>({
  name: 'counter.email',
  description: 'Email the value of a counter (cannot be undone).',
  shape: 'receipt',
  category: 'test',
  consent: 'WRITE_REVERSIBLE',
  input: {
    type: 'object',
    properties: { name: { type: 'string', minLength: 1 } },
    required: ['name'],
    additionalProperties: false,
  },
  async handler(ctx, a) {
    await bump(ctx, `emails:${a.name}`, 1);
    ctx.outbox('counter.email', { name: a.name });
    return { emailed: a.name };
  },
});

export const counterGet = defineVerb<{ name: string }>({
  name: 'counter.get',
  description: 'Read a counter.',
  shape: 'aggregate',
  category: 'test',
  input: {
    type: 'object',
    properties: { name: { type: 'string' } },
    required: ['name'],
    additionalProperties: false,
  },
  async handler(ctx, a) {
    const r = await ctx.db.get<{ value: number }>(
      'SELECT value FROM counters WHERE company_id = ? AND name = ?',
      [ctx.principal.company_id, a.name],
    );
    return { entity_id: a.name, data: { value: r?.value ?? 0 } };
  },
});

export const COUNTER_VERBS = [counterAdd, counterCharge, counterEmail, counterGet];

/** A test runtime with the counter table and verbs. */
export async function counterRuntime(t: TestContext, options: TestRuntimeOptions = {}): Promise<TestRuntime> {
  const h = await createTestRuntime(t, options);
  await h.rt.store.migrate('ledger-test', [
    {
      version: 1,
      name: 'counters',
      sqlite: `CREATE TABLE counters (company_id INTEGER NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL, changes INTEGER NOT NULL, PRIMARY KEY (company_id, name));
               CREATE TABLE counter_locks (company_id INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (company_id, name));`,
      postgres: `CREATE TABLE counters (company_id BIGINT NOT NULL, name TEXT NOT NULL, value BIGINT NOT NULL, changes BIGINT NOT NULL, PRIMARY KEY (company_id, name));
               CREATE TABLE counter_locks (company_id BIGINT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (company_id, name));`,
    },
  ]);
  h.rt.register(...COUNTER_VERBS);
  return h;
}

/** Counter value and the number of times it was changed (the effect count). */
export async function counter(
  h: TestRuntime,
  name: string,
  companyId = h.companyId,
): Promise<{ value: number; changes: number }> {
  const r = await h.rt.store.read((q) =>
    q.get<{ value: number; changes: number }>(
      'SELECT value, changes FROM counters WHERE company_id = ? AND name = ?',
      [companyId, name],
    ),
  );
  return { value: Number(r?.value ?? 0), changes: Number(r?.changes ?? 0) };
}

/**
 * Dispatch with the consent round trip: call, and if the answer is dispatch_pending, confirm with
 * its nonce (typing the phrase shown unless `phrase` overrides it).
 */
export async function consented(
  h: TestRuntime,
  key: string,
  verb: string,
  args: unknown,
  options: DispatchOptions & { phrase?: string } = {},
): Promise<Envelope> {
  const caller = { surface: 'cli' as const, apiKey: key };
  const { phrase, ...base } = options;
  const first = await dispatchAs(h.rt, caller, verb, args, base);
  if (first.ok || first.error?.reason !== 'dispatch_pending' || first.consent === undefined) return first;
  return dispatchAs(h.rt, caller, verb, args, {
    ...base,
    confirm: true,
    nonce: first.consent.nonce,
    ...(first.consent.gate === 'typed_phrase' ? { typed_phrase: phrase ?? first.consent.typed_phrase } : {}),
  });
}

/** Make counter.add on `name` fail (counter_broken) until unlocked. */
export async function lockCounter(h: TestRuntime, name: string, locked: boolean): Promise<void> {
  await h.rt.store.write((tx) =>
    locked
      ? tx.run('INSERT INTO counter_locks (company_id, name) VALUES (?, ?)', [h.companyId, name])
      : tx.run('DELETE FROM counter_locks WHERE company_id = ? AND name = ?', [h.companyId, name]),
  );
}

/** A fresh pending answer's nonce (and phrase) for a later confirm. */
export async function pendingNonce(
  h: TestRuntime,
  key: string,
  verb: string,
  args: unknown,
): Promise<{ nonce: string; phrase?: string; envelope: Envelope }> {
  const env = await dispatchAs(h.rt, { surface: 'cli', apiKey: key }, verb, args);
  if (env.ok || env.consent === undefined)
    throw new Error(`expected dispatch_pending, got ${JSON.stringify(env.error ?? env.result)}`);
  return {
    nonce: env.consent.nonce,
    ...(env.consent.typed_phrase !== undefined ? { phrase: env.consent.typed_phrase } : {}),
    envelope: env,
  };
}
