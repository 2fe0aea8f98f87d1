/**
 * Anchors: the signed checkpoint heads of every tenant, with the public keys that verify them,
 * published on a schedule to sinks the database's owner does not control — a directory (another
 * machine's mount, a WORM bucket synced from it) or an HTTP endpoint. `solid audit verify
 * --anchors DIR` then trusts only those keys and checks that every anchored head is still in the
 * log: a rewrite before the last anchor, or a rollback (an older backup restored, the tail cut
 * with its checkpoints), is caught even when the database's own checkpoints and keys were
 * replaced. Spec: spec/audit.md §anchors.
 *
 * An anchor document (JSON): `{ "solid_anchor": 1, "published_at": ISO-8601, "checkpoints":
 * [{ company_id, seq, head_hash, created_at, kid, signature }], "keys": [public JWK] }` — nothing
 * secret: hashes, signatures and public keys.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Store } from '../../../store/store.ts';
import { databaseKeys, latestCheckpoints, type CheckpointRecord } from '../verify/verify.ts';
import type { PublicJwk } from './tenant-keys.ts';

/** One publication of the anchored heads. */
export interface AnchorDocument {
  solid_anchor: 1;
  published_at: string;
  checkpoints: CheckpointRecord[];
  keys: PublicJwk[];
}

/** Where anchors go. `publish` rejects on failure (the publisher logs it and retries next turn). */
export interface AnchorSink {
  /** For logs: `dir:/path` or the URL's origin and path (never its credentials). */
  readonly name: string;
  publish(doc: AnchorDocument): Promise<void>;
}

/** The anchor document of a store now: the latest checkpoint of each tenant and every public key. */
export async function anchorDocument(store: Store, now: Date): Promise<AnchorDocument> {
  const { checkpoints, keys } = await store.read(async (q) => ({
    checkpoints: await latestCheckpoints(q),
    keys: await databaseKeys(q),
  }));
  return { solid_anchor: 1, published_at: now.toISOString(), checkpoints, keys };
}

/**
 * A directory sink: each publication is a new file `anchor-<published_at>-<random>.json`, written
 * to a temp name and renamed (a reader never sees half a file); files are never overwritten or
 * deleted by the runtime. The folder is created when missing.
 */
export function directorySink(dir: string): AnchorSink {
  return {
    name: `dir:${dir}`,
    async publish(doc) {
      mkdirSync(dir, { recursive: true });
      const stamp = doc.published_at.replace(/[:.]/g, '-');
      const name = `anchor-${stamp}-${randomBytes(3).toString('hex')}.json`;
      const tmp = join(dir, `.${name}.tmp`);
      writeFileSync(tmp, JSON.stringify(doc, null, 2) + '\n', { flag: 'wx' });
      renameSync(tmp, join(dir, name));
    },
  };
}

/**
 * An HTTP sink: POST the document as JSON to `url` (`Authorization: Bearer <token>` when a token
 * is given, e.g. from SOLID_ANCHOR_TOKEN), bounded by `timeoutMs` (default 5000). A status other
 * than 2xx rejects. The receiver keeps each document (as files for `audit verify --anchors`).
 */
export function httpSink(url: string, options: { token?: string; timeoutMs?: number } = {}): AnchorSink {
  const u = new URL(url);
  const shown = `${u.protocol}//${u.host}${u.pathname}`;
  return {
    name: shown,
    async publish(doc) {
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(options.token !== undefined && options.token !== ''
            ? { authorization: `Bearer ${options.token}` }
            : {}),
        },
        body: JSON.stringify(doc),
        signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
      });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status < 200 || res.status > 299) throw new Error(`${shown} answered HTTP ${res.status}`);
    },
  };
}

/** What identifies a publication's content (heads and keys), to skip publishing the same again. */
function contentKey(doc: AnchorDocument): string {
  return JSON.stringify([
    doc.checkpoints.map((c) => [c.company_id, c.seq, c.signature]),
    doc.keys.map((k) => k.kid),
  ]);
}

/**
 * Publishes the anchor document to every sink every `intervalMs` (default 300 000) when the
 * anchored heads or keys changed since the last successful publication to that sink; a sink that
 * fails is retried on the next turn (logged at warn, never thrown). `publishNow()` runs one turn
 * (the server calls it at start and, after the closing checkpoints, at shutdown).
 */
export class AnchorPublisher {
  readonly #store: Store;
  readonly #sinks: readonly AnchorSink[];
  readonly #clock: () => Date;
  readonly #logger: Pick<Logger, 'warn' | 'info'>;
  readonly #intervalMs: number;
  readonly #last = new Map<AnchorSink, string>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(
    store: Store,
    sinks: readonly AnchorSink[],
    options: { clock?: () => Date; logger: Pick<Logger, 'warn' | 'info'>; intervalMs?: number },
  ) {
    this.#store = store;
    this.#sinks = sinks;
    this.#clock = options.clock ?? (() => new Date());
    this.#logger = options.logger;
    this.#intervalMs = options.intervalMs ?? 300_000;
  }

  /** Start the schedule (the timer does not keep the process alive). */
  start(): void {
    if (this.#timer !== undefined || this.#sinks.length === 0) return;
    this.#timer = setInterval(() => void this.publishNow(), this.#intervalMs);
    this.#timer.unref();
  }

  /** Stop the schedule; resolves when a turn in progress has ended. */
  async stop(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** One turn: publish to each sink whose last publication differs. Never rejects. */
  publishNow(): Promise<void> {
    const turn = (this.#running ?? Promise.resolve()).then(() => this.#turn());
    this.#running = turn;
    return turn;
  }

  async #turn(): Promise<void> {
    let doc: AnchorDocument;
    try {
      doc = await anchorDocument(this.#store, this.#clock());
    } catch (err) {
      this.#logger.warn({ err }, 'anchors: could not read the checkpoints to publish');
      return;
    }
    if (doc.checkpoints.length === 0) return;
    const key = contentKey(doc);
    for (const sink of this.#sinks) {
      if (this.#last.get(sink) === key) continue;
      try {
        await sink.publish(doc);
        this.#last.set(sink, key);
        this.#logger.info({ sink: sink.name, tenants: doc.checkpoints.length }, 'anchors published');
      } catch (err) {
        this.#logger.warn(
          { sink: sink.name, err: (err as Error).message },
          'anchors: publication failed; retried next turn',
        );
      }
    }
  }
}
