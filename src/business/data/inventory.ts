/**
 * Parts inventory: tenant-scoped reads (search, low stock, usage per appointment) and stock
 * writes. A part is low on stock when `quantity_on_hand <= reorder_point`. Stock never goes
 * below zero (`insufficient_stock`); the check and the change are one conditional UPDATE, so
 * two concurrent writers cannot both take the last unit.
 */
import type { Queryable } from '../../store/store.ts';
import { requireAppointment } from './appointments.ts';
import { DomainError, invalidInput, notFound } from './domain-error.ts';
import { isoTime } from './iso-time.ts';
import { LIKE_ESCAPE, likePattern } from './like-pattern.ts';
import { pageBounds, toPage, type Page, type PageRequest } from './page.ts';
import { num } from './row-values.ts';

export interface Part {
  id: number;
  company_id: number;
  sku: string;
  name: string;
  category: string;
  quantity_on_hand: number;
  reorder_point: number;
  unit_cost_cents: number;
  unit_price_cents: number;
  /** Warehouse bin or truck, e.g. "Warehouse A-3", "Truck 2". */
  location: string;
  updated_at: string;
  /** quantity_on_hand <= reorder_point. */
  low_stock: boolean;
}

export interface PartUsage {
  id: number;
  company_id: number;
  appointment_id: number;
  part_id: number;
  quantity: number;
  used_at: string;
}

const PART_COLUMNS =
  'id, company_id, sku, name, category, quantity_on_hand, reorder_point, unit_cost_cents, unit_price_cents, location, updated_at';
const USAGE_COLUMNS = 'id, company_id, appointment_id, part_id, quantity, used_at';

function toPart(row: Record<string, unknown>): Part {
  const onHand = num(row.quantity_on_hand);
  const reorder = num(row.reorder_point);
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    sku: String(row.sku),
    name: String(row.name),
    category: String(row.category),
    quantity_on_hand: onHand,
    reorder_point: reorder,
    unit_cost_cents: num(row.unit_cost_cents),
    unit_price_cents: num(row.unit_price_cents),
    location: String(row.location),
    updated_at: String(row.updated_at),
    low_stock: onHand <= reorder,
  };
}

function toUsage(row: Record<string, unknown>): PartUsage {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    appointment_id: num(row.appointment_id),
    part_id: num(row.part_id),
    quantity: num(row.quantity),
    used_at: String(row.used_at),
  };
}

/** One part of the company, or undefined. */
export async function getPart(q: Queryable, companyId: number, partId: number): Promise<Part | undefined> {
  const row = await q.get(`SELECT ${PART_COLUMNS} FROM parts WHERE company_id = ? AND id = ?`, [
    companyId,
    partId,
  ]);
  return row === undefined ? undefined : toPart(row);
}

/** One part of the company by SKU (exact, e.g. "PLB-1004"), or undefined. */
export async function getPartBySku(q: Queryable, companyId: number, sku: string): Promise<Part | undefined> {
  const row = await q.get(`SELECT ${PART_COLUMNS} FROM parts WHERE company_id = ? AND sku = ?`, [
    companyId,
    sku,
  ]);
  return row === undefined ? undefined : toPart(row);
}

/** The part or DomainError `not_found` ("part 12 not found"). */
export async function requirePart(q: Queryable, companyId: number, partId: number): Promise<Part> {
  const part = await getPart(q, companyId, partId);
  if (part === undefined) throw notFound('part', partId);
  return part;
}

export interface PartSearch extends PageRequest {
  /** Case-insensitive substring of the name or SKU. */
  query?: string;
  category?: string;
  location?: string;
  /** Only parts at or below their reorder point. */
  low_stock?: boolean;
}

/** Search the company's parts by name. Throws `invalid_input` on a bad page. */
export async function searchParts(
  q: Queryable,
  companyId: number,
  search: PartSearch = {},
): Promise<Page<Part>> {
  const bounds = pageBounds(search);
  const where = ['company_id = ?'];
  const params: unknown[] = [companyId];
  if (search.query !== undefined && search.query.trim() !== '') {
    const pattern = likePattern(search.query.trim());
    where.push(`(lower(name) LIKE lower(?) ${LIKE_ESCAPE} OR lower(sku) LIKE lower(?) ${LIKE_ESCAPE})`);
    params.push(pattern, pattern);
  }
  if (search.category !== undefined) {
    where.push('lower(category) = lower(?)');
    params.push(search.category);
  }
  if (search.location !== undefined) {
    where.push('lower(location) = lower(?)');
    params.push(search.location);
  }
  if (search.low_stock === true) where.push('quantity_on_hand <= reorder_point');
  const whereSql = where.join(' AND ');
  const total = await q.get<{ n: unknown }>(`SELECT COUNT(*) AS n FROM parts WHERE ${whereSql}`, params);
  const rows = await q.all(
    `SELECT ${PART_COLUMNS} FROM parts WHERE ${whereSql} ORDER BY name, id LIMIT ? OFFSET ?`,
    [...params, bounds.limit, bounds.offset],
  );
  return toPage(rows.map(toPart), num(total?.n), bounds);
}

/** Every part at or below its reorder point, the emptiest (relative to its reorder point) first. */
export async function listLowStockParts(q: Queryable, companyId: number): Promise<Part[]> {
  const rows = await q.all(
    `SELECT ${PART_COLUMNS} FROM parts WHERE company_id = ? AND quantity_on_hand <= reorder_point
      ORDER BY quantity_on_hand - reorder_point, name, id`,
    [companyId],
  );
  return rows.map(toPart);
}

/** Parts used on an appointment; empty for an unknown or foreign appointment. */
export async function listAppointmentPartUsage(
  q: Queryable,
  companyId: number,
  appointmentId: number,
): Promise<PartUsage[]> {
  const rows = await q.all(
    `SELECT ${USAGE_COLUMNS} FROM part_usage WHERE company_id = ? AND appointment_id = ? ORDER BY id`,
    [companyId, appointmentId],
  );
  return rows.map(toUsage);
}

/**
 * Add (`delta` > 0, a delivery) or remove (`delta` < 0, a count correction) stock; returns
 * the previous quantity (revert: `adjustStock(tx, c, id, -delta, now)`). Throws
 * `invalid_input` (delta not a non-zero integer), `not_found`, `insufficient_stock` (would go
 * below zero).
 */
export async function adjustStock(
  tx: Queryable,
  companyId: number,
  partId: number,
  delta: number,
  now: Date,
): Promise<{ previous_quantity: number; part: Part }> {
  if (!Number.isSafeInteger(delta) || delta === 0) throw invalidInput('delta', 'must be a non-zero integer');
  const part = await requirePart(tx, companyId, partId);
  const row = await tx.get(
    `UPDATE parts SET quantity_on_hand = quantity_on_hand + ?, updated_at = ?
      WHERE company_id = ? AND id = ? AND quantity_on_hand + ? >= 0 RETURNING ${PART_COLUMNS}`,
    [delta, isoTime(now), companyId, partId, delta],
  );
  if (row === undefined) {
    throw new DomainError(
      'insufficient_stock',
      `part ${partId} (${part.sku}) has ${part.quantity_on_hand} on hand; cannot remove ${-delta}`,
      'Restock the part first.',
    );
  }
  return { previous_quantity: part.quantity_on_hand, part: toPart(row) };
}

/**
 * Record parts used on an appointment and take them out of stock. Throws `invalid_input`
 * (quantity), `not_found` (appointment, part), `insufficient_stock`.
 */
export async function recordPartUsage(
  tx: Queryable,
  companyId: number,
  input: { appointment_id: number; part_id: number; quantity: number },
  now: Date,
): Promise<{ usage: PartUsage; previous_quantity: number; part: Part }> {
  if (!Number.isSafeInteger(input.quantity) || input.quantity <= 0)
    throw invalidInput('quantity', 'must be a positive integer');
  await requireAppointment(tx, companyId, input.appointment_id);
  const { previous_quantity, part } = await adjustStock(tx, companyId, input.part_id, -input.quantity, now);
  const row = await tx.get(
    `INSERT INTO part_usage (company_id, appointment_id, part_id, quantity, used_at) VALUES (?, ?, ?, ?, ?) RETURNING ${USAGE_COLUMNS}`,
    [companyId, input.appointment_id, input.part_id, input.quantity, isoTime(now)],
  );
  return { usage: toUsage(row!), previous_quantity, part };
}

/**
 * Undo a recorded part usage (the revert of `recordPartUsage`): delete the usage row and put
 * its quantity back in stock. Throws `not_found` (usage).
 */
export async function revertPartUsage(
  tx: Queryable,
  companyId: number,
  usageId: number,
  now: Date,
): Promise<{ usage: PartUsage; previous_quantity: number; part: Part }> {
  const row = await tx.get(`SELECT ${USAGE_COLUMNS} FROM part_usage WHERE company_id = ? AND id = ?`, [
    companyId,
    usageId,
  ]);
  if (row === undefined) throw notFound('part usage', usageId);
  const usage = toUsage(row);
  await tx.run('DELETE FROM part_usage WHERE company_id = ? AND id = ?', [companyId, usageId]);
  const { previous_quantity, part } = await adjustStock(tx, companyId, usage.part_id, usage.quantity, now);
  return { usage, previous_quantity, part };
}

/** A part's usage records, newest first (at most `limit`, default 50); empty for an unknown or foreign part. */
export async function listPartUsage(
  q: Queryable,
  companyId: number,
  partId: number,
  limit = 50,
): Promise<PartUsage[]> {
  const rows = await q.all(
    `SELECT ${USAGE_COLUMNS} FROM part_usage WHERE company_id = ? AND part_id = ? ORDER BY used_at DESC, id DESC LIMIT ?`,
    [companyId, partId, limit],
  );
  return rows.map(toUsage);
}
