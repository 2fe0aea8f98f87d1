/**
 * SqliteStore: the embedded engine (better-sqlite3 12, WAL).
 *
 * - One writer connection driven by `BEGIN IMMEDIATE` / `COMMIT` behind an async mutex, so an
 *   async transaction body never interleaves with another write in this process. When another
 *   process holds the file's write lock (a CLI command, a second server, a backup), `BEGIN
 *   IMMEDIATE` is retried **asynchronously** with a growing, jittered pause (1 ms doubling to 50
 *   ms) until `busyTimeoutMs` (5000 ms), then the write fails with StoreError('busy'): the event
 *   loop keeps answering reads and other requests meanwhile (SQLite's own busy_timeout waits
 *   synchronously and froze the whole node; the writer's is 0 after opening, spec/store.md
 *   §time-limits). Opening and migrations still use SQLite's wait (start-up only).
 * - One reader connection (file databases) that only ever sees committed data, so a read verb
 *   running while a write is in flight never sees a write that may still roll back.
 * - Prepared statements are cached by their SQL text: dispatch never compiles a statement twice.
 * - Durability `full` (the default) is synchronous=FULL: a receipt handed out survives a power cut
 *   (an fsync per COMMIT); `normal` (an explicit choice, `--durability normal`) is WAL +
 *   synchronous=NORMAL (a power cut may lose the last commits, never corrupt). Both group commit:
 *   concurrent writers share one COMMIT (each after the first in its own SAVEPOINT) and none is
 *   answered before that COMMIT returned (durable, in `full`).
 * - A write body runs under a time budget (`writeBudgetMs`, default 5000 ms): past it the body is
 *   abandoned (its handle closed), its work rolled back and the write rejected with
 *   StoreError('timeout'), so one body that waits cannot hold the single writer (every tenant's
 *   writes) for longer (spec/store.md §time-limits).
 * - WAL checkpoints (file databases): by default (`checkpoint: 'inline'`) SQLite's own
 *   auto-checkpoint every 1,000 pages runs inside a COMMIT. Opt-in `checkpoint: 'background'`
 *   runs them in a worker thread (checkpointer.ts; ≈ 7 MiB more RSS for its isolate): the writer's
 *   `wal_autocheckpoint` is raised to a 10,000-page backstop so a COMMIT no longer pays the
 *   checkpoint's fsyncs on the event loop. The worker starts after the first
 *   `checkpointStartAfterCommits` commits (short CLI commands never start it); until then, or if
 *   it fails (logged), the inline auto-checkpoint runs. A checkpoint is never needed for durability.
 * - The writer keeps statement journals in memory (`temp_store = MEMORY`). A multi-row INSERT or
 *   UPDATE that may fail a constraint keeps the original of every page it touches in the
 *   statement journal, which SQLite spills past 64 KiB to a temp file in /var/tmp: two pwrite
 *   calls a page, more than the WAL frames of the COMMIT (strace: ≈ 9 a read-audit INSERT of 8
 *   rows; ≈ 2.3 µs of a buffered read row's CPU). In memory it costs a page copy; it holds at
 *   most the pages one statement (or one group commit's savepoints) touched. Migrations run with
 *   the default (temp files), so CREATE INDEX on a large table sorts on disk, not in RAM.
 *
 * The parts: `connection.ts` (one connection, its statement cache, error mapping), `transaction.ts`
 * (the write body's handle, the mutex, afterCommit callbacks), `migrations.ts` (the migration
 * runner), `checkpointer.ts` (the background checkpoint worker).
 *
 * Spec: spec/store.md.
 */
import Database from 'better-sqlite3';
import type { Database as Db } from 'better-sqlite3';
import { ensurePrivateFile } from './private-file.ts';
import { resolve } from 'node:path';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { BACKSTOP_PAGES, Checkpointer, INLINE_PAGES, type CheckpointStats } from './checkpointer.ts';
import { Connection, toStoreError } from './connection.ts';
import { Mutex, runCallbacks, SqliteTx } from './transaction.ts';
import { applyMigrations } from './migrations.ts';
import {
  DEFAULT_WRITE_BUDGET_MS,
  StoreError,
  withWriteBudget,
  type Durability,
  type Migration,
  type Store,
  type StoreRead,
  type StoreTx,
  type WriteOptions,
} from '../store.ts';

/** Options of SqliteStore: the file (`:memory:` for a throwaway), durability and the write budget. spec/store.md */
export interface SqliteStoreOptions {
  /** File path, or ':memory:' (tests). */
  path: string;
  /**
   * 'full' (default: synchronous=FULL, a receipt handed out is durable; group commit shares the
   * fsync) or 'normal' (synchronous=NORMAL: the last commits may be lost on power loss).
   */
  durability?: Durability;
  /**
   * Time budget (ms) of a write body inside its transaction (DEFAULT_WRITE_BUDGET_MS = 5000);
   * 0 = none. `WriteOptions.budgetMs` overrides it per write. spec/store.md §time-limits.
   */
  writeBudgetMs?: number;
  /**
   * Milliseconds a write waits for another process's write lock (asynchronously, the event loop
   * stays free) before StoreError('busy'). Default 5000.
   */
  busyTimeoutMs?: number;
  /** Group commit: max writers sharing one COMMIT. Default 64. */
  groupCommitMax?: number;
  /**
   * Group commit: a group stops admitting writers this many milliseconds after its
   * BEGIN (bounds the wait of its first writer). Default 10.
   */
  groupCommitWindowMs?: number;
  /**
   * Group concurrent writers into one COMMIT (each after the first in its own SAVEPOINT).
   * Default: on in both modes — with 16 writers, durable mode grouped runs faster than normal
   * mode ungrouped, and normal mode's p99 is mostly lower grouped (BENCHMARKS.md, durable.*).
   * false = one transaction per write (one fsync each in durable mode), for comparison benchmarks.
   */
  groupCommit?: boolean;
  /**
   * WAL checkpoints of a file database. 'inline' (default): SQLite's auto-checkpoint every 1,000
   * pages inside the COMMIT that crossed it. 'background' (opt-in): a worker thread with its own
   * connection runs `wal_checkpoint(PASSIVE)` when the WAL grew and the writer's auto-checkpoint
   * is only a 10,000-page backstop — the checkpoint's fsyncs leave the event loop (confirmed
   * writes ≈ 8 % faster in BENCHMARKS.md §Writes) for ≈ 7 MiB more RSS (the worker's isolate),
   * which put `solid serve` over its 150 MiB budget (serve.rss), hence opt-in. Ignored in memory.
   */
  checkpoint?: 'background' | 'inline';
  /**
   * Start the checkpoint worker after this many commits (0 = on open). Default 64: a worker
   * started on open made an open + one write + close ≈ 57 ms instead of ≈ 1.3 ms (median of 10,
   * loaded 2-core host), a cost a short CLI command should not pay.
   */
  checkpointStartAfterCommits?: number;
  /** Checkpoint worker poll interval (ms). Default 100. */
  checkpointIntervalMs?: number;
  /** Tests: make the checkpoint worker fail ('start': before opening; 'checkpoint': on its first poll). */
  checkpointInjectFailure?: 'start' | 'checkpoint';
  /** Where a checkpoint worker failure is reported. Default: console.error. */
  onCheckpointError?: (err: Error) => void;
}

interface PendingWrite {
  fn: (tx: StoreTx) => Promise<unknown>;
  budgetMs: number;
  label: string | undefined;
  /** WriteOptions.durable: false = this writer alone would not need its commit fsynced. */
  relaxed: boolean;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/** The SQLite engine of the Store: one writer connection behind an async mutex, a reader of committed data, WAL. spec/store.md */
export class SqliteStore implements Store {
  readonly engine = 'sqlite' as const;
  readonly description: string;
  /** The database file (absolute), or undefined in memory. */
  readonly filePath: string | undefined;
  readonly #writer: Connection;
  readonly #reader: Connection;
  readonly #memory: boolean;
  readonly #mutex = new Mutex();
  readonly #durability: Durability;
  /** Commits may skip their fsync on request (WriteOptions.durable false): durability full, a file. */
  readonly #relaxable: boolean;
  readonly #groupMax: number;
  readonly #groupWindowMs: number;
  readonly #group: boolean;
  readonly #writeBudgetMs: number;
  readonly #busyTimeoutMs: number;
  readonly #events = new EventEmitter();
  #queue: PendingWrite[] = [];
  #commits = 0;
  #committedWrites = 0;
  #draining = false;
  #closed = false;
  readonly #checkpointMode: 'background' | 'inline' | 'off';
  readonly #checkpointStartAfter: number;
  readonly #checkpointOptions: SqliteStoreOptions;
  #checkpointer: Checkpointer | undefined;

  constructor(options: SqliteStoreOptions) {
    const path = options.path;
    this.#memory = path === ':memory:' || path === '';
    this.description = `sqlite:${this.#memory ? ':memory:' : path}`;
    this.filePath = this.#memory ? undefined : resolve(path);
    this.#durability = options.durability ?? 'full';
    this.#relaxable = this.#durability === 'full' && !this.#memory;
    this.#writeBudgetMs = options.writeBudgetMs ?? DEFAULT_WRITE_BUDGET_MS;
    this.#busyTimeoutMs = Math.max(0, options.busyTimeoutMs ?? 5000);
    this.#groupMax = Math.max(1, options.groupCommitMax ?? 64);
    this.#groupWindowMs = options.groupCommitWindowMs ?? 10;
    this.#group = options.groupCommit ?? true;
    this.#events.setMaxListeners(0);
    let db: Db;
    try {
      if (!this.#memory) ensurePrivateFile(path);
      db = new Database(this.#memory ? ':memory:' : path);
      db.pragma(`busy_timeout = ${this.#busyTimeoutMs}`);
      if (!this.#memory) db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${this.#durability === 'full' ? 'FULL' : 'NORMAL'}`);
      db.pragma('foreign_keys = ON');
      db.pragma('temp_store = MEMORY');
      // From here on the writer never waits synchronously: #begin waits asynchronously instead.
      db.pragma('busy_timeout = 0');
    } catch (err) {
      const mapped = toStoreError(err);
      if (mapped instanceof StoreError) {
        throw new StoreError('unavailable', `cannot open the database at ${path}: ${mapped.message}`, {
          cause: err,
        });
      }
      throw new StoreError('unavailable', `cannot open the database at ${path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    this.#writer = new Connection(db);
    if (this.#memory) {
      this.#reader = this.#writer;
    } else {
      const rdb = new Database(path, { readonly: true });
      rdb.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
      this.#reader = new Connection(rdb);
    }
    this.#checkpointMode = this.#memory ? 'off' : (options.checkpoint ?? 'inline');
    this.#checkpointStartAfter = Math.max(0, options.checkpointStartAfterCommits ?? 64);
    this.#checkpointOptions = options;
    if (this.#checkpointMode === 'background' && this.#checkpointStartAfter === 0) this.#startCheckpointer();
  }

  /**
   * Start the checkpoint worker and raise the writer's auto-checkpoint to the backstop. Until the
   * worker fails, the backstop only fires if PASSIVE checkpoints cannot keep up (long readers).
   */
  #startCheckpointer(): void {
    if (this.#checkpointer || this.#closed) return;
    const o = this.#checkpointOptions;
    try {
      this.#checkpointer = new Checkpointer({
        path: this.filePath!,
        intervalMs: o.checkpointIntervalMs,
        injectFailure: o.checkpointInjectFailure,
        onFailure: (err) => this.#checkpointFailed(err),
      });
      this.#writer.db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
    } catch (err) {
      this.#checkpointFailed(err as Error);
    }
  }

  /** The worker failed: log it, checkpoint inline again. Never throws (a dispatch must not fail). */
  #checkpointFailed(err: Error): void {
    try {
      (this.#checkpointOptions.onCheckpointError ?? ((e: Error) => console.error(`solid: ${e.message}`)))(
        err,
      );
    } catch {
      /* a logger that throws changes nothing */
    }
    if (this.#closed) return;
    try {
      this.#writer.db.pragma(`wal_autocheckpoint = ${INLINE_PAGES}`);
    } catch {
      /* the connection is closing */
    }
  }

  /** After each successful COMMIT: start the checkpoint worker once enough commits ran. */
  #afterCommit(): void {
    if (
      this.#checkpointMode === 'background' &&
      !this.#checkpointer &&
      this.#commits >= this.#checkpointStartAfter
    ) {
      this.#startCheckpointer();
    }
  }

  /**
   * Run `fn` with the checkpoint worker paused (no background checkpoint runs meanwhile), for
   * benchmarks that count WAL frames with `wal_autocheckpoint = 0`. Without a worker, just `fn`.
   */
  async withCheckpointsPaused<T>(fn: () => Promise<T>): Promise<T> {
    const c = this.#checkpointer;
    await c?.pause();
    try {
      return await fn();
    } finally {
      c?.resume();
    }
  }

  /**
   * The checkpoint worker's state, for tests and diagnostics: `mode` ('inline' when configured so,
   * in memory, before the worker started or after it failed), the writer's `wal_autocheckpoint`
   * (pages) and the worker's last reported counters.
   */
  get checkpointState(): {
    mode: 'background' | 'inline';
    autocheckpoint: number;
    stats: CheckpointStats | undefined;
  } {
    const running = this.#checkpointer !== undefined && !this.#checkpointer.failed;
    return {
      mode: running ? 'background' : 'inline',
      autocheckpoint: this.#closed
        ? 0
        : (this.#writer.db.pragma('wal_autocheckpoint', { simple: true }) as number),
      stats: this.#checkpointer?.stats,
    };
  }

  /**
   * Counters since open: COMMITs that succeeded and the writes they carried (in durable mode with
   * group commit, writes / commits is the mean group size). For benchmarks and tests.
   */
  get commitStats(): { commits: number; writes: number } {
    return { commits: this.#commits, writes: this.#committedWrites };
  }

  /** The raw writer handle, for the engine's own tools (bench, tamper tests). Not for the runtime. */
  get rawDatabase(): Db {
    return this.#writer.db;
  }

  async migrate(scope: string, migrations: readonly Migration[]): Promise<void> {
    const release = await this.#mutex.lock();
    try {
      // Start-up work: let SQLite wait for another process's lock for the whole busy timeout.
      this.#writer.db.pragma(`busy_timeout = ${this.#busyTimeoutMs}`);
      applyMigrations(this.#writer, scope, migrations);
    } finally {
      if (this.#writer.db.open) this.#writer.db.pragma('busy_timeout = 0');
      release();
    }
  }

  read<T>(fn: (q: StoreRead) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreError('unavailable', 'the store is closed'));
    if (!this.#memory) return fn(this.#reader);
    // One connection: wait for writes in flight so a read never sees uncommitted rows.
    return this.#mutex.lock().then(async (release) => {
      try {
        return await fn(this.#reader);
      } finally {
        release();
      }
    });
  }

  /** The durability mode this store opened with ('full' unless asked otherwise). */
  get durability(): Durability {
    return this.#durability;
  }

  write<T>(fn: (tx: StoreTx) => Promise<T>, options?: WriteOptions): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreError('unavailable', 'the store is closed'));
    const budgetMs = options?.budgetMs ?? this.#writeBudgetMs;
    const label = options?.label;
    const relaxed = options?.durable === false;
    if (this.#group) {
      return new Promise<T>((resolve, reject) => {
        this.#queue.push({
          fn,
          budgetMs,
          label,
          relaxed,
          resolve: resolve as (v: unknown) => void,
          reject,
        });
        if (!this.#draining) void this.#drain();
      });
    }
    return this.#mutex.lock().then(async (release) => {
      try {
        return await this.#atSafety(relaxed, () => this.#runOne(fn, budgetMs, label));
      } finally {
        release();
      }
    });
  }

  /**
   * `BEGIN IMMEDIATE`, waiting asynchronously while another process holds the file's write lock:
   * retried after 1, 2, 4 … 50 ms (each ±50 % jitter) until `busyTimeoutMs` has passed, then
   * StoreError('busy'). Never blocks the event loop (the writer's SQLite busy_timeout is 0).
   */
  async #begin(conn: Connection): Promise<void> {
    const started = performance.now();
    for (let attempt = 0; ; attempt++) {
      try {
        conn.control('BEGIN IMMEDIATE');
        return;
      } catch (err) {
        if (!(err instanceof StoreError) || err.code !== 'busy') throw err;
        const waited = performance.now() - started;
        if (waited >= this.#busyTimeoutMs || this.#closed) {
          throw new StoreError(
            'busy',
            `another process held the database's write lock for ${Math.round(waited)} ms (busy timeout ${this.#busyTimeoutMs} ms)`,
            { cause: err },
          );
        }
        const pause = Math.min(50, 2 ** attempt) * (0.5 + Math.random());
        await new Promise((r) => setTimeout(r, Math.min(pause, this.#busyTimeoutMs - waited)));
      }
    }
  }

  /** Tenants whose head a committed write locked since the last drain (drainLockedHeads). */
  readonly #lockedHeads = new Set<number>();
  readonly #noteHead = (companyId: number): void => {
    this.#lockedHeads.add(companyId);
  };

  /** The tenants whose head a committed write locked since the last call (Store.drainLockedHeads). */
  drainLockedHeads(): number[] {
    const ids = [...this.#lockedHeads];
    this.#lockedHeads.clear();
    return ids;
  }

  async #runOne<T>(fn: (tx: StoreTx) => Promise<T>, budgetMs: number, label?: string): Promise<T> {
    await this.#begin(this.#writer);
    const tx = new SqliteTx(this.#writer, this.#noteHead);
    let result: T;
    try {
      result = await withWriteBudget(fn(tx), budgetMs, () => tx.end(), label);
      tx.end();
      this.#writer.control('COMMIT');
      this.#commits++;
      this.#committedWrites++;
      if (this.#checkpointer === undefined) this.#afterCommit();
    } catch (err) {
      tx.end();
      if (this.#writer.db.inTransaction) {
        try {
          this.#writer.control('ROLLBACK');
        } catch {
          /* the connection rolled back on its own */
        }
      }
      throw toStoreError(err);
    }
    runCallbacks(tx.callbacks);
    return result;
  }

  /**
   * Group commit (the default in both modes). Holding the write lock, open one transaction and
   * run queued writers one after another, each after the first in its own SAVEPOINT (the first
   * is rolled back with the whole transaction, which holds nothing else yet); writers that
   * arrive while the group runs join it, until the queue is empty, `groupCommitMax` writers ran,
   * or `groupCommitWindowMs` passed since BEGIN. Then one COMMIT (one fsync at synchronous=FULL) and only after it returns
   * are the writers answered and their afterCommit callbacks run.
   *
   * - A writer that throws is rolled back to its savepoint and rejected at once (nothing of it
   *   can commit); the others are unaffected.
   * - If SQLite rolled the whole transaction back on its own (SQLITE_FULL, SQLITE_IOERR, …: the
   *   connection is no longer in a transaction) or COMMIT fails, every writer of the group that
   *   had succeeded is rejected with the mapped StoreError: none of them is answered as committed.
   * - A writer whose body awaits something slow holds the group (and the single write lock, as in
   *   normal mode): writers already done in that group wait for it before their COMMIT — at most
   *   its time budget, then it is rolled back (to its savepoint, or the whole group when first)
   *   and rejected with StoreError('timeout').
   */
  async #drain(): Promise<void> {
    this.#draining = true;
    const release = await this.#mutex.lock();
    try {
      while (this.#queue.length > 0) {
        if (this.#closed) {
          const e = new StoreError('unavailable', 'the store is closed');
          for (const w of this.#queue.splice(0)) w.reject(e);
          break;
        }
        // Let the callbacks already due in this turn of the event loop (e.g. receipts signed on the
        // thread pool, sockets read) run first: writers they start join this group instead of each
        // starting a group of one behind the previous fsync.
        await new Promise<void>((resolve) => setImmediate(resolve));
        // A relaxed group (its first writer's `durable: false`) takes relaxed writers only; a
        // durable one takes any (durable is the stronger promise).
        const relaxed = this.#queue[0]!.relaxed && this.#relaxable;
        await this.#atSafety(relaxed, () => this.#commitGroup(relaxed));
      }
    } finally {
      release();
      this.#draining = false;
      if (this.#queue.length > 0) void this.#drain();
    }
  }

  /**
   * Run `body` (one transaction: BEGIN … COMMIT or ROLLBACK) at synchronous=NORMAL when `relaxed`
   * (every writer in it said `durable: false`) and the store is at durability `full`: its COMMIT
   * appends its frames to the WAL without an fsync, and the next durable COMMIT's fsync of the WAL
   * covers them. SQLite refuses to change the safety level inside a transaction, so it is set
   * before BEGIN and put back to FULL after the transaction ends, whatever its outcome.
   */
  async #atSafety<T>(relaxed: boolean, body: () => Promise<T>): Promise<T> {
    if (!relaxed || !this.#relaxable) return body();
    this.#writer.control('PRAGMA synchronous = NORMAL');
    try {
      return await body();
    } finally {
      if (this.#writer.db.open) this.#writer.control('PRAGMA synchronous = FULL');
    }
  }

  async #commitGroup(relaxed: boolean): Promise<void> {
    const conn = this.#writer;
    try {
      await this.#begin(conn);
    } catch (err) {
      const e = toStoreError(err);
      for (const w of this.#queue.splice(0, this.#groupMax)) w.reject(e);
      return;
    }
    const started = performance.now();
    const done: Array<{ w: PendingWrite; value: unknown; tx: SqliteTx }> = [];
    let ran = 0;
    // Abort the group: roll back what is left of it and reject every writer that had succeeded.
    const abort = (err: unknown) => {
      if (conn.db.inTransaction) {
        try {
          conn.control('ROLLBACK');
        } catch {
          /* the connection rolled back on its own */
        }
      }
      const e = toStoreError(err);
      for (const d of done) d.w.reject(e);
    };
    while (
      this.#queue.length > 0 &&
      ran < this.#groupMax &&
      (ran === 0 || performance.now() - started < this.#groupWindowMs) &&
      (!relaxed || this.#queue[0]!.relaxed)
    ) {
      const w = this.#queue.shift()!;
      // The group's first writer needs no savepoint: rolling the whole transaction back undoes it
      // alone (a lone sequential writer then runs exactly BEGIN, its statements, COMMIT).
      const first = ran === 0;
      ran++;
      if (!first) {
        try {
          conn.control('SAVEPOINT w');
        } catch (err) {
          w.reject(toStoreError(err));
          abort(err);
          return;
        }
      }
      const tx = new SqliteTx(conn, this.#noteHead);
      let value: unknown;
      try {
        value = await withWriteBudget(w.fn(tx), w.budgetMs, () => tx.end(), w.label);
      } catch (err) {
        tx.end();
        if (!conn.db.inTransaction || first) {
          // SQLite rolled the whole transaction back (disk full, I/O error): the group is lost. Or
          // the first writer failed: nothing else is in the transaction yet; the queue goes on in a
          // new group.
          w.reject(toStoreError(err));
          abort(err);
          return;
        }
        try {
          conn.control('ROLLBACK TO w');
          conn.control('RELEASE w');
        } catch (rbErr) {
          w.reject(toStoreError(err));
          abort(rbErr);
          return;
        }
        w.reject(toStoreError(err));
        continue;
      }
      tx.end();
      if (!first) {
        try {
          conn.control('RELEASE w');
        } catch (err) {
          w.reject(toStoreError(err));
          abort(err);
          return;
        }
      }
      done.push({ w, value, tx });
    }
    try {
      conn.control('COMMIT');
    } catch (err) {
      abort(err);
      return;
    }
    this.#commits++;
    this.#committedWrites += done.length;
    if (this.#checkpointer === undefined) this.#afterCommit();
    for (const d of done) {
      runCallbacks(d.tx.callbacks);
      d.w.resolve(d.value);
    }
  }

  async ping(): Promise<void> {
    if (this.#closed) throw new StoreError('unavailable', 'the store is closed');
    this.#reader.getSync('SELECT 1');
  }

  waitFor(channel: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (woken: boolean) => {
        clearTimeout(timer);
        this.#events.off(channel, onWake);
        signal?.removeEventListener('abort', onAbort);
        resolve(woken);
      };
      const onWake = () => done(true);
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(false), Math.max(0, timeoutMs));
      this.#events.on(channel, onWake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  notify(channel: string): void {
    this.#events.emit(channel);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    const release = await this.#mutex.lock();
    this.#closed = true;
    try {
      // The worker closes its connection before ours: the last connection to close checkpoints
      // and removes the WAL, as without the worker.
      await this.#checkpointer?.stop();
      if (this.#reader !== this.#writer) this.#reader.db.close();
      this.#writer.db.close();
    } finally {
      release();
    }
  }
}
