/**
 * Files that hold a business's data or the runtime's secrets are private to the user running the
 * server: created mode 0600 in a folder created 0700 (spec/store.md §file-modes). SQLite gives
 * its `-wal` and `-shm` files the database file's own mode, so creating the database file first,
 * empty and 0600, before better-sqlite3 opens it, covers all three.
 */
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

/** Mode of a database or key file this runtime creates. */
export const PRIVATE_FILE_MODE = 0o600;
/** Mode of a folder this runtime creates for them. */
export const PRIVATE_DIR_MODE = 0o700;

/**
 * Make sure `path`'s folder exists (created 0700 when missing; an existing one is left as is) and,
 * when `path` does not exist yet, create it empty with mode 0600. An existing file keeps its mode:
 * the operator may have chosen it.
 */
export function ensurePrivateFile(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE });
  if (existsSync(path)) return;
  try {
    closeSync(openSync(path, 'wx', PRIVATE_FILE_MODE));
  } catch (err) {
    // Created meanwhile by another process: that one's mode stands.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}
