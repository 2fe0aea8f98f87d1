/**
 * The transports on a user's own Fastify app (solidVerbsPlugin under a prefix) and standalone
 * (startServer): verbs dispatch under the prefix, our JSON parser and envelope errors apply there
 * only, the app's own routes and 404 keep Fastify's behaviour. Spec: spec/transports.md §http.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { createTestBusiness } from '../../../src/testing.ts';
import { definePack } from '../../../src/runtime/pack.ts';
import { defineVerb } from '../../../src/runtime/verb.ts';
import { solidVerbsPlugin, startServer } from '../../../src/transports/server/index.ts';

const pack = definePack({
  name: 'shop',
  description: 'A shop.',
  migrations: [],
  verbs: [
    defineVerb({
      name: 'shop.greet',
      description: 'Say hello.',
      shape: 'aggregate',
      category: 'shop',
      input: { type: 'object', properties: {}, additionalProperties: false },
      async handler(ctx) {
        return { entity_id: ctx.principal.company_id, data: { hello: 'world' } };
      },
    }),
  ],
});

async function userApp(t: TestContext, mounts: ('mcp' | 'ucp' | 'webmcp')[] = []) {
  const b = await createTestBusiness({ packs: [pack] });
  t.after(() => b.close());
  const app = Fastify({ logger: false });
  app.get('/hello', async () => ({ hi: 'there' }));
  app.post('/echo', async (request) => ({ got: request.body }));
  await app.register(solidVerbsPlugin, { rt: b.rt, prefix: '/agents', mounts });
  t.after(() => app.close());
  await app.ready();
  return { b, app };
}

describe('solidVerbsPlugin on a user app', () => {
  it('dispatches a verb under the prefix and serves health and openapi there', async (t) => {
    const { b, app } = await userApp(t, ['mcp', 'ucp']);
    const res = await app.inject({
      method: 'POST',
      url: '/agents/api/v1/agent/dispatch/shop.greet',
      headers: { authorization: `Bearer ${b.keys.owner}`, 'content-type': 'application/json' },
      payload: { args: {} },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().result.data, { hello: 'world' });
    assert.equal((await app.inject({ url: '/agents/healthz' })).statusCode, 200);
    const openapi = await app.inject({ url: '/agents/openapi.json' });
    assert.equal(openapi.statusCode, 200);
    assert.equal((await app.inject({ url: '/api/v1/agent/verbs' })).statusCode, 404);
  });

  it('answers a malformed body under the prefix with our envelope', async (t) => {
    const { b, app } = await userApp(t);
    const res = await app.inject({
      method: 'POST',
      url: '/agents/api/v1/agent/dispatch/shop.greet',
      headers: { authorization: `Bearer ${b.keys.owner}`, 'content-type': 'application/json' },
      payload: '{"args": {',
    });
    assert.equal(res.statusCode, 400);
    const env = res.json();
    assert.equal(env.ok, false);
    assert.equal(typeof env.error.reason, 'string');
    assert.ok(env.error.message.length > 0 && env.error.hint.length > 0);
    const missing = await app.inject({ url: '/agents/nothing-here' });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().error.reason, 'not_found');
  });

  it("leaves the app's own routes, body parsing and 404 alone", async (t) => {
    const { app } = await userApp(t);
    const hello = await app.inject({ url: '/hello' });
    assert.equal(hello.statusCode, 200);
    assert.deepEqual(hello.json(), { hi: 'there' });
    const echo = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'text/plain' },
      payload: 'plain text',
    });
    assert.equal(echo.statusCode, 200, echo.body); // our parser would answer 415
    assert.deepEqual(echo.json(), { got: 'plain text' });
    const bad = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'application/json' },
      payload: '{',
    });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().ok, undefined, 'Fastify default error, not our envelope');
    assert.equal(bad.json().code, 'FST_ERR_CTP_INVALID_JSON_BODY');
    const missing = await app.inject({ url: '/nope' });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().error, 'Not Found'); // Fastify's own 404 JSON
    assert.equal(missing.json().ok, undefined);
  });

  it('refuses the webmcp mount under a prefix, clearly, at registration', async (t) => {
    const b = await createTestBusiness({ packs: [pack] });
    t.after(() => b.close());
    const app = Fastify({ logger: false });
    t.after(() => app.close());
    void app.register(solidVerbsPlugin, { rt: b.rt, prefix: '/agents', mounts: ['webmcp'] });
    await assert.rejects(
      async () => app.ready(),
      (err: Error & { reason?: string }) => {
        assert.equal(err.reason, 'invalid_request');
        assert.match(err.message, /webmcp mount .* needs the root prefix/);
        return true;
      },
    );
  });
});

describe('startServer', () => {
  it('listens on port 0, answers /healthz, and close() frees the port', async (t) => {
    const b = await createTestBusiness({ packs: [pack] });
    t.after(() => b.close());
    const server = await startServer(b.rt, { port: 0, logger: false });
    const port = Number(new URL(server.url).port);
    assert.ok(port > 0);
    const res = await fetch(`${server.url}/healthz`);
    assert.equal(res.status, 200);
    await server.close();
    await assert.rejects(fetch(`${server.url}/healthz`));
    // The same port can be bound again once closed.
    const again = await startServer(b.rt, { port, logger: false });
    await again.close();
  });
});
