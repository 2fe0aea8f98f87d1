/**
 * Transport-level refusals: JSON only, size limit, malformed JSON, prototype poisoning, unknown
 * routes. Each is an envelope with the reason's status, never Fastify's default error JSON and
 * never a stack. Spec: spec/transports.md §http-body, §http-errors.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHttpHarness, envelopeOf } from './harness.ts';
import { validateEnvelope } from '../../../src/spec/validators.ts';
import type { LightMyRequestResponse } from 'fastify';
import { MAX_JSON_KEYS, MAX_JSON_NODES, checkJsonBounds } from '../../../src/spec/strict-json.ts';

function assertTransportError(res: LightMyRequestResponse, status: number, reason: string): void {
  assert.equal(res.statusCode, status, res.body);
  assert.match(res.headers['content-type'] as string, /^application\/json/);
  const env = envelopeOf(res) as unknown as Record<string, unknown>;
  assert.ok(validateEnvelope(env).valid, res.body);
  assert.equal(env.ok, false);
  assert.equal((env.error as { reason: string }).reason, reason);
  assert.equal(typeof (env.error as { hint?: string }).hint, 'string');
  for (const k of ['statusCode', 'code', 'stack'])
    assert.ok(!(k in env) && !(k in (env.error as object)), `no Fastify "${k}"`);
  assert.ok(!/\n\s+at /.test(res.body), 'no stack trace');
}

const url = '/api/v1/agent/dispatch/notes.count';

test('malformed JSON answers 400 invalid_request naming the parse problem and position', async (t) => {
  const x = await createHttpHarness(t);
  const res = await x.inject({
    method: 'POST',
    url,
    payload: '{"args": {',
    headers: { 'content-type': 'application/json' },
  });
  assertTransportError(res, 400, 'invalid_request');
  const env = envelopeOf(res);
  assert.match(env.error!.message, /not valid JSON/);
  assert.equal(typeof env.error!.details!.position, 'number');
  assert.equal(env.verb, 'notes.count');
});

test('a body that is not JSON answers 415 unsupported_media_type', async (t) => {
  const x = await createHttpHarness(t);
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
    const res = await x.inject({ method: 'POST', url, payload: 'args=1', headers: { 'content-type': type } });
    assertTransportError(res, 415, 'unsupported_media_type');
  }
});

test('JSON media types with parameters or a +json suffix are accepted; an empty JSON body means no body', async (t) => {
  const x = await createHttpHarness(t);
  for (const type of ['application/json; charset=utf-8', 'application/vnd.solid+json']) {
    const res = await x.inject({
      method: 'POST',
      url,
      payload: '{"args":{}}',
      headers: { 'content-type': type },
    });
    assert.equal(res.statusCode, 200, `${type}: ${res.body}`);
  }
  const empty = await x.inject({
    method: 'POST',
    url,
    payload: '',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(empty.statusCode, 200, empty.body);
});

test('a body over the limit answers 413 payload_too_large; the limit is configurable', async (t) => {
  const x = await createHttpHarness(t);
  const big = JSON.stringify({ args: { pad: 'x'.repeat(1_048_576) } });
  assertTransportError(
    await x.inject({ method: 'POST', url, payload: big, headers: { 'content-type': 'application/json' } }),
    413,
    'payload_too_large',
  );
  const small = await createHttpHarness(t, { bodyLimitBytes: 64 });
  const res = await small.inject({
    method: 'POST',
    url,
    payload: JSON.stringify({ args: { text: 'y'.repeat(100) } }),
    headers: { 'content-type': 'application/json' },
  });
  assertTransportError(res, 413, 'payload_too_large');
  assert.equal(envelopeOf(res).error!.details!.limit_bytes, 64);
  const fits = await small.inject({
    method: 'POST',
    url,
    payload: '{"args":{}}',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(fits.statusCode, 200);
});

test('prototype-poisoning keys answer 400 invalid_request', async (t) => {
  const x = await createHttpHarness(t);
  for (const payload of [
    '{"args":{"__proto__":{"admin":true}}}',
    '{"args":{"constructor":{"prototype":{"admin":true}}}}',
  ]) {
    assertTransportError(
      await x.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_request',
    );
  }
  assert.equal(({} as Record<string, unknown>).admin, undefined);
});

test('an unknown route or method answers a 404 envelope', async (t) => {
  const x = await createHttpHarness(t);
  assertTransportError(await x.inject({ method: 'GET', url: '/api/v1/nope' }), 404, 'not_found');
  assertTransportError(await x.inject({ method: 'GET', url }), 404, 'not_found');
  assertTransportError(await x.inject({ method: 'DELETE', url: '/api/v1/agent/verbs' }), 404, 'not_found');
});

test('a body over the work bound (keys per object, values in all) is refused before it is parsed, as an envelope', async (t) => {
  // issue 30 row 6: a 540 KB body of 50,000 keys held the event loop for about a second.
  const x = await createHttpHarness(t);
  const keys = Array.from({ length: 50_000 }, (_, i) => `"a${i}":0`).join(',');
  const wide = await x.inject({
    method: 'POST',
    url,
    payload: `{"args":{${keys}}}`,
    headers: { 'content-type': 'application/json' },
  });
  assertTransportError(wide, 400, 'invalid_request');
  assert.equal(envelopeOf(wide).error!.details!.max_keys, MAX_JSON_KEYS);
  assert.match(envelopeOf(wide).error!.message, /more than 1000 keys/);
  const values = Array.from({ length: MAX_JSON_NODES }, (_, i) => i).join(',');
  const long = await x.inject({
    method: 'POST',
    url,
    payload: `{"args":{"list":[${values}]}}`,
    headers: { 'content-type': 'application/json' },
  });
  assertTransportError(long, 400, 'invalid_request');
  assert.equal(envelopeOf(long).error!.details!.max_nodes, MAX_JSON_NODES);
  // The bounds are the server's option.
  const tight = await createHttpHarness(t, { jsonBounds: { maxKeys: 2 } });
  const three = await tight.inject({
    method: 'POST',
    url,
    payload: '{"args":{"a":1,"b":2,"c":3}}',
    headers: { 'content-type': 'application/json' },
  });
  assertTransportError(three, 400, 'invalid_request');
  const fits = await tight.inject({
    method: 'POST',
    url,
    payload: '{"args":{}}',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(fits.statusCode, 200, fits.body);
});

test('checkJsonBounds counts values at every depth, keys per object, and never hangs on malformed text', () => {
  assert.equal(checkJsonBounds('{"a":[1,2,{"b":"x"}],"c":null}', 's', { maxNodes: 7 }), undefined);
  assert.equal(
    checkJsonBounds('{"a":[1,2,{"b":"x"}],"c":null}', 's', { maxNodes: 6 })?.kind,
    'too_many_nodes',
  );
  assert.equal(checkJsonBounds('{"a":1,"b":{"c":1,"d":2}}', 's', { maxKeys: 2 }), undefined);
  assert.equal(checkJsonBounds('{"a":1,"b":2,"c":3}', 's', { maxKeys: 2 })?.kind, 'too_many_keys');
  assert.equal(checkJsonBounds('["a,b","c:d","{",  "}"]', 's', { maxNodes: 5 }), undefined);
  assert.equal(checkJsonBounds('[[[[1]]]]', 's', { maxDepth: 3 })?.kind, 'too_deep');
  for (const bad of ['{"a', '{"a\\"', '[1,2', '"', '{{{{', '}}]]', '{"a":"\\\\"']) checkJsonBounds(bad, 's');
});
