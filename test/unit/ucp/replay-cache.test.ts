/** ReplayCache: one acceptance per signature within its window, bounded size. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReplayCache } from '../../../src/transports/ucp/replay-cache.ts';

describe('ReplayCache', () => {
  it('refuses an id seen before until its window ends, then accepts it again', () => {
    const cache = new ReplayCache();
    assert.equal(cache.checkAndRecord('k1 sig', 1_000, 900), true);
    assert.equal(cache.checkAndRecord('k1 sig', 1_000, 950), false);
    assert.equal(cache.checkAndRecord('k1 sig', 1_000, 1_000), false);
    assert.equal(cache.checkAndRecord('k1 other', 1_000, 950), true);
    assert.equal(cache.checkAndRecord('k1 sig', 1_100, 1_001), true);
  });

  it('keeps at most maxEntries, sweeping expired entries before evicting the oldest', () => {
    const cache = new ReplayCache({ maxEntries: 3 });
    cache.checkAndRecord('a', 100, 0);
    cache.checkAndRecord('b', 1_000, 0);
    cache.checkAndRecord('c', 1_000, 0);
    cache.checkAndRecord('d', 1_000, 200); // 'a' expired: swept, nothing live evicted
    assert.equal(cache.size, 3);
    assert.equal(cache.checkAndRecord('b', 1_000, 200), false);
    cache.checkAndRecord('e', 1_000, 200); // full of live entries: oldest ('b') evicted
    assert.equal(cache.size, 3);
    assert.equal(cache.checkAndRecord('c', 1_000, 200), false);
    assert.equal(cache.checkAndRecord('e', 1_000, 200), false);
    assert.equal(cache.checkAndRecord('b', 1_000, 200), true); // forgotten: the documented cost of the bound
  });

  it('does not store an id whose window already ended', () => {
    const cache = new ReplayCache();
    assert.equal(cache.checkAndRecord('old', 10, 20), true);
    assert.equal(cache.size, 0);
  });

  it('rejects a non-positive bound', () => {
    assert.throws(() => new ReplayCache({ maxEntries: 0 }), RangeError);
  });
});
