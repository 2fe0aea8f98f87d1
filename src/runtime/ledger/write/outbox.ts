/**
 * The outbox's SQL: queue a message inside a write's transaction, claim due messages with a lease,
 * and record each attempt's outcome (delivered, retry later, dead). The delivery loop that drives
 * these (timers, backoff, deadlines) is src/runtime/delivery/outbox-worker.ts.
 *
 * States: `pending` (due at `deliver_after`; while leased, `deliver_after` is the lease's end and
 * `lease_token` names the claim), `delivered`, `dead` (after the last allowed attempt).
 *
 * Spec: spec/store.md (outbox rows are written in the effect's transaction, nothing half-written),
 * docs/authoring.md §8(c).
 */
import { randomUUID } from 'node:crypto';
import type { Queryable, Store, StoreTx } from '../../../store/store.ts';

/** How long a delivery pass owns an outbox row it claimed (ms), unless the worker is told otherwise. */
export const OUTBOX_LEASE_MS = 60_000;

/** Delivers one outbox row after commit; `meta.runtime` lets a pack's handler record the outcome (its own store write). */
export type OutboxHandlerOf<R> = (
  payload: Record<string, unknown>,
  meta: {
    company_id: number;
    audit_id: number | null;
    outbox_id: number;
    runtime: R;
    /**
     * The message's idempotency key, the same on every attempt (at-least-once delivery: pass it to
     * the receiver, e.g. as its Idempotency-Key, so a redelivery is recognised).
     */
    idempotency_key: string;
    /** 1 for the first attempt. */
    attempt: number;
    /** Aborted at the attempt's deadline (and when the runtime closes): pass it to fetch. */
    signal: AbortSignal;
  },
) => Promise<void>;

/** One claimed outbox message. */
export interface OutboxMessage {
  outbox_id: number;
  company_id: number;
  kind: string;
  payload: Record<string, unknown>;
  audit_id: number | null;
  /** Attempts made before this one. */
  attempts: number;
  /** The idempotency key (stored message id, or `outbox-<id>` for rows queued before ids existed). */
  message_id: string;
  lease_token: string;
}

/** A new message id: the idempotency key a receiver sees (`msg_` + a random UUID without dashes). */
export function newMessageId(): string {
  return `msg_${randomUUID().replaceAll('-', '')}`;
}

/**
 * Queue one message inside the caller's transaction (`q` must be the write's transaction, so a
 * rolled-back write leaves no message). Due at once; its message id is `messageId` when given (a
 * key the receiver can derive, such as an audit row's), else generated here. Returns its outbox_id.
 */
export async function queueOutboxMessage(
  q: Queryable,
  m: {
    companyId: number;
    kind: string;
    payload: Record<string, unknown>;
    auditId: number | null;
    now: Date;
    messageId?: string;
  },
): Promise<number> {
  const nowIso = m.now.toISOString();
  const row = await q.get<{ outbox_id: number | string }>(
    `INSERT INTO outbox (company_id, kind, payload, audit_id, status, created_at, deliver_after, message_id) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?) RETURNING outbox_id`,
    [
      m.companyId,
      m.kind,
      JSON.stringify(m.payload),
      m.auditId,
      nowIso,
      nowIso,
      m.messageId ?? newMessageId(),
    ],
  );
  return Number(row?.outbox_id);
}

function parseRow(r: Record<string, unknown>, token: string): OutboxMessage {
  const id = Number(r.outbox_id);
  return {
    outbox_id: id,
    company_id: Number(r.company_id),
    kind: String(r.kind),
    payload:
      typeof r.payload === 'string'
        ? (JSON.parse(r.payload) as Record<string, unknown>)
        : (r.payload as Record<string, unknown>),
    audit_id: r.audit_id === null || r.audit_id === undefined ? null : Number(r.audit_id),
    attempts: Number(r.attempts),
    message_id: typeof r.message_id === 'string' && r.message_id !== '' ? r.message_id : `outbox-${id}`,
    lease_token: token,
  };
}

/**
 * Claim up to `limit` due pending messages of the given kinds in one statement: each gets a lease
 * (`deliver_after` = now + leaseMs, a fresh `lease_token`). On PostgreSQL the candidates are
 * locked with `FOR UPDATE SKIP LOCKED`, so two nodes claiming at once take disjoint rows and never
 * wait on each other; SQLite has one writer. A claimed row whose holder stops is due again when
 * its lease ends (at-least-once).
 */
export async function claimDueMessages(
  store: Store,
  now: Date,
  kinds: readonly string[],
  leaseMs: number,
  limit: number,
): Promise<OutboxMessage[]> {
  if (kinds.length === 0 || limit <= 0) return [];
  const token = randomUUID();
  const nowIso = now.toISOString();
  const lease = new Date(now.getTime() + leaseMs).toISOString();
  const lock = store.engine === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : '';
  const marks = kinds.map(() => '?').join(', ');
  const rows = await store.write(
    (tx) =>
      tx.all<Record<string, unknown>>(
        `UPDATE outbox SET deliver_after = ?, lease_token = ?
           WHERE outbox_id IN (SELECT outbox_id FROM outbox WHERE status = 'pending' AND deliver_after <= ? AND kind IN (${marks})
                               ORDER BY deliver_after, outbox_id LIMIT ?${lock})
           RETURNING outbox_id, company_id, kind, payload, audit_id, attempts, message_id`,
        [lease, token, nowIso, ...kinds, limit],
      ),
    { label: 'outbox claim' },
  );
  return rows.map((r) => parseRow(r, token)).sort((a, b) => a.outbox_id - b.outbox_id);
}

/**
 * Mark a claimed message delivered, inside `tx` (so a transactional handler's own writes commit
 * with the mark). False when the claim was lost (its lease ended and another pass took the row).
 */
export async function markDelivered(tx: StoreTx, m: OutboxMessage, now: Date): Promise<boolean> {
  const r = await tx.run(
    `UPDATE outbox SET status = 'delivered', delivered_at = ?, attempts = attempts + 1, lease_token = NULL
       WHERE outbox_id = ? AND status = 'pending' AND lease_token = ?`,
    [now.toISOString(), m.outbox_id, m.lease_token],
  );
  return r.changes === 1;
}

/**
 * Record a failed attempt inside `tx`: pending again at `retryAt`, or `dead` when `dead` is set.
 * `error` is kept (first 500 characters) for the operator. False when the claim was lost.
 */
export async function markFailed(
  tx: StoreTx,
  m: OutboxMessage,
  error: string,
  outcome: { dead: true } | { dead: false; retryAt: Date },
): Promise<boolean> {
  const r = await tx.run(
    `UPDATE outbox SET attempts = attempts + 1, last_error = ?, status = ?, deliver_after = ?, lease_token = NULL
       WHERE outbox_id = ? AND status = 'pending' AND lease_token = ?`,
    [
      error.slice(0, 500),
      outcome.dead ? 'dead' : 'pending',
      outcome.dead ? new Date(0).toISOString() : outcome.retryAt.toISOString(),
      m.outbox_id,
      m.lease_token,
    ],
  );
  return r.changes === 1;
}

/** Give a claimed message back without counting an attempt (the runtime is closing): due at `now`. */
export async function releaseClaim(store: Store, m: OutboxMessage, now: Date): Promise<void> {
  await store.write((tx) =>
    tx.run(
      `UPDATE outbox SET deliver_after = ?, lease_token = NULL WHERE outbox_id = ? AND status = 'pending' AND lease_token = ?`,
      [now.toISOString(), m.outbox_id, m.lease_token],
    ),
  );
}

/** When the next pending message of these kinds is due (lease ends included), or undefined. */
export async function nextDueAt(store: Store, kinds: readonly string[]): Promise<Date | undefined> {
  if (kinds.length === 0) return undefined;
  const row = await store.read((q) =>
    q.get<{ at: string | null }>(
      `SELECT MIN(deliver_after) AS at FROM outbox WHERE status = 'pending' AND kind IN (${kinds.map(() => '?').join(', ')})`,
      [...kinds],
    ),
  );
  return row?.at === null || row?.at === undefined ? undefined : new Date(row.at);
}

/** A dead letter as the dashboard, `solid outbox` and the telemetry verb show it (no payload). */
export interface DeadLetter {
  outbox_id: number;
  kind: string;
  attempts: number;
  last_error: string | null;
  created_at: string;
  message_id: string;
}

/** A tenant's pending and dead message counts and its newest dead letters (at most `limit`). */
export async function outboxState(
  q: Queryable,
  companyId: number,
  limit = 10,
): Promise<{ pending: number; dead: number; dead_letters: DeadLetter[] }> {
  const counts = await q.all<{ status: string; n: number }>(
    `SELECT status, COUNT(*) AS n FROM outbox WHERE company_id = ? AND status IN ('pending', 'dead') GROUP BY status`,
    [companyId],
  );
  const dead = await q.all<Record<string, unknown>>(
    `SELECT outbox_id, kind, attempts, last_error, created_at, message_id FROM outbox
       WHERE company_id = ? AND status = 'dead' ORDER BY outbox_id DESC LIMIT ?`,
    [companyId, limit],
  );
  const n = (s: string) => Number(counts.find((c) => c.status === s)?.n ?? 0);
  return {
    pending: n('pending'),
    dead: n('dead'),
    dead_letters: dead.map((r) => ({
      outbox_id: Number(r.outbox_id),
      kind: String(r.kind),
      attempts: Number(r.attempts),
      last_error: (r.last_error as string | null) ?? null,
      created_at: String(r.created_at),
      message_id:
        typeof r.message_id === 'string' && r.message_id !== ''
          ? r.message_id
          : `outbox-${String(r.outbox_id)}`,
    })),
  };
}

/** Dead letters per tenant, for the /metrics gauge. */
export function deadLetterCounts(q: Queryable): Promise<Array<{ company_id: number; n: number }>> {
  return q
    .all<{ company_id: number; n: number }>(
      `SELECT company_id, COUNT(*) AS n FROM outbox WHERE status = 'dead' GROUP BY company_id`,
    )
    .then((rows) => rows.map((r) => ({ company_id: Number(r.company_id), n: Number(r.n) })));
}
