/**
 * The platform log (table `platform_audit`, migration scope `platform`): one append-only hash
 * chain of every provisioning call — completed, denied or failed — and of the operator's platform
 * key changes. It belongs to no tenant, so it outlives the tenants it names: the evidence of a
 * deletion (which export covered which head) stays here after the tenant's rows are gone.
 *
 * Row hash: SHA-256 hex of prev_hash ‖ canonical JSON (RFC 8785) of the row's other columns; the
 * first row's prev_hash is 64 zeros. Appends lock the one `platform_head` row (PostgreSQL: FOR
 * UPDATE; SQLite: the single writer). No secret is ever written (not a key's secret, not an
 * enrolment token). Spec: spec/platform.md §audit.
 */
import canonicalize from 'canonicalize';
import type { Queryable, Store, StoreTx } from '../store/store.ts';
import { parseJson } from '../store/store.ts';
import { sha256Hex } from '../runtime/sha256.ts';

/** One provisioning event as appended. */
export interface PlatformEvent {
  /** The platform key that acted (null: the operator at the CLI, or an unnamed bad credential). */
  key_id: string | null;
  /** The verb (`platform.tenants.create`) or operator action (`platform.keys.create`). */
  action: string;
  status: 'completed' | 'denied' | 'failed';
  reason?: string | null;
  company_id?: number | null;
  external_id?: string | null;
  request_data: Record<string, unknown>;
  result_data?: Record<string, unknown> | null;
  now: Date;
}

/** A stored row of the platform log. */
export interface PlatformLogRow {
  seq: number;
  created_at: string;
  key_id: string | null;
  action: string;
  status: string;
  reason: string | null;
  company_id: number | null;
  external_id: string | null;
  request_data: Record<string, unknown>;
  result_data: Record<string, unknown> | null;
  prev_hash: string;
  row_hash: string;
}

function hashOf(r: Omit<PlatformLogRow, 'row_hash'>): string {
  const { prev_hash, ...rest } = r;
  return sha256Hex(prev_hash + (canonicalize(rest) ?? ''));
}

/** Append one row inside `tx` (the transaction of the change it records). Returns the row. */
export async function appendPlatformLog(
  tx: StoreTx,
  engine: Store['engine'],
  e: PlatformEvent,
): Promise<PlatformLogRow> {
  const head = await tx.get<{ seq: number | string; hash: string }>(
    `SELECT seq, hash FROM platform_head WHERE id = 1${engine === 'postgres' ? ' FOR UPDATE' : ''}`,
  );
  const seq = Number(head!.seq) + 1;
  const base: Omit<PlatformLogRow, 'row_hash'> = {
    seq,
    created_at: e.now.toISOString(),
    key_id: e.key_id,
    action: e.action.slice(0, 200),
    status: e.status,
    reason: e.reason ?? null,
    company_id: e.company_id ?? null,
    external_id: e.external_id ?? null,
    request_data: e.request_data,
    result_data: e.result_data ?? null,
    prev_hash: head!.hash,
  };
  const row: PlatformLogRow = { ...base, row_hash: hashOf(base) };
  await tx.run(
    'INSERT INTO platform_audit (seq, created_at, key_id, action, status, reason, company_id, external_id, request_data, result_data, prev_hash, row_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    [
      row.seq,
      row.created_at,
      row.key_id,
      row.action,
      row.status,
      row.reason,
      row.company_id,
      row.external_id,
      JSON.stringify(row.request_data),
      row.result_data === null ? null : JSON.stringify(row.result_data),
      row.prev_hash,
      row.row_hash,
    ],
  );
  await tx.run('UPDATE platform_head SET seq = ?, hash = ? WHERE id = 1', [row.seq, row.row_hash]);
  return row;
}

function rowOf(r: Record<string, unknown>): PlatformLogRow {
  return {
    seq: Number(r.seq),
    created_at: String(r.created_at),
    key_id: (r.key_id as string | null) ?? null,
    action: String(r.action),
    status: String(r.status),
    reason: (r.reason as string | null) ?? null,
    company_id: r.company_id === null || r.company_id === undefined ? null : Number(r.company_id),
    external_id: (r.external_id as string | null) ?? null,
    request_data: parseJson<Record<string, unknown>>(r.request_data) ?? {},
    result_data: parseJson<Record<string, unknown>>(r.result_data) ?? null,
    prev_hash: String(r.prev_hash),
    row_hash: String(r.row_hash),
  };
}

/** Rows of the platform log after `afterSeq`, oldest first (at most `limit`), optionally of one tenant. */
export async function readPlatformLog(
  q: Queryable,
  o: { afterSeq?: number; limit?: number; companyId?: number } = {},
): Promise<PlatformLogRow[]> {
  const params: unknown[] = [o.afterSeq ?? 0];
  let sql = 'SELECT * FROM platform_audit WHERE seq > ?';
  if (o.companyId !== undefined) {
    sql += ' AND company_id = ?';
    params.push(o.companyId);
  }
  sql += ' ORDER BY seq LIMIT ?';
  params.push(o.limit ?? 1000);
  return (await q.all<Record<string, unknown>>(sql, params)).map(rowOf);
}

/**
 * Walk the whole platform log and check every link and hash, and that the head row names the last
 * row. Returns the rows checked and the first broken seq (null when the chain holds).
 */
export async function verifyPlatformLog(store: Store): Promise<{ rows: number; broken_at: number | null }> {
  return store.read(async (q) => {
    let prev = '0'.repeat(64);
    let after = 0;
    let n = 0;
    for (;;) {
      const page = await readPlatformLog(q, { afterSeq: after, limit: 1000 });
      for (const row of page) {
        const { row_hash, ...base } = row;
        if (row.seq !== after + 1 || row.prev_hash !== prev || hashOf(base) !== row_hash)
          return { rows: n, broken_at: row.seq };
        prev = row_hash;
        after = row.seq;
        n++;
      }
      if (page.length < 1000) break;
    }
    const head = await q.get<{ seq: number | string; hash: string }>(
      'SELECT seq, hash FROM platform_head WHERE id = 1',
    );
    if (Number(head?.seq) !== after || head?.hash !== prev) return { rows: n, broken_at: after + 1 };
    return { rows: n, broken_at: null };
  });
}
