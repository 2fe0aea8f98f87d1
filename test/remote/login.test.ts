/**
 * `solid login` / `logout` / `whoami` against a running server, and the one-time codes behind the
 * browser login: a verified key lands in $XDG_CONFIG_HOME/solid/credentials.json with mode 0600
 * (nothing stored when the key is refused); the browser flow creates a NEW key for the approving
 * user once a dashboard session (with its CSRF token and Origin) approves; codes are single use,
 * expire, and a denied login fails the CLI. Spec: spec/transports.md §remote-login.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { remoteFixture, type RemoteFixture } from './support.ts';
import { createTestRuntime } from '../support/runtime.ts';
import { CliLoginStore } from '../../src/identity/cli-login-store.ts';
import type { Envelope } from '../../src/spec/types.ts';

function credentials(f: RemoteFixture): {
  path: string;
  servers: Record<string, { api_key: string; role: string; user_id: number; method: string }>;
} {
  const path = join(f.configHome, 'solid', 'credentials.json');
  return {
    path,
    servers: (
      JSON.parse(readFileSync(path, 'utf8')) as {
        servers: Record<string, { api_key: string; role: string; user_id: number; method: string }>;
      }
    ).servers,
  };
}

/** A dashboard session for a key: cookie and CSRF token (POST /api/v1/session). */
async function dashboardSession(f: RemoteFixture, apiKey: string): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${f.baseUrl}/api/v1/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: f.baseUrl },
    body: JSON.stringify({ api_key: apiKey }),
  });
  assert.equal(res.status, 200);
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const env = (await res.json()) as Envelope;
  return { cookie, csrf: String(env.result!.csrf_token) };
}

async function decide(
  f: RemoteFixture,
  code: string,
  action: 'approve' | 'deny',
  s: { cookie: string; csrf: string } | undefined,
  headers: Record<string, string> = {},
): Promise<{ status: number; env: Envelope }> {
  const res = await fetch(`${f.baseUrl}/api/v1/cli-login/${encodeURIComponent(code)}/${action}`, {
    method: 'POST',
    headers: { origin: f.baseUrl, ...(s ? { cookie: s.cookie, 'x-csrf-token': s.csrf } : {}), ...headers },
  });
  return { status: res.status, env: (await res.json()) as Envelope };
}

/** Start `solid login` (browser flow) and resolve its code as soon as it prints the link. */
function startBrowserLogin(f: RemoteFixture, extra: string[] = []) {
  let gotCode!: (code: string) => void;
  const code = new Promise<string>((resolve) => {
    gotCode = resolve;
  });
  const run = f.cli('remote', ['login', ...extra], {
    onErr: (line) => {
      const m = /#\/cli-login\?code=([A-Z0-9-]+)/.exec(line);
      if (m) gotCode(m[1]!);
    },
  });
  return { code, run };
}

test(
  'login with an API key verifies it and stores it 0600 per server URL; whoami and logout use it',
  { timeout: 120_000 },
  async (t) => {
    const f = await remoteFixture(t);

    const refused = await f.cli('remote', [
      'login',
      '--api-key',
      'sk_solid_000000000000_notarealkeynotarealkey',
    ]);
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, /auth_invalid/);
    assert.equal(
      existsSync(join(f.configHome, 'solid', 'credentials.json')),
      false,
      'nothing stored for a refused key',
    );

    const ok = await f.cli('remote', ['login', '--api-key', f.keys.admin]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /logged in to http:\/\/127\.0\.0\.1:\d+ as user \d+ \(admin\)/);
    const { path, servers } = credentials(f);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(statSync(join(f.configHome, 'solid')).mode & 0o777, 0o700);
    assert.deepEqual(Object.keys(servers), [f.baseUrl]);
    assert.equal(servers[f.baseUrl]!.api_key, f.keys.admin);
    assert.doesNotMatch(ok.stdout + ok.stderr, new RegExp(f.keys.admin), 'the key is never printed');

    // The stored key is used by every remote command (no SOLID_API_KEY), never by the local database.
    const who = await f.cli('remote', ['whoami', '--json']);
    assert.equal(who.json<Envelope>().result!.role, 'admin');
    const localWho = await f.cli('local', ['whoami', '--json']);
    assert.equal(localWho.json<Envelope>().result!.sandbox, true);
    const env = await f.cli('remote', [
      'agent',
      'dispatch',
      'audit.trail',
      '--args',
      '{"limit":1}',
      '--json',
    ]);
    assert.equal(env.code, 0);
    // An explicit key wins over the stored one.
    assert.equal(
      (await f.cli('remote', ['whoami', '--json', '--api-key', f.keys.read_only])).json<Envelope>().result!
        .role,
      'read_only',
    );

    const out = await f.cli('remote', ['logout']);
    assert.equal(out.code, 0);
    assert.deepEqual(credentials(f).servers, {});
    assert.equal((await f.cli('remote', ['whoami', '--json'])).json<Envelope>().result!.sandbox, true);

    const noUrl = await f.cli('local', ['login', '--api-key', f.keys.admin]);
    assert.equal(noUrl.code, 2);
    assert.match(noUrl.stderr, /needs the server: pass --url/);
  },
);

test(
  'on a terminal, login asks for the key with hidden input; logout --revoke revokes it on the server',
  { timeout: 120_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const created = await f.server.rt.createApiKey({
      company_id: 2,
      user_id: 4,
      role: 'employee',
      agent_type: 'cli',
      name: 'to revoke',
    });
    const asked: string[] = [];
    const r = await f.cli('remote', ['login'], {
      tty: true,
      prompt: async () => assert.fail('the visible prompt must not be used for a key'),
      promptSecret: async (q) => {
        asked.push(q);
        return `  ${created}  `;
      },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(asked.length, 1);
    assert.match(asked[0]!, /Paste an API key/);
    assert.equal(credentials(f).servers[f.baseUrl]!.api_key, created);

    const out = await f.cli('remote', ['logout', '--revoke', '--json']);
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(out.json<Envelope>().result, { url: f.baseUrl, forgotten: true, revoked: true });
    f.server.rt.tenants.invalidate();
    const after = await f.cli('remote', ['whoami', '--json', '--api-key', created]);
    assert.equal(after.code, 3, 'the revoked key is refused');
    const rows = await f.server.rt.store.read((q) =>
      q.all<{ action_type: string }>(
        `SELECT action_type FROM audit_log WHERE action_type = 'api_key.revoke_own'`,
      ),
    );
    assert.equal(rows.length, 1);
  },
);

test(
  'browser login: a dashboard session approves the code; the CLI receives a NEW key for that user, stored 0600',
  { timeout: 120_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const { code, run } = startBrowserLogin(f, ['--name', 'test laptop']);
    const c = await code;
    assert.match(c, /^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}$/);

    // The approval page's data needs a session; approving needs the session, the Origin and the CSRF token.
    assert.equal((await fetch(`${f.baseUrl}/api/v1/cli-login/${c}`)).status, 401);
    const s = await dashboardSession(f, f.keys.owner);
    const shown = (await (
      await fetch(`${f.baseUrl}/api/v1/cli-login/${c}`, { headers: { cookie: s.cookie } })
    ).json()) as Envelope;
    assert.equal(shown.result!.client_name, 'test laptop');
    assert.equal(shown.result!.status, 'pending');
    assert.equal((await decide(f, c, 'approve', undefined)).status, 401);
    assert.equal(
      (await decide(f, c, 'approve', { cookie: s.cookie, csrf: 'wrong' })).env.error!.reason,
      'csrf_failed',
    );
    assert.equal(
      (await decide(f, c, 'approve', s, { origin: 'https://evil.example' })).env.error!.reason,
      'origin_denied',
    );
    const approved = await decide(f, c, 'approve', s);
    assert.equal(approved.status, 200, JSON.stringify(approved.env));
    assert.equal((await decide(f, c, 'approve', s)).env.error!.reason, 'approval_not_pending', 'single use');

    const result = await run;
    assert.equal(result.code, 0, result.stderr);
    const stored = credentials(f);
    assert.equal(statSync(stored.path).mode & 0o777, 0o600);
    const login = stored.servers[f.baseUrl]!;
    assert.equal(login.method, 'browser');
    assert.equal(login.role, 'owner');
    assert.notEqual(login.api_key, f.keys.owner, 'a new key, not the session key');
    const principal = await f.server.rt.tenants.authenticate(login.api_key);
    assert.equal(principal.agent_type, 'cli');
    assert.equal(principal.role, 'owner');
    const audit = await f.server.rt.store.read((q) =>
      q.all<{ action_type: string; company_id: number }>(
        `SELECT action_type, company_id FROM audit_log WHERE action_type = 'cli_login.approve'`,
      ),
    );
    assert.deepEqual(audit, [{ action_type: 'cli_login.approve', company_id: 2 }]);
  },
);

test(
  'browser login: a denied code fails the CLI (exit 3) and stores nothing',
  { timeout: 120_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const { code, run } = startBrowserLogin(f);
    const s = await dashboardSession(f, f.keys.employee);
    assert.equal((await decide(f, await code, 'deny', s)).status, 200);
    const r = await run;
    assert.equal(r.code, 3);
    assert.match(r.stderr, /approval_rejected/);
    assert.equal(existsSync(join(f.configHome, 'solid', 'credentials.json')), false);
  },
);

test('login codes: single use, expire, and a key approved but never collected is revoked', async (t) => {
  const clock = { ms: Date.parse('2026-06-01T12:00:00Z') };
  const h = await createTestRuntime(t, { clock: () => new Date(clock.ms) });
  const logins = new CliLoginStore(h.rt, { ttlSeconds: 600 });
  await logins.migrate();
  const owner = await h.rt.tenants.authenticate(h.keys.owner);

  const a = await logins.start('cli a');
  assert.deepEqual(await logins.poll(a.poll_secret), { status: 'pending' });
  await assert.rejects(logins.poll('clp_' + 'x'.repeat(43)), { reason: 'not_found' });
  const approved = await logins.approve(a.code.toLowerCase().replace('-', ' '), owner);
  const got = await logins.poll(a.poll_secret);
  assert.equal(got.status, 'approved');
  assert.equal((got as { key_id: string }).key_id, approved.key_id);
  await assert.rejects(logins.poll(a.poll_secret), { reason: 'not_found' }, 'the key is handed out once');
  await assert.rejects(logins.approve(a.code, owner), { reason: 'approval_not_pending' });

  const late = await logins.start('cli b');
  clock.ms += 601_000;
  await assert.rejects(logins.approve(late.code, owner), { reason: 'not_found' }, 'expired');
  await assert.rejects(logins.poll(late.poll_secret), { reason: 'not_found' });

  const uncollected = await logins.start('cli c');
  const left = await logins.approve(uncollected.code, owner);
  clock.ms += 601_000;
  await logins.start('cli d'); // sweeps
  h.rt.tenants.invalidate();
  const keyRow = await h.rt.store.read((q) =>
    q.get<{ revoked_at: string | null }>('SELECT revoked_at FROM api_keys WHERE key_id = ?', [left.key_id]),
  );
  assert.notEqual(keyRow!.revoked_at, null);
});
