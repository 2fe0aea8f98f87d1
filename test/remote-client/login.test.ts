/**
 * `solid login` / `logout` / `whoami` against a running server, and the one-time codes behind the
 * browser login: a verified key lands in $XDG_CONFIG_HOME/solid/credentials.json with mode 0600
 * (nothing stored when the key is refused); the browser flow creates a NEW key for the approving
 * user once a signed-in human (session, CSRF token, Origin) types the code and approves, seeing
 * the requester's address and user agent and picking the key's role (at most their own; issue 35
 * row 5, RFC 8628 style); an API key or a session an agent credential opened never approves;
 * codes are single use, expire, and a denied login fails the CLI. Spec: spec/transports.md
 * §remote-login.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { remoteFixture, runCliCaptured, type RemoteFixture } from './support.ts';
import { createTestRuntime } from '../support/runtime.ts';
import { CliLoginStore } from '../../src/identity/cli-login-store.ts';
import type { Envelope, Role } from '../../src/spec/types.ts';
import { signInHumanForTest } from '../../src/testing.ts';

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

/**
 * A human's dashboard session: the user behind `f.keys[role]` signed in with TOTP (the humans
 * room's sign-in routes), as cookie and CSRF token.
 */
async function humanSession(f: RemoteFixture, role: Role): Promise<{ cookie: string; csrf: string }> {
  const p = await f.server.rt.tenants.authenticate(f.keys[role]);
  const s = await signInHumanForTest(f.server.rt, { company_id: p.company_id, user_id: p.user_id, role });
  return { cookie: s.cookie, csrf: s.csrfToken };
}

async function decide(
  f: RemoteFixture,
  code: string,
  action: 'approve' | 'deny',
  s: { cookie: string; csrf: string } | undefined,
  headers: Record<string, string> = {},
  body?: Record<string, unknown>,
): Promise<{ status: number; env: Envelope }> {
  const res = await fetch(`${f.baseUrl}/api/v1/cli-login/${encodeURIComponent(code)}/${action}`, {
    method: 'POST',
    headers: {
      origin: f.baseUrl,
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...(s ? { cookie: s.cookie, 'x-csrf-token': s.csrf } : {}),
      ...headers,
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, env: (await res.json()) as Envelope };
}

/** Start `solid login` (browser flow) and resolve the code it prints in the terminal. */
function startBrowserLogin(f: RemoteFixture, extra: string[] = []) {
  let gotCode!: (code: string) => void;
  const printed: string[] = [];
  const code = new Promise<string>((resolve) => {
    gotCode = resolve;
  });
  const run = f.cli('remote', ['login', ...extra], {
    onErr: (line) => {
      printed.push(line);
      const m = /code: ([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(line);
      if (m) gotCode(m[1]!);
    },
  });
  return { code, run, printed };
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
  'browser login: a signed-in human types the code, sees who asked, picks the role; the CLI receives a NEW key, stored 0600',
  { timeout: 120_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const { code, run, printed } = startBrowserLogin(f, ['--name', 'test laptop']);
    const c = await code;
    assert.match(c, /^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}$/);
    // The page the CLI prints carries no code: the human types what their own terminal shows.
    assert.match(printed.join('\n'), new RegExp(`${f.baseUrl.replace(/[.]/g, '\\.')}/#/cli-login\\s`));
    assert.doesNotMatch(printed.join('\n'), /cli-login\?code=/);

    // The approval page's data needs a human session; approving needs it, the Origin and the CSRF token.
    assert.equal((await fetch(`${f.baseUrl}/api/v1/cli-login/${c}`)).status, 401);
    const s = await humanSession(f, 'owner');
    const shown = (await (
      await fetch(`${f.baseUrl}/api/v1/cli-login/${c}`, { headers: { cookie: s.cookie } })
    ).json()) as Envelope;
    assert.equal(shown.result!.client_name, 'test laptop');
    assert.equal(shown.result!.status, 'pending');
    // Who asked, as the server saw the request (not what the CLI claims in its name).
    const requester = shown.result!.requester as { address: string; user_agent: string };
    assert.equal(requester.address, '127.0.0.1');
    assert.match(requester.user_agent, /^solid-cli\//);
    const role = { role: 'employee' };
    assert.equal((await decide(f, c, 'approve', undefined, {}, role)).status, 401);
    assert.equal(
      (await decide(f, c, 'approve', { cookie: s.cookie, csrf: 'wrong' }, {}, role)).env.error!.reason,
      'csrf_failed',
    );
    assert.equal(
      (await decide(f, c, 'approve', s, { origin: 'https://evil.example' }, role)).env.error!.reason,
      'origin_denied',
    );
    // The human picks the key's role; nothing is assumed.
    const noRole = await decide(f, c, 'approve', s);
    assert.equal(noRole.env.error!.reason, 'invalid_input');
    assert.equal(noRole.env.error!.details?.path, '/role');
    const approved = await decide(f, c, 'approve', s, {}, role);
    assert.equal(approved.status, 200, JSON.stringify(approved.env));
    assert.equal(approved.env.result!.role, 'employee');
    assert.equal(
      (await decide(f, c, 'approve', s, {}, role)).env.error!.reason,
      'approval_not_pending',
      'single use',
    );

    const result = await run;
    assert.equal(result.code, 0, result.stderr);
    const stored = credentials(f);
    assert.equal(statSync(stored.path).mode & 0o777, 0o600);
    const login = stored.servers[f.baseUrl]!;
    assert.equal(login.method, 'browser');
    assert.equal(login.role, 'employee', 'the role the human picked, not theirs');
    assert.notEqual(login.api_key, f.keys.owner, 'a new key');
    const principal = await f.server.rt.tenants.authenticate(login.api_key);
    assert.equal(principal.agent_type, 'cli');
    assert.equal(principal.role, 'employee');
    const audit = await f.server.rt.store.read((q) =>
      q.all<{ company_id: number; request_data: string }>(
        `SELECT company_id, request_data FROM audit_log WHERE action_type = 'cli_login.approve'`,
      ),
    );
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.company_id, 2);
    const data = JSON.parse(audit[0]!.request_data) as Record<string, unknown>;
    assert.equal(data.role, 'employee');
    assert.equal(data.approver_actor, 'human');
    assert.equal(data.requester_address, '127.0.0.1');
  },
);

test(
  'browser login: an API key or an agent-opened session never approves; no role above the approver’s own',
  { timeout: 120_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const { code, run } = startBrowserLogin(f);
    const c = await code;
    const owner = { authorization: `Bearer ${f.keys.owner}` };
    // The owner's API key alone: no session, nothing to approve with.
    assert.equal((await fetch(`${f.baseUrl}/api/v1/cli-login/${c}`, { headers: owner })).status, 401);
    const byKey = await decide(f, c, 'approve', undefined, owner, { role: 'owner' });
    assert.equal(byKey.status, 401);
    assert.equal(byKey.env.error!.reason, 'session_invalid');
    // A session opened with the key (while that transitional login exists) is an agent's: refused.
    const keyLogin = await fetch(`${f.baseUrl}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: f.baseUrl },
      body: JSON.stringify({ api_key: f.keys.owner }),
    });
    const keyLoginEnv = (await keyLogin.json()) as Envelope;
    if (keyLogin.status === 200) {
      const agent = {
        cookie: keyLogin.headers
          .getSetCookie()
          .map((x) => x.split(';')[0])
          .join('; '),
        csrf: String(keyLoginEnv.result!.csrf_token),
      };
      const described = await fetch(`${f.baseUrl}/api/v1/cli-login/${c}`, {
        headers: { cookie: agent.cookie },
      });
      assert.equal(((await described.json()) as Envelope).error?.reason, 'human_required');
      for (const action of ['approve', 'deny'] as const) {
        const byAgent = await decide(
          f,
          c,
          action,
          agent,
          {},
          action === 'approve' ? { role: 'owner' } : undefined,
        );
        assert.equal(byAgent.status, 403, JSON.stringify(byAgent.env));
        assert.equal(byAgent.env.error!.reason, 'human_required');
      }
      const refusals = await f.server.rt.store.read((q) =>
        q.all<{ reason: string }>(`SELECT reason FROM audit_log WHERE reason = 'human_required'`),
      );
      assert.ok(refusals.length >= 2, 'each refusal is audited');
    } else assert.equal(keyLoginEnv.error?.reason, 'session_requires_human');

    // A human admin cannot hand out an owner key.
    const admin = await humanSession(f, 'admin');
    const above = await decide(f, c, 'approve', admin, {}, { role: 'owner' });
    assert.equal(above.status, 403);
    assert.equal(above.env.error!.reason, 'role_denied');
    assert.equal(
      (await decide(f, c, 'approve', admin, {}, { role: 'admin' })).status,
      200,
      'the code was still pending',
    );
    const done = await run;
    assert.equal(done.code, 0, done.stderr);
    assert.equal(credentials(f).servers[f.baseUrl]!.role, 'admin');
  },
);

test(
  'browser login: a denied code fails the CLI (exit 3) and stores nothing',
  { timeout: 120_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const { code, run } = startBrowserLogin(f);
    const s = await humanSession(f, 'employee');
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
  const from = { address: '203.0.113.9', user_agent: 'solid-cli/1.0' };

  const a = await logins.start('cli a', from);
  assert.deepEqual((await logins.describe(a.code)).requester, from);
  assert.deepEqual(await logins.poll(a.poll_secret), { status: 'pending' });
  await assert.rejects(logins.poll('clp_' + 'x'.repeat(43)), { reason: 'not_found' });
  const approved = await logins.approve(a.code.toLowerCase().replace('-', ' '), owner, 'owner');
  const got = await logins.poll(a.poll_secret);
  assert.equal(got.status, 'approved');
  assert.equal((got as { key_id: string }).key_id, approved.key_id);
  await assert.rejects(logins.poll(a.poll_secret), { reason: 'not_found' }, 'the key is handed out once');
  await assert.rejects(logins.approve(a.code, owner, 'owner'), { reason: 'approval_not_pending' });

  const late = await logins.start('cli b', from);
  clock.ms += 601_000;
  await assert.rejects(logins.approve(late.code, owner, 'owner'), { reason: 'not_found' }, 'expired');
  await assert.rejects(logins.poll(late.poll_secret), { reason: 'not_found' });

  const uncollected = await logins.start('cli c', from);
  const left = await logins.approve(uncollected.code, owner, 'read_only');
  clock.ms += 601_000;
  await logins.start('cli d', from); // sweeps
  h.rt.tenants.invalidate();
  const keyRow = await h.rt.store.read((q) =>
    q.get<{ revoked_at: string | null }>('SELECT revoked_at FROM api_keys WHERE key_id = ?', [left.key_id]),
  );
  assert.notEqual(keyRow!.revoked_at, null);
});

test(
  'after solid login, whoami and other commands with no --url use the stored server',
  { timeout: 120_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const ok = await f.cli('remote', ['login', '--api-key', f.keys.admin]);
    assert.equal(ok.code, 0, ok.stderr);
    // A folder without a local database, no --url, no SOLID_API_URL, no --db.
    const empty = join(f.dir, 'elsewhere');
    mkdirSync(empty);
    const prev = process.cwd();
    process.chdir(empty);
    try {
      const env = {
        SOLID_API_URL: undefined,
        SOLID_API_KEY: undefined,
        SOLID_DB: undefined,
        SOLID_DATABASE_URL: undefined,
        XDG_CONFIG_HOME: f.configHome,
      };
      const who = await runCliCaptured(['whoami', '--json'], { env });
      assert.equal(who.code, 0, who.stderr);
      assert.equal(who.json<Envelope>().result!.role, 'admin');
      const list = await runCliCaptured(['verbs', 'list', '--json'], { env });
      assert.equal(list.code, 0, list.stderr);
      // A local database named explicitly still wins over the stored login.
      const local = await runCliCaptured(['--db', f.localDb, 'whoami', '--json'], { env });
      assert.equal(local.json<Envelope>().result!.sandbox, true);
    } finally {
      process.chdir(prev);
    }
  },
);
