/**
 * Registration rules and the manifest. Spec: spec/manifest.md §registration.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Registry, RegistrationError } from '../../src/runtime/registry.ts';
import { defineVerb, isSystemDefinition, type VerbDefinition } from '../../src/runtime/verb.ts';
import { checkSchema, compileInputSchema } from '../../src/runtime/schema-compiler.ts';
import { validateVerbRecord } from '../../src/spec/validators.ts';
import { VALID_SURFACES } from '../../src/spec/types.ts';
import { systemVerbs } from '../../src/verbs/index.ts';
import { schemaProblems } from '../../src/runtime/schema-check.ts';
import type { JsonSchema } from '../../src/spec/types.ts';
import { UPSTREAM_SKIP, assertUpstreamValid, seedExampleRecord } from '../support/upstream.ts';

const read = (over: Partial<VerbDefinition> = {}): VerbDefinition => ({
  name: 'crm.lookup',
  description: 'Look a contact up.',
  shape: 'aggregate',
  category: 'crm',
  input: { type: 'object', properties: {} },
  handler: async () => ({ entity_id: 1, data: {} }),
  ...over,
});

function refused(def: VerbDefinition, field: RegExp): void {
  const reg = new Registry();
  assert.throws(
    () => reg.register(def),
    (err: unknown) =>
      err instanceof RegistrationError &&
      err.verb === String(def.name) &&
      field.test(err.field) &&
      err.message.includes(String(def.name)),
  );
  assert.equal(reg.size, 0, 'nothing registered after a refusal');
}

describe('registration errors name the verb and the field', () => {
  it('bad name pattern', () => refused(read({ name: '9lives' }), /^name$/));
  it('unknown shape', () => refused(read({ shape: 'crud' as never }), /^shape$/));
  it('company_id in the input schema', () =>
    refused(
      read({ input: { type: 'object', properties: { company_id: { type: 'integer' } } } }),
      /company_id/,
    ));
  it('user_id nested anywhere in the input schema', () =>
    refused(
      read({
        input: {
          type: 'object',
          properties: {
            who: { type: 'array', items: { type: 'object', properties: { user_id: { type: 'integer' } } } },
          },
        },
      }),
      /user_id/,
    ));
  it('company_id declared through zod', () =>
    refused(read({ input: z.object({ company_id: z.number() }) }), /company_id/));
  it('a write verb without a consent class', () =>
    refused(read({ name: 'crm_contact_update', shape: 'receipt' }), /^consent$/));
  it('a typed-phrase class without a phrase builder', () =>
    refused(read({ name: 'charge', shape: 'receipt', consent: 'WRITE_FINANCIAL' }), /^phrase$/));
  it('a READ verb claiming write side effects', () =>
    refused(read({ consent: 'READ', side_effects: 'write' }), /^side_effects$/));
  it('a role floor below its class floor', () =>
    refused(
      read({
        name: 'w',
        shape: 'receipt',
        consent: 'WRITE_FINANCIAL',
        phrase: () => 'X',
        role_floor: 'employee',
      }),
      /^role_floor$/,
    ));
  it('a tool-name projection that collides with another verb', () => {
    const reg = new Registry();
    reg.register(read({ name: 'crm.lookup' }));
    assert.throws(
      () => reg.register(read({ name: 'crm__lookup' })),
      (e: unknown) => e instanceof RegistrationError && /collides with verb "crm.lookup"/.test(e.message),
    );
  });
});

describe('schemas: checked at registration, compiled on first use', () => {
  it('a pack verb whose input is not a JSON Schema fails at registration, before any call', () => {
    refused(
      read({ input: { type: 'object', properties: { n: { type: 'integr' } } } as never }),
      /^input_schema(\/|$)/,
    );
    refused(read({ input: { type: 'object', required: 'n' } as never }), /^(record|input_schema)(\/|$)/);
    refused(
      read({ input: { type: 'object', properties: { n: { minimum: 'one' } } } as never }),
      /^input_schema(\/|$)/,
    );
  });
  it("the runtime's own verbs skip the check at registration: each is valid here instead", () => {
    const reg = new Registry({ compileOutputs: false });
    for (const def of systemVerbs) reg.register(def);
    for (const def of systemVerbs) {
      assert.ok(isSystemDefinition(def), `${def.name} is made by defineSystemVerb`);
      const v = reg.get(def.name)!;
      assert.deepEqual(validateVerbRecord(v.record).errors, [], def.name);
      assert.equal(checkSchema(v.inputSchema), undefined, def.name);
      assert.deepEqual(schemaProblems(v.inputSchema), [], def.name);
      if (def.output !== undefined) assert.deepEqual(schemaProblems(def.output as JsonSchema), [], def.name);
      assert.equal(typeof compileInputSchema(v.inputSchema), 'function', def.name);
    }
    // A copy is not the shipped definition: checked like a pack's.
    assert.equal(isSystemDefinition({ ...systemVerbs[0]! }), false);
  });
  it('validates on first use, and again the same way after', () => {
    const reg = new Registry({ compileOutputs: false });
    const v = reg.register(
      read({ input: { type: 'object', properties: { n: { type: 'integer', default: 3 } } } }),
    );
    const args: Record<string, unknown> = {};
    assert.equal(v.validate(args), true);
    assert.deepEqual(args, { n: 3 }, 'defaults applied by the first validation');
    assert.equal(v.validate({ n: 'x' }), false);
    assert.equal(v.validateErrors()?.[0]?.instancePath, '/n');
    assert.equal(v.validate({ n: 1 }), true);
  });
});

describe('registry behaviour', () => {
  it('last write wins for the same name', () => {
    const reg = new Registry();
    reg.register(read({ description: 'first' }));
    reg.register(read({ description: 'second' }));
    assert.equal(reg.size, 1);
    assert.equal(reg.get('crm.lookup')!.record.description, 'second');
  });
  it('surfaces default to all five; consent facts stay out of the record', () => {
    const reg = new Registry();
    const v = reg.register(read());
    assert.deepEqual(v.record.surfaces, [...VALID_SURFACES]);
    assert.deepEqual(Object.keys(v.record).sort(), [
      'description',
      'input_schema',
      'name',
      'output_schema',
      'requires_consent',
      'shape',
      'side_effects',
      'surfaces',
      'tier_floor',
    ]);
  });
  it('keeps requires_consent and side_effects consistent with the class', () => {
    const reg = new Registry();
    const w = reg.register(
      read({
        name: 'crm_contact_update',
        shape: 'receipt',
        consent: 'WRITE_REVERSIBLE',
        revert: { handler: async () => ({ revert_action: 'x' }) },
      }),
    );
    assert.equal(w.record.requires_consent, true);
    assert.equal(w.record.side_effects, 'mixed');
    const f = reg.register(
      read({
        name: 'charge_invoice',
        shape: 'receipt',
        consent: 'WRITE_FINANCIAL',
        phrase: () => 'CHARGE',
      }),
    );
    assert.equal(f.record.side_effects, 'write');
    assert.equal(f.roleFloor, 'admin');
    const r = reg.register(read());
    assert.equal(r.record.requires_consent, false);
    assert.equal(r.record.side_effects, 'read');
  });
  it('accepts the tool-name form when looking a verb up', () => {
    const reg = new Registry();
    reg.register(read({ name: 'customer.full_context' }));
    assert.equal(reg.get('customer__full_context')!.name, 'customer.full_context');
  });
  it('filters the manifest by surface and shape', () => {
    const reg = new Registry();
    reg.register(read({ name: 'a.one', surfaces: ['http', 'cli'] }));
    reg.register(
      read({ name: 'b.two', shape: 'explain', handler: async () => ({ entity_id: 1, causal_chain: [] }) }),
    );
    assert.deepEqual(
      reg.list({ surface: 'mcp_stdio' }).map((r) => r.name),
      ['b.two'],
    );
    assert.deepEqual(
      reg.list({ shape: 'aggregate' }).map((r) => r.name),
      ['a.one'],
    );
    assert.deepEqual(
      reg.list({ surface: 'cli', shape: 'explain' }).map((r) => r.name),
      ['b.two'],
    );
  });
  it(
    'registers the seed example (company_id removed) with nullable, and its manifest entry is spec-valid',
    { skip: UPSTREAM_SKIP },
    () => {
      const rec = structuredClone(seedExampleRecord()) as {
        input_schema: { properties: Record<string, unknown>; required: string[] };
      };
      delete rec.input_schema.properties.company_id;
      rec.input_schema.required = rec.input_schema.required.filter((x) => x !== 'company_id');
      const reg = new Registry();
      const v = reg.register(
        defineVerb({
          name: 'payments.preview_refund_impact',
          description: 'd',
          shape: 'preview',
          category: 'payments',
          input: rec.input_schema,
          handler: async () => ({}),
        }),
      );
      assert.equal(v.validate({ transaction_id: 100, refund_amount_cents: null }), true);
      assert.equal(v.validate({ transaction_id: 100, refund_amount_cents: 5000 }), true);
      assert.equal(v.validate({ transaction_id: 100, refund_amount_cents: 'x' }), false);
      assertUpstreamValid('verb-record', v.record);
    },
  );
  it(
    'every manifest entry of the system verbs is valid against the upstream verb-record schema',
    { skip: UPSTREAM_SKIP },
    () => {
      const reg = new Registry();
      reg.registerAll(systemVerbs);
      for (const rec of reg.list()) assertUpstreamValid('verb-record', rec, rec.name);
    },
  );
  it('suggests the closest names', () => {
    const reg = new Registry();
    reg.registerAll(systemVerbs);
    assert.deepEqual(reg.closest('verbs.lsit').slice(0, 1), ['verbs.list']);
    assert.deepEqual(reg.closest('audit__trial').slice(0, 1), ['audit.trail']);
  });

  it('suggests from a catalogue of 10,000 verbs, with bounded work per unknown name', () => {
    const reg = new Registry({ compileOutputs: false });
    const verbs = [];
    for (let i = 0; i < 10_000; i++) {
      verbs.push(
        defineVerb({
          name: `scale.verb_${String(i).padStart(5, '0')}`,
          description: 'A read of the scale catalogue.',
          shape: 'aggregate',
          category: 'scale',
          input: { type: 'object', additionalProperties: false },
          handler: async () => ({ entity_id: 1, data: {} }),
        }),
      );
    }
    reg.registerAll([...systemVerbs, ...verbs]);
    assert.deepEqual(reg.closest('scale.verb_0123x'), [
      'scale.verb_01230',
      'scale.verb_01231',
      'scale.verb_01232',
    ]);
    assert.deepEqual(reg.closest('verbs.lsit').slice(0, 1), ['verbs.list']);
    assert.deepEqual(reg.closest('scale__verb_09999').slice(0, 1), ['scale.verb_09999']);
    assert.deepEqual(reg.closest('qqqqqq'), [], 'nothing alike: no hint');
    // A name longer than any verb can be gets no hint (no edit distance is computed for it).
    assert.deepEqual(reg.closest(`verbs.list${'x'.repeat(200)}`), []);
    reg.unregister('scale.verb_01230');
    assert.ok(!reg.closest('scale.verb_01230').includes('scale.verb_01230'), 'the index follows changes');
  });
});
