/**
 * `GET /api/v1/agent/verb-hints`: the hints (src/runtime/verb-hints.ts) of every registered verb,
 * `{ hints: { <verb name>: VerbHints }, total }`, with an ETag (304 on If-None-Match) and
 * `Cache-Control: private, max-age=300` like the manifest. Mounted by the remote plugin.
 *
 * Spec: spec/transports.md §remote-hints.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { hintsOf, VERB_HINTS_PATH, type VerbHints } from '../../runtime/verb-hints.ts';
import { etagMatches, MANIFEST_CACHE_CONTROL } from './agent-routes.ts';

/** The hints of every registered verb, by verb name. */
export function allHints(rt: Runtime): Record<string, VerbHints> {
  const out: Record<string, VerbHints> = {};
  for (const v of rt.registry.all()) out[v.name] = hintsOf(v);
  return out;
}

/** Register `GET /api/v1/agent/verb-hints` (cached per registry change). */
export function registerVerbHintsRoute(app: FastifyInstance, rt: Runtime): void {
  let cached: { body: string; etag: string } | undefined;
  const unsubscribe = rt.registry.onChange(() => {
    cached = undefined;
  });
  app.addHook('onClose', async () => unsubscribe());
  app.get(VERB_HINTS_PATH, { config: { openapi: hintsDoc } }, async function verbHints(req, reply) {
    if (cached === undefined) {
      const hints = allHints(rt);
      const body = JSON.stringify({ hints, total: Object.keys(hints).length });
      cached = { body, etag: `"h.${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
    }
    reply.header('cache-control', MANIFEST_CACHE_CONTROL).header('etag', cached.etag);
    if (etagMatches(req.headers['if-none-match'], cached.etag)) return reply.code(304).send();
    return reply.type('application/json; charset=utf-8').send(cached.body);
  });
}

const hintsDoc = {
  operationId: 'verbHints',
  summary: 'Runtime facts of every verb beyond its VerbRecord (CLI shortcuts, consent class, role floor…)',
  description:
    'For thin clients (the remote `solid` CLI, the `solid mcp` bridge) that project the manifest themselves. Cache for 5 minutes; revalidate with If-None-Match.',
  tags: ['agent'],
  parameters: [{ name: 'If-None-Match', in: 'header', required: false, schema: { type: 'string' } }],
  responses: {
    200: {
      description: '{ hints: { <verb>: VerbHints }, total }',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['hints', 'total'],
            properties: { hints: { type: 'object' }, total: { type: 'integer' } },
          },
        },
      },
    },
    304: { description: 'Not modified (ETag matched)' },
  },
};
