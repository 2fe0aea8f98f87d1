/**
 * The human sign-in routes: enrolment from a one-time link and sign-in, by passkey (WebAuthn) or
 * the TOTP fallback. Each success opens a **human** session through the identity room's session
 * store (`createHumanSession`); nothing here accepts an API key, so an agent credential can never
 * enrol itself or sign in as a person. spec/consent.md §human-sign-in
 *
 *   POST /api/v1/enrol/info              { token }                    → who the link enrols
 *   POST /api/v1/enrol/passkey/options   { token }                    → WebAuthn creation options
 *   POST /api/v1/enrol/passkey/verify    { token, response }          → credential stored, link used, signed in
 *   POST /api/v1/enrol/totp/start        { token }                    → { uri, secret } shown once
 *   POST /api/v1/enrol/totp/verify       { token, code }              → secret confirmed, link used, signed in
 *   POST /api/v1/signin/passkey/options  {}                           → WebAuthn request options
 *   POST /api/v1/signin/passkey/verify   { response }                 → signed in
 *   POST /api/v1/signin/totp             { company_id, user_id, code } → signed in
 *   POST /api/v1/users/invite            { name, role }               → a signed-in human owner invites (session + CSRF)
 *
 * Every route needs a browser `Origin` of this server (or an allowed origin): it is the WebAuthn
 * expected origin, and its host the RP ID (an IP address answers `passkey_unavailable`). A
 * signed-in answer is the session envelope of `GET /api/v1/session` with the session cookies set.
 *
 * Refusals: `enrolment_invalid` (401, audited: an unknown, used or expired link never says which),
 * `signin_failed` (401, audited: unknown passkey, bad signature, reused challenge, wrong or reused
 * code, disabled or invited user — never which), `rate_limited` (429, after
 * {@link SIGNIN_FAILURE_LIMIT} failures in {@link SIGNIN_FAILURE_WINDOW_MS} from one address or
 * for one user; not audited, so a flood does not write the log), `passkey_unavailable` (400),
 * `invalid_request` (400), `origin_denied` (403).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { VerbError } from '../../runtime/errors.ts';
import type { Envelope, Role } from '../../spec/types.ts';
import type { Store } from '../../store/store.ts';
import { assertNotThrottled, noteFailure } from '../../identity/signin-throttle.ts';
import { sendEnvelope } from './error-handler.ts';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import { consumeEnrolment, peekEnrolment } from '../../identity/enrolment.ts';
import { appendHumanAudit } from '../../identity/human-audit.ts';
import {
  passkeyAuthenticationOptions,
  passkeyRegistrationOptions,
  relyingPartyOf,
  verifyPasskeyAuthentication,
  verifyPasskeyRegistration,
  type RelyingParty,
} from '../../identity/passkeys.ts';
import { startTotp, verifyTotp } from '../../identity/totp.ts';
import { cleanUserName, getUser, isRole, setUserStatus, type User } from '../../identity/users.ts';
import { inviteUser } from '../../identity/invite.ts';
import { enrolmentUrl } from '../../identity/enrolment.ts';

export { SIGNIN_FAILURE_LIMIT, SIGNIN_FAILURE_WINDOW_MS } from '../../identity/signin-throttle.ts';

/** What a signed-in answer carries (the session envelope's `result`). */
export interface HumanSessionAnswer {
  /** The envelope to send (verb `session`), its cookies already set on the reply. */
  envelope: Envelope;
}

/**
 * How the routes open a human session and answer it: the dashboard plugin wires this to the
 * identity room's session store (`createHumanSession`) and its cookies.
 */
export type OpenHumanSession = (
  request: FastifyRequest,
  reply: FastifyReply,
  user: User,
) => Promise<Envelope>;

/**
 * The signed-in human owner of a write request (session, Origin and CSRF checked by the caller's
 * guard), or undefined; the invite route refuses anything else.
 */
export type SignedInHuman = (
  request: FastifyRequest,
) => Promise<{ company_id: number; user_id: number; role: Role; human: boolean }>;

export interface SignInRouteDeps {
  rt: Runtime;
  allowedOrigins: readonly string[];
  /** Checks the request's Origin (origin_denied otherwise); `required`: refuse a missing one. */
  checkOrigin(request: FastifyRequest, allowed: readonly string[], required: boolean): void;
  openSession: OpenHumanSession;
  /** The principal of a session write request (session, Origin, CSRF), throwing the guard's refusals. */
  signedIn: SignedInHuman;
}

const op = (operationId: string, summary: string, description: string) => ({
  openapi: {
    operationId,
    tags: ['identity'],
    summary,
    description,
    security: [],
    responses: {
      default: {
        description: 'Envelope (errors: signin_failed / enrolment_invalid 401, rate_limited 429, …)',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
      },
    },
  },
});

function bodyOf(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new VerbError('invalid_request', 'The body must be a JSON object.', {
      hint: 'Send Content-Type: application/json with an object body (the dashboard page does this).',
    });
  return body as Record<string, unknown>;
}

function enrolmentInvalid(): VerbError {
  return new VerbError(
    'enrolment_invalid',
    'This enrolment link is not valid: unknown, already used, or expired.',
    {
      hint: 'Ask the owner for a new link (`solid users link <user_id>` on the server, or the dashboard).',
    },
  );
}

function signinFailed(how: 'passkey' | 'code'): VerbError {
  return new VerbError(
    'signin_failed',
    how === 'passkey' ? 'The passkey sign-in did not verify.' : 'The sign-in code did not verify.',
    {
      hint:
        how === 'passkey'
          ? 'Try again with a passkey registered for this site, or sign in with your authenticator code.'
          : 'Type the current 6-digit code of your authenticator app (each code works once), with your business and user numbers.',
    },
  );
}

/** Register the enrolment, sign-in and invite routes on `app` (see the header). */
export function registerSignInRoutes(app: FastifyInstance, deps: SignInRouteDeps): void {
  const { rt, allowedOrigins } = deps;
  const store = rt.store;

  /** The relying party of a browser request: its Origin (checked) and that origin's host. */
  async function relyingParty(request: FastifyRequest, companyId?: number): Promise<RelyingParty> {
    deps.checkOrigin(request, allowedOrigins, true);
    const tenant = companyId === undefined ? undefined : await rt.tenants.get(companyId);
    const rp = relyingPartyOf(String(request.headers.origin), tenant?.name || 'solid-verbs');
    if (rp === undefined)
      throw new VerbError(
        'passkey_unavailable',
        'Passkeys cannot be used on a page opened by an IP address.',
        {
          hint: 'Open the same page at http://localhost:<port>/ (or the server’s host name) and try again.',
        },
      );
    return rp;
  }

  async function liveLink(
    request: FastifyRequest,
  ): Promise<{ token: string; user: User; expires_at: string }> {
    deps.checkOrigin(request, allowedOrigins, true);
    const token = bodyOf(request).token;
    const found = await store.read((q) => peekEnrolment(q, token, rt.clock()));
    if (found === undefined) throw enrolmentInvalid();
    return { token: token as string, ...found };
  }

  /** Mark the user active and audit the enrolment, inside the credential's transaction. */
  async function enrolled(
    tx: Parameters<Parameters<Store['write']>[0]>[0],
    user: User,
    method: 'passkey' | 'totp',
    now: Date,
  ): Promise<void> {
    await setUserStatus(tx, user.company_id, user.user_id, 'active');
    await appendHumanAudit(tx, {
      company_id: user.company_id,
      action: 'users.enrol',
      status: 'completed',
      actor: { user_id: user.user_id, role: user.role },
      agent_type: 'human:enrolment',
      request_data: { user_id: user.user_id, method },
      subject_user_id: user.user_id,
      now,
    });
  }

  async function signedIn(
    request: FastifyRequest,
    reply: FastifyReply,
    user: User,
    method: 'passkey' | 'totp',
  ): Promise<FastifyReply> {
    await store.write((tx) =>
      appendHumanAudit(tx, {
        company_id: user.company_id,
        action: 'session.signin',
        status: 'completed',
        actor: { user_id: user.user_id, role: user.role },
        agent_type: 'human:signin',
        request_data: { method, address: request.ip },
        subject_user_id: user.user_id,
        now: rt.clock(),
      }),
    );
    return sendEnvelope(reply, await deps.openSession(request, reply, user));
  }

  const ok = (verb: string, result: Record<string, unknown>): Envelope => ({ ok: true, verb, result });

  app.post(
    '/api/v1/enrol/info',
    {
      config: op(
        'enrol_info',
        'Who an enrolment link enrols',
        'The user, role and business of a live link; does not use it.',
      ),
    },
    async function enrolInfo(request, reply) {
      const { user, expires_at } = await liveLink(request);
      const tenant = await rt.tenants.get(user.company_id);
      return sendEnvelope(
        reply,
        ok('enrol.info', {
          company_id: user.company_id,
          tenant_name: tenant?.name ?? '',
          user_id: user.user_id,
          user_name: user.name,
          role: user.role,
          expires_at,
          passkeys_available: relyingPartyOf(String(request.headers.origin), '') !== undefined,
        }),
      );
    },
  );

  app.post(
    '/api/v1/enrol/passkey/options',
    {
      config: op(
        'enrol_passkey_options',
        'Start a passkey registration',
        'WebAuthn creation options for the link’s user; the challenge is stored, single use, 5 minutes.',
      ),
    },
    async function enrolPasskeyOptions(request, reply) {
      const { user } = await liveLink(request);
      const rp = await relyingParty(request, user.company_id);
      const options = await passkeyRegistrationOptions(store, rp, user, rt.clock());
      return sendEnvelope(reply, ok('enrol.passkey_options', { options }));
    },
  );

  app.post(
    '/api/v1/enrol/passkey/verify',
    {
      config: op(
        'enrol_passkey_verify',
        'Finish a passkey registration',
        'Verifies the authenticator’s response, stores the passkey, uses the link and signs the person in.',
      ),
    },
    async function enrolPasskeyVerify(request, reply) {
      const { token, user } = await liveLink(request);
      const rp = await relyingParty(request, user.company_id);
      const now = rt.clock();
      await assertNotThrottled(store, [`signin:addr:${request.ip}`], now.getTime());
      const id = await verifyPasskeyRegistration(store, rp, user, bodyOf(request).response, now, (save) =>
        store.write(async (tx) => {
          if (!(await consumeEnrolment(tx, token, now))) return false;
          await save(tx);
          await enrolled(tx, user, 'passkey', now);
          return true;
        }),
      );
      if (id === undefined) {
        await noteFailure(store, [`signin:addr:${request.ip}`], now.getTime());
        throw signinFailed('passkey');
      }
      return signedIn(request, reply, { ...user, status: 'active' }, 'passkey');
    },
  );

  app.post(
    '/api/v1/enrol/totp/start',
    {
      config: op(
        'enrol_totp_start',
        'Start an authenticator-app enrolment',
        'A new TOTP secret for the link’s user, shown once as an otpauth:// URI and base32; confirmed by the first code.',
      ),
    },
    async function enrolTotpStart(request, reply) {
      const { user } = await liveLink(request);
      const tenant = await rt.tenants.get(user.company_id);
      const started = await store.write((tx) =>
        startTotp(tx, rt.secrets, user, tenant?.name || 'solid-verbs', rt.clock()),
      );
      if (started === undefined)
        throw new VerbError('invalid_request', 'This person already has an authenticator app set up.', {
          hint: 'Register a passkey from this link instead, or sign in with the app’s code.',
        });
      return sendEnvelope(
        reply,
        ok('enrol.totp_start', { ...started, company_id: user.company_id, user_id: user.user_id }),
      );
    },
  );

  app.post(
    '/api/v1/enrol/totp/verify',
    {
      config: op(
        'enrol_totp_verify',
        'Confirm an authenticator app',
        'The first code confirms the secret, uses the link and signs the person in.',
      ),
    },
    async function enrolTotpVerify(request, reply) {
      const { token, user } = await liveLink(request);
      const now = rt.clock();
      const buckets = [`signin:addr:${request.ip}`, `signin:user:${user.company_id}:${user.user_id}`];
      await assertNotThrottled(store, buckets, now.getTime());
      const code = bodyOf(request).code;
      const result = await store.write(async (tx) => {
        if (typeof code !== 'string' || !(await verifyTotp(tx, rt.secrets, user, code, now, true)))
          return 'bad';
        if (!(await consumeEnrolment(tx, token, now))) throw enrolmentInvalid();
        await enrolled(tx, user, 'totp', now);
        return 'ok';
      });
      if (result === 'bad') {
        await noteFailure(store, buckets, now.getTime());
        throw signinFailed('code');
      }
      return signedIn(request, reply, { ...user, status: 'active' }, 'totp');
    },
  );

  app.post(
    '/api/v1/signin/passkey/options',
    {
      config: op(
        'signin_passkey_options',
        'Start a passkey sign-in',
        'WebAuthn request options (discoverable credentials); the challenge is stored, single use, 5 minutes.',
      ),
    },
    async function signinPasskeyOptions(request, reply) {
      const rp = await relyingParty(request);
      const options = await passkeyAuthenticationOptions(store, rp, rt.clock());
      return sendEnvelope(reply, ok('signin.passkey_options', { options }));
    },
  );

  app.post(
    '/api/v1/signin/passkey/verify',
    {
      config: op(
        'signin_passkey_verify',
        'Finish a passkey sign-in',
        'Verifies the assertion (user verification required) and opens a human session.',
      ),
    },
    async function signinPasskeyVerify(request, reply) {
      const rp = await relyingParty(request);
      const now = rt.clock();
      const buckets = [`signin:addr:${request.ip}`];
      await assertNotThrottled(store, buckets, now.getTime());
      const who = await verifyPasskeyAuthentication(store, rp, bodyOf(request).response, now);
      const user =
        who === undefined ? undefined : await store.read((q) => getUser(q, who.company_id, who.user_id));
      if (user === undefined || user.status !== 'active') {
        await noteFailure(store, buckets, now.getTime());
        throw signinFailed('passkey');
      }
      return signedIn(request, reply, user, 'passkey');
    },
  );

  app.post(
    '/api/v1/signin/totp',
    {
      config: op(
        'signin_totp',
        'Sign in with an authenticator code',
        'Business number, user number and the current 6-digit code; a code works once.',
      ),
    },
    async function signinTotp(request, reply) {
      deps.checkOrigin(request, allowedOrigins, true);
      const body = bodyOf(request);
      const companyId = Number(body.company_id);
      const userId = Number(body.user_id);
      if (!Number.isSafeInteger(companyId) || companyId < 1 || !Number.isSafeInteger(userId) || userId < 1)
        throw new VerbError('invalid_request', 'company_id and user_id must be positive integers.', {
          hint: 'Your business and user numbers were shown when you enrolled.',
        });
      const now = rt.clock();
      const buckets = [`signin:addr:${request.ip}`, `signin:user:${companyId}:${userId}`];
      await assertNotThrottled(store, buckets, now.getTime());
      const user = await store.read((q) => getUser(q, companyId, userId));
      const counted =
        user !== undefined &&
        user.status === 'active' &&
        typeof body.code === 'string' &&
        (await store.write((tx) => verifyTotp(tx, rt.secrets, user, body.code as string, now)));
      if (!counted) {
        await noteFailure(store, buckets, now.getTime());
        throw signinFailed('code');
      }
      return signedIn(request, reply, user, 'totp');
    },
  );

  app.post(
    '/api/v1/users/invite',
    {
      config: op(
        'users_invite',
        'Invite a person (signed-in owner)',
        'A signed-in human owner adds a user and gets their one-time enrolment link. Never an API key.',
      ),
    },
    async function inviteRoute(request, reply) {
      const me = await deps.signedIn(request);
      if (!me.human)
        throw new VerbError(
          'human_required',
          'Only a signed-in human owner may invite people; an agent credential never can.',
          { hint: 'Sign in to the dashboard as the owner, or run `solid users invite` on the server.' },
        );
      if (me.role !== 'owner')
        throw new VerbError('role_denied', 'Only the owner may invite people.', {
          hint: 'Ask the owner to invite them from the dashboard.',
        });
      const body = bodyOf(request);
      const name = cleanUserName(body.name);
      if (name === undefined || !isRole(body.role))
        throw new VerbError(
          'invalid_request',
          'name (1-100 characters) and role (read_only, employee, admin, owner) are required.',
        );
      const { user, link } = await inviteUser(
        store,
        { company_id: me.company_id, name, role: body.role },
        { user_id: me.user_id, role: me.role },
        rt.clock(),
      );
      const base = rt.options.publicUrl ?? String(request.headers.origin);
      return sendEnvelope(
        reply,
        ok('users.invite', {
          user_id: user.user_id,
          name: user.name,
          role: user.role,
          enrolment_url: enrolmentUrl(base, link.token),
          expires_at: link.expires_at,
        }),
      );
    },
  );
}
