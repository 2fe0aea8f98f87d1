/**
 * `solid-verbs/testing`: test a pack the way agents will use it, in a few lines and without a
 * server. `createTestBusiness({ packs })` opens a runtime on an in-memory SQLite database with the
 * system verbs and your packs (checked and migrated as `solid serve` would), one tenant with a key
 * per role, and output validation ON: a handler whose result breaks its shape's schema fails here
 * with `internal_error` instead of reaching an MCP client that rejects it.
 *
 *     import { test } from 'node:test';
 *     import assert from 'node:assert/strict';
 *     import { createTestBusiness } from 'solid-verbs/testing';
 *     import bookshop from '../bookshop.mjs';
 *
 *     test('a title goes on the shelf', async (t) => {
 *       const shop = await createTestBusiness({ packs: [bookshop] });
 *       t.after(() => shop.close());
 *       const added = await shop.call('bookshop.title_add', { title: 'Dune' }); // consents as a human
 *       assert.equal(added.ok, true);
 *       assert.equal((await shop.verifyAudit()).ok, true);
 *     });
 *
 * Spec: spec/manifest.md §packs (loading), spec/consent.md §protocol (what `call` answers).
 */
import { setVaultSecret } from './runtime/vault/vault.ts';
import pino from 'pino';
import { createRuntime, type Runtime } from './runtime/runtime.ts';
import { checkPacks, installPack, type Pack } from './runtime/pack.ts';
import type { DispatchOptions } from './runtime/core.ts';
import { pendingPhrase } from './runtime/steps/consent.ts';
import { operatorAtTerminal } from './identity/principal.ts';
import { verifyStoreChain, type AuditVerifyReport } from './runtime/ledger/verify/verify.ts';
import { SqliteStore } from './store/sqlite/sqlite-store.ts';
import { runtimeMigrations } from './store/migrations/runtime.ts';
import { deliveryMigrations } from './runtime/delivery/migrations.ts';
import { systemVerbs } from './verbs/index.ts';
import type { Envelope, Principal, Role, Surface, Tier } from './spec/types.ts';
import type { FastifyInstance } from 'fastify';
import { Secret, TOTP } from 'otpauth';
import { CSRF_COOKIE, SESSION_COOKIE, SessionStore } from './identity/session-store.ts';
import { newEnrolmentLink } from './identity/invite.ts';
import { getUser, insertUser } from './identity/users.ts';
import { createHttpServer } from './transports/http/server.ts';
import { createWebmcpPlugin } from './transports/webmcp/index.ts';
import { dispatchWithKey } from './identity/api-key-auth.ts';

/** Options of `createTestBusiness`: the packs under test, the tier, the log level and an optional clock. */
export interface TestBusinessOptions {
  /** The packs under test (definePack objects), installed in order. */
  packs: readonly Pack[];
  /** The tenant's subscription tier (default `professional`). */
  tier?: Tier;
  /** A fixed clock for the runtime (default: the real one). */
  clock?: () => Date;
  /** pino level of the runtime's logger (default `silent`; `SOLID_TEST_LOG` overrides). */
  logLevel?: string;
}

export interface CallOptions extends DispatchOptions {
  /** Whose key calls (default `owner`). */
  role?: Role;
  /** The transport surface the call claims (default `cli`). */
  surface?: Surface;
  /**
   * `call` only: answer a `dispatch_pending` as a consenting human would — confirm with the nonce
   * and type the exact phrase shown (default true). false returns the pending envelope.
   */
  consent?: boolean;
  /**
   * `dispatch` only: send the call as a person would — the operator at the terminal of this
   * database, a human principal (spec/consent.md §channels) — e.g. to test a mistyped phrase.
   * Default false: the role's API key, an agent.
   */
  human?: boolean;
}

/**
 * The exact typed phrase of a pending answer, as the human asked to type it sees it. An agent's
 * pending answer withholds it under the default `phrase_channel: human`; tests read it here.
 * Undefined when the answer asks for no phrase.
 */
export function phraseOf(pending: Envelope): string | undefined {
  return pendingPhrase(pending) ?? pending.consent?.typed_phrase;
}

/** A throwaway business for tests (`createTestBusiness`): call verbs as a human would (`call`), or as the agent sends them (`dispatch`), and check the audit log. */
export interface TestBusiness {
  /** The runtime (register more verbs, read the store, flush the audit buffer…). */
  readonly rt: Runtime;
  /** The tenant under test. */
  readonly companyId: number;
  /** One API key per role in that tenant. */
  readonly keys: Readonly<Record<Role, string>>;
  /**
   * Dispatch `verb` with `args` as `role`; a pending answer is confirmed as a human would (the
   * nonce, and the typed phrase shown) unless `consent: false`. Resolves to the final envelope —
   * denials are envelopes too (`ok: false`, `error.reason`), never throws for a refusal.
   */
  call(verb: string, args?: Record<string, unknown>, options?: CallOptions): Promise<Envelope>;
  /** One raw dispatch, no consent answered (the first step of the protocol). */
  dispatch(verb: string, args?: Record<string, unknown>, options?: CallOptions): Promise<Envelope>;
  /** Flush buffered read rows and verify the tenant's hash-chained audit log (spec/audit.md §verify). */
  verifyAudit(): Promise<AuditVerifyReport>;
  /** Close the runtime and its in-memory database. */
  close(): Promise<void>;
}

const ROLES: readonly Role[] = ['owner', 'admin', 'employee', 'read_only'];

/**
 * Open a throwaway business for tests: in-memory SQLite, ephemeral secrets, system verbs, the given
 * packs (checkPacks then installPack: a bad pack throws PackError naming the pack, verb and
 * field), a sandbox tenant 1 and the tenant under test with an `owner`, `admin`, `employee` and
 * `read_only` key. Outputs are validated against their schemas.
 */
export async function createTestBusiness(options: TestBusinessOptions): Promise<TestBusiness> {
  checkPacks(options.packs, {
    registered: systemVerbs.map((v) => v.name),
    reservedMigrations: [...runtimeMigrations, ...deliveryMigrations],
  });
  const rt = await createRuntime({
    store: new SqliteStore({ path: ':memory:' }),
    logger: pino({ level: process.env.SOLID_TEST_LOG ?? options.logLevel ?? 'silent' }),
    validateOutputs: true,
    sandboxCompanyId: 1,
    readAuditFlushMs: 5,
    maintenanceIntervalMs: 0,
    ...(options.clock !== undefined ? { clock: options.clock } : {}),
  });
  try {
    rt.register(...systemVerbs);
    for (const pack of options.packs) await installPack(rt, pack);
    await rt.createTenant({ company_id: 1, name: 'Sandbox', tier: 'starter' });
    const tenant = await rt.createTenant({ name: 'Test Business', tier: options.tier ?? 'professional' });
    const keys = {} as Record<Role, string>;
    for (const [i, role] of ROLES.entries())
      keys[role] = await rt.createApiKey({
        company_id: tenant.company_id,
        user_id: i + 1,
        role,
        agent_type: 'test',
        name: `${role} (solid-verbs/testing)`,
      });
    const dispatch = async (verb: string, args: Record<string, unknown> = {}, o: CallOptions = {}) => {
      const { role = 'owner', surface = 'cli', consent: _consent, human = false, ...dispatchOptions } = o;
      if (!human) return dispatchWithKey(rt, { surface }, keys[role], verb, args, dispatchOptions);
      const principal = operatorAtTerminal(await rt.tenants.authenticate(keys[role]));
      return rt.dispatch({ principal, surface }, verb, args, dispatchOptions);
    };
    return {
      rt,
      companyId: tenant.company_id,
      keys,
      dispatch,
      async call(verb, args = {}, o = {}) {
        const first = await dispatch(verb, args, o);
        if (o.consent === false || first.error?.reason !== 'dispatch_pending' || first.consent === undefined)
          return first;
        const { role = 'owner', surface = 'cli', consent: _consent, human: _human, ...dispatchOptions } = o;
        const confirmed = { ...dispatchOptions, confirm: true, nonce: first.consent.nonce };
        if (first.consent.gate !== 'typed_phrase') return dispatch(verb, args, { ...o, ...confirmed });
        // A typed phrase counts only from a human (spec/consent.md §channels): the test author
        // consents as the operator at the terminal, typing the phrase the pending answer holds.
        const principal = operatorAtTerminal(await rt.tenants.authenticate(keys[role]));
        const phrase = pendingPhrase(first) ?? first.consent.typed_phrase;
        return rt.dispatch({ principal, surface }, verb, args, {
          ...confirmed,
          ...(phrase !== undefined ? { typed_phrase: phrase } : {}),
        });
      },
      async verifyAudit() {
        await rt.auditBuffer.flush();
        // A live test runtime signs no checkpoint until it closes, and tests move its clock: its
        // unsigned tail is expected, so only the chain itself is checked here.
        return verifyStoreChain(rt.store, {
          tenant: tenant.company_id,
          maxUnsignedSeconds: Infinity,
          maxUnsignedRows: Infinity,
        });
      },
      close: () => rt.close(),
    };
  } catch (err) {
    await rt.close().catch(() => {});
    throw err;
  }
}

/**
 * Put `secret` in the test tenant's credential vault under `name`, as the owner's `solid vault set`
 * does on a real database (sealed, audited as `vault.set`; spec/vault.md). A connector's outbox
 * handler reads it with `readVaultSecret(meta.runtime, meta.company_id, name)`.
 * @throws VerbError invalid_args (a bad name or secret, or a live secret of that name)
 */
export async function setVaultSecretForTest(b: TestBusiness, name: string, secret: string): Promise<void> {
  await b.rt.store.write((tx) =>
    setVaultSecret(tx, b.rt.secrets, {
      company_id: b.companyId,
      name,
      secret,
      actor: undefined,
      now: b.rt.clock(),
    }),
  );
}

/** A signed-in human's browser session, for tests (see {@link signInHumanForTest}). */
export interface TestHumanSession {
  /** The session token (the `solid_session` cookie's value; never log it). */
  readonly token: string;
  /** A `Cookie` header carrying the session and CSRF cookies. */
  readonly cookie: string;
  /** Send as `X-CSRF-Token` on state-changing requests. */
  readonly csrfToken: string;
  /** The session's human principal (actor `human`, no consent channel until a route sets one). */
  readonly principal: Principal;
}

/** Per runtime: the sign-in server the helper injects into, and each user's TOTP secret and last step. */
const humanSignIns = new WeakMap<
  Runtime,
  { app: Promise<FastifyInstance>; totp: Map<string, { secret: string; lastStep: number }> }
>();

const INJECT_HEADERS = { origin: 'http://localhost', host: 'localhost' } as const;

function cookiesOf(setCookie: string | string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of Array.isArray(setCookie) ? setCookie : setCookie === undefined ? [] : [setCookie]) {
    const [pair] = line.split(';');
    const eq = pair!.indexOf('=');
    if (eq > 0) out[pair!.slice(0, eq).trim()] = pair!.slice(eq + 1).trim();
  }
  return out;
}

/**
 * Sign a tenant user in as a **human** through the real TOTP routes, for tests without a browser
 * (spec/consent.md §human-sign-in). The first call for a user makes them a `users` row when
 * missing (or sets the asked role and name), makes a one-time enrolment link as the operator
 * would (`solid users link`), and enrols an authenticator app through `POST /api/v1/enrol/totp/start`
 * and `/verify`; later calls sign in with `POST /api/v1/signin/totp` and the next unused code. The
 * routes run on a server of the same runtime (injected, not listening), so the session is in the
 * runtime's store and works on the test's own server. A code counts once per 30 s step and ±1
 * step is accepted: a user signs in at most three times per step of the runtime's clock (move a
 * test clock on for more).
 *
 * @param rt the runtime the server uses
 * @param user the tenant user: company_id, user_id, role, and a display name (default "Test User")
 * @throws Error with the refusal envelope when a route refuses (a disabled user, no steps left)
 */
export async function signInHumanForTest(
  rt: Runtime,
  user: { company_id: number; user_id: number; role: Role; name?: string },
): Promise<TestHumanSession> {
  let state = humanSignIns.get(rt);
  if (state === undefined) {
    const app = createHttpServer(rt, {
      logger: false,
      plugins: [createWebmcpPlugin()],
    });
    state = {
      app: (async () => {
        await app.ready();
        return app;
      })(),
      totp: new Map(),
    };
    humanSignIns.set(rt, state);
  }
  const app = await state.app;
  const name = user.name ?? 'Test User';
  const key = `${user.company_id}:${user.user_id}`;
  const now = rt.clock();
  const step = Math.floor(now.getTime() / 30_000);
  const codeAt = (secret: string, s: number) =>
    TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: s * 30_000 });
  let res;
  const known = state.totp.get(key);
  if (known === undefined) {
    const existing = await rt.store.read((q) => getUser(q, user.company_id, user.user_id));
    if (existing === undefined)
      await rt.store.write((tx) =>
        insertUser(tx, { company_id: user.company_id, user_id: user.user_id, name, role: user.role }, now),
      );
    else if (existing.role !== user.role || existing.name !== name)
      await rt.store.write((tx) =>
        tx.run('UPDATE users SET role = ?, name = ? WHERE company_id = ? AND user_id = ?', [
          user.role,
          name,
          user.company_id,
          user.user_id,
        ]),
      );
    const made = await newEnrolmentLink(rt.store, user.company_id, user.user_id, undefined, now);
    if (made === undefined) throw new Error(`user ${key} is disabled`);
    const started = await app.inject({
      method: 'POST',
      url: '/api/v1/enrol/totp/start',
      headers: INJECT_HEADERS,
      payload: { token: made.link.token },
    });
    const body = started.json() as Envelope;
    if (!body.ok) throw new Error(`enrol/totp/start refused: ${JSON.stringify(body.error)}`);
    const secret = String(body.result!.secret);
    res = await app.inject({
      method: 'POST',
      url: '/api/v1/enrol/totp/verify',
      headers: INJECT_HEADERS,
      payload: { token: made.link.token, code: codeAt(secret, step) },
    });
    state.totp.set(key, { secret, lastStep: step });
  } else {
    const next = Math.max(known.lastStep + 1, step - 1);
    if (next > step + 1)
      throw new Error(`user ${key} signed in three times in this 30 s step: move the test clock on`);
    res = await app.inject({
      method: 'POST',
      url: '/api/v1/signin/totp',
      headers: INJECT_HEADERS,
      payload: { company_id: user.company_id, user_id: user.user_id, code: codeAt(known.secret, next) },
    });
    known.lastStep = next;
  }
  const answer = res.json() as Envelope;
  if (!answer.ok) throw new Error(`TOTP sign-in refused: ${JSON.stringify(answer.error)}`);
  const cookies = cookiesOf(res.headers['set-cookie']);
  const token = cookies[SESSION_COOKIE]!;
  const csrfToken = cookies[CSRF_COOKIE]!;
  const session = await new SessionStore(rt).lookup(token);
  if (session === undefined) throw new Error('the new session does not resolve');
  return {
    token,
    cookie: `${SESSION_COOKIE}=${token}; ${CSRF_COOKIE}=${csrfToken}`,
    csrfToken,
    principal: session.principal,
  };
}
