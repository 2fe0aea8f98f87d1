/**
 * Request ids and the one log line per request (spec/transports.md §request-log).
 *
 * - The request id is the caller's `x-request-id` when it is a sane token (1–128 of
 *   `A-Z a-z 0-9 . _ : -`), else the trace id of a valid W3C `traceparent`, else a fresh UUID. It
 *   is echoed in the `x-request-id` response header and bound to every log line of the request.
 * - With an OpenTelemetry SDK installed, the request runs in the context extracted from its
 *   `traceparent`, so the dispatch spans of the request are children of the caller's span.
 * - After the response, one pino line at info (`msg: "request"`): reqId, method, path (no query
 *   string), status, duration_ms, and from the dispatches the request made (captured through
 *   `rt.onDispatch` in the request's async context): verb, outcome, reason, audit_id, and
 *   `dispatches` when there were several. 5xx answers log at error. Headers, query strings and
 *   bodies are never logged, so API keys, cookies, typed phrases and nonces cannot reach the log.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ROOT_CONTEXT, context, propagation } from '@opentelemetry/api';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { outcomeLabel, type OutcomeLabel } from '../../runtime/observe/outcome-label.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;
/** Dispatches remembered per request for the log line (a batch or macro may make more). */
const MAX_DISPATCHES_LOGGED = 20;

interface DispatchFact {
  verb: string;
  outcome: OutcomeLabel;
  reason: string | null;
  audit_id: number | null;
}

interface RequestFacts {
  dispatches: DispatchFact[];
  count: number;
}

const facts = new AsyncLocalStorage<RequestFacts>();
const factsOf = new WeakMap<FastifyRequest, RequestFacts>();

/**
 * Fastify `genReqId`: the caller's x-request-id if sane, else the traceparent's trace id, else
 * a random UUID. Never throws.
 */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  if (typeof given === 'string' && REQUEST_ID.test(given)) return given;
  const parent = req.headers.traceparent;
  if (typeof parent === 'string') {
    const m = TRACEPARENT.exec(parent.trim());
    if (m !== null && !/^0+$/.test(m[1]!)) return m[1]!;
  }
  return randomUUID();
}

/**
 * Install the request-id echo and the per-request log line on `app` (its root scope, so every
 * plugin's routes are covered). `log: false` keeps the ids and the trace context but writes no
 * request lines.
 */
export function installRequestLog(app: FastifyInstance, rt: Runtime, options: { log: boolean }): void {
  const off = rt.onDispatch((o) => {
    const f = facts.getStore();
    if (f === undefined) return;
    f.count++;
    if (f.dispatches.length < MAX_DISPATCHES_LOGGED)
      f.dispatches.push({
        verb: o.verb.slice(0, 200),
        outcome: outcomeLabel(o),
        reason: o.reason,
        audit_id: o.audit_id,
      });
  });
  app.addHook('onClose', async () => off());

  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    const f: RequestFacts = { dispatches: [], count: 0 };
    factsOf.set(request, f);
    const parent =
      typeof request.headers.traceparent === 'string'
        ? propagation.extract(context.active() ?? ROOT_CONTEXT, request.headers)
        : context.active();
    // Everything after done() runs in this context; a body arriving later on the socket's own
    // context is handed on in it too (Fastify's body parser binds its callback to the context
    // of the request, an AsyncResource of its own), so the route and its dispatches see `f`.
    context.with(parent, () => facts.run(f, done));
  });
  if (!options.log) return;
  app.addHook('onResponse', (request, reply, done) => {
    const f = factsOf.get(request);
    const first = f?.dispatches[0];
    const line: Record<string, unknown> = {
      method: request.method,
      path: request.url.split('?')[0]!.slice(0, 300),
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime * 100) / 100,
    };
    if (first !== undefined) {
      line.verb = first.verb;
      line.outcome = first.outcome;
      if (first.reason !== null) line.reason = first.reason;
      if (first.audit_id !== null) line.audit_id = first.audit_id;
      if (f!.count > 1) line.dispatches = f!.count;
    }
    const parent = request.headers.traceparent;
    const traced = typeof parent === 'string' ? TRACEPARENT.exec(parent.trim()) : null;
    if (traced !== null) line.trace_id = traced[1];
    if (reply.statusCode >= 500) request.log.error(line, 'request');
    else request.log.info(line, 'request');
    done();
  });
}
