/**
 * Background WAL checkpointer for SqliteStore file databases.
 *
 * SQLite's WAL auto-checkpoint (every 1,000 pages by default) runs inside the COMMIT that crossed
 * the threshold, on the thread that committed: its fsyncs (the WAL, then the database file) block
 * Node's event loop. Profiled, it was ≈ half of a confirmed write's COMMIT and ≈ 21 % of a
 * buffered read-audit row's CPU. This module moves it to a worker thread with its own connection
 * to the same file:
 *
 * - The worker polls every `intervalMs` (default 100 ms): `PRAGMA data_version` (a counter read,
 *   no I/O) tells it whether any connection committed since its last look; if so it runs
 *   `PRAGMA wal_checkpoint(PASSIVE)`, which never takes the write lock and never waits for a
 *   reader (writers keep appending meanwhile; the next writer restarts the WAL from its start once
 *   it was fully checkpointed). Polling costs the main thread nothing per commit (no message).
 * - The main connection's `wal_autocheckpoint` is raised to a backstop (`BACKSTOP_PAGES`, 10,000
 *   pages) that in steady state never fires; if PASSIVE cannot keep up (a long reader pins old
 *   frames) the backstop still bounds the WAL.
 * - The WAL file is never shrunk by PASSIVE (SQLite reuses it from its start). When it has grown
 *   beyond `truncateBytes` (default 4 MiB, about the default auto-checkpoint's 1,000 pages) and no
 *   connection committed for `idleMs` (default 1 s), the worker runs `wal_checkpoint(TRUNCATE)`
 *   with a zero busy timeout: it takes the write lock only if free, and gives up (SQLITE_BUSY is
 *   reported as `busy`, not waited for), so it never makes the main writer wait more than the
 *   truncation itself.
 * - A checkpoint is never needed for correctness: durability is the COMMIT's (WAL +
 *   synchronous=NORMAL or FULL), and a WAL left behind is replayed by the next open.
 * - Failure: if the worker cannot start, throws, or exits unexpectedly, `onFailure` is called
 *   (the store logs it and sets `wal_autocheckpoint` back to 1000, the old inline behaviour). A
 *   worker failure never fails a dispatch.
 * - Lifecycle: `stop()` posts 'stop', waits up to `stopTimeoutMs` for the worker to close its
 *   connection and exit, then terminates it. The worker is `unref`'d while it runs (it never
 *   keeps the process alive) and ref'd while it stops (so `close()` always resolves).
 *
 * The worker is a short CommonJS script run with `eval: true` (so the built package needs no
 * extra file in dist/); it requires better-sqlite3 by the path this module resolved.
 *
 * Spec: spec/store.md §durability.
 */
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';

/** The main connection's `wal_autocheckpoint` while the background checkpointer runs (pages). */
export const BACKSTOP_PAGES = 10_000;
/** SQLite's default `wal_autocheckpoint` (pages): restored when the checkpointer fails. */
export const INLINE_PAGES = 1000;

export interface CheckpointerOptions {
  /** The database file (absolute). */
  path: string;
  /** Poll interval (ms). Default 100. */
  intervalMs?: number;
  /** WAL file size (bytes) above which an idle WAL is truncated. Default 4 MiB. */
  truncateBytes?: number;
  /** No commit for this long (ms) counts as idle, for the truncation. Default 1000. */
  idleMs?: number;
  /** How long `stop()` waits for a clean exit before terminating the worker (ms). Default 2000. */
  stopTimeoutMs?: number;
  /** Tests: make the worker throw on its first poll ('checkpoint') or before opening ('start'). */
  injectFailure?: 'start' | 'checkpoint';
  /** Called once if the worker fails (not on a requested stop). */
  onFailure: (err: Error) => void;
}

/** Counters the worker reports after each checkpoint (tests, diagnostics). */
export interface CheckpointStats {
  /** PASSIVE checkpoints run. */
  passive: number;
  /** TRUNCATE checkpoints that succeeded. */
  truncated: number;
  /** Checkpoints that reported busy (a reader or writer held frames or the lock). */
  busy: number;
  /** The last PASSIVE checkpoint copied every frame of the WAL (the next writer restarts it). */
  complete: boolean;
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const o = workerData;
let db;
let timer;
let lastVersion = -1;
let lastChange = Date.now();
const stats = { passive: 0, truncated: 0, busy: 0, complete: false };
function fail(e) {
  clearInterval(timer);
  try { if (db) db.close(); } catch {}
  parentPort.postMessage({ fatal: String((e && e.stack) || e) });
  parentPort.close();
}
function walSize() {
  try { return fs.statSync(o.path + '-wal').size; } catch { return 0; }
}
function poll() {
  try {
    if (o.injectFailure === 'checkpoint') throw new Error('injected checkpoint failure');
    const v = db.pragma('data_version', { simple: true });
    const now = Date.now();
    if (v !== lastVersion) {
      lastVersion = v;
      lastChange = now;
      const r = db.pragma('wal_checkpoint(PASSIVE)')[0];
      stats.passive++;
      if (r && r.busy) stats.busy++;
      stats.complete = !!r && !r.busy && r.log === r.checkpointed;
      parentPort.postMessage({ stats });
    } else if (now - lastChange >= o.idleMs && walSize() > o.truncateBytes) {
      lastChange = now;
      try {
        const r = db.pragma('wal_checkpoint(TRUNCATE)')[0];
        if (r && r.busy) stats.busy++; else stats.truncated++;
      } catch (e) {
        if (!e || e.code !== 'SQLITE_BUSY') throw e;
        stats.busy++;
      }
      parentPort.postMessage({ stats });
    }
  } catch (e) {
    fail(e);
  }
}
try {
  if (o.injectFailure === 'start') throw new Error('injected start failure');
  const Database = require(o.sqlite);
  db = new Database(o.path, { fileMustExist: true });
  db.pragma('busy_timeout = 0');
  db.pragma('wal_autocheckpoint = 0');
  timer = setInterval(poll, o.intervalMs);
  parentPort.on('message', (m) => {
    if (m === 'pause') {
      clearInterval(timer);
      parentPort.postMessage({ paused: true });
      return;
    }
    if (m === 'resume') {
      clearInterval(timer);
      timer = setInterval(poll, o.intervalMs);
      return;
    }
    if (m !== 'stop') return;
    clearInterval(timer);
    try { db.close(); } catch {}
    parentPort.postMessage({ stopped: true });
    parentPort.close();
  });
  parentPort.postMessage({ ready: true });
} catch (e) {
  fail(e);
}
`;

let sqliteEntry: string | undefined;

/** A running background checkpointer. Create with {@link startCheckpointer}. */
export class Checkpointer {
  readonly #worker: Worker;
  readonly #stopTimeoutMs: number;
  #stopping: Promise<void> | undefined;
  #failed = false;
  #stats: CheckpointStats = { passive: 0, truncated: 0, busy: 0, complete: false };
  readonly #onPaused: Array<() => void> = [];

  constructor(options: CheckpointerOptions) {
    sqliteEntry ??= createRequire(import.meta.url).resolve('better-sqlite3');
    this.#stopTimeoutMs = options.stopTimeoutMs ?? 2000;
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        path: options.path,
        sqlite: sqliteEntry,
        intervalMs: options.intervalMs ?? 100,
        truncateBytes: options.truncateBytes ?? 4 * 1024 * 1024,
        idleMs: options.idleMs ?? 1000,
        injectFailure: options.injectFailure,
      },
      // Not the parent's --import tsx (or any loader): the script is plain CommonJS.
      execArgv: [],
    });
    const fail = (err: Error) => {
      if (this.#failed || this.#stopping) return;
      this.#failed = true;
      options.onFailure(err);
    };
    this.#worker.on('message', (m: { fatal?: string; stats?: CheckpointStats; paused?: boolean }) => {
      if (m.paused) this.#onPaused.splice(0).forEach((f) => f());
      else if (m.fatal !== undefined)
        fail(new Error(`checkpointer worker failed: ${m.fatal.split('\n')[0]}`));
      else if (m.stats) this.#stats = { ...m.stats };
    });
    this.#worker.on('error', (err) => fail(err));
    this.#worker.on('exit', (code) => {
      if (!this.#stopping) fail(new Error(`checkpointer worker exited (code ${code})`));
    });
    // After the listeners: adding a 'message' listener refs the worker's port again.
    this.#worker.unref();
  }

  /** True once the worker failed (the store then checkpoints inline). */
  get failed(): boolean {
    return this.#failed;
  }

  /** The worker's last reported counters. */
  get stats(): CheckpointStats {
    return { ...this.#stats };
  }

  /**
   * Pause polling (no checkpoint runs once this resolves, until {@link resume}); resolves at once
   * if the worker failed or is stopping. For benchmarks that count WAL frames.
   */
  pause(): Promise<void> {
    if (this.#failed || this.#stopping) return Promise.resolve();
    return new Promise<void>((resolve) => {
      // Ref'd until the reply: an unref'd worker would let the process end with pause() pending.
      this.#worker.ref();
      this.#onPaused.push(() => {
        if (!this.#stopping) this.#worker.unref();
        resolve();
      });
      this.#worker.postMessage('pause');
    });
  }

  /** Resume polling after {@link pause}. */
  resume(): void {
    if (!this.#failed && !this.#stopping) this.#worker.postMessage('resume');
  }

  /**
   * Stop the worker: it closes its connection and exits; after `stopTimeoutMs` it is terminated.
   * Never rejects; idempotent.
   */
  stop(): Promise<void> {
    this.#stopping ??= new Promise<void>((resolve) => {
      const w = this.#worker;
      const timer = setTimeout(() => {
        void w.terminate().then(
          () => resolve(),
          () => resolve(),
        );
      }, this.#stopTimeoutMs);
      // Keep the process alive until the worker is gone: an unref'd worker and timer would let a
      // script's last `await store.close()` end the process with close never resolved.
      w.ref();
      w.once('exit', () => {
        clearTimeout(timer);
        this.#onPaused.splice(0).forEach((f) => f());
        resolve();
      });
      try {
        w.postMessage('stop');
      } catch {
        /* already gone: 'exit' fired or will */
      }
      if (w.threadId === -1) {
        clearTimeout(timer);
        resolve();
      }
    });
    return this.#stopping;
  }
}
