/**
 * What the OAuth side refuses, each with the OAuth error (or the 401 challenge) and an audit row:
 * a foreign resource, a reused code, PKCE `plain`, a redirect URI not registered, a revoked grant,
 * an expired token, and an agent holding a token that tries to approve, type a phrase, change a
 * consent setting or open a session (an OAuth token is an agent credential). spec/oauth.md
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { signInHumanForTest } from '../../src/testing.ts';
import { metadataUrlAllowed } from '../../src/oauth/provider.ts';
import { humanConsents, Jar, oauthFixture, type OAuthFixture } from './fixture.ts';

const REDIRECT = 'http://127.0.0.1:9/callback';

async function register(f: OAuthFixture): Promise<string> {
  const res = await fetch(`${f.base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Refused Client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  return ((await res.json()) as { client_id: string }).client_id;
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

function authorizeUrl(
  f: OAuthFixture,
  clientId: string,
  challenge: string,
  over: Record<string, string> = {},
): URL {
  const u = new URL('/oauth/authorize', f.base);
  const params = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    scope: 'solid:read solid:write',
    resource: `${f.base}/mcp`,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'st',
    ...over,
  };
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u;
}

async function exchange(f: OAuthFixture, form: Record<string, string>) {
  const res = await fetch(`${f.base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

/** A token for the registered client after the owner's consent. */
async function tokens(f: OAuthFixture, choice: Parameters<typeof humanConsents>[2] = {}) {
  const clientId = await register(f);
  const { verifier, challenge } = pkce();
  const { redirect } = await humanConsents(f, authorizeUrl(f, clientId, challenge), choice);
  const code = redirect.searchParams.get('code')!;
  assert.ok(code, redirect.href);
  const form = {
    grant_type: 'authorization_code',
    code,
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_verifier: verifier,
    resource: `${f.base}/mcp`,
  };
  const t = await exchange(f, form);
  assert.equal(t.status, 200, JSON.stringify(t.body));
  return { clientId, form, access: t.body.access_token!, refresh: t.body.refresh_token! };
}

/** The audit rows of a tenant with this action, after the provider's asynchronous audit landed. */
async function rowsOf(f: OAuthFixture, companyId: number, action: string, want = 1) {
  for (let i = 0; i < 100; i++) {
    await f.rt.auditBuffer.flush();
    const rows = await f.rt.store.read((q) =>
      q.all<{ action_type: string; status: string; reason: string | null; key_id: string | null }>(
        'SELECT action_type, status, reason, key_id FROM audit_log WHERE company_id = ? AND action_type = ? ORDER BY audit_id',
        [companyId, action],
      ),
    );
    if (rows.length >= want) return rows;
    await sleep(10);
  }
  return [];
}

async function mcpInit(f: OAuthFixture, token: string) {
  return fetch(`${f.base}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    }),
  });
}

async function dispatch(f: OAuthFixture, token: string, verb: string, body: Record<string, unknown>) {
  const res = await fetch(`${f.base}/api/v1/agent/dispatch/${verb}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    env: (await res.json()) as {
      ok: boolean;
      error?: { reason: string };
      consent?: { approval_id?: string; nonce?: string };
    },
  };
}

describe('refused with the OAuth error, and audited', () => {
  it('a keyless /mcp request gets the 401 challenge naming the metadata, which names the issuer', async (t) => {
    const f = await oauthFixture(t);
    const res = await fetch(`${f.base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
    });
    assert.equal(res.status, 401);
    const challenge = res.headers.get('www-authenticate')!;
    const m = /resource_metadata="([^"]+)"/.exec(challenge);
    assert.ok(m, challenge);
    assert.equal(m[1], `${f.base}/.well-known/oauth-protected-resource/mcp`);
    const prm = (await (await fetch(m[1]!)).json()) as { resource: string; authorization_servers: string[] };
    assert.equal(prm.resource, `${f.base}/mcp`);
    const as = (await (
      await fetch(`${prm.authorization_servers[0]}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(as.response_types_supported, ['code']);
    assert.ok(typeof as.registration_endpoint === 'string' && typeof as.revocation_endpoint === 'string');
  });

  it('the consent page is for a signed-in human only: without a session it asks to sign in and come back', async (t) => {
    const f = await oauthFixture(t);
    const clientId = await register(f);
    const jar = new Jar();
    const res = await fetch(authorizeUrl(f, clientId, pkce().challenge), { redirect: 'manual' });
    jar.take(res);
    const consent = new URL(res.headers.get('location')!, f.base);
    const page = await fetch(consent, { headers: { cookie: jar.header } });
    assert.equal(page.status, 401);
    const html = await page.text();
    assert.ok(html.includes(`/?oauth_return=${encodeURIComponent(consent.pathname)}`), html);
    assert.doesNotMatch(html, /<form/);
    // A form post without a human session grants nothing.
    const post = await fetch(consent, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header, origin: f.base, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'decision=allow&role=owner&expiry_days=30',
    });
    assert.equal(post.status, 401);
    assert.deepEqual(await f.rt.store.read((q) => q.all('SELECT grant_id FROM oauth_grants')), []);
  });

  it('a person who denies: the client gets access_denied, the tenant an oauth.grant row (denied)', async (t) => {
    const f = await oauthFixture(t);
    const clientId = await register(f);
    const { redirect } = await humanConsents(f, authorizeUrl(f, clientId, pkce().challenge), {
      decision: 'deny',
    });
    assert.equal(redirect.origin + redirect.pathname, REDIRECT);
    assert.equal(redirect.searchParams.get('error'), 'access_denied');
    assert.equal((await rowsOf(f, f.companyId, 'oauth.grant'))[0]?.status, 'denied');
    assert.deepEqual(await f.rt.store.read((q) => q.all('SELECT grant_id FROM oauth_grants')), []);
  });

  it('a role above the person’s own is refused on the consent screen', async (t) => {
    const f = await oauthFixture(t);
    const clientId = await register(f);
    await assert.rejects(
      humanConsents(
        f,
        authorizeUrl(f, clientId, pkce().challenge),
        { role: 'owner' },
        { user_id: 3, role: 'employee' },
      ),
      /consent answered 400/,
    );
    assert.deepEqual(await f.rt.store.read((q) => q.all('SELECT grant_id FROM oauth_grants')), []);
  });

  it('a client nobody consented to expires after 7 days', async (t) => {
    const f = await oauthFixture(t);
    const clientId = await register(f);
    const row = await f.rt.store.read((q) =>
      q.get<{ e: unknown }>(`SELECT expires_at AS e FROM oauth_models WHERE model = 'Client' AND id = ?`, [
        clientId,
      ]),
    );
    assert.equal(Number(row!.e), f.clock.ms + 7 * 86_400_000);
  });

  it('a keyless /mcp request keeps the sandbox when the operator enabled it', async (t) => {
    const f = await oauthFixture(t, { keylessSandbox: true });
    const res = await fetch(`${f.base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}',
    });
    assert.equal(res.status, 200);
    assert.equal((await fetch(`${f.base}/.well-known/oauth-protected-resource`)).status, 200);
  });

  it('a resource that is not this server: invalid_target', async (t) => {
    const f = await oauthFixture(t);
    const clientId = await register(f);
    const res = await fetch(
      authorizeUrl(f, clientId, pkce().challenge, { resource: 'https://elsewhere.example/mcp' }),
      {
        redirect: 'manual',
      },
    );
    const to = new URL(res.headers.get('location')!);
    assert.equal(to.searchParams.get('error'), 'invalid_target');
    const rows = await rowsOf(f, f.sandboxId, 'oauth.authorize');
    assert.equal(rows[0]?.status, 'denied');
  });

  it('a token whose audience is not this server is refused at /mcp', async (t) => {
    const f = await oauthFixture(t);
    const { access } = await tokens(f);
    // As if issued for another resource by a shared authorization server.
    await f.rt.store.write(async (tx) => {
      const row = await tx.get<{ payload: string }>(
        `SELECT payload FROM oauth_models WHERE model = 'AccessToken' AND id = ?`,
        [access],
      );
      const p = JSON.parse(row!.payload) as Record<string, unknown>;
      p.aud = 'https://elsewhere.example/mcp';
      await tx.run(`UPDATE oauth_models SET payload = ? WHERE model = 'AccessToken' AND id = ?`, [
        JSON.stringify(p),
        access,
      ]);
    });
    const res = await mcpInit(f, access);
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate')!, /error="invalid_token".*resource_metadata=/);
    const rows = await rowsOf(f, f.companyId, 'api_key.wrong_secret');
    assert.match(String(rows[0]?.key_id ?? JSON.stringify(rows)), /^grant:/);
  });

  it('a code used twice: invalid_grant, and the grant’s tokens stop working', async (t) => {
    const f = await oauthFixture(t);
    const { form, access } = await tokens(f);
    assert.equal((await mcpInit(f, access)).status, 200);
    const again = await exchange(f, form);
    assert.equal(again.status, 400);
    assert.equal(again.body.error, 'invalid_grant');
    assert.equal((await rowsOf(f, f.sandboxId, 'oauth.token'))[0]?.reason, 'auth_invalid');
    assert.equal((await mcpInit(f, access)).status, 401, 'the reuse revoked the grant’s tokens');
  });

  it('PKCE plain: refused', async (t) => {
    const f = await oauthFixture(t);
    const clientId = await register(f);
    const { verifier } = pkce();
    const res = await fetch(authorizeUrl(f, clientId, verifier, { code_challenge_method: 'plain' }), {
      redirect: 'manual',
    });
    const to = new URL(res.headers.get('location')!);
    assert.equal(to.origin + to.pathname, REDIRECT);
    assert.equal(to.searchParams.get('error'), 'invalid_request');
    assert.match(to.searchParams.get('error_description') ?? '', /code_challenge_method/);
    assert.equal((await rowsOf(f, f.sandboxId, 'oauth.authorize'))[0]?.status, 'denied');
  });

  it('no PKCE at all: refused', async (t) => {
    const f = await oauthFixture(t);
    const clientId = await register(f);
    const u = authorizeUrl(f, clientId, 'x');
    u.searchParams.delete('code_challenge');
    u.searchParams.delete('code_challenge_method');
    const res = await fetch(u, { redirect: 'manual' });
    assert.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'invalid_request');
  });

  it('a redirect URI not registered: an error page, never a redirect there', async (t) => {
    const f = await oauthFixture(t);
    const clientId = await register(f);
    const res = await fetch(
      authorizeUrl(f, clientId, pkce().challenge, { redirect_uri: 'https://attacker.example/cb' }),
      {
        redirect: 'manual',
      },
    );
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('location'), null);
    assert.match(await res.text(), /redirect_uri/);
    assert.equal((await rowsOf(f, f.sandboxId, 'oauth.authorize'))[0]?.status, 'denied');
  });

  it('a revoked grant: its access token is refused at once and its refresh token too', async (t) => {
    const f = await oauthFixture(t);
    const { access, refresh, clientId } = await tokens(f);
    assert.equal((await mcpInit(f, access)).status, 200);
    const s = await signInHumanForTest(f.rt, { company_id: f.companyId, user_id: 1, role: 'owner' });
    const list = await fetch(`${f.base}/api/v1/oauth/grants`, { headers: { cookie: s.cookie } });
    const grants = (
      (await list.json()) as { result: { grants: { grant_id: string; client_name: string }[] } }
    ).result.grants;
    assert.equal(grants.length, 1);
    assert.equal(grants[0]!.client_name, 'Refused Client');
    const revoked = await fetch(`${f.base}/api/v1/oauth/grants/${grants[0]!.grant_id}/revoke`, {
      method: 'POST',
      headers: { cookie: s.cookie, origin: f.base, 'x-csrf-token': s.csrfToken },
    });
    assert.equal(revoked.status, 200, await revoked.clone().text());
    assert.equal((await mcpInit(f, access)).status, 401);
    const r = await exchange(f, { grant_type: 'refresh_token', refresh_token: refresh, client_id: clientId });
    assert.equal(r.body.error, 'invalid_grant');
    assert.equal((await rowsOf(f, f.companyId, 'oauth.revoke'))[0]?.status, 'completed');
    assert.equal((await rowsOf(f, f.sandboxId, 'mcp'))[0]?.reason, 'auth_invalid');
  });

  it('an agent session cookie cannot revoke a grant (a human session is asked)', async (t) => {
    const f = await oauthFixture(t);
    const res = await fetch(`${f.base}/api/v1/oauth/grants/x/revoke`, {
      method: 'POST',
      headers: { origin: f.base },
    });
    assert.equal(res.status, 401);
  });

  it('an expired token: refused; a refresh rotates the refresh token', async (t) => {
    const f = await oauthFixture(t);
    const { access, refresh, clientId } = await tokens(f);
    const r1 = await exchange(f, {
      grant_type: 'refresh_token',
      refresh_token: refresh,
      client_id: clientId,
    });
    assert.equal(r1.status, 200, JSON.stringify(r1.body));
    assert.notEqual(r1.body.refresh_token, refresh, 'rotated');
    const reused = await exchange(f, {
      grant_type: 'refresh_token',
      refresh_token: refresh,
      client_id: clientId,
    });
    assert.equal(reused.body.error, 'invalid_grant', 'the old refresh token is spent');
    f.clock.ms += 2 * 3600_000;
    assert.equal((await mcpInit(f, access)).status, 401);
    assert.equal((await rowsOf(f, f.sandboxId, 'mcp'))[0]?.reason, 'auth_invalid');
  });

  it('a grant is never more than its human’s role now', async (t) => {
    const f = await oauthFixture(t);
    const { access } = await tokens(f, { role: 'admin', expiry_days: 1 });
    const who = await dispatch(f, access, 'webtest.quote', { args: { sku: 'mug', quantity: 1 } });
    assert.equal(who.env.ok, true, JSON.stringify(who.env));
    // The owner is made read_only: the agent's admin ceiling falls with them.
    await f.rt.store.write((tx) =>
      tx.run("UPDATE users SET role = 'read_only' WHERE company_id = ? AND user_id = 1", [f.companyId]),
    );
    const note = await dispatch(f, access, 'webtest.note_add', { args: { text: 'hi' } });
    assert.equal(note.env.error?.reason, 'role_denied', JSON.stringify(note.env));
  });

  it('a read-only grant reads and cannot write', async (t) => {
    const f = await oauthFixture(t);
    const { access } = await tokens(f, { role: 'owner', read_only: true });
    assert.equal(
      (await dispatch(f, access, 'webtest.quote', { args: { sku: 'mug', quantity: 1 } })).env.ok,
      true,
    );
    const note = await dispatch(f, access, 'webtest.note_add', { args: { text: 'hi' } });
    assert.equal(note.env.error?.reason, 'role_denied', JSON.stringify(note.env));
  });

  it('an agent with a token cannot approve, type a phrase that counts, change consent settings or open a session', async (t) => {
    const f = await oauthFixture(t);
    const { access } = await tokens(f, { role: 'owner' });
    const pending = await dispatch(f, access, 'webtest.charge', {
      args: { invoice_id: 7, amount_cents: 500 },
    });
    assert.equal(pending.env.error?.reason, 'dispatch_pending', JSON.stringify(pending.env));
    const approvalId = pending.env.consent?.approval_id;
    assert.ok(approvalId, JSON.stringify(pending.env));
    const approve = await dispatch(f, access, 'approvals.approve', {
      args: { approval_id: approvalId, typed_phrase: 'CHARGE $5.00 to invoice #7' },
    });
    assert.equal(approve.env.ok, false);
    assert.equal(approve.env.error?.reason, 'human_required', JSON.stringify(approve.env));
    const typed = await dispatch(f, access, 'webtest.charge', {
      args: { invoice_id: 7, amount_cents: 500 },
      typed_phrase: 'CHARGE $5.00 to invoice #7',
    });
    assert.equal(typed.env.ok, false, JSON.stringify(typed.env));
    // The agent may confirm a confirmation gate (the tenant's default), but the change itself
    // needs a human.
    const asked = await dispatch(f, access, 'tenant.phrase_channel_set', { args: { phrase_channel: 'any' } });
    const setting = await dispatch(f, access, 'tenant.phrase_channel_set', {
      args: { phrase_channel: 'any' },
      confirm: true,
      nonce: asked.env.consent?.nonce,
    });
    assert.equal(setting.env.ok, false, JSON.stringify(setting.env));
    assert.ok(
      ['human_required', 'phrase_channel_human'].includes(setting.env.error!.reason),
      JSON.stringify(setting.env),
    );
    const settings = await f.rt.tenants.get(f.companyId);
    assert.notEqual(settings?.settings.phrase_channel, 'any', 'the setting did not change');
    const session = await fetch(`${f.base}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: f.base },
      body: JSON.stringify({ api_key: access }),
    });
    assert.equal(session.status, 403);
    assert.equal(
      session.headers.getSetCookie().some((c) => /^solid_session=[^;]/.test(c)),
      false,
    );
    assert.equal((await rowsOf(f, f.companyId, 'session.login'))[0]?.reason, 'session_requires_human');
    const effects = await f.rt.store.read((q) => q.all('SELECT * FROM webtest_effects'));
    assert.deepEqual(effects, [], 'nothing was charged');
  });
});

describe('client ID metadata documents (fetched with SSRF care)', () => {
  it('only https DNS names on port 443 may be fetched', () => {
    for (const ok of ['https://claude.ai/oauth/client.json', 'https://app.example.com:443/c'])
      assert.equal(metadataUrlAllowed(ok), true, ok);
    for (const bad of [
      'http://app.example.com/c',
      'https://127.0.0.1/c',
      'https://10.0.0.8/c',
      'https://[::1]/c',
      'https://localhost/c',
      'https://db.internal/c',
      'https://printer.local/c',
      'https://intranet/c',
      'https://app.example.com:8443/c',
      'not a url',
    ])
      assert.equal(metadataUrlAllowed(bad), false, bad);
  });

  it('the server advertises them; a client id naming a private address is refused before any fetch', async (t) => {
    const f = await oauthFixture(t);
    const as = (await (await fetch(`${f.base}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    assert.equal(as.client_id_metadata_document_supported, true);
    const res = await fetch(authorizeUrl(f, 'https://127.0.0.1/client.json', pkce().challenge), {
      redirect: 'manual',
    });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('location'), null, 'never redirected anywhere');
    assert.match(await res.text(), /invalid_client/);
    assert.equal((await rowsOf(f, f.sandboxId, 'oauth.authorize'))[0]?.status, 'denied');
  });
});
