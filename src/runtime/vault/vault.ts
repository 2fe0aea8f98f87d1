/**
 * The credential vault: each tenant's secrets for third-party APIs (a payments provider's key, an
 * OAuth token of a mail service), sealed at rest with the runtime's key management
 * (Secrets.sealFor, purpose `vault`: AES-256-GCM under an HKDF key of the master key, bound to its
 * row by the aad `vault/<company_id>/<name>/<version>`).
 *
 * Rules (spec/vault.md):
 * - **Never returned.** No verb and no route reads a secret: a listing ({@link VaultEntry}) has
 *   the name, version, times and at most the last 4 characters. The plaintext leaves this module
 *   only through {@link readVaultSecret}, for a connector's outbox handler at the moment it calls
 *   the provider (a handler gets the runtime; a verb handler does not).
 * - **Owner only.** Set, rotate and revoke are the owner's acts at the CLI (`solid vault …`, the
 *   owner's one-time code at the terminal), never a verb: no API key, OAuth token or platform key
 *   reaches them. Each writes an audit row (action `vault.set|rotate|revoke`, category `vault`,
 *   request_data `{ name, version }`, never the secret) in the transaction of the change.
 * - **Never logged.** Nothing here logs; errors name the secret, never its value.
 *
 * Refusals (VerbError): `invalid_args` (a bad name or secret, or set over a live secret),
 * `not_found` (rotate/revoke/read of a name that is absent or revoked).
 */
import type { Queryable, Store, StoreTx } from '../../store/store.ts';
import { VerbError } from '../errors.ts';
import type { Secrets } from '../secrets.ts';
import { appendAudit, auditEntry } from '../ledger/write/audit.ts';

/** What a listing shows of one secret: never the secret. */
export interface VaultEntry {
  name: string;
  /** 1 when set, +1 at each rotation. */
  version: number;
  /** At most the last 4 characters (fewer for a secret under 12 characters: none). */
  hint: string;
  created_at: string;
  rotated_at: string | null;
  revoked_at: string | null;
}

/** Who acted, for the audit row: the owner verified at the terminal, else the operator. */
export type VaultActor = { user_id: number; role: string; agent_type: string } | undefined;

const NAME = /^[a-z][a-z0-9_.-]{0,63}$/;
/** Longest secret kept (characters): an OAuth token with its refresh token fits. */
export const VAULT_SECRET_MAX = 8192;

/** A name is lower-case `[a-z][a-z0-9_.-]*`, at most 64 characters. @throws VerbError invalid_args */
export function checkVaultName(name: unknown): string {
  if (typeof name !== 'string' || !NAME.test(name))
    throw new VerbError(
      'invalid_args',
      'A vault name is 1-64 characters: a lower-case letter, then a-z, 0-9, _ . -',
      {
        hint: 'For example `payments.api_key`.',
      },
    );
  return name;
}

// eslint-disable-next-line no-control-regex -- control characters are what is refused
const CONTROL = /[\u0000-\u001f\u007f]/;

function checkSecret(secret: unknown): string {
  if (
    typeof secret !== 'string' ||
    secret.length === 0 ||
    secret.length > VAULT_SECRET_MAX ||
    CONTROL.test(secret)
  )
    throw new VerbError(
      'invalid_args',
      `A vault secret is 1-${VAULT_SECRET_MAX} printable characters on one line.`,
      {
        hint: 'Pipe it on stdin or type it at the prompt; never pass it as an argument.',
      },
    );
  return secret;
}

function hintOf(secret: string): string {
  return secret.length >= 12 ? secret.slice(-4) : '';
}

function aadOf(companyId: number, name: string, version: number): string {
  return `vault/${companyId}/${name}/${version}`;
}

interface Row {
  name: string;
  secret_enc: string;
  hint: string;
  version: number | string;
  created_at: string;
  rotated_at: string | null;
  revoked_at: string | null;
}

function entryOf(r: Row): VaultEntry {
  return {
    name: r.name,
    version: Number(r.version),
    hint: r.hint,
    created_at: r.created_at,
    rotated_at: r.rotated_at,
    revoked_at: r.revoked_at,
  };
}

async function rowOf(q: Queryable, companyId: number, name: string): Promise<Row | undefined> {
  return q.get<Row>(
    'SELECT name, secret_enc, hint, version, created_at, rotated_at, revoked_at FROM vault_secrets WHERE company_id = ? AND name = ?',
    [companyId, name],
  );
}

async function audit(
  tx: StoreTx,
  companyId: number,
  action: 'vault.set' | 'vault.rotate' | 'vault.revoke',
  actor: VaultActor,
  entry: VaultEntry,
  now: Date,
): Promise<void> {
  await appendAudit(
    tx,
    auditEntry(
      {
        company_id: companyId,
        now,
        action,
        category: 'vault',
        status: 'completed',
        principal: actor ?? null,
        agent_type: actor?.agent_type ?? 'cli:operator',
      },
      {
        request_data: { name: entry.name, version: entry.version },
        entity_type: 'vault_secret',
        entity_id: entry.name,
      },
    ),
  );
}

/** The change to make: tenant, name, the secret (set/rotate), who and when. */
export interface VaultChange {
  company_id: number;
  name: string;
  secret: string;
  actor: VaultActor;
  now: Date;
}

/**
 * Store a new secret (or set again a revoked name, as its next version), sealed, and audit it.
 * @throws VerbError invalid_args (bad name/secret, or a live secret of that name: rotate it)
 */
export async function setVaultSecret(tx: StoreTx, secrets: Secrets, c: VaultChange): Promise<VaultEntry> {
  const name = checkVaultName(c.name);
  const secret = checkSecret(c.secret);
  const old = await rowOf(tx, c.company_id, name);
  if (old !== undefined && old.revoked_at === null)
    throw new VerbError('invalid_args', `The vault already holds a live secret named ${name}.`, {
      hint: `Replace it with \`solid vault rotate ${name}\`.`,
    });
  const version = old === undefined ? 1 : Number(old.version) + 1;
  const at = c.now.toISOString();
  const sealed = secrets.sealFor('vault', secret, aadOf(c.company_id, name, version));
  if (old === undefined)
    await tx.run(
      'INSERT INTO vault_secrets (company_id, name, secret_enc, hint, version, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      [c.company_id, name, sealed, hintOf(secret), version, at],
    );
  else
    await tx.run(
      'UPDATE vault_secrets SET secret_enc = ?, hint = ?, version = ?, created_at = ?, rotated_at = NULL, revoked_at = NULL WHERE company_id = ? AND name = ?',
      [sealed, hintOf(secret), version, at, c.company_id, name],
    );
  const entry: VaultEntry = {
    name,
    version,
    hint: hintOf(secret),
    created_at: at,
    rotated_at: null,
    revoked_at: null,
  };
  await audit(tx, c.company_id, 'vault.set', c.actor, entry, c.now);
  return entry;
}

/**
 * Replace a live secret with a new one (the next version); the old ciphertext is overwritten.
 * @throws VerbError invalid_args (bad secret), not_found (absent or revoked)
 */
export async function rotateVaultSecret(tx: StoreTx, secrets: Secrets, c: VaultChange): Promise<VaultEntry> {
  const name = checkVaultName(c.name);
  const secret = checkSecret(c.secret);
  const old = await liveRow(tx, c.company_id, name);
  const version = Number(old.version) + 1;
  const at = c.now.toISOString();
  await tx.run(
    'UPDATE vault_secrets SET secret_enc = ?, hint = ?, version = ?, rotated_at = ? WHERE company_id = ? AND name = ?',
    [
      secrets.sealFor('vault', secret, aadOf(c.company_id, name, version)),
      hintOf(secret),
      version,
      at,
      c.company_id,
      name,
    ],
  );
  const entry: VaultEntry = { ...entryOf(old), version, hint: hintOf(secret), rotated_at: at };
  await audit(tx, c.company_id, 'vault.rotate', c.actor, entry, c.now);
  return entry;
}

/**
 * Revoke a secret: its ciphertext is erased (nothing can read it again), its name stays listed as
 * revoked. Connectors reading it get `not_found` from then on.
 * @throws VerbError not_found (absent or already revoked)
 */
export async function revokeVaultSecret(tx: StoreTx, c: Omit<VaultChange, 'secret'>): Promise<VaultEntry> {
  const name = checkVaultName(c.name);
  const old = await liveRow(tx, c.company_id, name);
  const at = c.now.toISOString();
  await tx.run(
    "UPDATE vault_secrets SET secret_enc = '', hint = '', revoked_at = ? WHERE company_id = ? AND name = ?",
    [at, c.company_id, name],
  );
  const entry: VaultEntry = { ...entryOf(old), hint: '', revoked_at: at };
  await audit(tx, c.company_id, 'vault.revoke', c.actor, entry, c.now);
  return entry;
}

async function liveRow(q: Queryable, companyId: number, name: string): Promise<Row> {
  const row = await rowOf(q, companyId, name);
  if (row === undefined || row.revoked_at !== null)
    throw new VerbError('not_found', `The vault holds no live secret named ${name} for this tenant.`, {
      hint: `Set it with \`solid vault set ${name}\` (the owner, at the terminal).`,
    });
  return row;
}

/** The tenant's secrets as a listing (never a secret), by name. */
export async function listVaultSecrets(q: Queryable, companyId: number): Promise<VaultEntry[]> {
  const rows = await q.all<Row>(
    'SELECT name, secret_enc, hint, version, created_at, rotated_at, revoked_at FROM vault_secrets WHERE company_id = ? ORDER BY name',
    [companyId],
  );
  return rows.map(entryOf);
}

/**
 * The plaintext of a tenant's live secret, for a connector's outbox handler at the moment it calls
 * the provider (`meta.runtime` gives `store` and `secrets`). Never put it in a result, an event,
 * an audit row or a log line. Reads committed data.
 *
 * @throws VerbError not_found (absent or revoked); Error when the ciphertext does not open (a
 *   different master key, a tampered row).
 */
export async function readVaultSecret(
  rt: { store: Store; secrets: Secrets },
  companyId: number,
  name: string,
): Promise<string> {
  const row = await rt.store.read((q) => liveRow(q, companyId, checkVaultName(name)));
  return rt.secrets.openFor('vault', row.secret_enc, aadOf(companyId, row.name, Number(row.version)));
}
