/**
 * audit.trail (shape trail): query the tenant's audit log — every attempt, denials included —
 * newest first (created_at, then audit_id, descending), with filters (time range, verb, status,
 * actor, entity, reason, scope, agent_type, key_id) and an opaque, authenticated cursor. Every page is
 * bounded whatever the log's size: when one index (company_id + filter column(s) + created_at +
 * audit_id, runtime migrations 2, 9, 16) serves every filter, the page is one range scan of it
 * that stops after `limit` + 1 rows; otherwise the most selective index (DRIVES) is scanned for at
 * most TRAIL_SCAN_ROWS rows and the other filters are tested on them, and a page that did not
 * fill by then answers `stopped_early: true` with a cursor after the last row examined. The
 * dashboard's Activity view uses `scope: 'business'` (its own index) so its own reads (agent_type
 * `dashboard`, class READ) stay out of sight while still audited (spec/audit.md §dashboard-reads).
 *
 * `fold: true` (the Activity view): one entry per action — a pending entry whose nonce a write
 * burned (table pending_actions) is left out and listed in that write's `pending_audit_ids`; each
 * entry carries its redacted `arguments` and `words` (its verb's consent summary over them).
 * spec/audit.md §fold
 *
 * Output: `{ entries, next_cursor, stopped_early }`. Refusals: `cursor_invalid` (a cursor of
 * another tenant or other filters), `invalid_input` (schema).
 *
 * Spec: spec/shapes.md §trail, spec/audit.md.
 */
import { createHash } from 'node:crypto';
import { parseProvenance, provenanceWords, type ConsentProvenance } from '../runtime/consent/provenance.ts';
import { defineSystemVerb, type ActivityRead, type VerbDefinition } from '../runtime/verb.ts';
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
  fold?: boolean;
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
      fold: {
        type: 'boolean',
        default: false,
        description:
          'One entry per action: a consent request that was then confirmed is left out (listed in pending_audit_ids of its action); entries carry arguments and words (what was done, in words).',
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
    // Range terms (cursor, from, to) bound every index below on created_at, after its equality
    // columns. Filter terms are either served by the scanned ("drive") index or tested on its rows.
    const range: Term[] = [];
    if (before !== undefined) range.push(term('(created_at, audit_id) < (?, ?)', before.t, before.b));
    if (args.from !== undefined) range.push(term('created_at >= ?', new Date(args.from).toISOString()));
    if (args.to !== undefined) range.push(term('created_at < ?', new Date(args.to).toISOString()));
    const filters = new Map<FilterName, Term>();
    if (args.verb !== undefined) filters.set('verb', term('action_type = ?', args.verb));
    if (args.status === 'completed') filters.set('completed', term('status = ?', args.status));
    // The status indexes hold only rows that did not complete (runtime migration 9): the implied
    // term lets both planners use them.
    else if (args.status !== undefined)
      filters.set('status', term("status = ? AND status <> 'completed'", args.status));
    if (args.reason !== undefined) filters.set('reason', term('reason = ?', args.reason));
    // The business index holds exactly these rows (runtime migration 16; NULL, an unknown verb, is
    // not READ-or-else: it stays out, as it always did).
    if (args.scope === 'business') filters.set('scope', term("consent_class <> 'READ'"));
    if (args.agent_type !== undefined) filters.set('agent_type', term('agent_type = ?', args.agent_type));
    if (args.key_id !== undefined) filters.set('key_id', term('key_id = ?', args.key_id));
    if (args.actor !== undefined) filters.set('actor', term('user_id = ?', args.actor));
    if (args.entity_type !== undefined)
      filters.set(
        'entity',
        args.entity_id === undefined
          ? term('entity_type = ?', args.entity_type)
          : term('entity_type = ? AND entity_id = ?', args.entity_type, String(args.entity_id)),
      );
    const cols = `audit_id, seq, created_at, action_type, user_id, role, agent_type, key_id, entity_type, entity_id, status, reason, shape, consent_class, approved_by, parent_id, transaction_id, rollback_handle, is_reversible, latency_ms${args.audit_id !== undefined ? ', request_data, approved_at, requires_approval, idempotency_key, consent' : args.fold === true ? ', request_data' : ''}`;
    const order = 'ORDER BY created_at DESC, audit_id DESC';
    const company = term('company_id = ?', companyId);
    const drive = DRIVES.find((d) => d.every((n) => filters.has(n))) ?? [];
    const tested = [...filters.keys()].filter((n) => !drive.includes(n));
    let rows: Array<Record<string, unknown>>;
    let boundary: Record<string, unknown> | undefined;
    if (args.audit_id !== undefined || tested.length === 0) {
      // Every filter is served by one index (or the primary key, for one audit_id): the range
      // scan stops after limit + 1 rows.
      const all = [company, ...(args.audit_id !== undefined ? [term('audit_id = ?', args.audit_id)] : [])];
      all.push(...filters.values(), ...range);
      rows = await ctx.db.all<Record<string, unknown>>(
        `SELECT ${cols} FROM audit_log WHERE ${sqlOf(all)} ${order} LIMIT ?`,
        [...paramsOf(all), limit + 1],
      );
    } else {
      // Some filter has no index for this combination: scan the drive index for at most
      // TRAIL_SCAN_ROWS rows, reading only the columns the other filters test, and test them;
      // then read the whole rows of the (at most limit + 1) hits by primary key. In the same
      // statement (one snapshot), the drive range's TRAIL_SCAN_ROWS-th and next rows: when the
      // page does not fill and the range goes on past the examined rows, the page stops early
      // there and the cursor resumes right after the last row examined.
      const d = [company, ...drive.map((n) => filters.get(n)!), ...range];
      const t = tested.map((n) => filters.get(n)!);
      const scannedCols = ['audit_id', 'created_at', ...new Set(tested.flatMap((n) => FILTER_COLUMNS[n]))];
      const found = await ctx.db.all<Record<string, unknown>>(
        `SELECT ${cols}, 1 AS trail_hit FROM audit_log WHERE audit_id IN (SELECT audit_id FROM (SELECT ${scannedCols.join(', ')} FROM audit_log WHERE ${sqlOf(d)} ${order} LIMIT ?) AS scanned WHERE ${sqlOf(t)} ${order} LIMIT ?)
         UNION ALL
         SELECT * FROM (SELECT ${cols}, 0 AS trail_hit FROM audit_log WHERE ${sqlOf(d)} ${order} LIMIT 2 OFFSET ?) AS edge`,
        [...paramsOf(d), TRAIL_SCAN_ROWS, ...paramsOf(t), limit + 1, ...paramsOf(d), TRAIL_SCAN_ROWS - 1],
      );
      rows = found.filter((r) => Number(r.trail_hit) === 1).sort(newestFirst);
      const edge = found.filter((r) => Number(r.trail_hit) === 0).sort(newestFirst);
      if (rows.length <= limit && edge.length === 2) boundary = edge[0];
    }
    const page = rows.slice(0, limit);
    // One action, one entry (spec/audit.md §fold): the pending rows whose nonce a write burned.
    const links = args.fold === true ? await pendingLinks(ctx.db, companyId, page) : undefined;
    const shown = links === undefined ? page : page.filter((r) => !links.folded.has(Number(r.audit_id)));
    const entries = shown.map((r) => ({
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
    // What a verb's activity hook reads: SELECTs in this tenant only (no run()).
    const read: ActivityRead = {
      db: { get: (sql, p) => ctx.db.get(sql, p), all: (sql, p) => ctx.db.all(sql, p) },
      company_id: companyId,
    };
    if (links !== undefined)
      for (const [i, e] of entries.entries()) {
        const args = requestData(shown[i]!.request_data);
        Object.assign(e, {
          arguments: args,
          words: await wordsOf(read, ctx.runtime.registry.get(e.action)?.definition, args),
          pending_audit_ids: links.pendingOf.get(e.audit_id) ?? [],
        });
      }
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
        arguments: requestData(r.request_data),
        words: await wordsOf(
          read,
          ctx.runtime.registry.get(entries[0].action)?.definition,
          requestData(r.request_data),
        ),
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
    // The position the next page resumes after: the last entry of a full page, or the last row
    // examined by a page that stopped early.
    const last = rows.length > limit ? page[page.length - 1]! : boundary;
    const next_cursor =
      last === undefined
        ? null
        : ctx.runtime.secrets.sealToken('cursor', 'tc2', {
            c: companyId,
            t: last.created_at as string,
            b: Number(last.audit_id),
            f: fh,
          });
    return { entries, next_cursor, stopped_early: boundary !== undefined };
  },
});

/** A SQL term and its parameters. */
interface Term {
  sql: string;
  params: unknown[];
}

const term = (sql: string, ...params: unknown[]): Term => ({ sql, params });
const sqlOf = (ts: Term[]): string => ts.map((t) => t.sql).join(' AND ');
const paramsOf = (ts: Term[]): unknown[] => ts.flatMap((t) => t.params);

/** The trail's equality filters (entity: entity_type, with entity_id when given). */
type FilterName =
  'verb' | 'status' | 'completed' | 'reason' | 'scope' | 'agent_type' | 'key_id' | 'actor' | 'entity';

/** The columns each filter tests. */
const FILTER_COLUMNS: Record<FilterName, readonly string[]> = {
  verb: ['action_type'],
  status: ['status'],
  completed: ['status'],
  reason: ['reason'],
  scope: ['consent_class'],
  agent_type: ['agent_type'],
  key_id: ['key_id'],
  actor: ['user_id'],
  entity: ['entity_type', 'entity_id'],
};

/**
 * The indexes a page can scan, by the filters each serves entirely, most selective first
 * (runtime migrations 2, 9, 16): the first whose filters are all present is scanned; the time
 * index (company_id, created_at, audit_id) when none is. `status: 'completed'`, `agent_type` and
 * `key_id` have no index (most rows complete; an agent filter is rare): they are always tested on rows.
 */
const DRIVES: ReadonlyArray<readonly FilterName[]> = [
  ['entity'],
  ['verb', 'status'],
  ['actor'],
  ['reason'],
  ['verb'],
  ['status'],
  ['scope'],
];

/**
 * The most rows of the scanned index one page examines when a filter is tested on its rows: the
 * page's cost (and, on SQLite, how long it holds the event loop) is bounded whatever the log's
 * size and whether anything matches. A page that examined this many rows without filling stops
 * early (`stopped_early: true`) with a cursor after the last row examined. 300: at 1M rows an
 * examined row costs ≈ 3 µs of CPU on SQLite (a table page per row, rarely cached), so the rows a
 * page examines cost about what the dispatch around it costs (≈ 1 ms) and a page's cost hardly
 * depends on the log's size (BENCHMARKS.md `trail.worst_filter_1m`). spec/audit.md §trail
 */
export const TRAIL_SCAN_ROWS = 300;

/** Newest first: created_at, then audit_id, descending. */
function newestFirst(a: Record<string, unknown>, b: Record<string, unknown>): number {
  const ta = a.created_at as string;
  const tb = b.created_at as string;
  if (ta !== tb) return ta < tb ? 1 : -1;
  return Number(b.audit_id) - Number(a.audit_id);
}

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

/** A row's request_data (JSON text on SQLite, an object on PostgreSQL) as an object. */
function requestData(v: unknown): Record<string, unknown> {
  const o = typeof v === 'string' ? (JSON.parse(v) as unknown) : v;
  return o !== null && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>) : {};
}

/**
 * What an entry did in the owner's words: its verb's `activity` hook (naming the customer and the
 * object), else its consent summary over the row's (redacted) arguments; null when the verb has
 * neither or they cannot be built from what the row kept.
 */
async function wordsOf(
  read: ActivityRead,
  verb: Pick<VerbDefinition, 'summary' | 'activity'> | undefined,
  args: Record<string, unknown>,
): Promise<string | null> {
  const usable = (w: unknown): w is string => typeof w === 'string' && w !== '' && !w.includes('undefined');
  if (verb?.activity !== undefined)
    try {
      const w = await verb.activity(read, args);
      if (usable(w)) return w;
    } catch {
      /* the summary below */
    }
  if (verb?.summary === undefined) return null;
  try {
    const w = verb.summary(args);
    return usable(w) ? w : null;
  } catch {
    return null;
  }
}

/**
 * The consent-request links of a page (table pending_actions, spec/audit.md §fold): `folded`,
 * its pending rows whose nonce a write burned; `pendingOf`, for its writes, the pending rows that
 * asked for them (oldest first). Two indexed queries over the page's ids.
 */
async function pendingLinks(
  q: { all<T>(sql: string, params?: unknown[]): Promise<T[]> },
  companyId: number,
  page: Array<Record<string, unknown>>,
): Promise<{ folded: Set<number>; pendingOf: Map<number, number[]> }> {
  const folded = new Set<number>();
  const pendingOf = new Map<number, number[]>();
  const pendingIds = page.filter((r) => r.status === 'pending').map((r) => Number(r.audit_id));
  const writeIds = page.filter((r) => r.status !== 'pending').map((r) => Number(r.audit_id));
  const marks = (n: number): string => Array.from({ length: n }, () => '?').join(', ');
  if (pendingIds.length > 0) {
    const rows = await q.all<{ audit_id: unknown }>(
      `SELECT audit_id FROM pending_actions WHERE company_id = ? AND audit_id IN (${marks(pendingIds.length)}) AND action_audit_id IS NOT NULL`,
      [companyId, ...pendingIds],
    );
    for (const r of rows) folded.add(Number(r.audit_id));
  }
  if (writeIds.length > 0) {
    const rows = await q.all<{ audit_id: unknown; action_audit_id: unknown }>(
      `SELECT audit_id, action_audit_id FROM pending_actions WHERE company_id = ? AND action_audit_id IN (${marks(writeIds.length)}) ORDER BY audit_id`,
      [companyId, ...writeIds],
    );
    for (const r of rows) {
      const list = pendingOf.get(Number(r.action_audit_id)) ?? [];
      list.push(Number(r.audit_id));
      pendingOf.set(Number(r.action_audit_id), list);
    }
  }
  return { folded, pendingOf };
}
