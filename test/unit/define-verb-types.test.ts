/**
 * defineVerb with a zod 4 input types the handler's args from the schema (a typo in a field name
 * does not compile: the `@ts-expect-error` lines below fail `npm run typecheck` if it ever does),
 * and the registry compiles the same zod schema to the input_schema it validates with.
 * Spec: spec/manifest.md (VerbRecord input_schema).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { defineVerb } from '../../src/runtime/verb.ts';
import { Registry } from '../../src/runtime/registry.ts';

const lookup = defineVerb({
  name: 'books.lookup',
  description: 'Find a book by id.',
  shape: 'aggregate',
  category: 'books',
  input: z.object({ book_id: z.number().int().min(1), with_reviews: z.boolean().optional() }),
  phrase: (args) => `LOOK UP ${args.book_id}`,
  async handler(ctx, args) {
    const id: number = args.book_id;
    const reviews: boolean | undefined = args.with_reviews;
    // @ts-expect-error -- a field the schema does not have
    void args.bookid;
    // @ts-expect-error -- book_id is a number, not a string
    const wrong: string = args.book_id;
    void wrong;
    return { entity_id: id, data: { reviews: reviews ?? false, tenant: ctx.principal.company_id } };
  },
});

const plain = defineVerb<{ id: number }>({
  name: 'books.plain',
  description: 'A JSON Schema input with its argument type given.',
  shape: 'aggregate',
  category: 'books',
  input: {
    type: 'object',
    properties: { id: { type: 'integer' } },
    required: ['id'],
    additionalProperties: false,
  },
  async handler(_ctx, args) {
    // @ts-expect-error -- not a member of the given type
    void args.idd;
    return { entity_id: args.id, data: {} };
  },
});

test('a zod-typed verb registers with its schema as input_schema and validates with it', () => {
  const reg = new Registry();
  const compiled = reg.register(lookup);
  reg.register(plain);
  const schema = compiled.inputSchema as { properties: Record<string, unknown>; required: string[] };
  assert.deepEqual(Object.keys(schema.properties).sort(), ['book_id', 'with_reviews']);
  assert.deepEqual(schema.required, ['book_id']);
  assert.equal(compiled.validate({ book_id: 3 }), true);
  assert.equal(compiled.validate({ book_id: 'three' }), false);
  assert.equal(compiled.validate({ book_id: 0 }), false);
});
