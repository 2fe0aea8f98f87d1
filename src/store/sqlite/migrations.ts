/**
 * The migration runner of the SQLite engine: applies a scope's migrations in version order on the
 * writer connection, each in its own `BEGIN IMMEDIATE` transaction with its `schema_migrations`
 * row, skipping the versions already applied (checked again under the write lock, so two
 * processes migrating one file apply each version once). A failure rolls that migration back and
 * throws StoreError('migration_failed'). The caller holds the store's write mutex.
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
    for (const m of sorted) {
      if (done.has(m.version)) continue;
      if (m.sqlite === undefined) {
        throw new StoreError(
          'migration_failed',
          `migration ${scope}#${m.version} (${m.name}) has no SQLite form`,
        );
      }
      try {
        writer.exec('BEGIN IMMEDIATE');
        // Another process on the same file may have applied it since `done` was read: the
        // check that counts is the one under the write lock.
        const applied = writer.allSync('SELECT 1 FROM schema_migrations WHERE scope = ? AND version = ?', [
          scope,
          m.version,
        ]);
        if (applied.length === 0) {
          writer.exec(m.sqlite);
          writer.runSync(
            'INSERT INTO schema_migrations (scope, version, name, applied_at) VALUES (?, ?, ?, ?)',
            [scope, m.version, m.name, new Date().toISOString()],
          );
        }
        writer.exec('COMMIT');
      } catch (err) {
        if (writer.db.inTransaction) writer.exec('ROLLBACK');
        throw new StoreError(
          'migration_failed',
          `migration ${scope}#${m.version} (${m.name}) failed: ${(err as Error).message}`,
          {
            cause: err,
          },
        );
      }
    }
  } finally {
    writer.db.pragma('temp_store = MEMORY');
  }
}
