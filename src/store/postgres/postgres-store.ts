/**
 * PostgresStore: the shared engine (node-postgres `pg` Pool, PostgreSQL ≥ 13; CI runs 15).
 * Several `solid serve` nodes may use one database with the same guarantees as the embedded
 * engine (spec/store.md §multi-node).
 *
 * - `write(fn)`: ONE checked-out client, `BEGIN` … `COMMIT` at READ COMMITTED. Chain and event
 *   appends serialize per tenant through `lockTenantHead` (`SELECT … FOR UPDATE` on the tenant's
 *   head row, created first with `INSERT … ON CONFLICT DO NOTHING`); idempotency claims, nonce
 *   burns and approvals serialize on their unique indexes; daily caps on the counter row
 *   (`INSERT … ON CONFLICT DO UPDATE … RETURNING`). Serialization failures and deadlocks
 *   (40001, 40P01) re-run the whole transaction up to `maxRetries` times; other failures roll
 *   back and surface as StoreError. A statement that fails inside `fn` aborts the transaction
 *   (PostgreSQL semantics): if `fn` swallows that error and returns, `write` refuses to report
 *   success (StoreError 'unknown') — nothing is ever half-written.
 * - `read(fn)`: a pooled client outside any transaction: each statement sees the data committed
 *   when it starts (READ COMMITTED), as the embedded engine's reader does. `run` is refused.
 * - `?` placeholders become `$n`; each statement text gets a prepared-statement name (statements.ts).
 * - int8 and numeric come back as JS numbers when exactly representable (else as strings), JSON
 *   and JSONB as parsed values — through type parsers scoped to this pool, never the global ones.
 * - `nextAuditId()` draws from the `audit_log_audit_id_seq` sequence (calls of one turn share one
 *   query; gaps possible after a rollback; the per-tenant `seq` is the gap-free order).
 * - Durability `full` (default): `synchronous_commit = on` per session; a write resolves only
 *   after its commit record is flushed. `normal`: `synchronous_commit = off`.
 * - `waitFor`/`notify`: LISTEN/NOTIFY on a dedicated connection (wake-listener.ts).
 * - When the database is down every call fails fast with StoreError('unavailable') and the pool
 *   reconnects by itself when it is back.
 * - Nothing waits without a limit (spec/store.md §time-limits): every pooled session gets
 *   `statement_timeout` (5 s), `lock_timeout` (2 s) and `idle_in_transaction_session_timeout`
 *   (5 s: a node that stops inside a transaction — SIGSTOP, a partition — is cut off by the server
 *   and its tenant lock released); the client gives up on a query after `queryTimeoutMs` (7 s: a
 *   stalled server), on a connection or a pool slot after `connectTimeoutMs` (3 s); a write body
 *   runs under `writeBudgetMs` (5 s); `close()` is bounded by `closeTimeoutMs` (5 s).
 *
 * Spec: spec/store.md.
 */
import pg from 'pg';
import {
  DEFAULT_WRITE_BUDGET_MS,
  StoreError,
  withWriteBudget,
  type Migration,
  type Queryable,
  type Row,
  type RunResult,
  type Store,
  type StoreRead,
  type StoreTx,
  type TenantHead,
  type WriteOptions,
} from '../store.ts';
import { StatementCache, type PgStatement } from './statements.ts';
import { isRetryable, toStoreError } from './postgres-errors.ts';
import { WakeListener } from './wake-listener.ts';
import { describeUrl, type PostgresStoreOptions } from './options.ts';

// The engine's options and their reading from the environment are part of this entry point.
export { describeUrl, postgresOptionsFromEnv, type PostgresStoreOptions } from './options.ts';

/** One caller waiting for an audit_id drawn by a shared nextval query. */
interface IdWaiter {
  resolve: (id: number) => void;
  reject: (err: unknown) => void;
}

const GENESIS_HASH = '0'.repeat(64);
const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** int8 → number when it is a safe integer, else the exact decimal string. */
function parseInt8(value: string): number | string {
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
}

/** numeric → number when the decimal text round-trips exactly, else the string. */
function parseNumeric(value: string): number | string {
  const n = Number(value);
  if (!Number.isFinite(n)) return value;
  if (Number.isInteger(n)) return Number.isSafeInteger(n) ? n : value;
  return String(n) === value.replace(/0+$/, '').replace(/\.$/, '') ? n : value;
}

/** Type parsers for this pool only (pg's global parsers stay untouched). */
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (format !== 'binary') {
      if (oid === INT8_OID) return parseInt8;
      if (oid === NUMERIC_OID) return parseNumeric;
    }
    return pg.types.getTypeParser(oid, format ?? 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** Bind values as the embedded engine does: undefined → NULL, booleans → 1/0. */
function bind(v: unknown): unknown {
  if (v === undefined) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

/** The Queryable methods over one checked-out client. */
class PgQueryable implements Queryable {
  /** The first failed statement of this transaction (PostgreSQL aborts the rest). */
  failure: unknown;
  sawRetryable = false;
  #ended = false;
  constructor(
    protected readonly store: PostgresStore,
    readonly client: pg.PoolClient,
  ) {}

  end(): void {
    this.#ended = true;
  }

  protected async query(sql: string, params: readonly unknown[] = []): Promise<pg.QueryResult<Row>> {
    if (this.#ended) throw new StoreError('unknown', 'store connection used after its read or write ended');
    const st: PgStatement = this.store.statements.get(sql);
    try {
      return await this.client.query<Row>({
        name: st.name,
        text: st.text,
        values: params.map(bind),
        ...this.store.queryTimeout,
      });
    } catch (err) {
      if (isRetryable(err)) this.sawRetryable = true;
      const mapped = toStoreError(err);
      this.failure ??= mapped;
      throw mapped;
    }
  }

  async get<T = Row>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    return (await this.query(sql, params)).rows[0] as T | undefined;
  }
  async all<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    return (await this.query(sql, params)).rows as T[];
  }
  async run(sql: string, params?: readonly unknown[]): Promise<RunResult> {
    const r = await this.query(sql, params);
    return { changes: r.rowCount ?? 0 };
  }
}

/** `read()` handle: statements run outside a transaction; writes are refused. */
class PgRead extends PgQueryable {
  override run(): Promise<RunResult> {
    return Promise.reject(
      new StoreError('read_only', 'run() is not allowed inside store.read(); use store.write()'),
    );
  }
}

/** `write()` handle: one transaction on one client. */
class PgTx extends PgQueryable implements StoreTx {
  readonly callbacks: Array<() => void> = [];
  readonly #locked = new Set<number>();

  async lockTenantHead(companyId: number): Promise<TenantHead> {
    const select =
      'SELECT company_id, audit_seq, audit_hash, event_seq FROM tenant_heads WHERE company_id = ? FOR UPDATE';
    let row = await this.get<TenantHead>(select, [companyId]);
    if (row === undefined) {
      // First write of a tenant: create its head; a concurrent creator makes ours a no-op.
      await this.run(
        'INSERT INTO tenant_heads (company_id, audit_seq, audit_hash, event_seq) VALUES (?, 0, ?, 0) ON CONFLICT (company_id) DO NOTHING',
        [companyId, GENESIS_HASH],
      );
      row = await this.get<TenantHead>(select, [companyId]);
      if (row === undefined)
        throw new StoreError('unknown', `tenant head ${companyId} vanished while being locked`);
    }
    this.#locked.add(companyId);
    const head: TenantHead = {
      company_id: Number(row.company_id),
      audit_seq: Number(row.audit_seq),
      audit_hash: row.audit_hash,
      event_seq: Number(row.event_seq),
    };
    // Told after commit only when the head moved (a checkpoint locks a head and moves nothing).
    const seq = head.audit_seq;
    const events = head.event_seq;
    this.callbacks.push(() => {
      if (head.audit_seq !== seq || head.event_seq !== events) this.store.noteLockedHead(companyId);
    });
    return head;
  }

  /** nextAuditId calls of this turn, answered together by one query (see nextAuditId). */
  #idWaiters: IdWaiter[] | undefined;

  /**
   * The next value of audit_log_audit_id_seq. Calls made in the same turn (a batch append asks for
   * every row's id at once) share one query drawing them all, in call order: one round trip per
   * batch instead of per row.
   */
  nextAuditId(): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      if (this.#idWaiters === undefined) {
        const waiters: IdWaiter[] = [];
        this.#idWaiters = waiters;
        queueMicrotask(() => {
          this.#idWaiters = undefined;
          const one = waiters.length === 1;
          this.all<{ id: number | string }>(
            one
              ? `SELECT nextval('audit_log_audit_id_seq') AS id`
              : `SELECT nextval('audit_log_audit_id_seq') AS id FROM generate_series(1, ?::int)`,
            one ? [] : [waiters.length],
          ).then(
            (rows) => {
              const ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
              waiters.forEach((w, i) => w.resolve(ids[i]!));
            },
            (err: unknown) => {
              for (const w of waiters) w.reject(err);
            },
          );
        });
      }
      this.#idWaiters.push({ resolve, reject });
    });
  }

  /** `n` values of audit_log_audit_id_seq in one query, ascending. */
  async nextAuditIds(n: number): Promise<number[]> {
    if (n <= 0) return [];
    const rows = await this.all<{ id: number | string }>(
      `SELECT nextval('audit_log_audit_id_seq') AS id FROM generate_series(1, ?::int)`,
      [n],
    );
    return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
  }

  afterCommit(fn: () => void): void {
    this.callbacks.push(fn);
  }

  async tryLockKey(key: string): Promise<boolean> {
    const row = await this.get<{ ok: boolean }>(
      'SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0)) AS ok',
      [key],
    );
    return row?.ok === true;
  }
}

/** The PostgreSQL engine of the Store (`solid-verbs/postgres`): a connection pool, the same Store contract as SqliteStore. spec/store.md §multi-node */
export class PostgresStore implements Store {
  readonly engine = 'postgres' as const;
  readonly description: string;
  readonly statements = new StatementCache();
  /** Tenants whose head a committed write locked since the last drain (drainLockedHeads). */
  readonly #lockedHeads = new Set<number>();

  /** Called after commit by a write that locked a tenant's head. */
  noteLockedHead(companyId: number): void {
    this.#lockedHeads.add(companyId);
  }

  /** The tenants whose head a committed write locked since the last call (Store.drainLockedHeads). */
  drainLockedHeads(): number[] {
    const ids = [...this.#lockedHeads];
    this.#lockedHeads.clear();
    return ids;
  }
  /** `{ query_timeout }` for every query of the runtime (empty when off); not for migrations. */
  readonly queryTimeout: { query_timeout?: number };
  readonly #writeBudgetMs: number;
  readonly #closeTimeoutMs: number;
  readonly #pool: pg.Pool;
  readonly #wake: WakeListener;
  readonly #maxRetries: number;
  readonly #onError: (err: unknown, where: string) => void;
  readonly #schema: string | undefined;
  #closed = false;
  #active = 0;
  #idle: Array<() => void> = [];

  constructor(options: PostgresStoreOptions) {
    this.description = describeUrl(options.connectionString) + (options.schema ? `#${options.schema}` : '');
    this.#maxRetries = options.maxRetries ?? 3;
    this.#onError = options.onError ?? (() => {});
    this.#schema = options.schema;
    if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) {
      throw new StoreError(
        'unavailable',
        `invalid schema name ${JSON.stringify(options.schema)} (lowercase letters, digits, _)`,
      );
    }
    const settings: string[] = [
      `-c synchronous_commit=${(options.durability ?? 'full') === 'full' ? 'on' : 'off'}`,
    ];
    if (options.schema !== undefined) settings.push(`-c search_path=${options.schema}`);
    const idleTx = options.idleInTransactionTimeoutMs ?? 5000;
    const lockTimeout = options.lockTimeoutMs ?? 2000;
    if (lockTimeout > 0) settings.push(`-c lock_timeout=${lockTimeout}`);
    const clientConfig: pg.ClientConfig = {
      connectionString: options.connectionString,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 3000,
      application_name: options.applicationName ?? 'solid-verbs',
      options: settings.join(' '),
      types: TYPES,
      keepAlive: true,
    };
    const statementTimeout = options.statementTimeoutMs ?? 5000;
    if (statementTimeout > 0) clientConfig.statement_timeout = statementTimeout;
    const queryTimeout = options.queryTimeoutMs ?? (statementTimeout > 0 ? statementTimeout + 2000 : 0);
    this.queryTimeout = queryTimeout > 0 ? { query_timeout: queryTimeout } : {};
    this.#writeBudgetMs = options.writeBudgetMs ?? DEFAULT_WRITE_BUDGET_MS;
    this.#closeTimeoutMs = options.closeTimeoutMs ?? 5000;
    if (idleTx > 0) clientConfig.idle_in_transaction_session_timeout = idleTx;
    this.#pool = new pg.Pool({
      ...clientConfig,
      max: options.poolMax ?? 10,
      idleTimeoutMillis: options.idleTimeoutMs ?? 30_000,
    });
    // An idle pooled connection that dies (server restart) must not crash the process.
    this.#pool.on('error', (err) => this.#onError(err, 'idle connection'));
    this.#wake = new WakeListener({
      clientConfig: {
        ...clientConfig,
        options: settings.filter((o) => !o.startsWith('-c lock_timeout')).join(' '),
        statement_timeout: undefined,
        idle_in_transaction_session_timeout: undefined,
      },
      pgChannel: `solid_wake:${options.schema ?? 'public'}`.slice(0, 63), // NAMEDATALEN
      send: (channel, payloads) => this.#send(channel, payloads),
      onError: (err) => this.#onError(err, 'listen connection'),
    });
  }

  /** The pool, for the engine's own tools (db migrate grants, tests). Not for the runtime. */
  get pool(): pg.Pool {
    return this.#pool;
  }

  /** The schema every connection uses (undefined: the server's search_path). */
  get schema(): string | undefined {
    return this.#schema;
  }

  /** True while the LISTEN connection is up (tests, /readyz details). */
  get listening(): boolean {
    return this.#wake.listening;
  }

  async #checkout(): Promise<pg.PoolClient> {
    if (this.#closed) throw new StoreError('unavailable', 'the store is closed');
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      const mapped = toStoreError(err);
      throw mapped instanceof StoreError && mapped.code !== 'unavailable'
        ? new StoreError('unavailable', mapped.message, { cause: err })
        : mapped;
    }
    // A checked-out client has no listener of pg-pool's: a connection lost between two
    // statements would otherwise crash the process. The next statement fails instead.
    client.on('error', noop);
    this.#active++;
    return client;
  }

  #release(client: pg.PoolClient, destroy: boolean): void {
    client.removeListener('error', noop);
    client.release(destroy ? true : undefined);
    this.#active--;
    if (this.#active === 0) for (const f of this.#idle.splice(0)) f();
  }

  async migrate(scope: string, migrations: readonly Migration[]): Promise<void> {
    const sorted = [...migrations].sort((a, b) => a.version - b.version);
    const client = await this.#checkout();
    let destroy = false;
    try {
      // Fast path without DDL (a restricted app role may not CREATE): everything applied already.
      const exists = await client.query<{ t: string | null }>(
        `SELECT to_regclass('schema_migrations')::text AS t`,
      );
      if (exists.rows[0]?.t != null) {
        const done = new Set(
          (
            await client.query<{ version: number }>(
              'SELECT version FROM schema_migrations WHERE scope = $1',
              [scope],
            )
          ).rows.map((r) => Number(r.version)),
        );
        if (sorted.every((m) => done.has(m.version))) return;
      }
      const lockName = `${this.#schema ?? (await client.query<{ s: string | null }>('SELECT current_schema() AS s')).rows[0]?.s ?? 'public'}:solid-migrate`;
      for (const m of sorted)
        if (m.postgres === undefined)
          throw new StoreError(
            'migration_failed',
            `migration ${scope}#${m.version} (${m.name}) has no PostgreSQL form`,
          );
      // The pending versions apply in one transaction, together or not at all (as on SQLite):
      // a failing version 2 leaves no version 1 behind.
      let current: Migration | undefined;
      await client.query('BEGIN');
      try {
        // Migrations may build large indexes and wait for another node's migrator: no statement
        // or lock timeout (and no client-side query timeout: these queries pass none).
        await client.query('SET LOCAL statement_timeout = 0');
        await client.query('SET LOCAL lock_timeout = 0');
        // One migrator at a time per schema, across nodes.
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [lockName]);
        if (this.#schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.#schema}`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS schema_migrations (
             scope TEXT NOT NULL, version INTEGER NOT NULL, name TEXT NOT NULL, applied_at TEXT NOT NULL,
             PRIMARY KEY (scope, version))`,
        );
        for (const m of sorted) {
          current = m;
          const applied = await client.query(
            'SELECT 1 FROM schema_migrations WHERE scope = $1 AND version = $2',
            [scope, m.version],
          );
          if (applied.rowCount !== 0) continue;
          await client.query(m.postgres!);
          await client.query(
            'INSERT INTO schema_migrations (scope, version, name, applied_at) VALUES ($1, $2, $3, $4)',
            [scope, m.version, m.name, new Date().toISOString()],
          );
        }
        current = undefined;
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {
          destroy = true;
        });
        const mapped = toStoreError(err);
        if (mapped instanceof StoreError && mapped.code === 'unavailable') throw mapped;
        throw new StoreError(
          'migration_failed',
          current !== undefined
            ? `migration ${scope}#${current.version} (${current.name}) failed: ${(err as Error).message}`
            : `migrations of ${scope} failed: ${(err as Error).message}`,
          { cause: err },
        );
      }
    } catch (err) {
      const mapped = toStoreError(err);
      if (mapped instanceof StoreError && mapped.code === 'unavailable') destroy = true;
      throw mapped;
    } finally {
      this.#release(client, destroy);
    }
  }

  async read<T>(fn: (q: StoreRead) => Promise<T>): Promise<T> {
    const client = await this.#checkout();
    const q = new PgRead(this, client);
    try {
      return await fn(q);
    } finally {
      q.end();
      this.#release(client, q.failure instanceof StoreError && q.failure.code === 'unavailable');
    }
  }

  async write<T>(fn: (tx: StoreTx) => Promise<T>, options?: WriteOptions): Promise<T> {
    const budgetMs = options?.budgetMs ?? this.#writeBudgetMs;
    for (let attempt = 0; ; attempt++) {
      const client = await this.#checkout();
      const tx = new PgTx(this, client);
      let destroy = false;
      let beginFailed = false;
      let result: T;
      try {
        try {
          await client.query({ text: 'BEGIN', ...this.queryTimeout });
        } catch (err) {
          beginFailed = true;
          throw toStoreError(err);
        }
        result = await withWriteBudget(fn(tx), budgetMs, () => tx.end(), options?.label);
        tx.end();
        if (tx.failure !== undefined) {
          throw new StoreError(
            'unknown',
            'a statement failed inside this write and PostgreSQL aborted the transaction; the write body must not continue after a failed statement',
            {
              cause: tx.failure,
            },
          );
        }
        let commit: pg.QueryResult;
        try {
          commit = await client.query({ text: 'COMMIT', ...this.queryTimeout });
        } catch (err) {
          if (isRetryable(err)) tx.sawRetryable = true;
          throw toStoreError(err);
        }
        if (commit.command !== 'COMMIT')
          throw new StoreError('unknown', `the transaction ended with ${commit.command} instead of COMMIT`);
      } catch (err) {
        tx.end();
        // A connection that failed (or whose body ran past its budget, maybe mid-query) is
        // discarded without a ROLLBACK that would queue behind it: the server rolls back when
        // the session ends.
        if (err instanceof StoreError && (err.code === 'unavailable' || err.code === 'timeout'))
          destroy = true;
        else {
          try {
            await client.query({ text: 'ROLLBACK', ...this.queryTimeout });
          } catch {
            destroy = true;
          }
        }
        this.#release(client, destroy);
        // A pooled connection the server dropped (restart) fails at BEGIN: nothing ran, try a fresh one.
        const staleConnection = beginFailed && err instanceof StoreError && err.code === 'unavailable';
        if ((tx.sawRetryable || staleConnection) && attempt < this.#maxRetries && !this.#closed) {
          await sleep(5 + Math.random() * 20 * (attempt + 1));
          continue;
        }
        throw err;
      }
      this.#release(client, false);
      for (const cb of tx.callbacks) {
        try {
          cb();
        } catch (err) {
          this.#onError(err, 'afterCommit callback');
        }
      }
      return result;
    }
  }

  async ping(): Promise<void> {
    const client = await this.#checkout();
    let destroy = false;
    try {
      await client.query({ text: 'SELECT 1', ...this.queryTimeout });
    } catch (err) {
      destroy = true;
      throw toStoreError(err);
    } finally {
      this.#release(client, destroy);
    }
  }

  waitFor(channel: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    return this.#wake.waitFor(channel, timeoutMs, signal);
  }

  notify(channel: string): void {
    this.#wake.notify(channel);
  }

  async #send(pgChannel: string, payloads: string[]): Promise<void> {
    if (this.#closed) return;
    const client = await this.#checkout();
    let destroy = false;
    try {
      await client.query({
        name: 'solid_notify',
        text: 'SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p',
        values: [pgChannel, payloads],
      });
    } catch (err) {
      destroy = true;
      throw toStoreError(err);
    } finally {
      this.#release(client, destroy);
    }
  }

  /**
   * Stop: close the LISTEN connection, let reads and writes in flight finish, end the pool. Each
   * step waits at most `closeTimeoutMs` (a stalled server must not hold a shutdown): what is
   * still open then is abandoned (the server ends those sessions and rolls them back).
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const bound = this.#closeTimeoutMs;
    await atMost(this.#wake.close(), bound);
    // Let reads and writes in flight finish (they hold checked-out clients), then end the pool.
    if (this.#active > 0) await atMost(new Promise<void>((resolve) => this.#idle.push(resolve)), bound);
    await atMost(this.#pool.end(), bound);
  }
}

function noop(): void {}

/** Wait for `p` (its failure ignored) or `ms`, whichever comes first. */
function atMost(p: Promise<unknown>, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    p.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      () => {
        clearTimeout(timer);
        resolve();
      },
    );
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
