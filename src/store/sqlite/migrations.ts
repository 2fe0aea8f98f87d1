/**
 * The migration runner of the SQLite engine: applies a scope's migrations in version order on the
 * writer connection, all the pending versions of one call in one `BEGIN IMMEDIATE` transaction
 * with their `schema_migrations` rows, skipping the versions already applied (checked again under
 * the write lock, so two processes migrating one file apply each version once). A failure rolls
 * every pending version back (nothing of the call is applied) and throws
 * StoreError('migration_failed') naming the version that failed. The caller holds the store's write mutex.
 *
 * Spec: spec/store.md (the `migrate` row of the Store interface).
 */
import type { Connection } from './connection.ts';
import { StoreError, type Migration } from '../store.ts';

/**
 * Apply `migrations` of `scope` that are not yet recorded in `schema_migrations`. Statement
 * journals go to temp files meanwhile (`temp_store = DEFAULT`), so an index built over a large
 * table sorts on disk, not in RAM; the writer's `temp_store = MEMORY` is restored after.
 */
export function applyMigrations(writer: Connection, scope: string, migrations: readonly Migration[]): void {
  writer.db.pragma('temp_store = DEFAULT');
  try {
    writer.exec(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         scope TEXT NOT NULL, version INTEGER NOT NULL, name TEXT NOT NULL, applied_at TEXT NOT NULL,
         PRIMARY KEY (scope, version))`,
    );
    const done = new Set(
      writer
        .allSync<{ version: number }>('SELECT version FROM schema_migrations WHERE scope = ?', [scope])
        .map((r) => r.version),
    );
    const sorted = [...migrations].sort((a, b) => a.version - b.version);
    const pending = sorted.filter((m) => !done.has(m.version));
    if (pending.length === 0) return;
    for (const m of pending)
      if (m.sqlite === undefined)
        throw new StoreError(
          'migration_failed',
          `migration ${scope}#${m.version} (${m.name}) has no SQLite form`,
        );
    // The pending versions apply together or not at all: a failing version 2 leaves no version 1.
    let current: Migration | undefined;
    try {
      writer.exec('BEGIN IMMEDIATE');
      for (const m of pending) {
        current = m;
        // Another process on the same file may have applied it since `done` was read: the
        // check that counts is the one under the write lock.
        const applied = writer.allSync('SELECT 1 FROM schema_migrations WHERE scope = ? AND version = ?', [
          scope,
          m.version,
        ]);
        if (applied.length > 0) continue;
        writer.exec(m.sqlite!);
        writer.runSync(
          'INSERT INTO schema_migrations (scope, version, name, applied_at) VALUES (?, ?, ?, ?)',
          [scope, m.version, m.name, new Date().toISOString()],
        );
      }
      current = undefined;
      writer.exec('COMMIT');
    } catch (err) {
      if (writer.db.inTransaction) writer.exec('ROLLBACK');
      throw new StoreError(
        'migration_failed',
        current !== undefined
          ? `migration ${scope}#${current.version} (${current.name}) failed: ${(err as Error).message}`
          : `migrations of ${scope} failed to commit: ${(err as Error).message}`,
        { cause: err },
      );
    }
  } finally {
    writer.db.pragma('temp_store = MEMORY');
  }
}
