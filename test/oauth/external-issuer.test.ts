/**
 * Trusting an external authorization server (an enterprise IdP; spec/oauth.md §external-issuer),
 * against a local fake IdP built from jose: keys generated here, its RFC 8414 metadata and JWKS
 * served on 127.0.0.1. A good RFC 9068 access token works on /mcp as an agent; a wrong audience,
 * wrong issuer, expired token, unknown kid, `alg: none`, HS256 or a plain JWT typ is 401
 * invalid_token and audited; and the token, like every agent credential, can never approve, type
 * a phrase that counts, change consent settings, open a human session or mint keys.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { insertUser } from '../../src/identity/users.ts';
import { checkIssuerUrl, metadataUrls } from '../../src/oauth/external.ts';
import { externalIssuerOf } from '../../src/transports/cli/commands/serve-options.ts';
import { oauthFixture, type OAuthFixture } from './fixture.ts';

interface FakeIdp {
  issuer: string;
  key: CryptoKey;
  /** Requests it answered, by path. */
  hits: string[];
}

/** A fake IdP: RFC 8414 metadata naming its JWKS, one ES256 key (kid "k1"). */
async function fakeIdp(t: TestContext, over: { metadataIssuer?: string } = {}): Promise<FakeIdp> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  const hits: string[] = [];
  let issuer = '';
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? '');
    const json = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/.well-known/oauth-authorization-server')
      return json({
        issuer: over.metadataIssuer ?? issuer,
        jwks_uri: `${issuer}/jwks`,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        response_types_supported: ['code'],
      });
    if (req.url === '/jwks') return json({ keys: [jwk] });
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { issuer, key: privateKey, hits };
}

interface Setup {
  f: OAuthFixture;
  idp: FakeIdp;
  /** A signed access token for user 3 (an owner) of the fixture's tenant; `claims` override. */
  token: (claims?: JWTPayload, header?: { typ?: string; kid?: string }, key?: CryptoKey) => Promise<string>;
}

async function setup(t: TestContext, over: { metadataIssuer?: string } = {}): Promise<Setup> {
  const idp = await fakeIdp(t, over);
  const f = await oauthFixture(t, { externalIssuer: { issuer: idp.issuer } });
  f.rt.options.publicUrl = f.base;
  await f.rt.store.write(async (tx) => {
    await insertUser(
      tx,
      { company_id: f.companyId, user_id: 3, name: 'Ida Owner', role: 'owner' },
      f.rt.clock(),
    );
    await insertUser(
      tx,
      { company_id: f.companyId, user_id: 4, name: 'Eve Employee', role: 'employee' },
      f.rt.clock(),
    );
  });
  const token = async (
    claims: JWTPayload = {},
    header: { typ?: string; kid?: string } = {},
    key = idp.key,
  ) => {
    const now = Math.floor(f.clock.ms / 1000);
    return new SignJWT({
      iss: idp.issuer,
      aud: `${f.base}/mcp`,
      sub: 'idp-subject-3',
      iat: now,
      exp: now + 600,
      jti: `jti-${now}-${Math.random()}`,
      client_id: 'enterprise-agent',
      solid_tenant: f.companyId,
      solid_user: 3,
      scope: 'solid:read solid:write',
      ...claims,
    })
      .setProtectedHeader({ alg: 'ES256', typ: header.typ ?? 'at+jwt', kid: header.kid ?? 'k1' })
      .sign(key);
  };
  return { f, idp, token };
}

async function mcp(f: OAuthFixture, token: string, method: string, params: unknown, session?: string) {
  const res = await fetch(`${f.base}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(session !== undefined ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const text = await res.text();
  const data = /^data: (.*)$/m.exec(text)?.[1] ?? text;
  return {
    status: res.status,
    challenge: res.headers.get('www-authenticate'),
    session: res.headers.get('mcp-session-id') ?? undefined,
    body: (data.startsWith('{') ? JSON.parse(data) : {}) as Record<string, unknown>,
  };
}

const init = (f: OAuthFixture, token: string) =>
  mcp(f, token, 'initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'idp-agent', version: '1' },
  });

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
      consent?: { approval_id?: string };
    },
  };
}

async function refusals(f: OAuthFixture) {
  await f.rt.auditBuffer.flush();
  return f.rt.store.read((q) =>
    q.all<{ action_type: string; reason: string; request_data: unknown }>(
      "SELECT action_type, reason, request_data FROM audit_log WHERE company_id = ? AND reason = 'auth_invalid' ORDER BY audit_id",
      [f.sandboxId],
    ),
  );
}

describe('an external authorization server (enterprise IdP)', () => {
  it('checks the issuer a server is configured with, and where its metadata is', () => {
    assert.throws(() => checkIssuerUrl('http://idp.example.com'), /not https/);
    assert.throws(() => checkIssuerUrl('https://idp.example.com/?x=1'), /query or a fragment/);
    assert.equal(checkIssuerUrl('http://127.0.0.1:9000'), 'http://127.0.0.1:9000');
    // solid serve: flag over environment; a bad value stops the start.
    assert.deepEqual(
      externalIssuerOf({ oauthIssuer: 'https://idp.example.com' }, { SOLID_OAUTH_TENANT: '2' }),
      {
        issuer: 'https://idp.example.com',
        tenant: 2,
      },
    );
    assert.deepEqual(externalIssuerOf({}, { SOLID_OAUTH_ISSUER: 'https://idp.example.com' }), {
      issuer: 'https://idp.example.com',
    });
    assert.equal(externalIssuerOf({}, {}), undefined);
    assert.throws(() => externalIssuerOf({ oauthIssuer: 'http://idp.example.com' }, {}), /not https/);
    assert.throws(() => externalIssuerOf({ oauthTenant: '2' }, {}), /needs --oauth-issuer/);
    assert.throws(
      () => externalIssuerOf({ oauthIssuer: 'https://i.example', oauthTenant: 'x' }, {}),
      /positive integer/,
    );
    assert.deepEqual(metadataUrls('https://login.example.com/tenant/v2.0'), [
      'https://login.example.com/.well-known/oauth-authorization-server/tenant/v2.0',
      'https://login.example.com/tenant/v2.0/.well-known/openid-configuration',
    ]);
  });

  it('a good token works on /mcp as an agent; the resource metadata names the IdP', async (t) => {
    const { f, idp, token } = await setup(t);
    const prm = (await (await fetch(`${f.base}/.well-known/oauth-protected-resource/mcp`)).json()) as {
      authorization_servers: string[];
    };
    assert.deepEqual(prm.authorization_servers, [idp.issuer]);
    const at = await token();
    const first = await init(f, at);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    await mcp(f, at, 'notifications/initialized', {}, first.session);
    const call = await mcp(
      f,
      at,
      'tools/call',
      { name: 'webtest__quote', arguments: { sku: 'mug', quantity: 2 } },
      first.session,
    );
    assert.match(JSON.stringify(call.body), /2500/);
    assert.ok(idp.hits.includes('/.well-known/oauth-authorization-server') && idp.hits.includes('/jwks'));
    await f.rt.auditBuffer.flush();
    const row = await f.rt.store.read((q) =>
      q.get<{ agent_type: string; key_id: string; user_id: number }>(
        "SELECT agent_type, key_id, user_id FROM audit_log WHERE company_id = ? AND action_type = 'webtest.quote'",
        [f.companyId],
      ),
    );
    assert.deepEqual(
      { ...row, user_id: Number(row?.user_id) },
      { agent_type: 'oauth-idp:enterprise-agent', key_id: 'idp:idp-subject-3', user_id: 3 },
    );
  });

  it('a role claim never lifts the agent above the user; solid:read alone is read-only', async (t) => {
    const { f, token } = await setup(t);
    const employee = await token({ solid_user: 4, solid_role: 'owner' });
    const charge = await dispatch(f, employee, 'webtest.charge', {
      args: { invoice_id: 7, amount_cents: 500 },
    });
    assert.equal(charge.env.error?.reason, 'role_denied', JSON.stringify(charge.env));
    const reader = await token({ scope: 'solid:read' });
    const note = await dispatch(f, reader, 'webtest.note_add', { args: { text: 'x' } });
    assert.equal(note.env.error?.reason, 'role_denied', JSON.stringify(note.env));
    assert.equal(
      (await dispatch(f, reader, 'webtest.quote', { args: { sku: 'mug', quantity: 1 } })).env.ok,
      true,
    );
  });

  it('wrong audience, wrong issuer, expired, unknown kid, alg none, HS256, a plain JWT: 401 invalid_token, audited', async (t) => {
    const { f, token } = await setup(t);
    const other = await generateKeyPair('ES256');
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const good = await token();
    const [, goodPayload] = good.split('.');
    const now = Math.floor(f.clock.ms / 1000);
    const hs256 = await new SignJWT(
      JSON.parse(Buffer.from(goodPayload!, 'base64url').toString()) as JWTPayload,
    )
      .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: 'k1' })
      .sign(new TextEncoder().encode('a-shared-secret-an-attacker-guessed!!'));
    const bad: Record<string, string> = {
      'wrong audience': await token({ aud: 'https://other.example/mcp' }),
      'wrong issuer': await token({ iss: 'https://evil.example' }),
      expired: await token({ exp: now - 60, iat: now - 3600 }),
      'unknown kid': await token({}, { kid: 'k2' }, other.privateKey),
      'alg none': `${b64({ alg: 'none', typ: 'at+jwt' })}.${goodPayload}.`,
      HS256: hs256,
      'typ JWT': await token({}, { typ: 'JWT' }),
      'signed by another key under the known kid': await token({}, {}, other.privateKey),
    };
    for (const [what, at] of Object.entries(bad)) {
      const res = await init(f, at);
      assert.equal(res.status, 401, what);
      assert.match(res.challenge ?? '', /error="invalid_token"/, what);
      assert.match(res.challenge ?? '', /resource_metadata="/, what);
    }
    // The first refusal is its own row; the repeats from the same address are counted in the
    // window's aggregated row (spec/audit.md §auth-failure-windows).
    await f.rt.authFailures.flushAll();
    const rows = await refusals(f);
    assert.equal(rows[0]?.action_type, 'mcp', JSON.stringify(rows));
    const window = rows.find((r) => r.action_type === 'auth.failures');
    assert.ok(window, JSON.stringify(rows));
    assert.match(
      JSON.stringify(window.request_data),
      new RegExp(`count\\\\?":${Object.keys(bad).length}\\b`),
    );
    assert.equal((await init(f, good)).status, 200, 'the good token still works');
  });

  it('metadata naming another issuer is refused (RFC 8414 §3.3): no token is trusted', async (t) => {
    const { f, token } = await setup(t, { metadataIssuer: 'https://someone-else.example' });
    const res = await init(f, await token());
    assert.equal(res.status, 401);
    assert.match(JSON.stringify(res.body), /names the issuer https:\/\/someone-else\.example/);
    assert.equal((await refusals(f))[0]?.reason, 'auth_invalid');
  });

  it('agents act, humans consent: an IdP token cannot approve, type a phrase, change consent settings, open a session or mint keys', async (t) => {
    const { f, token } = await setup(t);
    const at = await token();
    const pending = await dispatch(f, at, 'webtest.charge', { args: { invoice_id: 7, amount_cents: 500 } });
    assert.equal(pending.env.error?.reason, 'dispatch_pending', JSON.stringify(pending.env));
    const approve = await dispatch(f, at, 'approvals.approve', {
      args: { approval_id: pending.env.consent?.approval_id, typed_phrase: 'CHARGE $5.00 to invoice #7' },
    });
    assert.equal(approve.env.error?.reason, 'human_required', JSON.stringify(approve.env));
    const typed = await dispatch(f, at, 'webtest.charge', {
      args: { invoice_id: 7, amount_cents: 500 },
      typed_phrase: 'CHARGE $5.00 to invoice #7',
    });
    assert.equal(typed.env.ok, false, JSON.stringify(typed.env));
    const setting = await dispatch(f, at, 'tenant.phrase_channel_set', {
      args: { phrase_channel: 'any' },
      confirm: true,
    });
    assert.equal(setting.env.ok, false, JSON.stringify(setting.env));
    assert.notEqual((await f.rt.tenants.get(f.companyId))?.settings.phrase_channel, 'any');
    const asked = await dispatch(f, at, 'api_keys.create', { args: { name: 'escape', role: 'owner' } });
    const nonce = (asked.env as { consent?: { nonce?: string } }).consent?.nonce;
    assert.ok(nonce, JSON.stringify(asked.env));
    const key = await dispatch(f, at, 'api_keys.create', {
      args: { name: 'escape', role: 'owner' },
      confirm: true,
      nonce,
    });
    assert.equal(key.env.ok, false, JSON.stringify(key.env));
    assert.ok(['scope_denied', 'human_required'].includes(key.env.error!.reason), JSON.stringify(key.env));
    const keys = await f.rt.store.read((q) =>
      q.all('SELECT key_id FROM api_keys WHERE company_id = ? AND name = ?', [f.companyId, 'escape']),
    );
    assert.deepEqual(keys, []);
    const session = await fetch(`${f.base}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: f.base },
      body: JSON.stringify({ api_key: at }),
    });
    assert.equal(session.status, 403);
    assert.equal(
      session.headers.getSetCookie().some((c) => /^solid_session=[^;]/.test(c)),
      false,
    );
    const effects = await f.rt.store.read((q) => q.all('SELECT * FROM webtest_effects'));
    assert.deepEqual(effects, [], 'nothing was charged');
  });
});
