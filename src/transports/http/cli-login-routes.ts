/**
 * The browser login of the CLI over HTTP (the one-time code flow of `solid login`, RFC 8628
 * style: the human types the code their own terminal shows on a page of this server, sees who
 * asked, and picks the key's role):
 *
 *   POST /api/v1/cli-login               body { client_name? } (no credentials)
 *        → 200 { code, poll_secret, expires_at, poll_interval_seconds }; the CLI prints the code
 *          and `<base>/#/cli-login` (a page that asks for the code: no link carries it) and polls.
 *          The requester's address and User-Agent are recorded from the request.
 *   POST /api/v1/cli-login/poll          body { poll_secret }
 *        → 200 { status: "pending" } | 200 { status: "approved", api_key, key_id, company_id,
 *          user_id, role } (once) | 403 approval_rejected | 404 not_found
 *   GET  /api/v1/cli-login/{code}        human session → 200 { code, client_name, requester:
 *                                        { address, user_agent }, status, created_at, expires_at }
 *                                        | 401 session_invalid | 403 human_required | 404
 *   POST /api/v1/cli-login/{code}/approve  body { role }; human session + allowed Origin +
 *        X-CSRF-Token → 200 { approved: true, key_id, client_name, role } | 400 invalid_input
 *        (role) | 401 | 403 origin_denied / csrf_failed / human_required / role_denied (a role
 *        above the approver's) | 404 not_found | 409 approval_not_pending
 *   POST /api/v1/cli-login/{code}/deny     same checks, no body → 200 { denied: true }
 *
 * Only a **human** session decides (a person signed in with a passkey or TOTP): a session of an
 * agent credential (the transitional API-key login) and an API key are refused with
 * `human_required` (spec/consent.md §human-sign-in). Answers are envelopes with verb "cli_login".
 * The session and CSRF checks are the dashboard's own (request-guard.ts); their refusals
 * are audited by the HTTP error handler.
 * Spec: spec/transports.md §remote-login.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { isVerbError, VerbError } from '../../runtime/errors.ts';
import { reasonInfo } from '../../spec/reasons.ts';
import { ROLES, type Envelope, type Role } from '../../spec/types.ts';
import { isHuman } from '../../identity/principal.ts';
import { sendEnvelope } from './error-handler.ts';
import {
  notePrincipal,
  requireSessionForWrite,
  sessionRequired,
  sessionTokenOf,
} from '../../identity/request-guard.ts';
import type { SessionStore, WebSession } from '../../identity/session-store.ts';
import { CLI_LOGIN_PATH, type CliLoginStore, type LoginRequester } from '../../identity/cli-login-store.ts';

const VERB = 'cli_login';

/** Who sent this request, as the server saw it: `request.ip` and a printable User-Agent. */
function requesterOf(req: FastifyRequest): LoginRequester {
  const ua = req.headers['user-agent'];
  return {
    address: req.ip,
    // eslint-disable-next-line no-control-regex -- control characters are dropped from what a human reads
    user_agent: (typeof ua === 'string' ? ua : '').replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 200),
  };
}

/**
 * Only a person decides a CLI login: the session must be a human's (signed in with a passkey or
 * TOTP), never one an agent credential opened. @throws VerbError human_required
 */
function requireHuman(session: WebSession): void {
  if (isHuman(session.principal)) return;
  throw new VerbError(
    'human_required',
    'Only a person signed in to the dashboard may approve a command-line login; an agent credential cannot.',
    {
      hint: 'Sign in on the dashboard with your passkey or authenticator code, then type the code your terminal shows.',
    },
  );
}

/** The `role` of an approve body: one of the four roles. @throws VerbError invalid_input */
function roleOf(value: unknown): Role {
  if (typeof value === 'string' && (ROLES as readonly string[]).includes(value)) return value as Role;
  throw new VerbError('invalid_input', 'Pick the role of the new key: read_only, employee, admin or owner.', {
    hint: 'Send {"role": "employee"} (at most your own role).',
    details: { path: '/role' },
  });
}

function bodyOf(req: FastifyRequest): Record<string, unknown> {
  const b = req.body;
  if (b === undefined || b === null) return {};
  if (typeof b !== 'object' || Array.isArray(b))
    throw new VerbError('invalid_request', 'The body must be a JSON object.', {
      hint: 'Send {"client_name": "…"} or {"poll_secret": "…"}.',
    });
  return b as Record<string, unknown>;
}

function clientNameOf(value: unknown): string {
  if (value === undefined || value === null) return 'solid CLI';
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (typeof value !== 'string' || value.length > 100 || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new VerbError(
      'invalid_request',
      'client_name must be a string of at most 100 printable characters.',
      { hint: 'e.g. {"client_name": "solid CLI on laptop"}' },
    );
  }
  return value.trim() === '' ? 'solid CLI' : value.trim();
}

/**
 * Answer an outcome of the store: a VerbError that is not an auth or denial refusal becomes this
 * route's envelope; refusals go to the HTTP error handler, which audits them.
 */
async function answer(
  reply: FastifyReply,
  work: () => Promise<Record<string, unknown>>,
): Promise<FastifyReply> {
  let env: Envelope;
  try {
    env = { ok: true, verb: VERB, result: await work() };
  } catch (err) {
    if (!isVerbError(err)) throw err;
    const info = reasonInfo(err.reason);
    if (info.kind === 'auth' || (info.denial && err.reason !== 'approval_rejected')) throw err;
    env = { ok: false, verb: VERB, error: err.toEnvelopeError() };
  }
  return sendEnvelope(reply, env);
}

/** Register the five routes. `allowedOrigins`: the server's configured origins (request-guard.ts). */
export function registerCliLoginRoutes(
  app: FastifyInstance,
  deps: { rt: Runtime; logins: CliLoginStore; sessions: SessionStore; allowedOrigins: readonly string[] },
): void {
  const { logins, sessions, allowedOrigins } = deps;
  const docs = (summary: string) => ({ openapi: { summary, tags: ['auth'] } });

  app.post(
    CLI_LOGIN_PATH,
    { config: docs('Start a CLI browser login: a one-time code and a polling secret') },
    async function startCliLogin(req, reply) {
      const name = clientNameOf(bodyOf(req).client_name);
      return answer(reply, async () => ({ ...(await logins.start(name, requesterOf(req))) }));
    },
  );

  app.post(
    `${CLI_LOGIN_PATH}/poll`,
    { config: docs('Poll a CLI login with its secret; answers the new API key once approved') },
    async function pollCliLogin(req, reply) {
      const secret = bodyOf(req).poll_secret;
      return answer(reply, async () => ({ ...(await logins.poll(secret)) }));
    },
  );

  app.get(
    `${CLI_LOGIN_PATH}/:code`,
    {
      config: docs('Describe a pending CLI login: client, requester address and user agent (human session)'),
    },
    async function describeCliLogin(req: FastifyRequest<{ Params: { code: string } }>, reply) {
      const session = await sessions.lookup(sessionTokenOf(req));
      if (session === undefined) throw sessionRequired();
      notePrincipal(req, session.principal);
      requireHuman(session);
      return answer(reply, async () => ({ ...(await logins.describe(req.params.code)) }));
    },
  );

  app.post(
    `${CLI_LOGIN_PATH}/:code/approve`,
    {
      config: docs(
        'Approve a CLI login (human session, Origin, X-CSRF-Token; body {role}): creates a key for the approving user with the picked role',
      ),
    },
    async function approveCliLogin(req: FastifyRequest<{ Params: { code: string } }>, reply) {
      const session = await requireSessionForWrite(sessions, req, allowedOrigins);
      requireHuman(session);
      const role = roleOf(bodyOf(req).role);
      return answer(reply, async () => {
        const done = await logins.approve(req.params.code, session.principal, role);
        return {
          approved: true,
          key_id: done.key_id,
          client_name: done.client_name,
          role: done.role,
          company_id: session.principal.company_id,
          user_id: session.principal.user_id,
        };
      });
    },
  );

  app.post(
    `${CLI_LOGIN_PATH}/:code/deny`,
    { config: docs('Deny a CLI login (human session, Origin, X-CSRF-Token)') },
    async function denyCliLogin(req: FastifyRequest<{ Params: { code: string } }>, reply) {
      const session = await requireSessionForWrite(sessions, req, allowedOrigins);
      requireHuman(session);
      return answer(reply, async () => {
        await logins.deny(req.params.code, session.principal);
        return { denied: true };
      });
    },
  );
}
