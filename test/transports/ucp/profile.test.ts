/**
 * The business profile at /.well-known/ucp (and per tenant) against UCP 2026-08-25's own rules:
 * required members, name patterns, key members (public only, ES256 for P-256), hosting rules
 * (JSON, public max-age ≥ 60, ETag, 304, no redirects), and self-consistency: every `schema`,
 * `spec` and service URL it lists is served with the same rules and means what it says.
 *
 * The rules schema below is written from the UCP 2026-08-25 profile schema's rules (profile.json
 * jwk_public_key, ucp.json business_schema) as summarized in research/ucp-rfc9421.md §2.2.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { createUcpHarness, type UcpHarness } from './harness.ts';
import {
  NAME_PATTERN_2026_04_08,
  NAME_PATTERN_2026_08_25,
} from '../../../src/transports/ucp/capability-names.ts';

const NAME = NAME_PATTERN_2026_08_25.source;
const DATE = '^\\d{4}-\\d{2}-\\d{2}$';
const entity = {
  type: 'object',
  required: ['version'],
  properties: {
    version: { type: 'string', pattern: DATE },
    spec: { type: 'string', format: 'uri' },
    schema: { type: 'string', format: 'uri' },
    config: { type: 'object' },
  },
};
const jwk = {
  type: 'object',
  required: ['kid', 'kty'],
  properties: {
    kid: { type: 'string' },
    kty: { type: 'string' },
    crv: { type: 'string' },
    x: { type: 'string' },
    y: { type: 'string' },
    alg: { type: 'string' },
    use: { type: 'string' },
  },
  allOf: [
    {
      if: { properties: { kty: { const: 'EC' } }, required: ['kty'] },
      then: { required: ['crv', 'x', 'y'] },
    },
    {
      if: { properties: { crv: { const: 'P-256' } }, required: ['crv'] },
      then: { properties: { alg: { const: 'ES256' } } },
    },
  ],
  not: { anyOf: ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'].map((m) => ({ required: [m] })) },
};
const BUSINESS_PROFILE_RULES = {
  type: 'object',
  required: ['ucp'],
  properties: {
    ucp: {
      type: 'object',
      required: ['version', 'services', 'payment_handlers'],
      properties: {
        version: { const: '2026-08-25' },
        services: {
          type: 'object',
          propertyNames: { pattern: NAME },
          additionalProperties: {
            type: 'array',
            minItems: 1,
            items: {
              allOf: [
                entity,
                {
                  required: ['transport', 'endpoint'],
                  properties: {
                    transport: { enum: ['rest', 'mcp', 'a2a', 'embedded'] },
                    endpoint: { type: 'string', pattern: '[^/]$' },
                  },
                },
              ],
            },
          },
        },
        capabilities: {
          type: 'object',
          propertyNames: { pattern: NAME },
          additionalProperties: {
            type: 'array',
            minItems: 1,
            items: {
              allOf: [
                entity,
                {
                  required: ['schema'],
                  properties: {
                    extends: {
                      anyOf: [
                        { type: 'string', pattern: NAME },
                        { type: 'array', minItems: 1, items: { type: 'string', pattern: NAME } },
                      ],
                    },
                  },
                },
              ],
            },
          },
        },
        payment_handlers: { type: 'object' },
        supported_versions: {
          type: 'object',
          propertyNames: { pattern: DATE },
          additionalProperties: { type: 'string', format: 'uri' },
        },
      },
      not: { anyOf: [{ required: ['keys'] }, { required: ['signing_keys'] }] },
    },
    keys: { type: 'array', items: jwk },
  },
  not: { required: ['signing_keys'] },
};

function validator() {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  return ajv.compile(BUSINESS_PROFILE_RULES);
}

type Profile = {
  ucp: {
    version: string;
    services: Record<
      string,
      Array<{ version: string; transport: string; spec: string; schema: string; endpoint: string }>
    >;
    capabilities: Record<
      string,
      Array<{
        version: string;
        spec: string;
        schema: string;
        extends?: string | string[];
        config: { verb: string; shape: string; consent_class: string };
      }>
    >;
    payment_handlers: Record<string, unknown>;
    supported_versions: Record<string, string>;
  };
  keys: Array<Record<string, string>>;
};

async function profileOf(u: UcpHarness, path = '/.well-known/ucp'): Promise<Profile> {
  const r = await u.get(path);
  assert.equal(r.status, 200, r.text);
  return r.json<Profile>();
}

function pathOf(u: UcpHarness, url: string): string {
  assert.ok(url.startsWith(u.base), `${url} is served by this business`);
  return url.slice(u.base.length);
}

describe('UCP business profile', () => {
  it('follows the 2026-08-25 profile rules (members, names, keys) and lists every ucp verb once', async (t) => {
    const u = await createUcpHarness(t);
    const profile = await profileOf(u);
    const validate = validator();
    assert.equal(validate(profile), true, JSON.stringify(validate.errors));
    assert.deepEqual(profile.ucp.payment_handlers, {});
    const verbs = Object.values(profile.ucp.capabilities)
      .map((c) => c[0]!.config.verb)
      .sort();
    const expected = u.h.rt.registry
      .all()
      .filter((v) => v.surfaces.includes('ucp'))
      .map((v) => v.name)
      .sort();
    assert.deepEqual(verbs, expected);
    assert.ok(!verbs.includes('notes.hidden'), 'a verb not exposed on ucp is not a capability');
    for (const name of Object.keys(profile.ucp.capabilities)) {
      assert.match(name, NAME_PATTERN_2026_08_25);
      assert.ok(name.startsWith('com.example.'), name);
      const service = name.slice(0, name.lastIndexOf('.'));
      assert.ok(profile.ucp.services[service] !== undefined, `service ${service} of ${name} is published`);
    }
    assert.equal(profile.ucp.capabilities['com.example.sales.notes_count']![0]!.config.consent_class, 'READ');
    assert.equal(
      profile.ucp.capabilities['com.example.ar.notes_charge']![0]!.config.consent_class,
      'WRITE_FINANCIAL',
    );
  });

  it('maps categories to the sub-agents and makes a preview extend the write it previews', async (t) => {
    const u = await createUcpHarness(t);
    const caps = (await profileOf(u)).ucp.capabilities;
    assert.ok(caps['com.example.sales.notes_add'], 'crm → sales');
    assert.ok(caps['com.example.ar.notes_charge'], 'payments → ar');
    assert.ok(caps['com.example.compliance.audit_trail'], 'audit → compliance');
    assert.ok(caps['com.example.ops.verbs_list'], 'system → ops');
    assert.equal(caps['com.example.sales.notes_preview_add']![0]!.extends, 'com.example.sales.notes_add');
    assert.equal(caps['com.example.sales.notes_add']![0]!.extends, undefined, 'a root capability');
  });

  it('publishes the public half of the active key, never private members, with alg ES256', async (t) => {
    const u = await createUcpHarness(t);
    const profile = await profileOf(u);
    const active = await u.h.rt.keys.signingKey(u.h.companyId);
    assert.deepEqual(
      profile.keys.map((k) => k.kid),
      [active.kid],
    );
    const key = profile.keys[0]!;
    assert.deepEqual(Object.keys(key).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    assert.equal(key.alg, 'ES256');
    assert.equal(key.crv, 'P-256');
    assert.equal(key.use, 'sig');
  });

  it('is hosted by the rules: JSON, public max-age ≥ 60, strong ETag, 304 on If-None-Match, no redirect', async (t) => {
    const u = await createUcpHarness(t);
    const r = await u.get('/.well-known/ucp');
    assert.match(r.headers['content-type']!, /^application\/json/);
    const cc = r.headers['cache-control']!;
    assert.match(cc, /\bpublic\b/);
    assert.ok(Number(/max-age=(\d+)/.exec(cc)![1]) >= 60);
    assert.doesNotMatch(cc, /private|no-store|no-cache/);
    const etag = r.headers.etag!;
    assert.match(etag, /^"[^"]+"$/);
    const again = await u.get('/.well-known/ucp', { 'if-none-match': etag });
    assert.equal(again.status, 304);
    assert.equal(again.bytes.length, 0);
    assert.equal((await u.get('/.well-known/ucp', { 'if-none-match': `"other", W/${etag}` })).status, 304);
    assert.equal((await u.get('/.well-known/ucp', { 'if-none-match': '"stale"' })).status, 200);
    const slash = await u.get('/.well-known/ucp/');
    assert.ok(slash.status < 300 || slash.status >= 400, 'never a redirect');
  });

  it('changes its ETag when a key is published', async (t) => {
    const u = await createUcpHarness(t);
    const before = (await u.get('/.well-known/ucp')).headers.etag!;
    const pending = await u.h.rt.store.write((tx) => u.h.rt.keys.create(tx, u.h.companyId, 'pending'));
    const r = await u.get('/.well-known/ucp', { 'if-none-match': before });
    assert.equal(r.status, 200);
    assert.ok(r.json<Profile>().keys.some((k) => k.kid === pending.kid));
  });

  it('serves every URL it lists, with the same hosting rules, and each schema describes its capability', async (t) => {
    const u = await createUcpHarness(t);
    const profile = await profileOf(u);
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const schemas = new Map<string, Record<string, unknown>>();
    for (const [name, [entry]] of Object.entries(profile.ucp.capabilities)) {
      const r = await u.get(pathOf(u, entry!.schema));
      assert.equal(r.status, 200, `${entry!.schema}: ${r.text}`);
      assert.match(r.headers['cache-control']!, /public, max-age=300/);
      assert.ok(r.headers.etag);
      const doc = r.json<Record<string, unknown>>();
      assert.equal(doc.name, name);
      assert.equal(doc.$id, entry!.schema);
      assert.equal(doc.version, entry!.version);
      schemas.set(entry!.schema, doc);
      const spec = await u.get(pathOf(u, entry!.spec));
      assert.equal(spec.status, 200);
      assert.match(spec.text, new RegExp(entry!.config.verb.replace(/\./g, '\\.')));
    }
    for (const doc of schemas.values()) ajv.addSchema(doc);
    const add = ajv.getSchema(profile.ucp.capabilities['com.example.sales.notes_add']![0]!.schema)!;
    assert.equal(add({ text: 'a note' }), true, 'the schema validates the verb input');
    assert.equal(add({}), false);
    assert.equal(add({ text: 'x', extra: 1 }), false);
    const preview = schemas.get(profile.ucp.capabilities['com.example.sales.notes_preview_add']![0]!.schema)!;
    assert.deepEqual((preview.$defs as Record<string, unknown>)['com.example.sales.notes_add'], {
      allOf: [{ $ref: profile.ucp.capabilities['com.example.sales.notes_add']![0]!.schema }],
    });
    for (const [name, [binding]] of Object.entries(profile.ucp.services)) {
      assert.equal(binding!.transport, 'rest');
      assert.equal(binding!.endpoint, `${u.base}/ucp/v1`, name);
      const openapi = await u.get(pathOf(u, binding!.schema));
      assert.equal(openapi.status, 200);
      const doc = openapi.json<{
        openapi: string;
        servers: Array<{ url: string }>;
        paths: Record<string, { post: { parameters: Array<{ name: string; schema: { enum?: string[] } }> } }>;
      }>();
      assert.equal(doc.openapi, '3.1.0');
      assert.equal(doc.servers[0]!.url, binding!.endpoint);
      const names = doc.paths['/capabilities/{capability}']!.post.parameters.find(
        (p) => p.name === 'capability',
      )!.schema.enum!;
      assert.deepEqual([...names].sort(), Object.keys(profile.ucp.capabilities).sort());
      assert.equal((await u.get(pathOf(u, binding!.spec))).status, 200);
    }
  });

  it('offers a 2026-04-08 leaf profile with signing_keys[] and 2026-04-08 names only', async (t) => {
    const u = await createUcpHarness(t);
    const profile = await profileOf(u);
    const url = profile.ucp.supported_versions['2026-04-08']!;
    const leaf = (await u.get(pathOf(u, url))).json<{
      ucp: Record<string, unknown> & { capabilities: Record<string, unknown> };
      signing_keys?: unknown[];
      keys?: unknown;
    }>();
    assert.equal(leaf.ucp.version, '2026-04-08');
    assert.equal(leaf.keys, undefined);
    assert.equal(leaf.ucp.supported_versions, undefined, 'a leaf has no supported_versions');
    assert.deepEqual(leaf.signing_keys, profile.keys);
    assert.deepEqual(leaf.ucp.payment_handlers, {});
    for (const name of Object.keys(leaf.ucp.capabilities)) assert.match(name, NAME_PATTERN_2026_04_08);
    await u.configure({ namespace: 'com.solid-verbs', platforms: [] });
    const hyphen = (await u.get(pathOf(u, url))).json<{
      ucp: { capabilities: Record<string, unknown>; services: Record<string, unknown> };
    }>();
    assert.deepEqual(hyphen.ucp.capabilities, {}, 'a hyphenated namespace cannot be named in 2026-04-08');
    assert.deepEqual(hyphen.ucp.services, {});
    const current = await profileOf(u);
    assert.ok(
      Object.keys(current.ucp.capabilities).every((n) => n.startsWith('com.solid-verbs.')),
      '2026-08-25 allows it',
    );
    assert.equal(validator()(current), true);
  });

  it('serves each tenant its own profile under /t/{company_id}: namespace, endpoint, keys', async (t) => {
    const u = await createUcpHarness(t);
    await u.configure({ namespace: 'com.otherco', sub_agents: { crm: 'service' } }, u.h.otherCompanyId);
    const other = await profileOf(u, `/t/${u.h.otherCompanyId}/.well-known/ucp`);
    assert.ok(
      other.ucp.capabilities['com.otherco.service.notes_count'],
      'namespace and sub-agent override of tenant 3',
    );
    assert.equal(
      other.ucp.services['com.otherco.service']![0]!.endpoint,
      `${u.base}/t/${u.h.otherCompanyId}/ucp/v1`,
    );
    const otherKid = (await u.h.rt.keys.signingKey(u.h.otherCompanyId)).kid;
    assert.deepEqual(
      other.keys.map((k) => k.kid),
      [otherKid],
    );
    const main = await profileOf(u);
    assert.notDeepEqual(main.keys, other.keys);
    assert.ok(main.ucp.capabilities['com.example.sales.notes_count']);
    const prefixedMain = await profileOf(u, `/t/${u.h.companyId}/.well-known/ucp`);
    assert.deepEqual(prefixedMain.keys, main.keys);
    for (const bad of ['/t/99/.well-known/ucp', '/t/abc/.well-known/ucp', '/t/0/.well-known/ucp']) {
      const r = await u.get(bad);
      assert.equal(r.status, 404, bad);
      assert.equal(r.json<{ code: string }>().code, 'not_found');
    }
  });

  it('advertises the configured public base URL (https) instead of the request origin', async (t) => {
    const u = await createUcpHarness(t, { baseUrl: 'https://api.example.com/' });
    const profile = await profileOf(u);
    const binding = Object.values(profile.ucp.services)[0]![0]!;
    assert.equal(binding.endpoint, 'https://api.example.com/ucp/v1');
    const cap = profile.ucp.capabilities['com.example.sales.notes_count']![0]!;
    assert.equal(cap.schema, 'https://api.example.com/ucp/v1/schemas/com.example.sales.notes_count.json');
    assert.equal(
      profile.ucp.supported_versions['2026-04-08'],
      'https://api.example.com/ucp/v1/profiles/2026-04-08',
    );
  });
});
