/**
 * Offline, read-only access to a solid SQLite database file, for the tools that need no runtime
 * and no secrets (`solid audit verify`, receipt checks): open it read-only, or through a private
 * snapshot when it sits on read-only media, and query it through the Queryable interface.
 * Spec: spec/audit.md §verify.
 */
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { StoreError, type Queryable } from '../store.ts';

/** A path SQLite can open read-only for `path`, and what to do when done with it. */
export interface ReadableAuditPath {
  path: string;
  /** True when `path` is a private snapshot (the original sits where SQLite cannot write). */
  snapshot: boolean;
  /** For a snapshot: whether the original had a `-wal` file next to it (copied and folded in). */
  hadWal?: boolean;
  release(): void;
}

/**
 * Where to read the audit log of the SQLite database `path` from. Normally `path` itself, opened
 * read-only. A WAL-mode database on read-only media (a write-protected copy handed to an auditor,
 * a read-only mount) cannot be opened even read-only — SQLite must create its `-shm` file next
 * to it — so then the database and its `-wal`, when present, are copied into a private temp
 * directory, the WAL is folded into the copy, and the copy is read; `release()` deletes it (also
 * at process exit). The copy needs as much free temp space as the database.
 * Throws StoreError('unavailable') for a missing file, a file that is not a solid database, or an
 * unreadable one (the ledger maps it to the envelope reason store_unavailable).
 */
export function readableAuditPath(path: string): ReadableAuditPath {
  const probe = (p: string): void => {
    const db = new Database(p, { readonly: true, fileMustExist: true });
    try {
      db.prepare('SELECT 1 FROM audit_log LIMIT 1').get();
    } finally {
      db.close();
    }
  };
  const unavailable = (err: unknown) =>
    new StoreError('unavailable', `Cannot read an audit log at ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  try {
    probe(path);
    return { path, snapshot: false, release: () => {} };
  } catch (err) {
    if (!existsSync(path) || !/readonly|read-only|unable to open/i.test((err as Error).message))
      throw unavailable(err);
  }
  const dir = mkdtempSync(join(tmpdir(), 'solid-audit-snapshot-'));
  // The copy holds the business's data: deleted on release, at exit, and on a terminating signal
  // (then the signal is raised again, so the process still ends the way it was asked to).
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const remove = () => rmSync(dir, { recursive: true, force: true });
  const onSignal = (signal: NodeJS.Signals) => {
    detach();
    remove();
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  };
  const detach = () => {
    process.removeListener('exit', remove);
    for (const sig of signals) process.removeListener(sig, onSignal);
  };
  const release = () => {
    detach();
    remove();
  };
  process.once('exit', remove);
  for (const sig of signals) process.once(sig, onSignal);
  const hadWal = existsSync(`${path}-wal`);
  try {
    const copy = join(dir, 'audit.db');
    copyFileSync(path, copy);
    chmodSync(copy, 0o600); // the copy keeps the original's (read-only) mode otherwise
    if (hadWal) {
      copyFileSync(`${path}-wal`, `${copy}-wal`);
      chmodSync(`${copy}-wal`, 0o600);
    }
    const db = new Database(copy, { fileMustExist: true });
    try {
      db.pragma('journal_mode = DELETE'); // folds the WAL into the copy; later opens need no -shm
    } finally {
      db.close();
    }
    probe(copy);
    return { path: copy, snapshot: true, hadWal, release };
  } catch (err) {
    release();
    throw unavailable(err);
  }
}

/** A read-only connection to an audit database file (better-sqlite3). */
export type AuditFile = Database.Database;

/** Open `path` read-only as it is (no probe, no snapshot): for a path readableAuditPath returned. */
export function openReadOnly(path: string): AuditFile {
  return new Database(path, { readonly: true, fileMustExist: true });
}

/**
 * Open a solid SQLite database read-only (no runtime, no keyfile), through a private snapshot when
 * it sits on read-only media (readableAuditPath; deleted when the connection closes).
 * Throws StoreError('unavailable').
 */
export function openAuditFile(path: string): AuditFile {
  const source = readableAuditPath(path);
  try {
    const db = openReadOnly(source.path);
    if (source.snapshot) {
      const close = db.close.bind(db);
      db.close = () => {
        close();
        source.release();
        return db;
      };
    }
    return db;
  } catch (err) {
    source.release();
    throw new StoreError('unavailable', `Cannot read an audit log at ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** A read-only Queryable over a better-sqlite3 connection (offline tools, no Store needed). */
export function sqliteQueryable(db: AuditFile): Queryable {
  return {
    get: async <T>(sql: string, params: readonly unknown[] = []) =>
      db.prepare(sql).get(...params) as T | undefined,
    all: async <T>(sql: string, params: readonly unknown[] = []) => db.prepare(sql).all(...params) as T[],
    run: async () => {
      throw new StoreError('read_only', 'This audit source is read-only.');
    },
  };
}
