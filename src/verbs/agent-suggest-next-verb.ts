/**
 * agent.suggest_next_verb (shape suggest): likely next verbs for the caller, ranked from the
 * tenant's own trail (runtime/observe/transition-model.ts: which verb follows which, and how often
 * that next call succeeded), with confidence, confidence_band, reason, model_version and the true
 * sample_size. Only verbs the caller may call (registered, not blocked, role and tier floors met)
 * are suggested.
 *
 * Context: `after_verb` when given, else the caller's own most recent call in the window. Calls are
 * ordered by (created_at, audit_id): two calls within the same millisecond keep audit_id order, and
 * a read's row is numbered when the read-audit buffer flushes.
 * Reasons: invalid_input (unknown window, limit out of range). Spec: spec/shapes.md §suggest.
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import { ROLE_RANK, TIER_RANK } from '../runtime/verb.ts';
import {
  countTransitions,
  loadSteps,
  rankNext,
  SUGGEST_MODEL_VERSION,
} from '../runtime/observe/transition-model.ts';

const WINDOWS = { '24h': 24 * 3600_000, '7d': 7 * 24 * 3600_000, '30d': 30 * 24 * 3600_000 } as const;
type SuggestWindow = keyof typeof WINDOWS;

export const agentSuggestNextVerb = defineSystemVerb<{
  after_verb?: string;
  window?: SuggestWindow;
  limit?: number;
}>({
  name: 'agent.suggest_next_verb',
  title: 'Suggest next verb',
  description:
    "Rank the verbs most likely to be the right next call, learned from this tenant's own audit trail: which verb usually follows the one you just ran (after_verb, or your last call when omitted) and how often that succeeded. Each suggestion has a confidence (0-1), a band (high, medium, low; learning while fewer than 20 transitions were seen), the reason, model_version and the sample_size it rests on.",
  shape: 'suggest',
  category: 'agent',
  input: {
    type: 'object',
    properties: {
      after_verb: {
        type: 'string',
        minLength: 1,
        maxLength: 200,
        description: 'The verb just run; default: your most recent call.',
      },
      window: {
        type: 'string',
        enum: Object.keys(WINDOWS),
        default: '30d',
        description: 'How far back the trail is read.',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 20,
        default: 5,
        description: 'Most suggestions to return.',
      },
    },
    additionalProperties: false,
  },
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const rt = ctx.runtime;
    const p = ctx.principal;
    const window = args.window ?? '30d';
    const since = new Date(ctx.now.getTime() - WINDOWS[window]).toISOString();
    const stats = countTransitions(await loadSteps(ctx.db, p.company_id, since));
    const inferred = stats.lastByUser.get(p.user_id);
    const context = args.after_verb ?? inferred ?? null;
    const blocked = new Set<string>();
    for (const verb of stats.calls.keys()) if (await rt.isBlocked(verb, p.company_id)) blocked.add(verb);
    const allowed = (name: string): boolean => {
      const v = rt.registry.get(name);
      if (
        v === undefined ||
        blocked.has(name) ||
        v.consentClass === 'BLOCKED' ||
        v.shape === 'suggest' ||
        v.shape === 'discovery'
      )
        return false;
      if (v.isWrite && p.sandbox === true) return false;
      // A verb that delegates its consent decides its floor per call; its static floors are checked here.
      return ROLE_RANK[p.role] >= ROLE_RANK[v.roleFloor] && TIER_RANK[p.tier] >= TIER_RANK[v.tierFloor];
    };
    const ranked = rankNext(stats, context, allowed, args.limit ?? 5, window);
    return {
      suggestions: ranked.map((s) => ({
        action: s.action,
        confidence: Math.round(s.confidence * 10000) / 10000,
        confidence_band: s.confidence_band,
        reason: s.reason,
        model_version: s.model_version,
        sample_size: s.sample_size,
        followed: s.followed,
        succeeded: s.succeeded,
      })),
      context_verb: context,
      context_source: args.after_verb !== undefined ? 'argument' : inferred !== undefined ? 'trail' : 'none',
      model_version: SUGGEST_MODEL_VERSION,
      window,
      transitions_seen: stats.transitions,
      generated_at: ctx.now.toISOString(),
    };
  },
});
