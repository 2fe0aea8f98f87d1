/**
 * The demo pack's catalogue as a whole: size and spread (≥ 60 verbs, ≥ 12 categories, all 13
 * shapes among pack + system verbs, all five consent classes), every write paired with a preview
 * that takes the same arguments, tight input schemas written for an LLM, spec-valid manifest
 * records, the exact names and phrases the specification uses, surfaces and CLI shortcuts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { demoPack } from '../../../src/business/pack.ts';
import { KNOWN_PACKS } from '../../../src/packs.ts';
import { Registry } from '../../../src/runtime/registry.ts';
import type { CompiledVerb } from '../../../src/runtime/verb.ts';
import { VALID_SHAPES, VERB_CLASSES, type JsonSchema } from '../../../src/spec/types.ts';
import { systemVerbs } from '../../../src/verbs/index.ts';
import { UPSTREAM_SKIP, upstreamValidator } from '../../support/upstream.ts';

let cache: { pack: CompiledVerb[]; all: CompiledVerb[] } | undefined;
function compiled(): { pack: CompiledVerb[]; all: CompiledVerb[] } {
  if (cache !== undefined) return cache;
  const registry = new Registry();
  registry.registerAll(systemVerbs);
  registry.registerAll(demoPack.verbs);
  const names = new Set(demoPack.verbs.map((v) => v.name));
  cache = { pack: registry.all().filter((v) => names.has(v.name)), all: registry.all() };
  return cache;
}

test('the demo pack is a known pack, loaded on demand', async () => {
  assert.equal(await KNOWN_PACKS.demo!(), demoPack);
  assert.equal(demoPack.name, 'demo');
});

test('at least 60 verbs in at least 12 categories; all 13 shapes among pack and system verbs; all five consent classes', () => {
  const { pack, all } = compiled();
  assert.ok(pack.length >= 60, `${pack.length} verbs`);
  const categories = new Set(pack.map((v) => v.category));
  for (const c of [
    'crm',
    'customer',
    'deals',
    'scheduling',
    'invoices',
    'payments',
    'inventory',
    'email',
    'kb',
    'team',
    'subscriptions',
    'infrastructure',
    'gdpr',
    'analytics',
  ]) {
    assert.ok(categories.has(c), `category ${c}`);
  }
  assert.deepEqual([...new Set(all.map((v) => v.shape))].sort(), [...VALID_SHAPES].sort());
  assert.deepEqual([...new Set(pack.map((v) => v.consentClass))].sort(), [...VERB_CLASSES].sort());
});

test('the verbs the specification names exist with their shape and consent class', () => {
  const { pack } = compiled();
  const by = new Map(pack.map((v) => [v.name, v]));
  const expected: Array<[string, string, string]> = [
    ['customer.full_context', 'aggregate', 'READ'],
    ['crm.explain_contact_state', 'explain', 'READ'],
    ['payments.preview_refund_impact', 'preview', 'READ'],
    ['deal.suggest_next_action', 'suggest', 'READ'],
    ['infrastructure.preview_resize', 'preview', 'READ'],
    ['infrastructure_diagnose', 'aggregate', 'READ'],
    ['infrastructure_resize', 'receipt', 'WRITE_FINANCIAL'],
    ['infrastructure_scale_workers', 'receipt', 'WRITE_FINANCIAL'],
    ['crm_contacts_search', 'aggregate', 'READ'],
    ['crm_contact_update', 'receipt', 'WRITE_REVERSIBLE'],
    ['charge_invoice', 'receipt', 'WRITE_FINANCIAL'],
    ['issue_refund', 'receipt', 'WRITE_FINANCIAL'],
    ['gdpr_delete_contact', 'receipt', 'IRREVERSIBLE'],
    ['subscription_upgrade_tier', 'receipt', 'WRITE_FINANCIAL'],
    ['subscription_cancel_immediate', 'receipt', 'BLOCKED'],
    ['deals_create', 'receipt', 'WRITE_REVERSIBLE'],
    ['email_send', 'receipt', 'WRITE_REVERSIBLE'],
  ];
  for (const [name, shape, cls] of expected) {
    const v = by.get(name);
    assert.ok(v, `${name} exists`);
    assert.equal(v.shape, shape, `${name} shape`);
    assert.equal(v.consentClass, cls, `${name} class`);
  }
  assert.equal(by.get('crm_contact_update')!.revertible, true, 'snapshot revert');
  assert.equal(by.get('gdpr_delete_contact')!.revertible, false, 'erasure cannot be undone');
  assert.equal(by.get('issue_refund')!.revertible, false, 'refunds cannot be undone');
  assert.equal(by.get('infrastructure_resize')!.revertible, true);
  assert.equal(by.get('infrastructure_scale_workers')!.revertible, true);
});

test('typed phrases are the specification’s, built from the arguments (money from integer cents)', () => {
  const { pack } = compiled();
  const phrase = (name: string, args: Record<string, unknown>) =>
    pack.find((v) => v.name === name)!.definition.phrase!(args);
  assert.equal(
    phrase('charge_invoice', { invoice_number: 4242, amount_cents: 5000 }),
    'CHARGE $50.00 to invoice #4242',
  );
  assert.equal(
    phrase('charge_invoice', { invoice_number: 4304, amount_cents: 123456789 }),
    'CHARGE $1,234,567.89 to invoice #4304',
  );
  assert.equal(
    phrase('issue_refund', { charge_ref: 'ch_xyz1', amount_cents: 5000 }),
    'REFUND $50.00 on charge ch_xyz1',
  );
  assert.equal(phrase('infrastructure_resize', { size: 'MEDIUM' }), 'RESIZE droplet to MEDIUM');
  assert.equal(phrase('infrastructure_scale_workers', { delta: 2 }), 'SCALE celery workers by +2');
  assert.equal(phrase('infrastructure_scale_workers', { delta: -1 }), 'SCALE celery workers by -1');
  assert.equal(phrase('gdpr_delete_contact', { contact_id: 4242 }), 'DELETE CONTACT 4242 PERMANENTLY');
  assert.equal(
    phrase('subscription_upgrade_tier', { tier: 'professional' }),
    'UPGRADE to PROFESSIONAL tier immediately',
  );
});

test('every write names a preview verb of shape preview that accepts exactly the same arguments', () => {
  const { pack } = compiled();
  const by = new Map(pack.map((v) => [v.name, v]));
  for (const w of pack.filter((v) => v.isWrite && v.consentClass !== 'BLOCKED')) {
    const name = w.definition.preview;
    assert.ok(name, `${w.name} names a preview`);
    const p = by.get(name);
    assert.ok(p, `${w.name}: preview ${name} is a pack verb`);
    assert.equal(p.shape, 'preview', `${name} has shape preview`);
    assert.equal(p.isWrite, false, `${name} is a read`);
    const wProps = Object.keys((w.inputSchema.properties ?? {}) as object);
    const pProps = Object.keys((p.inputSchema.properties ?? {}) as object);
    for (const k of wProps) assert.ok(pProps.includes(k), `${name} accepts ${w.name}'s argument ${k}`);
    for (const k of (p.inputSchema.required as string[] | undefined) ?? [])
      assert.ok(
        ((w.inputSchema.required as string[] | undefined) ?? []).includes(k),
        `${name} requires only what ${w.name} requires (${k})`,
      );
  }
});

function checkSchema(verb: string, node: JsonSchema, path: string): void {
  if (node.type === 'object' || node.properties !== undefined) {
    assert.equal(node.additionalProperties, false, `${verb} ${path}: additionalProperties false`);
    for (const [k, v] of Object.entries((node.properties ?? {}) as Record<string, JsonSchema>)) {
      assert.ok(
        typeof v.description === 'string' && v.description.length >= 8,
        `${verb} ${path}.${k}: a description`,
      );
      checkSchema(verb, v, `${path}.${k}`);
    }
  }
  if (node.type === 'array') {
    assert.ok(typeof node.maxItems === 'number', `${verb} ${path}: arrays are bounded`);
    checkSchema(verb, node.items as JsonSchema, `${path}[]`);
  }
  if (node.type === 'integer' && path !== '')
    assert.ok(
      typeof node.minimum === 'number' && typeof node.maximum === 'number',
      `${verb} ${path}: integers have a range`,
    );
  if (node.type === 'string' && node.enum === undefined && node.format !== 'date-time')
    assert.ok(
      typeof node.maxLength === 'number' || typeof node.pattern === 'string',
      `${verb} ${path}: strings are bounded`,
    );
}

test('input schemas are tight (no extra properties, ranges, bounded strings, described) and descriptions are written for an LLM', () => {
  const { pack } = compiled();
  for (const v of pack) {
    checkSchema(v.name, v.inputSchema, '');
    assert.ok(v.record.description.length >= 80, `${v.name}: a description an LLM can act on`);
    assert.ok(!JSON.stringify(v.inputSchema).includes('"company_id"'), `${v.name}: no company_id`);
  }
});

test('manifest records are valid against the upstream verb-record schema', { skip: UPSTREAM_SKIP }, () => {
  const validate = upstreamValidator('verb-record')!;
  for (const v of compiled().pack)
    assert.ok(validate(v.record), `${v.name}: ${JSON.stringify(validate.errors)}`);
});

test('surfaces: customer-facing verbs reach buyer agents and customer pages; staff verbs stay on the dashboard', () => {
  const { pack } = compiled();
  const by = new Map(pack.map((v) => [v.name, v]));
  for (const name of [
    'customer.request_quote',
    'scheduling.book_appointment',
    'kb.search',
    'kb.get_article',
  ]) {
    const v = by.get(name)!;
    assert.ok(v.surfaces.includes('ucp'), `${name} on UCP`);
    assert.ok(
      v.webmcpSurfaces.some((s) => s === 'portal' || s === 'public' || s === 'tenant-site'),
      `${name} on a customer-facing WebMCP surface`,
    );
  }
  for (const name of [
    'charge_invoice',
    'issue_refund',
    'gdpr_delete_contact',
    'team.set_role',
    'analytics.revenue_summary',
  ]) {
    assert.deepEqual(
      [...by.get(name)!.webmcpSurfaces].filter(
        (s) => s === 'public' || s === 'portal' || s === 'tenant-site',
      ),
      [],
      `${name} stays off customer pages`,
    );
  }
  for (const v of pack) assert.equal(v.surfaces.length, 5, `${v.name} is projected on every transport`);
});

test('CLI shortcuts promote the high-traffic verbs', () => {
  const { pack } = compiled();
  const cli = new Map(
    pack.filter((v) => v.definition.cli).map((v) => [v.definition.cli!.command.join(' '), v]),
  );
  assert.equal(cli.get('infra diagnose')?.name, 'infrastructure_diagnose');
  assert.equal(cli.get('deal create')?.name, 'deals_create');
  assert.equal(cli.get('customer-context')?.name, 'customer.full_context');
  assert.deepEqual(cli.get('customer-context')?.definition.cli?.positional, ['customer_id']);
});

test('every domain reason has a fitting HTTP status (not found 404, conflicts 409, rule violations 422)', () => {
  const reasons = demoPack.reasons!;
  assert.equal(reasons.no_managed_droplet!.status, 404);
  for (const r of ['already_paid', 'double_booked', 'same_size', 'same_stage', 'payment_not_refundable'])
    assert.equal(reasons[r]!.status, 409, r);
  for (const r of [
    'refund_exceeds_captured',
    'appointment_in_past',
    'amount_exceeds_balance',
    'workers_out_of_range',
  ])
    assert.equal(reasons[r]!.status, 422, r);
  for (const [name, info] of Object.entries(reasons))
    assert.ok([404, 409, 422].includes(info.status!), `${name}: ${info.status}`);
});
