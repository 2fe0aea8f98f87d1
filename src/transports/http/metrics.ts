/**
 * Prometheus metrics of one runtime (prom-client, its own registry: nothing global), served at
 * `GET /metrics` in the text exposition format 0.0.4. Spec: spec/transports.md §metrics.
 *
 * Series (all prefixed `solid_`):
 * - `dispatches_total{verb, outcome, reason, surface}` counter: every dispatch, outcome
 *   ok | pending | denied | failed, reason "" when ok. A name the registry does not know is
 *   counted as verb="(unknown)", so a caller cannot grow the series with made-up names.
 * - `dispatch_duration_seconds{verb, outcome}` histogram, from the dispatch's own latency.
 * - `audit_rows_appended_total` counter: audit rows committed by this process (reads included).
 * - `approvals_waiting{tenant}` gauge: pending, unexpired approvals, read from the store at scrape.
 * - `audit_chain_seq{tenant}` gauge: the seq of the tenant's chain head (= rows in its audit
 *   chain), read from the store at scrape.
 * - `outbox_dead_letters{tenant}` gauge: outbox messages dead after their last attempt (never
 *   retried; docs/authoring.md §8(c)), read from the store at scrape.
 * - `read_audit_buffer_rows` gauge: read audit rows waiting for their batched flush.
 * - `read_audit_unwritable` gauge: 1 while read audit rows cannot be written (a store fault:
 *   reads are refused, /readyz is 503), else 0.
 * - `read_audit_dropped_rows` gauge: read audit rows dropped since start (beyond the held limit).
 * - `store_pool_connections{state}` gauge (PostgreSQL only): total | idle | waiting clients.
 * - `store_up` gauge: 1 when the scrape's store reads succeeded, else 0 (the store gauges are then
 *   left out, the in-process ones still answer).
 * - the process defaults of prom-client (`process_*`, `nodejs_*`).
 *
 * Cost on the dispatch path: one counter and one histogram increment per dispatch (labels
 * resolved through prom-client's per-label cache); the store is read only when scraped.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { FastifyPluginAsync } from 'fastify';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { outcomeLabel } from '../../runtime/observe/outcome-label.ts';
import { readStoreGauges } from '../../runtime/observe/store-gauges.ts';
import { sendEnvelope } from './error-handler.ts';
import { transportEnvelope } from './envelope-map.ts';

/** Label value for a verb name the registry does not know. */
export const UNKNOWN_VERB_LABEL = '(unknown)';

/** Histogram buckets for dispatch latency, in seconds (0.5 ms … 10 s). */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

export interface SolidMetrics {
  /** The registry holding every series (its `metrics()` renders the text format). */
  readonly registry: Registry;
  /** The exposition content type (`text/plain; version=0.0.4; charset=utf-8`). */
  readonly contentType: string;
  /** Render every series now (reads the store for the per-tenant gauges). */
  render(): Promise<string>;
  /** Detach from the runtime (stops counting). */
  close(): void;
}

/**
 * Count a runtime's dispatches and read its store's gauges into a fresh registry.
 * Call `close()` when the runtime closes. Never throws at scrape time: a store that cannot be
 * read sets `solid_store_up` to 0.
 */
export function createMetrics(rt: Runtime): SolidMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const dispatches = new Counter({
    name: 'solid_dispatches_total',
    help: 'Verb dispatches by verb, outcome (ok|pending|denied|failed), reason and surface.',
    labelNames: ['verb', 'outcome', 'reason', 'surface'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'solid_dispatch_duration_seconds',
    help: 'Dispatch latency in seconds, from the pipeline start to the answer.',
    labelNames: ['verb', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const appended = new Counter({
    name: 'solid_audit_rows_appended_total',
    help: 'Audit rows committed by this process (denials and reads included).',
    registers: [registry],
  });
  new Gauge({
    name: 'solid_read_audit_buffer_rows',
    help: 'Read audit rows waiting for their batched flush.',
    registers: [registry],
    collect() {
      this.set(rt.auditBuffer.size);
    },
  });
  new Gauge({
    name: 'solid_read_audit_unwritable',
    help: '1 while read audit rows cannot be written (reads refused, /readyz 503), else 0.',
    registers: [registry],
    collect() {
      this.set(rt.auditBuffer.unwritable ? 1 : 0);
    },
  });
  new Gauge({
    name: 'solid_read_audit_dropped_rows',
    help: 'Read audit rows dropped since start (held beyond the limit while the store failed).',
    registers: [registry],
    collect() {
      this.set(rt.auditBuffer.droppedRows);
    },
  });
  const storeUp = new Gauge({
    name: 'solid_store_up',
    help: '1 when the store answered the scrape.',
    registers: [registry],
  });
  const waiting = new Gauge({
    name: 'solid_approvals_waiting',
    help: 'Pending, unexpired approvals per tenant.',
    labelNames: ['tenant'] as const,
    registers: [registry],
  });
  const chainSeq = new Gauge({
    name: 'solid_audit_chain_seq',
    help: "The seq of the tenant's audit chain head (rows in its chain).",
    labelNames: ['tenant'] as const,
    registers: [registry],
  });
  const deadLetters = new Gauge({
    name: 'solid_outbox_dead_letters',
    help: 'Outbox messages dead after their last allowed attempt, per tenant.',
    labelNames: ['tenant'] as const,
    registers: [registry],
  });
  const pool = rt.store.engine === 'postgres' ? poolOf(rt) : undefined;
  const poolGauge =
    pool === undefined
      ? undefined
      : new Gauge({
          name: 'solid_store_pool_connections',
          help: 'PostgreSQL pool clients by state (total, idle, waiting).',
          labelNames: ['state'] as const,
          registers: [registry],
        });

  const off = [
    rt.onDispatch((o) => {
      const verb = rt.registry.get(o.verb) === undefined ? UNKNOWN_VERB_LABEL : o.verb;
      const outcome = outcomeLabel(o);
      dispatches.inc({ verb, outcome, reason: o.reason ?? '', surface: o.surface });
      latency.observe({ verb, outcome }, o.latency_ms / 1000);
    }),
    rt.onAuditRow(() => appended.inc()),
  ];

  async function readStore(): Promise<void> {
    waiting.reset();
    chainSeq.reset();
    deadLetters.reset();
    try {
      const { pending, heads, dead } = await readStoreGauges(rt.store, rt.clock());
      for (const h of heads) {
        chainSeq.set({ tenant: String(h.company_id) }, Number(h.audit_seq));
        waiting.set({ tenant: String(h.company_id) }, 0);
        deadLetters.set({ tenant: String(h.company_id) }, 0);
      }
      for (const p of pending) waiting.set({ tenant: String(p.company_id) }, Number(p.n));
      for (const d of dead) deadLetters.set({ tenant: String(d.company_id) }, d.n);
      storeUp.set(1);
    } catch (err) {
      storeUp.set(0);
      rt.logger.warn({ err: (err as Error).message }, 'metrics: the store could not be read');
    }
    if (pool !== undefined && poolGauge !== undefined) {
      poolGauge.set({ state: 'total' }, pool.totalCount);
      poolGauge.set({ state: 'idle' }, pool.idleCount);
      poolGauge.set({ state: 'waiting' }, pool.waitingCount);
    }
  }

  return {
    registry,
    contentType: registry.contentType,
    async render() {
      await readStore();
      return registry.metrics();
    },
    close() {
      for (const f of off) f();
    },
  };
}

function poolOf(rt: Runtime): { totalCount: number; idleCount: number; waitingCount: number } | undefined {
  const p = (
    rt.store as unknown as { pool?: { totalCount: number; idleCount: number; waitingCount: number } }
  ).pool;
  return p !== undefined && typeof p.totalCount === 'number' ? p : undefined;
}

export interface MetricsRouteOptions {
  metrics: SolidMetrics;
  /**
   * Bearer token a scraper must send (`Authorization: Bearer <token>`); compared in constant
   * time. Undefined: no token asked (only for a listener bound to its own port).
   */
  token?: string;
}

/**
 * `GET /metrics`. With a token: a missing or wrong `Authorization: Bearer` gets the envelope
 * 401 `auth_required` (not audited: a scrape is not a verb call).
 */
export const metricsRoute: FastifyPluginAsync<MetricsRouteOptions> = async (app, { metrics, token }) => {
  const want = token === undefined ? undefined : createHash('sha256').update(token).digest();
  app.get('/metrics', async (req, reply) => {
    if (want !== undefined) {
      const header = req.headers.authorization ?? '';
      const given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim() ?? '';
      const got = createHash('sha256').update(given).digest();
      if (!timingSafeEqual(got, want)) {
        // Answered, not audited: a scrape is not a verb call (and must not flood the log).
        return sendEnvelope(
          reply,
          transportEnvelope(
            '',
            'auth_required',
            'The metrics endpoint needs its token.',
            'Send Authorization: Bearer <token>, the value of SOLID_METRICS_TOKEN (--metrics-token) of this server.',
          ),
        );
      }
    }
    const body = await metrics.render();
    return reply.header('content-type', metrics.contentType).header('cache-control', 'no-store').send(body);
  });
};
