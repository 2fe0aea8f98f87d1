/**
 * Column value coercion for rows read from either engine: node-postgres returns BIGINT and
 * aggregates (COUNT, SUM) as strings, SQLite returns numbers; flags are INTEGER 0/1 on both.
 * Row mappers pass every numeric column through these so verbs always see numbers and booleans.
 */

/** A numeric column (BIGINT, INTEGER, REAL, COUNT, SUM) as a number; NULL becomes 0. */
export function num(value: unknown): number {
  if (value === null || value === undefined) return 0;
  return typeof value === 'number' ? value : Number(value);
}

/** A nullable numeric column. */
export function numOrNull(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'number' ? value : Number(value);
}

/** An INTEGER 0/1 flag (or a PostgreSQL boolean) as a boolean. */
export function flag(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't' || value === 'true';
}

/** A nullable TEXT column. */
export function textOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}
