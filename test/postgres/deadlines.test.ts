/**
 * Bounded in time on PostgreSQL (issue 30 rows 1 and 2; docs/operations.md §time-limits), with
 * real processes on a real cluster:
 *
 * 1. a node frozen (SIGSTOP) while it holds a tenant's head row `FOR UPDATE` inside its
 *    transaction: a healthy node's writes for that tenant are each answered (an envelope:
 *    `store_unavailable` with Retry-After while the lock is held, its lock_timeout), and the
 *    database cuts the frozen session off (idle_in_transaction_session_timeout), after which the
 *    healthy node's writes commit — while the frozen node is still stopped;
 * 2. the PostgreSQL server stalled (every server process SIGSTOPped, no reset): `solid serve`
 *    answers /readyz 503 and a dispatch with a 503 envelope, and SIGTERM ends it within its bound.
 *
 * No timing is asserted beyond generous guards: answers must arrive and be envelopes.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PG_SKIP_REASON, TEST_DATABASE_URL, dropSchema, freshSchemaName } from '../support/postgres.ts';
import {
  PG_BIN,
  deploy,
  dispatchHttp,
  inspect,
  privateCluster,
  startNodes,
  startServes,
  verifyChain,
  type Answer,
  type NodeProcess,
} from './harness.ts';

const ROOT = resolve(import.meta.dirname, '../..');

const skip =
  TEST_DATABASE_URL === undefined
    ? PG_SKIP_REASON
    : !existsSync(join(PG_BIN, 'pg_ctl'))
      ? `no pg_ctl in ${PG_BIN}`
      : false;

function assertEnvelope(a: Answer, what: string): void {
  assert.notEqual(a.status, 0, `${what}: no answer within the client's 20 s guard`);
  assert.equal(typeof a.body.ok, 'boolean', `${what}: an envelope (${JSON.stringify(a.body)})`);
  if (a.body.ok === false && a.status !== 202) {
    assert.equal(typeof a.body.error?.reason, 'string', what);
    assert.equal(typeof a.body.error?.hint, 'string', `${what}: a hint`);
  }
}

async function get(node: NodeProcess, path: string): Promise<Answer> {
  try {
    const res = await fetch(`${node.url}${path}`, { signal: AbortSignal.timeout(20_000) });
    return { status: res.status, body: (await res.json()) as Answer['body'] };
  } catch (err) {
    return { status: 0, body: { ok: false, verb: '', error: { reason: 'network', message: String(err) } } };
  }
}

describe('PostgreSQL deadlines (issue 30 rows 1, 2)', { skip, timeout: 300_000 }, () => {
  it('a node frozen inside its transaction holding the tenant lock does not stall a healthy node', async (t) => {
    const schema = freshSchemaName();
    t.after(() => dropSchema(schema));
    const d = await deploy(TEST_DATABASE_URL!, schema);
    const [healthy] = await startNodes(t, d, 1);

    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...d.env,
      SOLID_DATABASE_URL: d.url,
      SOLID_DB_SCHEMA: d.schema,
      LOCK_COMPANY: String(d.companyId),
    };
    const holder = spawn(process.execPath, ['--import', 'tsx', 'test/postgres/lock-holder.ts'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.after(() => {
      holder.kill('SIGKILL'); // a stopped process still takes SIGKILL
    });
    let err = '';
    holder.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    await new Promise<void>((ok, fail) => {
      const guard = setTimeout(() => fail(new Error(`the lock holder did not lock in 60 s: ${err}`)), 60_000);
      let out = '';
      holder.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
        if (out.includes('locked')) {
          clearTimeout(guard);
          ok();
        }
      });
      holder.once('exit', (code) => fail(new Error(`the lock holder exited (${code}): ${err}`)));
    });
    holder.kill('SIGSTOP');

    // Writes for the locked tenant on the healthy node: every one answered with an envelope.
    const answers: Answer[] = [];
    let committed = 0;
    let unavailable = 0;
    const until = Date.now() + 90_000; // a guard, not a timing assertion
    for (let i = 0; committed < 3 && Date.now() < until; i++) {
      const key = randomUUID();
      const args = { account: 'frozen-peer', amount_cents: 1 + i };
      const pending = await dispatchHttp(healthy!, d.ownerKey, 'load.credit', { args }, key);
      answers.push(pending);
      assertEnvelope(pending, `pending #${i}`);
      let final = pending;
      if (pending.status === 202) {
        final = await dispatchHttp(
          healthy!,
          d.ownerKey,
          'load.credit',
          { args, confirm: true, nonce: pending.body.consent!.nonce },
          key,
        );
        answers.push(final);
        assertEnvelope(final, `confirm #${i}`);
      }
      if (final.status === 200) committed++;
      else {
        assert.equal(final.status, 503, JSON.stringify(final.body));
        assert.equal(final.body.error!.reason, 'store_unavailable');
        unavailable++;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    assert.ok(
      unavailable >= 1,
      'while the frozen node held the lock, writes were answered store_unavailable',
    );
    assert.equal(
      committed,
      3,
      'the database cut the frozen session off: writes commit while it is still stopped',
    );
    assert.equal(holder.exitCode, null, 'the lock holder is still frozen, not gone');
    assert.equal((await get(healthy!, '/readyz')).status, 200, 'the healthy node stays ready');
    await inspect(d, (c) => verifyChain(c, d.companyId));
  });

  it('a stalled server: /readyz 503, a dispatch answered with an envelope, SIGTERM bounded', async (t) => {
    const cluster = await privateCluster(t);
    const d = await deploy(cluster.url, 'solid');
    const bounded = { ...d, env: { ...d.env, SOLID_SHUTDOWN_TIMEOUT_MS: '5000' } };
    const [node] = await startServes(t, bounded, 1);
    assert.equal((await get(node!, '/readyz')).status, 200);

    cluster.stall();
    t.after(() => cluster.resume());
    const ready = await get(node!, '/readyz');
    assertEnvelope(ready, '/readyz');
    assert.equal(ready.status, 503);
    assert.equal(ready.body.error!.reason, 'store_unavailable');

    const read = await dispatchHttp(node!, d.ownerKey, 'macros.list', { args: {} });
    assertEnvelope(read, 'a dispatch');
    assert.equal(read.status, 503, JSON.stringify(read.body));
    assert.equal(read.body.error!.reason, 'store_unavailable');

    const exited = new Promise<number | null>((r) => node!.proc.once('exit', (code) => r(code)));
    node!.proc.kill('SIGTERM');
    const code = await Promise.race([
      exited,
      new Promise<'stuck'>((r) => setTimeout(() => r('stuck'), 45_000)),
    ]);
    assert.notEqual(code, 'stuck', `SIGTERM did not end solid serve:\n${node!.stderr()}`);
    assert.match(node!.stderr(), /shutting down/);
    cluster.resume();
  });
});
