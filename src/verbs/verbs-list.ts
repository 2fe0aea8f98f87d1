/**
 * verbs.list (shape discovery): the manifest itself, filtered by surface and shape.
 * Spec: spec/shapes.md §discovery, spec/manifest.md.
 */
import { VALID_SHAPES, VALID_SURFACES } from '../spec/types.ts';
import { defineSystemVerb } from '../runtime/verb.ts';

export const verbsList = defineSystemVerb<{ surface?: string; shape?: string }>({
  name: 'verbs.list',
  title: 'List verbs',
  description:
    'Introspect the verb manifest: every verb this runtime offers as a VerbRecord (name, description, shape, side_effects, input_schema, output_schema, surfaces, requires_consent, tier_floor). Filter by surface (http, mcp_stdio, webmcp, ucp, cli) and/or shape. Use it to learn what you can do and which arguments each verb takes.',
  shape: 'discovery',
  category: 'system',
  input: {
    type: 'object',
    properties: {
      surface: {
        type: 'string',
        enum: [...VALID_SURFACES],
        description: 'Only verbs projected onto this transport.',
      },
      shape: { type: 'string', enum: [...VALID_SHAPES], description: 'Only verbs of this shape.' },
    },
    additionalProperties: false,
  },
  idempotent: true,
  cli: { command: ['verbs', 'catalog'] },
  webmcp_surfaces: ['dashboard', 'developer', 'portal'],
  async handler(ctx, args) {
    const verbs = ctx.runtime.registry.list({ surface: args.surface, shape: args.shape });
    return {
      verbs,
      total: verbs.length,
      ...(args.surface ? { surface: args.surface } : {}),
      ...(args.shape ? { shape: args.shape } : {}),
    };
  },
});
