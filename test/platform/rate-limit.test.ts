/**
 * A platform credential has a rate-limit budget of its own (src/transports/http/rate-limit.ts):
 * counted by its verified key id, not by the client address, so one backend provisioning many
 * tenants is limited as one key, two platform keys do not share a budget, and a bad or revoked
 * platform key is counted against the address like a bad API key.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createHttpServer } from '../../src/transports/http/server.ts';
import { platformPlugin } from '../../src/platform/plugin.ts';
import { createPlatformKey } from '../../src/platform/platform-keys.ts';
import { createTestRuntime } from '../support/runtime.ts';

it('each platform key is limited on its own budget; a bad platform key spends the address budget', async (t) => {
  const h = await createTestRuntime(t);
  const app = createHttpServer(h.rt, {
    logger: false,
    plugins: [platformPlugin],
    rateLimits: { perKey: 3, perSession: 0, perAddress: 2, windowMs: 60_000 },
  });
  await app.ready();
  t.after(() => app.close());
  const a = (await createPlatformKey(h.rt.store, 'backend-a', h.rt.clock())).key;
  const b = (await createPlatformKey(h.rt.store, 'backend-b', h.rt.clock())).key;
  const call = (key: string) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/platform/platform.tenants.list',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload: '{}',
    });
  // Key a: three calls, beyond the address budget of two, then rate_limited.
  for (let i = 0; i < 3; i++) assert.equal((await call(a)).statusCode, 200, `call ${i + 1}`);
  const over = await call(a);
  assert.equal(over.statusCode, 429);
  assert.equal(over.json().error.reason, 'rate_limited');
  assert.ok(Number(over.headers['retry-after']) >= 1);
  // Key b from the same address keeps its own budget.
  assert.equal((await call(b)).statusCode, 200);
  // A forged platform key spends the address's budget (2), not a key's.
  const forged = `${a.slice(0, -4)}zzzz`;
  assert.equal((await call(forged)).statusCode, 401);
  assert.equal((await call(forged)).statusCode, 401);
  assert.equal((await call(forged)).statusCode, 429);
});
