/**
 * JSON Schema fragments shared by the demo pack's input schemas (2020-12, the OpenAI-compatible
 * subset: objects with `additionalProperties: false`, integer ids, integer cents, enums, ranges).
 * company_id and user_id never appear: the runtime injects them from authentication.
 *
 * Spec: spec/manifest.md §record (input_schema).
 */
import type { JsonSchema } from '../../spec/types.ts';

/** An object schema: every listed property, the required ones, nothing else accepted. */
export function objectSchema(properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema {
  return {
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
}

/** A positive integer id of an entity of this tenant. */
export function idProp(description: string): JsonSchema {
  return { type: 'integer', minimum: 1, maximum: 9007199254740991, description };
}

/** An amount of money in integer cents (USD), at least `minimum` (default 1). */
export function centsProp(description: string, minimum = 1): JsonSchema {
  return {
    type: 'integer',
    minimum,
    maximum: 100_000_000_00,
    description: `${description} In cents: 5000 is $50.00.`,
  };
}

/** An ISO-8601 time that carries its offset (`Z` or ±hh:mm). */
export function timeProp(description: string): JsonSchema {
  return {
    type: 'string',
    format: 'date-time',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})$',
    description: `${description} ISO 8601 with offset.`,
  };
}

/** A bounded string. */
export function textProp(description: string, maxLength: number, minLength = 1): JsonSchema {
  return { type: 'string', minLength, maxLength, description };
}

/** One of a fixed list of values. */
export function enumProp(values: readonly string[], description: string): JsonSchema {
  return { type: 'string', enum: [...values], description };
}

/** `limit` and `offset` of a paged search (limit 1..200, default 25). */
export const PAGE_PROPS: Readonly<Record<string, JsonSchema>> = {
  limit: {
    type: 'integer',
    minimum: 1,
    maximum: 200,
    default: 25,
    description: 'Most items to return.',
  },
  offset: {
    type: 'integer',
    minimum: 0,
    maximum: 1_000_000,
    default: 0,
    description: 'Items to skip: next_offset of the previous page.',
  },
};
