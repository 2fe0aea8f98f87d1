/**
 * Deal insight verbs (category `deals`): explain a deal's stage from its history
 * (deals.explain_stage), and deal.suggest_next_action — the next stage ranked by the company's REAL
 * stage-transition statistics (countStageTransitions), with confidence, confidence_band
 * (confidence-band.ts thresholds), reason, model_version and the true sample_size.
 *
 * Reasons: not_found ("deal 7 not found"), invalid_input.
 * Spec: spec/shapes.md §explain §suggest.
 */
import { formatCents } from '../../runtime/consent/typed-phrase.ts';
import { getContact } from '../data/contacts.ts';
import {
  countStageTransitions,
  listAllStageHistories,
  listDealStageHistory,
  requireDeal,
  type DealStageChange,
} from '../data/deals.ts';
import { DAY_MS } from '../data/iso-time.ts';
import { CLOSED_DEAL_STAGES, type DealStage } from '../schema.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { buildCausalChain, chainForOutput, describeActor } from './causal-chain.ts';
import { confidenceBand, percent, ratio } from './confidence-band.ts';
import { idProp, objectSchema } from './input-schema.ts';

const isClosedStage = (s: DealStage): boolean => (CLOSED_DEAL_STAGES as readonly DealStage[]).includes(s);

// Explain

/** Median of a list of numbers (0 for none). */
function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Days each deal stayed in `stage` before its next change, across the company's history. */
function dwellDays(histories: readonly DealStageChange[], stage: DealStage): number[] {
  const out: number[] = [];
  for (let i = 0; i < histories.length - 1; i++) {
    const h = histories[i]!;
    const next = histories[i + 1]!;
    if (h.deal_id === next.deal_id && h.to_stage === stage)
      out.push((Date.parse(next.changed_at) - Date.parse(h.changed_at)) / DAY_MS);
  }
  return out;
}

const round1 = (x: number): number => Math.round(x * 10) / 10;

export const dealsExplainStage = defineBusinessVerb<{ deal_id: number }>({
  name: 'deals.explain_stage',
  title: 'Explain a deal stage',
  description:
    "Explain how a deal reached its current stage: every creation and stage change from the event log with who did it and when, verb calls recorded against the deal (including refused ones), how long it has been in its stage compared with the company's median, and a plain-language reasoning.",
  shape: 'explain',
  category: 'deals',
  input: objectSchema({ deal_id: idProp('The deal to explain.') }, ['deal_id']),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const deal = await requireDeal(ctx.db, c, args.deal_id);
    ctx.setEntity('deal', deal.id);
    const chain = await buildCausalChain(ctx.db, c, { type: 'deal', id: deal.id, argKeys: ['deal_id'] }, [
      { type: 'deal', ids: [deal.id] },
    ]);
    const history = await listDealStageHistory(ctx.db, c, deal.id);
    const since = history[history.length - 1]?.changed_at ?? deal.created_at;
    const days = round1((ctx.now.getTime() - Date.parse(since)) / DAY_MS);
    const typical = round1(median(dwellDays(await listAllStageHistories(ctx.db, c), deal.stage)));
    const path = history.map((h) => h.to_stage).join(' → ');
    const contact = await getContact(ctx.db, c, deal.contact_id);
    const lastMove = [...chain]
      .reverse()
      .find(
        (i) =>
          i.action === 'deal.stage_changed' ||
          i.action === 'deal.created' ||
          i.action === 'deal.stage_reverted',
      );
    const parts = [
      `Deal ${deal.id} "${deal.title}" for ${contact?.name ?? `contact ${deal.contact_id}`} (${formatCents(deal.amount_cents)}) went ${path}.`,
      lastMove !== undefined
        ? `It is in ${deal.stage} since ${since} (${lastMove.detail}, by ${describeActor(lastMove.actor)}).`
        : `It is in ${deal.stage} since ${since}.`,
    ];
    if (isClosedStage(deal.stage)) parts.push(`The deal is closed (${deal.stage}) since ${deal.closed_at}.`);
    else if (typical > 0)
      parts.push(
        `It has been there ${days} days; deals of this company usually stay ${typical} days in ${deal.stage}${days > 2 * typical ? ', so it looks stalled' : ''}.`,
      );
    return {
      entity_id: deal.id,
      entity_type: 'deal',
      current_state: {
        stage: deal.stage,
        amount_cents: deal.amount_cents,
        closed_at: deal.closed_at,
        days_in_stage: days,
        median_days_in_stage: typical,
        stage_path: history.map((h) => h.to_stage),
      },
      causal_chain: chainForOutput(chain),
      reasoning: parts.join(' '),
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Suggest

/** Model of deal.suggest_next_action. */
export const DEAL_MODEL_VERSION = 'deal-stage-transitions-v1';

const NEXT_STEP: Readonly<Record<DealStage, string>> = {
  new: 'Qualify budget and timing with the customer.',
  qualified: 'Book the estimate visit (scheduling.book_appointment, service "Estimate").',
  estimate_scheduled: 'Book or hold the estimate visit (scheduling.book_appointment).',
  proposal_sent: 'Send the written proposal (email_send).',
  negotiation: 'Follow up on the requested changes.',
  won: 'Schedule the job and invoice it afterwards (invoices.create).',
  lost: 'Record why it was lost (crm.add_note).',
};

export const dealSuggestNextAction = defineBusinessVerb<{ deal_id: number; limit?: number }>({
  name: 'deal.suggest_next_action',
  title: 'Suggest the next action on a deal',
  description:
    "Rank the next moves for a deal from this company's pipeline history: how often deals left its current stage for each next stage (confidence = that share; sample_size; band learning below 20 samples, else high ≥ 0.5, medium ≥ 0.2, low). Each suggestion gives deals.move_stage with ready args, the next step and the stage's win rate, plus days in stage against the median.",
  shape: 'suggest',
  category: 'deals',
  input: objectSchema(
    {
      deal_id: idProp('The deal.'),
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 6,
        default: 3,
        description: 'Most suggestions (1..6, default 3).',
      },
    },
    ['deal_id'],
  ),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const deal = await requireDeal(ctx.db, c, args.deal_id);
    ctx.setEntity('deal', deal.id);
    const out = (await countStageTransitions(ctx.db, c)).filter((t) => t.from_stage === deal.stage);
    const n = out.reduce((s, t) => s + t.count, 0);
    const histories = await listAllStageHistories(ctx.db, c);
    // Eventual outcome of deals that ever reached each stage (closed ones only).
    const reached = new Map<number, Set<DealStage>>();
    const final = new Map<number, DealStage>();
    for (const h of histories) {
      const set = reached.get(h.deal_id) ?? new Set<DealStage>();
      set.add(h.to_stage);
      reached.set(h.deal_id, set);
      final.set(h.deal_id, h.to_stage);
    }
    const winRate = (stage: DealStage): { rate: number; sample: number } => {
      let won = 0;
      let closed = 0;
      for (const [id, stages] of reached) {
        const f = final.get(id)!;
        if (!stages.has(stage) || !isClosedStage(f)) continue;
        closed++;
        if (f === 'won') won++;
      }
      return { rate: ratio(won, closed), sample: closed };
    };
    const history = histories.filter((h) => h.deal_id === deal.id);
    const since = history[history.length - 1]?.changed_at ?? deal.created_at;
    const daysInStage = round1((ctx.now.getTime() - Date.parse(since)) / DAY_MS);
    const typical = round1(median(dwellDays(histories, deal.stage)));
    const stalled = !isClosedStage(deal.stage) && typical > 0 && daysInStage > 2 * typical;
    const suggestions = out.slice(0, args.limit ?? 3).map((t, i) => {
      const confidence = ratio(t.count, n);
      const win = winRate(t.to_stage);
      return {
        action: 'deals.move_stage',
        args: { deal_id: deal.id, to_stage: t.to_stage },
        confidence,
        confidence_band: confidenceBand(confidence, n),
        reason:
          `Of ${n} deals that left ${deal.stage} in this company, ${t.count} (${percent(confidence)}) moved to ${t.to_stage}.` +
          (t.to_stage !== 'won' && t.to_stage !== 'lost' && win.sample > 0
            ? ` ${percent(win.rate)} of the closed deals that reached ${t.to_stage} were won (${win.sample} closed).`
            : '') +
          (i === 0 && stalled
            ? ` This deal has been in ${deal.stage} for ${daysInStage} days against a median of ${typical}: follow up now.`
            : ''),
        next_step: NEXT_STEP[t.to_stage],
        model_version: DEAL_MODEL_VERSION,
        sample_size: n,
      };
    });
    return {
      suggestions,
      deal_id: deal.id,
      stage: deal.stage,
      days_in_stage: daysInStage,
      median_days_in_stage: typical,
      stalled,
      win_rate_from_stage: winRate(deal.stage).rate,
      model_version: DEAL_MODEL_VERSION,
      ...(n === 0
        ? {
            note: isClosedStage(deal.stage)
              ? `The deal is closed (${deal.stage}); no transition out of ${deal.stage} was ever observed.`
              : `No transition out of ${deal.stage} was observed yet.`,
          }
        : {}),
      generated_at: ctx.now.toISOString(),
    };
  },
});
