/**
 * The output of the pack's list and search verbs, in the aggregate shape: one tenant-scoped read
 * collapsing a filtered, paged query. `entity_id` names the collection (e.g. "contacts"),
 * `entity_type` is "collection", `data` holds the page (`items`, `total`, `limit`, `offset`,
 * `next_offset`) and the filters as applied, `fetched_at` the read time.
 *
 * Spec: spec/shapes.md §aggregate.
 */
import type { Page } from '../data/page.ts';

export interface CollectionResult<T> {
  entity_id: string;
  entity_type: 'collection';
  data: {
    items: T[];
    total: number;
    limit: number;
    offset: number;
    next_offset: number | null;
    filters: Record<string, unknown>;
  };
  fetched_at: string;
  [k: string]: unknown;
}

/** Wrap a page of `collection` items (already mapped for output) with the filters that produced it. */
export function collectionResult<T>(
  collection: string,
  page: Page<T>,
  filters: Record<string, unknown>,
  now: Date,
): CollectionResult<T> {
  const applied: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(filters))
    if (v !== undefined && k !== 'limit' && k !== 'offset') applied[k] = v;
  return {
    entity_id: collection,
    entity_type: 'collection',
    data: {
      items: page.items,
      total: page.total,
      limit: page.limit,
      offset: page.offset,
      next_offset: page.next_offset,
      filters: applied,
    },
    fetched_at: now.toISOString(),
  };
}
