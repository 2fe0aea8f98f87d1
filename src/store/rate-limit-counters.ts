/**
 * Fixed-window rate-limit counters shared by every node on one database (table
 * `rate_limit_counters`, runtime migration v7; src/transports/http/rate-limit.ts). Times in epoch ms.
 */
import type { Store } from './store.ts';

/**
 * Count one hit of `bucket` in the window [start, end) and return the window's count so far,
 * in one upsert. Throws StoreError when the store is down (the caller decides to let the request through).
 */
export async function countHit(store: Store, bucket: string, start: number, end: number): Promise<number> {
  const row = await store.write((tx) =>
    tx.get<{ count: number | string }>(
      'INSERT INTO rate_limit_counters (bucket, window_start, window_end, count) VALUES (?, ?, ?, 1) ' +
        'ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_counters.count + 1 RETURNING count',
      [bucket, start, end],
    ),
  );
  return Number(row?.count ?? 1);
}
