/**
 * The next-verb model behind agent.suggest_next_verb (shape suggest): transition statistics over a
 * tenant's recent audit trail — which verb tends to follow which, and how often that next call
 * succeeded. Computed per request from one bounded index range scan (at most MAX_TRAIL_ROWS rows of
 * the window), never canned.
 *
 * Steps: audit rows of registered verbs in the window, oldest first, per user; a pending answer (the
 * first half of a consent round trip), a replay and the agent's own orientation calls (shapes
 * suggest and discovery) are not steps. A transition a → b joins two consecutive steps of the same
 * user at most SESSION_GAP_MS apart; it succeeded when b completed.
 *
 * For the context verb a with n transitions out of it (the TRUE sample_size), candidate b gets
 *   confidence = (transitions a → b whose b succeeded) / n
 * and the band: learning when n < LEARNING_BELOW; else high ≥ 0.5, medium ≥ 0.2, low below.
 * With no transition out of a (or no context), the tenant's most used verbs are offered instead,
 * confidence = their successful calls / all steps, band learning (model "…/popularity").
 * Spec: spec/shapes.md §suggest.
 */
import type { Queryable } from '../../store/store.ts';

export const SUGGEST_MODEL_VERSION = 'transitions-v1';
/** Longest pause between two calls of one user that still counts as "next" (ms). */
export const SESSION_GAP_MS = 30 * 60_000;
/** Most audit rows one suggestion reads. */
export const MAX_TRAIL_ROWS = 5000;
/** Below this many transitions out of the context verb, every suggestion is in the learning band. */
export const LEARNING_BELOW = 20;
export const HIGH_CONFIDENCE = 0.5;
export const MEDIUM_CONFIDENCE = 0.2;

const NOT_STEPS: ReadonlySet<string> = new Set(['suggest', 'discovery']);

export type ConfidenceBand = 'high' | 'medium' | 'low' | 'learning';

/** The band of a confidence resting on `sampleSize` transitions. */
export function confidenceBand(confidence: number, sampleSize: number): ConfidenceBand {
  if (sampleSize < LEARNING_BELOW) return 'learning';
  if (confidence >= HIGH_CONFIDENCE) return 'high';
  if (confidence >= MEDIUM_CONFIDENCE) return 'medium';
  return 'low';
}

export interface TrailStep {
  user: number | null;
  verb: string;
  ok: boolean;
  at: number;
}

/** The steps of a tenant's trail since `sinceIso`, oldest first (at most MAX_TRAIL_ROWS newest rows). */
export async function loadSteps(
  q: Queryable,
  companyId: number,
  sinceIso: string,
  maxRows = MAX_TRAIL_ROWS,
): Promise<TrailStep[]> {
  const rows = await q.all<Record<string, unknown>>(
    `SELECT user_id, action_type, status, reason, shape, created_at FROM audit_log
     WHERE company_id = ? AND created_at >= ? ORDER BY created_at DESC, audit_id DESC LIMIT ?`,
    [companyId, sinceIso, maxRows],
  );
  const steps: TrailStep[] = [];
  for (let i = rows.length - 1; i >= 0; i--) {
    const r = rows[i]!;
    if (
      r.shape === null ||
      NOT_STEPS.has(r.shape as string) ||
      r.status === 'pending' ||
      r.status === 'replayed'
    )
      continue;
    steps.push({
      user: r.user_id === null ? null : Number(r.user_id),
      verb: r.action_type as string,
      ok: r.reason === null && r.status !== 'failed' && r.status !== 'denied' && r.status !== 'rejected',
      at: Date.parse(r.created_at as string),
    });
  }
  return steps;
}

export interface TransitionStats {
  /** from → to → { count, ok } */
  next: Map<string, Map<string, { count: number; ok: number }>>;
  /** verb → { count, ok } over all steps. */
  calls: Map<string, { count: number; ok: number }>;
  steps: number;
  transitions: number;
  /** The last step of each user. */
  lastByUser: Map<number | null, string>;
}

/** Count transitions and calls over steps (oldest first). */
export function countTransitions(steps: readonly TrailStep[]): TransitionStats {
  const next = new Map<string, Map<string, { count: number; ok: number }>>();
  const calls = new Map<string, { count: number; ok: number }>();
  const prev = new Map<number | null, TrailStep>();
  let transitions = 0;
  for (const s of steps) {
    const c = calls.get(s.verb) ?? { count: 0, ok: 0 };
    c.count++;
    if (s.ok) c.ok++;
    calls.set(s.verb, c);
    const p = prev.get(s.user);
    if (p !== undefined && s.at - p.at <= SESSION_GAP_MS) {
      let row = next.get(p.verb);
      if (row === undefined) {
        row = new Map();
        next.set(p.verb, row);
      }
      const t = row.get(s.verb) ?? { count: 0, ok: 0 };
      t.count++;
      if (s.ok) t.ok++;
      row.set(s.verb, t);
      transitions++;
    }
    prev.set(s.user, s);
  }
  const lastByUser = new Map<number | null, string>();
  for (const [u, s] of prev) lastByUser.set(u, s.verb);
  return { next, calls, steps: steps.length, transitions, lastByUser };
}

export interface Suggestion {
  action: string;
  confidence: number;
  confidence_band: ConfidenceBand;
  reason: string;
  model_version: string;
  sample_size: number;
  followed: number;
  succeeded: number;
}

/**
 * Rank next verbs after `context` (null: no context). `allowed` filters candidates the caller may
 * call. Returns at most `limit` suggestions, best first (confidence, then count, then name).
 */
export function rankNext(
  stats: TransitionStats,
  context: string | null,
  allowed: (verb: string) => boolean,
  limit: number,
  windowLabel: string,
): Suggestion[] {
  const row = context === null ? undefined : stats.next.get(context);
  const n = row === undefined ? 0 : [...row.values()].reduce((a, t) => a + t.count, 0);
  if (row !== undefined && n > 0) {
    const out: Suggestion[] = [];
    for (const [verb, t] of row) {
      if (!allowed(verb)) continue;
      const confidence = t.ok / n;
      out.push({
        action: verb,
        confidence,
        confidence_band: confidenceBand(confidence, n),
        reason: `In the last ${windowLabel}, ${context} was followed ${n} time${n === 1 ? '' : 's'}; ${t.count} of those by ${verb}, which succeeded ${t.ok} time${t.ok === 1 ? '' : 's'}.`,
        model_version: SUGGEST_MODEL_VERSION,
        sample_size: n,
        followed: t.count,
        succeeded: t.ok,
      });
    }
    out.sort(
      (a, b) => b.confidence - a.confidence || b.followed - a.followed || a.action.localeCompare(b.action),
    );
    if (out.length > 0) return out.slice(0, limit);
  }
  const total = stats.steps;
  const out: Suggestion[] = [];
  for (const [verb, c] of stats.calls) {
    if (!allowed(verb) || total === 0) continue;
    const confidence = c.ok / total;
    out.push({
      action: verb,
      confidence,
      confidence_band: 'learning',
      reason:
        (context === null
          ? 'No recent call of yours gives a context; '
          : `No call has yet been seen following ${context}; `) +
        `${verb} is one of this tenant's most used verbs: ${c.count} of ${total} calls in the last ${windowLabel}, ${c.ok} succeeded.`,
      model_version: `${SUGGEST_MODEL_VERSION}/popularity`,
      sample_size: total,
      followed: c.count,
      succeeded: c.ok,
    });
  }
  out.sort(
    (a, b) => b.confidence - a.confidence || b.followed - a.followed || a.action.localeCompare(b.action),
  );
  return out.slice(0, limit);
}
