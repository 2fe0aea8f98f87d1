/**
 * /healthz says the process is up; /readyz says the store answers (503 store_unavailable when it
 * does not). Spec: spec/transports.md §http-health.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHttpHarness, envelopeOf } from './harness.ts';
import { StoreError } from '../../../src/store/store.ts';

test('/healthz and /readyz answer 200 while the store is up', async (t) => {
  const x = await createHttpHarness(t);
  const health = await x.inject({ method: 'GET', url: '/healthz' });
  assert.equal(health.statusCode, 200);
  assert.deepEqual(health.json(), { ok: true, status: 'up' });
  const ready = await x.inject({ method: 'GET', url: '/readyz' });
  assert.equal(ready.statusCode, 200);
  assert.deepEqual(ready.json(), { ok: true, status: 'ready' });
});

test('/readyz answers 503 store_unavailable when the store does not answer; /healthz stays 200', async (t) => {
  const x = await createHttpHarness(t);
  const store = x.h.rt.store;
  const ping = store.ping.bind(store);
  store.ping = async () => {
    throw new StoreError('unavailable', 'database is locked');
  };
  t.after(() => {
    store.ping = ping;
  });
  const ready = await x.inject({ method: 'GET', url: '/readyz' });
  assert.equal(ready.statusCode, 503);
  assert.equal(envelopeOf(ready).error!.reason, 'store_unavailable');
  assert.ok(!ready.body.includes('locked'), 'the driver message stays in the log');
  assert.equal((await x.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
});
