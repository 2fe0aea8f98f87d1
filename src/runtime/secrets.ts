/**
 * Runtime secrets: the nonce secret(s) (HMAC keys for nonces, cursors, rollback handles) and the
 * master key that encrypts tenants' private signing keys at rest.
 *
 * Sources, in order: environment (`SOLID_NONCE_SECRET`, `SOLID_NONCE_SECRETS_PREVIOUS` as a
 * comma-separated list still accepted for verification, `SOLID_MASTER_KEY`), then the keyfile next
 * to the database (`<db>.keys.json`, mode 0600, written by `solid init` when the environment sets
 * nothing). Secrets are never logged; `describe()` gives only key ids.
 *
 * Every purpose gets its own HKDF-derived key, so a nonce can never be replayed as a cursor.
 * Spec: spec/consent.md §nonce, spec/receipts.md §rollback_handle.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Store } from '../store/store.ts';

export type TokenPurpose = 'nonce' | 'cursor' | 'rollback' | 'approval' | 'session' | 'login' | 'platform';

/**
 * What data the master key seals under a key of its own (HKDF of the master key per purpose):
 * `vault`, the tenants' third-party credentials (src/runtime/vault). A ciphertext of one purpose
 * never opens under another.
 */
export type SealPurpose = 'vault';

interface SecretEntry {
  kid: string;
  secret: Buffer;
}

export interface KeyfileContents {
  version: 1;
  nonce_secrets: Array<{ kid: string; secret: string }>;
  master_key: string;
}

export interface LoadSecretsOptions {
  env?: NodeJS.ProcessEnv;
  /** Path of the keyfile; undefined for ephemeral (in-memory databases, tests). */
  keyfilePath?: string;
  /** Create the keyfile when neither the environment nor the file has secrets. */
  create?: boolean;
}

function kidOf(secret: Buffer): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 8);
}

function decodeSecret(value: string): Buffer {
  const v = value.trim();
  if (/^[0-9a-f]{64,}$/i.test(v)) return Buffer.from(v, 'hex');
  if (/^[A-Za-z0-9+/_-]{43,}={0,2}$/.test(v)) {
    const b = Buffer.from(v, 'base64');
    if (b.length >= 32) return b;
  }
  // Any other string: stretch it to a key (still only as strong as the string).
  return createHash('sha256').update(v, 'utf8').digest();
}

/**
 * The runtime's secrets. Construct with `loadSecrets` (or `Secrets.ephemeral()` for tests).
 */
export class Secrets {
  readonly #nonce: SecretEntry[];
  readonly #master: Buffer;
  readonly #derived = new Map<string, Buffer>();

  constructor(nonceSecrets: SecretEntry[], masterKey: Buffer) {
    if (nonceSecrets.length === 0) throw new Error('at least one nonce secret is required');
    this.#nonce = nonceSecrets;
    this.#master = masterKey;
  }

  /** Fresh random secrets held in memory only (tests, throwaway runtimes): nonces and encrypted data do not survive a restart. */
  static ephemeral(): Secrets {
    const s = randomBytes(32);
    return new Secrets([{ kid: kidOf(s), secret: s }], randomBytes(32));
  }

  /** The key id that signs new tokens. */
  get currentKid(): string {
    return this.#nonce[0]!.kid;
  }

  /** Key ids accepted for verification (current first). Safe to log. */
  describe(): { signing_kid: string; accepted_kids: string[] } {
    return { signing_kid: this.currentKid, accepted_kids: this.#nonce.map((e) => e.kid) };
  }

  #key(kid: string, purpose: TokenPurpose): Buffer | undefined {
    const id = `${kid}/${purpose}`;
    let k = this.#derived.get(id);
    if (k === undefined) {
      const entry = this.#nonce.find((e) => e.kid === kid);
      if (entry === undefined) return undefined;
      k = Buffer.from(hkdfSync('sha256', entry.secret, Buffer.alloc(0), `solid-verbs/${purpose}/v1`, 32));
      this.#derived.set(id, k);
    }
    return k;
  }

  /** HMAC-SHA256 of `data` under the current key for `purpose`; returns base64url. */
  mac(purpose: TokenPurpose, data: string, kid = this.currentKid): string {
    const key = this.#key(kid, purpose);
    if (key === undefined) throw new Error(`unknown secret kid ${kid}`);
    return createHmac('sha256', key).update(data).digest('base64url');
  }

  /** Constant-time check of a MAC produced by `mac`. Unknown kid → false. */
  verifyMac(purpose: TokenPurpose, data: string, mac: string, kid: string): boolean {
    const key = this.#key(kid, purpose);
    if (key === undefined) return false;
    // Compare the canonical base64url text, not decoded bytes: a decoder ignores the spare low
    // bits of the last character (and skips stray characters), so byte comparison would accept
    // several spellings of one MAC. Exactly one spelling verifies.
    const expected = Buffer.from(createHmac('sha256', key).update(data).digest('base64url'), 'utf8');
    const given = Buffer.from(String(mac), 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /**
   * Sign a JSON payload as an opaque token `<prefix>.<kid>.<payload b64url>.<mac>`.
   * The payload is readable by whoever holds the token (never put secrets in it) but not forgeable.
   */
  sealToken(purpose: TokenPurpose, prefix: string, payload: Record<string, unknown>): string {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    const kid = this.currentKid;
    const signed = `${prefix}.${kid}.${body}`;
    return `${signed}.${this.mac(purpose, signed, kid)}`;
  }

  /** Open a token made by `sealToken`; undefined when malformed, forged or of another purpose/prefix. */
  openToken<T = Record<string, unknown>>(
    purpose: TokenPurpose,
    prefix: string,
    token: unknown,
  ): T | undefined {
    if (typeof token !== 'string' || token.length > 4096) return undefined;
    const parts = token.split('.');
    if (parts.length !== 4 || parts[0] !== prefix) return undefined;
    const [, kid, body, mac] = parts as [string, string, string, string];
    if (!this.verifyMac(purpose, `${prefix}.${kid}.${body}`, mac, kid)) return undefined;
    try {
      const value = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as unknown;
      return value !== null && typeof value === 'object' ? (value as T) : undefined;
    } catch {
      return undefined;
    }
  }

  #sealKey(purpose: SealPurpose): Buffer {
    const id = `seal/${purpose}`;
    let k = this.#derived.get(id);
    if (k === undefined) {
      k = Buffer.from(
        hkdfSync('sha256', this.#master, Buffer.alloc(0), `solid-verbs/seal/${purpose}/v1`, 32),
      );
      this.#derived.set(id, k);
    }
    return k;
  }

  /**
   * Encrypt with AES-256-GCM under the master key's HKDF-derived key for `purpose`; `aad` binds
   * the ciphertext to its row (a copied ciphertext does not open elsewhere). Returns `s1:<iv>:<tag>:<ct>`.
   */
  sealFor(purpose: SealPurpose, plaintext: string, aad: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#sealKey(purpose), iv);
    cipher.setAAD(Buffer.from(aad));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `s1:${iv.toString('base64url')}:${cipher.getAuthTag().toString('base64url')}:${ct.toString('base64url')}`;
  }

  /** Open `sealFor`'s output. Throws when the master key, purpose or aad is wrong (tampering). */
  openFor(purpose: SealPurpose, sealed: string, aad: string): string {
    const [v, iv, tag, ct] = sealed.split(':');
    if (v !== 's1' || iv === undefined || tag === undefined || ct === undefined)
      throw new Error('unknown ciphertext format');
    const decipher = createDecipheriv('aes-256-gcm', this.#sealKey(purpose), Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** Encrypt with AES-256-GCM under the master key; `aad` binds the ciphertext to its owner (kid). */
  encrypt(plaintext: string, aad: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#master, iv);
    cipher.setAAD(Buffer.from(aad));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `v1:${iv.toString('base64url')}:${cipher.getAuthTag().toString('base64url')}:${ct.toString('base64url')}`;
  }

  /** Decrypt `encrypt`'s output. Throws when the master key or aad is wrong (tampering). */
  decrypt(sealed: string, aad: string): string {
    const [v, iv, tag, ct] = sealed.split(':');
    if (v !== 'v1' || iv === undefined || tag === undefined || ct === undefined)
      throw new Error('unknown ciphertext format');
    const decipher = createDecipheriv('aes-256-gcm', this.#master, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** Error of a key file or secret that cannot be used (the message names the file, never a secret). */
export class SecretsError extends Error {
  override readonly name = 'SecretsError';
}

/** Parse a key file; a file that is not one is a SecretsError naming it. */
function readKeyfile(path: string): KeyfileContents {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new SecretsError(`the key file ${path} cannot be read as JSON: ${(err as Error).message}`);
  }
  const f = parsed as Partial<KeyfileContents> | null;
  const ok =
    f !== null &&
    typeof f === 'object' &&
    Array.isArray(f.nonce_secrets) &&
    f.nonce_secrets.length > 0 &&
    f.nonce_secrets.every((e) => typeof e?.kid === 'string' && typeof e?.secret === 'string') &&
    typeof f.master_key === 'string' &&
    Buffer.from(f.master_key, 'base64url').length === 32;
  if (!ok)
    throw new SecretsError(
      `the key file ${path} is not a solid-verbs key file (version 1: nonce_secrets and a 32-byte master_key)`,
    );
  return f as KeyfileContents;
}

/** The key file of a SQLite database: `<db>.keys.json`, beside it. */
export function keyfileFor(dbPath: string): string {
  return `${dbPath}.keys.json`;
}

/**
 * Load secrets from the environment and/or the keyfile. With `create`, writes a fresh keyfile
 * (0600) when nothing is configured. Without a keyfile and without env, returns ephemeral secrets
 * (tokens then die with the process) and `persisted: false`.
 */
export function loadSecrets(options: LoadSecretsOptions = {}): {
  secrets: Secrets;
  persisted: boolean;
  source: 'env' | 'keyfile' | 'ephemeral';
} {
  const env = options.env ?? process.env;
  let file: KeyfileContents | undefined;
  if (options.keyfilePath !== undefined && existsSync(options.keyfilePath)) {
    file = readKeyfile(options.keyfilePath);
  }
  if (
    file === undefined &&
    options.keyfilePath !== undefined &&
    options.create &&
    !(env.SOLID_NONCE_SECRET && env.SOLID_MASTER_KEY)
  ) {
    const s = randomBytes(32);
    file = {
      version: 1,
      nonce_secrets: [{ kid: kidOf(s), secret: s.toString('base64url') }],
      master_key: randomBytes(32).toString('base64url'),
    };
    try {
      // Exclusive: two processes starting on one fresh database agree on the first file written.
      writeFileSync(options.keyfilePath, JSON.stringify(file, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
      chmodSync(options.keyfilePath, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      file = readKeyfile(options.keyfilePath);
    }
  }
  const nonce: SecretEntry[] = [];
  if (env.SOLID_NONCE_SECRET) {
    const s = decodeSecret(env.SOLID_NONCE_SECRET);
    nonce.push({ kid: kidOf(s), secret: s });
    for (const prev of (env.SOLID_NONCE_SECRETS_PREVIOUS ?? '').split(',').filter((x) => x.trim() !== '')) {
      const p = decodeSecret(prev);
      nonce.push({ kid: kidOf(p), secret: p });
    }
  }
  if (file !== undefined) {
    for (const e of file.nonce_secrets) {
      const s = Buffer.from(e.secret, 'base64url');
      if (!nonce.some((n) => n.kid === e.kid)) nonce.push({ kid: e.kid, secret: s });
    }
  }
  let master: Buffer | undefined;
  if (env.SOLID_MASTER_KEY) master = decodeSecret(env.SOLID_MASTER_KEY);
  else if (file !== undefined) master = Buffer.from(file.master_key, 'base64url');
  if (nonce.length === 0 || master === undefined) {
    if (nonce.length === 0 && master === undefined)
      return { secrets: Secrets.ephemeral(), persisted: false, source: 'ephemeral' };
    if (nonce.length === 0) {
      const s = randomBytes(32);
      nonce.push({ kid: kidOf(s), secret: s });
    }
    master ??= randomBytes(32);
    return {
      secrets: new Secrets(nonce, master),
      persisted: false,
      source: env.SOLID_NONCE_SECRET ? 'env' : 'keyfile',
    };
  }
  return {
    secrets: new Secrets(nonce, master),
    persisted: true,
    source: env.SOLID_NONCE_SECRET ? 'env' : 'keyfile',
  };
}

/** What `runtimeSecrets` decided, for the start-up log (never the secrets themselves). */
export interface RuntimeSecrets {
  secrets: Secrets;
  source: 'env' | 'keyfile' | 'ephemeral';
  keyfilePath?: string;
  /** Set when the secrets die with the process: logged as a warning by createRuntime. */
  warning?: string;
}

/**
 * The secrets a runtime uses when `createRuntime` is given none (spec/consent.md §nonce), exactly as
 * the CLI keeps them:
 *
 * - a database file (`store.filePath`): the key file beside it (`<db>.keys.json`, 0600), created
 *   on the first start of a fresh database (exclusively: a second process starting at the same
 *   time reads the first one's file), read on every later start and by every other process on the
 *   file. `SOLID_NONCE_SECRET` / `SOLID_MASTER_KEY` in the environment take precedence.
 * - no file (in memory, a PostgreSQL server): the environment when it sets both, else ephemeral
 *   secrets with a warning (tokens and tenant signing keys die with the process).
 *
 * Errors (SecretsError, at start — never an internal_error per write): the database holds tenant
 * signing keys but its key file is missing and the environment sets no master key; the key file is
 * not a key file.
 */
export async function runtimeSecrets(
  store: Store,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RuntimeSecrets> {
  const fromEnv = Boolean(env.SOLID_NONCE_SECRET && env.SOLID_MASTER_KEY);
  const path = store.filePath;
  if (path !== undefined) {
    const keyfilePath = keyfileFor(path);
    if (!fromEnv && !existsSync(keyfilePath) && (await hasTenantKeys(store)))
      throw new SecretsError(
        `the database ${path} holds tenant signing keys but its key file ${keyfilePath} is missing: restore the key file (or set SOLID_NONCE_SECRET and SOLID_MASTER_KEY), or the keys cannot be opened`,
      );
    const loaded = loadSecrets({ env, keyfilePath, create: true });
    return { secrets: loaded.secrets, source: loaded.source, keyfilePath };
  }
  if (fromEnv) return { secrets: loadSecrets({ env }).secrets, source: 'env' };
  return {
    secrets: Secrets.ephemeral(),
    source: 'ephemeral',
    warning: `no secrets configured for ${store.description}: using ephemeral ones (nonces, cursors and tenant signing keys die with this process; pass secrets to createRuntime or set SOLID_NONCE_SECRET and SOLID_MASTER_KEY)`,
  };
}

async function hasTenantKeys(store: Store): Promise<boolean> {
  const row = await store.read((q) => q.get<{ kid: string }>('SELECT kid FROM tenant_keys LIMIT 1'));
  return row !== undefined;
}

/**
 * Check at start that the master key opens the database's tenant signing keys (one row is
 * decrypted). A wrong key file or SOLID_MASTER_KEY is a SecretsError naming where the key came
 * from, instead of a failure of every later write.
 */
export async function checkMasterKey(store: Store, secrets: Secrets, from: string): Promise<void> {
  const row = await store.read((q) =>
    q.get<{ kid: string; private_enc: string }>('SELECT kid, private_enc FROM tenant_keys LIMIT 1'),
  );
  if (row === undefined) return;
  try {
    secrets.decrypt(row.private_enc, row.kid);
  } catch {
    throw new SecretsError(
      `the master key from ${from} does not open the tenant signing keys of ${store.description}: it is not the key this database was created with (another database's key file, or a changed SOLID_MASTER_KEY)`,
    );
  }
}

/**
 * The secrets `createRuntime` runs with: `given` when passed, else `runtimeSecrets(store)`; either
 * way checked to open the database's tenant signing keys (checkMasterKey). Throws SecretsError.
 */
export async function chooseRuntimeSecrets(
  store: Store,
  given: Secrets | undefined,
): Promise<RuntimeSecrets> {
  const chosen: RuntimeSecrets =
    given !== undefined ? { secrets: given, source: 'env' } : await runtimeSecrets(store);
  const from =
    given !== undefined ? 'the secrets given to createRuntime' : (chosen.keyfilePath ?? 'SOLID_MASTER_KEY');
  await checkMasterKey(store, chosen.secrets, from);
  return chosen;
}
