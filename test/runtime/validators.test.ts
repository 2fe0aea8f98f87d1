/**
 * Our validators against the upstream SDK's own validator cases (a user of the upstream SDK can
 * switch without changes), plus the seed README's example record. Spec: spec/manifest.md.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { validateEnvelope, validateShapeOutput, validateVerbRecord } from '../../src/spec/validators.ts';
import { VALID_SHAPES } from '../../src/spec/types.ts';
import { UPSTREAM_SKIP, seedExampleRecord, upstreamExample } from '../support/upstream.ts';

describe('validateVerbRecord (upstream SDK cases)', () => {
  it('accepts a valid VerbRecord', () => {
    const result = validateVerbRecord({
      name: 'payments.preview_refund_impact',
      description: 'Preview refund impact.',
      shape: 'preview',
      side_effects: 'read',
      input_schema: { type: 'object', properties: { transaction_id: { type: 'integer' } } },
      surfaces: ['http', 'mcp_stdio'],
    });
    assert.deepEqual(result, { valid: true, errors: [] });
  });
  it('rejects missing name', () => {
    const result = validateVerbRecord({ description: 'x', shape: 'preview', input_schema: {} });
    assert.equal(result.valid, false);
    assert.ok(
      result.errors.some((e) => e.includes('name')),
      result.errors.join('; '),
    );
  });
  it('rejects invalid shape', () => {
    const result = validateVerbRecord({ name: 'x', description: 'x', shape: 'crud', input_schema: {} });
    assert.equal(result.valid, false);
    assert.ok(
      result.errors.some((e) => e.includes('shape')),
      result.errors.join('; '),
    );
  });
  it('rejects company_id in input_schema', () => {
    const result = validateVerbRecord({
      name: 'x.y',
      description: 'x',
      shape: 'aggregate',
      input_schema: { type: 'object', properties: { company_id: { type: 'integer' } } },
    });
    assert.equal(result.valid, false);
    assert.ok(
      result.errors.some((e) => e.includes('company_id')),
      result.errors.join('; '),
    );
  });
  it('rejects user_id nested deep inside input_schema', () => {
    const result = validateVerbRecord({
      name: 'x.y',
      description: 'x',
      shape: 'aggregate',
      input_schema: {
        type: 'object',
        properties: { filter: { type: 'object', properties: { user_id: { type: 'integer' } } } },
      },
    });
    assert.equal(result.valid, false);
    assert.ok(
      result.errors.some((e) => e.includes('user_id') && e.includes('filter')),
      result.errors.join('; '),
    );
  });
  it('rejects invalid surface', () => {
    const result = validateVerbRecord({
      name: 'x.y',
      description: 'x',
      shape: 'aggregate',
      input_schema: {},
      surfaces: ['http', 'graphql'],
    });
    assert.equal(result.valid, false);
    assert.ok(
      result.errors.some((e) => e.includes('graphql')),
      result.errors.join('; '),
    );
  });
  it('rejects invalid name pattern', () => {
    const result = validateVerbRecord({
      name: '123bad',
      description: 'x',
      shape: 'aggregate',
      input_schema: {},
    });
    assert.equal(result.valid, false);
    assert.ok(
      result.errors.some((e) => e.includes('name')),
      result.errors.join('; '),
    );
  });
  it('rejects a field the VerbRecord does not define (additionalProperties false)', () => {
    const result = validateVerbRecord({
      name: 'x.y',
      description: 'x',
      shape: 'aggregate',
      input_schema: {},
      consent_class: 'READ',
    });
    assert.equal(result.valid, false);
    assert.ok(
      result.errors.some((e) => e.includes('consent_class')),
      result.errors.join('; '),
    );
  });
  it('never throws on non-objects', () => {
    for (const bad of [null, 42, 'x', [], undefined]) assert.equal(validateVerbRecord(bad).valid, false);
  });
});

describe('validateEnvelope (upstream SDK cases)', () => {
  it('accepts a valid success envelope', () => {
    assert.equal(
      validateEnvelope({ ok: true, verb: 'infrastructure_diagnose', result: { overall: 'healthy' } }).valid,
      true,
    );
  });
  it('accepts a valid error envelope', () => {
    assert.equal(
      validateEnvelope({
        ok: false,
        verb: 'infrastructure_diagnose',
        error: { reason: 'no_managed_droplet', message: 'No droplet.' },
      }).valid,
      true,
    );
  });
  it('rejects missing ok', () => {
    assert.equal(validateEnvelope({ verb: 'x' }).valid, false);
  });
  it('rejects error envelope without error object', () => {
    const result = validateEnvelope({ ok: false, verb: 'x' });
    assert.equal(result.valid, false);
    assert.ok(
      result.errors.some((e) => e.includes('error is required')),
      result.errors.join('; '),
    );
  });
  it('rejects an error without reason or message', () => {
    const result = validateEnvelope({ ok: false, verb: 'x', error: { message: 'm' } });
    assert.equal(result.valid, false);
    assert.ok(
      result.errors.some((e) => e.includes('reason')),
      result.errors.join('; '),
    );
  });
});

describe('validateShapeOutput', () => {
  it('knows all 13 shapes and rejects an unknown one', () => {
    assert.equal(VALID_SHAPES.length, 13);
    const r = validateShapeOutput('crud', {});
    assert.equal(r.valid, false);
    assert.ok(r.errors[0]!.includes('crud'));
  });
  it('accepts the upstream examples for their shapes', { skip: UPSTREAM_SKIP }, () => {
    for (const f of ['customer-context.json', 'preview-refund.json']) {
      const ex = upstreamExample(f);
      assert.deepEqual(validateShapeOutput(ex.shape, ex.output), { valid: true, errors: [] }, f);
    }
  });
  it('names the missing field of an invalid output', () => {
    const r = validateShapeOutput('receipt', { status: 'completed' });
    assert.equal(r.valid, false);
    assert.ok(
      r.errors.some((e) => e.includes('audit_id')),
      r.errors.join('; '),
    );
  });
});

describe('the seed README example record', { skip: UPSTREAM_SKIP }, () => {
  it('is refused as written, because its input_schema declares company_id', () => {
    const r = validateVerbRecord(seedExampleRecord());
    assert.equal(r.valid, false);
    assert.ok(r.errors.some((e) => e.includes('company_id')));
  });
  it('validates once company_id is removed (the runtime injects it), keeping nullable', () => {
    const rec = structuredClone(seedExampleRecord()) as {
      input_schema: { properties: Record<string, unknown>; required: string[] };
    };
    delete rec.input_schema.properties.company_id;
    rec.input_schema.required = rec.input_schema.required.filter((x) => x !== 'company_id');
    assert.deepEqual(validateVerbRecord(rec), { valid: true, errors: [] });
  });
});
