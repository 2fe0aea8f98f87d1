/**
 * Reputation (shape reputation): how reliably and how fast each verb works, per tenant, per agent,
 * over 1 h / 24 h / 7 d / 30 d, kept incrementally so its cost never grows with the audit log.
 *
 * Source: every committed audit row of a registered verb (`rt.onAuditRow`: write rows after their
 * commit, read rows after their buffered flush). The hook only adds to an in-memory delta; deltas are
 * flushed in batches (every `flushMs`, default 1 s, or at close) as commutative upserts into hourly
 * ('h') and daily ('d') buckets (reputation_counts, reputation_latency), so several nodes may flush
 * into the same bucket without losing an increment. The figures are therefore a materialised view of
 * the audit log: recomputing them from audit_log (status, reason, latency_ms) gives the same counts
 * and the same percentile bins.
 *
 * Classification of one audit row (status, reason) — reliability counts only the verb's own
 * failures, never the caller's mistakes (spec/shapes.md §reputation "Classification"):
 *   pending      — status "pending" (dispatch_pending: the first half of a consent round trip);
 *                  counted apart, not an invocation
 *   success      — no reason, status not failed/denied/rejected (completed, replayed…)
 *   denial       — a reason the reason table flags as a denial (role_denied, phrase_mismatch,
 *                  daily_cap…): the safety layer refused the caller
 *   caller_error — the caller asked wrongly: a reason of kind input, not_found, auth, conflict or
 *                  limit (invalid_input, not_found, cursor_invalid, already_reverted…)
 *   failure      — the verb itself did not work: kind internal, unavailable or domain
 *                  (internal_error, store_unavailable, a pack's domain refusal), revert_failed,
 *                  or status failed without a reason
 * invocations = successes + failures + denials + caller_errors (caller_errors is not stored on its
 * own: it is invocations − successes − failures − denials of the buckets);
 * success_rate = successes / (successes + failures), null when nothing ran.
 * Latency percentiles use successful calls only.
 *
 * Windows are whole buckets ending now: 1h = the current clock hour, 24h = the last 24 hourly
 * buckets (current one included), 7d / 30d = the last 7 / 30 UTC days (today included). A window
 * therefore covers a little less than its nominal length at the start of an hour or a day.
 *
 * star_rating (0–5, one decimal; null when fewer than MIN_RATING_SAMPLE calls ran, i.e. succeeded
 * or failed — denials and pending answers are the caller's side and do not count):
 *   s = successes / (successes + failures)
 *   L = 1 when p95 ≤ B, else max(0, 1 − log2(p95 / B) / 2), with B the verb's own p95 over 30 days
 *       (all agents): twice as slow as usual costs half the latency credit, four times all of it
 *   stars = round1(5 · s² · (0.75 + 0.25 · L))
 * Spec: spec/shapes.md §reputation.
 */
import type { Queryable } from '../../store/store.ts';
import type { RuntimeCore } from '../core.ts';
import type { AuditRow } from '../ledger/write/audit.ts';
import { reasonInfo, type ReasonTable } from '../../spec/reasons.ts';
import { addToHistogram, histogramPercentile, latencyBin, type Histogram } from './latency-histogram.ts';

export const REPUTATION_WINDOWS = ['1h', '24h', '7d', '30d'] as const;
export type ReputationWindow = (typeof REPUTATION_WINDOWS)[number];

/** Calls that ran (succeeded or failed) below which star_rating is null. */
export const MIN_RATING_SAMPLE = 10;
/** Version of the star_rating formula (reported with every answer). */
export const STAR_FORMULA_VERSION = 'stars-v1';
/** Hourly buckets kept (hours); daily buckets kept (days). */
export const HOURLY_BUCKETS_KEPT = 48;
export const DAILY_BUCKETS_KEPT = 32;

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;

type Grain = 'h' | 'd';
const WINDOW_SPEC: Readonly<Record<ReputationWindow, { grain: Grain; buckets: number }>> = {
  '1h': { grain: 'h', buckets: 1 },
  '24h': { grain: 'h', buckets: 24 },
  '7d': { grain: 'd', buckets: 7 },
  '30d': { grain: 'd', buckets: 30 },
};

/** Start (ISO) of the bucket of `grain` containing `at`. */
export function bucketStart(grain: Grain, at: Date | string): string {
  // Fast path for canonical UTC ISO strings (every audit row's created_at): cut, no date parsing.
  if (
    typeof at === 'string' &&
    at.length === 24 &&
    at.charCodeAt(23) === 90 /* Z */ &&
    at.charCodeAt(10) === 84 /* T */
  ) {
    return grain === 'h' ? `${at.slice(0, 13)}:00:00.000Z` : `${at.slice(0, 10)}T00:00:00.000Z`;
  }
  const ms = typeof at === 'string' ? Date.parse(at) : at.getTime();
  const unit = grain === 'h' ? HOUR_MS : DAY_MS;
  return new Date(Math.floor(ms / unit) * unit).toISOString();
}

/** First instant (ISO) a window covers when it ends at `now`. */
export function windowStart(window: ReputationWindow, now: Date): string {
  const { grain, buckets } = WINDOW_SPEC[window];
  const unit = grain === 'h' ? HOUR_MS : DAY_MS;
  return new Date(Math.floor(now.getTime() / unit) * unit - (buckets - 1) * unit).toISOString();
}

export type CallOutcome = 'success' | 'failure' | 'denial' | 'caller_error' | 'pending';

/** Reasons of a caller-side kind that still mean the verb itself did not work. */
const OWN_FAILURE_REASONS: ReadonlySet<string> = new Set(['revert_failed']);
/** Reason kinds that mean the caller asked wrongly (not counted against the verb). */
const CALLER_KINDS: ReadonlySet<string> = new Set(['input', 'not_found', 'auth', 'conflict', 'limit']);

/** Classify one audit row (see the module header). */
export function classifyCall(status: string, reason: string | null, reasons?: ReasonTable): CallOutcome {
  if (status === 'pending') return 'pending';
  if (reason === null)
    return status === 'failed' || status === 'denied' || status === 'rejected' ? 'failure' : 'success';
  const info = reasonInfo(reason, reasons);
  if (info.denial) return 'denial';
  if (OWN_FAILURE_REASONS.has(reason)) return 'failure';
  return CALLER_KINDS.has(info.kind) ? 'caller_error' : 'failure';
}

interface Counts {
  invocations: number;
  successes: number;
  failures: number;
  denials: number;
  pending: number;
}

interface Delta extends Counts {
  companyId: number;
  hour: string;
  verb: string;
  agent: string;
  hist: Histogram;
}

const zero = (): Counts => ({ invocations: 0, successes: 0, failures: 0, denials: 0, pending: 0 });

function addOutcome(c: Counts, o: CallOutcome): void {
  if (o === 'pending') {
    c.pending++;
    return;
  }
  c.invocations++;
  if (o === 'success') c.successes++;
  else if (o === 'failure') c.failures++;
  else if (o === 'denial') c.denials++;
  // caller_error: only in invocations (caller_errors = invocations − the other three).
}

/** One score of the reputation shape. */
export interface ReputationScore {
  verb: string;
  agent: string | null;
  invocations: number;
  successes: number;
  failures: number;
  denials: number;
  /** Calls the caller got wrong (invalid_input, not_found…): invocations − successes − failures − denials. */
  caller_errors: number;
  pending: number;
  /** successes / (successes + failures); null when no call ran. */
  success_rate: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  star_rating: number | null;
  sample_size: number;
}

export interface ScoreQuery {
  window: ReputationWindow;
  now: Date;
  verb?: string;
  agent?: string;
  /** One score per (verb, agent) instead of one per verb. */
  byAgent?: boolean;
}

/** The agent key of an audit row (the API key's agent label). */
export function agentOf(row: { agent_type: string | null }): string {
  return row.agent_type ?? 'unknown';
}

/**
 * Star rating from success/failure counts and the window p95 against the verb's 30-day p95
 * (module header). Null below MIN_RATING_SAMPLE calls that ran.
 */
export function starRating(
  successes: number,
  failures: number,
  p95: number | null,
  baselineP95: number | null,
): number | null {
  const ran = successes + failures;
  if (ran < MIN_RATING_SAMPLE) return null;
  const s = successes / ran;
  const latency =
    p95 === null || baselineP95 === null || baselineP95 <= 0 || p95 <= baselineP95
      ? 1
      : Math.max(0, 1 - Math.log2(p95 / baselineP95) / 2);
  return Math.round(50 * s * s * (0.75 + 0.25 * latency)) / 10;
}

export class ReputationAggregator {
  #pending = new Map<string, Delta>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;

  constructor(
    private readonly rt: RuntimeCore,
    private readonly flushMs = 1000,
  ) {}

  /** Deltas waiting for the next flush (telemetry queue depth). */
  get buffered(): number {
    return this.#pending.size;
  }

  /**
   * The delta the last row went to, the map it is in, and its hour's first 13 characters
   * (YYYY-MM-DDTHH): rows come in runs of one tenant, verb, agent and hour (a read-audit flush),
   * so most rows skip the key's text and its map lookup (≈ 0.5 µs a row). A delta stays in its
   * map until flush swaps the map (#merge never replaces one).
   */
  #last: Delta | undefined;
  #lastIn: Map<string, Delta> | undefined;
  #lastPrefix = '';

  /** Add one committed audit row (in-memory only; rows of unregistered names are ignored). */
  record(row: AuditRow): void {
    if (row.shape === null || row.shape === undefined) return;
    const outcome = classifyCall(row.status, row.reason, this.rt.registry.reasons);
    const agent = agentOf(row);
    const at = row.created_at;
    let d = this.#last;
    if (
      d === undefined ||
      this.#lastIn !== this.#pending ||
      d.companyId !== row.company_id ||
      d.verb !== row.action_type ||
      d.agent !== agent ||
      // The same hour as bucketStart's fast path would cut it: a canonical UTC ISO string.
      !(
        typeof at === 'string' &&
        at.length === 24 &&
        at.charCodeAt(23) === 90 /* Z */ &&
        at.charCodeAt(10) === 84 /* T */ &&
        at.startsWith(this.#lastPrefix)
      )
    ) {
      const hour = bucketStart('h', at);
      const key = `${row.company_id}|${hour}|${row.action_type}|${agent}`;
      d = this.#pending.get(key);
      if (d === undefined) {
        d = { companyId: row.company_id, hour, verb: row.action_type, agent, hist: new Map(), ...zero() };
        this.#pending.set(key, d);
      }
      // An hour bucketStart wrote is canonical (24 characters) unless the year is beyond 9999.
      this.#last = hour.length === 24 ? d : undefined;
      this.#lastIn = this.#pending;
      this.#lastPrefix = hour.slice(0, 13);
    }
    addOutcome(d, outcome);
    if (outcome === 'success' && row.latency_ms !== null && row.latency_ms !== undefined)
      addToHistogram(d.hist, latencyBin(row.latency_ms));
    if (this.#timer === undefined && this.flushMs > 0) {
      this.#timer = setTimeout(() => void this.flush(), this.flushMs);
      this.#timer.unref();
    }
  }

  /** Write the buffered deltas (one store transaction). On failure they stay buffered. */
  async flush(): Promise<void> {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#flushing !== undefined) await this.#flushing;
    if (this.#pending.size === 0) return;
    const batch = this.#pending;
    this.#pending = new Map();
    this.#flushing = this.rt.store
      .write(
        async (tx) => {
          for (const d of batch.values()) {
            for (const [grain, start] of [
              ['h', d.hour],
              ['d', bucketStart('d', d.hour)],
            ] as const) {
              await tx.run(
                `INSERT INTO reputation_counts (company_id, grain, bucket_start, verb, agent, invocations, successes, failures, denials, pending)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                 ON CONFLICT (company_id, grain, bucket_start, verb, agent) DO UPDATE SET
                   invocations = reputation_counts.invocations + excluded.invocations,
                   successes = reputation_counts.successes + excluded.successes,
                   failures = reputation_counts.failures + excluded.failures,
                   denials = reputation_counts.denials + excluded.denials,
                   pending = reputation_counts.pending + excluded.pending`,
                [
                  d.companyId,
                  grain,
                  start,
                  d.verb,
                  d.agent,
                  d.invocations,
                  d.successes,
                  d.failures,
                  d.denials,
                  d.pending,
                ],
              );
              for (const [bin, count] of d.hist) {
                await tx.run(
                  `INSERT INTO reputation_latency (company_id, grain, bucket_start, verb, agent, bin, count) VALUES (?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (company_id, grain, bucket_start, verb, agent, bin) DO UPDATE SET count = reputation_latency.count + excluded.count`,
                  [d.companyId, grain, start, d.verb, d.agent, bin, count],
                );
              }
            }
          }
        },
        { label: 'reputation.flush' },
      )
      .catch((err: unknown) => {
        // Keep the figures: merge the batch back for the next flush.
        for (const [key, d] of batch) this.#merge(key, d);
        this.rt.logger.error({ err, deltas: batch.size }, 'could not flush reputation buckets');
      })
      .finally(() => {
        this.#flushing = undefined;
      });
    await this.#flushing;
  }

  #merge(key: string, d: Delta): void {
    const cur = this.#pending.get(key);
    if (cur === undefined) {
      this.#pending.set(key, d);
      return;
    }
    cur.invocations += d.invocations;
    cur.successes += d.successes;
    cur.failures += d.failures;
    cur.denials += d.denials;
    cur.pending += d.pending;
    for (const [bin, c] of d.hist) addToHistogram(cur.hist, bin, c);
  }

  /**
   * Scores of a tenant over a window, from the stored buckets plus the deltas not yet flushed by
   * this process (another node's unflushed deltas appear within its flush interval). Sorted by
   * invocations, most first, then verb name.
   */
  async scores(q: Queryable, companyId: number, query: ScoreQuery): Promise<ReputationScore[]> {
    const { grain } = WINDOW_SPEC[query.window];
    const start = windowStart(query.window, query.now);
    const groups = await this.#load(q, companyId, grain, start, bucketStart(grain, query.now), query);
    // Baseline for the latency credit: each verb's own p95 over 30 days, all agents.
    const baselineGroups =
      query.window === '30d' && !query.byAgent && query.agent === undefined
        ? groups
        : await this.#load(q, companyId, 'd', windowStart('30d', query.now), bucketStart('d', query.now), {
            verb: query.verb,
            byAgent: false,
          });
    const baseline = new Map<string, number | null>();
    for (const g of baselineGroups.values()) baseline.set(g.verb, histogramPercentile(g.hist, 0.95));
    const out: ReputationScore[] = [];
    for (const g of groups.values()) {
      const p95 = histogramPercentile(g.hist, 0.95);
      out.push({
        verb: g.verb,
        agent: g.agent,
        invocations: g.invocations,
        successes: g.successes,
        failures: g.failures,
        denials: g.denials,
        caller_errors: g.invocations - g.successes - g.failures - g.denials,
        pending: g.pending,
        success_rate: g.successes + g.failures === 0 ? null : g.successes / (g.successes + g.failures),
        p50_ms: histogramPercentile(g.hist, 0.5),
        p95_ms: p95,
        star_rating: starRating(g.successes, g.failures, p95, baseline.get(g.verb) ?? null),
        sample_size: g.successes + g.failures,
      });
    }
    out.sort(
      (a, b) =>
        b.invocations - a.invocations ||
        a.verb.localeCompare(b.verb) ||
        String(a.agent).localeCompare(String(b.agent)),
    );
    return out;
  }

  async #load(
    q: Queryable,
    companyId: number,
    grain: Grain,
    start: string,
    last: string,
    query: { verb?: string; agent?: string; byAgent?: boolean },
  ): Promise<Map<string, Counts & { verb: string; agent: string | null; hist: Histogram }>> {
    const where = ['company_id = ?', 'grain = ?', 'bucket_start >= ?', 'bucket_start <= ?'];
    const params: unknown[] = [companyId, grain, start, last];
    if (query.verb !== undefined) {
      where.push('verb = ?');
      params.push(query.verb);
    }
    if (query.agent !== undefined) {
      where.push('agent = ?');
      params.push(query.agent);
    }
    const groups = new Map<string, Counts & { verb: string; agent: string | null; hist: Histogram }>();
    const perAgent = query.byAgent === true || query.agent !== undefined;
    const group = (verb: string, agent: string) => {
      const key = perAgent ? `${verb}|${agent}` : verb;
      let g = groups.get(key);
      if (g === undefined) {
        g = { verb, agent: perAgent ? agent : null, hist: new Map(), ...zero() };
        groups.set(key, g);
      }
      return g;
    };
    const counts = await q.all<Record<string, unknown>>(
      `SELECT verb, agent, SUM(invocations) AS invocations, SUM(successes) AS successes, SUM(failures) AS failures, SUM(denials) AS denials, SUM(pending) AS pending
       FROM reputation_counts WHERE ${where.join(' AND ')} GROUP BY verb, agent`,
      params,
    );
    for (const r of counts) {
      const g = group(r.verb as string, r.agent as string);
      g.invocations += Number(r.invocations);
      g.successes += Number(r.successes);
      g.failures += Number(r.failures);
      g.denials += Number(r.denials);
      g.pending += Number(r.pending);
    }
    const bins = await q.all<Record<string, unknown>>(
      `SELECT verb, agent, bin, SUM(count) AS count FROM reputation_latency WHERE ${where.join(' AND ')} GROUP BY verb, agent, bin`,
      params,
    );
    for (const r of bins)
      addToHistogram(group(r.verb as string, r.agent as string).hist, Number(r.bin), Number(r.count));
    for (const d of this.#pending.values()) {
      const b = bucketStart(grain, d.hour);
      if (d.companyId !== companyId || b < start || b > last) continue;
      if (query.verb !== undefined && d.verb !== query.verb) continue;
      if (query.agent !== undefined && d.agent !== query.agent) continue;
      const g = group(d.verb, d.agent);
      g.invocations += d.invocations;
      g.successes += d.successes;
      g.failures += d.failures;
      g.denials += d.denials;
      g.pending += d.pending;
      for (const [bin, c] of d.hist) addToHistogram(g.hist, bin, c);
    }
    return groups;
  }

  /** Delete buckets older than they are needed (HOURLY_BUCKETS_KEPT hours, DAILY_BUCKETS_KEPT days). */
  async prune(now: Date): Promise<number> {
    const hourCut = new Date(
      Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - HOURLY_BUCKETS_KEPT * HOUR_MS,
    ).toISOString();
    const dayCut = new Date(
      Math.floor(now.getTime() / DAY_MS) * DAY_MS - DAILY_BUCKETS_KEPT * DAY_MS,
    ).toISOString();
    return this.rt.store.write(
      async (tx) => {
        let n = 0;
        for (const table of ['reputation_counts', 'reputation_latency']) {
          n += (await tx.run(`DELETE FROM ${table} WHERE grain = 'h' AND bucket_start < ?`, [hourCut]))
            .changes;
          n += (await tx.run(`DELETE FROM ${table} WHERE grain = 'd' AND bucket_start < ?`, [dayCut]))
            .changes;
        }
        return n;
      },
      { label: 'reputation.prune' },
    );
  }

  /** Stop the flush timer (the caller flushes first). */
  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
