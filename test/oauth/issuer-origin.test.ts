/**
 * One origin for the OAuth flow (spec/oauth.md §authorization-server): `solid serve` without
 * --public-url makes `http://localhost:<port>` the issuer (and prints it as the MCP URL). A client
 * that reached /mcp at 127.0.0.1 is sent by the resource metadata to that exact issuer and
 * completes the dance; the authorization server asked at 127.0.0.1 refuses at once, naming the
 * issuer, and the refusal is audited.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { misdirected } from '../../src/oauth/plugin.ts';
import { MemoryProvider } from './connector.ts';
import { humanConsents, oauthFixture } from './fixture.ts';

describe('the OAuth issuer is one exact origin', () => {
  it('only another loopback name of the issuer is refused (a proxy may choose its Host)', () => {
    assert.equal(misdirected('http://localhost:4400', 'http://localhost:4400'), undefined);
    assert.match(
      misdirected('http://127.0.0.1:4400', 'http://localhost:4400')?.message ?? '',
      /issuer is http:\/\/localhost:4400.*addressed http:\/\/127\.0\.0\.1:4400/,
    );
    assert.ok(misdirected('http://[::1]:4400', 'http://localhost:4400'));
    assert.equal(misdirected('http://127.0.0.1:4400', 'https://solid.example.com'), undefined);
    assert.equal(misdirected(undefined, 'http://localhost:4400'), undefined);
  });

  it('a client at 127.0.0.1 is sent to the localhost issuer and completes the dance; 127.0.0.1 as issuer is refused, audited', async (t) => {
    const f = await oauthFixture(t);
    const port = new URL(f.base).port;
    const origin = `http://localhost:${port}`;
    f.rt.options.publicUrl = origin; // what solid serve sets without --public-url

    const asked = await fetch(`${f.base}/.well-known/oauth-authorization-server`);
    assert.equal(asked.status, 400);
    const env = (await asked.json()) as { error: { reason: string; message: string; hint: string } };
    assert.equal(env.error.reason, 'invalid_request');
    assert.match(env.error.message, new RegExp(`issuer is ${origin}`));
    assert.match(env.error.hint, /--public-url/);
    const authorize = await fetch(`${f.base}/oauth/authorize?client_id=x`, { redirect: 'manual' });
    assert.equal(authorize.status, 400, 'never a redirect from the wrong host');
    await f.rt.auditBuffer.flush();
    const rows = await f.rt.store.read((q) =>
      q.all<{ reason: string }>(
        "SELECT reason FROM audit_log WHERE company_id = ? AND action_type = 'oauth.misdirected'",
        [f.sandboxId],
      ),
    );
    assert.ok(rows.length >= 1 && rows[0]!.reason === 'invalid_request', JSON.stringify(rows));

    const asMeta = (await (await fetch(`${origin}/.well-known/oauth-authorization-server`)).json()) as {
      issuer: string;
    };
    assert.equal(asMeta.issuer, origin);

    // The MCP SDK client, pointed at 127.0.0.1, follows the metadata to the localhost issuer.
    const provider = new MemoryProvider();
    const url = new URL('/mcp', f.base);
    await assert.rejects(
      new Client({ name: 'c', version: '1' }).connect(
        new StreamableHTTPClientTransport(url, { authProvider: provider }),
      ),
      UnauthorizedError,
    );
    assert.equal(provider.authorizationUrl?.origin, origin);
    const { redirect } = await humanConsents({ ...f, base: origin }, provider.authorizationUrl!, {
      role: 'admin',
    });
    const code = redirect.searchParams.get('code');
    assert.ok(code, redirect.href);
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await transport.finishAuth(code);
    const client = new Client({ name: 'c', version: '1' });
    await client.connect(transport);
    t.after(() => client.close());
    const read = (await client.callTool({
      name: 'webtest__quote',
      arguments: { sku: 'mug', quantity: 2 },
    })) as CallToolResult;
    assert.match((read.content[0] as { text: string }).text, /2500/);
  });
});
