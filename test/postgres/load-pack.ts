/**
 * Verbs for the multi-node and fault tests: a reversible credit and a financial payout with a
 * typed phrase, each leaving one effect row tagged with the call's idempotency key, so the tests
 * can count effects against receipts and audit rows exactly.
 */
import { defineVerb } from '../../src/runtime/verb.ts';
import type { Migration } from '../../src/store/store.ts';

export const LOAD_MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'load effects and accounts',
    sqlite: `CREATE TABLE load_effects (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, kind TEXT NOT NULL, account TEXT NOT NULL, amount_cents INTEGER NOT NULL, idempotency_key TEXT NOT NULL, created_at TEXT NOT NULL);
      CREATE TABLE load_accounts (company_id INTEGER NOT NULL, account TEXT NOT NULL, balance_cents INTEGER NOT NULL, PRIMARY KEY (company_id, account));`,
    postgres: `CREATE TABLE load_effects (id BIGSERIAL PRIMARY KEY, company_id BIGINT NOT NULL, kind TEXT NOT NULL, account TEXT NOT NULL, amount_cents BIGINT NOT NULL, idempotency_key TEXT NOT NULL, created_at TEXT NOT NULL);
      CREATE TABLE load_accounts (company_id BIGINT NOT NULL, account TEXT NOT NULL, balance_cents BIGINT NOT NULL, PRIMARY KEY (company_id, account));`,
  },
];

type Args = { account: string; amount_cents: number };

const input = {
  type: 'object',
  properties: {
    account: { type: 'string', minLength: 1, maxLength: 40 },
    amount_cents: { type: 'integer', minimum: 1 },
  },
  required: ['account', 'amount_cents'],
  additionalProperties: false,
} as const;

async function apply(
  ctx: Parameters<typeof loadCredit.handler>[0],
  kind: string,
  a: Args,
  sign: number,
): Promise<void> {
  await ctx.db.run(
    'INSERT INTO load_effects (company_id, kind, account, amount_cents, idempotency_key, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    [
      ctx.principal.company_id,
      kind,
      a.account,
      a.amount_cents,
      ctx.idempotencyKey ?? '',
      ctx.now.toISOString(),
    ],
  );
  await ctx.db.run(
    `INSERT INTO load_accounts (company_id, account, balance_cents) VALUES (?, ?, ?)
     ON CONFLICT (company_id, account) DO UPDATE SET balance_cents = load_accounts.balance_cents + excluded.balance_cents`,
    [ctx.principal.company_id, a.account, sign * a.amount_cents],
  );
  ctx.setEntity('account', a.account);
  ctx.emit({
    type: `account.${kind}`,
    entity_type: 'account',
    entity_id: a.account,
    payload: { amount_cents: a.amount_cents },
  });
}

export const loadCredit = defineVerb<Args>({
  name: 'load.credit',
  description: 'Credit an account (load test).',
  shape: 'receipt',
  category: 'test',
  consent: 'WRITE_REVERSIBLE',
  input,
  summary: (a) => `Credit ${a.amount_cents} cents to ${a.account}.`,
  async handler(ctx, a) {
    await apply(ctx, 'credit', a, 1);
    return { account: a.account, credited_cents: a.amount_cents };
  },
});

export const loadPayout = defineVerb<Args>({
  name: 'load.payout',
  description: 'Pay an amount out of an account (load test, financial).',
  shape: 'receipt',
  category: 'payments',
  consent: 'WRITE_FINANCIAL',
  input,
  phrase: (a) => `pay ${a.amount_cents} to ${a.account}`,
  summary: (a) => `Pay ${a.amount_cents} cents out of ${a.account}.`,
  async handler(ctx, a) {
    await apply(ctx, 'payout', a, -1);
    return { account: a.account, paid_cents: a.amount_cents };
  },
});

export const loadVerbs = [loadCredit, loadPayout];
