/**
 * `GET /.well-known/solid-verbs-conformance`: the conformance declaration of this server (the test
 * pack's verbs that are registered and on http), one encapsulated Fastify plugin mounted by
 * `solid serve` (src/transports/server/http-mounts.ts, name `conformance`). Without the pack it
 * answers `404 not_found` with the hint to enable it. No key is needed: it says only what the
 * manifest already publishes. Looked up per request (a registry lookup per verb), so a pack
 * enabled or removed at run time shows at once.
 *
 * Spec: spec/conformance.md §declaration, §test-pack.
 */
import type { FastifyInstance } from 'fastify';
import type { HttpPlugin, HttpPluginOptions } from '../transports/http/server.ts';
import { sendEnvelope } from '../transports/http/error-handler.ts';
import { DECLARATION_PATH, packDeclaration } from './declaration.ts';

/** The plugin (no options). */
export const conformanceDeclarationPlugin: HttpPlugin = async function conformanceDeclaration(
  app: FastifyInstance,
  { rt }: HttpPluginOptions,
): Promise<void> {
  app.get(DECLARATION_PATH, { config: { openapi: declarationDoc } }, async (_req, reply) => {
    const declaration = packDeclaration((name) => rt.registry.get(name)?.surfaces.includes('http') === true);
    if (declaration === undefined) {
      return sendEnvelope(reply, {
        ok: false,
        verb: '',
        error: {
          reason: 'not_found',
          message: 'This server declares no test-safe verbs: the conformance pack is not enabled.',
          hint: 'Start it with `solid serve --conformance-pack` (or --demo) to let `solid conformance --allow-writes` run its write checks.',
        },
      });
    }
    return reply
      .code(200)
      .header('cache-control', 'no-cache')
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(declaration));
  });
};

const declarationDoc = {
  operationId: 'conformanceDeclaration',
  summary: 'The verbs this server declares safe for a conformance kit to write with (spec/conformance.md)',
  tags: ['conformance'],
  security: [{}],
  responses: {
    200: {
      description: 'The declaration (schema/conformance-declaration.json)',
      content: { 'application/json': { schema: { type: 'object' } } },
    },
    404: {
      description: 'not_found: the conformance pack is not enabled',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
    },
  },
};
