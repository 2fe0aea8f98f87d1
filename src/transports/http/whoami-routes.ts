/**
 * The routes of who am I (src/identity/whoami.ts answers them):
 *
 *   GET  /api/v1/whoami                  Authorization: Bearer sk_solid_… (absent: the sandbox)
 *   POST /api/v1/whoami/revoke-key       revokes the very key that authenticates the request
 *
 * Spec: spec/transports.md §remote-login.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { appendOperatorAudit } from '../../runtime/ledger/write/operator-audit.ts';
import type { Principal } from '../../spec/types.ts';
import { sendEnvelope } from './error-handler.ts';
import { apiKeyOf, authFailure } from '../../identity/api-key-auth.ts';
import { REVOKE_KEY_PATH, WHOAMI_PATH, whoAmI } from '../../identity/whoami.ts';

/** Register the two routes. */
export function registerWhoamiRoutes(app: FastifyInstance, rt: Runtime): void {
  app.get(
    WHOAMI_PATH,
    { config: { openapi: whoamiDoc } },
    async function whoami(req: FastifyRequest, reply: FastifyReply) {
      const header = req.headers.authorization;
      return sendEnvelope(
        reply,
        await whoAmI(rt, apiKeyOf(Array.isArray(header) ? header.join(', ') : header)),
      );
    },
  );

  app.post(
    REVOKE_KEY_PATH,
    { config: { openapi: revokeDoc } },
    async function revokeOwnKey(req: FastifyRequest, reply: FastifyReply) {
      const header = req.headers.authorization;
      const apiKey = apiKeyOf(Array.isArray(header) ? header.join(', ') : header);
      if (apiKey === null) {
        return sendEnvelope(reply, {
          ok: false,
          verb: 'whoami.revoke_key',
          error: {
            reason: 'auth_required',
            message: 'Send the key to revoke as Authorization: Bearer sk_solid_….',
            hint: 'Only the holder of a key may revoke it this way.',
          },
        });
      }
      let p: Principal;
      try {
        p = await rt.tenants.authenticate(apiKey);
      } catch (err) {
        return sendEnvelope(reply, {
          ...(await authFailure(rt, { surface: 'http', address: req.ip }, 'whoami.revoke_key', err)),
          verb: 'whoami.revoke_key',
        });
      }
      const now = rt.clock();
      const revoked = await rt.store.write(async (tx) => {
        const done = await rt.tenants.revokeKey(tx, p.company_id, p.key_id!, now);
        if (done) {
          await appendOperatorAudit(tx, {
            company_id: p.company_id,
            action: 'api_key.revoke_own',
            category: 'auth',
            request_data: { key_id: p.key_id, user_id: p.user_id, role: p.role },
            entity_type: 'api_key',
            entity_id: p.key_id,
            now,
          });
        }
        return done;
      });
      rt.tenants.invalidate();
      return sendEnvelope(reply, {
        ok: true,
        verb: 'whoami.revoke_key',
        result: { revoked, key_id: p.key_id ?? null },
      });
    },
  );
}

const whoamiDoc = {
  operationId: 'whoami',
  summary: 'The principal of the presented API key: tenant, user, role, tier',
  tags: ['auth'],
  security: [{}, { bearerApiKey: [] }],
  responses: {
    200: {
      description: 'The principal',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
    },
    401: {
      description: 'auth_invalid',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
    },
  },
};

const revokeDoc = {
  operationId: 'revokeOwnKey',
  summary: 'Revoke the API key that authenticates this request (solid logout --revoke)',
  tags: ['auth'],
  security: [{ bearerApiKey: [] }],
  responses: {
    200: {
      description: 'Revoked',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
    },
    401: {
      description: 'auth_required, auth_invalid',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
    },
  },
};
