/**
 * Browser sessions of the WebMCP transport and the dashboard, stored server-side.
 *
 * Design (spec/transports.md §webmcp-session):
 *   - Login exchanges an API key (checked by `rt.tenants.authenticate`) for a random session token
 *     (`ss1_` + 32 random bytes, base64url). Only SHA-256(token) is stored, in `web_sessions`
 *     (migration scope `webmcp`), with the key id, company_id, user_id and an absolute expiry
 *     (default 8 h). The token travels only in the `solid_session` cookie (HttpOnly,
 *     SameSite=Strict, Path=/, Secure over https).
 *   - Every request re-reads the session joined with its API key and tenant: a revoked key ends
 *     the session on the next request (sooner than the 5 s tenants cache TTL), a role or tier
 *     change applies at once, and logout deletes the row, so a copied cookie dies with it.
 *   - The CSRF token is derived, not stored: HMAC-SHA256 under the runtime's `session` secret of
 *     the session hash (`rt.secrets.mac('session', 'csrf.' + hash)`). It is returned by login and
 *     `GET /api/v1/session`, mirrored in the readable `solid_csrf` cookie (signed double-submit
 *     bound to the session), and compared in constant time.
 *
 * The principal of a session is the key's principal with `agent_type` `webmcp:<surface>` set per
 * call by the routes, so the audit log tells browser calls apart.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { TransportRuntime as Runtime } from '../runtime-surface.ts';
import type { Migration, Store } from '../../store/store.ts';
import type { Principal, Role, Tier } from '../../spec/types.ts';

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

function hashToken(token: string): string {
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
   * Open a session for an authenticated principal (from `rt.tenants.authenticate`; it must carry
   * `key_id`). Expired rows are swept in the same transaction.
   *
   * @returns the plaintext token (cookie value, shown nowhere else) and the session.
   */
  async create(principal: Principal): Promise<{ token: string; session: WebSession }> {
    if (principal.key_id === undefined)
      throw new Error('a session needs a principal authenticated by an API key');
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const sessionHash = hashToken(token);
    const now = this.#rt.clock();
    const createdAt = now.toISOString();
    const expiresAt = new Date(now.getTime() + this.ttlSeconds * 1000).toISOString();
    await this.#rt.store.write(async (tx) => {
      await tx.run('DELETE FROM web_sessions WHERE expires_at <= ?', [createdAt]);
      await tx.run(
        'INSERT INTO web_sessions (session_hash, company_id, user_id, key_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
        [sessionHash, principal.company_id, principal.user_id, principal.key_id, createdAt, expiresAt],
      );
    });
    const tenant = await this.#rt.tenants.get(principal.company_id);
    return {
      token,
      session: {
        sessionHash,
        principal,
        tenantName: tenant?.name ?? '',
        createdAt,
        expiresAt,
        csrfToken: this.csrfTokenFor(sessionHash),
      },
    };
  }

  /**
   * Resolve a session token. Undefined when the token is malformed, unknown, expired, or its API
   * key was revoked (or moved tenant/user). One indexed read per call.
   */
  async lookup(token: string | undefined): Promise<WebSession | undefined> {
    if (token === undefined || !TOKEN_PATTERN.test(token)) return undefined;
    const sessionHash = hashToken(token);
    const row = await this.#rt.store.read((q) =>
      q.get<Record<string, unknown>>(
        `SELECT s.company_id, s.user_id, s.key_id, s.created_at, s.expires_at, k.company_id AS key_company_id, k.user_id AS key_user_id,
                k.role, k.revoked_at, t.tier, t.name AS tenant_name
         FROM web_sessions s JOIN api_keys k ON k.key_id = s.key_id JOIN tenants t ON t.company_id = s.company_id
         WHERE s.session_hash = ?`,
        [sessionHash],
      ),
    );
    if (row === undefined) return undefined;
    const expiresAt = row.expires_at as string;
    if (expiresAt <= this.#rt.clock().toISOString()) return undefined;
    if (row.revoked_at !== null && row.revoked_at !== undefined) return undefined;
    if (
      Number(row.key_company_id) !== Number(row.company_id) ||
      Number(row.key_user_id) !== Number(row.user_id)
    )
      return undefined;
    return {
      sessionHash,
      principal: {
        company_id: Number(row.company_id),
        user_id: Number(row.user_id),
        role: row.role as Role,
        tier: row.tier as Tier,
        agent_type: 'webmcp',
        key_id: row.key_id as string,
      },
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
