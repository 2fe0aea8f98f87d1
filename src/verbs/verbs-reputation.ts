/**
 * verbs.reputation (shape reputation): how reliably and how fast each verb has worked for this
 * tenant over a window, overall or per agent, so an agent can prefer tools that actually work.
 * Read from the incremental buckets (runtime/observe/reputation.ts): the cost depends on the
 * window and the number of verbs, never on the size of the audit log.
 *
 * Reasons: invalid_input (unknown window such as "90d", limit out of range).
 * Spec: spec/shapes.md §reputation (classification, windows and the star_rating formula).
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import {
  MIN_RATING_SAMPLE,
  REPUTATION_WINDOWS,
  STAR_FORMULA_VERSION,
  windowStart,
  type ReputationWindow,
} from '../runtime/observe/reputation.ts';

interface ReputationArgs {
  window?: ReputationWindow;
  verb?: string;
  agent?: string;
  by_agent?: boolean;
  limit?: number;
}

export const verbsReputation = defineSystemVerb<ReputationArgs>({
  name: 'verbs.reputation',
  title: 'Verb reputation',
  description:
    "Reliability of this tenant's verbs over a window (1h, 24h, 7d, 30d; default 24h): invocations, successes, failures (the verb's own), denials, caller_errors, success_rate, p50_ms, p95_ms and a 0-5 star_rating (null under 10 calls). Filter by verb or agent; by_agent=true scores each verb per agent. Prefer verbs that work.",
  shape: 'reputation',
  category: 'system',
  input: {
    type: 'object',
    properties: {
      window: {
        type: 'string',
        enum: [...REPUTATION_WINDOWS],
        default: '24h',
        description: 'Time window ending now, in whole hours (1h, 24h) or UTC days (7d, 30d).',
      },
      verb: { type: 'string', minLength: 1, maxLength: 200, description: 'Only this verb.' },
      agent: {
        type: 'string',
        minLength: 1,
        maxLength: 100,
        description: 'Only calls made by this agent (the agent_type of the API key).',
      },
      by_agent: {
        type: 'boolean',
        default: false,
        description: 'One score per verb and agent instead of one per verb.',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 500,
        default: 100,
        description: 'Most scores to return (most invoked first).',
      },
    },
    additionalProperties: false,
  },
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const window = args.window ?? '24h';
    const scores = await ctx.runtime.observers.reputation.scores(ctx.db, ctx.principal.company_id, {
      window,
      now: ctx.now,
      verb: args.verb,
      agent: args.agent,
      byAgent: args.by_agent === true,
    });
    return {
      window,
      generated_at: ctx.now.toISOString(),
      window_start: windowStart(window, ctx.now),
      scores: scores.slice(0, args.limit ?? 100),
      total: scores.length,
      min_sample: MIN_RATING_SAMPLE,
      formula_version: STAR_FORMULA_VERSION,
    };
  },
});
