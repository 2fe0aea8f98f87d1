/**
 * verbs.reputation (shape reputation): incremental per-verb / per-agent figures that equal those
 * recomputed from the audit log. Spec: spec/shapes.md §reputation.
 *
 * Run: node --import tsx --test test/observe/reputation.test.ts
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call, createObserveRuntime, okResult, refused } from '../support/observe-verbs.ts';
import type { TestRuntime } from '../support/runtime.ts';
import type { Principal } from '../../src/spec/types.ts';
import { reasonInfo } from '../../src/spec/reasons.ts';
import { exactPercentile, latencyBin } from '../../src/runtime/observe/latency-histogram.ts';
import { ReputationAggregator } from '../../src/runtime/observe/reputation.ts';

interface Score {
  verb: string;
  agent: string | null;
  invocations: number;
  successes: number;
  failures: number;
  denials: number;
  caller_errors: number;
  pending: number;
  success_rate: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  star_rating: number | null;
  sample_size: number;
}

const as = (h: TestRuntime, role: 'owner' | 'employee' | 'read_only', agent: string): Principal => ({
  ...h.principal(role),
  agent_type: agent,
});

/** A mixed workload: reads, writes, failures, denials, consent round trips, replays, bad input. */
async function workload(h: TestRuntime): Promise<void> {
  for (let i = 0; i < 14; i++)
    await call(h, as(h, 'employee', i % 2 === 0 ? 'claude' : 'cursor'), 'counter.bump', {
      name: 'a',
      fail: i % 5 === 0,
    });
  for (let i = 0; i < 6; i++) await call(h, as(h, 'read_only', 'claude'), 'counter.get', { name: 'a' });
  await call(h, as(h, 'read_only', 'claude'), 'counter.get', { nope: 1 });
  for (let i = 0; i < 3; i++)
    await call(h, as(h, 'employee', 'cursor'), 'counter.charge', { name: 'a', amount: 5 });
  const p = await call(h, as(h, 'owner', 'claude'), 'counter.charge', { name: 'a', amount: 5 });
  await call(
    h,
    as(h, 'owner', 'claude'),
    'counter.charge',
    { name: 'a', amount: 5 },
    { confirm: true, nonce: p.consent!.nonce, typed_phrase: 'CHARGE 5 to a' },
  );
  const q = await call(h, as(h, 'owner', 'claude'), 'counter.charge', { name: 'a', amount: 6 });
  await call(
    h,
    as(h, 'owner', 'claude'),
    'counter.charge',
    { name: 'a', amount: 6 },
    { confirm: true, nonce: q.consent!.nonce, typed_phrase: 'wrong' },
  );
  await call(h, as(h, 'employee', 'claude'), 'counter.bump', { name: 'b' }, { idempotency_key: 'k-1' });
  await call(h, as(h, 'employee', 'claude'), 'counter.bump', { name: 'b' }, { idempotency_key: 'k-1' });
}

type Outcome = 'success' | 'failure' | 'denial' | 'caller_error' | 'pending';
/** The documented classification, re-stated independently of the implementation. */
function classify(status: string, reason: string | null): Outcome {
  if (status === 'pending') return 'pending';
  if (reason === null) return ['failed', 'denied', 'rejected'].includes(status) ? 'failure' : 'success';
  const info = reasonInfo(reason);
  if (info.denial) return 'denial';
  if (reason === 'revert_failed') return 'failure';
  return ['input', 'not_found', 'auth', 'conflict', 'limit'].includes(info.kind) ? 'caller_error' : 'failure';
}

async function recompute(
  h: TestRuntime,
  since: string,
  byAgent: boolean,
): Promise<Map<string, { counts: Record<Outcome, number>; latencies: number[] }>> {
  const rows = await h.rt.store.read((q) =>
    q.all<{
      action_type: string;
      agent_type: string | null;
      status: string;
      reason: string | null;
      latency_ms: number | null;
    }>(
      'SELECT action_type, agent_type, status, reason, latency_ms FROM audit_log WHERE company_id = ? AND shape IS NOT NULL AND created_at >= ?',
      [h.companyId, since],
    ),
  );
  const out = new Map<string, { counts: Record<Outcome, number>; latencies: number[] }>();
  for (const r of rows) {
    const key = byAgent ? `${r.action_type}|${r.agent_type}` : r.action_type;
    let g = out.get(key);
    if (g === undefined) {
      g = { counts: { success: 0, failure: 0, denial: 0, caller_error: 0, pending: 0 }, latencies: [] };
      out.set(key, g);
    }
    const o = classify(r.status, r.reason);
    g.counts[o]++;
    if (o === 'success' && r.latency_ms !== null) g.latencies.push(Number(r.latency_ms));
  }
  return out;
}

function assertMatches(
  scores: Score[],
  expected: Awaited<ReturnType<typeof recompute>>,
  byAgent: boolean,
): void {
  assert.equal(scores.length, expected.size);
  for (const s of scores) {
    const e = expected.get(byAgent ? `${s.verb}|${s.agent}` : s.verb);
    assert.ok(e, `no audit rows for ${s.verb}/${s.agent}`);
    const label = `${s.verb}/${s.agent}`;
    assert.equal(s.successes, e.counts.success, `${label} successes`);
    assert.equal(s.failures, e.counts.failure, `${label} failures`);
    assert.equal(s.denials, e.counts.denial, `${label} denials`);
    assert.equal(s.caller_errors, e.counts.caller_error, `${label} caller_errors`);
    assert.equal(s.pending, e.counts.pending, `${label} pending`);
    const invocations = e.counts.success + e.counts.failure + e.counts.denial + e.counts.caller_error;
    assert.equal(s.invocations, invocations, `${label} invocations`);
    const ran = e.counts.success + e.counts.failure;
    assert.equal(s.success_rate, ran === 0 ? null : e.counts.success / ran);
    assert.equal(s.sample_size, e.counts.success + e.counts.failure);
    for (const [p, got] of [
      [0.5, s.p50_ms],
      [0.95, s.p95_ms],
    ] as const) {
      const exact = exactPercentile(e.latencies, p);
      if (exact === null) assert.equal(got, null);
      else
        assert.ok(
          Math.abs(latencyBin(got!) - latencyBin(exact)) <= 1,
          `${label} p${p * 100}: ${got} vs exact ${exact}`,
        );
    }
  }
}

describe('verbs.reputation', () => {
  it('keeps figures equal to those recomputed from the audit log, per verb and per agent, over every window', async (t) => {
    // Read rows flush only when told to, so the reputation reads below never land between a score and its recount.
    const h = await createObserveRuntime(t, { readAuditFlushMs: 600_000 });
    await workload(h);
    await h.rt.auditBuffer.flush();
    await h.rt.observers.flush();
    const since = (await h.rt.store.read((q) =>
      q.get<{ t: string }>('SELECT MIN(created_at) AS t FROM audit_log WHERE company_id = ?', [h.companyId]),
    ))!.t;
    for (const window of ['1h', '24h', '7d', '30d']) {
      for (const byAgent of [false, true]) {
        const r = okResult(
          await call(h, 'read_only', 'verbs.reputation', { window, by_agent: byAgent }),
          'reputation',
        );
        assert.equal(r.window, window);
        assert.ok((r.window_start as string) <= since);
        assertMatches(r.scores as Score[], await recompute(h, r.window_start as string, byAgent), byAgent);
      }
    }
    const charge = okResult(
      await call(h, 'read_only', 'verbs.reputation', { verb: 'counter.charge', window: '24h' }),
      'reputation',
    ).scores as Score[];
    assert.deepEqual(
      charge.map((s) => [s.invocations, s.successes, s.denials, s.pending]),
      [[5, 1, 4, 2]],
      'three role denials and one phrase mismatch; two pending answers counted apart',
    );
  });

  it('counts calls not yet flushed, and writes nothing on the dispatch path', async (t) => {
    const h = await createObserveRuntime(t, { observe: { reputationFlushMs: 0, maintenanceIntervalMs: 0 } });
    for (let i = 0; i < 3; i++) okResult(await call(h, 'employee', 'counter.bump', { name: 'x' }), 'receipt');
    const stored = await h.rt.store.read((q) =>
      q.get<{ n: number }>('SELECT COUNT(*) AS n FROM reputation_counts'),
    );
    assert.equal(Number(stored!.n), 0, 'nothing flushed yet');
    assert.ok(h.rt.observers.reputation.buffered > 0);
    const r = okResult(
      await call(h, 'read_only', 'verbs.reputation', { verb: 'counter.bump' }),
      'reputation',
    );
    assert.equal((r.scores as Score[])[0]!.successes, 3);
    await h.rt.observers.flush();
    assert.equal(h.rt.observers.reputation.buffered, 0);
    const after = okResult(
      await call(h, 'read_only', 'verbs.reputation', { verb: 'counter.bump' }),
      'reputation',
    );
    assert.equal((after.scores as Score[])[0]!.successes, 3, 'flushing neither loses nor doubles a call');
  });

  it('rates stars from execution success and latency (null below 10 calls that ran), per the documented formula', async (t) => {
    const h = await createObserveRuntime(t);
    for (let i = 0; i < 15; i++) await call(h, 'employee', 'counter.bump', { name: 's', fail: i < 3 });
    for (let i = 0; i < 12; i++) await call(h, 'employee', 'counter.charge', { name: 's', amount: 1 });
    for (let i = 0; i < 4; i++) await call(h, 'read_only', 'counter.get', { name: 's' });
    await h.rt.auditBuffer.flush();
    const scores = okResult(await call(h, 'read_only', 'verbs.reputation', { window: '30d' }), 'reputation')
      .scores as Score[];
    const byVerb = new Map(scores.map((s) => [s.verb, s]));
    // 12 of 15 ran successfully; the 30-day window is its own latency baseline: 5 · 0.8² = 3.2.
    assert.equal(byVerb.get('counter.bump')!.star_rating, 3.2);
    assert.equal(byVerb.get('counter.bump')!.sample_size, 15);
    // Only denials: nothing ran, so no rating; invocations and denials still counted.
    assert.deepEqual(
      [
        byVerb.get('counter.charge')!.star_rating,
        byVerb.get('counter.charge')!.denials,
        byVerb.get('counter.charge')!.success_rate,
      ],
      [null, 12, null],
      'nothing ran, so no success rate: refusals are not the verb failing',
    );
    assert.equal(byVerb.get('counter.get')!.star_rating, null, 'below the minimum sample');
    assert.deepEqual(
      scores.map((s) => s.verb),
      [...scores]
        .sort((a, b) => b.invocations - a.invocations || a.verb.localeCompare(b.verb))
        .map((s) => s.verb),
    );
  });

  it("counts only the verb's own failures against it: bad input and refusals get their own columns", async (t) => {
    const h = await createObserveRuntime(t);
    for (let i = 0; i < 4; i++) await call(h, 'read_only', 'counter.get', { name: 'r' });
    for (let i = 0; i < 4; i++) await call(h, 'read_only', 'counter.get', { nope: i });
    await call(h, 'employee', 'counter.bump', { name: 'r' });
    await call(h, 'employee', 'counter.bump', { name: 'r', fail: true });
    await call(h, 'read_only', 'counter.bump', { name: 'r' });
    await h.rt.auditBuffer.flush();
    const scores = okResult(await call(h, 'read_only', 'verbs.reputation', {}), 'reputation')
      .scores as Score[];
    const byVerb = new Map(scores.map((s) => [s.verb, s]));
    const get = byVerb.get('counter.get')!;
    assert.deepEqual(
      [get.invocations, get.successes, get.failures, get.caller_errors, get.denials, get.success_rate],
      [8, 4, 0, 4, 0, 1],
      'four invalid_input calls are the caller mistaking, not the verb failing',
    );
    const bump = byVerb.get('counter.bump')!;
    assert.deepEqual(
      [bump.invocations, bump.successes, bump.failures, bump.caller_errors, bump.denials, bump.success_rate],
      [3, 1, 1, 0, 1, 0.5],
      'its own domain failure counts; the role denial does not',
    );
  });

  it('covers whole hourly buckets in 1h and 24h, whole UTC days in 7d and 30d', async (t) => {
    let now = Date.parse('2030-03-10T09:30:00Z');
    const h = await createObserveRuntime(t, { clock: () => new Date(now) });
    await call(h, 'employee', 'counter.bump', { name: 'w' });
    now = Date.parse('2030-03-10T11:05:00Z');
    await call(h, 'employee', 'counter.bump', { name: 'w' });
    await call(h, 'employee', 'counter.bump', { name: 'w' });
    now = Date.parse('2030-03-12T08:00:00Z');
    await call(h, 'employee', 'counter.bump', { name: 'w' });
    now = Date.parse('2030-03-12T11:59:00Z');
    const count = async (window: string) =>
      (
        okResult(
          await call(h, 'read_only', 'verbs.reputation', { window, verb: 'counter.bump' }),
          'reputation',
        ).scores as Score[]
      )[0]?.invocations ?? 0;
    assert.equal(await count('1h'), 0);
    assert.equal(await count('24h'), 1);
    assert.equal(await count('7d'), 4);
    now = Date.parse('2030-03-10T11:59:00Z');
    assert.equal(await count('1h'), 2);
  });

  it('refuses absurd windows and limits with invalid_input', async (t) => {
    const h = await createObserveRuntime(t);
    for (const [args, path] of [
      [{ window: '90d' }, '/window'],
      [{ window: '1y' }, '/window'],
      [{ limit: 0 }, '/limit'],
      [{ limit: 100000 }, '/limit'],
      [{ by_agent: 'yes' }, '/by_agent'],
    ] as const) {
      assert.equal(refused(await call(h, 'read_only', 'verbs.reputation', args), 'invalid_input').path, path);
    }
  });
});

describe('ReputationAggregator.record', () => {
  it('counts every row in its own (tenant, hour, verb, agent) bucket, across runs, hour changes and flushes', async () => {
    const written = new Map<string, number>();
    const fakeRt = {
      registry: { reasons: undefined },
      logger: { error: () => {} },
      store: {
        write: async (body: (tx: unknown) => Promise<void>) =>
          body({
            run: async (sql: string, p: unknown[]) => {
              if (!sql.includes('reputation_counts')) return { changes: 1 };
              if (p[1] !== 'h') return { changes: 1 };
              const key = `${String(p[0])}|${String(p[2])}|${String(p[3])}|${String(p[4])}`;
              written.set(key, (written.get(key) ?? 0) + Number(p[5]));
              return { changes: 1 };
            },
          }),
      },
    };
    const agg = new ReputationAggregator(fakeRt as never, 0);
    const expected = new Map<string, number>();
    const t0 = Date.UTC(2026, 0, 1, 10, 59, 0);
    for (let i = 0; i < 600; i++) {
      // Runs of 7 rows of one tenant/verb/agent; time crosses an hour boundary mid-run.
      const run = Math.floor(i / 7);
      const at = new Date(t0 + i * 250).toISOString();
      const row = {
        company_id: 1 + (run % 2),
        created_at: at,
        action_type: run % 3 === 0 ? 'crm.search' : 'crm.get',
        agent_type: run % 5 === 0 ? null : 'cli',
        status: 'completed',
        reason: null,
        shape: 'aggregate',
        latency_ms: 0.5,
      };
      agg.record(row as never);
      const key = `${row.company_id}|${at.slice(0, 13)}:00:00.000Z|${row.action_type}|${row.agent_type ?? 'unknown'}`;
      expected.set(key, (expected.get(key) ?? 0) + 1);
      if (i === 150 || i === 302) await agg.flush(); // mid-run
    }
    await agg.flush();
    assert.deepEqual(
      [...written].sort(([a], [b]) => (a < b ? -1 : 1)),
      [...expected].sort(([a], [b]) => (a < b ? -1 : 1)),
    );
  });
});
