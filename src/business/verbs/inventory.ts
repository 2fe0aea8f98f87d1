/**
 * Inventory verbs (category `inventory`): search parts, list low stock, read a part with its
 * usage, adjust stock (deliveries, count corrections), record parts used on a visit (both
 * reversible, both previewable), and inventory.suggest_reorder — reorder quantities computed
 * from each part's real usage over the last 90 days.
 *
 * Reasons: not_found ("part 12 not found", "appointment 15 not found"), insufficient_stock,
 * invalid_input. Spec: spec/shapes.md §aggregate §preview §suggest §receipt.
 */
import type { Queryable } from '../../store/store.ts';
import { requireAppointment } from '../data/appointments.ts';
import { DomainError, invalidInput } from '../data/domain-error.ts';
import {
  adjustStock,
  listLowStockParts,
  listPartUsage,
  recordPartUsage,
  requirePart,
  revertPartUsage,
  searchParts,
  type Part,
} from '../data/inventory.ts';
import { DAY_MS } from '../data/iso-time.ts';
import { num } from '../data/row-values.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { collectionResult } from './collection-result.ts';
import { confidenceBand, percent, ratio } from './confidence-band.ts';
import { partUsageView, partView } from './entity-views.ts';
import { enumProp, idProp, objectSchema, PAGE_PROPS, textProp } from './input-schema.ts';

// ---------------------------------------------------------------------------------------------
// Read

export const inventorySearchParts = defineBusinessVerb<{
  query?: string;
  category?: string;
  location?: string;
  low_stock?: boolean;
  limit?: number;
  offset?: number;
}>({
  name: 'inventory.search_parts',
  title: 'Search parts',
  description:
    'Search the parts inventory by name or SKU text, category (plumbing, hvac), location (a warehouse bin or a truck) or low stock only. Each part has its SKU, quantity on hand, reorder point, unit cost and price in cents.',
  shape: 'aggregate',
  category: 'inventory',
  input: objectSchema({
    query: textProp('Text found in the name or SKU.', 200),
    category: enumProp(['plumbing', 'hvac'], 'Only parts of this trade.'),
    location: textProp('Only parts kept here, e.g. "Truck 2" or "Warehouse A-1".', 100),
    low_stock: { type: 'boolean', description: 'true: only parts at or below their reorder point.' },
    ...PAGE_PROPS,
  }),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const page = await searchParts(ctx.db, ctx.principal.company_id, args);
    return collectionResult(
      'parts',
      { ...page, items: page.items.map(partView) },
      args as Record<string, unknown>,
      ctx.now,
    );
  },
});

export const inventoryLowStock = defineBusinessVerb<Record<string, never>>({
  name: 'inventory.low_stock',
  title: 'Low-stock parts',
  description:
    'Every part at or below its reorder point, the emptiest first, with how many units are missing to reach the reorder point. Follow with inventory.suggest_reorder for quantities.',
  shape: 'aggregate',
  category: 'inventory',
  input: objectSchema({}),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx) {
    const parts = await listLowStockParts(ctx.db, ctx.principal.company_id);
    return {
      entity_id: 'low_stock',
      entity_type: 'collection',
      data: {
        items: parts.map((p) => ({
          ...partView(p),
          missing_to_reorder_point: Math.max(0, p.reorder_point - p.quantity_on_hand),
        })),
        total: parts.length,
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

export const inventoryPartDetail = defineBusinessVerb<{ part_id: number }>({
  name: 'inventory.part_detail',
  title: 'Part with usage',
  description:
    'One part with its stock figures and its most recent usage on visits (which appointment, how many, when).',
  shape: 'aggregate',
  category: 'inventory',
  input: objectSchema({ part_id: idProp('The part id.') }, ['part_id']),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const part = await requirePart(ctx.db, c, args.part_id);
    ctx.setEntity('part', part.id);
    const usage = await listPartUsage(ctx.db, c, part.id, 50);
    return {
      entity_id: part.id,
      entity_type: 'part',
      data: { ...partView(part), recent_usage: usage.map(partUsageView) },
      relations: usage.map((u) => ({
        type: 'appointment',
        id: u.appointment_id,
        quantity: u.quantity,
        used_at: u.used_at,
      })),
      fetched_at: ctx.now.toISOString(),
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Adjust stock

interface AdjustArgs {
  part_id: number;
  delta: number;
  reason?: string;
}

const adjustInput = objectSchema(
  {
    part_id: idProp('The part.'),
    delta: {
      type: 'integer',
      minimum: -10_000,
      maximum: 10_000,
      description: 'Units to add (a delivery, > 0) or remove (a count correction, < 0); never 0.',
    },
    reason: textProp('Why, e.g. "supplier delivery" or "cycle count".', 200),
  },
  ['part_id', 'delta'],
);

export const inventoryAdjustStock = defineBusinessVerb<AdjustArgs>({
  name: 'inventory.adjust_stock',
  title: 'Adjust stock',
  description:
    'Add units to a part (a delivery) or remove some (a count correction); stock never goes below zero (insufficient_stock). Reversible: audit.revert applies the opposite adjustment. Preview with inventory.preview_adjust_stock.',
  shape: 'receipt',
  category: 'inventory',
  consent: 'WRITE_REVERSIBLE',
  preview: 'inventory.preview_adjust_stock',
  input: adjustInput,
  summary: (a) => `${a.delta > 0 ? 'Add' : 'Remove'} ${Math.abs(a.delta)} unit(s) of part ${a.part_id}.`,
  async handler(ctx, args) {
    const { previous_quantity, part } = await adjustStock(
      ctx.db,
      ctx.principal.company_id,
      args.part_id,
      args.delta,
      ctx.now,
    );
    ctx.setEntity('part', part.id);
    ctx.emit({
      type: 'part.stock_adjusted',
      entity_type: 'part',
      entity_id: part.id,
      payload: {
        sku: part.sku,
        previous_quantity,
        quantity: part.quantity_on_hand,
        delta: args.delta,
        reason: args.reason ?? null,
      },
    });
    ctx.setRollback(`part:stock:${part.id}:${previous_quantity}`, { part_id: part.id, delta: args.delta });
    return {
      status: 'adjusted',
      part_id: part.id,
      sku: part.sku,
      previous_quantity,
      quantity_on_hand: part.quantity_on_hand,
      low_stock: part.low_stock,
    };
  },
  revert: {
    async handler(ctx, original) {
      const r = original.rollback as { part_id: number; delta: number };
      const { previous_quantity, part } = await adjustStock(
        ctx.db,
        ctx.principal.company_id,
        r.part_id,
        -r.delta,
        ctx.now,
      );
      ctx.emit({
        type: 'part.stock_adjusted',
        entity_type: 'part',
        entity_id: part.id,
        payload: {
          sku: part.sku,
          previous_quantity,
          quantity: part.quantity_on_hand,
          delta: -r.delta,
          reason: `revert of audit ${original.audit_id}`,
        },
      });
      return { revert_action: `adjusted ${part.sku} by ${-r.delta} (now ${part.quantity_on_hand})` };
    },
  },
});

export const inventoryPreviewAdjustStock = defineBusinessVerb<AdjustArgs>({
  name: 'inventory.preview_adjust_stock',
  title: 'Preview a stock adjustment',
  description:
    'Show a part before and after inventory.adjust_stock with the same arguments, without writing; refuses with insufficient_stock as the adjustment would.',
  shape: 'preview',
  category: 'inventory',
  input: adjustInput,
  idempotent: true,
  async handler(ctx, args) {
    const part = await requirePart(ctx.db, ctx.principal.company_id, args.part_id);
    return stockPreview(part, args.delta, inventoryAdjustStock.revert !== undefined, args.reason ?? null);
  },
});

function stockPreview(
  part: Part,
  delta: number,
  reversible: boolean,
  reason: string | null,
): Record<string, unknown> {
  if (delta === 0) throw invalidInput('delta', 'must be a non-zero integer');
  const next = part.quantity_on_hand + delta;
  if (next < 0)
    throw new DomainError(
      'insufficient_stock',
      `part ${part.id} (${part.sku}) has ${part.quantity_on_hand} on hand; cannot remove ${-delta}`,
      'Restock the part first.',
    );
  return {
    current: {
      part_id: part.id,
      sku: part.sku,
      quantity_on_hand: part.quantity_on_hand,
      low_stock: part.low_stock,
    },
    projected: {
      part_id: part.id,
      sku: part.sku,
      quantity_on_hand: next,
      low_stock: next <= part.reorder_point,
    },
    delta: { quantity: delta, stock_value_change_cents: delta * part.unit_cost_cents },
    reversible,
    notes: `${next <= part.reorder_point ? `At or below the reorder point (${part.reorder_point}) afterwards.` : `Above the reorder point (${part.reorder_point}) afterwards.`}${reason ? ` Reason: ${reason}.` : ''}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Usage

interface UsageArgs {
  appointment_id: number;
  part_id: number;
  quantity: number;
}

const usageInput = objectSchema(
  {
    appointment_id: idProp('The visit the parts were used on.'),
    part_id: idProp('The part.'),
    quantity: { type: 'integer', minimum: 1, maximum: 1000, description: 'Units used.' },
  },
  ['appointment_id', 'part_id', 'quantity'],
);

export const inventoryRecordUsage = defineBusinessVerb<UsageArgs>({
  name: 'inventory.record_usage',
  title: 'Record parts used on a visit',
  description:
    'Record that a technician used some units of a part on a visit; they leave stock (insufficient_stock when there are not enough). Reversible: audit.revert deletes the usage and puts the units back. Preview with inventory.preview_usage.',
  shape: 'receipt',
  category: 'inventory',
  consent: 'WRITE_REVERSIBLE',
  preview: 'inventory.preview_usage',
  input: usageInput,
  summary: (a) =>
    `Record ${a.quantity} unit(s) of part ${a.part_id} used on appointment ${a.appointment_id}.`,
  async handler(ctx, args) {
    const { usage, previous_quantity, part } = await recordPartUsage(
      ctx.db,
      ctx.principal.company_id,
      args,
      ctx.now,
    );
    ctx.setEntity('part', part.id);
    ctx.emit({
      type: 'part.used',
      entity_type: 'part',
      entity_id: part.id,
      payload: {
        usage_id: usage.id,
        appointment_id: usage.appointment_id,
        sku: part.sku,
        quantity: usage.quantity,
      },
    });
    ctx.setRollback(`part:usage:${usage.id}`, { usage_id: usage.id });
    return {
      status: 'recorded',
      usage_id: usage.id,
      part_id: part.id,
      sku: part.sku,
      previous_quantity,
      quantity_on_hand: part.quantity_on_hand,
      low_stock: part.low_stock,
    };
  },
  revert: {
    async handler(ctx, original) {
      const { usage, part } = await revertPartUsage(
        ctx.db,
        ctx.principal.company_id,
        num(original.rollback.usage_id),
        ctx.now,
      );
      ctx.emit({
        type: 'part.usage_reverted',
        entity_type: 'part',
        entity_id: part.id,
        payload: {
          usage_id: usage.id,
          appointment_id: usage.appointment_id,
          sku: part.sku,
          quantity: usage.quantity,
        },
      });
      return {
        revert_action: `returned ${usage.quantity} × ${part.sku} to stock (now ${part.quantity_on_hand})`,
      };
    },
  },
});

export const inventoryPreviewUsage = defineBusinessVerb<UsageArgs>({
  name: 'inventory.preview_usage',
  title: 'Preview recording parts used',
  description:
    'Show the part before and after inventory.record_usage with the same arguments, without writing.',
  shape: 'preview',
  category: 'inventory',
  input: usageInput,
  idempotent: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    await requireAppointment(ctx.db, c, args.appointment_id);
    const part = await requirePart(ctx.db, c, args.part_id);
    return stockPreview(
      part,
      -args.quantity,
      inventoryRecordUsage.revert !== undefined,
      `used on appointment ${args.appointment_id}`,
    );
  },
});

// ---------------------------------------------------------------------------------------------
// Suggest

/** Model of inventory.suggest_reorder. */
export const REORDER_MODEL_VERSION = 'reorder-usage-90d-v1';
const WINDOW_DAYS = 90;
const COVER_DAYS = 30;

async function usageStats(
  q: Queryable,
  c: number,
  since: string,
): Promise<Map<number, { units: number; records: number; weeks: Set<number> }>> {
  const rows = await q.all<{ part_id: unknown; quantity: unknown; used_at: string }>(
    'SELECT part_id, quantity, used_at FROM part_usage WHERE company_id = ? AND used_at >= ?',
    [c, since],
  );
  const out = new Map<number, { units: number; records: number; weeks: Set<number> }>();
  const start = Date.parse(since);
  for (const r of rows) {
    const id = num(r.part_id);
    const s = out.get(id) ?? { units: 0, records: 0, weeks: new Set<number>() };
    s.units += num(r.quantity);
    s.records++;
    s.weeks.add(Math.floor((Date.parse(r.used_at) - start) / (7 * DAY_MS)));
    out.set(id, s);
  }
  return out;
}

export const inventorySuggestReorder = defineBusinessVerb<{ part_id?: number; limit?: number }>({
  name: 'inventory.suggest_reorder',
  title: 'Suggest reorders',
  description: `Suggest which parts to restock and how many, computed from each part's real usage over the last ${WINDOW_DAYS} days: the quantity covers ${COVER_DAYS} days of use plus the reorder point. Confidence = the share of the last ${Math.round(WINDOW_DAYS / 7)} weeks in which the part was used (how surely it will be needed); sample_size = usage records (band learning below 20). Without part_id, covers every part at or below its reorder point. Each suggestion names inventory.adjust_stock with ready-to-use args.`,
  shape: 'suggest',
  category: 'inventory',
  input: objectSchema({
    part_id: idProp('Only this part.'),
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: 50,
      default: 10,
      description: 'Most suggestions (1..50, default 10).',
    },
  }),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const parts =
      args.part_id !== undefined
        ? [await requirePart(ctx.db, c, args.part_id)]
        : await listLowStockParts(ctx.db, c);
    const since = new Date(ctx.now.getTime() - WINDOW_DAYS * DAY_MS).toISOString();
    const stats = await usageStats(ctx.db, c, since);
    const weeks = Math.round(WINDOW_DAYS / 7);
    const suggestions = parts
      .map((p) => {
        const s = stats.get(p.id) ?? { units: 0, records: 0, weeks: new Set<number>() };
        const perDay = s.units / WINDOW_DAYS;
        const quantity = Math.max(1, Math.ceil(perDay * COVER_DAYS) + p.reorder_point - p.quantity_on_hand);
        const confidence = ratio(Math.min(s.weeks.size, weeks), weeks);
        return {
          action: 'inventory.adjust_stock',
          args: { part_id: p.id, delta: quantity, reason: 'restock (inventory.suggest_reorder)' },
          part: {
            id: p.id,
            sku: p.sku,
            name: p.name,
            quantity_on_hand: p.quantity_on_hand,
            reorder_point: p.reorder_point,
          },
          order_quantity: quantity,
          order_cost_cents: quantity * p.unit_cost_cents,
          confidence,
          confidence_band: confidenceBand(confidence, s.records),
          reason:
            `${p.name} (${p.sku}): ${p.quantity_on_hand} on hand, reorder point ${p.reorder_point}; ${s.units} used in ${WINDOW_DAYS} days (${s.records} records, used in ${s.weeks.size} of ${weeks} weeks = ${percent(confidence)}). ` +
            `Order ${quantity} to cover ${COVER_DAYS} days plus the reorder point.`,
          model_version: REORDER_MODEL_VERSION,
          sample_size: s.records,
        };
      })
      .sort((a, b) => b.confidence - a.confidence || a.part.id - b.part.id)
      .slice(0, args.limit ?? 10);
    return {
      suggestions,
      window_days: WINDOW_DAYS,
      cover_days: COVER_DAYS,
      model_version: REORDER_MODEL_VERSION,
      generated_at: ctx.now.toISOString(),
    };
  },
});

export const inventoryVerbs = [
  inventorySearchParts,
  inventoryLowStock,
  inventoryPartDetail,
  inventoryAdjustStock,
  inventoryPreviewAdjustStock,
  inventoryRecordUsage,
  inventoryPreviewUsage,
  inventorySuggestReorder,
];
