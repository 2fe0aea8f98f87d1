/**
 * Time limits of the HTTP transport (spec/transports.md §http-deadlines, docs/operations.md
 * §time-limits):
 *
 * - **Request deadline** (installRequestDeadline): every request is answered within
 *   `timeoutMs` (default DEFAULT_REQUEST_TIMEOUT_MS = 10 000 ms; `solid serve
 *   --request-timeout-ms`, SOLID_REQUEST_TIMEOUT_MS; 0 = off). When the route has not answered
 *   by then, the client gets a 503 `store_unavailable` envelope with `Retry-After: 1` and
 *   `details.deadline_ms`; the work goes on to its own limits (statement and lock timeouts, the
 *   write budget) and its late answer is dropped. A write the deadline overtook may still commit:
 *   the envelope says the outcome is unknown, and a retry with the same Idempotency-Key returns
 *   the stored receipt or runs it once. A call of a verb that waits by design (`detached`:
 *   events.poll with `wait_ms`, macros.run) gets MAX_WAIT_MS (30 000 ms) more. A response
 *   already streaming (MCP's SSE, an elicitation) is never cut.
 * - **Closing** (installClosingEnvelope): once the server is closing (SIGTERM → `app.close()`),
 *   a request that still arrives on an open keep-alive connection is answered with a 503
 *   `server_closing` envelope (`Connection: close`, `Retry-After: 1`) instead of Fastify's
 *   default body, and a connection left idle by a response finished meanwhile is closed.
 * - **Readiness** (pingWithin): /readyz waits at most READY_TIMEOUT_MS (1000 ms) for the store.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { MAX_WAIT_MS } from '../../runtime/observe/event-stream.ts';
import { sendEnvelope, verbOfRequest } from './error-handler.ts';
import { transportEnvelope } from './envelope-map.ts';

/** Default request deadline in ms (SOLID_REQUEST_TIMEOUT_MS). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** How long /readyz waits for the store's ping before answering 503 (ms). */
export const READY_TIMEOUT_MS = 1000;

const timers = new WeakMap<FastifyRequest, NodeJS.Timeout>();

/**
 * Answer every request within `timeoutMs` (see the header); 0 or less installs nothing. Hooks on
 * `app` (root or encapsulated scope): onRequest arms the timer, preHandler extends it for a verb
 * that waits by design, onResponse (or the socket closing) clears it.
 */
export function installRequestDeadline(app: FastifyInstance, rt: Runtime, timeoutMs: number): void {
  if (!(timeoutMs > 0)) return;
  const arm = (request: FastifyRequest, reply: FastifyReply, ms: number) => {
    clearTimeout(timers.get(request));
    const timer = setTimeout(() => deadlinePassed(request, reply, ms), ms);
    timer.unref();
    timers.set(request, timer);
  };
  app.addHook('onRequest', async (request, reply) => {
    arm(request, reply, timeoutMs);
    reply.raw.once('close', () => clearTimeout(timers.get(request)));
  });
  // Callback hooks where they cannot answer: a promise per hook is a tick per request.
  app.addHook('preHandler', (request, reply, done) => {
    try {
      if (namesWaitingVerb(request, rt)) arm(request, reply, timeoutMs + MAX_WAIT_MS);
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  });
  app.addHook('onResponse', (request, _reply, done) => {
    clearTimeout(timers.get(request));
    done();
  });
}

function deadlinePassed(request: FastifyRequest, reply: FastifyReply, ms: number): void {
  timers.delete(request);
  if (reply.sent || reply.raw.headersSent || reply.raw.destroyed) return;
  request.log.warn({ deadline_ms: ms, url: request.url }, 'request deadline passed; answered 503');
  sendEnvelope(
    reply,
    transportEnvelope(
      verbOfRequest(request),
      'store_unavailable',
      `No answer within the request deadline of ${ms} ms (the database is slow or unreachable). If this was a write, its outcome is unknown.`,
      'Retry after Retry-After seconds with the same Idempotency-Key: a write that did commit returns its stored receipt, one that did not runs once.',
      { deadline_ms: ms, retry_after_seconds: 1 },
    ),
  );
}

/** Does the request call a `detached` verb (one that waits by design)? Route params or an MCP tools/call body. */
function namesWaitingVerb(request: FastifyRequest, rt: Runtime): boolean {
  const names: unknown[] = [verbOfRequest(request)];
  // MCP tools/call: `params.name` is the tool (dots as "__"), or call_verb's `arguments.name`.
  const body = request.body as { params?: { name?: unknown; arguments?: { name?: unknown } } } | undefined;
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    names.push(body.params?.name, body.params?.arguments?.name);
  }
  return names.some(
    (n) =>
      typeof n === 'string' &&
      n !== '' &&
      rt.registry.get(n.replace(/__/g, '.'))?.definition.detached === true,
  );
}

/**
 * Once `app` is closing, answer what still arrives with a 503 `server_closing` envelope and
 * `Connection: close` (Fastify's own `return503OnClosing` body is not an envelope; it is off).
 */
export function installClosingEnvelope(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // A response finished while closing leaves its keep-alive connection idle: close it then, or
  // server.close() would wait for the client's keep-alive timeout (Node closes idle connections
  // only when close() starts).
  app.addHook('onResponse', (_request, _reply, done) => {
    if (closing) setImmediate(() => app.server.closeIdleConnections());
    done();
  });
  app.addHook('onRequest', async (request, reply) => {
    if (!closing) return;
    reply.header('connection', 'close');
    return sendEnvelope(
      reply,
      transportEnvelope(
        verbOfRequest(request),
        'server_closing',
        'The server is shutting down and takes no new request.',
        'Retry on another node, or once this one is back (Retry-After seconds).',
        { retry_after_seconds: 1 },
      ),
    );
  });
}

/**
 * `rt.store.ping()` bounded by `ms` (default READY_TIMEOUT_MS): resolves when the store answered,
 * rejects with the store's error or, past `ms`, with an Error naming the wait.
 */
export function pingWithin(rt: Pick<Runtime, 'store'>, ms: number = READY_TIMEOUT_MS): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the store did not answer a ping within ${ms} ms`)), ms);
    timer.unref();
    rt.store.ping().then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
