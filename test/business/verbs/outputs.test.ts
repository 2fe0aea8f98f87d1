/**
 * Every verb of the demo pack, called once through dispatch on a seeded demo runtime: it answers
 * ok, its result validates against its shape's schema (ours and, where upstream publishes one,
 * upstream's), and the envelope validates against the upstream envelope schema. Writes go
 * through their consent gate like a human who agrees (test/support/demo.ts commit).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { demoPack } from '../../../src/business/pack.ts';
import { validateEnvelope, validateShapeOutput } from '../../../src/spec/validators.ts';
import { openDemoRuntime } from '../../support/demo.ts';
import { upstreamAvailable, upstreamValidator } from '../../support/upstream.ts';
import { afterSample, NEVER_RUN, SAMPLES, type SampleState } from './sample-calls.ts';

test('every pack verb has a sample call (new verbs must add one)', () => {
  const missing = demoPack.verbs.map((v) => v.name).filter((n) => !(n in SAMPLES) && !NEVER_RUN.has(n));
  assert.deepEqual(missing, []);
  const unknown = Object.keys(SAMPLES).filter((n) => !demoPack.verbs.some((v) => v.name === n));
  assert.deepEqual(unknown, []);
});

test('every pack verb answers ok with an output valid against its shape schema (ours and upstream)', async (t) => {
  const d = await openDemoRuntime(t);
  const state: SampleState = {};
  const shapesSeen = new Set<string>();
  for (const [name, sample] of Object.entries(SAMPLES)) {
    const verb = d.rt.registry.get(name)!;
    assert.ok(verb, `${name} is registered`);
    const args = await sample(d, state);
    const env = verb.isWrite ? await d.commit('owner', name, args) : await d.call('owner', name, args);
    assert.equal(env.ok, true, `${name}: ${JSON.stringify(env.error)}`);
    const result = env.result!;
    const own = validateShapeOutput(verb.shape, result);
    assert.ok(own.valid, `${name} (${verb.shape}): ${own.errors.join('; ')}`);
    assert.ok(validateEnvelope(env).valid, `${name}: envelope ${validateEnvelope(env).errors.join('; ')}`);
    if (upstreamAvailable) {
      const up = upstreamValidator(`shapes/${verb.shape}`);
      if (up !== undefined)
        assert.ok(up(result), `${name} vs upstream ${verb.shape}: ${JSON.stringify(up.errors)}`);
      const upEnv = upstreamValidator('envelope')!;
      assert.ok(upEnv(env), `${name} envelope vs upstream: ${JSON.stringify(upEnv.errors)}`);
    }
    if (verb.shape === 'preview') {
      // `reversible` tells the truth: it agrees with whether each write previewed here has a revert handler.
      for (const w of d.rt.registry.all().filter((x) => x.definition.preview === name)) {
        assert.equal(
          result.reversible,
          w.revertible,
          `${name}.reversible must match ${w.name}'s revert handler`,
        );
      }
    }
    if (verb.isWrite) {
      assert.equal(typeof result.audit_id, 'number', `${name} receipt has an audit_id`);
      assert.equal(typeof result.idempotency_key, 'string', `${name} receipt has an idempotency_key`);
      assert.equal(
        'rollback_handle' in result,
        verb.revertible,
        `${name}: a rollback_handle exactly when the verb has a revert handler`,
      );
    }
    afterSample(name, result, state);
    shapesSeen.add(verb.shape);
  }
  assert.deepEqual([...shapesSeen].sort(), ['aggregate', 'explain', 'preview', 'receipt', 'suggest']);
});
