/**
 * Liveness and readiness.
 *   GET /healthz  200 `{ ok: true, status: "up" }` while the process serves requests.
 *   GET /readyz   200 `{ ok: true, status: "ready" }` when the store answers a ping within
 *                 READY_TIMEOUT_MS (1000 ms) and read audit rows can be written;
 *                 503 store_unavailable envelope (Retry-After: 1) when not — a stalled database
 *                 is reported within about a second, never waited for.
 * Spec: spec/transports.md §http-health.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { HttpPluginOptions } from './server.ts';
import { sendEnvelope } from './error-handler.ts';
import { transportEnvelope } from './envelope-map.ts';
import { pingWithin } from './deadline.ts';

export const healthRoutes: FastifyPluginAsync<HttpPluginOptions> = async (app, { rt }) => {
  app.get(
    '/healthz',
    {
      config: {
        openapi: {
          summary: 'Liveness: the process is up',
          tags: ['health'],
          responses: { 200: { description: 'Up' } },
        },
      },
    },
    async (_req, reply) => {
      return reply.header('cache-control', 'no-store').send({ ok: true, status: 'up' });
    },
  );
  app.get(
    '/readyz',
    {
      config: {
        openapi: {
          summary: 'Readiness: the store answers',
          tags: ['health'],
          responses: { 200: { description: 'Ready' }, 503: { description: 'store_unavailable envelope' } },
        },
      },
    },
    async (req, reply) => {
      if (rt.auditBuffer.unwritable) {
        return sendEnvelope(
          reply,
          transportEnvelope(
            '',
            'store_unavailable',
            'Audit rows cannot be written (the database is full, read-only or unreachable); reads are refused until they can.',
            'Free disk space or fix the database; the node answers again by itself once a flush succeeds.',
            { retry_after_seconds: 1, audit_unwritable: true },
          ),
        );
      }
      try {
        await pingWithin(rt);
      } catch (err) {
        req.log.warn({ err }, 'readiness: store ping failed');
        return sendEnvelope(
          reply,
          transportEnvelope(
            '',
            'store_unavailable',
            'The database does not answer.',
            'Check the database file or server; the API answers again once it is back.',
            { retry_after_seconds: 1 },
          ),
        );
      }
      return reply.header('cache-control', 'no-store').send({ ok: true, status: 'ready' });
    },
  );
};
