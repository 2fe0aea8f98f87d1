/**
 * The provisioning API on the HTTP server, one encapsulated Fastify plugin mounted by `solid serve`
 * (http-mounts.ts, name `platform`):
 *
 *   POST /api/v1/platform/{verb}     body: the verb's arguments (JSON object)
 *                                    Authorization: Bearer pk_solid_…  (a platform credential)
 *
 * The answer is the envelope of provisioning.ts with the HTTP status of its reason
 * (envelope-map.ts). Enrolment links are made on the server's public URL (SOLID_PUBLIC_URL, else
 * the one `solid serve` recorded, else the request's own origin). Spec: spec/platform.md §api.
 */
import type { FastifyInstance } from 'fastify';
import type { HttpPlugin, HttpPluginOptions } from '../transports/http/server.ts';
import { assertOneAuthorization } from '../transports/http/request-headers.ts';
import { apiKeyOf } from '../identity/api-key-auth.ts';
import { sendEnvelope } from '../transports/http/error-handler.ts';
import { recordedPublicUrl } from '../identity/public-url.ts';
import { callPlatform, isPlatformVerb } from './provisioning.ts';

/** The route prefix of the provisioning API. */
export const PLATFORM_API_PREFIX = '/api/v1/platform';

/** Build the plugin. */
export function createPlatformPlugin(): HttpPlugin {
  return async function platform(app: FastifyInstance, { rt }: HttpPluginOptions): Promise<void> {
    app.post<{ Params: { verb: string } }>(
      `${PLATFORM_API_PREFIX}/:verb`,
      {
        config: {
          openapi: {
            operationId: 'callPlatformVerb',
            summary:
              'Provisioning for platforms: one platform.* verb with a platform credential (spec/platform.md)',
            tags: ['platform'],
            security: [{ bearerApiKey: [] }],
            responses: Object.fromEntries(
              [
                [200, 'The verb ran'],
                [400, 'invalid_input'],
                [401, 'auth_invalid'],
                [403, 'platform_credential_required, role_denied, human_required, tenant_suspended'],
                [404, 'unknown_verb, not_found'],
                [409, 'export_required'],
              ].map(([code, description]) => [
                code,
                {
                  description,
                  content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
                },
              ]),
            ),
          },
        },
        schema: {
          params: {
            type: 'object',
            properties: { verb: { type: 'string', maxLength: 100 } },
            required: ['verb'],
          },
        },
      },
      async (request, reply) => {
        assertOneAuthorization(request.raw.rawHeaders);
        const verb = request.params.verb;
        const base =
          process.env.SOLID_PUBLIC_URL ??
          (await recordedPublicUrl(rt.store).catch(() => undefined)) ??
          `${request.protocol}://${request.host}`;
        const env = await callPlatform(
          rt,
          apiKeyOf(request.headers.authorization),
          isPlatformVerb(verb) ? verb : verb.slice(0, 100),
          request.body ?? {},
          { publicUrl: base },
        );
        return sendEnvelope(reply, env, rt.clock().getTime());
      },
    );
  };
}

/** The plugin with default options. */
export const platformPlugin: HttpPlugin = createPlatformPlugin();
