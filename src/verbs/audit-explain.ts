/**
 * audit.explain (shape explain): why an entity is the way it is — the causal chain from the audit
 * log (every write attempt recorded against the entity: completed, denied, failed, pending) and the
 * domain events about it, oldest first, with the current state when the last event carries one and
 * a plain-language summary. Works for any entity_type/entity_id of any pack.
 *
 * Chain order: by time; an audit row comes before the events it caused (same audit_id), events by
 * seq. Reads of the entity are not causes and are left out (consent class READ). At most `limit`
 * newest items of each source are read (one index range scan each).
 * current_state: the last event's payload.current_state, .state or .after (an object), if any.
 * Reasons: not_found (no audit row and no event mentions the entity), invalid_input.
 * Spec: spec/shapes.md §explain.
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import { VerbError } from '../runtime/errors.ts';
import { entityEvents } from '../runtime/ledger/write/events.ts';
import type { DomainEvent } from '../spec/types.ts';

interface ChainItem {
  timestamp: string;
  action: string;
  actor: string;
  detail: string;
  source: 'audit' | 'event';
  audit_id?: number;
  seq?: number;
  status?: string;
}

function short(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s === undefined ? 'null' : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function eventDetail(e: DomainEvent): string {
  const parts = Object.entries(e.payload)
    .filter(([k]) => k !== 'current_state' && k !== 'state' && k !== 'after')
    .slice(0, 6)
    .map(([k, v]) => `${k}=${short(v)}`);
  return parts.length > 0 ? `${e.type}: ${parts.join(', ')}` : e.type;
}

function auditDetail(status: string, reason: string | null): string {
  switch (status) {
    case 'completed':
      return 'completed';
    case 'pending':
      return 'waiting for human consent';
    case 'denied':
      return `refused (${reason ?? 'denied'})`;
    case 'rolled_back':
      return 'rolled back';
    default:
      return reason === null ? status : `${status} (${reason})`;
  }
}

function stateOf(e: DomainEvent): Record<string, unknown> | undefined {
  for (const k of ['current_state', 'state', 'after']) {
    const v = e.payload[k];
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  }
  return undefined;
}

export const auditExplain = defineSystemVerb<{
  entity_type: string;
  entity_id: string | number;
  limit?: number;
}>({
  name: 'audit.explain',
  title: 'Explain an entity',
  description:
    'Explain why an entity (any entity_type and entity_id: deal, invoice, contact, droplet…) is in its present state: the verb calls recorded against it (refused and pending included) and its domain events, oldest first, each with timestamp, action, actor and detail; current_state when known; a plain-language reasoning. Call it before acting on something you did not create.',
  shape: 'explain',
  category: 'audit',
  input: {
    type: 'object',
    properties: {
      entity_type: {
        type: 'string',
        minLength: 1,
        maxLength: 100,
        description: 'Kind of entity (deal, invoice…).',
      },
      entity_id: { type: ['string', 'integer'], description: 'Its identifier.' },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 500,
        default: 100,
        description: 'Most items of each source (audit rows, events), newest kept.',
      },
    },
    required: ['entity_type', 'entity_id'],
    additionalProperties: false,
  },
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const companyId = ctx.principal.company_id;
    const limit = args.limit ?? 100;
    const id = String(args.entity_id);
    if (id.length === 0 || id.length > 200)
      throw new VerbError('invalid_input', 'entity_id must have 1 to 200 characters.', {
        path: '/entity_id',
      });
    const rows = await ctx.db.all<Record<string, unknown>>(
      `SELECT audit_id, created_at, action_type, user_id, agent_type, status, reason, consent_class FROM audit_log
       WHERE company_id = ? AND entity_type = ? AND entity_id = ? ORDER BY created_at DESC, audit_id DESC LIMIT ?`,
      [companyId, args.entity_type, id, limit],
    );
    const events = await entityEvents(ctx.db, companyId, args.entity_type, id, limit);
    const items: ChainItem[] = [];
    for (const r of rows) {
      if (r.consent_class === 'READ') continue;
      const user = r.user_id === null ? null : Number(r.user_id);
      items.push({
        timestamp: r.created_at as string,
        action: r.action_type as string,
        actor:
          user === null ? 'anonymous' : `user:${user}${r.agent_type ? ` via ${r.agent_type as string}` : ''}`,
        detail: auditDetail(r.status as string, (r.reason as string | null) ?? null),
        source: 'audit',
        audit_id: Number(r.audit_id),
        status: r.status as string,
      });
    }
    for (const e of events) {
      const item: ChainItem = {
        timestamp: e.occurred_at,
        action: e.type,
        actor: e.actor ?? 'system',
        detail: eventDetail(e),
        source: 'event',
        seq: e.seq,
      };
      if (e.audit_id !== null && e.audit_id !== undefined) item.audit_id = e.audit_id;
      items.push(item);
    }
    if (items.length === 0) {
      throw new VerbError(
        'not_found',
        `No recorded action or event mentions ${args.entity_type} ${id} for this tenant.`,
        {
          hint: 'Check entity_type and entity_id (audit.trail lists recent entities); reads of an entity are not part of its chain.',
        },
      );
    }
    items.sort(
      (a, b) =>
        (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0) ||
        (a.audit_id ?? Number.MAX_SAFE_INTEGER) - (b.audit_id ?? Number.MAX_SAFE_INTEGER) ||
        (a.source === b.source ? 0 : a.source === 'audit' ? -1 : 1) ||
        (a.seq ?? 0) - (b.seq ?? 0),
    );
    const lastEvent = events.length > 0 ? events[events.length - 1]! : undefined;
    const state = lastEvent === undefined ? undefined : stateOf(lastEvent);
    return {
      entity_type: args.entity_type,
      entity_id: args.entity_id,
      causal_chain: items,
      ...(state !== undefined ? { current_state: state } : {}),
      reasoning: reasoning(args.entity_type, id, items),
    };
  },
});

function reasoning(type: string, id: string, items: readonly ChainItem[]): string {
  const first = items[0]!;
  const last = items[items.length - 1]!;
  const actions = items.filter((i) => i.source === 'audit');
  const events = items.filter((i) => i.source === 'event');
  const refused = actions.filter(
    (i) => i.status === 'denied' || i.status === 'failed' || i.status === 'rejected',
  );
  const parts = [
    `${type} ${id} has ${actions.length} recorded action${actions.length === 1 ? '' : 's'} and ${events.length} event${events.length === 1 ? '' : 's'} between ${first.timestamp} and ${last.timestamp}.`,
    `It starts with ${first.action} by ${first.actor} (${first.detail}).`,
  ];
  if (items.length > 1)
    parts.push(`The latest is ${last.action} by ${last.actor} at ${last.timestamp} (${last.detail}).`);
  if (refused.length > 0) {
    const reasons = [...new Set(refused.map((r) => r.detail))].join('; ');
    parts.push(
      `${refused.length} attempt${refused.length === 1 ? ' was' : 's were'} refused or failed: ${reasons}.`,
    );
  }
  return parts.join(' ');
}
