/**
 * The options of the PostgreSQL engine (`PostgresStore`): the connection string, schema, pool
 * size, the server-side and client-side time limits, durability; how `solid serve` and the CLI
 * read them from the environment (`postgresOptionsFromEnv`), and the password-free description of
 * a connection string the CLI prints (`describeUrl`). Spec: spec/store.md §time-limits, §multi-node.
 */
import { StoreError, type Durability } from '../store.ts';

/** Options of PostgresStore: the connection string, the schema, pool size and timeouts. spec/store.md §multi-node */
export interface PostgresStoreOptions {
  /** postgres://user:password@host:port/database (libpq URL; `?sslmode=…` honoured by pg). */
  connectionString: string;
  /** Schema for every connection (`search_path`); default: the server's (public). Tests use one per runtime. */
  schema?: string;
  /** Pool size per process (SOLID_DB_POOL_MAX). Default 10. */
  poolMax?: number;
  /** Server-side statement timeout in ms (SOLID_DB_STATEMENT_TIMEOUT_MS); 0 = none. Default 5000. */
  statementTimeoutMs?: number;
  /**
   * Server-side `lock_timeout` in ms (SOLID_DB_LOCK_TIMEOUT_MS): a statement waiting this long for
   * a row lock (another node's tenant head) fails `busy` (55P03 → store_unavailable). Default 2000; 0 = none.
   */
  lockTimeoutMs?: number;
  /**
   * Abort a session idle inside a transaction for this long (ms; SOLID_DB_IDLE_TX_TIMEOUT_MS),
   * releasing its locks: a frozen node's tenant lock is freed by the server. Default 5000; 0 = never.
   */
  idleInTransactionTimeoutMs?: number;
  /**
   * Client-side deadline of one query in ms (SOLID_DB_QUERY_TIMEOUT_MS): a server that stopped
   * answering (stalled, partitioned without reset) fails the query `unavailable` and its connection
   * is discarded. Default: statement timeout + 2000 (7000); 0 = none. Migrations run without it.
   */
  queryTimeoutMs?: number;
  /**
   * Give up connecting, or waiting for a free pooled connection, after this many ms
   * (SOLID_DB_CONNECT_TIMEOUT_MS). Default 3000.
   */
  connectTimeoutMs?: number;
  /**
   * Time budget (ms) of a write body inside its transaction (SOLID_WRITE_BUDGET_MS;
   * DEFAULT_WRITE_BUDGET_MS = 5000); 0 = none. Past it the body is abandoned, its connection
   * discarded (the server rolls back) and the write rejected with StoreError('timeout').
   */
  writeBudgetMs?: number;
  /** `close()` waits at most this long (ms) for reads and writes in flight. Default 5000. */
  closeTimeoutMs?: number;
  /** Close pooled connections idle this long (ms). Default 30000. */
  idleTimeoutMs?: number;
  /** 'full' (default): synchronous_commit = on. 'normal': synchronous_commit = off. */
  durability?: Durability;
  /** Re-runs of a write after a serialization failure or deadlock. Default 3. */
  maxRetries?: number;
  /** application_name shown in pg_stat_activity. Default 'solid-verbs'. */
  applicationName?: string;
  /** Background problems (idle connection lost, LISTEN connection lost). Never thrown. */
  onError?: (err: unknown, where: string) => void;
}

/** A safe description of a connection string (no password). */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    u.search = '';
    return `postgres://${u.username ? `${u.username}@` : ''}${u.host}${u.pathname}`;
  } catch {
    return 'postgres://(unparsable url)';
  }
}

/**
 * Options from the environment: SOLID_DB_POOL_MAX, SOLID_DB_STATEMENT_TIMEOUT_MS,
 * SOLID_DB_LOCK_TIMEOUT_MS, SOLID_DB_IDLE_TX_TIMEOUT_MS, SOLID_DB_QUERY_TIMEOUT_MS,
 * SOLID_DB_CONNECT_TIMEOUT_MS (all ms), SOLID_WRITE_BUDGET_MS, SOLID_DB_SCHEMA.
 * @throws StoreError unavailable — a value that is not a whole number ≥ 0.
 */
export function postgresOptionsFromEnv(
  connectionString: string,
  env: NodeJS.ProcessEnv = process.env,
): PostgresStoreOptions {
  const num = (name: string): number | undefined => {
    const v = env[name];
    if (v === undefined || v.trim() === '') return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0)
      throw new StoreError(
        'unavailable',
        `${name} must be a non-negative integer (got ${JSON.stringify(v)})`,
      );
    return n;
  };
  return {
    connectionString,
    poolMax: num('SOLID_DB_POOL_MAX'),
    statementTimeoutMs: num('SOLID_DB_STATEMENT_TIMEOUT_MS'),
    lockTimeoutMs: num('SOLID_DB_LOCK_TIMEOUT_MS'),
    idleInTransactionTimeoutMs: num('SOLID_DB_IDLE_TX_TIMEOUT_MS'),
    queryTimeoutMs: num('SOLID_DB_QUERY_TIMEOUT_MS'),
    connectTimeoutMs: num('SOLID_DB_CONNECT_TIMEOUT_MS'),
    writeBudgetMs: num('SOLID_WRITE_BUDGET_MS'),
    schema: env.SOLID_DB_SCHEMA || undefined,
  };
}
