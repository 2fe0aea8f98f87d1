/**
 * /openapi.json: OpenAPI 3.1 generated from the registered routes (core and mounted plugins) and
 * the registry; the dispatch route documents the envelope and the reason → status table.
 * Spec: spec/transports.md §http-openapi.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHttpHarness, envelopeOf } from './harness.ts';
import { reasonInfo, REASONS } from '../../../src/spec/reasons.ts';
import type { HttpPlugin } from '../../../src/transports/http/server.ts';
import { Ajv2020 } from 'ajv/dist/2020.js';

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components: { schemas: Record<string, unknown> };
};

function refsOf(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) refsOf(n, out);
  else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refsOf(v, out);
    }
  }
  return out;
}

const mounted: HttpPlugin = async (app) => {
  app.get(
    '/api/v1/test-plugin/items/:id',
    {
      schema: {
        summary: 'A plugin route',
        params: { type: 'object', properties: { id: { type: 'string' } } },
      },
    },
    async () => ({ ok: true }),
  );
  app.get('/api/v1/test-plugin/hidden', { config: { openapi: false } }, async () => ({ ok: true }));
};

test('every route is documented under its path, plugin routes included; hidden routes are not', async (t) => {
  const x = await createHttpHarness(t, { plugins: [mounted] });
  const res = await x.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(res.statusCode, 200);
  const doc = res.json() as Doc;
  assert.equal(doc.openapi, '3.1.0');
  for (const [path, method] of [
    ['/api/v1/agent/verbs', 'get'],
    ['/api/v1/agent/verbs/{name}', 'get'],
    ['/api/v1/agent/dispatch/{verb}', 'post'],
    ['/openapi.json', 'get'],
    ['/healthz', 'get'],
    ['/readyz', 'get'],
    ['/api/v1/test-plugin/items/{id}', 'get'],
  ] as const) {
    assert.ok(doc.paths[path]?.[method], `${method} ${path}`);
  }
  assert.equal(doc.paths['/api/v1/test-plugin/items/{id}']!.get!.summary, 'A plugin route');
  assert.equal(doc.paths['/api/v1/test-plugin/hidden'], undefined);
  assert.ok(!Object.values(doc.paths).some((p) => 'head' in p), 'no implicit HEAD operations');
});

test('the dispatch route documents every reason with its status, and the envelope schema', async (t) => {
  const x = await createHttpHarness(t);
  const doc = (await x.inject({ method: 'GET', url: '/openapi.json' })).json() as Doc;
  const op = doc.paths['/api/v1/agent/dispatch/{verb}']!.post!;
  const table = op['x-reason-status'] as Record<string, { status: number }>;
  for (const [reason, info] of Object.entries(REASONS)) {
    assert.equal(table[reason]?.status, info.status, reason);
    const response = (op.responses as Record<string, { description: string }>)[String(info.status)];
    assert.ok(response, `a ${info.status} response for ${reason}`);
    if (reason !== 'dispatch_pending')
      assert.ok(response.description.includes(reason), `${reason} listed under ${info.status}`);
  }
  assert.ok((op.responses as Record<string, unknown>)['200']);
  const envelope = doc.components.schemas.Envelope as { properties: Record<string, unknown> };
  assert.ok(envelope.properties.ok && envelope.properties.error);
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  const components = { $id: 'https://openapi.test/doc.json', components: doc.components } as Record<
    string,
    unknown
  >;
  ajv.addSchema(components);
  const validate = ajv.compile({ $ref: 'https://openapi.test/doc.json#/components/schemas/Envelope' });
  assert.ok(validate({ ok: false, verb: 'x', error: { reason: 'role_denied', message: 'm' } }));
  const pending = envelopeOf(await x.dispatch('notes_add', { args: { text: 'a' } }, { key: x.h.keys.owner }));
  assert.ok(validate(pending), JSON.stringify(validate.errors));
  assert.ok(
    !validate({
      ok: false,
      verb: 'x',
      error: { reason: 'role_denied', message: 'm' },
      consent: { class: 'READ' },
    }),
    'the consent $ref is followed',
  );
  assert.equal(reasonInfo('role_denied').status, 403);
});

test('one operation per http verb, whose args schema is the verb input_schema; every $ref resolves', async (t) => {
  const x = await createHttpHarness(t);
  const doc = (await x.inject({ method: 'GET', url: '/openapi.json' })).json() as Doc;
  for (const record of x.h.rt.registry.list({ surface: 'http' })) {
    const op = doc.paths[`/api/v1/agent/dispatch/${record.name}`]?.post;
    assert.ok(op, record.name);
    const schema = (
      op.requestBody as { content: Record<string, { schema: { properties: { args: unknown } } }> }
    ).content['application/json']!.schema;
    assert.deepEqual(schema.properties.args, JSON.parse(JSON.stringify(record.input_schema)));
  }
  assert.equal(
    doc.paths['/api/v1/agent/dispatch/notes.cli_only'],
    undefined,
    'a verb not on http has no operation',
  );
  const ids = new Set<string>();
  for (const p of Object.values(doc.paths))
    for (const op of Object.values(p))
      if (typeof op.operationId === 'string') {
        assert.ok(!ids.has(op.operationId), `operationId ${op.operationId} unique`);
        ids.add(op.operationId);
      }
  for (const ref of refsOf(doc)) {
    assert.match(ref, /^#\/components\/(schemas|responses|parameters)\/[A-Za-z0-9._-]+$/, ref);
    const [, , kind, name] = ref.split('/');
    const section = (doc.components as Record<string, Record<string, unknown>>)[kind!];
    assert.ok(section?.[name!], `${ref} resolves`);
  }
});

test('servers: the origin the request reached (forwarded only behind a trusted proxy), then the allowed origins', async (t) => {
  const x = await createHttpHarness(t, { trustProxy: true, allowedOrigins: ['https://agents.example.com'] });
  const servers = async (headers: Record<string, string>) =>
    (
      (await x.inject({ method: 'GET', url: '/openapi.json', headers })).json() as {
        servers: { url: string }[];
      }
    ).servers;
  assert.deepEqual(await servers({ host: 'agents.example.com', 'x-forwarded-proto': 'https' }), [
    { url: 'https://agents.example.com' },
  ]);
  assert.deepEqual(await servers({ host: '127.0.0.1:4400' }), [
    { url: 'http://127.0.0.1:4400' },
    { url: 'https://agents.example.com' },
  ]);
  const plain = await createHttpHarness(t);
  const doc = (
    await plain.inject({
      method: 'GET',
      url: '/openapi.json',
      headers: { host: 'internal:4400', 'x-forwarded-proto': 'https' },
    })
  ).json() as { servers: { url: string }[] };
  assert.deepEqual(
    doc.servers,
    [{ url: 'http://internal:4400' }],
    'X-Forwarded-Proto ignored without trustProxy',
  );
});
