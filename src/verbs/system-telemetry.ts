/**
 * system.telemetry (shape telemetry): the runtime's own health over a recent window, so an agent or
 * operator can tell whether the runtime itself is the problem.
 *
 * - dispatch / latency_ms / by_reason: this tenant's calls on this node over window_seconds (10 s to
 *   1 h, to the 10-second slot), from the in-memory collector (runtime/observe/telemetry.ts);
 *   runtime_latency_ms gives the same percentiles for every tenant on the node (no counts).
 * - store: engine, database size in bytes (SQLite page_count × page_size, PostgreSQL
 *   pg_database_size; left out when the engine cannot tell), this tenant's audit rows (its chain
 *   head's seq: exact, O(1)) and event rows (max − min seq of its gap-free stream, O(log n)).
 * - queues: this tenant's undelivered outbox messages, its dead letters (count and the newest ten,
 *   no payload), this node's buffered read-audit rows and reputation deltas.
 *
 * Reasons: invalid_input (window_seconds outside 10–3600). Spec: spec/shapes.md §telemetry.
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import { outboxState } from '../runtime/ledger/write/outbox.ts';
import type { Queryable } from '../store/store.ts';
import { TELEMETRY_MAX_WINDOW_SECONDS } from '../runtime/observe/telemetry.ts';

async function databaseSize(q: Queryable, engine: string): Promise<number | undefined> {
  try {
    const sql =
      engine === 'sqlite'
        ? 'SELECT page_count * page_size AS size FROM pragma_page_count(), pragma_page_size()'
        : 'SELECT pg_database_size(current_database()) AS size';
    const r = await q.get<{ size: number | string }>(sql);
    const n = Number(r?.size);
    return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

export const systemTelemetry = defineSystemVerb<{ window_seconds?: number }>({
  name: 'system.telemetry',
  title: 'Runtime telemetry',
  description:
    "The runtime's health for this tenant over the last window_seconds (default 300, max 3600): dispatch counts and error/denial rates, latency p50/p95/p99 (ms), store size, queue backlogs (outbox, dead letters, buffered audit rows). Call it when calls fail or slow down, to tell a runtime problem from a verb problem.",
  shape: 'telemetry',
  category: 'system',
  input: {
    type: 'object',
    properties: {
      window_seconds: {
        type: 'integer',
        minimum: 10,
        maximum: TELEMETRY_MAX_WINDOW_SECONDS,
        default: 300,
        description: 'Length of the window ending now, in seconds.',
      },
    },
    additionalProperties: false,
  },
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const rt = ctx.runtime;
    const companyId = ctx.principal.company_id;
    const windowSeconds = args.window_seconds ?? 300;
    const nowMs = Date.now();
    const mine = rt.observers.telemetry.snapshot(companyId, windowSeconds, nowMs);
    const all = rt.observers.telemetry.snapshot(null, windowSeconds, nowMs);
    const head = await ctx.db.get<{ audit_seq: number }>(
      'SELECT audit_seq FROM tenant_heads WHERE company_id = ?',
      [companyId],
    );
    const ev = await ctx.db.get<{ lo: number | null; hi: number | null }>(
      'SELECT MIN(seq) AS lo, MAX(seq) AS hi FROM events WHERE company_id = ?',
      [companyId],
    );
    const outbox = await outboxState(ctx.db, companyId);
    const size = await databaseSize(ctx.db, rt.store.engine);
    return {
      generated_at: new Date(nowMs).toISOString(),
      window_seconds: windowSeconds,
      scope: 'tenant',
      dispatch: mine.dispatch,
      latency_ms: mine.latency_ms,
      by_reason: mine.by_reason,
      runtime_latency_ms: all.latency_ms,
      store: {
        engine: rt.store.engine,
        ...(size !== undefined ? { size_bytes: size } : {}),
        audit_rows: head === undefined ? 0 : Number(head.audit_seq),
        event_rows: ev?.lo === null || ev?.lo === undefined ? 0 : Number(ev.hi) - Number(ev.lo) + 1,
      },
      queues: {
        outbox_pending: outbox.pending,
        outbox_dead: outbox.dead,
        dead_letters: outbox.dead_letters,
        read_audit_buffered: rt.auditBuffer.size,
        reputation_buffered: rt.observers.reputation.buffered,
      },
    };
  },
});
