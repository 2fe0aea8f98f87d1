/**
 * GET /api/v1/webmcp/manifest?surface=… (spec/transports.md §webmcp-manifest): exactly the verbs
 * configured for that page surface (parity with the registry), projected as WebMCP tools with
 * annotations, consent class and shape; 400 for an unknown surface; ETag and 304.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WEBMCP_SURFACES } from '../../../src/spec/types.ts';
import type { WebmcpManifest, WebmcpTool } from '../../../src/transports/webmcp/index.ts';
import { defineVerb } from '../../../src/runtime/verb.ts';
import { webmcpFixture } from './fixture.ts';

async function manifest(
  f: Awaited<ReturnType<typeof webmcpFixture>>,
  surface: string,
): Promise<WebmcpManifest> {
  const res = await f.app.inject({
    method: 'GET',
    url: `/api/v1/webmcp/manifest?surface=${encodeURIComponent(surface)}`,
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as WebmcpManifest;
}

describe('GET /api/v1/webmcp/manifest', () => {
  it('lists, for every surface, exactly the verbs on webmcp whose webmcp_surfaces include it', async (t) => {
    const f = await webmcpFixture(t);
    for (const surface of WEBMCP_SURFACES) {
      const body = await manifest(f, surface);
      assert.equal(body.surface, surface);
      const expected = f.rt.registry
        .all()
        .filter((v) => v.surfaces.includes('webmcp') && v.webmcpSurfaces.includes(surface))
        .map((v) => v.toolName)
        .sort();
      assert.deepEqual(body.tools.map((tool) => tool.name).sort(), expected, `surface ${surface}`);
    }
    const names = async (surface: string) =>
      (await manifest(f, surface)).tools.map((tool) => tool.verb).filter((n) => n.startsWith('webtest.'));
    assert.deepEqual(await names('dashboard'), ['webtest.charge', 'webtest.note_add', 'webtest.quote']);
    assert.deepEqual(await names('portal'), ['webtest.note_add', 'webtest.quote']);
    assert.deepEqual(await names('public'), ['webtest.quote']);
    assert.deepEqual(await names('developer'), ['webtest.untrusted']);
    assert.deepEqual(await names('tenant-site'), []);
  });

  it('projects each verb with its tool name, schema, hints, consent class and shape', async (t) => {
    const f = await webmcpFixture(t);
    const dashboard = await manifest(f, 'dashboard');
    const byVerb = (tools: WebmcpTool[], verb: string) => tools.find((tool) => tool.verb === verb)!;
    const quote = byVerb(dashboard.tools, 'webtest.quote');
    assert.equal(quote.name, 'webtest__quote');
    assert.equal(quote.title, 'Quote a price');
    assert.equal(quote.description, 'Price in cents for a quantity of one catalogue item (test verb).');
    assert.deepEqual(quote.inputSchema, f.rt.registry.get('webtest.quote')!.inputSchema);
    assert.deepEqual(quote.annotations, {
      readOnlyHint: true,
      consequentialHint: false,
      untrustedContentHint: false,
    });
    assert.equal(quote.consent_class, 'READ');
    assert.equal(quote.shape, 'aggregate');
    assert.equal(quote.category, 'webtest');
    const charge = byVerb(dashboard.tools, 'webtest.charge');
    assert.deepEqual(charge.annotations, {
      readOnlyHint: false,
      consequentialHint: true,
      untrustedContentHint: false,
    });
    assert.equal(charge.consent_class, 'WRITE_FINANCIAL');
    assert.equal(byVerb(dashboard.tools, 'webtest.note_add').consent_class, 'WRITE_REVERSIBLE');
    const revert = byVerb(dashboard.tools, 'audit.revert');
    assert.equal(revert.consent_class, null, 'audit.revert takes the consent of the action it undoes');
    assert.equal(revert.annotations.consequentialHint, true);
    const untrusted = byVerb((await manifest(f, 'developer')).tools, 'webtest.untrusted');
    assert.deepEqual(untrusted.annotations, {
      readOnlyHint: true,
      consequentialHint: false,
      untrustedContentHint: true,
    });
    for (const tool of dashboard.tools) {
      assert.match(tool.name, /^[A-Za-z0-9_.-]{1,128}$/, 'a name the browser accepts');
      assert.notEqual(tool.description, '');
      assert.equal(JSON.stringify(tool.inputSchema).includes('"$ref"'), false, 'schemas are self-contained');
    }
  });

  it('answers 400 invalid_request for a missing or unknown surface', async (t) => {
    const f = await webmcpFixture(t);
    for (const url of [
      '/api/v1/webmcp/manifest',
      '/api/v1/webmcp/manifest?surface=admin',
      '/api/v1/webmcp/manifest?surface=mcp_stdio',
    ]) {
      const res = await f.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 400, url);
      const body = res.json() as { ok: boolean; error: { reason: string; details: { surfaces: string[] } } };
      assert.equal(body.ok, false);
      assert.equal(body.error.reason, 'invalid_request');
      assert.deepEqual(body.error.details.surfaces, [...WEBMCP_SURFACES]);
    }
  });

  it('answers 304 for a current ETag and a new ETag once a verb joins the surface', async (t) => {
    const f = await webmcpFixture(t);
    const first = await f.app.inject({ method: 'GET', url: '/api/v1/webmcp/manifest?surface=portal' });
    const etag = first.headers.etag as string;
    const dashboardEtag = (
      await f.app.inject({ method: 'GET', url: '/api/v1/webmcp/manifest?surface=dashboard' })
    ).headers.etag;
    assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/);
    assert.equal(first.headers['cache-control'], 'no-cache');
    const again = await f.app.inject({
      method: 'GET',
      url: '/api/v1/webmcp/manifest?surface=portal',
      headers: { 'if-none-match': etag },
    });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    f.rt.register(
      defineVerb({
        name: 'webtest.portal_extra',
        description: 'Joins the portal surface later.',
        shape: 'aggregate',
        category: 'webtest',
        input: { type: 'object', properties: {}, additionalProperties: false },
        webmcp_surfaces: ['portal'],
        async handler() {
          return { entity_id: 'x', data: {} };
        },
      }),
    );
    const changed = await f.app.inject({
      method: 'GET',
      url: '/api/v1/webmcp/manifest?surface=portal',
      headers: { 'if-none-match': etag },
    });
    assert.equal(changed.statusCode, 200);
    assert.notEqual(changed.headers.etag, etag);
    assert.ok((changed.json() as WebmcpManifest).tools.some((tool) => tool.verb === 'webtest.portal_extra'));
    // A surface the new verb is not on keeps its ETag: its pages do not re-register anything.
    const dashboard = await f.app.inject({
      method: 'GET',
      url: '/api/v1/webmcp/manifest?surface=dashboard',
      headers: { 'if-none-match': String(dashboardEtag) },
    });
    assert.equal(dashboard.statusCode, 304);
  });

  it('?toolsets= trims the page surface to those categories plus the core verbs; an unknown one is 400 with the valid names', async (t) => {
    const f = await webmcpFixture(t);
    const whole = await manifest(f, 'dashboard');
    const res = await f.app.inject({
      method: 'GET',
      url: '/api/v1/webmcp/manifest?surface=dashboard&toolsets=webtest',
    });
    assert.equal(res.statusCode, 200, res.body);
    const trimmed = res.json() as WebmcpManifest;
    assert.deepEqual(
      trimmed.tools.map((tool) => tool.verb),
      whole.tools
        .filter((tool) => tool.category === 'webtest' || ['verbs.list', 'audit.revert'].includes(tool.verb))
        .map((tool) => tool.verb),
    );
    assert.ok(trimmed.tools.some((tool) => tool.verb === 'webtest.charge'));
    assert.ok(trimmed.tools.length < whole.tools.length);
    assert.notEqual(res.headers.etag, undefined);
    const all = await f.app.inject({
      method: 'GET',
      url: '/api/v1/webmcp/manifest?surface=dashboard&toolsets=all',
    });
    assert.deepEqual(all.json(), whole, 'all is the whole manifest');
    const bad = await f.app.inject({
      method: 'GET',
      url: '/api/v1/webmcp/manifest?surface=dashboard&toolsets=webtest,nope',
    });
    assert.equal(bad.statusCode, 400);
    const env = bad.json() as { error: { reason: string; message: string; details: { toolsets: string[] } } };
    assert.equal(env.error.reason, 'invalid_request');
    assert.match(env.error.message, /"nope"/);
    assert.ok(env.error.details.toolsets.includes('webtest'));
  });
});
