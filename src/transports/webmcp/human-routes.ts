/**
 * The human side of the dashboard plugin: the identity room's enrolment and sign-in routes
 * (src/identity/sign-in-routes.ts) wired to this plugin's session store and cookies, and the
 * approval page's API (spec/consent.md §approval-page):
 *
 *   POST /api/v1/approval-page/dispatch/{verb}   verb ∈ approvals.list | approvals.approve | approvals.reject
 *        body { input } → the dispatch envelope. Session, same-origin Origin and X-CSRF-Token
 *        required. The call is the signed-in human on the `approval_page` channel (provenance:
 *        "typed by Jane Ruiz on the approval page"); a session that is not a human's (the
 *        transitional API-key login) stays an agent and the approvals verbs refuse it.
 *
 * The page itself (`GET /approvals/:approval_id`, `GET /enrol/:token`) is the dashboard page
 * (dashboard-routes.ts): web/dashboard.ts routes on the path.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { VerbError } from '../../runtime/errors.ts';
import type { Principal } from '../../spec/types.ts';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { createHumanSession, type SessionStore, type WebSession } from '../../identity/session-store.ts';
import { humanPrincipal, onChannel } from '../../identity/principal.ts';
import { registerSignInRoutes } from '../../transports/http/sign-in-routes.ts';
import type { User } from '../../identity/users.ts';
import { dispatchAndReply } from './browser-dispatch.ts';
import { parseCallBody } from './call-body.ts';
import { checkOrigin, requireSessionForWrite, sessionTokenOf } from '../../identity/request-guard.ts';
import { info, sessionCookies } from '../../transports/http/session-routes.ts';

/** The verbs the approval page may call. */
export const APPROVAL_PAGE_VERBS = ['approvals.list', 'approvals.approve', 'approvals.reject'] as const;

export interface HumanRouteDeps {
  rt: Runtime;
  sessions: SessionStore;
  allowedOrigins: readonly string[];
  bodyLimitBytes: number;
}

/** The session's principal on the approval page: a human stays human with channel approval_page. */
function approvalPagePrincipal(p: Principal): Principal {
  return onChannel(p, 'approval_page', 'approval_page');
}

const checked = new WeakMap<FastifyRequest, WebSession>();

/** Register the sign-in routes and the approval page's API on `app`. */
export function registerHumanRoutes(app: FastifyInstance, deps: HumanRouteDeps): void {
  const { rt, sessions, allowedOrigins } = deps;

  registerSignInRoutes(app, {
    rt,
    allowedOrigins,
    checkOrigin,
    async openSession(request: FastifyRequest, reply: FastifyReply, user: User) {
      const tenant = await rt.tenants.get(user.company_id);
      if (tenant === undefined) throw new VerbError('signin_failed', 'The sign-in did not verify.');
      // A fresh token on every sign-in (no session fixation); this browser's previous session ends.
      await sessions.destroy(sessionTokenOf(request));
      const { token, session } = await createHumanSession(
        sessions,
        humanPrincipal(
          {
            company_id: user.company_id,
            user_id: user.user_id,
            role: user.role,
            tier: tenant.tier,
            agent_type: 'webmcp',
          },
          { user_name: user.name },
        ),
      );
      reply.header('set-cookie', sessionCookies(request, token, session.csrfToken, sessions.ttlSeconds));
      return { ok: true, verb: 'session', result: { ...info(session) } };
    },
    async signedIn(request: FastifyRequest) {
      const session = await requireSessionForWrite(sessions, request, allowedOrigins);
      const p = session.principal;
      return { company_id: p.company_id, user_id: p.user_id, role: p.role, human: p.actor === 'human' };
    },
  });

  app.post(
    '/api/v1/approval-page/dispatch/:verb',
    {
      bodyLimit: deps.bodyLimitBytes,
      config: {
        openapi: {
          operationId: 'approval_page_dispatch',
          tags: ['dashboard'],
          summary: 'Decide an approval as the signed-in human (approval page)',
          description:
            'approvals.list, approvals.approve or approvals.reject on the approval_page channel. Session cookie, same-origin Origin and X-CSRF-Token required.',
          parameters: [{ name: 'verb', in: 'path', required: true, schema: { type: 'string' } }],
          security: [{ sessionCookie: [] }],
          responses: {
            default: {
              description: 'Envelope',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
            },
          },
        },
      },
      onRequest: async (request: FastifyRequest) => {
        checked.set(
          request,
          await requireSessionForWrite(sessions, request, allowedOrigins, approvalPagePrincipal),
        );
      },
    },
    async function approvalPageDispatch(request: FastifyRequest, reply: FastifyReply) {
      const verb = String((request.params as Record<string, unknown>).verb ?? '');
      if (!(APPROVAL_PAGE_VERBS as readonly string[]).includes(verb))
        throw new VerbError(
          'invalid_request',
          `The approval page calls only ${APPROVAL_PAGE_VERBS.join(', ')}.`,
          {
            hint: 'Use POST /api/v1/dashboard/dispatch/{verb} for other verbs.',
          },
        );
      const session = checked.get(request)!;
      const body = parseCallBody(request.body, { surface: false });
      return dispatchAndReply(
        rt,
        request,
        reply,
        { principal: approvalPagePrincipal(session.principal), surface: 'http' },
        verb,
        body,
      );
    },
  );
}
