/**
 * Deals (the sales pipeline) and their stage histories: tenant-scoped reads and writes.
 *
 * Every stage change writes a `deal_stage_history` row (from_stage, to_stage, changed_at,
 * changed_by_user_id); a deal's history is a chain starting `null → <first stage>` whose last
 * `to_stage` is the deal's stage. `closed_at` is set while the stage is won or lost.
 */
import type { Queryable } from '../../store/store.ts';
import { CLOSED_DEAL_STAGES, DEAL_STAGES, OPEN_DEAL_STAGES, type DealStage } from '../schema.ts';
import { requireContact } from './contacts.ts';
import { DomainError, invalidInput, notFound } from './domain-error.ts';
import { isoTime } from './iso-time.ts';
import { LIKE_ESCAPE, likePattern } from './like-pattern.ts';
import { pageBounds, toPage, type Page, type PageRequest } from './page.ts';
import { num, numOrNull, textOrNull } from './row-values.ts';
import { requireEmployee } from './team.ts';

export interface Deal {
  id: number;
  company_id: number;
  contact_id: number;
  title: string;
  stage: DealStage;
  amount_cents: number;
  owner_user_id: number | null;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
}

export interface DealStageChange {
  id: number;
  company_id: number;
  deal_id: number;
  /** null on the row that records the deal's creation. */
  from_stage: DealStage | null;
  to_stage: DealStage;
  changed_at: string;
  changed_by_user_id: number | null;
}

const DEAL_COLUMNS =
  'id, company_id, contact_id, title, stage, amount_cents, owner_user_id, created_at, updated_at, closed_at';
const HISTORY_COLUMNS = 'id, company_id, deal_id, from_stage, to_stage, changed_at, changed_by_user_id';

function toDeal(row: Record<string, unknown>): Deal {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    contact_id: num(row.contact_id),
    title: String(row.title),
    stage: row.stage as DealStage,
    amount_cents: num(row.amount_cents),
    owner_user_id: numOrNull(row.owner_user_id),
    created_at: String(row.created_at),
    updated_at: String(row.updated_at),
    closed_at: textOrNull(row.closed_at),
  };
}

function toStageChange(row: Record<string, unknown>): DealStageChange {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    deal_id: num(row.deal_id),
    from_stage: (row.from_stage ?? null) as DealStage | null,
    to_stage: row.to_stage as DealStage,
    changed_at: String(row.changed_at),
    changed_by_user_id: numOrNull(row.changed_by_user_id),
  };
}

function isClosed(stage: DealStage): boolean {
  return (CLOSED_DEAL_STAGES as readonly DealStage[]).includes(stage);
}

function checkStage(stage: unknown, field = 'stage'): asserts stage is DealStage {
  if (!(DEAL_STAGES as readonly unknown[]).includes(stage))
    throw invalidInput(field, `must be one of ${DEAL_STAGES.join(', ')}`);
}

function checkAmount(amount: unknown): void {
  if (!Number.isSafeInteger(amount) || (amount as number) < 0)
    throw invalidInput('amount_cents', 'must be a non-negative integer number of cents');
}

/** One deal of the company, or undefined. */
export async function getDeal(q: Queryable, companyId: number, dealId: number): Promise<Deal | undefined> {
  const row = await q.get(`SELECT ${DEAL_COLUMNS} FROM deals WHERE company_id = ? AND id = ?`, [
    companyId,
    dealId,
  ]);
  return row === undefined ? undefined : toDeal(row);
}

/** The deal or DomainError `not_found` ("deal 7 not found"). */
export async function requireDeal(q: Queryable, companyId: number, dealId: number): Promise<Deal> {
  const deal = await getDeal(q, companyId, dealId);
  if (deal === undefined) throw notFound('deal', dealId);
  return deal;
}

export interface DealSearch extends PageRequest {
  stage?: DealStage;
  /** true: only open stages; false: only won/lost. */
  open?: boolean;
  contact_id?: number;
  owner_user_id?: number;
  /** Case-insensitive substring of the title. */
  query?: string;
  min_amount_cents?: number;
}

/** Search the company's deals, newest first. Throws `invalid_input` on a bad stage or page. */
export async function searchDeals(
  q: Queryable,
  companyId: number,
  search: DealSearch = {},
): Promise<Page<Deal>> {
  const bounds = pageBounds(search);
  const where = ['company_id = ?'];
  const params: unknown[] = [companyId];
  if (search.stage !== undefined) {
    checkStage(search.stage);
    where.push('stage = ?');
    params.push(search.stage);
  }
  if (search.open !== undefined) {
    const stages = search.open ? OPEN_DEAL_STAGES : CLOSED_DEAL_STAGES;
    where.push(`stage IN (${stages.map(() => '?').join(', ')})`);
    params.push(...stages);
  }
  if (search.contact_id !== undefined) {
    where.push('contact_id = ?');
    params.push(search.contact_id);
  }
  if (search.owner_user_id !== undefined) {
    where.push('owner_user_id = ?');
    params.push(search.owner_user_id);
  }
  if (search.query !== undefined && search.query.trim() !== '') {
    where.push(`lower(title) LIKE lower(?) ${LIKE_ESCAPE}`);
    params.push(likePattern(search.query.trim()));
  }
  if (search.min_amount_cents !== undefined) {
    where.push('amount_cents >= ?');
    params.push(search.min_amount_cents);
  }
  const whereSql = where.join(' AND ');
  const total = await q.get<{ n: unknown }>(`SELECT COUNT(*) AS n FROM deals WHERE ${whereSql}`, params);
  const rows = await q.all(
    `SELECT ${DEAL_COLUMNS} FROM deals WHERE ${whereSql} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
    [...params, bounds.limit, bounds.offset],
  );
  return toPage(rows.map(toDeal), num(total?.n), bounds);
}

/** Every deal of a contact, newest first; empty for an unknown or foreign contact. */
export async function listContactDeals(q: Queryable, companyId: number, contactId: number): Promise<Deal[]> {
  const rows = await q.all(
    `SELECT ${DEAL_COLUMNS} FROM deals WHERE company_id = ? AND contact_id = ? ORDER BY created_at DESC, id DESC`,
    [companyId, contactId],
  );
  return rows.map(toDeal);
}

/** A deal's stage history, oldest first; empty for an unknown or foreign deal. */
export async function listDealStageHistory(
  q: Queryable,
  companyId: number,
  dealId: number,
): Promise<DealStageChange[]> {
  const rows = await q.all(
    `SELECT ${HISTORY_COLUMNS} FROM deal_stage_history WHERE company_id = ? AND deal_id = ? ORDER BY changed_at, id`,
    [companyId, dealId],
  );
  return rows.map(toStageChange);
}

/** Every stage change of every deal of the company, ordered by deal then time (for learning transition statistics). */
export async function listAllStageHistories(q: Queryable, companyId: number): Promise<DealStageChange[]> {
  const rows = await q.all(
    `SELECT ${HISTORY_COLUMNS} FROM deal_stage_history WHERE company_id = ? ORDER BY deal_id, changed_at, id`,
    [companyId],
  );
  return rows.map(toStageChange);
}

export interface StageTransitionCount {
  /** null for the creation row. */
  from_stage: DealStage | null;
  to_stage: DealStage;
  count: number;
}

/** How often each (from_stage → to_stage) transition happened in the company, most frequent first. */
export async function countStageTransitions(
  q: Queryable,
  companyId: number,
): Promise<StageTransitionCount[]> {
  const rows = await q.all<{ from_stage: unknown; to_stage: unknown; n: unknown }>(
    `SELECT from_stage, to_stage, COUNT(*) AS n FROM deal_stage_history WHERE company_id = ?
      GROUP BY from_stage, to_stage ORDER BY n DESC, from_stage, to_stage`,
    [companyId],
  );
  return rows.map((r) => ({
    from_stage: (r.from_stage ?? null) as DealStage | null,
    to_stage: r.to_stage as DealStage,
    count: num(r.n),
  }));
}

export interface NewDeal {
  contact_id: number;
  title: string;
  amount_cents: number;
  /** Employee user id owning the deal; defaults to the acting user. */
  owner_user_id?: number | null;
  /** Initial stage; default `new`. */
  stage?: DealStage;
}

export interface DealCreation {
  deal: Deal;
  history: DealStageChange;
}

/**
 * Create a deal and its first history row (`null → stage`). Throws `not_found` (contact or
 * employee), `contact_erased`, `invalid_input` (title 1..200 chars, amount a non-negative
 * integer of cents, stage).
 */
export async function createDeal(
  tx: Queryable,
  companyId: number,
  input: NewDeal,
  actorUserId: number | null,
  now: Date,
): Promise<DealCreation> {
  if (typeof input.title !== 'string' || input.title.trim() === '' || input.title.length > 200)
    throw invalidInput('title', 'must be 1..200 characters');
  checkAmount(input.amount_cents);
  const stage = input.stage ?? 'new';
  checkStage(stage);
  await requireContact(tx, companyId, input.contact_id);
  const owner = input.owner_user_id === undefined ? actorUserId : input.owner_user_id;
  if (owner !== null) await requireEmployee(tx, companyId, owner);
  const at = isoTime(now);
  const row = await tx.get(
    `INSERT INTO deals (company_id, contact_id, title, stage, amount_cents, owner_user_id, created_at, updated_at, closed_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${DEAL_COLUMNS}`,
    [
      companyId,
      input.contact_id,
      input.title.trim(),
      stage,
      input.amount_cents,
      owner,
      at,
      at,
      isClosed(stage) ? at : null,
    ],
  );
  const deal = toDeal(row!);
  const history = await tx.get(
    `INSERT INTO deal_stage_history (company_id, deal_id, from_stage, to_stage, changed_at, changed_by_user_id)
     VALUES (?, ?, NULL, ?, ?, ?) RETURNING ${HISTORY_COLUMNS}`,
    [companyId, deal.id, stage, at, actorUserId],
  );
  return { deal, history: toStageChange(history!) };
}

export interface DealStageMove {
  /** What a revert restores. */
  previous: { stage: DealStage; updated_at: string; closed_at: string | null };
  deal: Deal;
  history: DealStageChange;
}

/**
 * Move a deal to another stage (any stage, reopening a closed deal included) and record the
 * history row. Moving to won/lost sets `closed_at`; to an open stage clears it.
 * Throws `not_found`, `invalid_input` (unknown stage), `same_stage`.
 */
export async function moveDealStage(
  tx: Queryable,
  companyId: number,
  dealId: number,
  toStage: DealStage,
  actorUserId: number | null,
  now: Date,
): Promise<DealStageMove> {
  checkStage(toStage, 'to_stage');
  const deal = await requireDeal(tx, companyId, dealId);
  if (deal.stage === toStage)
    throw new DomainError(
      'same_stage',
      `deal ${dealId} is already in stage ${toStage}`,
      'Pick another stage.',
    );
  const at = isoTime(now);
  const row = await tx.get(
    `UPDATE deals SET stage = ?, updated_at = ?, closed_at = ? WHERE company_id = ? AND id = ? RETURNING ${DEAL_COLUMNS}`,
    [toStage, at, isClosed(toStage) ? at : null, companyId, dealId],
  );
  const history = await tx.get(
    `INSERT INTO deal_stage_history (company_id, deal_id, from_stage, to_stage, changed_at, changed_by_user_id)
     VALUES (?, ?, ?, ?, ?, ?) RETURNING ${HISTORY_COLUMNS}`,
    [companyId, dealId, deal.stage, toStage, at, actorUserId],
  );
  return {
    previous: { stage: deal.stage, updated_at: deal.updated_at, closed_at: deal.closed_at },
    deal: toDeal(row!),
    history: toStageChange(history!),
  };
}

export type DealPatch = Partial<Pick<Deal, 'title' | 'amount_cents' | 'owner_user_id'>>;

/**
 * Change a deal's title, amount or owner; returns the previous values of the changed fields.
 * Throws `not_found` (deal or owner employee), `invalid_input`, `no_change`.
 */
export async function updateDeal(
  tx: Queryable,
  companyId: number,
  dealId: number,
  patch: DealPatch,
  now: Date,
): Promise<{ previous: DealPatch; deal: Deal }> {
  const keys = (Object.keys(patch) as Array<keyof DealPatch>).filter((k) =>
    ['title', 'amount_cents', 'owner_user_id'].includes(k),
  );
  if (keys.length === 0 || keys.length !== Object.keys(patch).length)
    throw invalidInput('patch', 'give title, amount_cents and/or owner_user_id');
  if (
    patch.title !== undefined &&
    (typeof patch.title !== 'string' || patch.title.trim() === '' || patch.title.length > 200)
  ) {
    throw invalidInput('title', 'must be 1..200 characters');
  }
  if (patch.amount_cents !== undefined) checkAmount(patch.amount_cents);
  const deal = await requireDeal(tx, companyId, dealId);
  if (patch.owner_user_id !== undefined && patch.owner_user_id !== null)
    await requireEmployee(tx, companyId, patch.owner_user_id);
  const changed = keys.filter((k) => patch[k] !== deal[k]);
  if (changed.length === 0) throw new DomainError('no_change', `deal ${dealId} already has those values`);
  const previous: DealPatch = {};
  for (const k of changed) (previous as Record<string, unknown>)[k] = deal[k];
  const row = await tx.get(
    `UPDATE deals SET ${changed.map((k) => `${k} = ?`).join(', ')}, updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${DEAL_COLUMNS}`,
    [...changed.map((k) => patch[k]), isoTime(now), companyId, dealId],
  );
  return { previous, deal: toDeal(row!) };
}

/**
 * Delete a deal and its history (the revert of `createDeal`); appointments linked to it keep
 * their rows with the link cleared. Returns the deleted deal. Throws `not_found`.
 */
export async function deleteDeal(tx: Queryable, companyId: number, dealId: number): Promise<Deal> {
  const deal = await requireDeal(tx, companyId, dealId);
  await tx.run('UPDATE appointments SET deal_id = NULL WHERE company_id = ? AND deal_id = ?', [
    companyId,
    dealId,
  ]);
  await tx.run('DELETE FROM deal_stage_history WHERE company_id = ? AND deal_id = ?', [companyId, dealId]);
  await tx.run('DELETE FROM deals WHERE company_id = ? AND id = ?', [companyId, dealId]);
  return deal;
}

/**
 * Undo a stage move exactly (the revert of `moveDealStage`): the deal gets back the stage,
 * `updated_at` and `closed_at` it had, and the history row the move wrote is deleted, so the
 * company's transition statistics stay true. Only the latest change of the deal can be undone.
 * Throws `not_found` (deal or history row), `changed_since` (the deal moved again after it).
 */
export async function undoDealStageMove(
  tx: Queryable,
  companyId: number,
  dealId: number,
  historyId: number,
  previous: { stage: DealStage; updated_at: string; closed_at: string | null },
): Promise<{ undone: DealStageChange; deal: Deal }> {
  checkStage(previous.stage, 'previous.stage');
  const deal = await requireDeal(tx, companyId, dealId);
  const history = await listDealStageHistory(tx, companyId, dealId);
  const row = history.find((h) => h.id === historyId);
  if (row === undefined) throw notFound('deal stage change', historyId);
  const latest = history[history.length - 1]!;
  if (latest.id !== historyId || deal.stage !== row.to_stage) {
    throw new DomainError(
      'changed_since',
      `deal ${dealId} moved again after that change (now ${deal.stage})`,
      'Undo the later stage change first.',
    );
  }
  await tx.run('DELETE FROM deal_stage_history WHERE company_id = ? AND id = ?', [companyId, historyId]);
  const updated = await tx.get(
    `UPDATE deals SET stage = ?, updated_at = ?, closed_at = ? WHERE company_id = ? AND id = ? RETURNING ${DEAL_COLUMNS}`,
    [previous.stage, previous.updated_at, previous.closed_at, companyId, dealId],
  );
  return { undone: row, deal: toDeal(updated!) };
}
