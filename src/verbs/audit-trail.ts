/**
 * audit.trail (shape trail): query the tenant's audit log — every attempt, denials included —
 * newest first (created_at, then audit_id, descending), with filters (time range, verb, status,
 * actor, entity, reason) and an opaque, authenticated cursor. Each page is one index range scan
 * (company_id + filter column + created_at + audit_id, runtime migration v2) that stops after
 * `limit` rows, so its cost does not grow with the size of the log. With two or more equality
 * filters (other than verb + status, which has its own index) one filter's index is scanned and
 * the others are tested on its rows. The status indexes hold only rows that did not complete and
 * the entity indexes only rows with an entity (partial, migration 9): `status: 'completed'` is
 * tested on the rows of the time (or another filter's) index. `scope: 'business'` (consent class other than READ) and
 * `agent_type` are tested on the rows of the chosen index; the dashboard's Activity view uses
 * `scope: 'business'` so its own reads (agent_type `dashboard`, class READ) stay out of sight
 * while still audited (spec/audit.md §dashboard-reads).
 *
 * Spec: spec/shapes.md §trail, spec/audit.md.
 */
import { createHash } from 'node:crypto';
import { parseProvenance, provenanceWords, type ConsentProvenance } from '../runtime/consent/provenance.ts';
import { defineSystemVerb } from '../runtime/verb.ts';
import { VerbError } from '../runtime/errors.ts';

export interface TrailArgs {
  from?: string;
  to?: string;
  verb?: string;
  status?: string;
  actor?: number;
  entity_type?: string;
  entity_id?: string | number;
  reason?: string;
  scope?: 'all' | 'business';
  audit_id?: number;
  agent_type?: string;
  key_id?: string;
  limit?: number;
  cursor?: string;
}

function filterHash(a: TrailArgs): string {
  const { cursor: _c, limit: _l, ...f } = a;
  return createHash('sha256')
    .update(JSON.stringify(Object.entries(f).sort()))
    .digest('base64url')
    .slice(0, 12);
}

export const auditTrail = defineSystemVerb<TrailArgs>({
  name: 'audit.trail',
  title: 'Audit trail',
  description:
    "Query the tenant's tamper-evident audit log: what was attempted, by whom, when, with which outcome (completed, denied, failed, pending, replayed…) and reason. Newest first. Filter by time range (from/to, ISO 8601), verb name, status, actor (user_id), credential (key_id: one agent), entity (entity_type + entity_id) or denial reason; each entry names its agent by the key's or grant's name (agent_name). Page with next_cursor.",
  shape: 'trail',
  category: 'audit',
  input: {
    type: 'object',
    properties: {
      from: { type: 'string', format: 'date-time', description: 'Only entries at or after this time.' },
      to: { type: 'string', format: 'date-time', description: 'Only entries before this time.' },
      verb: { type: 'string', maxLength: 200, description: 'Only attempts of this verb.' },
      status: {
        type: 'string',
        enum: ['completed', 'failed', 'denied', 'pending', 'approved', 'rejected', 'replayed', 'rolled_back'],
      },
      actor: { type: 'integer', minimum: 0, description: 'Only attempts by this user_id.' },
      entity_type: { type: 'string', maxLength: 100 },
      entity_id: {
        type: ['string', 'integer'],
        description: 'Needs entity_type: only actions on this entity.',
      },
      reason: {
        type: 'string',
        maxLength: 100,
        description: 'Only entries with this reason code (e.g. role_denied).',
      },
      scope: {
        type: 'string',
        enum: ['all', 'business'],
        default: 'all',
        description:
          'business: only actions that change something or asked to (consent class other than READ), denials of them included; leaves out reads such as the dashboard polling its own panels.',
      },
      audit_id: {
        type: 'integer',
        minimum: 1,
        description:
          'Only this entry, with its arguments (secret fields redacted), approved_at and whether it was reverted: the receipt view.',
      },
      agent_type: {
        type: 'string',
        maxLength: 100,
        description:
          "Only attempts made through this agent (the key's agent_type; 'dashboard' for the web dashboard).",
      },
      key_id: {
        type: 'string',
        maxLength: 100,
        description:
          "Only attempts made with this credential (an API key's key_id, or grant:<id> for an OAuth grant): one agent's view — what it did, what was refused.",
      },
      limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
      cursor: { type: 'string', maxLength: 1000, description: 'next_cursor of the previous page.' },
    },
    // An entity id means nothing without its type (ids repeat across types): refused, never ignored.
    dependentRequired: { entity_id: ['entity_type'] },
    additionalProperties: false,
  },
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const companyId = ctx.principal.company_id;
    const limit = args.limit ?? 50;
    const fh = filterHash(args);
    let before: { t: string; b: number } | undefined;
    if (args.cursor !== undefined) {
      const c = ctx.runtime.secrets.openToken<{ c: number; t: string; b: number; f: string }>(
        'cursor',
        'tc2',
        args.cursor,
      );
      if (
        c === undefined ||
        c.c !== companyId ||
        c.f !== fh ||
        !Number.isSafeInteger(c.b) ||
        typeof c.t !== 'string'
      ) {
        throw new VerbError(
          'cursor_invalid',
          'The trail cursor is not valid for this tenant and these filters.',
          {
            hint: 'Pass next_cursor exactly as returned, with the same filters; omit it to start from the newest entry.',
          },
        );
      }
      before = { t: c.t, b: c.b };
    }
    const where = ['company_id = ?'];
    const params: unknown[] = [companyId];
    if (before !== undefined) {
      where.push('(created_at, audit_id) < (?, ?)');
      params.push(before.t, before.b);
    }
    if (args.verb !== undefined) {
      where.push('action_type = ?');
      params.push(args.verb);
    }
    if (args.status !== undefined) {
      // The status indexes hold only rows that did not complete (runtime migration 9): the
      // implied term lets both planners use them; 'completed' is tested on another index's rows.
      where.push(args.status === 'completed' ? 'status = ?' : "status = ? AND status <> 'completed'");
      params.push(args.status);
    }
    if (args.reason !== undefined) {
      where.push('reason = ?');
      params.push(args.reason);
    }
    if (args.audit_id !== undefined) {
      where.push('audit_id = ?');
      params.push(args.audit_id);
    }
    if (args.scope === 'business') where.push("consent_class IS NOT NULL AND consent_class <> 'READ'");
    if (args.agent_type !== undefined) {
      where.push('agent_type = ?');
      params.push(args.agent_type);
    }
    if (args.key_id !== undefined) {
      where.push('key_id = ?');
      params.push(args.key_id);
    }
    if (args.actor !== undefined) {
      where.push('user_id = ?');
      params.push(args.actor);
    }
    if (args.entity_type !== undefined) {
      where.push('entity_type = ?');
      params.push(args.entity_type);
      if (args.entity_id !== undefined) {
        where.push('entity_id = ?');
        params.push(String(args.entity_id));
      }
    }
    if (args.from !== undefined) {
      where.push('created_at >= ?');
      params.push(new Date(args.from).toISOString());
    }
    if (args.to !== undefined) {
      where.push('created_at < ?');
      params.push(new Date(args.to).toISOString());
    }
    params.push(limit + 1);
    const rows = await ctx.db.all<Record<string, unknown>>(
      `SELECT audit_id, seq, created_at, action_type, user_id, role, agent_type, key_id, entity_type, entity_id, status, reason, shape, consent_class, approved_by, parent_id, transaction_id, rollback_handle, is_reversible, latency_ms${args.audit_id !== undefined ? ', request_data, approved_at, requires_approval, idempotency_key, consent' : ''}
       FROM audit_log WHERE ${where.join(' AND ')} ORDER BY created_at DESC, audit_id DESC LIMIT ?`,
      params,
    );
    const page = rows.slice(0, limit);
    const entries = page.map((r) => ({
      audit_id: Number(r.audit_id),
      seq: Number(r.seq),
      timestamp: r.created_at as string,
      action: r.action_type as string,
      actor: r.user_id === null ? 'anonymous' : `user:${Number(r.user_id)}`,
      entity_id:
        r.entity_id === null
          ? null
          : /^\d{1,15}$/.test(r.entity_id as string)
            ? Number(r.entity_id)
            : (r.entity_id as string),
      entity_type: (r.entity_type as string | null) ?? null,
      status: r.status as string,
      reason: (r.reason as string | null) ?? null,
      shape: (r.shape as string | null) ?? null,
      consent_class: (r.consent_class as string | null) ?? null,
      role: (r.role as string | null) ?? null,
      agent_type: (r.agent_type as string | null) ?? null,
      key_id: (r.key_id as string | null) ?? null,
      approved_by: r.approved_by === null ? null : Number(r.approved_by),
      parent_id: r.parent_id === null ? null : Number(r.parent_id),
      transaction_id: (r.transaction_id as string | null) ?? null,
      revertible: Number(r.is_reversible) === 1,
      latency_ms: r.latency_ms === null || r.latency_ms === undefined ? null : Number(r.latency_ms),
    }));
    // Agents by the name the owner gave them: the key's name, or the OAuth client's for a grant.
    const names = await agentNames(
      ctx.db,
      companyId,
      entries.map((e) => e.key_id),
    );
    for (const e of entries)
      Object.assign(e, {
        agent_name:
          (e.key_id !== null ? names.get(e.key_id) : undefined) ??
          (e.key_id?.startsWith('grant:') === true && e.agent_type?.startsWith('oauth:') === true
            ? e.agent_type.slice('oauth:'.length)
            : null),
      });
    if (args.audit_id !== undefined && page[0] !== undefined && entries[0] !== undefined) {
      const r = page[0];
      const reversal = await ctx.db.get<{ revert_audit_id: unknown; reverted_at: string }>(
        'SELECT revert_audit_id, reverted_at FROM reversals WHERE audit_id = ? AND company_id = ?',
        [args.audit_id, companyId],
      );
      Object.assign(entries[0], {
        arguments: typeof r.request_data === 'string' ? JSON.parse(r.request_data) : (r.request_data ?? {}),
        approved_at: (r.approved_at as string | null) ?? null,
        required_approval: Number(r.requires_approval) === 1,
        idempotency_key: (r.idempotency_key as string | null) ?? null,
        // Consent provenance (spec/consent.md §provenance): the object and the same in words.
        ...consentOf(r.consent),
        self_approved:
          r.approved_by !== null &&
          r.approved_by !== undefined &&
          Number(r.approved_by) === Number(r.user_id),
        reverted_by_audit_id: reversal === undefined ? null : Number(reversal.revert_audit_id),
        reverted_at: reversal?.reverted_at ?? null,
      });
    }
    const next_cursor =
      rows.length > limit
        ? ctx.runtime.secrets.sealToken('cursor', 'tc2', {
            c: companyId,
            t: page[page.length - 1]!.created_at as string,
            b: Number(page[page.length - 1]!.audit_id),
            f: fh,
          })
        : null;
    return { entries, next_cursor };
  },
});

/** The names of the API keys among `keyIds` (one query; grants and unknown ids are left out). */
async function agentNames(
  q: { all<T>(sql: string, params?: unknown[]): Promise<T[]> },
  companyId: number,
  keyIds: Array<string | null>,
): Promise<Map<string, string>> {
  const ids = [...new Set(keyIds.filter((k): k is string => k !== null && !k.startsWith('grant:')))];
  const out = new Map<string, string>();
  if (ids.length === 0) return out;
  const rows = await q.all<{ key_id: string; name: string }>(
    `SELECT key_id, name FROM api_keys WHERE company_id = ? AND key_id IN (${ids.map(() => '?').join(', ')})`,
    [companyId, ...ids],
  );
  for (const r of rows) if (r.name !== '') out.set(r.key_id, r.name);
  return out;
}

/** `{ consent, consent_words }` of a row's provenance column; both null when the row has none. */
function consentOf(v: unknown): { consent: ConsentProvenance | null; consent_words: string | null } {
  const p = parseProvenance(v);
  return p === undefined
    ? { consent: null, consent_words: null }
    : { consent: p, consent_words: provenanceWords(p) };
}
