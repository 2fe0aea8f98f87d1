import assert from 'node:assert/strict';
import { test } from 'node:test';
import { changeTier, getSubscription } from '../../src/business/data/subscriptions.ts';
import { TIERS } from '../../src/business/schema.ts';
import { MAIN, NOW, OTHER, openSeededStore } from './seeded-store.ts';

const LATER = new Date(NOW.getTime() + 60_000);

test('changeTier upgrades and downgrades, returns the previous tier, and refuses same tier or too many seats', async (t) => {
  const { store } = await openSeededStore(t);
  const current = (await store.read((q) => getSubscription(q, OTHER)))!;
  assert.deepEqual([current.tier, current.status], ['starter', 'active']);
  assert.equal(current.monthly_price_cents, current.seats * TIERS.starter.seat_price_cents);
  const up = await store.write((tx) => changeTier(tx, OTHER, 'professional', LATER));
  assert.deepEqual(
    [up.previous_tier, up.direction, up.subscription.tier, up.subscription.updated_at],
    ['starter', 'upgrade', 'professional', LATER.toISOString()],
  );
  await assert.rejects(
    store.write((tx) => changeTier(tx, OTHER, 'professional', LATER)),
    { code: 'same_tier' },
  );
  const down = await store.write((tx) => changeTier(tx, OTHER, 'starter', LATER));
  assert.equal(down.direction, 'downgrade');
  const main = (await store.read((q) => getSubscription(q, MAIN)))!;
  assert.equal(main.seats, 12);
  await assert.rejects(
    store.write((tx) => changeTier(tx, MAIN, 'starter', LATER)),
    { code: 'seats_exceed_tier', message: /12 seats; starter allows 5/ },
  );
  await assert.rejects(
    store.write((tx) => changeTier(tx, MAIN, 'platinum' as never, LATER)),
    { code: 'invalid_input' },
  );
  await assert.rejects(
    store.write((tx) => changeTier(tx, 99, 'enterprise', LATER)),
    { code: 'not_found', message: /^subscription 99 not found$/ },
  );
});
