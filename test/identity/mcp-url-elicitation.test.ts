/**
 * MCP URL-mode elicitation (MCP 2025-11-25, SEP-1036) for a typed-phrase gate: a client that
 * declares `elicitation.url` is asked to open the server's approval page; the phrase is typed
 * there by a signed-in human (never in the client), and the tool call completes once the human
 * approved. A declined request leaves the approval open and the pending answer names the page.
 * Spec: spec/consent.md §approval-page, spec/transports.md §mcp-consent.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  ElicitRequestSchema,
  type CallToolResult,
  type ElicitRequest,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { createMcpServer } from '../../src/transports/mcp/mcp-server.ts';
import { approvalDecidedIn } from '../../src/transports/mcp/consent-elicitation.ts';
import { errorEnvelopeOf } from '../../src/transports/mcp/envelope-map.ts';
import { signInHumanForTest } from '../../src/testing.ts';
import { INJECT_ORIGIN, webmcpFixture, type WebmcpFixture } from '../transports/webmcp/fixture.ts';

async function connect(
  t: TestContext,
  f: WebmcpFixture,
  elicit: (req: ElicitRequest) => Promise<ElicitResult>,
): Promise<Client> {
  const server = createMcpServer(f.rt, {
    credentials: () => ({ principal: f.principal('admin') }),
    approvalDecided: approvalDecidedIn(f.rt.store, f.rt.clock),
    elicitationTimeoutMs: 10_000,
  });
  const client = new Client(
    { name: 'url-client', version: '1.0.0' },
    { capabilities: { elicitation: { url: {} } } },
  );
  client.setRequestHandler(ElicitRequestSchema, (req) => elicit(req));
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(a), client.connect(b)]);
  t.after(async () => {
    await client.close();
    await server.close();
  });
  return client;
}

function envelopeOf(r: CallToolResult): Record<string, unknown> {
  return errorEnvelopeOf(r) as unknown as Record<string, unknown>;
}

describe('MCP URL-mode elicitation', () => {
  it('opens the approval page; the call completes once a signed-in human approved there', async (t) => {
    const f = await webmcpFixture(t);
    f.rt.options.publicUrl = 'http://localhost';
    const human = await signInHumanForTest(f.rt, {
      company_id: f.companyId,
      user_id: 1,
      role: 'owner',
      name: 'Jane',
    });
    const asked: ElicitRequest[] = [];
    const client = await connect(t, f, async (req) => {
      asked.push(req);
      const params = req.params as { mode: string; url: string; elicitationId: string; message: string };
      const id = /\/approvals\/(apv_[A-Za-z0-9_-]+)$/.exec(params.url)![1]!;
      // The person opens the page a moment later and types the phrase there.
      setTimeout(() => {
        void f.app.inject({
          method: 'POST',
          url: '/api/v1/approval-page/dispatch/approvals.approve',
          headers: { origin: INJECT_ORIGIN, cookie: human.cookie, 'x-csrf-token': human.csrfToken },
          payload: { input: { approval_id: id, typed_phrase: 'CHARGE $12.00 to invoice #77' } },
        });
      }, 200);
      return { action: 'accept' };
    });
    const res = (await client.callTool({
      name: 'webtest__charge',
      arguments: { invoice_id: 77, amount_cents: 1200 },
    })) as CallToolResult;
    assert.notEqual(res.isError, true, JSON.stringify(res));
    assert.equal(asked.length, 1);
    const params = asked[0]!.params as { mode: string; url: string; message: string };
    assert.equal(params.mode, 'url');
    assert.match(params.url, /^http:\/\/localhost\/approvals\/apv_/);
    assert.ok(!params.message.includes('CHARGE $12.00'), 'the phrase never passes through the client');
    assert.equal((await f.effects()).filter((e) => e.kind === 'charge').length, 1);
  });

  it('a declined request leaves the approval open; the pending answer names the page', async (t) => {
    const f = await webmcpFixture(t);
    f.rt.options.publicUrl = 'http://localhost';
    const client = await connect(t, f, async () => ({ action: 'decline' }));
    const res = (await client.callTool({
      name: 'webtest__charge',
      arguments: { invoice_id: 78, amount_cents: 1200 },
    })) as CallToolResult;
    assert.equal(res.isError, true);
    const env = envelopeOf(res) as {
      error: { reason: string; hint: string };
      consent: { approval_url: string };
    };
    assert.equal(env.error.reason, 'dispatch_pending');
    assert.match(env.consent.approval_url, /^http:\/\/localhost\/approvals\/apv_/);
    assert.ok(env.error.hint.includes(env.consent.approval_url));
    assert.equal((await f.effects()).filter((e) => e.kind === 'charge').length, 0);
  });
});
