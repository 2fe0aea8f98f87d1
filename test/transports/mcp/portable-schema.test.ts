/**
 * The portable JSON Schema subset of the MCP projection (src/transports/mcp/portable-schema.ts):
 * null handling both ways, $ref inlining (local, our ids, recursion), tuples, type arrays, and
 * the promise that the rewrite only loosens — checked with the SDK's own client-side validator
 * on the upstream example outputs. Spec: spec/transports.md §mcp-schemas.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import {
  compactOutputSchema,
  restoreNulls,
  toPortableSchema,
} from '../../../src/transports/mcp/portable-schema.ts';
import { shapeSchemas, validateShapeOutput } from '../../../src/spec/validators.ts';
import { VALID_SHAPES, type JsonSchema } from '../../../src/spec/types.ts';
import { allKeys, subschemas } from './harness.ts';

const sdk = new AjvJsonSchemaValidator();
const valid = (schema: JsonSchema, value: unknown) => sdk.getValidator(schema)(value).valid;
const EXAMPLES = fileURLToPath(new URL('../../../../shared/spec-reference/examples/', import.meta.url));

function assertPortable(schema: JsonSchema): void {
  const keys = new Set(allKeys(schema));
  for (const bad of [
    '$ref',
    '$schema',
    '$id',
    '$defs',
    'definitions',
    'nullable',
    'prefixItems',
    'if',
    'then',
    'else',
    'unevaluatedProperties',
  ])
    assert.ok(!keys.has(bad), `no ${bad}`);
  for (const s of subschemas(schema)) {
    assert.ok(!Array.isArray(s.type), `no type array: ${JSON.stringify(s)}`);
    if (s.type === 'array') assert.ok(s.items !== undefined, 'arrays have items');
  }
  assert.equal(schema.type, 'object');
}

test('input: every spelling of "may be null" is declared as a null branch; required ones become optional and are mapped back to null', () => {
  const schema: JsonSchema = {
    type: 'object',
    properties: {
      a: { type: 'string', nullable: true },
      b: { type: ['integer', 'null'] },
      c: { enum: ['x', 'y', null] },
      d: { anyOf: [{ type: 'string', minLength: 1 }, { type: 'null' }], description: 'D' },
      e: { type: 'string' },
      nested: { type: 'object', properties: { f: { type: ['string', 'null'] } }, required: ['f'] },
      list: {
        type: 'array',
        items: { type: 'object', properties: { g: { type: ['string', 'null'] } }, required: ['g'] },
      },
    },
    required: ['a', 'b', 'c', 'e', 'nested'],
  };
  const { schema: out, nullFill } = toPortableSchema(schema, 'input');
  assertPortable(out);
  const p = out.properties as Record<string, JsonSchema>;
  assert.deepEqual(out.required, ['e', 'nested']);
  const orNull = (s: JsonSchema) => ({ anyOf: [s, { type: 'null' }] });
  assert.deepEqual(p.a, orNull({ type: 'string' }));
  assert.deepEqual(p.b, orNull({ type: 'integer' }));
  assert.deepEqual(p.c, orNull({ enum: ['x', 'y'] }));
  assert.deepEqual(p.d, { description: 'D', ...orNull({ type: 'string', minLength: 1 }) });
  assert.deepEqual(p.e, { type: 'string' }, 'a property that refuses null gets no null branch');
  assert.equal((p.nested!.required as string[] | undefined) ?? null, null);
  assert.deepEqual(
    (p.list!.items as JsonSchema).required,
    undefined,
    'inside arrays the property is optional too',
  );
  assert.deepEqual(
    nullFill.map((x) => x.join('.')).sort(),
    ['a', 'b', 'c', 'nested.f'],
    'only required nullables reachable through properties are filled',
  );
  const args = { e: 'x', nested: {} };
  const filled = restoreNulls(args, nullFill);
  assert.deepEqual(filled, { e: 'x', nested: { f: null }, a: null, b: null, c: null });
  assert.deepEqual(args, { e: 'x', nested: {} }, "the caller's object is not mutated");
  assert.deepEqual(
    restoreNulls({ e: 'x', a: 'given', b: 1, c: 'x', nested: { f: 'v' } }, nullFill),
    { e: 'x', a: 'given', b: 1, c: 'x', nested: { f: 'v' } },
    'present values are kept',
  );
});

test('output: null stays allowed (anyOf with {type:"null"}) so every output the runtime accepts still validates', () => {
  const schema: JsonSchema = {
    type: 'object',
    properties: {
      note: { type: ['string', 'null'], description: 'N' },
      n: { type: 'integer', nullable: true },
      k: { type: ['string', 'integer'] },
    },
    required: ['note', 'n'],
  };
  const { schema: out } = toPortableSchema(schema, 'output');
  assertPortable(out);
  assert.deepEqual(out.required, ['note', 'n'], 'output keeps required');
  assert.deepEqual((out.properties as Record<string, JsonSchema>).note, {
    description: 'N',
    anyOf: [{ type: 'string' }, { type: 'null' }],
  });
  for (const ok of [
    { note: null, n: null },
    { note: 'x', n: 3, k: 'a' },
    { note: 'x', n: 3, k: 2 },
  ])
    assert.ok(valid(out, ok), JSON.stringify(ok));
  assert.ok(!valid(out, { note: 5, n: null }), 'still a string when present');
  assert.ok(!valid(out, { n: null }), 'still required');
});

test('$ref: local $defs, our own schema ids and recursion are inlined; unresolvable refs loosen to any', () => {
  const schema: JsonSchema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://example.test/tree.json',
    type: 'object',
    properties: {
      root: { $ref: '#/$defs/node' },
      record: { $ref: 'https://schemas.solid-verbs.dev/v1/verb-record.json' },
      ghost: { $ref: '#/$defs/missing', description: 'kept' },
    },
    $defs: {
      node: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          children: { type: 'array', items: { $ref: '#/$defs/node' } },
        },
      },
    },
  };
  const { schema: out } = toPortableSchema(schema, 'output');
  assertPortable(out);
  const p = out.properties as Record<string, JsonSchema>;
  const root = p.root!.properties as Record<string, JsonSchema>;
  assert.equal(root.name!.type, 'string', 'the local $defs target is inlined');
  assert.deepEqual(root.children!.items, {}, 'the recursive reference is any below its first expansion');
  assert.equal(
    (p.record!.properties as Record<string, JsonSchema>).name!.type,
    'string',
    'our schema id resolved',
  );
  assert.deepEqual(p.ghost, { description: 'kept' });
  assert.ok(valid(out, { root: { name: 'a', children: [{ name: 'b', children: [{ name: 'c' }] }] } }));
});

test('tuples, arrays without items and type arrays are rewritten into the subset', () => {
  const schema: JsonSchema = {
    type: 'object',
    properties: {
      pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false },
      open: { type: 'array', prefixItems: [{ type: 'string' }] },
      bag: { type: 'array' },
      either: { type: ['string', 'number'], minLength: 2 },
    },
  };
  const { schema: out } = toPortableSchema(schema, 'input');
  assertPortable(out);
  const p = out.properties as Record<string, JsonSchema>;
  assert.deepEqual(p.pair!.items, { anyOf: [{ type: 'string' }, { type: 'number' }] });
  assert.deepEqual(p.open!.items, {});
  assert.deepEqual(p.bag!.items, {});
  assert.deepEqual(p.either, { anyOf: [{ type: 'string' }, { type: 'number' }], minLength: 2 });
});

test('a verb without arguments gets {type: "object", properties: {}}', () => {
  assert.deepEqual(toPortableSchema({}, 'input').schema, { type: 'object', properties: {} });
  assert.deepEqual(toPortableSchema({ type: 'object' }, 'input').schema, { type: 'object', properties: {} });
});

test('every shape schema projects to the subset and still accepts the upstream example outputs (SDK client validator)', (t) => {
  for (const shape of VALID_SHAPES) assertPortable(toPortableSchema(shapeSchemas[shape], 'output').schema);
  if (!existsSync(EXAMPLES))
    return t.skip('../shared/spec-reference/examples is absent: upstream examples not checked');
  let checked = 0;
  for (const file of readdirSync(EXAMPLES).filter((f) => f.endsWith('.json'))) {
    const ex = JSON.parse(readFileSync(join(EXAMPLES, file), 'utf8')) as { shape: string; output: unknown };
    if (!validateShapeOutput(ex.shape, ex.output).valid) continue;
    assert.ok(
      valid(
        toPortableSchema(shapeSchemas[ex.shape as keyof typeof shapeSchemas], 'output').schema,
        ex.output,
      ),
      file,
    );
    checked++;
  }
  assert.ok(checked >= 2, `checked ${checked} examples`);
});

test('compactOutputSchema: structure only, shared shape fields left out, and it still accepts every example output', (t) => {
  const receipt = toPortableSchema(shapeSchemas.receipt, 'output').schema;
  const c = compactOutputSchema(receipt, 'receipt');
  assertPortable(c);
  const keys = new Set(allKeys(c));
  for (const gone of ['title', 'description', 'examples', 'pattern', 'minLength', 'minimum'])
    assert.ok(!keys.has(gone), `no ${gone}`);
  const props = c.properties as Record<string, unknown>;
  assert.deepEqual(
    Object.keys(props).sort(),
    ['audit_id', 'status'],
    'only the required receipt fields stay',
  );
  assert.deepEqual(c.required, ['status', 'audit_id']);
  assert.ok(valid(c, { status: 'completed', audit_id: 3, rollback_handle: 'x', attestation: { kid: 'k' } }));
  assert.ok(!valid(c, { status: 'completed' }), 'audit_id is still required');
  // A verb's own output keeps its own fields; a closed object keeps everything it declares.
  const own = compactOutputSchema(
    toPortableSchema(
      {
        type: 'object',
        properties: {
          status: { type: 'string' },
          audit_id: { type: 'integer' },
          timestamp: { type: 'string', format: 'date-time' },
          amount_cents: { type: 'integer', description: 'x' },
        },
        required: ['status', 'audit_id'],
        additionalProperties: false,
      },
      'output',
    ).schema,
    'receipt',
  );
  assert.deepEqual(Object.keys(own.properties as object).sort(), [
    'amount_cents',
    'audit_id',
    'status',
    'timestamp',
  ]);
  if (!existsSync(EXAMPLES))
    return t.skip('../shared/spec-reference/examples is absent: upstream examples not checked');
  let checked = 0;
  for (const file of readdirSync(EXAMPLES).filter((f) => f.endsWith('.json'))) {
    const ex = JSON.parse(readFileSync(join(EXAMPLES, file), 'utf8')) as { shape?: string; output?: unknown };
    if (
      ex.shape === undefined ||
      ex.output === undefined ||
      !(VALID_SHAPES as readonly string[]).includes(ex.shape)
    )
      continue;
    if (!validateShapeOutput(ex.shape, ex.output).valid) continue;
    const shape = ex.shape as keyof typeof shapeSchemas;
    assert.ok(
      valid(compactOutputSchema(toPortableSchema(shapeSchemas[shape], 'output').schema, shape), ex.output),
      file,
    );
    checked++;
  }
  assert.ok(checked >= 2, `checked ${checked} examples`);
});
