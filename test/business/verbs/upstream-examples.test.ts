/**
 * The three upstream examples (../shared/spec-reference/examples): our verbs accept the example
 * input and answer an output with the same structure — every member of the example's output is
 * present in ours with the same JSON type, recursively, and every relation type it shows appears
 * with the same members. The demo seed reproduces the examples' figures, so the values match too
 * where the example's entity exists (the droplet, a $118.00 card charge).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDemoRuntime } from '../../support/demo.ts';
import { UPSTREAM_SKIP, upstreamExample } from '../../support/upstream.ts';

const jsonType = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** Every member of `example` exists in `actual` with the same JSON type, recursively. */
function assertStructure(example: unknown, actual: unknown, path = '$'): void {
  assert.equal(
    jsonType(actual),
    jsonType(example),
    `${path}: ${jsonType(example)} expected, got ${jsonType(actual)}`,
  );
  if (Array.isArray(example)) {
    const items = actual as unknown[];
    for (const [i, item] of example.entries()) {
      const type = (item as { type?: unknown })?.type;
      const candidates =
        type === undefined ? items : items.filter((x) => (x as { type?: unknown })?.type === type);
      assert.ok(
        candidates.length > 0,
        `${path}[${i}]: no item${type === undefined ? '' : ` of type ${String(type)}`}`,
      );
      assertStructure(item, candidates[0], `${path}[${i}]`);
    }
    return;
  }
  if (example !== null && typeof example === 'object') {
    for (const [k, v] of Object.entries(example)) {
      assert.ok(k in (actual as object), `${path}.${k} is missing`);
      assertStructure(v, (actual as Record<string, unknown>)[k], `${path}.${k}`);
    }
  }
}

const OFFSET_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

test(
  'customer.full_context answers the structure of examples/customer-context.json',
  { skip: UPSTREAM_SKIP },
  async (t) => {
    const d = await openDemoRuntime(t);
    const ex = upstreamExample('customer-context.json');
    const verb = d.rt.registry.get(ex.verb)!;
    assert.equal(verb.shape, ex.shape);
    assert.ok(verb.validate(structuredClone(ex.input)), 'the example input is valid');
    const env = await d.call('read_only', ex.verb, ex.input);
    assert.equal(env.ok, true, JSON.stringify(env.error));
    assertStructure(ex.output, env.result);
    const r = env.result as {
      entity_id: number;
      entity_type: string;
      data: { open_deals: number; payment_methods: Array<{ last4: string }>; last_interaction: string };
      relations: Array<{ type: string; date?: string }>;
      fetched_at: string;
    };
    assert.equal(r.entity_id, 42);
    assert.equal(r.entity_type, 'customer');
    assert.equal(r.data.open_deals, 2);
    assert.equal(r.data.payment_methods[0]!.last4, '4242');
    assert.match(r.data.last_interaction, OFFSET_TIME);
    assert.match(r.fetched_at, OFFSET_TIME);
    for (const rel of r.relations.filter((x) => x.type === 'appointment'))
      assert.match(rel.date!, /-06:00$/, 'visit times in the business offset');
  },
);

test(
  'infrastructure_diagnose answers examples/infrastructure-diagnose.json (same members and, for the seeded droplet, the same values)',
  { skip: UPSTREAM_SKIP },
  async (t) => {
    const d = await openDemoRuntime(t);
    const ex = upstreamExample('infrastructure-diagnose.json');
    assert.equal(d.rt.registry.get(ex.verb)!.shape, ex.shape);
    const env = await d.call('read_only', ex.verb, ex.input);
    assert.equal(env.ok, true, JSON.stringify(env.error));
    assertStructure(ex.output, env.result);
    for (const [k, v] of Object.entries(ex.output)) assert.deepEqual(env.result![k], v, k);
    assert.equal(env.result!.entity_id, ex.output.droplet_id);
    assert.equal(env.result!.entity_type, 'droplet');
    assert.equal(typeof env.result!.data, 'object');
  },
);

test(
  'payments.preview_refund_impact answers examples/preview-refund.json (nullable amount accepted; same figures for a $118.00 card charge)',
  { skip: UPSTREAM_SKIP },
  async (t) => {
    const d = await openDemoRuntime(t);
    const ex = upstreamExample('preview-refund.json');
    const verb = d.rt.registry.get(ex.verb)!;
    assert.equal(verb.shape, ex.shape);
    assert.ok(verb.validate(structuredClone(ex.input)), 'the example input is valid');
    assert.ok(
      verb.validate({ transaction_id: 100, refund_amount_cents: null }),
      'refund_amount_cents may be null (full refund)',
    );
    const payment = d.fixtures.captured_payment;
    assert.equal(payment.amount_cents, (ex.output.current as { amount_cents: number }).amount_cents);
    const env = await d.call('read_only', ex.verb, { ...ex.input, transaction_id: payment.id });
    assert.equal(env.ok, true, JSON.stringify(env.error));
    assertStructure(ex.output, env.result);
    const expected = structuredClone(ex.output) as Record<string, Record<string, unknown>>;
    expected.current!.transaction_id = payment.id;
    expected.projected!.transaction_id = payment.id;
    for (const k of ['current', 'projected', 'delta', 'reversible', 'notes'])
      assert.deepEqual(env.result![k], expected[k], k);
    const full = await d.call('read_only', ex.verb, {
      transaction_id: payment.id,
      refund_amount_cents: null,
    });
    assert.equal(
      (full.result!.delta as { refunded_cents: number }).refunded_cents,
      payment.amount_cents,
      'null = a full refund',
    );
    assert.match(String(full.result!.notes), /^Full refund\./);
  },
);
