/**
 * Browser session routes (spec/transports.md §webmcp-session):
 *
 *   POST   /api/v1/session   body { api_key }  → 200 session + csrf_token, sets the cookies
 *                            401 auth_invalid (audited by the runtime), 400 invalid_request,
 *                            403 origin_denied (an Origin other than this server's)
 *   GET    /api/v1/session   → 200 who am I (+ csrf_token), or 401 session_invalid
 *   DELETE /api/v1/session   → 200 logged out (row deleted, cookies cleared); with a live session
 *                            it needs the same-origin Origin and X-CSRF-Token (403 otherwise)
 *
 * Answers are envelopes with verb "session": `{ ok: true, verb, result: SessionInfo }`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { VerbError } from '../../runtime/errors.ts';
import { API_KEY_PREFIX } from '../../runtime/tenants.ts';
import type { Envelope } from '../../spec/types.ts';
import { sendEnvelope } from './error-handler.ts';
import { serializeCookie } from '../../identity/cookies.ts';
import {
  checkOrigin,
  isHttps,
  requireSessionForWrite,
  sessionRequired,
  sessionTokenOf,
} from '../../identity/request-guard.ts';
import {
  CSRF_COOKIE,
  SESSION_COOKIE,
  sessionRequiresHuman,
  type SessionStore,
  type WebSession,
} from '../../identity/session-store.ts';
import { authFailure } from '../../identity/api-key-auth.ts';

const sessionCookie =
  'Session cookie `solid_session` from a human sign-in; state-changing calls also need `X-CSRF-Token` and a same-origin `Origin` (spec/transports.md §webmcp-csrf).';

/** The OpenAPI operation of one session route (`config.openapi`, spec/transports.md §http-openapi). */
function op(
  operationId: string,
  summary: string,
  description: string,
  extra: Record<string, unknown> = {},
): { openapi: Record<string, unknown> } {
  return {
    openapi: {
      operationId,
      tags: ['webmcp'],
      summary,
      description,
      responses: {
        default: {
          description:
            'Envelope (errors: session_invalid 401, csrf_failed / origin_denied 403, invalid_request 400, …)',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
        },
      },
      security: [{ sessionCookie: [] }],
      ...extra,
    },
  };
}

/** `config` of each session route, by "METHOD path". */
const ROUTE_DOCS = {
  'POST /api/v1/session': op(
    'session_login',
    'Log in with an API key',
    'Body `{ "api_key": "sk_solid_…" }`. Sets the HttpOnly session cookie and the CSRF cookie; answers the principal and `csrf_token`.',
    {
      security: [],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { type: 'object', required: ['api_key'], properties: { api_key: { type: 'string' } } },
          },
        },
      },
    },
  ),
  'GET /api/v1/session': op(
    'session_get',
    'The current browser session',
    `Principal, expiry and CSRF token, or 401 session_invalid. ${sessionCookie}`,
  ),
  'DELETE /api/v1/session': op(
    'session_logout',
    'Log out',
    `Deletes the session and clears its cookies. ${sessionCookie}`,
  ),
};

/** What session answers carry in `result`. */
export interface SessionInfo {
  company_id: number;
  tenant_name: string;
  user_id: number;
  role: string;
  tier: string;
  key_id: string | null;
  /** `human` for a person signed in (passkey, TOTP); `agent` for the transitional API-key login. */
  actor: string;
  /** The signed-in person's name (human sessions). */
  user_name: string | null;
  /** ISO 8601 absolute expiry. */
  expires_at: string;
  /** Send as X-CSRF-Token on every state-changing request. */
  csrf_token: string;
}

export interface SessionRouteDeps {
  rt: Runtime;
  sessions: SessionStore;
  allowedOrigins: readonly string[];
}

const VERB = 'session';

/** The `result` of a session answer. */
export function info(session: WebSession): SessionInfo {
  const p = session.principal;
  return {
    company_id: p.company_id,
    tenant_name: session.tenantName,
    user_id: p.user_id,
    role: p.role,
    tier: p.tier,
    key_id: p.key_id ?? null,
    actor: p.actor,
    user_name: p.user_name ?? null,
    expires_at: session.expiresAt,
    csrf_token: session.csrfToken,
  };
}

/** The Set-Cookie values of a new session (HttpOnly session cookie, readable CSRF cookie). */
export function sessionCookies(
  request: FastifyRequest,
  token: string,
  csrf: string,
  maxAgeSeconds: number,
): string[] {
  const secure = isHttps(request);
  return [
    serializeCookie(SESSION_COOKIE, token, { maxAgeSeconds, httpOnly: true, secure }),
    serializeCookie(CSRF_COOKIE, csrf, { maxAgeSeconds, httpOnly: false, secure }),
  ];
}

function clearCookies(request: FastifyRequest): string[] {
  return sessionCookies(request, '', '', 0);
}

function ok(result: Record<string, unknown>): Envelope {
  return { ok: true, verb: VERB, result };
}

function fail(err: VerbError): Envelope {
  return { ok: false, verb: VERB, error: err.toEnvelopeError() };
}

/** Register the three session routes on `app`. */
export function registerSessionRoutes(app: FastifyInstance, deps: SessionRouteDeps): void {
  const { rt, sessions, allowedOrigins } = deps;

  app.post(
    '/api/v1/session',
    { config: ROUTE_DOCS['POST /api/v1/session'] },
    async function login(request: FastifyRequest, reply: FastifyReply) {
      checkOrigin(request, allowedOrigins, false);
      const body = request.body as Record<string, unknown> | undefined;
      if (
        body === null ||
        typeof body !== 'object' ||
        Array.isArray(body) ||
        typeof body.api_key !== 'string' ||
        body.api_key === ''
      ) {
        throw new VerbError(
          'invalid_request',
          'The body must be a JSON object with a non-empty "api_key" string.',
          {
            hint: 'POST {"api_key": "sk_solid_…"} with Content-Type: application/json.',
          },
        );
      }
      let principal;
      try {
        principal = await rt.tenants.authenticate(body.api_key);
      } catch (err) {
        const envelope = await authFailure(
          rt,
          { surface: 'webmcp', address: request.ip },
          'session.login',
          err,
        );
        return sendEnvelope(reply.header('set-cookie', clearCookies(request)), { ...envelope, verb: VERB });
      }
      // An OAuth access token (src/oauth: a grant's, or an external IdP's) never opens a session,
      // not even an agent's: it was delegated to a client program for the API and /mcp only.
      // Whatever is not an sk_solid_ key came through the bearer authenticator. spec/consent.md §channels
      if (!body.api_key.startsWith(API_KEY_PREFIX) || principal.key_id?.startsWith('grant:') === true) {
        const envelope = await rt.recordRefusal(
          { principal, surface: 'webmcp', address: request.ip },
          'session.login',
          sessionRequiresHuman(),
        );
        return sendEnvelope(reply.header('set-cookie', clearCookies(request)), { ...envelope, verb: VERB });
      }
      // A fresh token on every login (no session fixation); the previous session of this browser ends.
      await sessions.destroy(sessionTokenOf(request));
      const { token, session } = await sessions.createForApiKey(principal);
      reply.header('set-cookie', sessionCookies(request, token, session.csrfToken, sessions.ttlSeconds));
      return sendEnvelope(reply, ok({ ...info(session) }));
    },
  );

  app.get(
    '/api/v1/session',
    { config: ROUTE_DOCS['GET /api/v1/session'] },
    async function whoAmI(request: FastifyRequest, reply: FastifyReply) {
      const session = await sessions.lookup(sessionTokenOf(request));
      if (session === undefined) {
        if (sessionTokenOf(request) !== undefined) reply.header('set-cookie', clearCookies(request));
        return sendEnvelope(reply, fail(sessionRequired()));
      }
      return sendEnvelope(reply, ok({ ...info(session) }));
    },
  );

  app.delete(
    '/api/v1/session',
    { config: ROUTE_DOCS['DELETE /api/v1/session'] },
    async function logout(request: FastifyRequest, reply: FastifyReply) {
      const token = sessionTokenOf(request);
      if ((await sessions.lookup(token)) !== undefined)
        await requireSessionForWrite(sessions, request, allowedOrigins);
      const ended = await sessions.destroy(token);
      reply.header('set-cookie', clearCookies(request));
      return sendEnvelope(reply, ok({ logged_out: ended }));
    },
  );
}
