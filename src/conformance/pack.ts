/**
 * The conformance test pack: three small verbs over a table of its own, so a conformance run
 * (`solid conformance <url> --allow-writes`) can exercise receipts, idempotency, revert and both
 * consent gates without touching a business's data. `solid serve --demo` enables it, and
 * `solid serve --conformance-pack` enables it on any database (the database remembers it, like
 * every pack, so `solid mcp` on the same database serves the same verbs). The HTTP mount in
 * ./declaration-plugin.ts publishes the declaration that names these verbs as test-safe.
 *
 * - `conformance.counter_get` (READ, aggregate): the value of a named counter of the caller's tenant;
 * - `conformance.counter_add` (WRITE_REVERSIBLE, receipt, revertible): add `by` (1..1000) to a
 *   counter; `hold_ms` (0..2000) keeps the write open that long, so a repeat with the same
 *   idempotency key can be seen in flight (409 idempotency_key_in_use);
 * - `conformance.counter_set` (WRITE_FINANCIAL, receipt, revertible): set a counter, behind the
 *   typed phrase `SET CONFORMANCE COUNTER <counter> TO <value>`.
 *
 * The writes are `cap_exempt`: repeated conformance runs never use up a tenant's daily caps (they
 * change nothing but these counters). They keep every other rule: role floors (employee for add,
 * admin for set), gates, nonces, idempotency, audit rows.
 *
 * Spec: spec/conformance.md §test-pack.
 */
import type { Pack } from '../runtime/pack.ts';
import { VerbError } from '../runtime/errors.ts';
import { defineVerb, type VerbContext } from '../runtime/verb.ts';
import type { Queryable } from '../store/store.ts';

/** Migration scope and pack name. */
export const CONFORMANCE_PACK_NAME = 'conformance';

/** The names of the pack's verbs. */
export const CONFORMANCE_VERBS = {
  get: 'conformance.counter_get',
  add: 'conformance.counter_add',
  set: 'conformance.counter_set',
} as const;

/** Longest hold a caller may ask for (ms): bounds how long one call can keep a write open. */
export const MAX_HOLD_MS = 2000;

const COUNTER = {
  type: 'string',
  pattern: '^[a-z0-9][a-z0-9_-]{0,63}$',
  description: 'Name of the counter (lower-case letters, digits, _ and -; up to 64 characters).',
} as const;

async function counterRow(
  db: Queryable,
  companyId: number,
  counter: string,
): Promise<{ value: number; changes: number }> {
  const row = await db.get<{ value: number | string; changes: number | string }>(
    'SELECT value, changes FROM conformance_counters WHERE company_id = ? AND counter = ?',
    [companyId, counter],
  );
  return { value: Number(row?.value ?? 0), changes: Number(row?.changes ?? 0) };
}

/** Write `value` to the counter (created when missing); counts the change. */
async function writeCounter(ctx: VerbContext, counter: string, value: number): Promise<void> {
  await ctx.db.run(
    `INSERT INTO conformance_counters (company_id, counter, value, changes) VALUES (?, ?, ?, 1)
     ON CONFLICT (company_id, counter) DO UPDATE SET value = excluded.value, changes = conformance_counters.changes + 1`,
    [ctx.principal.company_id, counter, value],
  );
  ctx.setEntity('conformance_counter', counter);
}

function hold(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new VerbError('cancelled', 'The call was cancelled while it was held open.'));
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

export const counterGet = defineVerb<{ counter: string }>({
  name: CONFORMANCE_VERBS.get,
  title: 'Read a conformance counter',
  description:
    'Conformance test pack: the value of a named test counter of your tenant (0 when it was never written), and how many writes changed it. It touches no business data.',
  shape: 'aggregate',
  category: 'conformance',
  input: {
    type: 'object',
    properties: { counter: COUNTER },
    required: ['counter'],
    additionalProperties: false,
  },
  async handler(ctx, a) {
    const { value, changes } = await counterRow(ctx.db, ctx.principal.company_id, a.counter);
    return {
      entity_id: a.counter,
      entity_type: 'conformance_counter',
      data: { counter: a.counter, value, changes },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export const counterAdd = defineVerb<{ counter: string; by: number; hold_ms?: number }>({
  name: CONFORMANCE_VERBS.add,
  title: 'Add to a conformance counter',
  description:
    'Conformance test pack: add `by` to a named test counter of your tenant (a reversible write behind a confirmation). `hold_ms` keeps the write open that many milliseconds (at most 2000), so a repeated call can be observed while it runs. It touches no business data; audit.revert subtracts it again.',
  shape: 'receipt',
  category: 'conformance',
  consent: 'WRITE_REVERSIBLE',
  cap_exempt: true,
  input: {
    type: 'object',
    properties: {
      counter: COUNTER,
      by: { type: 'integer', minimum: 1, maximum: 1000, description: 'How much to add.' },
      hold_ms: {
        type: 'integer',
        minimum: 0,
        maximum: MAX_HOLD_MS,
        description: 'Keep the write open this long (ms) before it commits; default 0.',
      },
    },
    required: ['counter', 'by'],
    additionalProperties: false,
  },
  summary: (a) => `Add ${a.by} to the conformance counter ${a.counter}.`,
  async handler(ctx, a) {
    const before = await counterRow(ctx.db, ctx.principal.company_id, a.counter);
    await writeCounter(ctx, a.counter, before.value + a.by);
    await hold(a.hold_ms ?? 0, ctx.signal);
    ctx.setRollback(`conformance:add:${a.counter}:${a.by}`, { counter: a.counter, by: a.by });
    return { counter: a.counter, previous_value: before.value, value: before.value + a.by };
  },
  revert: {
    async handler(ctx, original) {
      const { counter, by } = original.rollback as { counter: string; by: number };
      const now = await counterRow(ctx.db, ctx.principal.company_id, counter);
      await writeCounter(ctx, counter, now.value - by);
      return { revert_action: `subtracted ${by} from the conformance counter ${counter}` };
    },
  },
});

export const counterSet = defineVerb<{ counter: string; value: number }>({
  name: CONFORMANCE_VERBS.set,
  title: 'Set a conformance counter',
  description:
    'Conformance test pack: set a named test counter of your tenant to `value`, behind a typed phrase (class WRITE_FINANCIAL, though no money moves). It touches no business data; audit.revert restores the previous value.',
  shape: 'receipt',
  category: 'conformance',
  consent: 'WRITE_FINANCIAL',
  cap_exempt: true,
  input: {
    type: 'object',
    properties: {
      counter: COUNTER,
      value: { type: 'integer', minimum: 0, maximum: 1_000_000, description: 'The new value.' },
    },
    required: ['counter', 'value'],
    additionalProperties: false,
  },
  phrase: (a) => `SET CONFORMANCE COUNTER ${a.counter} TO ${a.value}`,
  summary: (a) => `Set the conformance counter ${a.counter} to ${a.value}.`,
  async handler(ctx, a) {
    const before = await counterRow(ctx.db, ctx.principal.company_id, a.counter);
    await writeCounter(ctx, a.counter, a.value);
    ctx.setRollback(`conformance:set:${a.counter}:${a.value}`, {
      counter: a.counter,
      previous: before.value,
    });
    return { counter: a.counter, previous_value: before.value, value: a.value };
  },
  revert: {
    async handler(ctx, original) {
      const { counter, previous } = original.rollback as { counter: string; previous: number };
      await writeCounter(ctx, counter, previous);
      return { revert_action: `set the conformance counter ${counter} back to ${previous}` };
    },
  },
});

/** The pack (src/packs.ts lists it as `conformance`). */
export const conformancePack: Pack = {
  name: CONFORMANCE_PACK_NAME,
  description: 'Test-safe verbs for `solid conformance` (a counter table of its own; spec/conformance.md).',
  migrations: [
    {
      version: 1,
      name: 'conformance_counters',
      sqlite: `CREATE TABLE conformance_counters (
        company_id INTEGER NOT NULL, counter TEXT NOT NULL, value INTEGER NOT NULL, changes INTEGER NOT NULL,
        PRIMARY KEY (company_id, counter))`,
      postgres: `CREATE TABLE conformance_counters (
        company_id BIGINT NOT NULL, counter TEXT NOT NULL, value BIGINT NOT NULL, changes BIGINT NOT NULL,
        PRIMARY KEY (company_id, counter))`,
    },
  ],
  verbs: [counterGet, counterAdd, counterSet],
};
