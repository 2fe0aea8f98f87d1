/**
 * The browser login of the CLI over HTTP (the one-time code flow of `solid login`):
 *
 *   POST /api/v1/cli-login               body { client_name? } (no credentials)
 *        → 200 { code, poll_secret, expires_at, poll_interval_seconds }; the CLI opens
 *          `<base>/#/cli-login?code=<code>` and polls
 *   POST /api/v1/cli-login/poll          body { poll_secret }
 *        → 200 { status: "pending" } | 200 { status: "approved", api_key, key_id, company_id,
 *          user_id, role } (once) | 403 approval_rejected | 404 not_found
 *   GET  /api/v1/cli-login/{code}        dashboard session → 200 { code, client_name, status,
 *                                        created_at, expires_at } | 401 session_invalid | 404
 *   POST /api/v1/cli-login/{code}/approve  dashboard session + same Origin + X-CSRF-Token
 *        → 200 { approved: true, key_id, client_name, role } | 401 | 403 origin_denied /
 *          csrf_failed | 404 not_found | 409 approval_not_pending
 *   POST /api/v1/cli-login/{code}/deny     same checks → 200 { denied: true }
 *
 * Answers are envelopes with verb "cli_login". The session and CSRF checks are the dashboard's
 * own (request-guard.ts); their refusals are audited by the HTTP error handler.
 * Spec: spec/transports.md §remote-login.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TransportRuntime as Runtime } from '../transports/runtime-surface.ts';
import { isVerbError, VerbError } from '../runtime/errors.ts';
import { reasonInfo } from '../spec/reasons.ts';
import type { Envelope } from '../spec/types.ts';
import { sendEnvelope } from '../transports/http/error-handler.ts';
import { requireSessionForWrite, sessionRequired, sessionTokenOf } from './request-guard.ts';
import type { SessionStore } from './session-store.ts';
import type { CliLoginStore } from './cli-login-store.ts';

export const CLI_LOGIN_PATH = '/api/v1/cli-login';
const VERB = 'cli_login';

/** The dashboard route a human opens to approve `code` (a hash route of the page at `/`). */
export function approvalPageUrl(baseUrl: string, code: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/#/cli-login?code=${encodeURIComponent(code)}`;
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

/** Register the five routes. */
export function registerCliLoginRoutes(
  app: FastifyInstance,
  deps: { rt: Runtime; logins: CliLoginStore; sessions: SessionStore },
): void {
  const { logins, sessions } = deps;
  const docs = (summary: string) => ({ openapi: { summary, tags: ['auth'] } });

  app.post(
    CLI_LOGIN_PATH,
    { config: docs('Start a CLI browser login: a one-time code and a polling secret') },
    async function startCliLogin(req, reply) {
      const name = clientNameOf(bodyOf(req).client_name);
      return answer(reply, async () => ({ ...(await logins.start(name)) }));
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
    { config: docs('Describe a pending CLI login (dashboard session)') },
    async function describeCliLogin(req: FastifyRequest<{ Params: { code: string } }>, reply) {
      const session = await sessions.lookup(sessionTokenOf(req));
      if (session === undefined) throw sessionRequired();
      return answer(reply, async () => ({ ...(await logins.describe(req.params.code)) }));
    },
  );

  app.post(
    `${CLI_LOGIN_PATH}/:code/approve`,
    {
      config: docs(
        'Approve a CLI login (dashboard session, Origin, X-CSRF-Token): creates a key for the approving user',
      ),
    },
    async function approveCliLogin(req: FastifyRequest<{ Params: { code: string } }>, reply) {
      const session = await requireSessionForWrite(sessions, req, []);
      return answer(reply, async () => {
        const done = await logins.approve(req.params.code, session.principal);
        return {
          approved: true,
          key_id: done.key_id,
          client_name: done.client_name,
          role: session.principal.role,
          company_id: session.principal.company_id,
          user_id: session.principal.user_id,
        };
      });
    },
  );

  app.post(
    `${CLI_LOGIN_PATH}/:code/deny`,
    { config: docs('Deny a CLI login (dashboard session, Origin, X-CSRF-Token)') },
    async function denyCliLogin(req: FastifyRequest<{ Params: { code: string } }>, reply) {
      const session = await requireSessionForWrite(sessions, req, []);
      return answer(reply, async () => {
        await logins.deny(req.params.code, session.principal);
        return { denied: true };
      });
    },
  );
}
