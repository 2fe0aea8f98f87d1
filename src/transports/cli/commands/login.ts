/**
 * `solid login`, `solid logout`, `solid whoami`: credentials for remote mode (spec/transports.md
 * §remote-login).
 *
 *   solid login  --url URL [--api-key KEY] [--browser] [--no-open] [--name N] [--json]
 *       --api-key KEY         verify the key (GET /api/v1/whoami) and store it
 *       on a terminal         prompt for a key with hidden input; Enter alone → browser login
 *       --browser / no tty    browser login: POST /api/v1/cli-login, print the code ABCD-EFGH and
 *                             (on a terminal, also open) `<url>/#/cli-login`, where a signed-in
 *                             human types the code, checks who asked and picks the key's role;
 *                             poll until approved, receive a NEW key for that user
 *       Stored in $XDG_CONFIG_HOME/solid/credentials.json (else ~/.config/solid/…), mode 0600,
 *       one entry per server URL. Nothing is stored unless the key was verified.
 *   solid logout --url URL [--revoke]   forget the stored key; --revoke first revokes it on the
 *                                       server (if that fails, nothing is forgotten: exit 8)
 *   solid whoami [--api-key K] [--json] tenant, user, role and tier of the key — of the local
 *                                       database, or of the remote server with --url
 *
 * Exit codes: 0 ok; 2 usage (no URL); 3 key refused, login denied; 5 code expired; 8 unreachable.
 */
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import type { Envelope } from '../../../spec/types.ts';
import { ApiClient } from '../../../remote-client/api-client.ts';
import { cliLoginPageUrl } from '../../../identity/cli-login-store.ts';
import {
  credentialsPath,
  deleteLogin,
  readLogin,
  saveLogin,
  type StoredLogin,
} from '../../../remote-client/credentials-file.ts';
import { normalizeBaseUrl } from '../../../remote-client/remote-url.ts';
import type { WhoAmI } from '../../../identity/whoami.ts';
import { exitCodeOf, printEnvelope, type Io } from '../output.ts';
import { remoteUrlOf, withTarget } from '../target.ts';

interface LoginFlags {
  apiKey?: string;
  browser?: boolean;
  open?: boolean;
  name?: string;
  json?: boolean;
}

/** Consecutive failed polls tolerated before giving up (a flaky network during the login). */
const MAX_POLL_FAILURES = 3;

export function registerLogin(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('login')
    .description(
      'Log in to a remote solid server (--url / SOLID_API_URL): paste an API key, or approve in the browser',
    )
    .option('--api-key <key>', 'an API key to verify and store (instead of the prompt)')
    .option('--browser', 'log in through the dashboard even on a terminal')
    .option('--no-open', 'print the approval page without opening a browser')
    .option('--name <name>', 'how this CLI is named in the approval page', `solid CLI on ${hostname()}`)
    .option('--json', 'print the result as an envelope (never the key)')
    .action(async (flags: LoginFlags) => setExit(await runLogin(program, io, flags)));

  program
    .command('logout')
    .description('Forget the stored key of a remote server (--revoke: revoke it on the server first)')
    .option('--revoke', 'revoke the key on the server before forgetting it')
    .option('--json', 'print the result as an envelope')
    .action(async (flags: { revoke?: boolean; json?: boolean }) =>
      setExit(await runLogout(program, io, flags)),
    );

  program
    .command('whoami')
    .description('Show the tenant, user, role and tier of your API key (local database, or --url)')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY, then the stored login of --url)')
    .option('--json', 'print the envelope as JSON')
    .action(async (flags: { apiKey?: string; json?: boolean }) => {
      await withTarget(program, { apiKey: flags.apiKey, warn: io.err }, async (target) => {
        const env = await target.whoami();
        if (flags.json || !env.ok) return setExit(printEnvelope(io, env, Boolean(flags.json)));
        io.out(describeWho(env.result as WhoAmI, target.kind === 'remote' ? target.where : undefined));
        setExit(0);
      });
    });
}

function describeWho(w: WhoAmI, url: string | undefined): string {
  const where = url !== undefined ? ` at ${url}` : '';
  if (w.sandbox)
    return `No API key${where}: the read-only sandbox (company ${w.company_id}${w.tenant_name ? ` "${w.tenant_name}"` : ''}, ${w.tier}); writes need a key.`;
  return [
    `user ${w.user_id} (${w.role}) of company ${w.company_id}${w.tenant_name ? ` "${w.tenant_name}"` : ''}${where}`,
    `tier      ${w.tier}`,
    `key       ${w.key_id ?? '—'} (${w.agent_type})`,
  ].join('\n');
}

function urlOrUsage(program: Command, io: Io, command: string): string | undefined {
  const url = remoteUrlOf(program);
  if (url === undefined) {
    io.err(
      `✗ solid ${command} needs the server: pass --url https://… (the base URL \`solid serve\` prints) or set SOLID_API_URL.`,
    );
    return undefined;
  }
  return normalizeBaseUrl(url);
}

function fail(io: Io, env: Envelope, json: boolean | undefined): number {
  return printEnvelope(io, env, Boolean(json));
}

/** `solid login`; resolves to the exit code. */
export async function runLogin(program: Command, io: Io, flags: LoginFlags): Promise<number> {
  const url = urlOrUsage(program, io, 'login');
  if (url === undefined) return 2;
  let key = flags.apiKey;
  if (key === undefined && !flags.browser && io.isTTY && io.promptSecret !== undefined && !flags.json) {
    io.err(`Log in to ${url}.`);
    const typed = (
      await io.promptSecret('Paste an API key (sk_solid_…), or press Enter to log in with the browser: ')
    ).trim();
    if (typed !== '') key = typed;
  }
  let method: StoredLogin['method'] = 'api_key';
  if (key === undefined) {
    const got = await browserLogin(url, io, flags);
    if (typeof got === 'number') return got;
    key = got;
    method = 'browser';
  }
  const client = new ApiClient({ baseUrl: url, apiKey: key, client: 'solid-cli' });
  try {
    const me = await client.whoami();
    if (!me.ok) return fail(io, me, flags.json);
    const w = me.result as WhoAmI;
    if (w.sandbox)
      return fail(
        io,
        {
          ok: false,
          verb: 'login',
          error: {
            reason: 'auth_required',
            message: 'An empty key logs nobody in.',
            hint: 'Paste an API key (sk_solid_…), or use --browser.',
          },
        },
        flags.json,
      );
    const path = saveLogin(
      url,
      {
        api_key: key,
        key_id: w.key_id,
        company_id: w.company_id,
        tenant_name: w.tenant_name,
        user_id: w.user_id,
        role: w.role,
        tier: w.tier,
        method,
        saved_at: new Date().toISOString(),
      },
      { warn: io.err },
    );
    const result = {
      url,
      company_id: w.company_id,
      tenant_name: w.tenant_name,
      user_id: w.user_id,
      role: w.role,
      tier: w.tier,
      key_id: w.key_id,
      method,
      credentials_path: path,
    };
    if (flags.json) io.out(JSON.stringify({ ok: true, verb: 'login', result }, null, 2));
    else
      io.out(
        `✓ logged in to ${url} as user ${w.user_id} (${w.role}) of company ${w.company_id}${w.tenant_name ? ` "${w.tenant_name}"` : ''} (${w.tier})\n  key stored in ${path} (mode 600)`,
      );
    return 0;
  } finally {
    client.close();
  }
}

/** The one-time code flow; resolves to the new key or an exit code. */
async function browserLogin(url: string, io: Io, flags: LoginFlags): Promise<string | number> {
  const client = new ApiClient({ baseUrl: url, apiKey: null, client: 'solid-cli' });
  try {
    const started = await client.startCliLogin(flags.name ?? 'solid CLI');
    if (!started.ok) return fail(io, started, flags.json);
    const s = started.result as {
      code: string;
      poll_secret: string;
      expires_at: string;
      poll_interval_seconds: number;
    };
    const page = cliLoginPageUrl(url);
    io.err(
      `To log in, open this page, sign in to the dashboard and type the code below (it is shown only here, in your terminal):\n\n  ${page}\n\n  code: ${s.code}\n\nWaiting for approval (the code expires at ${s.expires_at})…`,
    );
    if (flags.open !== false && io.isTTY) openBrowser(page);
    const intervalMs = Math.max(250, (s.poll_interval_seconds || 2) * 1000);
    let failures = 0;
    for (;;) {
      await new Promise((r) => setTimeout(r, intervalMs));
      const polled = await client.pollCliLogin(s.poll_secret);
      if (polled.ok) {
        failures = 0;
        const r = polled.result as { status: string; api_key?: string };
        if (r.status === 'approved' && typeof r.api_key === 'string') return r.api_key;
        continue;
      }
      if (polled.error?.reason === 'upstream_unavailable' && ++failures < MAX_POLL_FAILURES) continue;
      if (polled.error?.reason === 'not_found') {
        return fail(
          io,
          {
            ...polled,
            verb: 'login',
            error: {
              ...polled.error,
              message: 'The login code expired (or was already used) before it was approved.',
              hint: 'Run `solid login` again and approve within 10 minutes.',
            },
          },
          flags.json,
        );
      }
      return fail(io, { ...polled, verb: 'login' }, flags.json);
    }
  } finally {
    client.close();
  }
}

/** Best effort: open the page in the default browser; the printed link is the fallback. */
function openBrowser(page: string): void {
  const [cmd, args] =
    process.platform === 'darwin'
      ? ['open', [page]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '', page]]
        : ['xdg-open', [page]];
  try {
    const child = spawn(cmd, args as string[], { stdio: 'ignore', detached: true });
    child.on('error', () => {});
    child.unref();
  } catch {
    /* no browser: the link is printed */
  }
}

/** `solid logout`; resolves to the exit code. */
export async function runLogout(
  program: Command,
  io: Io,
  flags: { revoke?: boolean; json?: boolean },
): Promise<number> {
  const url = urlOrUsage(program, io, 'logout');
  if (url === undefined) return 2;
  const stored = readLogin(url, { warn: io.err });
  if (stored === undefined) {
    const env = { ok: true, verb: 'logout', result: { url, forgotten: false, revoked: false } };
    if (flags.json) io.out(JSON.stringify(env, null, 2));
    else io.out(`Not logged in to ${url} (nothing stored in ${credentialsPath()}).`);
    return 0;
  }
  let revoked = false;
  if (flags.revoke) {
    const client = new ApiClient({ baseUrl: url, apiKey: stored.api_key, client: 'solid-cli' });
    try {
      const env = await client.revokeOwnKey();
      // An already revoked key (auth_invalid) is as good as revoked; anything else keeps the login.
      if (!env.ok && env.error?.reason !== 'auth_invalid') {
        io.err(
          'The stored key was kept (it could not be revoked); fix the problem and run `solid logout --revoke` again, or drop --revoke.',
        );
        return fail(io, { ...env, verb: 'logout' }, flags.json);
      }
      revoked = env.ok && env.result?.revoked === true;
    } finally {
      client.close();
    }
  }
  deleteLogin(url, { warn: io.err });
  const env = { ok: true, verb: 'logout', result: { url, forgotten: true, revoked } };
  if (flags.json) io.out(JSON.stringify(env, null, 2));
  else io.out(`✓ logged out of ${url}${revoked ? ' (the key is revoked on the server)' : ''}`);
  return exitCodeOf(env);
}
