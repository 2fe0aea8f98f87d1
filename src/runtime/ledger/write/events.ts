/**
 * Domain events: every change a verb makes emits events that commit in the same store
 * transaction as the change, numbered per tenant (`seq`, +1, assigned under the tenant head lock
 * so commit order equals seq order). Subscribers poll by seq; explain builds causal chains from them.
 *
 * Spec: spec/shapes.md §subscribe, spec/audit.md §events.
 */
import type { Queryable, StoreTx } from '../../../store/store.ts';
import { parseJson } from '../../../store/store.ts';
import type { DomainEvent } from '../../../spec/types.ts';
import type { EmittedEvent } from '../../verb.ts';

/** Channel name the store notifies after events of a tenant commit. */
export function eventsChannel(companyId: number): string {
  return `events:${companyId}`;
}

/** Append events for one tenant inside `tx`; returns them with their seq. */
export async function appendEvents(
  tx: StoreTx,
  companyId: number,
  events: readonly (EmittedEvent & { occurred_at?: string; actor?: string | null })[],
  meta: { auditId: number | null; actor: string | null; occurredAt: string },
): Promise<DomainEvent[]> {
  if (events.length === 0) return [];
  const head = await tx.lockTenantHead(companyId);
  let seq = head.event_seq;
  const out: DomainEvent[] = [];
  for (const e of events) {
    seq += 1;
    const ev: DomainEvent = {
      seq,
      type: e.type,
      entity_type: e.entity_type,
      entity_id: e.entity_id,
      payload: e.payload ?? {},
      occurred_at: e.occurred_at ?? meta.occurredAt,
      audit_id: meta.auditId,
      actor: e.actor ?? meta.actor,
    };
    await tx.run(
      'INSERT INTO events (company_id, seq, type, entity_type, entity_id, payload, occurred_at, audit_id, actor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [
        companyId,
        seq,
        ev.type,
        ev.entity_type,
        String(ev.entity_id),
        JSON.stringify(ev.payload),
        ev.occurred_at,
        ev.audit_id,
        ev.actor,
      ],
    );
    out.push(ev);
  }
  await tx.run('UPDATE tenant_heads SET event_seq = ? WHERE company_id = ?', [seq, companyId]);
  head.event_seq = seq;
  return out;
}

/** Normalize an events row from either engine. */
export function toDomainEvent(r: Record<string, unknown>): DomainEvent {
  const id = r.entity_id as string;
  return {
    seq: Number(r.seq),
    type: r.type as string,
    entity_type: r.entity_type as string,
    entity_id: /^-?\d+$/.test(id) && id.length < 16 ? Number(id) : id,
    payload: parseJson<Record<string, unknown>>(r.payload) ?? {},
    occurred_at: r.occurred_at as string,
    audit_id: r.audit_id === null || r.audit_id === undefined ? null : Number(r.audit_id),
    actor: (r.actor as string | null) ?? null,
  };
}

/** Events of one entity, oldest first (explain). */
export async function entityEvents(
  q: Queryable,
  companyId: number,
  entityType: string,
  entityId: number | string,
  limit = 200,
): Promise<DomainEvent[]> {
  const rows = await q.all<Record<string, unknown>>(
    'SELECT * FROM events WHERE company_id = ? AND entity_type = ? AND entity_id = ? ORDER BY seq DESC LIMIT ?',
    [companyId, entityType, String(entityId), limit],
  );
  return rows.map(toDomainEvent).reverse();
}
