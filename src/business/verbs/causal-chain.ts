/**
 * Causal chains for the pack's explain verbs: the domain events about a set of entities (the
 * seed's history and everything the verbs emitted since, from the runtime's `events` table) and
 * the write attempts recorded against the main entity (audit_log rows that are not reads:
 * completed, denied, failed, pending — refused calls matched on their arguments, since they never
 * reached the handler that names the entity), merged oldest first. Each item has `timestamp`, `action`
 * (event type or verb name), `actor` and a plain-language `detail`.
 *
 * Everything is filtered by the caller's company_id; another tenant's entity yields no item.
 * Spec: spec/shapes.md §explain.
 */
import { parseJson, type Queryable } from '../../store/store.ts';
import { toDomainEvent } from '../../runtime/ledger/write/events.ts';
import { formatCents } from '../../runtime/consent/typed-phrase.ts';
import type { DomainEvent } from '../../spec/types.ts';
import { businessTime } from './business-time.ts';

export interface ChainItem {
  timestamp: string;
  action: string;
  actor: string;
  detail: string;
  entity_type: string;
  entity_id: string;
  source: 'event' | 'audit';
  seq?: number;
  audit_id?: number;
  status?: string;
}

/** Entities whose events belong in a chain: a type and its ids. */
export interface EntityRef {
  type: string;
  ids: readonly (number | string)[];
}

const IN_CHUNK = 400;

/** Events of the given entities of one tenant, oldest first (by seq). */
export async function loadEntityEvents(
  q: Queryable,
  companyId: number,
  refs: readonly EntityRef[],
): Promise<DomainEvent[]> {
  const out: DomainEvent[] = [];
  for (const ref of refs) {
    const ids = [...new Set(ref.ids.map(String))];
    for (let i = 0; i < ids.length; i += IN_CHUNK) {
      const chunk = ids.slice(i, i + IN_CHUNK);
      const rows = await q.all<Record<string, unknown>>(
        `SELECT company_id, seq, type, entity_type, entity_id, payload, occurred_at, audit_id, actor FROM events
          WHERE company_id = ? AND entity_type = ? AND entity_id IN (${chunk.map(() => '?').join(', ')}) ORDER BY seq`,
        [companyId, ref.type, ...chunk],
      );
      for (const r of rows) out.push(toDomainEvent(r));
    }
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/** What identifies the main entity of a chain in the audit log. */
export interface MainEntity {
  type: string;
  id: number | string;
  /**
   * Argument names carrying the entity's id (e.g. contact_id, customer_id): refused or failed
   * calls never reached the handler that names their entity, so they are matched on their args.
   */
  argKeys?: readonly string[];
  /** Verbs whose refused calls concern the entity whatever their args (e.g. the one droplet). */
  verbs?: readonly string[];
}

const UNATTRIBUTED_SCAN = 500;

function auditItem(r: Record<string, unknown>, entityType: string, entityId: string): ChainItem {
  return {
    timestamp: String(r.created_at),
    action: String(r.action_type),
    actor:
      r.user_id === null
        ? 'anonymous'
        : `user:${Number(r.user_id)}${r.agent_type ? ` via ${String(r.agent_type)}` : ''}`,
    detail: auditDetail(String(r.status), (r.reason as string | null) ?? null),
    entity_type: entityType,
    entity_id: entityId,
    source: 'audit',
    audit_id: Number(r.audit_id),
    status: String(r.status),
  };
}

/**
 * Write attempts (not reads) recorded against the main entity, oldest first: rows naming it, and
 * recent refused / failed / pending rows (no entity recorded) whose args name it.
 */
async function loadAuditItems(
  q: Queryable,
  companyId: number,
  main: MainEntity,
  limit: number,
): Promise<ChainItem[]> {
  const id = String(main.id);
  const cols = 'audit_id, created_at, action_type, user_id, agent_type, status, reason, consent_class';
  const named = await q.all<Record<string, unknown>>(
    `SELECT ${cols} FROM audit_log WHERE company_id = ? AND entity_type = ? AND entity_id = ? ORDER BY audit_id DESC LIMIT ?`,
    [companyId, main.type, id, limit],
  );
  const items = named.filter((r) => r.consent_class !== 'READ').map((r) => auditItem(r, main.type, id));
  if ((main.argKeys?.length ?? 0) > 0 || (main.verbs?.length ?? 0) > 0) {
    // `status <> 'completed'` is the status index's own predicate (a partial index, runtime
    // migration 9): written out so both planners use it for the IN list.
    const loose = await q.all<Record<string, unknown>>(
      `SELECT ${cols}, request_data FROM audit_log WHERE company_id = ? AND entity_id IS NULL AND status IN ('denied', 'failed', 'pending', 'rejected') AND status <> 'completed' AND category <> 'auth'
        ORDER BY audit_id DESC LIMIT ?`,
      [companyId, UNATTRIBUTED_SCAN],
    );
    for (const r of loose) {
      if (r.consent_class === 'READ') continue;
      const args = parseJson<Record<string, unknown>>(r.request_data) ?? {};
      const byArg = (main.argKeys ?? []).some((k) => args[k] !== undefined && String(args[k]) === id);
      if (byArg || (main.verbs ?? []).includes(String(r.action_type)))
        items.push(auditItem(r, main.type, id));
    }
  }
  return items.sort((a, b) => a.audit_id! - b.audit_id!);
}

function auditDetail(status: string, reason: string | null): string {
  if (status === 'completed') return 'verb call completed';
  if (status === 'pending') return 'verb call waiting for human consent';
  if (status === 'denied') return `verb call refused (${reason ?? 'denied'})`;
  return reason === null ? `verb call ${status}` : `verb call ${status} (${reason})`;
}

/**
 * The chain: events of `refs` plus the write attempts recorded against `main`, oldest first
 * (an audit row before the events it caused). At most `limit` newest items are kept.
 */
export async function buildCausalChain(
  q: Queryable,
  companyId: number,
  main: MainEntity,
  refs: readonly EntityRef[],
  limit = 200,
): Promise<ChainItem[]> {
  const events = await loadEntityEvents(q, companyId, refs);
  const items: ChainItem[] = events.map((e) => ({
    timestamp: e.occurred_at,
    action: e.type,
    actor: e.actor ?? 'system',
    detail: describeEvent(e),
    entity_type: e.entity_type,
    entity_id: String(e.entity_id),
    source: 'event',
    seq: e.seq,
    ...(e.audit_id !== null && e.audit_id !== undefined ? { audit_id: e.audit_id } : {}),
  }));
  items.push(...(await loadAuditItems(q, companyId, main, limit)));
  items.sort(
    (a, b) =>
      (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0) ||
      (a.audit_id ?? Number.MAX_SAFE_INTEGER) - (b.audit_id ?? Number.MAX_SAFE_INTEGER) ||
      (a.source === b.source ? 0 : a.source === 'audit' ? -1 : 1) ||
      (a.seq ?? 0) - (b.seq ?? 0),
  );
  return items.length > limit ? items.slice(items.length - limit) : items;
}

const money = (v: unknown): string =>
  typeof v === 'number' && Number.isSafeInteger(v) ? formatCents(v) : String(v);
const str = (v: unknown): string =>
  v === null || v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v);

/** One event in plain language ("moved deal 49 from qualified to proposal_sent"). */
export function describeEvent(e: DomainEvent): string {
  const p = e.payload;
  const id = e.entity_id;
  switch (e.type) {
    case 'employee.hired':
      return `hired ${str(p.name)} as ${str(p.title)} (role ${str(p.role)})`;
    case 'employee.role_changed':
      return `changed employee ${id}'s role from ${str(p.previous_role)} to ${str(p.role)}`;
    case 'employee.status_changed':
      return `${p.active === true ? 'reactivated' : 'deactivated'} employee ${id}`;
    case 'contact.created':
      return `created contact "${str(p.name)}" (${str(p.kind)}${p.source ? `, source ${str(p.source)}` : ''})`;
    case 'contact.updated': {
      const changes = (p.changes ?? {}) as Record<string, { from: unknown; to: unknown }>;
      const parts = Object.entries(changes).map(([k, c]) => `${k} ${str(c.from)} → ${str(c.to)}`);
      return parts.length > 0 ? `updated contact ${id}: ${parts.join('; ')}` : `updated contact ${id}`;
    }
    case 'contact.status_changed':
      return `status ${str(p.from)} → ${str(p.to)}${p.reason ? ` (${str(p.reason)})` : ''}`;
    case 'contact.erased':
      return `erased the personal data of contact ${id} (GDPR); ${str(p.invoices_retained)} invoices and ${str(p.payments_retained)} payments kept for the legal retention period`;
    case 'contact.deleted':
      return `deleted contact ${id} (undo of its creation)`;
    case 'note.added':
      return `added note ${id} to contact ${str(p.contact_id)}`;
    case 'note.deleted':
      return `removed note ${id} from contact ${str(p.contact_id)}`;
    case 'deal.created':
      return `opened deal ${id} "${str(p.title)}" worth ${money(p.amount_cents)} in stage ${str(p.stage)}`;
    case 'deal.stage_changed':
      return `moved deal ${id} from ${str(p.from_stage)} to ${str(p.to_stage)}`;
    case 'deal.stage_reverted':
      return `put deal ${id} back from ${str(p.from_stage)} to ${str(p.to_stage)} (revert)`;
    case 'deal.updated': {
      const changes = (p.changes ?? {}) as Record<string, { from: unknown; to: unknown }>;
      return `updated deal ${id}: ${Object.entries(changes)
        .map(
          ([k, c]) =>
            `${k} ${k.endsWith('_cents') ? money(c.from) : str(c.from)} → ${k.endsWith('_cents') ? money(c.to) : str(c.to)}`,
        )
        .join('; ')}`;
    }
    case 'deal.deleted':
      return `deleted deal ${id} "${str(p.title)}" (undo of its creation)`;
    case 'quote.requested':
      return `quote requested for "${str(p.service)}" by ${str(p.contact_name)} (deal ${str(p.deal_id)})`;
    case 'appointment.scheduled':
      return `booked ${str(p.service)} with technician ${str(p.technician_user_id)} for ${typeof p.starts_at === 'string' ? businessTime(p.starts_at) : '—'}`;
    case 'appointment.rescheduled':
      return `moved appointment ${id} from ${typeof p.previous_starts_at === 'string' ? businessTime(p.previous_starts_at) : '—'} to ${typeof p.starts_at === 'string' ? businessTime(p.starts_at) : '—'}${p.technician_user_id !== p.previous_technician_user_id && p.technician_user_id !== undefined ? ` with technician ${str(p.technician_user_id)}` : ''}`;
    case 'appointment.completed':
      return `completed ${str(p.service ?? 'the visit')}`;
    case 'appointment.no_show':
      return 'customer was not there (no-show)';
    case 'appointment.cancelled':
      return `cancelled appointment ${id}${p.reason ? `: ${str(p.reason)}` : ''}`;
    case 'appointment.reinstated':
      return `reinstated appointment ${id} (the cancellation was undone)`;
    case 'appointment.outcome_reverted':
      return `set appointment ${id} back to scheduled (its ${str(p.previous_outcome)} outcome was undone)`;
    case 'part.used':
      return `used ${str(p.quantity)} × ${str(p.sku)} on appointment ${str(p.appointment_id)}`;
    case 'part.usage_reverted':
      return `returned ${str(p.quantity)} × ${str(p.sku)} to stock (usage on appointment ${str(p.appointment_id)} undone)`;
    case 'part.stock_adjusted':
      return `stock of ${str(p.sku)} ${str(p.previous_quantity)} → ${str(p.quantity)}${p.reason ? ` (${str(p.reason)})` : ''}`;
    case 'invoice.created':
      return `drafted invoice #${str(p.number)} for ${money(p.amount_cents)}${p.issued ? ' and issued it' : ''}`;
    case 'invoice.issued':
      return `issued invoice #${str(p.number)} for ${money(p.amount_cents)}${p.due_at ? `, due ${str(p.due_at)}` : ''}`;
    case 'invoice.reopened':
      return `set invoice #${str(p.number)} back to ${str(p.status)} (revert)`;
    case 'invoice.paid':
      return `invoice #${str(p.number)} paid in full (${money(p.amount_cents)})`;
    case 'invoice.voided':
      return `voided invoice #${str(p.number)}`;
    case 'payment.captured':
      return `captured ${money(p.amount_cents)} by ${str(p.method)} (charge ${str(p.charge_ref)}) on invoice #${str(p.invoice_number)}`;
    case 'payment.failed':
      return `a ${money(p.amount_cents)} ${str(p.method)} payment on invoice #${str(p.invoice_number)} failed (${str(p.failure_reason)})`;
    case 'refund.issued':
      return `refunded ${money(p.amount_cents)} on charge ${str(p.charge_ref)}${p.reason ? ` (${str(p.reason)})` : ''}`;
    case 'email.queued':
      return `queued email "${str(p.subject)}"`;
    case 'email.sent':
      return `sent email "${str(p.subject)}"`;
    case 'email.failed':
      return `email "${str(p.subject)}" failed${p.error ? ` (${str(p.error)})` : ''}`;
    case 'email.cancelled':
      return `recalled email ${id} before delivery`;
    case 'kb_article.published':
      return `published article "${str(p.title)}"`;
    case 'kb_article.updated':
      return `updated article "${str(p.title)}"`;
    case 'kb_article.deleted':
      return `removed article "${str(p.title)}"`;
    case 'droplet.provisioned':
      return `provisioned a ${str(p.size)} droplet (${str(p.size_slug)}) in ${str(p.region)} with ${str(p.workers)} worker(s)`;
    case 'droplet.resized':
      return `resized the droplet from ${str(p.previous_size)} (${str(p.previous_size_slug)}) to ${str(p.size)} (${str(p.size_slug)})`;
    case 'droplet.workers_scaled':
      return `scaled celery workers from ${str(p.previous_workers)} to ${str(p.workers)}`;
    case 'subscription.started':
      return `started the ${str(p.tier)} plan with ${str(p.seats)} seats`;
    case 'subscription.tier_changed':
      return `changed the plan from ${str(p.previous_tier)} to ${str(p.tier)}`;
    case 'action.reverted':
      return `reverted ${str(p.verb)} #${str(p.audit_id)}: ${str(p.revert_action)}`;
    default: {
      const parts = Object.entries(p)
        .slice(0, 5)
        .map(([k, v]) => `${k}=${str(v).slice(0, 60)}`);
      return parts.length > 0 ? `${e.type}: ${parts.join(', ')}` : e.type;
    }
  }
}

/** "user:2 via claude" → "user 2 (via claude)", "system:billing" → "the billing system", "customer:42" → "the customer (contact 42)". */
export function describeActor(actor: string): string {
  const m = /^(user|customer|system):([^ ]+)(?: via (.+))?$/.exec(actor);
  if (m === null) return actor;
  if (m[1] === 'system') return `the ${m[2]} system`;
  if (m[1] === 'customer') return `the customer (contact ${m[2]})`;
  return `user ${m[2]}${m[3] ? ` (via ${m[3]})` : ''}`;
}

/** A chain item as returned on the wire (no internal members). */
export function chainForOutput(items: readonly ChainItem[]): Array<Record<string, unknown>> {
  return items.map((i) => ({
    timestamp: i.timestamp,
    action: i.action,
    actor: i.actor,
    detail: i.detail,
    entity_type: i.entity_type,
    entity_id: i.entity_id,
    source: i.source,
    ...(i.audit_id !== undefined ? { audit_id: i.audit_id } : {}),
    ...(i.seq !== undefined ? { seq: i.seq } : {}),
    ...(i.status !== undefined ? { status: i.status } : {}),
  }));
}
