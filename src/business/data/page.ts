/**
 * Offset pagination shared by every search in the data layer.
 */
import { invalidInput } from './domain-error.ts';

/** What a search takes: `limit` 1..200 (default 25) and `offset` ≥ 0 (default 0). */
export interface PageRequest {
  limit?: number;
  offset?: number;
}

/** One page of results. `total` counts every match; `next_offset` is null on the last page. */
export interface Page<T> {
  items: T[];
  total: number;
  limit: number;
  offset: number;
  next_offset: number | null;
}

export const DEFAULT_PAGE_LIMIT = 25;
export const MAX_PAGE_LIMIT = 200;

/** Validate and default a page request. Throws DomainError `invalid_input`. */
export function pageBounds(request: PageRequest = {}): { limit: number; offset: number } {
  const limit = request.limit ?? DEFAULT_PAGE_LIMIT;
  const offset = request.offset ?? 0;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw invalidInput('limit', `must be an integer from 1 to ${MAX_PAGE_LIMIT}`);
  }
  if (!Number.isInteger(offset) || offset < 0) throw invalidInput('offset', 'must be a non-negative integer');
  return { limit, offset };
}

/** Assemble a page from its rows and the total match count. */
export function toPage<T>(items: T[], total: number, bounds: { limit: number; offset: number }): Page<T> {
  const next = bounds.offset + items.length;
  return {
    items,
    total,
    limit: bounds.limit,
    offset: bounds.offset,
    next_offset: next < total ? next : null,
  };
}
