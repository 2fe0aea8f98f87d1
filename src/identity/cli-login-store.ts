/**
 * One-time codes of the browser login of the CLI (`solid login` without --api-key), stored in the
 * runtime's store (table `cli_logins`, migration scope `cli-login`) so every node of a PostgreSQL
 * deployment sees them.
 *
 *   start     a random user code (8 characters from an unambiguous alphabet, shown as ABCD-EFGH,
 *             40 bits) and a random polling secret (32 bytes); only their SHA-256 is stored,
 *             with the CLI's name, the requester's address and user agent (shown to the approving
 *             human, RFC 8628 §5.4) and an expiry (default 10 minutes)
 *   approve   a signed-in human (human dashboard session + CSRF, checked by the route) who typed
 *             the code approves a pending, unexpired code and picks the key's role, at most their
 *             own: in ONE store transaction the row moves pending → approved, a NEW API key is
 *             created for that user with the picked role (agent_type "cli"), the key is kept
 *             encrypted under the master key until collected, and an audit row `cli_login.approve`
 *             (role, requester address and user agent) is appended in the user's tenant
 *   deny      pending → denied (audited `cli_login.deny`)
 *   poll      the CLI presents its polling secret: pending → "pending"; approved → the key, once
 *             (the row becomes consumed and the ciphertext is erased in the same transaction);
 *             denied → approval_rejected; unknown, consumed or expired → not_found
 *   sweep     expired rows are deleted on every start; a key approved but never collected is
 *             revoked then
 *
 * Codes are single use: every transition is a conditional UPDATE on the expected status.
 * Spec: spec/transports.md §remote-login.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { IdentityRuntime as Runtime } from './runtime-view.ts';
import { VerbError } from '../runtime/errors.ts';
import { insertApiKey } from '../runtime/tenants.ts';
import type { Migration, StoreTx } from '../store/store.ts';
import { ROLES, type Principal, type Role } from '../spec/types.ts';
import { appendOperatorAudit } from '../runtime/ledger/write/operator-audit.ts';

/** Where the CLI login's routes live (src/transports/http/cli-login-routes.ts). */
export const CLI_LOGIN_PATH = '/api/v1/cli-login';

/**
 * The dashboard page where a human types the code of a CLI login (a hash route of the page at
 * `/`). It carries no code: a link that held one could be sent by anyone who started a login.
 */
export function cliLoginPageUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/#/cli-login`;
}

/** Default lifetime of a code: 10 minutes, in seconds. */
export const DEFAULT_CLI_LOGIN_TTL_SECONDS = 600;
/** Most pending codes kept at once (unauthenticated starts beyond it answer rate_limited). */
export const MAX_PENDING_CLI_LOGINS = 1000;

const ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const CODE_PATTERN = /^[A-HJ-NP-Z2-9]{4}-?[A-HJ-NP-Z2-9]{4}$/;

export const cliLoginMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'cli login codes',
    sqlite: `
CREATE TABLE cli_logins (
  code_hash TEXT PRIMARY KEY,
  poll_hash TEXT NOT NULL UNIQUE,
  client_name TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  company_id INTEGER,
  user_id INTEGER,
  role TEXT,
  key_id TEXT,
  sealed_key TEXT,
  decided_at TEXT
);
CREATE INDEX cli_logins_expires ON cli_logins(expires_at);
`,
    postgres: `
CREATE TABLE cli_logins (
  code_hash TEXT PRIMARY KEY,
  poll_hash TEXT NOT NULL UNIQUE,
  client_name TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  company_id BIGINT,
  user_id BIGINT,
  role TEXT,
  key_id TEXT,
  sealed_key TEXT,
  decided_at TEXT
);
CREATE INDEX cli_logins_expires ON cli_logins(expires_at);
`,
  },
  {
    // Who asked, shown to the approving human (issue 35 row 5, RFC 8628 §5.4).
    version: 2,
    name: 'cli login requester',
    sqlite: `
ALTER TABLE cli_logins ADD COLUMN requester_address TEXT;
ALTER TABLE cli_logins ADD COLUMN requester_agent TEXT;
`,
    postgres: `
ALTER TABLE cli_logins ADD COLUMN requester_address TEXT;
ALTER TABLE cli_logins ADD COLUMN requester_agent TEXT;
`,
  },
];

/** Roles lowest first (spec/consent.md §roles): an approver picks one at most their own. */
const ROLE_ORDER: readonly Role[] = ROLES;

/** The roles an approver of role `own` may give the new key, lowest first. */
export function grantableRoles(own: Role): Role[] {
  return ROLE_ORDER.slice(0, ROLE_ORDER.indexOf(own) + 1);
}

/** Who started a login, as the server saw the request (never from the body). */
export interface LoginRequester {
  /** The client's address (`request.ip`: the socket's peer, or the trusted proxy's client). */
  address: string;
  /** The User-Agent header, control characters removed, at most 200 characters; "" when absent. */
  user_agent: string;
}

/** What `start` returns to the CLI (the only time the code and secret exist in plaintext). */
export interface StartedLogin {
  code: string;
  poll_secret: string;
  expires_at: string;
  poll_interval_seconds: number;
}

/** A code as the approval page shows it. */
export interface PendingLogin {
  code: string;
  client_name: string;
  /** Who started it: the address and user agent the server saw (not what the CLI says). */
  requester: LoginRequester;
  status: 'pending' | 'approved' | 'denied' | 'consumed';
  created_at: string;
  expires_at: string;
}

/** What a successful poll hands the CLI. */
export interface CollectedLogin extends Record<string, unknown> {
  status: 'approved';
  api_key: string;
  key_id: string;
  company_id: number;
  user_id: number;
  role: string;
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

/** "abcd efgh" / "ABCDEFGH" / "ABCD-EFGH" → "ABCD-EFGH"; undefined when it cannot be a code. */
export function normalizeCode(text: unknown): string | undefined {
  if (typeof text !== 'string') return undefined;
  const t = text.trim().toUpperCase().replace(/\s+/g, '');
  if (!CODE_PATTERN.test(t)) return undefined;
  const bare = t.replace('-', '');
  return `${bare.slice(0, 4)}-${bare.slice(4)}`;
}

function newCode(): string {
  let s = '';
  for (let i = 0; i < 8; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return `${s.slice(0, 4)}-${s.slice(4)}`;
}

const notFound = () =>
  new VerbError('not_found', 'No open CLI login with that code: it is unknown, already used, or expired.', {
    hint: 'Run `solid login` again in the terminal and open the new link it prints (codes live 10 minutes and work once).',
  });

/** The store of CLI login codes (see the header). */
export class CliLoginStore {
  readonly #rt: Runtime;
  readonly ttlSeconds: number;

  constructor(rt: Runtime, options: { ttlSeconds?: number } = {}) {
    this.#rt = rt;
    this.ttlSeconds = options.ttlSeconds ?? DEFAULT_CLI_LOGIN_TTL_SECONDS;
  }

  /** Create the table when missing (idempotent). */
  async migrate(): Promise<void> {
    await this.#rt.store.migrate('cli-login', cliLoginMigrations);
  }

  /**
   * Open a login: a new code and polling secret for `clientName` (≤ 100 printable characters),
   * remembering who asked (`requester`, from the request itself).
   * @throws VerbError rate_limited when MAX_PENDING_CLI_LOGINS are open
   */
  async start(clientName: string, requester: LoginRequester): Promise<StartedLogin> {
    const now = this.#rt.clock();
    const nowIso = now.toISOString();
    const expiresAt = new Date(now.getTime() + this.ttlSeconds * 1000).toISOString();
    const pollSecret = `clp_${randomBytes(32).toString('base64url')}`;
    return this.#rt.store.write(async (tx) => {
      await this.#sweep(tx, now);
      const open = await tx.get<{ n: number }>(
        `SELECT COUNT(*) AS n FROM cli_logins WHERE status = 'pending'`,
      );
      if (Number(open?.n ?? 0) >= MAX_PENDING_CLI_LOGINS) {
        throw new VerbError('rate_limited', 'Too many CLI logins are waiting for approval.', {
          hint: 'Retry in a few minutes.',
          details: { retry_after_seconds: 60 },
        });
      }
      for (let attempt = 0; ; attempt++) {
        const code = newCode();
        const taken = await tx.get('SELECT 1 AS x FROM cli_logins WHERE code_hash = ?', [sha256(code)]);
        if (taken !== undefined && attempt < 5) continue;
        await tx.run(
          `INSERT INTO cli_logins (code_hash, poll_hash, client_name, status, created_at, expires_at, requester_address, requester_agent) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)`,
          [
            sha256(code),
            sha256(pollSecret),
            clientName,
            nowIso,
            expiresAt,
            requester.address,
            requester.user_agent,
          ],
        );
        return { code, poll_secret: pollSecret, expires_at: expiresAt, poll_interval_seconds: 2 };
      }
    });
  }

  /** The code as the approval page shows it. @throws VerbError not_found (unknown, expired) */
  async describe(codeText: unknown): Promise<PendingLogin> {
    const code = normalizeCode(codeText);
    if (code === undefined) throw notFound();
    const row = await this.#rt.store.read((q) =>
      q.get<Record<string, unknown>>(
        'SELECT client_name, status, created_at, expires_at, requester_address, requester_agent FROM cli_logins WHERE code_hash = ?',
        [sha256(code)],
      ),
    );
    if (row === undefined || String(row.expires_at) <= this.#rt.clock().toISOString()) throw notFound();
    return {
      code,
      client_name: String(row.client_name),
      requester: {
        address: String(row.requester_address ?? ''),
        user_agent: String(row.requester_agent ?? ''),
      },
      status: row.status as PendingLogin['status'],
      created_at: String(row.created_at),
      expires_at: String(row.expires_at),
    };
  }

  /**
   * Approve a pending code for `approver` (a human dashboard session's principal, checked by the
   * route): creates the new key (the approver's user, the picked `role`, agent_type "cli") and
   * the audit row, in one transaction.
   * @param role the key's role, picked by the human: at most the approver's own
   * @throws VerbError role_denied (above the approver's role), not_found (unknown or expired),
   *   approval_not_pending (already decided)
   */
  async approve(
    codeText: unknown,
    approver: Principal,
    role: Role,
  ): Promise<{ key_id: string; client_name: string; role: Role }> {
    if (!grantableRoles(approver.role).includes(role))
      throw new VerbError(
        'role_denied',
        `You are ${approver.role}: the key you hand to a command line can have your role or a lower one, not ${role}.`,
        { hint: `Pick one of: ${grantableRoles(approver.role).join(', ')}.`, details: { path: '/role' } },
      );
    const code = normalizeCode(codeText);
    if (code === undefined) throw notFound();
    const codeHash = sha256(code);
    const now = this.#rt.clock();
    return this.#rt.store.write(async (tx) => {
      const row = await this.#decide(tx, codeHash, now, 'approved');
      const { apiKey, info } = await insertApiKey(
        tx,
        {
          company_id: approver.company_id,
          user_id: approver.user_id,
          role,
          agent_type: 'cli',
          name: `solid login (${row.client_name})`,
        },
        now,
      );
      await tx.run(
        'UPDATE cli_logins SET company_id = ?, user_id = ?, role = ?, key_id = ?, sealed_key = ? WHERE code_hash = ?',
        [
          approver.company_id,
          approver.user_id,
          role,
          info.key_id,
          this.#rt.secrets.encrypt(apiKey, `cli_login:${codeHash}`),
          codeHash,
        ],
      );
      await appendOperatorAudit(tx, {
        company_id: approver.company_id,
        action: 'cli_login.approve',
        category: 'auth',
        request_data: {
          client_name: row.client_name,
          key_id: info.key_id,
          user_id: approver.user_id,
          role,
          approver_role: approver.role,
          approver_actor: approver.actor,
          requester_address: row.requester_address ?? null,
          requester_agent: row.requester_agent ?? null,
        },
        entity_type: 'api_key',
        entity_id: info.key_id,
        now,
      });
      return { key_id: info.key_id, client_name: String(row.client_name), role };
    });
  }

  /** Deny a pending code. @throws VerbError not_found, approval_not_pending */
  async deny(codeText: unknown, decider: Principal): Promise<void> {
    const code = normalizeCode(codeText);
    if (code === undefined) throw notFound();
    const codeHash = sha256(code);
    const now = this.#rt.clock();
    await this.#rt.store.write(async (tx) => {
      const row = await this.#decide(tx, codeHash, now, 'denied');
      await appendOperatorAudit(tx, {
        company_id: decider.company_id,
        action: 'cli_login.deny',
        category: 'auth',
        request_data: { client_name: row.client_name, user_id: decider.user_id },
        now,
      });
    });
  }

  /**
   * The CLI's poll. Resolves `{ status: "pending" }` or, once, the collected key.
   * @throws VerbError approval_rejected (denied), not_found (unknown, collected, expired)
   */
  async poll(pollSecret: unknown): Promise<{ status: 'pending' } | CollectedLogin> {
    if (typeof pollSecret !== 'string' || !/^clp_[A-Za-z0-9_-]{43}$/.test(pollSecret)) throw notFound();
    const pollHash = sha256(pollSecret);
    const now = this.#rt.clock();
    const out = await this.#rt.store.write(async (tx) => {
      const row = await tx.get<Record<string, unknown>>('SELECT * FROM cli_logins WHERE poll_hash = ?', [
        pollHash,
      ]);
      if (row === undefined || row.status === 'consumed') throw notFound();
      if (row.status === 'denied') {
        // Told once; the row goes (committed), then the refusal is answered.
        await tx.run('DELETE FROM cli_logins WHERE poll_hash = ?', [pollHash]);
        return { status: 'denied' as const };
      }
      if (String(row.expires_at) <= now.toISOString()) throw notFound();
      if (row.status === 'pending') return { status: 'pending' as const };
      const taken = await tx.run(
        `UPDATE cli_logins SET status = 'consumed', sealed_key = NULL WHERE poll_hash = ? AND status = 'approved'`,
        [pollHash],
      );
      if (taken.changes !== 1) throw notFound();
      const apiKey = this.#rt.secrets.decrypt(String(row.sealed_key), `cli_login:${String(row.code_hash)}`);
      return {
        status: 'approved' as const,
        api_key: apiKey,
        key_id: String(row.key_id),
        company_id: Number(row.company_id),
        user_id: Number(row.user_id),
        role: String(row.role),
      };
    });
    if (out.status === 'denied')
      throw new VerbError('approval_rejected', 'The login was denied in the dashboard.', {
        hint: 'Run `solid login` again if that was a mistake.',
      });
    return out;
  }

  /**
   * Move an open (unexpired) pending code to `status`, single use: a conditional UPDATE on
   * status 'pending'. Returns the row as it was. @throws VerbError not_found, approval_not_pending
   */
  async #decide(
    tx: StoreTx,
    codeHash: string,
    now: Date,
    status: 'approved' | 'denied',
  ): Promise<Record<string, unknown>> {
    const row = await tx.get<Record<string, unknown>>(
      'SELECT client_name, status, expires_at, requester_address, requester_agent FROM cli_logins WHERE code_hash = ?',
      [codeHash],
    );
    if (row === undefined || String(row.expires_at) <= now.toISOString()) throw notFound();
    const moved = await tx.run(
      `UPDATE cli_logins SET status = ?, decided_at = ? WHERE code_hash = ? AND status = 'pending'`,
      [status, now.toISOString(), codeHash],
    );
    if (moved.changes !== 1) throw notPending(String(row.status));
    return row;
  }

  /** Delete expired rows; revoke keys that were approved and never collected. */
  async #sweep(tx: StoreTx, now: Date): Promise<void> {
    const nowIso = now.toISOString();
    const stale = await tx.all<{ company_id: number; key_id: string }>(
      `SELECT company_id, key_id FROM cli_logins WHERE expires_at <= ? AND status = 'approved'`,
      [nowIso],
    );
    for (const s of stale) await this.#rt.tenants.revokeKey(tx, Number(s.company_id), s.key_id, now);
    await tx.run('DELETE FROM cli_logins WHERE expires_at <= ?', [nowIso]);
  }
}

function notPending(status: string): VerbError {
  return new VerbError(
    'approval_not_pending',
    `This CLI login was already ${status === 'consumed' ? 'approved and used' : status}.`,
    {
      hint: 'Each code works once. Run `solid login` again for a new one.',
    },
  );
}
