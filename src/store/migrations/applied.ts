/** The migrations a database has applied, from the store's own bookkeeping (spec/store.md §operations). */
import { StoreError, type Store } from '../store.ts';

/** One applied migration. */
export interface AppliedMigration {
  scope: string;
  version: number;
  name: string;
}

/**
 * Every applied migration, by scope then version; [] for a database never migrated (no
 * `schema_migrations` table yet). Other store failures are thrown (StoreError).
 */
export async function listAppliedMigrations(store: Store): Promise<AppliedMigration[]> {
  try {
    const rows = await store.read((q) =>
      q.all<{ scope: string; version: number; name: string }>(
        'SELECT scope, version, name FROM schema_migrations ORDER BY scope, version',
      ),
    );
    return rows.map((r) => ({ scope: r.scope, version: Number(r.version), name: r.name }));
  } catch (err) {
    if (err instanceof StoreError && err.code === 'unknown') return [];
    throw err;
  }
}
