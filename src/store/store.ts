/**
 * The Store interface: the only store module the runtime and the business packs import.
 *
 * Two engines implement it: `SqliteStore` (embedded, better-sqlite3, the default) and
 * `PostgresStore` (node-postgres pool, several nodes on one database). Nothing above this
 * interface may know which engine it talks to.
 *
 * SQL dialect contract (spec/store.md §portable-sql): statements given to `get` / `all` / `run`
 * use `?` placeholders (never `?` inside a string literal), `INSERT … ON CONFLICT … DO …`,
 * `RETURNING`, `lower(x) LIKE lower(?)` for case-insensitive matching, ISO-8601 TEXT for times,
 * integer cents for money, and TEXT holding JSON for JSON columns read through `parseJson`.
 * Engines translate placeholders, cache prepared statements by their text, and map driver errors
 * to `StoreError` by driver code (never by message text).
 */

/** A row as the driver returns it: column name to value. */
export type Row = Record<string, unknown>;

/** Result of a statement run for its effect. `lastInsertId` only when the engine knows it. */
export interface RunResult {
  changes: number;
  lastInsertId?: number;
}

/** Anything that runs SQL: a read snapshot or a write transaction. All methods are async. */
export interface Queryable {
  /** First row or undefined. */
  get<T = Row>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
  /** All rows. */
  all<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Run for effect. */
  run(sql: string, params?: readonly unknown[]): Promise<RunResult>;
}

/** A read-only view: sees only committed data, never a write in flight. */
export type StoreRead = Queryable;

/**
 * A write transaction. Everything done through it commits together or not at all.
 * `lockTenant` serializes writers of one tenant (audit chain and event sequence); on SQLite the
 * single writer already serializes everything, on PostgreSQL it takes a row lock on the tenant's
 * head row until commit.
 */
export interface StoreTx extends Queryable {
  /**
   * Lock the tenant's head row (audit chain + event sequence) for the rest of the transaction and
   * return the transaction's view of it. The same object is returned on every later call in the
   * same transaction: the ledger moves it (audit_seq/audit_hash/event_seq) as it appends and also
   * writes the row, so the engine reads the row once per transaction.
   */
  lockTenantHead(companyId: number): Promise<TenantHead>;
  /** Reserve the next global audit_id (SQLite: max + 1 under the write lock, then counted in the transaction; PostgreSQL: a sequence). */
  nextAuditId(): Promise<number>;
  /**
   * Reserve the next `n` global audit_ids at once, ascending: what `n` nextAuditId calls would
   * give, in one promise instead of n (a read-audit batch appends 256 rows). Optional: callers fall
   * back to nextAuditId.
   */
  nextAuditIds?(n: number): Promise<number[]>;
  /** Register a callback run once after a successful, durable commit (outbox delivery, wakeups). */
  afterCommit(fn: () => void): void;
  /**
   * Optional: try to take a transaction-scoped lock on `key` without waiting (PostgreSQL:
   * `pg_try_advisory_xact_lock`). False when another transaction — on any node — holds it.
   * Engines with a single writer omit it. Used for idempotency keys (spec/store.md §idempotency-across-nodes).
   */
  tryLockKey?(key: string): Promise<boolean>;
}

/** The per-tenant head of the audit chain and of the event stream. */
export interface TenantHead {
  company_id: number;
  audit_seq: number;
  audit_hash: string;
  event_seq: number;
}

/** A versioned migration. `sql` is per engine; an engine refuses a migration without its form. */
export interface Migration {
  /** Unique, ordered id within its `scope`, e.g. 1, 2, 3. */
  version: number;
  name: string;
  sqlite?: string;
  postgres?: string;
}

/** Options the runtime may pass to a write. */
export interface WriteOptions {
  /** Label used in logs and errors. */
  label?: string;
  /**
   * Time budget (ms) for the body of this write inside its transaction, replacing the store's
   * `writeBudgetMs`; 0 = none (the demo seed, an operator's one-off import). spec/store.md §time-limits.
   */
  budgetMs?: number;
  /**
   * `false`: this commit need not reach the disk before the write resolves (spec/store.md
   * §durability, relaxed commits). SQLite at durability `full` commits it with synchronous=NORMAL:
   * a process crash (kill -9) loses nothing, a power cut may lose it until the next durable commit
   * or checkpoint fsyncs the WAL, which holds it (a later durable commit makes every earlier one
   * durable). A group commit is durable when any of its writers asks. PostgreSQL ignores it: every
   * commit there is durable. For rows whose loss in a power cut loses no consent, money or receipt
   * (a pending answer's audit row); default true.
   */
  durable?: boolean;
}

/**
 * Default time budget (ms) of a write body inside its transaction (spec/store.md §time-limits):
 * past it the body is abandoned, its work rolled back and the write rejected with
 * `StoreError('timeout')` (envelope `store_unavailable`). On SQLite a body that waits holds the
 * single writer, so every tenant's writes wait behind it; on PostgreSQL it holds its tenant's lock.
 */
export const DEFAULT_WRITE_BUDGET_MS = 5000;

/**
 * The body of a write exceeded its time budget: the error every engine rejects it with. The body's
 * transaction handle is closed (a later statement through it throws) and its work rolled back.
 */
export function writeBudgetExceeded(budgetMs: number, label?: string): StoreError {
  return new StoreError(
    'timeout',
    `the write${label ? ` (${label})` : ''} ran longer than its ${budgetMs} ms budget inside its transaction and was rolled back`,
  );
}

export type Durability = 'normal' | 'full';

/** The storage engine the runtime runs on (SqliteStore, PostgresStore): migrations, snapshot reads and write transactions. spec/store.md */
export interface Store {
  readonly engine: 'sqlite' | 'postgres';
  /** Apply the runtime's own migrations and then any pack's (scope = pack name). Idempotent. */
  migrate(scope: string, migrations: readonly Migration[]): Promise<void>;
  /** Run `fn` against a consistent snapshot of committed data. */
  read<T>(fn: (q: StoreRead) => Promise<T>): Promise<T>;
  /**
   * Run `fn` in one write transaction. Resolves only after the commit is durable at the
   * configured durability. If `fn` throws, everything it did is rolled back and the error is
   * rethrown unchanged. Driver failures surface as `StoreError`.
   */
  write<T>(fn: (tx: StoreTx) => Promise<T>, options?: WriteOptions): Promise<T>;
  /** Cheap liveness check of the database (used by /readyz). Throws `StoreError` when down. */
  ping(): Promise<void>;
  /** Release connections. */
  close(): Promise<void>;
  /** Wait for a wake-up on a channel (subscriptions), or `timeoutMs`. Cross-node on PostgreSQL. */
  waitFor(channel: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean>;
  /** Wake waiters of a channel (after commit). Cross-node on PostgreSQL. */
  notify(channel: string): void;
  /**
   * Optional: the tenants whose head row a committed write locked (an audit append, an event, a
   * user made) since the last call, then forgotten. The checkpointer's timer reads this instead of
   * every tenant's head, so its work follows the tenants that were active (spec/audit.md
   * §checkpoints). Engines that omit it get the full pass.
   */
  drainLockedHeads?(): number[];
  /** Human description for logs ("sqlite:/path/to.db", "postgres://host/db"), never secrets. */
  readonly description: string;
  /**
   * The database file of an embedded engine (SQLite on disk); undefined in memory and for a
   * database server. createRuntime keeps the runtime's secrets in `<filePath>.keys.json`.
   */
  readonly filePath?: string;
}

/**
 * Race a write body against its time budget (ms; 0 or less = none). When the budget passes first,
 * `onExpire` runs (the engine closes the body's transaction handle) and the promise rejects with
 * writeBudgetExceeded; the body's own later outcome is ignored. Spec: spec/store.md §time-limits.
 */
export function withWriteBudget<T>(
  body: Promise<T>,
  budgetMs: number,
  onExpire: () => void,
  label?: string,
): Promise<T> {
  if (!(budgetMs > 0)) return body;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      onExpire();
      reject(writeBudgetExceeded(budgetMs, label));
    }, budgetMs);
    body.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

/** Driver-independent error codes the engines map driver errors to. */
export type StoreErrorCode =
  | 'unique_violation'
  | 'unavailable'
  | 'read_only'
  | 'disk_full'
  | 'busy'
  | 'append_only'
  /** The engine cannot hold or compare a value the caller sent (a number out of the column's range). */
  | 'invalid_value'
  | 'migration_failed'
  /** A write body ran past its time budget inside its transaction (rolled back), or a deadline passed. */
  | 'timeout'
  | 'unknown';

/** An error from the store, mapped from the driver's own code. */
export class StoreError extends Error {
  override readonly name = 'StoreError';
  constructor(
    readonly code: StoreErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Parse a JSON column whatever the engine gave back (TEXT on SQLite, parsed JSONB on PostgreSQL). */
export function parseJson<T = unknown>(value: unknown): T {
  if (value === null || value === undefined) return value as T;
  if (typeof value === 'string') return JSON.parse(value) as T;
  return value as T;
}
