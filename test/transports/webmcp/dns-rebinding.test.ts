/**
 * DNS rebinding against the browser routes (issue 35 row 10; spec/transports.md §webmcp-csrf): a
 * page of `http://rebind.example:3000`, whose name the attacker pointed at this server, sends an
 * `Origin` that matches its own `Host` header. The dashboard, WebMCP, session and sign-in routes
 * check the Origin against the configured allowed origins instead; the server's own origin counts
 * only on `localhost` or an IP literal, names no rebinding page can make a browser send.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Envelope } from '../../../src/spec/types.ts';
import { signInHumanForTest } from '../../../src/testing.ts';
import { webmcpFixture, type WebmcpFixture } from './fixture.ts';

const REBIND = { host: 'rebind.example:3000', origin: 'http://rebind.example:3000' };

/** A keyless tool call on the public page surface, as a page sends it. */
async function quote(
  f: WebmcpFixture,
  headers: Record<string, string>,
): Promise<{ status: number; env: Envelope }> {
  const res = await f.app.inject({
    method: 'POST',
    url: '/api/v1/webmcp/execute/webtest__quote',
    headers,
    payload: { input: { sku: 'mug', quantity: 1 }, surface: 'public' },
  });
  return { status: res.statusCode, env: res.json() as Envelope };
}

describe('DNS rebinding: Origin checked against the configured origins, not the Host header (row 10)', () => {
  it('a keyless WebMCP tool call from a rebound name is 403 origin_denied; localhost and IP literals pass', async (t) => {
    const f = await webmcpFixture(t);
    const rebound = await quote(f, REBIND);
    assert.equal(rebound.status, 403, JSON.stringify(rebound.env));
    assert.equal(rebound.env.error!.reason, 'origin_denied');
    assert.match(rebound.env.error!.hint!, /--allowed-origin http:\/\/rebind\.example:3000/);

    for (const [host, origin] of [
      ['localhost:3000', 'http://localhost:3000'],
      ['127.0.0.1:3000', 'http://127.0.0.1:3000'],
      ['[::1]:3000', 'http://[::1]:3000'],
    ] as const) {
      const own = await quote(f, { host, origin });
      assert.equal(own.status, 200, `${origin}: ${JSON.stringify(own.env)}`);
    }
    // The Host still has to match: a loopback Origin sent to another Host is cross-origin.
    assert.equal((await quote(f, { host: REBIND.host, origin: 'http://localhost:3000' })).status, 403);
  });

  it('a name configured as an allowed origin is accepted', async (t) => {
    const f = await webmcpFixture(t, { allowedOrigins: [REBIND.origin] });
    const listed = await quote(f, REBIND);
    assert.equal(listed.status, 200, JSON.stringify(listed.env));
  });

  it('the session, sign-in and dashboard routes refuse the rebound origin too', async (t) => {
    const f = await webmcpFixture(t);
    const login = await f.app.inject({
      method: 'POST',
      url: '/api/v1/session',
      headers: REBIND,
      payload: { api_key: f.keys.owner },
    });
    assert.equal((login.json() as Envelope).error?.reason, 'origin_denied');
    const totp = await f.app.inject({
      method: 'POST',
      url: '/api/v1/signin/totp',
      headers: REBIND,
      payload: { company_id: f.companyId, user_id: 1, code: '000000' },
    });
    assert.equal((totp.json() as Envelope).error?.reason, 'origin_denied');

    // Even a request that somehow carried a human's session cookie is refused on that name.
    const human = await signInHumanForTest(f.rt, { company_id: f.companyId, user_id: 1, role: 'owner' });
    const dispatch = await f.app.inject({
      method: 'POST',
      url: '/api/v1/dashboard/dispatch/webtest.note_add',
      headers: { ...REBIND, cookie: human.cookie, 'x-csrf-token': human.csrfToken },
      payload: { args: { text: 'from a rebound page' } },
    });
    assert.equal(dispatch.statusCode, 403);
    assert.equal((dispatch.json() as Envelope).error!.reason, 'origin_denied');
    assert.deepEqual(await f.effects(), []);
  });
});
