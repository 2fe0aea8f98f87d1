/**
 * GET /api/v1/agent/verbs and /api/v1/agent/verbs/{name}: the HTTP manifest is the registry's
 * http projection exactly, every entry valid against the upstream VerbRecord schema; caching
 * headers, ETag/304, filters, unknown names. Spec: spec/transports.md §http-routes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHttpHarness, envelopeOf } from './harness.ts';
import { assertUpstreamValid } from '../../support/upstream.ts';
import { defineVerb } from '../../../src/runtime/verb.ts';
import { validateEnvelope } from '../../../src/spec/validators.ts';

test('the HTTP manifest equals registry.list({surface: "http"}) and every entry is a valid upstream VerbRecord', async (t) => {
  const x = await createHttpHarness(t);
  const res = await x.inject({ method: 'GET', url: '/api/v1/agent/verbs' });
  assert.equal(res.statusCode, 200);
  const body = res.json() as { verbs: Record<string, unknown>[]; total: number };
  const expected = x.h.rt.registry.list({ surface: 'http' });
  assert.deepEqual(body.verbs, JSON.parse(JSON.stringify(expected)));
  assert.equal(body.total, expected.length);
  assert.ok(body.verbs.some((v) => v.name === 'notes_add'));
  assert.ok(
    !body.verbs.some((v) => v.name === 'notes.cli_only'),
    'a verb without http in its surfaces is not listed',
  );
  for (const v of body.verbs) assertUpstreamValid('verb-record', v, String(v.name));
});

test('surface and shape filters select the matching projection', async (t) => {
  const x = await createHttpHarness(t);
  const cli = (await x.inject({ method: 'GET', url: '/api/v1/agent/verbs?surface=cli' })).json() as {
    verbs: { name: string }[];
  };
  assert.deepEqual(
    cli.verbs.map((v) => v.name),
    x.h.rt.registry.list({ surface: 'cli' }).map((v) => v.name),
  );
  assert.ok(cli.verbs.some((v) => v.name === 'notes.cli_only'));
  const receipts = (await x.inject({ method: 'GET', url: '/api/v1/agent/verbs?shape=receipt' })).json() as {
    verbs: { name: string; shape: string }[];
    total: number;
  };
  assert.deepEqual(
    receipts.verbs.map((v) => v.name),
    x.h.rt.registry.list({ surface: 'http', shape: 'receipt' }).map((v) => v.name),
  );
  assert.ok(receipts.verbs.every((v) => v.shape === 'receipt'));
  assert.ok(
    receipts.verbs.some((v) => v.name === 'notes_add') &&
      receipts.verbs.some((v) => v.name === 'notes_charge'),
  );
  assert.ok(!receipts.verbs.some((v) => v.name === 'notes.count'));
  assert.equal(receipts.total, receipts.verbs.length);
});

test('unknown surface or shape answers 400 invalid_request naming the allowed values', async (t) => {
  const x = await createHttpHarness(t);
  for (const url of ['/api/v1/agent/verbs?surface=fax', '/api/v1/agent/verbs?shape=poem']) {
    const res = await x.inject({ method: 'GET', url });
    assert.equal(res.statusCode, 400, url);
    const env = envelopeOf(res);
    assert.equal(env.ok, false);
    assert.equal(env.error!.reason, 'invalid_request');
    assert.ok(Array.isArray(env.error!.details!.allowed));
    assert.ok(validateEnvelope(env).valid);
  }
});

test('the manifest is cacheable for 5 minutes and revalidates with its ETag (304)', async (t) => {
  const x = await createHttpHarness(t);
  const first = await x.inject({ method: 'GET', url: '/api/v1/agent/verbs' });
  assert.equal(first.headers['cache-control'], 'private, max-age=300');
  const etag = first.headers.etag as string;
  assert.match(etag, /^"[^"]+"$/);
  const again = await x.inject({
    method: 'GET',
    url: '/api/v1/agent/verbs',
    headers: { 'if-none-match': etag },
  });
  assert.equal(again.statusCode, 304);
  assert.equal(again.body, '');
  assert.equal(again.headers.etag, etag);
  const weak = await x.inject({
    method: 'GET',
    url: '/api/v1/agent/verbs',
    headers: { 'if-none-match': `"other", W/${etag}` },
  });
  assert.equal(weak.statusCode, 304, 'weak comparison in a list');
  const filtered = await x.inject({
    method: 'GET',
    url: '/api/v1/agent/verbs?surface=cli',
    headers: { 'if-none-match': etag },
  });
  assert.equal(filtered.statusCode, 200, 'another filter has another ETag');
  assert.notEqual(filtered.headers.etag, etag);
  x.h.rt.register(
    defineVerb({
      name: 'notes.new_one',
      description: 'New.',
      shape: 'aggregate',
      category: 'crm',
      input: { type: 'object', properties: {} },
      handler: async () => ({ entity_id: 1, data: {} }),
    }),
  );
  const changed = await x.inject({
    method: 'GET',
    url: '/api/v1/agent/verbs',
    headers: { 'if-none-match': etag },
  });
  assert.equal(changed.statusCode, 200, 'a registration changes the ETag');
  assert.notEqual(changed.headers.etag, etag);
  assert.ok((changed.json() as { verbs: { name: string }[] }).verbs.some((v) => v.name === 'notes.new_one'));
});

test('GET /api/v1/agent/verbs/{name} returns one VerbRecord by verb or tool name', async (t) => {
  const x = await createHttpHarness(t);
  const res = await x.inject({ method: 'GET', url: '/api/v1/agent/verbs/notes.count' });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), JSON.parse(JSON.stringify(x.h.rt.registry.get('notes.count')!.record)));
  assert.equal(res.headers['cache-control'], 'private, max-age=300');
  const byTool = await x.inject({ method: 'GET', url: '/api/v1/agent/verbs/notes__count' });
  assert.equal((byTool.json() as { name: string }).name, 'notes.count');
  const cached = await x.inject({
    method: 'GET',
    url: '/api/v1/agent/verbs/notes.count',
    headers: { 'if-none-match': res.headers.etag as string },
  });
  assert.equal(cached.statusCode, 304);
});

test('an unknown verb name answers 404 unknown_verb with the closest names', async (t) => {
  const x = await createHttpHarness(t);
  const res = await x.inject({ method: 'GET', url: '/api/v1/agent/verbs/notes.cont' });
  assert.equal(res.statusCode, 404);
  const env = envelopeOf(res);
  assert.equal(env.error!.reason, 'unknown_verb');
  assert.ok((env.error!.details!.closest as string[]).includes('notes.count'));
  assert.match(env.error!.hint!, /notes\.count/);
  assert.ok(validateEnvelope(env).valid);
});
