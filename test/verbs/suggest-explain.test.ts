/**
 * agent.suggest_next_verb (shape suggest) and audit.explain (shape explain), both computed from the
 * tenant's own trail and events. Spec: spec/shapes.md §suggest, §explain.
 *
 * Run: node --import tsx --test test/verbs/suggest-explain.test.ts
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call, createObserveRuntime, okResult, refused } from '../support/observe-verbs.ts';
import type { TestRuntime } from '../support/runtime.ts';
import type { Role } from '../../src/spec/types.ts';

interface Suggestion {
  action: string;
  confidence: number;
  confidence_band: string;
  reason: string;
  model_version: string;
  sample_size: number;
}

type Op = 'bump' | 'get' | 'fail';
const VERB: Record<Op, string> = { bump: 'counter.bump', get: 'counter.get', fail: 'counter.bump' };

async function run(h: TestRuntime, role: Role, ops: readonly Op[]): Promise<void> {
  for (const op of ops) {
    if (op === 'get') await call(h, role, 'counter.get', { name: 'k' });
    else await call(h, role, 'counter.bump', { name: 'k', fail: op === 'fail' });
    // Orientation calls between steps are not steps.
    await call(h, role, 'verbs.list', {});
  }
  await h.rt.auditBuffer.flush();
}

/** Transitions out of `from` in an op sequence, computed directly: next verb → [count, ok]. */
function expectedAfter(ops: readonly Op[], from: string): { n: number; next: Map<string, [number, number]> } {
  const next = new Map<string, [number, number]>();
  let n = 0;
  for (let i = 1; i < ops.length; i++) {
    if (VERB[ops[i - 1]!] !== from) continue;
    const v = VERB[ops[i]!];
    const cur = next.get(v) ?? [0, 0];
    next.set(v, [cur[0] + 1, cur[1] + (ops[i] === 'fail' ? 0 : 1)]);
    n++;
  }
  return { n, next };
}

describe('agent.suggest_next_verb', () => {
  it('ranks next verbs from transition statistics of the trail, with the true sample size and bands', async (t) => {
    // One second per clock reading, so no two calls share a millisecond (order within one is audit_id order).
    let now = Date.parse('2030-05-01T10:00:00Z');
    const h = await createObserveRuntime(t, { clock: () => new Date((now += 1000)) });
    const ops: Op[] = [];
    for (let i = 0; i < 8; i++) ops.push('bump', 'get');
    ops.push('bump', 'fail', 'bump', 'fail', 'bump');
    await run(h, 'employee', ops);
    const r = okResult(await call(h, 'employee', 'agent.suggest_next_verb', {}), 'suggest');
    assert.equal(r.context_verb, 'counter.bump', "inferred from the caller's last call");
    assert.equal(r.context_source, 'trail');
    const exp = expectedAfter(ops, 'counter.bump');
    const suggestions = r.suggestions as Suggestion[];
    assert.deepEqual(
      suggestions.map((s) => [s.action, s.confidence, s.sample_size, s.confidence_band]),
      [...exp.next.entries()]
        .map(([v, [, ok]]) => [v, Math.round((ok / exp.n) * 10000) / 10000, exp.n, 'learning'])
        .sort((a, b) => (b[1] as number) - (a[1] as number)),
    );
    assert.equal(exp.n < 20, true);
    assert.equal(suggestions[0]!.model_version, 'transitions-v1');
    assert.ok(
      suggestions[0]!.reason.includes(
        `counter.bump was followed ${exp.n} times; 8 of those by counter.get, which succeeded 8 times`,
      ),
      suggestions[0]!.reason,
    );

    // With enough data the band reflects the confidence.
    const more: Op[] = [];
    for (let i = 0; i < 10; i++) more.push('get', 'bump');
    await run(h, 'employee', more);
    const all = [...ops, ...more];
    const exp2 = expectedAfter(all, 'counter.bump');
    const r2 = okResult(
      await call(h, 'employee', 'agent.suggest_next_verb', { after_verb: 'counter.bump' }),
      'suggest',
    );
    const top = (r2.suggestions as Suggestion[])[0]!;
    const [count, ok] = exp2.next.get('counter.get')!;
    assert.equal(exp2.n >= 20, true);
    assert.deepEqual(
      [top.action, top.sample_size, top.confidence],
      ['counter.get', exp2.n, Math.round((ok / exp2.n) * 10000) / 10000],
    );
    assert.equal(top.confidence_band, ok / exp2.n >= 0.5 ? 'high' : ok / exp2.n >= 0.2 ? 'medium' : 'low');
    assert.equal(count, ok);
    assert.equal(r2.context_source, 'argument');
  });

  it('suggests only verbs the caller may call, and falls back to the most used verbs without context', async (t) => {
    let now = Date.parse('2030-05-01T10:00:00Z');
    const h = await createObserveRuntime(t, { clock: () => new Date((now += 1000)) });
    for (let i = 0; i < 3; i++) {
      await call(h, 'owner', 'counter.bump', { name: 'c' });
      const p = await call(h, 'owner', 'counter.charge', { name: 'c', amount: 1 });
      await call(
        h,
        'owner',
        'counter.charge',
        { name: 'c', amount: 1 },
        { confirm: true, nonce: p.consent!.nonce, typed_phrase: 'CHARGE 1 to c' },
      );
    }
    await h.rt.auditBuffer.flush();
    const owner = okResult(
      await call(h, 'owner', 'agent.suggest_next_verb', { after_verb: 'counter.bump' }),
      'suggest',
    );
    assert.deepEqual(
      (owner.suggestions as Suggestion[]).map((s) => [s.action, s.sample_size, s.confidence]),
      [['counter.charge', 3, 1]],
      'the pending half of a consent round trip is not a step',
    );
    const employee = okResult(
      await call(h, 'employee', 'agent.suggest_next_verb', { after_verb: 'counter.bump' }),
      'suggest',
    );
    assert.ok(
      !(employee.suggestions as Suggestion[]).some((s) => s.action === 'counter.charge'),
      'below the role floor: never suggested',
    );
    const fresh = okResult(await call(h, 'read_only', 'agent.suggest_next_verb', {}), 'suggest');
    assert.equal(fresh.context_source, 'none');
    const fs = fresh.suggestions as Suggestion[];
    assert.ok(fs.length > 0);
    for (const s of fs) {
      assert.equal(s.confidence_band, 'learning');
      assert.equal(s.model_version, 'transitions-v1/popularity');
      assert.equal(s.sample_size, 6, 'six steps: three bumps and three confirmed charges');
    }
    assert.ok(!fs.some((s) => s.action === 'counter.charge'), 'below the role floor: never suggested');
    const keyless = okResult(
      await h.rt.dispatch({ surface: 'http' }, 'agent.suggest_next_verb', {}),
      'suggest',
    );
    assert.deepEqual(keyless.suggestions, [], 'the sandbox tenant has no trail');
  });

  it('does not join calls more than 30 minutes apart', async (t) => {
    let now = Date.parse('2030-05-01T10:00:00Z');
    const h = await createObserveRuntime(t, { clock: () => new Date(now) });
    await call(h, 'employee', 'counter.bump', { name: 'g' });
    now += 31 * 60_000;
    await call(h, 'employee', 'counter.get', { name: 'g' });
    await h.rt.auditBuffer.flush();
    const r = okResult(
      await call(h, 'employee', 'agent.suggest_next_verb', { after_verb: 'counter.bump' }),
      'suggest',
    );
    assert.equal(r.transitions_seen, 0);
    assert.ok((r.suggestions as Suggestion[]).every((s) => s.model_version.endsWith('/popularity')));
  });

  it('refuses absurd windows and limits', async (t) => {
    const h = await createObserveRuntime(t);
    assert.equal(
      refused(await call(h, 'employee', 'agent.suggest_next_verb', { window: '10y' }), 'invalid_input').path,
      '/window',
    );
    assert.equal(
      refused(await call(h, 'employee', 'agent.suggest_next_verb', { limit: 0 }), 'invalid_input').path,
      '/limit',
    );
  });
});

describe('audit.explain', () => {
  it('gives the causal chain of any entity from the audit log and events, with its current state', async (t) => {
    const h = await createObserveRuntime(t);
    const p = await call(h, 'owner', 'counter.charge', { name: 'e', amount: 5 });
    await call(
      h,
      'owner',
      'counter.charge',
      { name: 'e', amount: 5 },
      { confirm: true, nonce: p.consent!.nonce, typed_phrase: 'CHARGE 5 to e' },
    );
    const b1 = await call(h, 'employee', 'counter.bump', { name: 'e' });
    await call(h, 'employee', 'counter.bump', { name: 'e', fail: true });
    const b2 = await call(h, 'admin', 'counter.bump', { name: 'e', by: 10 });
    await call(h, 'employee', 'counter.get', { name: 'e' });
    await call(h, 'employee', 'counter.bump', { name: 'other' });
    await h.rt.auditBuffer.flush();
    const r = okResult(
      await call(h, 'read_only', 'audit.explain', { entity_type: 'counter', entity_id: 'e' }),
      'explain',
    );
    const chain = r.causal_chain as Array<{
      action: string;
      actor: string;
      detail: string;
      source: string;
      audit_id?: number;
      timestamp: string;
    }>;
    assert.deepEqual(
      chain.map((c) => [c.source, c.action, c.audit_id ?? null]),
      [
        ['event', 'counter.charged', chain[0]!.audit_id],
        ['audit', 'counter.bump', b1.audit_id],
        ['event', 'counter.bumped', b1.audit_id],
        ['audit', 'counter.bump', b2.audit_id],
        ['event', 'counter.bumped', b2.audit_id],
      ],
    );
    assert.deepEqual(
      chain.map((c) => c.timestamp),
      [...chain.map((c) => c.timestamp)].sort(),
    );
    assert.equal(chain[1]!.actor, 'user:3 via test');
    assert.equal(chain[2]!.detail, 'counter.bumped: by=1');
    assert.deepEqual(r.current_state, { value: 16 });
    assert.match(r.reasoning as string, /^counter e has 2 recorded actions and 3 events/);
    assert.equal(r.entity_id, 'e');
    refused(
      await call(h, 'read_only', 'audit.explain', { entity_type: 'counter', entity_id: 'nope' }),
      'not_found',
    );
    refused(
      await call(h, h.principal('owner', h.otherCompanyId), 'audit.explain', {
        entity_type: 'counter',
        entity_id: 'e',
      }),
      'not_found',
    );
  });
});
