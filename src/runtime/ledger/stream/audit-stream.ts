/**
 * Streaming the audit log out as it is written (spec/audit.md §streaming): the per-sink cursors
 * and the reads both sinks share. A sink is the OTLP logs exporter (`otlp`, otlp-logs.ts) or one
 * webhook endpoint subscribed to `audit.row` (`webhook:<endpoint_id>`, webhook-sink.ts).
 *
 * - Only committed rows are streamed: a sink reads the log after commit, by `seq`. Rows of one
 *   tenant commit in `seq` order (appended under the tenant head lock), so what a reader sees is a
 *   prefix of the chain; buffered read rows are streamed once their batch is flushed.
 * - Each sink's position is a row of `audit_stream_cursors` (tenant, sink, `through_seq`), moved
 *   by compare-and-set in the transaction that records the hand-over: a restart resumes after
 *   `through_seq`, with no gap; a crash between a send and its record sends those rows again
 *   (at-least-once; receivers drop duplicates by `audit_id`).
 * - A new sink starts at the tenant's oldest kept row, so the receiver can check the chain from
 *   there (`prev_hash` of the first row received is the genesis hash, or the row before an
 *   archived boundary).
 */
import type { Queryable } from '../../../store/store.ts';
import { AUDIT_COLUMNS } from '../write/audit.ts';
import { exportedRow } from '../verify/export.ts';

/** The webhook event type of one streamed audit row (docs/webhooks.md §audit.row). */
export const AUDIT_ROW_EVENT = 'audit.row';

/** A sink's cursor row. */
export interface StreamCursor {
  company_id: number;
  sink: string;
  /** The last seq handed over (0: nothing yet). */
  through_seq: number;
  /** Webhook sinks: the outbox message carrying `through_seq`'s row. */
  outbox_id: number | null;
}

/** The cursor of `sink` for a tenant; a fresh one (through_seq 0) when the sink never ran. */
export async function readCursor(q: Queryable, companyId: number, sink: string): Promise<StreamCursor> {
  const r = await q.get<Record<string, unknown>>(
    'SELECT through_seq, outbox_id FROM audit_stream_cursors WHERE company_id = ? AND sink = ?',
    [companyId, sink],
  );
  return {
    company_id: companyId,
    sink,
    through_seq: r === undefined ? 0 : Number(r.through_seq),
    outbox_id: r?.outbox_id === null || r?.outbox_id === undefined ? null : Number(r.outbox_id),
  };
}

/**
 * Move a cursor from `from.through_seq` to `throughSeq` inside `q` (a write transaction). False
 * when another pass moved it first (the caller rolls back: its rows were or will be sent by the
 * other pass).
 */
export async function advanceCursor(
  q: Queryable,
  from: StreamCursor,
  throughSeq: number,
  outboxId: number | null,
  now: Date,
): Promise<boolean> {
  const upd = await q.run(
    'UPDATE audit_stream_cursors SET through_seq = ?, outbox_id = ?, updated_at = ? WHERE company_id = ? AND sink = ? AND through_seq = ?',
    [throughSeq, outboxId, now.toISOString(), from.company_id, from.sink, from.through_seq],
  );
  if (upd.changes === 1) return true;
  if (from.through_seq !== 0) return false;
  const ins = await q.run(
    'INSERT INTO audit_stream_cursors (company_id, sink, through_seq, outbox_id, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (company_id, sink) DO NOTHING',
    [from.company_id, from.sink, throughSeq, outboxId, now.toISOString()],
  );
  return ins.changes === 1;
}

/**
 * Up to `limit` committed rows of a tenant after `afterSeq`, oldest first, each as the export
 * writes it (every column, integers as numbers: verify/export.ts exportedRow), so a receiver
 * re-hashes it exactly as `audit verify --export` does.
 */
export async function auditRowsAfter(
  q: Queryable,
  companyId: number,
  afterSeq: number,
  limit: number,
): Promise<Array<Record<string, unknown>>> {
  const rows = await q.all<Record<string, unknown>>(
    `SELECT ${AUDIT_COLUMNS.join(', ')} FROM audit_log WHERE company_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
    [companyId, afterSeq, limit],
  );
  return rows.map(exportedRow);
}

/** Tenants whose log is ahead of `sink`'s cursor: company_id and the head seq. */
export async function tenantsBehind(
  q: Queryable,
  sink: string,
): Promise<Array<{ company_id: number; head_seq: number; through_seq: number }>> {
  const rows = await q.all<Record<string, unknown>>(
    `SELECT h.company_id, h.audit_seq, COALESCE(c.through_seq, 0) AS through_seq FROM tenant_heads h
       LEFT JOIN audit_stream_cursors c ON c.company_id = h.company_id AND c.sink = ?
       WHERE h.audit_seq > COALESCE(c.through_seq, 0) ORDER BY h.company_id`,
    [sink],
  );
  return rows.map((r) => ({
    company_id: Number(r.company_id),
    head_seq: Number(r.audit_seq),
    through_seq: Number(r.through_seq),
  }));
}
