/**
 * The WebMCP endpoints (spec/transports.md §webmcp):
 *
 *   GET  /api/v1/webmcp/manifest?surface={dashboard|portal|developer|tenant-site|public}[&toolsets=a,b]
 *        → 200 { surface, tools: WebmcpTool[] } with a strong ETag (304 on If-None-Match) and
 *          `Cache-Control: no-cache`; 400 invalid_request for a missing or unknown surface.
 *          No session needed: the manifest is the registry's public projection.
 *   POST /api/v1/webmcp/execute/{tool_name}
 *        body { input?, surface, confirm?, nonce?, typed_phrase?, idempotency_key? }
 *        → the dispatch envelope, status from envelopeToHttp (200, 202 dispatch_pending, 4xx…).
 *          With a session: principal from the session, same-origin Origin and X-CSRF-Token
 *          required. Without one: only `surface: "public"` runs, as the keyless sandbox
 *          principal (reads only; writes answer auth_required). A verb not on that page surface
 *          → 403 surface_denied (decided and audited by dispatch).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { VerbError } from '../../runtime/errors.ts';
import { parseCallBody } from './call-body.ts';
import { WEBMCP_SURFACES } from '../../spec/types.ts';
import { dispatchAndReply } from './browser-dispatch.ts';
import { isWebmcpSurface, webmcpManifestFor } from './manifest.ts';
import { parseToolsetNames } from '../../runtime/toolsets.ts';
import { checkCsrf, checkOrigin, sessionRequired, sessionTokenOf } from '../../identity/request-guard.ts';
import { notePrincipal } from '../../identity/request-guard.ts';
import type { SessionStore } from '../../identity/session-store.ts';
import { ROUTE_DOCS } from './route-docs.ts';
import { actingForUser } from '../../identity/principal.ts';

export interface WebmcpRouteDeps {
  rt: Runtime;
  sessions: SessionStore;
  allowedOrigins: readonly string[];
  /** Body limit of the execute route in bytes. */
  executeBodyLimitBytes: number;
}

/** Register the manifest and execute routes on `app`. */
export function registerWebmcpRoutes(app: FastifyInstance, deps: WebmcpRouteDeps): void {
  const { rt, sessions, allowedOrigins } = deps;

  app.get(
    '/api/v1/webmcp/manifest',
    { config: ROUTE_DOCS['GET /api/v1/webmcp/manifest'] },
    async function manifest(request: FastifyRequest, reply: FastifyReply) {
      const query = request.query as Record<string, unknown> | undefined;
      const surface = query?.surface;
      if (!isWebmcpSurface(surface)) {
        throw new VerbError(
          'invalid_request',
          `Unknown WebMCP surface ${JSON.stringify(String(surface ?? '')).slice(0, 60)}.`,
          {
            hint: `Use ?surface= one of ${WEBMCP_SURFACES.join(', ')}.`,
            details: { surfaces: [...WEBMCP_SURFACES] },
          },
        );
      }
      const toolsets = query?.toolsets;
      if (toolsets !== undefined && typeof toolsets !== 'string')
        throw new VerbError('invalid_request', 'Give ?toolsets= once, as a comma-separated list.', {
          hint: 'E.g. ?surface=portal&toolsets=customer,scheduling.',
        });
      const { manifest: body, etag } = webmcpManifestFor(rt, surface, parseToolsetNames(toolsets));
      reply.header('etag', etag).header('cache-control', 'no-cache');
      if (request.headers['if-none-match'] === etag) return reply.code(304).send();
      return reply.type('application/json; charset=utf-8').send(body);
    },
  );

  app.post(
    '/api/v1/webmcp/execute/:tool_name',
    {
      bodyLimit: deps.executeBodyLimitBytes,
      config: ROUTE_DOCS['POST /api/v1/webmcp/execute/:tool_name'],
      // Before the body is parsed: a signed-in page's 415, malformed or duplicate-key body is then
      // an audited attempt in its tenant (the error handler reads the noted principal).
      onRequest: async (request: FastifyRequest) => {
        const session = await sessions.lookup(sessionTokenOf(request));
        if (session !== undefined) notePrincipal(request, session.principal);
      },
    },
    async function execute(request: FastifyRequest, reply: FastifyReply) {
      const toolName = String((request.params as Record<string, unknown>).tool_name ?? '');
      const session = await sessions.lookup(sessionTokenOf(request));
      if (session !== undefined) {
        notePrincipal(request, session.principal);
        checkOrigin(request, allowedOrigins, true);
        checkCsrf(sessions, session, request);
      }
      // With a session a malformed body is an audited attempt (the error handler knows the principal).
      const body = parseCallBody(request.body, { surface: true });
      if (session === undefined) {
        if (body.surface !== 'public') throw sessionRequired();
        checkOrigin(request, allowedOrigins, false);
      }
      const caller = {
        // Page tool calls are made by the browser's in-page agent on the signed-in user's session:
        // an agent acting for that user, never a human channel (spec/consent.md §channels).
        principal: session === undefined ? null : actingForUser(session.principal, `webmcp:${body.surface}`),
        surface: 'webmcp' as const,
        webmcpSurface: body.surface,
      };
      return dispatchAndReply(rt, request, reply, caller, toolName, body);
    },
  );
}
