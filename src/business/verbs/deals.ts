/**
 * Deal verbs (category `deals`): search and read deals, create them (deals_create, CLI
 * `solid deal create`), move them through the pipeline, change title / amount / owner. Explaining a
 * deal's stage and deal.suggest_next_action live in deal-insights.ts (re-exported here).
 *
 * Reasons: not_found ("deal 7 not found", "contact 9 not found", "employee 3 not found"),
 * same_stage, no_change, contact_erased, changed_since (revert after a later change), invalid_input.
 * Spec: spec/shapes.md §aggregate §explain §preview §suggest §receipt.
 */
import type { JsonSchema } from '../../spec/types.ts';
import type { Queryable } from '../../store/store.ts';
import { formatCents } from '../../runtime/consent/typed-phrase.ts';
import { listDealAppointments } from '../data/appointments.ts';
import { getContact, requireContact } from '../data/contacts.ts';
import {
  countStageTransitions,
  createDeal,
  deleteDeal,
  listDealStageHistory,
  moveDealStage,
  requireDeal,
  searchDeals,
  undoDealStageMove,
  updateDeal,
  type DealPatch,
} from '../data/deals.ts';
import { DomainError } from '../data/domain-error.ts';

import { num } from '../data/row-values.ts';
import { getEmployee, requireEmployee } from '../data/team.ts';
import { CLOSED_DEAL_STAGES, DEAL_STAGES, OPEN_DEAL_STAGES, type DealStage } from '../schema.ts';
import { contactName, dealCustomer } from './activity-words.ts';
import { defineBusinessVerb } from './business-verb.ts';

import { changeWords, valueWords } from './change-words.ts';
import { collectionResult } from './collection-result.ts';
import { percent, ratio } from './confidence-band.ts';
import { dealSuggestNextAction, dealsExplainStage } from './deal-insights.ts';
import { appointmentView, dealView, stageChangeView } from './entity-views.ts';
import { centsProp, enumProp, idProp, objectSchema, PAGE_PROPS, textProp } from './input-schema.ts';

const isClosedStage = (s: DealStage): boolean => (CLOSED_DEAL_STAGES as readonly DealStage[]).includes(s);

// ---------------------------------------------------------------------------------------------
// Read

export const dealsSearch = defineBusinessVerb<{
  stage?: DealStage;
  open?: boolean;
  contact_id?: number;
  owner_user_id?: number;
  query?: string;
  min_amount_cents?: number;
  limit?: number;
  offset?: number;
}>({
  name: 'deals.search',
  title: 'Search deals',
  description:
    'Search the sales pipeline: deals filtered by stage, open/closed, customer, owner, title text or minimum amount, newest first. Each deal has id, contact_id, title, stage (new, qualified, estimate_scheduled, proposal_sent, negotiation, won, lost), amount_cents and owner. Returns a page with total and next_offset.',
  shape: 'aggregate',
  category: 'deals',
  input: objectSchema({
    stage: enumProp(DEAL_STAGES, 'Only deals in this stage.'),
    open: { type: 'boolean', description: 'true: only open deals; false: only won or lost.' },
    contact_id: idProp('Only deals of this customer.'),
    owner_user_id: idProp('Only deals owned by this employee (user id).'),
    query: textProp('Text found in the title (case-insensitive).', 200),
    min_amount_cents: centsProp('Only deals worth at least this much.', 0),
    ...PAGE_PROPS,
  }),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const page = await searchDeals(ctx.db, ctx.principal.company_id, args);
    return collectionResult(
      'deals',
      { ...page, items: page.items.map(dealView) },
      args as Record<string, unknown>,
      ctx.now,
    );
  },
});

export const dealsGet = defineBusinessVerb<{ deal_id: number }>({
  name: 'deals.get',
  title: 'Deal with history',
  description:
    'One deal with its customer, owner, full stage history (who moved it and when) and the visits linked to it. Use it before moving or changing a deal.',
  shape: 'aggregate',
  category: 'deals',
  input: objectSchema({ deal_id: idProp('The deal id.') }, ['deal_id']),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const deal = await requireDeal(ctx.db, c, args.deal_id);
    ctx.setEntity('deal', deal.id);
    const [contact, history, appts, owner] = [
      await getContact(ctx.db, c, deal.contact_id),
      await listDealStageHistory(ctx.db, c, deal.id),
      await listDealAppointments(ctx.db, c, deal.id),
      await (deal.owner_user_id === null
        ? Promise.resolve(undefined)
        : getEmployee(ctx.db, c, deal.owner_user_id)),
    ];
    return {
      entity_id: deal.id,
      entity_type: 'deal',
      data: {
        ...dealView(deal),
        customer_name: contact?.name ?? null,
        owner_name: owner?.name ?? null,
        stage_history: history.map(stageChangeView),
      },
      relations: [
        ...(contact !== undefined ? [{ type: 'customer', id: contact.id, name: contact.name }] : []),
        ...appts.map((a) => ({ type: 'appointment', ...appointmentView(a) })),
      ],
      fetched_at: ctx.now.toISOString(),
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Create

interface CreateArgs {
  contact_id: number;
  title: string;
  amount_cents: number;
  stage?: DealStage;
  owner_user_id?: number;
}

const createInput = objectSchema(
  {
    contact_id: idProp('The customer the deal is for.'),
    title: textProp('What is being sold, e.g. "Kitchen remodel plumbing".', 200),
    amount_cents: centsProp('Expected value of the deal.', 0),
    stage: enumProp(OPEN_DEAL_STAGES, 'Initial stage (default new).'),
    owner_user_id: idProp('Employee (user id) owning the deal; default: you, when you are an employee.'),
  },
  ['contact_id', 'title', 'amount_cents'],
);

async function ownerFor(
  q: Queryable,
  c: number,
  args: { owner_user_id?: number },
  userId: number,
): Promise<number | null> {
  if (args.owner_user_id !== undefined) return (await requireEmployee(q, c, args.owner_user_id)).user_id;
  return (await getEmployee(q, c, userId)) === undefined ? null : userId;
}

export const dealsCreate = defineBusinessVerb<CreateArgs>({
  name: 'deals_create',
  title: 'Create a deal',
  description:
    'Open a deal in the sales pipeline for a customer: title, expected amount (integer cents), optional initial stage (default new) and owner (default: you). Answers the deal id and its stage. Reversible with audit.revert until the deal moves to another stage. Preview with deals.preview_create.',
  shape: 'receipt',
  category: 'deals',
  consent: 'WRITE_REVERSIBLE',
  preview: 'deals.preview_create',
  input: createInput,
  cli: { command: ['deal', 'create'] },
  summary: (a) => `Open deal "${a.title}" worth ${formatCents(a.amount_cents)} for contact ${a.contact_id}.`,
  activity: async (read, a) => {
    const name = await contactName(read, a.contact_id);
    return name && `Open deal "${a.title}" worth ${formatCents(a.amount_cents)} for ${name}`;
  },
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const owner = await ownerFor(ctx.db, c, args, ctx.principal.user_id);
    const { deal, history } = await createDeal(
      ctx.db,
      c,
      {
        contact_id: args.contact_id,
        title: args.title,
        amount_cents: args.amount_cents,
        stage: args.stage ?? 'new',
        owner_user_id: owner,
      },
      ctx.principal.user_id,
      ctx.now,
    );
    ctx.setEntity('deal', deal.id);
    ctx.emit({
      type: 'deal.created',
      entity_type: 'deal',
      entity_id: deal.id,
      payload: {
        contact_id: deal.contact_id,
        title: deal.title,
        amount_cents: deal.amount_cents,
        stage: deal.stage,
        history_id: history.id,
      },
    });
    ctx.setRollback(`deal:create:${deal.id}`, { deal_id: deal.id });
    return { status: 'created', deal_id: deal.id, deal: dealView(deal) };
  },
  revert: {
    async handler(ctx, original) {
      const c = ctx.principal.company_id;
      const id = num(original.rollback.deal_id);
      const history = await listDealStageHistory(ctx.db, c, id);
      if (history.length > 1)
        throw new DomainError(
          'changed_since',
          `deal ${id} moved through ${history.length - 1} stage change(s) since it was created`,
          'Move it to lost instead, or undo the stage changes first.',
        );
      const deal = await deleteDeal(ctx.db, c, id);
      ctx.emit({
        type: 'deal.deleted',
        entity_type: 'deal',
        entity_id: id,
        payload: { title: deal.title, contact_id: deal.contact_id },
      });
      return { revert_action: `deleted deal ${id} "${deal.title}"` };
    },
  },
});

export const dealsPreviewCreate = defineBusinessVerb<CreateArgs>({
  name: 'deals.preview_create',
  title: 'Preview creating a deal',
  description:
    "Show the deal deals_create would open (with its defaults and owner) and the customer's other open deals, without writing. Same arguments as deals_create.",
  shape: 'preview',
  category: 'deals',
  input: createInput,
  idempotent: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const contact = await requireContact(ctx.db, c, args.contact_id);
    const owner = await ownerFor(ctx.db, c, args, ctx.principal.user_id);
    const open = (await searchDeals(ctx.db, c, { contact_id: contact.id, open: true, limit: 200 })).items;
    return {
      current: {
        customer: { id: contact.id, name: contact.name },
        open_deals: open.length,
        open_pipeline_cents: open.reduce((s, d) => s + d.amount_cents, 0),
      },
      projected: {
        customer: { id: contact.id, name: contact.name },
        open_deals: open.length + 1,
        open_pipeline_cents: open.reduce((s, d) => s + d.amount_cents, 0) + args.amount_cents,
        deal: {
          title: args.title.trim(),
          stage: args.stage ?? 'new',
          amount_cents: args.amount_cents,
          owner_user_id: owner,
        },
      },
      delta: { deals_created: 1, pipeline_change_cents: args.amount_cents },
      reversible: dealsCreate.revert !== undefined,
      notes: open.some((d) => d.title.toLowerCase() === args.title.trim().toLowerCase())
        ? 'The customer already has an open deal with this title; consider updating it instead.'
        : 'Reversible with audit.revert until the deal changes stage.',
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Stage moves

interface MoveArgs {
  deal_id: number;
  to_stage: DealStage;
}

const moveInput = objectSchema(
  {
    deal_id: idProp('The deal to move.'),
    to_stage: enumProp(DEAL_STAGES, 'The new stage; won or lost closes the deal, an open stage reopens it.'),
  },
  ['deal_id', 'to_stage'],
);

/** “Kitchen remodel” (#12) from a deal's rollback data, or #12 alone. */
function dealSubject(rollback: Record<string, unknown>): string {
  return typeof rollback.title === 'string' && rollback.title !== ''
    ? `“${rollback.title}” (#${String(rollback.deal_id)})`
    : `#${String(rollback.deal_id)}`;
}

export const dealsMoveStage = defineBusinessVerb<MoveArgs>({
  name: 'deals.move_stage',
  title: 'Move a deal to another stage',
  description:
    'Move a deal to another pipeline stage (new, qualified, estimate_scheduled, proposal_sent, negotiation, won, lost); won and lost close it, an open stage reopens it. The change is recorded in the stage history. Reversible: audit.revert puts the deal back exactly as it was (while it has not moved again). Check deal.suggest_next_action and deals.preview_move_stage first. Refused with same_stage when it is already there.',
  shape: 'receipt',
  category: 'deals',
  consent: 'WRITE_REVERSIBLE',
  preview: 'deals.preview_move_stage',
  input: moveInput,
  summary: (a) => `Move deal ${a.deal_id} to ${a.to_stage}.`,
  activity: async (read, a) => {
    const d = await dealCustomer(read, a.deal_id);
    return d && `Move deal “${d.title}” of ${d.name} to ${valueWords('stage', a.to_stage)}`;
  },
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const { previous, deal, history } = await moveDealStage(
      ctx.db,
      c,
      args.deal_id,
      args.to_stage,
      ctx.principal.user_id,
      ctx.now,
    );
    ctx.setEntity('deal', deal.id);
    ctx.emit({
      type: 'deal.stage_changed',
      entity_type: 'deal',
      entity_id: deal.id,
      payload: {
        contact_id: deal.contact_id,
        from_stage: previous.stage,
        to_stage: deal.stage,
        amount_cents: deal.amount_cents,
        history_id: history.id,
      },
    });
    ctx.setRollback(`deal:stage:${deal.id}:${previous.stage}`, {
      deal_id: deal.id,
      history_id: history.id,
      previous,
      // For the undo dialog's words (revert.describe).
      title: deal.title,
      stage: deal.stage,
    });
    return {
      status: 'moved',
      deal_id: deal.id,
      previous_stage: previous.stage,
      stage: deal.stage,
      closed_at: deal.closed_at,
    };
  },
  revert: {
    describe: ({ rollback, args }) =>
      `Stage of deal ${dealSubject(rollback)}: ${valueWords('stage', (rollback.previous as { stage?: unknown } | undefined)?.stage)} → ${valueWords('stage', rollback.stage ?? args.to_stage)}`,
    async handler(ctx, original) {
      const r = original.rollback as {
        deal_id: number;
        history_id: number;
        previous: { stage: DealStage; updated_at: string; closed_at: string | null };
      };
      const { undone, deal } = await undoDealStageMove(
        ctx.db,
        ctx.principal.company_id,
        r.deal_id,
        r.history_id,
        r.previous,
      );
      ctx.emit({
        type: 'deal.stage_reverted',
        entity_type: 'deal',
        entity_id: deal.id,
        payload: { from_stage: undone.to_stage, to_stage: deal.stage, history_id: undone.id },
      });
      return {
        revert_action: `moved deal ${deal.id} back from ${undone.to_stage} to ${deal.stage}`,
        stage: deal.stage,
      };
    },
  },
});

export const dealsPreviewMoveStage = defineBusinessVerb<MoveArgs>({
  name: 'deals.preview_move_stage',
  title: 'Preview a stage move',
  description:
    "Show a deal before and after deals.move_stage with the same arguments (stage, closed or reopened) and how often this company's deals made that same transition, without writing.",
  shape: 'preview',
  category: 'deals',
  input: moveInput,
  idempotent: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const deal = await requireDeal(ctx.db, c, args.deal_id);
    if (deal.stage === args.to_stage)
      throw new DomainError(
        'same_stage',
        `deal ${deal.id} is already in stage ${args.to_stage}`,
        'Pick another stage.',
      );
    const stats = (await countStageTransitions(ctx.db, c)).filter((t) => t.from_stage === deal.stage);
    const n = stats.reduce((s, t) => s + t.count, 0);
    const same = stats.find((t) => t.to_stage === args.to_stage)?.count ?? 0;
    const closes = isClosedStage(args.to_stage);
    return {
      current: {
        deal_id: deal.id,
        stage: deal.stage,
        closed_at: deal.closed_at,
        amount_cents: deal.amount_cents,
      },
      projected: {
        deal_id: deal.id,
        stage: args.to_stage,
        closed_at: closes ? ctx.now.toISOString() : null,
        amount_cents: deal.amount_cents,
      },
      delta: {
        from_stage: deal.stage,
        to_stage: args.to_stage,
        closes: closes && !isClosedStage(deal.stage),
        reopens: !closes && isClosedStage(deal.stage),
        transition_share: ratio(same, n),
        transition_sample_size: n,
      },
      reversible: dealsMoveStage.revert !== undefined,
      notes: `${same} of ${n} deals that left ${deal.stage} went to ${args.to_stage}${n > 0 ? ` (${percent(ratio(same, n))})` : ''}. audit.revert undoes the move while the deal does not move again.`,
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Update

interface UpdateArgs {
  deal_id: number;
  title?: string;
  amount_cents?: number;
  owner_user_id?: number | null;
}

const updateInput: JsonSchema = {
  ...objectSchema(
    {
      deal_id: idProp('The deal to change.'),
      title: textProp('New title.', 200),
      amount_cents: centsProp('New expected value.', 0),
      owner_user_id: {
        type: ['integer', 'null'],
        minimum: 1,
        description: 'New owner (employee user id); null leaves the deal unowned.',
      },
    },
    ['deal_id'],
  ),
  minProperties: 2,
};

function dealPatch(args: UpdateArgs): DealPatch {
  const patch: DealPatch = {};
  if (args.title !== undefined) patch.title = args.title;
  if (args.amount_cents !== undefined) patch.amount_cents = args.amount_cents;
  if (args.owner_user_id !== undefined) patch.owner_user_id = args.owner_user_id;
  return patch;
}

export const dealsUpdate = defineBusinessVerb<UpdateArgs>({
  name: 'deals.update',
  title: 'Update a deal',
  description:
    "Change a deal's title, expected amount (integer cents) or owner. Answers the previous values. Reversible with audit.revert. Preview with deals.preview_update. Stage changes use deals.move_stage.",
  shape: 'receipt',
  category: 'deals',
  consent: 'WRITE_REVERSIBLE',
  preview: 'deals.preview_update',
  input: updateInput,
  summary: (a) => `Update deal ${a.deal_id}: ${Object.keys(dealPatch(a)).join(', ')}.`,
  activity: async (read, a) => {
    const d = await dealCustomer(read, a.deal_id);
    return d && `Update deal “${d.title}” of ${d.name}: ${Object.keys(dealPatch(a)).join(', ')}`;
  },
  async handler(ctx, args) {
    const { previous, deal } = await updateDeal(
      ctx.db,
      ctx.principal.company_id,
      args.deal_id,
      dealPatch(args),
      ctx.now,
    );
    ctx.setEntity('deal', deal.id);
    const changes = Object.fromEntries(
      Object.keys(previous).map((k) => [
        k,
        {
          from: (previous as Record<string, unknown>)[k],
          to: (deal as unknown as Record<string, unknown>)[k],
        },
      ]),
    );
    ctx.emit({ type: 'deal.updated', entity_type: 'deal', entity_id: deal.id, payload: { changes } });
    ctx.setRollback(`deal:update:${deal.id}`, {
      deal_id: deal.id,
      previous,
      // For the undo dialog's words (revert.describe).
      title: deal.title,
      next: Object.fromEntries(
        Object.keys(previous).map((k) => [k, (deal as unknown as Record<string, unknown>)[k]]),
      ),
    });
    return { status: 'updated', deal_id: deal.id, previous, deal: dealView(deal) };
  },
  revert: {
    describe: ({ rollback, args }) =>
      changeWords(
        `deal ${dealSubject(rollback)}`,
        (rollback.previous ?? {}) as Record<string, unknown>,
        (rollback.next ?? args) as Record<string, unknown>,
      ),
    async handler(ctx, original) {
      const r = original.rollback as { deal_id: number; previous: DealPatch };
      const { previous, deal } = await updateDeal(
        ctx.db,
        ctx.principal.company_id,
        r.deal_id,
        r.previous,
        ctx.now,
      );
      const changes = Object.fromEntries(
        Object.keys(previous).map((k) => [
          k,
          {
            from: (previous as Record<string, unknown>)[k],
            to: (deal as unknown as Record<string, unknown>)[k],
          },
        ]),
      );
      ctx.emit({
        type: 'deal.updated',
        entity_type: 'deal',
        entity_id: deal.id,
        payload: { changes, revert_of: original.audit_id },
      });
      return { revert_action: `restored ${Object.keys(r.previous).join(', ')} of deal ${deal.id}` };
    },
  },
});

export const dealsPreviewUpdate = defineBusinessVerb<UpdateArgs>({
  name: 'deals.preview_update',
  title: 'Preview a deal update',
  description:
    'Show the fields deals.update would change, before and after, without writing. Same arguments as deals.update; refuses exactly as it would (not_found, no_change).',
  shape: 'preview',
  category: 'deals',
  input: updateInput,
  idempotent: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const deal = await requireDeal(ctx.db, c, args.deal_id);
    const patch = dealPatch(args);
    if (patch.owner_user_id !== undefined && patch.owner_user_id !== null)
      await requireEmployee(ctx.db, c, patch.owner_user_id);
    const keys = (Object.keys(patch) as Array<keyof DealPatch>).filter((k) => patch[k] !== deal[k]);
    if (keys.length === 0) throw new DomainError('no_change', `deal ${deal.id} already has those values`);
    return {
      current: Object.fromEntries(keys.map((k) => [k, deal[k]])),
      projected: Object.fromEntries(keys.map((k) => [k, patch[k]])),
      delta: {
        changed_fields: keys,
        ...(patch.amount_cents !== undefined
          ? { amount_change_cents: patch.amount_cents - deal.amount_cents }
          : {}),
      },
      reversible: dealsUpdate.revert !== undefined,
      notes: 'audit.revert restores the previous values.',
    };
  },
});

// ---------------------------------------------------------------------------------------------
export { DEAL_MODEL_VERSION, dealSuggestNextAction, dealsExplainStage } from './deal-insights.ts';

export const dealVerbs = [
  dealsSearch,
  dealsGet,
  dealsCreate,
  dealsPreviewCreate,
  dealsMoveStage,
  dealsPreviewMoveStage,
  dealsUpdate,
  dealsPreviewUpdate,
  dealsExplainStage,
  dealSuggestNextAction,
];
