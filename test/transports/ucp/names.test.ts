/**
 * Capability names (research brief §2.3): UCP name patterns, sub-agent mapping, collisions,
 * `extends`, the schema authority binding, and the tenant configuration rules.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from '../../../src/runtime/registry.ts';
import type { VerbDefinition } from '../../../src/runtime/verb.ts';
import {
  CATEGORY_SUB_AGENT,
  NAME_PATTERN_2026_04_08,
  NAME_PATTERN_2026_08_25,
  SUB_AGENTS,
  authorityBinds,
  buildCapabilityCatalog,
  isUcpName,
  namespaceFromUrl,
  namespaceProblem,
} from '../../../src/transports/ucp/capability-names.ts';
import {
  capabilityAllowed,
  classImplied,
  parseUcpSettings,
  resolveTenantConfig,
  ucpConfigFromEnv,
} from '../../../src/transports/ucp/ucp-config.ts';

function verb(name: string, category: string, extra: Partial<VerbDefinition> = {}): VerbDefinition {
  return {
    name,
    description: name,
    shape: 'aggregate',
    category,
    input: { type: 'object', properties: {} },
    handler: async () => ({ entity_id: 1, data: {} }),
    ...extra,
  };
}

function catalogOf(
  defs: VerbDefinition[],
  options: Partial<Parameters<typeof buildCapabilityCatalog>[1]> = {},
) {
  const registry = new Registry();
  registry.registerAll(defs);
  return buildCapabilityCatalog(registry.all(), { namespace: 'com.example', ...options });
}

describe('UCP name patterns', () => {
  it('2026-08-25 allows interior hyphens and digit-leading segments; 2026-04-08 does not', () => {
    assert.equal(isUcpName('com.example.sales.quote_request'), true);
    assert.equal(isUcpName('com.solid-verbs.ops.x'), true);
    assert.equal(isUcpName('com.example.3d.print'), true);
    assert.equal(isUcpName('com.solid-verbs.ops.x', '2026-04-08'), false);
    assert.equal(isUcpName('com.example.3d.print', '2026-04-08'), false);
    for (const bad of [
      'com',
      'Com.example.x',
      'com..x',
      'com.example.',
      '-com.example',
      'com.example.x-',
      'com.example.x y',
    ]) {
      assert.equal(NAME_PATTERN_2026_08_25.test(bad), false, bad);
      assert.equal(NAME_PATTERN_2026_04_08.test(bad), false, bad);
    }
  });

  it('checks namespaces: a reverse domain, never dev.ucp', () => {
    assert.equal(namespaceProblem('com.example'), undefined);
    assert.equal(namespaceProblem('com.solid-verbs'), undefined);
    assert.match(namespaceProblem('dev.ucp')!, /reserved/);
    assert.match(namespaceProblem('dev.ucp.shopping')!, /reserved/);
    assert.match(namespaceProblem('example')!, /reverse-domain/);
    assert.match(namespaceProblem('Example.com')!, /reverse-domain/);
    assert.equal(namespaceFromUrl('https://api.example.com'), 'com.example.api');
    assert.equal(namespaceFromUrl('http://127.0.0.1:4400'), undefined);
    assert.equal(namespaceFromUrl('http://localhost:4400'), undefined);
  });

  it('binds a schema URL to a name by its host labels (2026-08-25 algorithm)', () => {
    assert.equal(authorityBinds('com.example.pay', 'https://pay.example.com/s.json'), true);
    assert.equal(authorityBinds('com.example.pay', 'https://example.com/s.json'), true);
    assert.equal(authorityBinds('com.example.pay', 'https://EXAMPLE.com./s.json'), true);
    assert.equal(authorityBinds('com.example.pay', 'https://cdn.example.com/s.json'), false);
    assert.equal(authorityBinds('com.examplecorp.pay', 'https://example.com/s.json'), false);
    assert.equal(authorityBinds('com.example.pay', 'http://example.com/s.json'), false);
    assert.equal(authorityBinds('com.example.pay', 'https://u:p@example.com/s.json'), false);
    assert.equal(authorityBinds('com.example.pay', 'https://127.0.0.1/s.json'), false);
    assert.equal(authorityBinds('localhost.x', 'https://localhost/s.json'), false);
  });
});

describe('capability catalog', () => {
  it('names verbs <namespace>.<sub-agent>.<verb> with the documented category map', () => {
    const cat = catalogOf([
      verb('crm_contacts_search', 'crm'),
      verb('customer.full_context', 'customer'),
      verb('charge_invoice', 'payments'),
      verb('inventory.reorder', 'inventory'),
      verb('appointments.book', 'scheduling'),
      verb('commission.report', 'commissions'),
      verb('gdpr_delete_contact', 'gdpr'),
      verb('email_send', 'email'),
      verb('infrastructure_diagnose', 'infrastructure'),
      verb('weird.thing', 'unmapped'),
    ]);
    assert.deepEqual(
      cat.map((e) => e.name),
      [
        'com.example.ap.inventory_reorder',
        'com.example.ar.charge_invoice',
        'com.example.commissions.commission_report',
        'com.example.compliance.gdpr_delete_contact',
        'com.example.marketing.email_send',
        'com.example.ops.infrastructure_diagnose',
        'com.example.ops.weird_thing',
        'com.example.sales.crm_contacts_search',
        'com.example.sales.customer_full_context',
        'com.example.service.appointments_book',
      ],
    );
    for (const e of cat) assert.match(e.name, NAME_PATTERN_2026_08_25);
    assert.ok(Object.values(CATEGORY_SUB_AGENT).every((s) => (SUB_AGENTS as readonly string[]).includes(s)));
  });

  it('only projects verbs whose surfaces include ucp', () => {
    const cat = catalogOf([verb('a.read', 'crm'), verb('b.read', 'crm', { surfaces: ['http', 'cli'] })]);
    assert.deepEqual(
      cat.map((e) => e.verb.name),
      ['a.read'],
    );
  });

  it('applies sub-agent overrides by verb name first, then by category', () => {
    const cat = catalogOf([verb('deals_create', 'deals'), verb('deals_close', 'deals')], {
      subAgents: { deals: 'commissions', deals_close: 'ar' },
    });
    assert.deepEqual(
      cat.map((e) => e.name),
      ['com.example.ar.deals_close', 'com.example.commissions.deals_create'],
    );
  });

  it('keeps names unique when two verbs collide, deterministically', () => {
    const cat = catalogOf([verb('customer.full_context', 'crm'), verb('customer_full_context', 'crm')]);
    assert.deepEqual(cat.map((e) => [e.verb.name, e.name]).sort(), [
      ['customer.full_context', 'com.example.sales.customer__full_context'],
      ['customer_full_context', 'com.example.sales.customer_full_context'],
    ]);
  });

  it('makes a preview extend the writes that name it, adds configured edges, drops cycles and strangers', () => {
    const write = (name: string, preview?: string) =>
      verb(name, 'crm', { shape: 'receipt', consent: 'WRITE_REVERSIBLE', ...(preview ? { preview } : {}) });
    const cat = catalogOf(
      [
        verb('deal.preview_close', 'deals', { shape: 'preview' }),
        write('deals_close', 'deal.preview_close'),
        write('deals_reopen', 'deal.preview_close'),
        verb('quote_request', 'sales'),
      ],
      {
        extends: { quote_request: ['deals_close', 'not_registered'], deals_close: ['quote_request'] },
      },
    );
    const by = new Map(cat.map((e) => [e.verb.name, e]));
    assert.deepEqual(by.get('deal.preview_close')!.extends, [
      'com.example.sales.deals_close',
      'com.example.sales.deals_reopen',
    ]);
    assert.deepEqual(by.get('quote_request')!.extends, ['com.example.sales.deals_close']);
    assert.deepEqual(by.get('deals_close')!.extends, [], 'the edge closing a cycle is dropped');
  });
});

describe('UCP configuration', () => {
  it('validates settings.ucp and applies defaults', () => {
    const c = resolveTenantConfig(
      { platforms: [{ profile: 'https://Platform.example/.well-known/ucp#x' }] },
      'com.example',
    );
    const p = c.platforms.get('https://platform.example/.well-known/ucp')!;
    assert.equal(p.role, 'read_only');
    assert.equal(p.maxClass, 'READ');
    assert.equal(p.allow, undefined);
    assert.equal(c.namespace, 'com.example');
    assert.equal(c.capabilityVersion, '2026-08-25');
    assert.throws(() => parseUcpSettings({ namespace: 'dev.ucp.x' }), /reserved/);
    assert.throws(
      () => parseUcpSettings({ platforms: [{ profile: 'https://p.example', max_class: 'WRITE_FINANCIAL' }] }),
      /max_class/,
    );
    assert.throws(
      () => parseUcpSettings({ platforms: [{ profile: 'https://p.example', role: 'god' }] }),
      /role/,
    );
    assert.throws(() => parseUcpSettings({ platform: [] }), /settings\.ucp/);
    assert.throws(() => parseUcpSettings({ capability_version: 'v1' }), /capability_version/);
    assert.throws(() => parseUcpSettings({ sub_agents: { crm: 'finance' } }), /sub_agents/);
  });

  it('allow-lists by exact name or label-aligned prefix; classes up to the allowance', () => {
    const policy = resolveTenantConfig(
      {
        platforms: [
          { profile: 'https://p.example/', allow: ['com.example.sales.*', 'com.example.ar.charge_invoice'] },
        ],
      },
      'com.example',
    ).platforms.get('https://p.example/')!;
    assert.equal(capabilityAllowed(policy, 'com.example.sales.x'), true);
    assert.equal(capabilityAllowed(policy, 'com.example.salesforce.x'), false);
    assert.equal(capabilityAllowed(policy, 'com.example.ar.charge_invoice'), true);
    assert.equal(capabilityAllowed(policy, 'com.example.ar.refund'), false);
    assert.equal(classImplied('READ', 'READ'), true);
    assert.equal(classImplied('WRITE_REVERSIBLE', 'READ'), false);
    assert.equal(classImplied('WRITE_REVERSIBLE', 'WRITE_REVERSIBLE'), true);
    assert.equal(classImplied('WRITE_FINANCIAL', 'WRITE_REVERSIBLE'), false);
  });

  it('reads the server options from the environment', () => {
    const c = ucpConfigFromEnv({
      SOLID_UCP_BASE_URL: 'https://api.example.com/',
      SOLID_UCP_TENANT: '2',
      SOLID_UCP_DEV: '1',
    });
    assert.deepEqual(c, {
      baseUrl: 'https://api.example.com',
      primaryTenant: 2,
      defaultNamespace: 'com.example.api',
      dev: true,
    });
    assert.equal(ucpConfigFromEnv({}).defaultNamespace, 'com.example');
    assert.throws(() => ucpConfigFromEnv({ SOLID_UCP_TENANT: 'two' }), /SOLID_UCP_TENANT/);
    assert.throws(() => ucpConfigFromEnv({ SOLID_UCP_BASE_URL: 'ftp://x' }), /SOLID_UCP_BASE_URL/);
    assert.throws(() => ucpConfigFromEnv({ SOLID_UCP_NAMESPACE: 'dev.ucp' }), /reserved/);
  });
});
