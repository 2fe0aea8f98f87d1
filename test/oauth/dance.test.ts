/**
 * The OAuth dance a hosted connector (Claude.ai, ChatGPT) does against this server, driven by the
 * MCP SDK client's own OAuth support (`@modelcontextprotocol/sdk/client/auth.js`) with no prior
 * configuration: 401 challenge → protected-resource metadata (RFC 9728) → authorization-server
 * metadata (RFC 8414) → dynamic registration (RFC 7591) → authorization code + PKCE S256 with a
 * resource indicator (RFC 8707) → the consent of a signed-in human → token → tools/call.
 * A read works; a gated write still waits for the human. spec/oauth.md
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oauthFixture } from './fixture.ts';
import { connectWithOAuth } from './connector.ts';

const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

describe('a connector with no prior configuration', () => {
  it('discovers, registers, gets a human’s consent, reads, and a gated write waits for the human', async (t) => {
    const f = await oauthFixture(t);
    const { client, provider } = await connectWithOAuth(f, { role: 'admin' });
    t.after(() => client.close());
    assert.equal(provider.info?.client_id !== undefined, true, 'registered dynamically');
    assert.ok(provider.saved?.access_token, 'holds an access token');
    assert.ok(provider.saved?.refresh_token, 'holds a refresh token');

    // Open registration stores nothing forever: the client lives as long as its grant (+1 day).
    const kept = await f.rt.store.read((q) =>
      q.get<{ c: unknown; g: string }>(
        `SELECT m.expires_at AS c, g.expires_at AS g FROM oauth_models m JOIN oauth_grants g ON g.client_id = m.id WHERE m.model = 'Client'`,
      ),
    );
    assert.ok(Number(kept!.c) > Date.parse(kept!.g), JSON.stringify(kept));

    const tools = await client.listTools();
    const quote = tools.tools.find((x) => x.name.includes('quote'))!;
    const charge = tools.tools.find((x) => x.name.endsWith('charge'))!;
    const read = await client.callTool({ name: quote.name, arguments: { sku: 'mug', quantity: 2 } });
    assert.equal(read.isError ?? false, false, text(read));
    assert.match(text(read), /2500/);

    const write = await client.callTool({
      name: charge.name,
      arguments: { invoice_id: 7, amount_cents: 500 },
    });
    assert.match(text(write), /dispatch_pending|approval/, 'the financial write waits for the human');
    await f.rt.auditBuffer.flush();
    const rows = await f.rt.store.read((q) =>
      q.all<{ action_type: string; status: string; agent_type: string; key_id: string | null }>(
        "SELECT action_type, status, agent_type, key_id FROM audit_log WHERE company_id = ? AND action_type LIKE 'webtest.%' ORDER BY audit_id",
        [f.companyId],
      ),
    );
    assert.ok(rows.length >= 2, JSON.stringify(rows));
    for (const r of rows) {
      assert.match(String(r.key_id), /^grant:/, 'audited as the grant');
      assert.equal(r.agent_type, 'oauth:Test Connector', 'named by the client’s name');
    }
    const effects = await f.rt.store.read((q) => q.all('SELECT * FROM webtest_effects'));
    assert.deepEqual(effects, [], 'nothing was charged');
  });
});
