/**
 * Other transports mount on the server as encapsulated plugins (options.plugins): they get the
 * runtime, inherit the JSON-only parser and the envelope errors, and do not leak decorators.
 * Spec: spec/transports.md §http.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHttpHarness, envelopeOf } from './harness.ts';
import type { HttpPlugin } from '../../../src/transports/http/server.ts';
import { VerbError } from '../../../src/runtime/errors.ts';

test('a mounted plugin serves its routes with the runtime, behind the same JSON parser and envelope errors', async (t) => {
  const seen: unknown[] = [];
  const plugin: HttpPlugin = async (app, { rt }) => {
    app.decorate('pluginOnly', 1);
    app.post('/api/v1/test-plugin/echo', async (req) => {
      seen.push(req.body);
      return { verbs: rt.registry.size };
    });
    app.get('/api/v1/test-plugin/refuse', async () => {
      throw new VerbError('session_invalid', 'No session.', { hint: 'Log in.' });
    });
    app.get('/api/v1/test-plugin/crash', async () => {
      throw new Error('plugin secret /etc/shadow');
    });
  };
  const sibling: HttpPlugin = async (app) => {
    app.get('/api/v1/test-sibling/has', async () => ({ leaked: app.hasDecorator('pluginOnly') }));
  };
  const x = await createHttpHarness(t, { plugins: [plugin, sibling] });
  const echo = await x.inject({ method: 'POST', url: '/api/v1/test-plugin/echo', payload: { a: 1 } });
  assert.equal(echo.statusCode, 200);
  assert.equal((echo.json() as { verbs: number }).verbs, x.h.rt.registry.size);
  assert.deepEqual(seen, [{ a: 1 }]);
  const text = await x.inject({
    method: 'POST',
    url: '/api/v1/test-plugin/echo',
    payload: 'a=1',
    headers: { 'content-type': 'text/plain' },
  });
  assert.equal(text.statusCode, 415);
  assert.equal(envelopeOf(text).error!.reason, 'unsupported_media_type');
  const refused = await x.inject({ method: 'GET', url: '/api/v1/test-plugin/refuse' });
  assert.equal(refused.statusCode, 401);
  assert.equal(envelopeOf(refused).error!.reason, 'session_invalid');
  const crash = await x.inject({ method: 'GET', url: '/api/v1/test-plugin/crash' });
  assert.equal(crash.statusCode, 500);
  assert.equal(envelopeOf(crash).error!.reason, 'internal_error');
  assert.ok(!crash.body.includes('/etc/shadow'));
  assert.deepEqual((await x.inject({ method: 'GET', url: '/api/v1/test-sibling/has' })).json(), {
    leaked: false,
  });
  assert.equal(x.app.hasDecorator('pluginOnly'), false);
});
