/**
 * Copies of a SQLite database made with SQLite's online backup API (better-sqlite3 `db.backup()`),
 * never with `cp`: a file copy of a live WAL database misses the commits still in its `-wal` file
 * (issue 30 row 10: 18 receipts handed out were not in such a copy). The backup API copies a
 * consistent snapshot — every transaction committed before it began, none half — while the
 * server keeps writing. Backup files are single self-contained files (journal mode DELETE, no
 * `-wal` beside them), mode 0600 (they hold the business's data and its audit log).
 *
 * What these functions know is files and pages; what a copy must hold (chain, receipts, heads)
 * is checked by the ledger (src/runtime/ledger/verify/) and `solid backup` / `solid restore`.
 * Spec: spec/audit.md §backup.
 */
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, chmodSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { StoreError } from '../store.ts';
import { PRIVATE_FILE_MODE, ensurePrivateFile } from './private-file.ts';

/** Pages per backup step after the first: all of them, so the copy is one read snapshot. */
const ALL_PAGES = 2 ** 31 - 1;

/** fsync a file (and, for a rename to last, its folder). */
function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A temp path next to `path` (same file system, so a rename is atomic). */
export function partialPathOf(path: string): string {
  return join(dirname(path), `.${basename(path)}.partial-${randomBytes(4).toString('hex')}`);
}

/**
 * Copy the live database `source` into the new file `dest` (which must not exist) with the online
 * backup API: the other connections keep reading and writing; the copy is the snapshot of one
 * moment (the remaining pages are copied in one step, inside one read transaction, so a writer
 * cannot make it restart forever). The copy is switched to journal mode DELETE (one file),
 * fsynced, mode 0600. Resolves to the number of pages copied.
 * Throws StoreError('unavailable') when `source` cannot be opened or the copy fails (`dest` is
 * then removed).
 */
export async function sqliteOnlineBackup(source: string, dest: string): Promise<{ pages: number }> {
  let src: Database.Database;
  try {
    src = new Database(source, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new StoreError('unavailable', `Cannot open the database ${source}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    ensurePrivateFile(dest);
    const result = await src.backup(dest, { progress: () => ALL_PAGES });
    const copy = new Database(dest, { fileMustExist: true });
    try {
      copy.pragma('journal_mode = DELETE');
    } finally {
      copy.close();
    }
    chmodSync(dest, PRIVATE_FILE_MODE);
    fsyncPath(dest);
    return { pages: result.totalPages };
  } catch (err) {
    removeDatabaseFiles(dest);
    throw err instanceof StoreError
      ? err
      : new StoreError('unavailable', `The backup of ${source} failed: ${(err as Error).message}`, {
          cause: err,
        });
  } finally {
    src.close();
  }
}

/** Remove a database file and its `-wal`, `-shm` and `-journal` companions (missing ones are fine). */
export function removeDatabaseFiles(path: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${path}${suffix}`, { force: true });
}

/** Rename `from` over `to` (atomic on one file system) and fsync the folder, so the new name is durable. */
export function publishFile(from: string, to: string): void {
  renameSync(from, to);
  try {
    fsyncPath(dirname(to));
  } catch {
    /* some file systems cannot fsync a folder; the rename itself is done */
  }
}

/**
 * Whether another connection (a running `solid serve`, another process, another connection of
 * this one) holds the database `path` open: probed by asking for the exclusive access that
 * leaving WAL mode needs, without waiting (busy_timeout 0). A database nobody holds is left in
 * journal mode DELETE, its WAL folded in (a restore overwrites it next; the runtime turns WAL on
 * again when it opens it). False for a missing file.
 */
export function sqliteInUse(path: string): boolean {
  if (!existsSync(path)) return false;
  let db: Database.Database;
  try {
    db = new Database(path, { fileMustExist: true, timeout: 0 });
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return true;
    throw new StoreError('unavailable', `Cannot open the database ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    db.pragma('journal_mode = DELETE');
    return false;
  } catch (err) {
    if (/SQLITE_BUSY|SQLITE_LOCKED/.test(String((err as { code?: string }).code))) return true;
    throw new StoreError('unavailable', `Cannot probe the database ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  } finally {
    db.close();
  }
}

/**
 * Write the database file `backup` into `target` with the backup API: every page of `target` is
 * replaced in one transaction of the target (atomic: a crash leaves the old or the new database),
 * through SQLite's own locking, so it is also correct when another connection has `target` open
 * (that connection then reads the restored pages; a runtime holding caches must be restarted).
 * A missing `target` is created 0600. Throws StoreError('unavailable').
 */
export async function sqliteRestoreInto(backup: string, target: string): Promise<{ pages: number }> {
  let src: Database.Database;
  try {
    src = new Database(backup, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new StoreError('unavailable', `Cannot open the backup ${backup}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    ensurePrivateFile(target);
    const result = await src.backup(target, { progress: () => ALL_PAGES });
    fsyncPath(target);
    return { pages: result.totalPages };
  } catch (err) {
    throw new StoreError('unavailable', `The restore into ${target} failed: ${(err as Error).message}`, {
      cause: err,
    });
  } finally {
    src.close();
  }
}

/**
 * SQLite's own structural check of a database file (`PRAGMA quick_check`): the empty list when
 * the file is sound, else SQLite's messages (at most 20).
 */
export function sqliteQuickCheck(path: string): string[] {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const rows = db.pragma('quick_check(20)') as Array<{ quick_check: string }>;
    return rows.map((r) => r.quick_check).filter((m) => m !== 'ok');
  } finally {
    db.close();
  }
}
