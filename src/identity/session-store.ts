/**
 * Browser sessions of the dashboard and the WebMCP page, stored server-side. Part of the
 * identity room: a session is a **human** credential, minted only by `createHumanSession` for a
 * human principal (a tenant user signed in by a human ceremony: passkey or TOTP, helper
 * `humans`); an API key never opens one (spec/consent.md §channels).
 *
 * Design (spec/transports.md §webmcp-session):
 *   - A random session token (`ss1_` + 32 random bytes, base64url). Only SHA-256(token) is
 *     stored, in `web_sessions` (migration scope `webmcp`), with company_id, user_id, the user's
 *     name and role at sign-in, and an absolute expiry (default 8 h). The token travels only in
 *     the `solid_session` cookie (HttpOnly, SameSite=Strict, Path=/, Secure over https).
 *   - Every request re-reads the session joined with its tenant (tier changes apply at once);
 *     logout deletes the row, so a copied cookie dies with it.
 *   - The CSRF token is derived, not stored: HMAC-SHA256 under the runtime's `session` secret of
 *     the session hash (`rt.secrets.mac('session', 'csrf.' + hash)`). It is returned by
 *     `GET /api/v1/session`, mirrored in the readable `solid_csrf` cookie (signed double-submit
 *     bound to the session), and compared in constant time.
 *
 * The principal of a session is the user's human principal; the routes project it per call
 * (identity's `onChannel` for the dashboard API, `actingForUser` for WebMCP page tool calls).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IdentityRuntime as Runtime } from './runtime-view.ts';
import type { Migration, Store } from '../store/store.ts';
import type { Principal, Role, Tier } from '../spec/types.ts';
import { VerbError } from '../runtime/errors.ts';
import { agentPrincipal, humanPrincipal } from './principal.ts';

/** Name of the HttpOnly session cookie. */
export const SESSION_COOKIE = 'solid_session';
/** Name of the readable cookie mirroring the CSRF token (for page scripts). */
export const CSRF_COOKIE = 'solid_csrf';
/** Request header that must carry the CSRF token on state-changing session requests. */
export const CSRF_HEADER = 'x-csrf-token';
/** Default absolute session lifetime: 8 hours, in seconds. */
export const DEFAULT_SESSION_TTL_SECONDS = 8 * 3600;

const TOKEN_PREFIX = 'ss1_';
const TOKEN_PATTERN = /^ss1_[A-Za-z0-9_-]{43}$/;

/** The `web_sessions` table, in both engines' forms (scope `webmcp`). */
export const webSessionMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'web sessions',
    sqlite: `
CREATE TABLE web_sessions (
  session_hash TEXT PRIMARY KEY,
  company_id INTEGER NOT NULL,
  user_id INTEGER NOT NULL,
  key_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX web_sessions_expires ON web_sessions(expires_at);
CREATE INDEX web_sessions_key ON web_sessions(key_id);
`,
    postgres: `
CREATE TABLE web_sessions (
  session_hash TEXT PRIMARY KEY,
  company_id BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  key_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX web_sessions_expires ON web_sessions(expires_at);
CREATE INDEX web_sessions_key ON web_sessions(key_id);
`,
  },
  {
    // Human sessions: no API key; the user's name and role at sign-in. Sessions of the former
    // API-key login are ended (a session is a human credential: spec/consent.md §channels).
    version: 2,
    name: 'human web sessions',
    sqlite: `
DROP TABLE web_sessions;
CREATE TABLE web_sessions (
  session_hash TEXT PRIMARY KEY,
  company_id INTEGER NOT NULL,
  user_id INTEGER NOT NULL,
  user_name TEXT NOT NULL,
  role TEXT NOT NULL,
  key_id TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX web_sessions_expires ON web_sessions(expires_at);
CREATE INDEX web_sessions_user ON web_sessions(company_id, user_id);
`,
    postgres: `
DROP TABLE web_sessions;
CREATE TABLE web_sessions (
  session_hash TEXT PRIMARY KEY,
  company_id BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  user_name TEXT NOT NULL,
  role TEXT NOT NULL,
  key_id TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX web_sessions_expires ON web_sessions(expires_at);
CREATE INDEX web_sessions_user ON web_sessions(company_id, user_id);
`,
  },
];

/** A live session, as resolved on each request. */
export interface WebSession {
  /** SHA-256 hex of the token (the row key; safe to log). */
  sessionHash: string;
  /** The key's current principal (role and tier read now, not at login). */
  principal: Principal;
  tenantName: string;
  createdAt: string;
  /** ISO 8601 absolute expiry. */
  expiresAt: string;
  /** The CSRF token bound to this session. */
  csrfToken: string;
}

/** SHA-256 (hex) of a session token: what the web_sessions table keys on. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Whether a live (unexpired at `now`) web session has this SHA-256 hash of its token. Throws
 * StoreError when the store is down or the web_sessions table does not exist (WebMCP not mounted).
 */
export async function isLiveSession(store: Store, sessionHash: string, now: Date): Promise<boolean> {
  const row = await store.read((q) =>
    q.get('SELECT 1 AS one FROM web_sessions WHERE session_hash = ? AND expires_at > ?', [
      sessionHash,
      now.toISOString(),
    ]),
  );
  return row !== undefined;
}

/**
 * Who stands behind a live session, for the rate limiter (spec/transports.md §rate-limits): the
 * tenant user, and the API key it was opened with (transitional key sessions), or undefined when
 * the session is unknown or expired. One indexed read.
 */
export async function liveSessionOwner(
  store: Store,
  sessionHash: string,
  now: Date,
): Promise<{ company_id: number; user_id: number; key_id: string | null } | undefined> {
  const row = await store.read((q) =>
    q.get<{ company_id: number; user_id: number; key_id: string | null }>(
      'SELECT company_id, user_id, key_id FROM web_sessions WHERE session_hash = ? AND expires_at > ?',
      [sessionHash, now.toISOString()],
    ),
  );
  if (row === undefined) return undefined;
  const keyId =
    row.key_id === null || row.key_id === undefined || row.key_id === '' ? null : String(row.key_id);
  return { company_id: Number(row.company_id), user_id: Number(row.user_id), key_id: keyId };
}

/** Server-side session store over `rt.store` (see the header for the design). */
export class SessionStore {
  readonly #rt: Runtime;
  readonly ttlSeconds: number;

  constructor(rt: Runtime, options: { ttlSeconds?: number } = {}) {
    this.#rt = rt;
    this.ttlSeconds = options.ttlSeconds ?? DEFAULT_SESSION_TTL_SECONDS;
  }

  /** Create the `web_sessions` table when missing (idempotent). */
  async migrate(): Promise<void> {
    await this.#rt.store.migrate('webmcp', webSessionMigrations);
  }

  /**
   * Open a session for a **human** principal (identity's `humanPrincipal`: a tenant user signed
   * in by a human ceremony). Expired rows are swept in the same transaction. Prefer the module
   * function `createHumanSession` (src/identity).
   *
   * @returns the plaintext token (cookie value, shown nowhere else) and the session.
   * @throws VerbError session_requires_human — the principal is not a human (an API key, an
   *   OAuth token, a WebMCP page call, the sandbox): an agent credential never opens a session.
   */
  async createHuman(principal: Principal): Promise<{ token: string; session: WebSession }> {
    if (principal.actor !== 'human' || principal.sandbox === true || principal.key_id !== undefined)
      throw sessionRequiresHuman();
    return this.#insert(principal, principal.user_name ?? '', null);
  }

  /**
   * Transitional: the former API-key login (`POST /api/v1/session {api_key}`). The session's
   * principal is the key's, an **agent**. Removed once every caller signs in as a human.
   * @deprecated
   */
  async createForApiKey(principal: Principal): Promise<{ token: string; session: WebSession }> {
    if (principal.key_id === undefined)
      throw new Error('a key session needs a principal authenticated by an API key');
    return this.#insert(agentPrincipal(principal), '', principal.key_id);
  }

  async #insert(
    principal: Principal,
    userName: string,
    keyId: string | null,
  ): Promise<{ token: string; session: WebSession }> {
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const sessionHash = hashToken(token);
    const now = this.#rt.clock();
    const createdAt = now.toISOString();
    const expiresAt = new Date(now.getTime() + this.ttlSeconds * 1000).toISOString();
    await this.#rt.store.write(async (tx) => {
      await tx.run('DELETE FROM web_sessions WHERE expires_at <= ?', [createdAt]);
      await tx.run(
        'INSERT INTO web_sessions (session_hash, company_id, user_id, user_name, role, key_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
        [
          sessionHash,
          principal.company_id,
          principal.user_id,
          userName,
          principal.role,
          keyId,
          createdAt,
          expiresAt,
        ],
      );
    });
    const tenant = await this.#rt.tenants.get(principal.company_id);
    return {
      token,
      session: {
        sessionHash,
        principal: { ...principal, agent_type: 'webmcp' },
        tenantName: tenant?.name ?? '',
        createdAt,
        expiresAt,
        csrfToken: this.csrfTokenFor(sessionHash),
      },
    };
  }

  /**
   * Resolve a session token. Undefined when the token is malformed, unknown or expired (or, for
   * a transitional key session, its API key was revoked or moved). One indexed read per call.
   */
  async lookup(token: string | undefined): Promise<WebSession | undefined> {
    if (token === undefined || !TOKEN_PATTERN.test(token)) return undefined;
    const sessionHash = hashToken(token);
    const row = await this.#rt.store.read((q) =>
      q.get<Record<string, unknown>>(
        `SELECT s.company_id, s.user_id, s.user_name, s.role AS session_role, s.key_id, s.created_at, s.expires_at,
                k.company_id AS key_company_id, k.user_id AS key_user_id, k.role AS key_role, k.revoked_at,
                t.tier, t.name AS tenant_name
         FROM web_sessions s JOIN tenants t ON t.company_id = s.company_id
         LEFT JOIN api_keys k ON k.key_id = s.key_id
         WHERE s.session_hash = ?`,
        [sessionHash],
      ),
    );
    if (row === undefined) return undefined;
    const expiresAt = row.expires_at as string;
    if (expiresAt <= this.#rt.clock().toISOString()) return undefined;
    const facts = {
      company_id: Number(row.company_id),
      user_id: Number(row.user_id),
      tier: row.tier as Tier,
      agent_type: 'webmcp',
    };
    let principal: Principal;
    if (row.key_id === null || row.key_id === undefined) {
      principal = humanPrincipal(
        { ...facts, role: row.session_role as Role },
        { user_name: String(row.user_name ?? '') },
      );
    } else {
      if (row.key_company_id === null || row.key_company_id === undefined) return undefined;
      if (row.revoked_at !== null && row.revoked_at !== undefined) return undefined;
      if (Number(row.key_company_id) !== facts.company_id || Number(row.key_user_id) !== facts.user_id)
        return undefined;
      principal = agentPrincipal({ ...facts, role: row.key_role as Role, key_id: row.key_id as string });
    }
    return {
      sessionHash,
      principal,
      tenantName: row.tenant_name as string,
      createdAt: row.created_at as string,
      expiresAt,
      csrfToken: this.csrfTokenFor(sessionHash),
    };
  }

  /** Delete the session of a token (logout). Returns whether a row was deleted. */
  async destroy(token: string | undefined): Promise<boolean> {
    if (token === undefined || !TOKEN_PATTERN.test(token)) return false;
    const sessionHash = hashToken(token);
    const r = await this.#rt.store.write((tx) =>
      tx.run('DELETE FROM web_sessions WHERE session_hash = ?', [sessionHash]),
    );
    return r.changes > 0;
  }

  /** The CSRF token bound to a session hash (HMAC under the `session` secret; base64url). */
  csrfTokenFor(sessionHash: string): string {
    return this.#rt.secrets.mac('session', `csrf.${sessionHash}`);
  }

  /** Constant-time check of a presented CSRF token against the session's. */
  csrfMatches(session: WebSession, given: unknown): boolean {
    if (typeof given !== 'string' || given === '' || given.length > 200) return false;
    return this.#rt.secrets.verifyMac(
      'session',
      `csrf.${session.sessionHash}`,
      given,
      this.#rt.secrets.currentKid,
    );
  }
}

/**
 * The refusal of a session for a non-human principal: `session_requires_human` (HTTP 403).
 * spec/consent.md §channels
 */
export function sessionRequiresHuman(): VerbError {
  return new VerbError(
    'session_requires_human',
    'A browser session is opened only by a person signing in; an API key (an agent credential) cannot open one.',
    {
      hint: 'Sign in on the dashboard as a user of the tenant (passkey or authenticator code). Agents call the API with their key: POST /api/v1/agent/dispatch/{verb}.',
    },
  );
}

/**
 * Open a human session: the identity room's one way to mint a session (sign-in routes of the
 * humans room call it after a passkey or TOTP ceremony; tests call it through src/testing.ts).
 *
 * @param sessions the server's session store
 * @param principal a human principal from identity's `humanPrincipal`
 * @returns `{ token, session }`: the cookie value (never logged) and the resolved session
 * @throws VerbError session_requires_human for any non-human principal (spec/consent.md §channels)
 */
export function createHumanSession(
  sessions: SessionStore,
  principal: Principal,
): Promise<{ token: string; session: WebSession }> {
  return sessions.createHuman(principal);
}
