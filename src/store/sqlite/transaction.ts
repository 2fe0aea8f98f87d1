/**
 * The pieces of a SqliteStore write: the transaction handle a write body gets (`SqliteTx`: the
 * Queryable methods, the tenant chain head, audit ids, afterCommit callbacks), the callbacks run
 * after COMMIT, and the FIFO mutex that keeps one writer (and, in memory, one reader) at a time.
 * BEGIN / SAVEPOINT / COMMIT and group commit are driven by SqliteStore itself.
 *
 * Spec: spec/store.md.
 */
import type { Connection } from './connection.ts';
import { StoreError, type Row, type RunResult, type StoreTx, type TenantHead } from '../store.ts';

const GENESIS_HASH = '0'.repeat(64);

/**
 * Run afterCommit callbacks of a committed transaction. A throwing callback cannot undo the
 * commit, so it must not turn the write into a failure nor skip the callbacks after it: it is
 * reported as a process warning.
 */
export function runCallbacks(callbacks: ReadonlyArray<() => void>): void {
  for (const cb of callbacks) {
    try {
      cb();
    } catch (err) {
      process.emitWarning(`afterCommit callback failed: ${(err as Error)?.message ?? String(err)}`, {
        type: 'SolidStoreWarning',
      });
    }
  }
}

/** The transaction handle given to `write` bodies. */
export class SqliteTx implements StoreTx {
  readonly callbacks: Array<() => void> = [];
  #done = false;
  /** `onHead`: told (after commit) of each tenant whose head this transaction locked. */
  constructor(
    readonly conn: Connection,
    private readonly onHead?: (companyId: number) => void,
  ) {}
  #check(): void {
    if (this.#done) throw new StoreError('unknown', 'store transaction used after it ended');
  }
  end(): void {
    this.#done = true;
  }
  get<T = Row>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    this.#check();
    return this.conn.get<T>(sql, params);
  }
  all<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    this.#check();
    return this.conn.all<T>(sql, params);
  }
  run(sql: string, params?: readonly unknown[]): Promise<RunResult> {
    this.#check();
    return this.conn.run(sql, params);
  }
  readonly #heads = new Map<number, TenantHead>();
  async lockTenantHead(companyId: number): Promise<TenantHead> {
    this.#check();
    // The write lock (BEGIN IMMEDIATE) already serializes every writer on this file. The head is
    // read once per transaction; callers move it (audit/event appends) through the returned object.
    let head = this.#heads.get(companyId);
    if (head !== undefined) return head;
    head = this.conn.getSync<TenantHead>(
      'SELECT company_id, audit_seq, audit_hash, event_seq FROM tenant_heads WHERE company_id = ?',
      [companyId],
    );
    if (head === undefined) {
      this.conn.runSync(
        'INSERT INTO tenant_heads (company_id, audit_seq, audit_hash, event_seq) VALUES (?, 0, ?, 0)',
        [companyId, GENESIS_HASH],
      );
      head = { company_id: companyId, audit_seq: 0, audit_hash: GENESIS_HASH, event_seq: 0 };
    }
    this.#heads.set(companyId, head);
    const onHead = this.onHead;
    if (onHead !== undefined) {
      // Told only when the head moved (a checkpoint locks a head and moves nothing).
      const seq = head.audit_seq;
      const events = head.event_seq;
      const h = head;
      this.callbacks.push(() => {
        if (h.audit_seq !== seq || h.event_seq !== events) onHead(companyId);
      });
    }
    return head;
  }
  #nextAuditId = 0;
  async nextAuditId(): Promise<number> {
    this.#check();
    if (this.#nextAuditId === 0) {
      this.#nextAuditId = this.conn.getSync<{ next: number }>(
        'SELECT COALESCE(MAX(audit_id), 0) + 1 AS next FROM audit_log',
      )!.next;
    }
    return this.#nextAuditId++;
  }
  async nextAuditIds(n: number): Promise<number[]> {
    if (n <= 0) return [];
    const first = await this.nextAuditId();
    this.#nextAuditId = first + n;
    const ids = new Array<number>(n);
    for (let i = 0; i < n; i++) ids[i] = first + i;
    return ids;
  }
  afterCommit(fn: () => void): void {
    this.callbacks.push(fn);
  }
}

/** A tiny FIFO async mutex. */
export class Mutex {
  #tail: Promise<void> = Promise.resolve();
  #locked = 0;
  get pending(): number {
    return this.#locked;
  }
  lock(): Promise<() => void> {
    this.#locked++;
    let release!: () => void;
    const next = new Promise<void>((resolve) => (release = resolve));
    const prev = this.#tail;
    this.#tail = prev.then(() => next);
    return prev.then(() => () => {
      this.#locked--;
      release();
    });
  }
}
