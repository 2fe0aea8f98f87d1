/**
 * Per-grant toolsets and verbs (spec/oauth.md §consent): the human ticks toolsets (or names verbs)
 * on the consent screen; the token's principal gets the same allow-list an API key has, decided by
 * the pipeline's scope step, on /mcp tools/list and tools/call; a grant never reaches more than
 * the human who made it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { errorEnvelopeOf } from '../../src/transports/mcp/envelope-map.ts';
import { listGrants } from '../../src/oauth/grants.ts';
import { formActionSource } from '../../src/oauth/consent.ts';
import { connectWithOAuth } from './connector.ts';
import { humanConsents, oauthFixture, type OAuthFixture } from './fixture.ts';

async function reasonOf(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<string | undefined> {
  try {
    const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
    return r.isError === true ? errorEnvelopeOf(r)?.error?.reason : 'ok';
  } catch (err) {
    // A tool not listed for this caller: JSON-RPC -32602 carrying the envelope.
    return (err as { data?: { envelope?: { error?: { reason?: string } } } }).data?.envelope?.error?.reason;
  }
}

/** The MCP tool name of a verb. */
const tool = (verb: string) => verb.replace('.', '__');

/** A registered client's authorization URL (PKCE S256; the verifier is not needed here). */
async function authorizeUrl(f: OAuthFixture): Promise<URL> {
  const reg = await fetch(`${f.base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Screen Client',
      redirect_uris: ['http://127.0.0.1:9/callback'],
      token_endpoint_auth_method: 'none',
    }),
  });
  const { client_id } = (await reg.json()) as { client_id: string };
  const u = new URL('/oauth/authorize', f.base);
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id,
    redirect_uri: 'http://127.0.0.1:9/callback',
    scope: 'solid:read solid:write',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }))
    u.searchParams.set(k, v);
  return u;
}

async function scopeRows(f: OAuthFixture) {
  await f.rt.auditBuffer.flush();
  return f.rt.store.read((q) =>
    q.all<{ action_type: string; status: string; reason: string | null; key_id: string | null }>(
      "SELECT action_type, status, reason, key_id FROM audit_log WHERE company_id = ? AND reason = 'scope_denied' ORDER BY audit_id",
      [f.companyId],
    ),
  );
}

describe('the consent form may post on to the client', () => {
  it('form-action names the redirect URI’s origin or app scheme (browsers check it on every redirect)', () => {
    assert.equal(formActionSource('https://claude.ai/api/mcp/auth_callback?x=1'), 'https://claude.ai');
    assert.equal(formActionSource('http://127.0.0.1:33418/oauth/callback'), 'http://127.0.0.1:33418');
    assert.equal(formActionSource('cursor://anysphere.cursor-mcp/oauth/callback'), 'cursor:');
    assert.equal(formActionSource("javascript:alert('x'); script-src *"), undefined);
    assert.equal(formActionSource(undefined), undefined);
  });
});

describe('a grant limited to toolsets or verbs', () => {
  it('the consent screen offers the toolsets, saying what each does and which writes still ask', async (t) => {
    const f = await oauthFixture(t);
    const u = await authorizeUrl(f);
    const { page } = await humanConsents(f, u, { decision: 'deny' });
    assert.match(page, /name="toolset" value="webtest"/);
    assert.match(page, /still asking you: .*webtest\.charge<\/code> \(a typed phrase or your approval\)/s);
    assert.match(page, /api_keys\.create/);
    // An employee is offered only what an employee can hand on.
    const employee = await humanConsents(
      f,
      await authorizeUrl(f),
      { decision: 'deny' },
      { user_id: 5, role: 'employee' },
    );
    assert.match(employee.page, /name="toolset" value="webtest"/);
    assert.doesNotMatch(employee.page, /api_keys\.create|webtest\.charge</, 'above an employee: not offered');
  });

  it('one toolset: tools/list shows only it (and the core verbs); a call outside is scope_denied and audited', async (t) => {
    const f = await oauthFixture(t);
    const { client } = await connectWithOAuth(f, { role: 'admin', toolsets: ['webtest'] });
    t.after(() => client.close());
    const names = (await client.listTools()).tools.map((x) => x.name);
    assert.ok(
      names.some((n) => n.startsWith('webtest')),
      names.join(' '),
    );
    assert.ok(
      names.every((n) => n.startsWith('webtest') || n === tool('verbs.list') || n === tool('audit.revert')),
      names.join(' '),
    );
    assert.equal(await reasonOf(client, tool('webtest.quote'), { sku: 'mug', quantity: 1 }), 'ok');
    assert.equal(await reasonOf(client, tool('audit.trail'), {}), 'scope_denied');
    const rows = await scopeRows(f);
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.match(String(rows[0]!.key_id), /^grant:/);
    const [grant] = await f.rt.store.read((q) => listGrants(q, f.companyId));
    assert.deepEqual(grant!.scope, { toolsets: ['webtest'] });
  });

  it('a named verb only: its toolset’s other verbs are scope_denied, and a revert reaches no further', async (t) => {
    const f = await oauthFixture(t);
    const { client } = await connectWithOAuth(f, { role: 'admin', verbs: ['webtest.quote'] });
    t.after(() => client.close());
    const names = (await client.listTools()).tools.map((x) => x.name);
    assert.equal(names.includes(tool('webtest.note_add')), false, names.join(' '));
    assert.equal(await reasonOf(client, tool('webtest.quote'), { sku: 'mug', quantity: 1 }), 'ok');
    assert.equal(await reasonOf(client, tool('webtest.note_add'), { text: 'x' }), 'scope_denied');
    assert.equal((await scopeRows(f)).length, 1);
  });

  it('never more than the human: a verb above their role is refused on the screen; listed verbs keep the role check', async (t) => {
    const f = await oauthFixture(t);
    const employee = { user_id: 6, role: 'employee' as const };
    await assert.rejects(
      humanConsents(f, await authorizeUrl(f), { role: 'employee', verbs: ['webtest.charge'] }, employee),
      /consent answered 400.*no verb .webtest\.charge. your role can hand on/s,
    );
    await assert.rejects(
      humanConsents(f, await authorizeUrl(f), { role: 'employee', toolsets: ['nosuch'] }, employee),
      /consent answered 400.*no toolset/s,
    );
    const grants = await f.rt.store.read((q) => listGrants(q, f.companyId));
    assert.deepEqual(grants, [], 'no grant was recorded');
    // The owner names an admin verb but hands on only the employee role: the role still decides.
    const { client } = await connectWithOAuth(f, {
      role: 'employee',
      verbs: ['webtest.charge', 'webtest.quote'],
    });
    t.after(() => client.close());
    assert.equal(
      await reasonOf(client, tool('webtest.charge'), { invoice_id: 7, amount_cents: 500 }),
      'role_denied',
    );
    assert.equal(await reasonOf(client, tool('webtest.quote'), { sku: 'mug', quantity: 1 }), 'ok');
  });
});
