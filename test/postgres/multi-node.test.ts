/**
 * Three runtime processes on one PostgreSQL database, each serving the HTTP transport, under
 * concurrent load: shared idempotency keys sent to two nodes at once, typed-phrase confirmations
 * raced on two nodes, a financial daily cap crossed. Then the counts match exactly and the audit
 * chain verifies row by row (spec/store.md §multi-node, issue 10).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PG_SKIP_REASON, TEST_DATABASE_URL, freshSchemaName, dropSchema } from '../support/postgres.ts';
import {
  deploy,
  dispatchHttp,
  inspect,
  pool,
  startNodes,
  startServes,
  verifyChain,
  verifyEvents,
  type Answer,
} from './harness.ts';

const CREDITS = 45;
const PAYOUTS = 36;
const FINANCIAL_CAP = 24;

describe(
  'several nodes on one PostgreSQL database',
  { skip: TEST_DATABASE_URL === undefined ? PG_SKIP_REASON : false, timeout: 240_000 },
  () => {
    it('keeps every guarantee: keys executed once, nonces burned once, caps exact, chain gap-free and verifiable', async (t) => {
      const schema = freshSchemaName();
      t.after(() => dropSchema(schema));
      const d = await deploy(TEST_DATABASE_URL!, schema, {
        WRITE_FINANCIAL: FINANCIAL_CAP,
        WRITE_REVERSIBLE: 1000,
      });
      const nodes = await startNodes(t, d, 3);
      const node = (i: number) => nodes[i % nodes.length]!;

      // Credits: pending on one node, then the confirmation with the same idempotency key sent to
      // two other nodes at the same time; a 409 in_use is retried until the stored receipt comes back.
      const credits = await pool(
        6,
        Array.from({ length: CREDITS }, (_, i) => async () => {
          const key = randomUUID();
          const args = { account: `acct-${i % 5}`, amount_cents: i + 1 };
          const pending = await dispatchHttp(node(i), d.ownerKey, 'load.credit', { args }, key);
          assert.equal(pending.status, 202, JSON.stringify(pending.body));
          const confirm = { args, confirm: true, nonce: pending.body.consent!.nonce };
          const answers: Answer[] = await Promise.all([
            dispatchHttp(node(i + 1), d.ownerKey, 'load.credit', confirm, key),
            dispatchHttp(node(i + 2), d.ownerKey, 'load.credit', confirm, key),
          ]);
          for (let attempt = 0; attempt < 50 && answers.some((a) => a.status === 409); attempt++) {
            await new Promise((r) => setTimeout(r, 20));
            const j = answers.findIndex((a) => a.status === 409);
            answers[j] = await dispatchHttp(node(i + j + 1), d.ownerKey, 'load.credit', confirm, key);
          }
          return { key, args, answers };
        }),
      );
      let creditTotal = 0;
      for (const c of credits) {
        assert.deepEqual(
          c.answers.map((a) => a.status),
          [200, 200],
          JSON.stringify(c.answers.map((a) => a.body.error)),
        );
        const fresh = c.answers.filter((a) => a.body.replayed !== true);
        assert.equal(fresh.length, 1, 'exactly one node executed the key; the other replayed its receipt');
        assert.equal(
          c.answers[0]!.body.audit_id,
          c.answers[1]!.body.audit_id,
          'the replay carries the original receipt',
        );
        creditTotal += c.args.amount_cents;
      }

      // Payouts (typed phrase): the confirmation raced on two nodes; the financial cap is crossed.
      const payouts = await pool(
        6,
        Array.from({ length: PAYOUTS }, (_, i) => async () => {
          const args = { account: `acct-${i % 5}`, amount_cents: 100 + i };
          const pending = await dispatchHttp(node(i), d.ownerKey, 'load.payout', { args });
          // Once the cap is used up, the preflight itself is refused (no nonce to race).
          if (pending.status === 429 && pending.body.error?.reason === 'daily_cap_exceeded')
            return [pending, pending];
          assert.equal(pending.status, 202, JSON.stringify(pending.body));
          assert.equal(pending.body.consent!.gate, 'typed_phrase');
          const confirm = {
            args,
            confirm: true,
            nonce: pending.body.consent!.nonce,
            typed_phrase: pending.body.consent!.typed_phrase,
          };
          return Promise.all([
            dispatchHttp(node(i + 1), d.ownerKey, 'load.payout', confirm),
            dispatchHttp(node(i + 2), d.ownerKey, 'load.payout', confirm),
          ]);
        }),
      );
      let paid = 0;
      let capped = 0;
      for (const pair of payouts) {
        const ok = pair.filter((a) => a.status === 200);
        assert.ok(ok.length <= 1, 'a nonce confirms at most one execution');
        for (const a of pair)
          if (a.status !== 200)
            assert.ok(
              ['nonce_replayed', 'daily_cap_exceeded'].includes(a.body.error!.reason),
              JSON.stringify(a.body.error),
            );
        if (ok.length === 1) paid++;
        else {
          assert.ok(
            pair.every((a) => a.body.error?.reason === 'daily_cap_exceeded'),
            JSON.stringify(pair.map((a) => a.body.error)),
          );
          capped++;
        }
      }
      assert.equal(paid, FINANCIAL_CAP, 'the daily cap admits exactly its number of payouts');
      assert.equal(capped, PAYOUTS - FINANCIAL_CAP);

      await inspect(d, async (c) => {
        const effects = (
          await c.query(
            `SELECT kind, idempotency_key, COUNT(*) AS n FROM load_effects GROUP BY kind, idempotency_key`,
          )
        ).rows;
        const creditKeys = new Set(credits.map((x) => x.key));
        const creditEffects = effects.filter((e) => e.kind === 'credit');
        assert.equal(creditEffects.length, CREDITS, 'one effect per idempotency key');
        assert.ok(
          creditEffects.every((e) => Number(e.n) === 1 && creditKeys.has(e.idempotency_key)),
          'no key executed twice',
        );
        assert.equal(
          effects.filter((e) => e.kind === 'payout').reduce((s, e) => s + Number(e.n), 0),
          FINANCIAL_CAP,
        );
        const balance = (await c.query('SELECT SUM(balance_cents) AS s FROM load_accounts')).rows[0];
        const paidTotal = payouts
          .flat()
          .filter((a) => a.status === 200)
          .reduce((s, a) => s - Number((a.body.result as { paid_cents: number }).paid_cents), 0);
        assert.equal(Number(balance.s), creditTotal + paidTotal);
        // Every effect has its completed audit row (same idempotency key), and every receipt its effect.
        const orphans = (
          await c.query(
            `SELECT COUNT(*) AS n FROM load_effects e WHERE NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.company_id = e.company_id AND a.idempotency_key = e.idempotency_key AND a.status = 'completed')`,
          )
        ).rows[0];
        assert.equal(Number(orphans.n), 0);
        const completed = (
          await c.query(
            `SELECT COUNT(*) AS n FROM audit_log WHERE company_id = 2 AND status = 'completed' AND action_type IN ('load.credit', 'load.payout')`,
          )
        ).rows[0];
        assert.equal(Number(completed.n), CREDITS + FINANCIAL_CAP);
        const nonces = (await c.query('SELECT COUNT(*) AS n, COUNT(DISTINCT jti) AS d FROM nonces')).rows[0];
        assert.equal(
          Number(nonces.n),
          CREDITS + FINANCIAL_CAP,
          'each executed confirmation burned its nonce once',
        );
        assert.equal(Number(nonces.d), Number(nonces.n));
        const caps = (
          await c.query(
            `SELECT consent_class, count FROM daily_counts WHERE company_id = 2 ORDER BY consent_class`,
          )
        ).rows.map((r) => [r.consent_class, Number(r.count)]);
        assert.deepEqual(caps, [
          ['WRITE_FINANCIAL', FINANCIAL_CAP],
          ['WRITE_REVERSIBLE', CREDITS],
        ]);
        const rows = await verifyChain(c, 2);
        assert.ok(rows >= 2 * CREDITS + 2 * PAYOUTS, `audit rows ${rows}`);
        await verifyChain(c, 1);
        assert.equal(await verifyEvents(c, 2), CREDITS + FINANCIAL_CAP);
      });
    });

    it('`solid serve --database-url` nodes share nonces, idempotency keys and the chain', async (t) => {
      const schema = freshSchemaName();
      t.after(() => dropSchema(schema));
      const d = await deploy(TEST_DATABASE_URL!, schema);
      const [a, b] = await startServes(t, d, 2);
      for (const n of [a!, b!]) assert.equal((await fetch(`${n.url}/readyz`)).status, 200);
      const key = randomUUID();
      const args = { consent_class: 'WRITE_FINANCIAL', limit: 7 };
      const pending = await dispatchHttp(a!, d.ownerKey, 'tenant.caps_set', { args }, key);
      assert.equal(pending.status, 202, JSON.stringify(pending.body));
      const confirm = { args, confirm: true, nonce: pending.body.consent!.nonce };
      const done = await dispatchHttp(b!, d.ownerKey, 'tenant.caps_set', confirm, key);
      assert.equal(done.status, 200, JSON.stringify(done.body));
      const replay = await dispatchHttp(a!, d.ownerKey, 'tenant.caps_set', confirm, key);
      assert.equal(replay.status, 200);
      assert.equal(replay.body.replayed, true);
      assert.equal(replay.body.audit_id, done.body.audit_id);
      const again = await dispatchHttp(a!, d.ownerKey, 'tenant.caps_set', confirm, randomUUID());
      assert.equal(
        again.body.error?.reason,
        'nonce_replayed',
        'the nonce burned on node B is refused on node A',
      );
      await inspect(d, async (c) => {
        const settings = (await c.query('SELECT settings FROM tenants WHERE company_id = 2')).rows[0]
          .settings as { caps: Record<string, number> };
        assert.equal(settings.caps.WRITE_FINANCIAL, 7);
        await verifyChain(c, 2);
      });
    });
  },
);
