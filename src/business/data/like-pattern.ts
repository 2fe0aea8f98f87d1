/**
 * Substring patterns for portable case-insensitive search: `lower(col) LIKE lower(?) ESCAPE '\'`
 * (the same on SQLite and PostgreSQL, spec/store.md §portable-sql).
 */

/** The SQL fragment to append after `lower(column) LIKE lower(?)`. */
export const LIKE_ESCAPE = "ESCAPE '\\'";

/** Escape `%`, `_` and `\` in user text and wrap it as a substring match (`%text%`). */
export function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
