/**
 * What the /metrics gauges read from the store at scrape time: approvals waiting and the audit
 * chain's seq and the outbox's dead letters, per tenant (spec/transports.md §metrics).
 */
import type { Store } from '../../store/store.ts';
import { countWaitingByTenant } from '../consent/approvals-store.ts';
import { deadLetterCounts } from '../ledger/write/outbox.ts';

/** Per tenant: approvals pending and unexpired at `now`, and the audit chain head's seq. */
export interface StoreGauges {
  pending: Array<{ company_id: number; n: number }>;
  heads: Array<{ company_id: number; audit_seq: number }>;
  /** Outbox messages in the `dead` state (docs/authoring.md §8(c)). */
  dead: Array<{ company_id: number; n: number }>;
}

/** Read the gauges in one read snapshot. Throws StoreError when the store is down. */
export async function readStoreGauges(store: Store, now: Date): Promise<StoreGauges> {
  return store.read(async (q) => ({
    pending: await countWaitingByTenant(q, now.toISOString()),
    heads: (
      await q.all<{ company_id: number; audit_seq: number }>('SELECT company_id, audit_seq FROM tenant_heads')
    ).map((r) => ({ company_id: Number(r.company_id), audit_seq: Number(r.audit_seq) })),
    dead: await deadLetterCounts(q),
  }));
}
