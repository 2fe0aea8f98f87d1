/**
 * The stored logins of `solid login`: one API key per server URL, in the user's config directory.
 *
 *   path    $XDG_CONFIG_HOME/solid/credentials.json, else ~/.config/solid/credentials.json
 *   mode    the file 0600, its directory 0700 (created so); every save rewrites the file through
 *           a temporary 0600 file and a rename, so a crash never leaves a half-written file and
 *           the key is never readable by others, not even for a moment
 *   shape   { "version": 1, "servers": { "<normalised base URL>": StoredLogin } }
 *
 * A file that is not valid JSON (or not this shape) reads as empty with a warning; the next save
 * replaces it. Spec: spec/transports.md §remote-login.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

export interface StoredLogin {
  api_key: string;
  key_id?: string | null;
  company_id: number;
  tenant_name?: string;
  user_id: number;
  role: string;
  tier?: string;
  /** How the key was obtained. */
  method: 'api_key' | 'browser';
  /** ISO 8601. */
  saved_at: string;
}

interface CredentialsFile {
  version: 1;
  servers: Record<string, StoredLogin>;
}

/** Where the credentials live for this environment. */
export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base =
    xdg !== undefined && xdg !== ''
      ? xdg
      : join(env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir(), '.config');
  return join(base, 'solid', 'credentials.json');
}

function read(path: string, warn: (message: string) => void): CredentialsFile {
  if (!existsSync(path)) return { version: 1, servers: {} };
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0)
    warn(
      `${path} is readable by other users (mode ${mode.toString(8)}); it will be rewritten with mode 600.`,
    );
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<CredentialsFile>;
    if (
      parsed.version === 1 &&
      parsed.servers !== null &&
      typeof parsed.servers === 'object' &&
      !Array.isArray(parsed.servers)
    )
      return { version: 1, servers: parsed.servers };
  } catch {
    /* fall through */
  }
  warn(`${path} is not a solid credentials file; it is ignored (and replaced by the next \`solid login\`).`);
  return { version: 1, servers: {} };
}

function write(path: string, file: CredentialsFile): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.credentials.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    writeFileSync(tmp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(tmp, 0o600);
    renameSync(tmp, path);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** The stored login for a (normalised) server URL. */
export function readLogin(
  url: string,
  options: { path?: string; warn?: (message: string) => void } = {},
): StoredLogin | undefined {
  const file = read(options.path ?? credentialsPath(), options.warn ?? (() => {}));
  const login = file.servers[url];
  return login !== undefined && typeof login.api_key === 'string' && login.api_key !== '' ? login : undefined;
}

/**
 * The most recent stored login (newest `saved_at`) and its server URL, or undefined when none is
 * stored: the server a CLI command uses when no --url, SOLID_API_URL or local database names one.
 */
export function latestLogin(
  options: { path?: string; warn?: (message: string) => void } = {},
): { url: string; login: StoredLogin } | undefined {
  const file = read(options.path ?? credentialsPath(), options.warn ?? (() => {}));
  let best: { url: string; login: StoredLogin } | undefined;
  for (const [url, login] of Object.entries(file.servers)) {
    if (
      login === null ||
      typeof login !== 'object' ||
      typeof login.api_key !== 'string' ||
      login.api_key === ''
    )
      continue;
    if (best === undefined || String(login.saved_at ?? '') > String(best.login.saved_at ?? ''))
      best = { url, login };
  }
  return best;
}

/** Store (or replace) the login for a server URL. Returns the file's path. */
export function saveLogin(
  url: string,
  login: StoredLogin,
  options: { path?: string; warn?: (message: string) => void } = {},
): string {
  const path = options.path ?? credentialsPath();
  const file = read(path, options.warn ?? (() => {}));
  file.servers[url] = login;
  write(path, file);
  return path;
}

/** Forget the login for a server URL. Returns whether one was stored. */
export function deleteLogin(
  url: string,
  options: { path?: string; warn?: (message: string) => void } = {},
): boolean {
  const path = options.path ?? credentialsPath();
  const file = read(path, options.warn ?? (() => {}));
  if (file.servers[url] === undefined) return false;
  delete file.servers[url];
  write(path, file);
  return true;
}
