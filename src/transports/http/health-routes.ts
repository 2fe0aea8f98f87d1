/**
 * Liveness and readiness.
 *   GET /healthz  200 `{ ok: true, status: "up" }` while the process serves requests.
 *   GET /readyz   200 `{ ok: true, status: "ready" }` when the store answers a ping;
 *                 503 store_unavailable envelope when it does not.
 * Spec: spec/transports.md §http-health.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { HttpPluginOptions } from './server.ts';
import { sendEnvelope } from './error-handler.ts';
import { transportEnvelope } from './envelope-map.ts';

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
      try {
        await rt.store.ping();
      } catch (err) {
        req.log.warn({ err }, 'readiness: store ping failed');
        return sendEnvelope(
          reply,
          transportEnvelope(
            '',
            'store_unavailable',
            'The database does not answer.',
            'Check the database file or server; the API answers again once it is back.',
          ),
        );
      }
      return reply.header('cache-control', 'no-store').send({ ok: true, status: 'ready' });
    },
  );
};
