/**
 * Who am I: the principal an API key resolves to (tenant, user, role, tier), for `solid whoami`
 * and `solid login` (which verifies a pasted key with it).
 *
 *   GET  /api/v1/whoami                  Authorization: Bearer sk_solid_… (absent: the sandbox)
 *        → 200 { ok: true, verb: "whoami", result: WhoAmI }
 *        → 401 auth_invalid (audited, like any failed authentication)
 *   POST /api/v1/whoami/revoke-key       revokes the very key that authenticates the request
 *        (`solid logout --revoke`); audited in the key's tenant → 200 { revoked: true, key_id }
 *
 * `whoAmI(rt, apiKey)` is the one function behind both the route and the embedded `solid whoami`.
 * Spec: spec/transports.md §remote-login.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TransportRuntime as Runtime } from '../transports/runtime-surface.ts';
import { appendOperatorAudit } from '../runtime/ledger/write/operator-audit.ts';
import type { Envelope, Principal } from '../spec/types.ts';
import { sendEnvelope } from '../transports/http/error-handler.ts';
import { apiKeyOf } from '../transports/http/request-headers.ts';
import { authFailure } from './api-key-auth.ts';

export const WHOAMI_PATH = '/api/v1/whoami';
export const REVOKE_KEY_PATH = '/api/v1/whoami/revoke-key';

/** What `whoami` answers. */
export interface WhoAmI extends Record<string, unknown> {
  company_id: number;
  tenant_name: string;
  user_id: number;
  role: string;
  tier: string;
  agent_type: string;
  key_id: string | null;
  /** True for the keyless sandbox principal (reads only). */
  sandbox: boolean;
}

async function describe(rt: Runtime, p: Principal): Promise<WhoAmI> {
  const tenant = await rt.tenants.get(p.company_id);
  return {
    company_id: p.company_id,
    tenant_name: tenant?.name ?? '',
    user_id: p.user_id,
    role: p.role,
    tier: p.tier,
    agent_type: p.agent_type,
    key_id: p.key_id ?? null,
    sandbox: p.sandbox === true,
  };
}

/**
 * The envelope of "who am I" for an API key (null/empty: the sandbox principal). A bad key answers
 * the audited auth_invalid envelope; no sandbox tenant answers auth_required.
 */
export async function whoAmI(
  rt: Runtime,
  apiKey: string | null,
  surface: 'http' | 'cli' = 'http',
): Promise<Envelope> {
  let principal: Principal;
  try {
    principal =
      apiKey === null || apiKey === '' ? await rt.sandboxPrincipal() : await rt.tenants.authenticate(apiKey);
  } catch (err) {
    return { ...(await authFailure(rt, { surface }, 'whoami', err)), verb: 'whoami' };
  }
  return { ok: true, verb: 'whoami', result: await describe(rt, principal) };
}

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
