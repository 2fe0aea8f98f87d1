/**
 * The browser-request checks of the WebMCP transport: which session a request carries, whether its
 * `Origin` is this server's own, and whether it carries the session's CSRF token. Each check
 * throws a VerbError whose reason the HTTP envelope map turns into a status:
 *
 *   session_invalid  401  no valid session cookie on a route that needs one
 *   origin_denied    403  `Origin` missing (with a session), or neither an allowed origin nor
 *                         this server's own origin on `localhost` / an IP literal (DNS rebinding:
 *                         origin-policy.ts `browserOriginAllowed`), or `Sec-Fetch-Site:
 *                         cross-site` on a state-changing request
 *   csrf_failed      403  `X-CSRF-Token` missing or not the session's token
 *
 * Spec: spec/transports.md §webmcp-session, §webmcp-csrf.
 */
import type { FastifyRequest } from 'fastify';
import { browserOriginAllowed, directOrigin } from './origin-policy.ts';
import { VerbError } from '../runtime/errors.ts';
import { parseCookies } from './cookies.ts';
import {
  CSRF_HEADER,
  SESSION_COOKIE,
  hashToken,
  liveSessionOwner,
  type SessionStore,
  type WebSession,
} from './session-store.ts';
import type { Store } from '../store/store.ts';
import { refuse } from '../runtime/refusals.ts';
import type { Principal } from '../spec/types.ts';

/** The session cookie's token on a request, if any. */
export function sessionTokenOf(request: FastifyRequest): string | undefined {
  return parseCookies(request.headers.cookie)[SESSION_COOKIE];
}

/**
 * The rate-limit bucket of the person (or, for a session opened before human sign-in, the key)
 * behind the request's live session cookie: `key:<key_id>` or `user:<company_id>:<user_id>`;
 * undefined without a live session. One indexed read; throws StoreError when the store is down or
 * the web_sessions table does not exist (WebMCP not mounted). spec/transports.md §rate-limits
 */
export async function sessionBucketOf(
  request: FastifyRequest,
  store: Store,
  now: Date,
): Promise<string | undefined> {
  const token = sessionTokenOf(request);
  if (token === undefined || token === '') return undefined;
  const owner = await liveSessionOwner(store, hashToken(token), now);
  if (owner === undefined) return undefined;
  return owner.key_id !== null ? `key:${owner.key_id}` : `user:${owner.company_id}:${owner.user_id}`;
}

/** Did this request arrive over https (TLS socket, or a trusted proxy said so)? */
export function isHttps(request: FastifyRequest): boolean {
  return request.protocol === 'https';
}

/**
 * This server's origin as the request addressed it on the socket (`http://127.0.0.1:3000`),
 * normalised; never from X-Forwarded-* headers (origin-policy.ts).
 */
export function ownOrigin(request: FastifyRequest): string | undefined {
  return directOrigin(request);
}

/**
 * Check the `Origin` of a state-changing request.
 *
 * @param allowed the configured origins (e.g. a dev front end, or the public origin of a reverse
 *   proxy), normalised; the server's own origin counts besides them only on `localhost` or an IP.
 * @param required true when the request rides on a session cookie: browsers always send `Origin`
 *   on POST/DELETE, so its absence means a non-browser client replaying a cookie.
 * @throws VerbError origin_denied
 */
export function checkOrigin(request: FastifyRequest, allowed: readonly string[], required: boolean): void {
  if (request.headers['sec-fetch-site'] === 'cross-site') {
    throw refuse.crossSite('Cross-site requests are refused.');
  }
  const origin = request.headers.origin;
  if (origin === undefined || origin === '') {
    if (!required) return;
    throw new VerbError(
      'origin_denied',
      'A request that uses the session cookie must carry an Origin header.',
      {
        hint: 'Send the request from a page of this server (browsers add Origin themselves).',
      },
    );
  }
  let given: string;
  try {
    given = new URL(origin).origin;
  } catch {
    throw new VerbError('origin_denied', 'The Origin header is not a valid origin.', {
      hint: 'Send the request from a page of this server.',
    });
  }
  if (browserOriginAllowed(request, given, allowed)) return;
  if (given === directOrigin(request))
    throw new VerbError(
      'origin_denied',
      `Requests from ${given.slice(0, 100)} are not allowed: that host name is not a configured origin of this server.`,
      {
        hint: `Open the server at http://localhost:<port>, or start it with --allowed-origin ${given.slice(0, 100)} (SOLID_ALLOWED_ORIGINS) if people reach it under that name.`,
      },
    );
  throw refuse.crossSite(`Requests from ${given.slice(0, 100)} are not allowed.`);
}

/**
 * Check the CSRF token of a state-changing session request (constant-time comparison).
 * @throws VerbError csrf_failed
 */
export function checkCsrf(sessions: SessionStore, session: WebSession, request: FastifyRequest): void {
  const given = request.headers[CSRF_HEADER];
  if (typeof given !== 'string' || given === '') {
    throw new VerbError('csrf_failed', 'The X-CSRF-Token header is missing.', {
      hint: 'Send the csrf_token returned by POST/GET /api/v1/session (also in the solid_csrf cookie) as X-CSRF-Token.',
    });
  }
  if (!sessions.csrfMatches(session, given)) {
    throw new VerbError('csrf_failed', 'The X-CSRF-Token header does not match this session.', {
      hint: 'Fetch the current token with GET /api/v1/session and send it as X-CSRF-Token.',
    });
  }
}

/** A missing or dead session on a route that needs one. */
export function sessionRequired(): VerbError {
  return new VerbError(
    'session_invalid',
    'No valid browser session: sign in first, or the session expired or was ended.',
    {
      hint: 'A person signs in on the dashboard (passkey, or a TOTP code from their authenticator app; a first sign-in uses the enrolment link). Agents call the API with their key instead.',
    },
  );
}

/**
 * The session of a state-changing request that needs one: looked up, then Origin (required) and
 * CSRF token checked, in that order.
 * @throws VerbError session_invalid, origin_denied, csrf_failed
 */
export async function requireSessionForWrite(
  sessions: SessionStore,
  request: FastifyRequest,
  allowedOrigins: readonly string[],
  /** How the caller acts (e.g. agent_type `dashboard`): the principal its refusals are audited as. */
  actingAs: (p: Principal) => Principal = (p) => p,
): Promise<WebSession> {
  const session = await sessions.lookup(sessionTokenOf(request));
  if (session === undefined) throw sessionRequired();
  notePrincipal(request, actingAs(session.principal));
  checkOrigin(request, allowedOrigins, true);
  checkCsrf(sessions, session, request);
  return session;
}

/**
 * Routes that know who the caller is before a check refuses them (e.g. a valid session whose
 * CSRF token is wrong) record the principal here, so the refusal's audit row names them.
 */
export function notePrincipal(request: FastifyRequest, principal: Principal): void {
  (request as FastifyRequest & { solidPrincipal?: Principal }).solidPrincipal = principal;
}

/** The principal noted for this request (notePrincipal), if any: what the error handler audits a refusal under. */
export function notedPrincipal(request: FastifyRequest): Principal | undefined {
  return (request as FastifyRequest & { solidPrincipal?: Principal }).solidPrincipal;
}
