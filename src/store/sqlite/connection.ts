/**
 * One better-sqlite3 connection as a `Queryable`: statements prepared once and cached by their SQL
 * text, parameters bound the SQLite way, and every driver error mapped to a StoreError by its
 * code (`toStoreError`). The writer and the reader of a SqliteStore are each one Connection.
 *
 * Spec: spec/store.md.
 */
import type { Statement, Database as Db } from 'better-sqlite3';
import { StoreError, type Queryable, type Row, type RunResult } from '../store.ts';

/** Map a better-sqlite3 error to a StoreError by its `code` (never by message text). */
export function toStoreError(err: unknown): unknown {
  if (err instanceof StoreError) return err;
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE')) return err;
  const message = (err as Error).message;
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return new StoreError('unique_violation', message, { cause: err });
  }
  if (code === 'SQLITE_CONSTRAINT_TRIGGER') return new StoreError('append_only', message, { cause: err });
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return new StoreError('busy', message, { cause: err });
  }
  if (code.startsWith('SQLITE_READONLY')) return new StoreError('read_only', message, { cause: err });
  if (code === 'SQLITE_FULL') return new StoreError('disk_full', message, { cause: err });
  if (
    code.startsWith('SQLITE_CANTOPEN') ||
    code.startsWith('SQLITE_IOERR') ||
    code === 'SQLITE_NOTADB' ||
    code.startsWith('SQLITE_CORRUPT')
  ) {
    return new StoreError('unavailable', message, { cause: err });
  }
  return new StoreError('unknown', message, { cause: err });
}

/** Statement cache + the Queryable methods over one connection. */
export class Connection implements Queryable {
  readonly #db: Db;
  readonly #cache = new Map<string, Statement>();
  constructor(db: Db) {
    this.#db = db;
  }
  get db(): Db {
    return this.#db;
  }
  prepare(sql: string): Statement {
    let stmt = this.#cache.get(sql);
    if (stmt === undefined) {
      try {
        stmt = this.#db.prepare(sql);
      } catch (err) {
        throw toStoreError(err);
      }
      this.#cache.set(sql, stmt);
    }
    return stmt;
  }
  getSync<T>(sql: string, params: readonly unknown[] = []): T | undefined {
    try {
      return this.prepare(sql).get(...bindAll(params)) as T | undefined;
    } catch (err) {
      throw toStoreError(err);
    }
  }
  allSync<T>(sql: string, params: readonly unknown[] = []): T[] {
    try {
      return this.prepare(sql).all(...bindAll(params)) as T[];
    } catch (err) {
      throw toStoreError(err);
    }
  }
  runSync(sql: string, params: readonly unknown[] = []): RunResult {
    try {
      const stmt = this.prepare(sql);
      if (stmt.reader) {
        // A statement with RETURNING: run it for effect, report the rows as changes.
        const rows = stmt.all(...bindAll(params));
        return { changes: rows.length };
      }
      const r = stmt.run(...bindAll(params));
      return { changes: r.changes, lastInsertId: Number(r.lastInsertRowid) };
    } catch (err) {
      throw toStoreError(err);
    }
  }
  get<T = Row>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    try {
      return Promise.resolve(this.getSync<T>(sql, params));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  all<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    try {
      return Promise.resolve(this.allSync<T>(sql, params));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  run(sql: string, params?: readonly unknown[]): Promise<RunResult> {
    try {
      return Promise.resolve(this.runSync(sql, params));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  exec(sql: string): void {
    try {
      this.#db.exec(sql);
    } catch (err) {
      throw toStoreError(err);
    }
  }
  /** Run a transaction-control statement through a cached prepared statement (cheaper than exec). */
  control(
    sql:
      | 'BEGIN IMMEDIATE'
      | 'COMMIT'
      | 'ROLLBACK'
      | 'SAVEPOINT w'
      | 'RELEASE w'
      | 'ROLLBACK TO w'
      | 'PRAGMA synchronous = NORMAL'
      | 'PRAGMA synchronous = FULL',
  ): void {
    try {
      this.prepare(sql).run();
    } catch (err) {
      throw toStoreError(err);
    }
  }
}

/** SQLite binds booleans as 0/1 and undefined as NULL. */
function bind(v: unknown): unknown {
  if (v === undefined) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

/**
 * The arguments to spread into a better-sqlite3 call for `params` (bind() on each): the same
 * array when nothing needs mapping (the usual case: no copy). Spread arguments, not one array
 * argument: better-sqlite3 reads an array's elements one property lookup each, which cost ≈ 1 µs
 * more per 28-parameter audit row than reading them as arguments (raw better-sqlite3, in memory).
 * An object (named parameters) is one argument either way, bound by name.
 */
function bindAll(params: readonly unknown[]): readonly unknown[] {
  let copy = false;
  for (let i = 0; i < params.length; i++) {
    const v = params[i];
    if (v === undefined || typeof v === 'boolean') copy = true;
    else if (typeof v === 'object' && v !== null && !(v instanceof Uint8Array)) return params.map(bind);
  }
  return copy ? params.map(bind) : params;
}
