/**
 * verbs.list (shape discovery): the manifest itself, filtered by surface and shape.
 * Spec: spec/shapes.md §discovery, spec/manifest.md.
 */
import { VALID_SHAPES, VALID_SURFACES } from '../spec/types.ts';
import { scopeAdmits } from '../runtime/verb-checks.ts';
import { defineSystemVerb } from '../runtime/verb.ts';
import { describeRule } from '../runtime/consent/gate-rules.ts';

export const verbsList = defineSystemVerb<{ surface?: string; shape?: string }>({
  name: 'verbs.list',
  title: 'List verbs',
  description:
    "Introspect the verb manifest: every verb offered as a VerbRecord (name, shape, side_effects, schemas, surfaces, requires_consent, tier_floor), filtered by surface and/or shape: what you can do and with which arguments. conditional_gates: the owner's rules that raise a verb's gate for some arguments.",
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
    const scope = ctx.principal.scope;
    // A limited key sees what it reaches (spec/consent.md §api-keys); everyone else the manifest.
    const verbs = ctx.runtime.registry.list({ surface: args.surface, shape: args.shape }).filter((r) => {
      const v = scope === undefined ? undefined : ctx.runtime.registry.get(r.name);
      return v === undefined || (scopeAdmits(scope, v) && !(scope?.read_only === true && v.isWrite));
    });
    // The owner's conditional gates on these verbs (spec/consent.md §conditional-gates): a record
    // says the declared gate; a rule may raise it for some arguments, and says so here.
    const listed = new Set(verbs.map((v) => v.name));
    const rules = ctx.principal.sandbox
      ? []
      : ((await ctx.runtime.tenants.get(ctx.principal.company_id))?.settings.gate_rules ?? []).filter((r) =>
          listed.has(r.verb),
        );
    return {
      verbs,
      total: verbs.length,
      ...(rules.length > 0
        ? {
            conditional_gates: rules.map((r) => ({
              verb: r.verb,
              rule_id: r.id,
              raise_to: r.raise_to,
              ...(r.role_floor !== undefined ? { role_floor: r.role_floor } : {}),
              description: describeRule(r),
            })),
          }
        : {}),
      ...(args.surface ? { surface: args.surface } : {}),
      ...(args.shape ? { shape: args.shape } : {}),
    };
  },
});
