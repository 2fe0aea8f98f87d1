/**
 * The database killed (`pg_ctl stop -m immediate`) and restarted in the middle of a write load
 * served by two nodes: while it is down clients get store_unavailable (HTTP 503) and /readyz is
 * 503; once it is back the nodes recover on their own; no acknowledged receipt is lost, no
 * effect exists without its audit row, every idempotency key executed once, and the chain
 * verifies (spec/store.md §failures, issue 10). Runs on a private cluster it may kill.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PG_SKIP_REASON, TEST_DATABASE_URL } from '../support/postgres.ts';
import {
  PG_BIN,
  deploy,
  dispatchHttp,
  inspect,
  pool,
  privateCluster,
  startNodes,
  verifyChain,
  type NodeProcess,
} from './harness.ts';

const WORKERS = 4;
const OPS_PER_WORKER = 12;

const skip =
  TEST_DATABASE_URL === undefined
    ? PG_SKIP_REASON
    : !existsSync(join(PG_BIN, 'pg_ctl'))
      ? `no pg_ctl in ${PG_BIN}`
      : false;

async function readyz(node: NodeProcess): Promise<number> {
  try {
    return (await fetch(`${node.url}/readyz`, { signal: AbortSignal.timeout(5000) })).status;
  } catch {
    return 0;
  }
}

describe('database crash and restart under load', { skip, timeout: 240_000 }, () => {
  it('answers store_unavailable while down, recovers by itself, and loses no acknowledged receipt', async (t) => {
    const cluster = await privateCluster(t);
    const d = await deploy(cluster.url, 'solid', { WRITE_REVERSIBLE: 10_000 });
    const nodes = await startNodes(t, d, 2);

    const acknowledged = new Map<string, number>(); // idempotency key → audit_id of the receipt
    const unavailable: string[] = [];
    let done = 0;
    let outage: Promise<void> | undefined;

    const op = (w: number, i: number) => async () => {
      const key = randomUUID();
      const args = { account: `acct-${w}`, amount_cents: 1 + i };
      let nonce: string | undefined;
      for (let attempt = 0; attempt < 200; attempt++) {
        const node = nodes[(w + attempt) % nodes.length]!;
        if (nonce === undefined) {
          const pending = await dispatchHttp(node, d.ownerKey, 'load.credit', { args }, key);
          if (pending.status === 202) nonce = pending.body.consent!.nonce;
          else {
            assert.ok(
              [503, 0].includes(pending.status),
              `pending: ${pending.status} ${JSON.stringify(pending.body.error)}`,
            );
            if (pending.status === 503) unavailable.push(pending.body.error!.reason);
            await new Promise((r) => setTimeout(r, 100));
            continue;
          }
        }
        const answer = await dispatchHttp(
          node,
          d.ownerKey,
          'load.credit',
          { args, confirm: true, nonce },
          key,
        );
        if (answer.status === 200) {
          acknowledged.set(key, answer.body.audit_id!);
          done++;
          if (done === 10 && outage === undefined) outage = crash();
          return;
        }
        assert.ok(
          [503, 409, 0].includes(answer.status),
          `confirm: ${answer.status} ${JSON.stringify(answer.body.error)}`,
        );
        if (answer.status === 503) unavailable.push(answer.body.error!.reason);
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`key ${key} never succeeded`);
    };

    const outageChecks: { readyz: number[]; dispatch: number } = { readyz: [], dispatch: 0 };
    const crash = async () => {
      cluster.kill();
      outageChecks.readyz = await Promise.all(nodes.map(readyz));
      const probe = await dispatchHttp(nodes[0]!, d.ownerKey, 'load.credit', {
        args: { account: 'probe', amount_cents: 1 },
      });
      outageChecks.dispatch = probe.status;
      assert.equal(probe.body.error?.reason, 'store_unavailable');
      await new Promise((r) => setTimeout(r, 1500));
      cluster.start();
    };

    await pool(
      WORKERS,
      Array.from({ length: WORKERS }, (_, w) => async () => {
        for (let i = 0; i < OPS_PER_WORKER; i++) await op(w, i)();
      }),
    );
    await outage;

    assert.deepEqual(outageChecks.readyz, [503, 503], '/readyz answers 503 while the database is down');
    assert.equal(outageChecks.dispatch, 503);
    assert.ok(
      unavailable.length > 0 && unavailable.every((r) => r === 'store_unavailable'),
      `clients saw ${JSON.stringify(unavailable.slice(0, 5))}`,
    );
    assert.deepEqual(await Promise.all(nodes.map(readyz)), [200, 200], 'both nodes are ready again');
    assert.equal(acknowledged.size, WORKERS * OPS_PER_WORKER);

    await inspect(d, async (c) => {
      for (const [key, auditId] of acknowledged) {
        const row = (
          await c.query(`SELECT status, idempotency_key FROM audit_log WHERE audit_id = $1`, [auditId])
        ).rows[0];
        assert.deepEqual(
          { ...row },
          { status: 'completed', idempotency_key: key },
          `acknowledged receipt ${auditId} is stored`,
        );
      }
      const perKey = (
        await c.query(`SELECT idempotency_key, COUNT(*) AS n FROM load_effects GROUP BY idempotency_key`)
      ).rows;
      assert.equal(perKey.length, acknowledged.size, 'an effect for every acknowledged key and no other');
      assert.ok(
        perKey.every((r) => Number(r.n) === 1 && acknowledged.has(r.idempotency_key)),
        'each key executed once',
      );
      const orphans = (
        await c.query(
          `SELECT COUNT(*) AS n FROM load_effects e WHERE NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.company_id = e.company_id AND a.idempotency_key = e.idempotency_key AND a.status = 'completed')`,
        )
      ).rows[0];
      assert.equal(Number(orphans.n), 0, 'no effect without its audit row');
      await verifyChain(c, 2);
      await verifyChain(c, 1);
    });
  });
});
