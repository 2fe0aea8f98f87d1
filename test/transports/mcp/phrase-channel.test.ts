/**
 * MCP under the tenant setting `phrase_channel: human` (spec/consent.md §phrase-channel): the
 * answer of the server's own form elicitation is the human channel and still executes; without
 * elicitation the model gets no phrase, and a phrase relayed by the model through another channel
 * (the HTTP approve path with the same key) is refused. `any` is covered by in-memory.test.ts.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { connectInMemory, createMcpRuntime, phraseShown, type McpHarness } from './harness.ts';
import { errorEnvelopeOf } from '../../../src/transports/mcp/envelope-map.ts';
import { META } from '../../../src/transports/mcp/meta-keys.ts';
import { dispatchAs } from '../../support/keyed.ts';

const ARGS = { invoice_id: 4242, amount_cents: 5000 };
const PHRASE = 'CHARGE $50.00 to invoice #4242';

async function humanOnly(h: McpHarness): Promise<void> {
  await h.rt.store.write((tx) =>
    tx.run('UPDATE tenants SET settings = ? WHERE company_id = ?', [
      JSON.stringify({ phrase_channel: 'human' }),
      h.companyId,
    ]),
  );
  h.rt.tenants.invalidate();
}

async function statuses(h: McpHarness, verb: string): Promise<Array<[unknown, unknown]>> {
  await h.rt.auditBuffer.flush();
  const rows = await h.rt.store.read((q) =>
    q.all<Record<string, unknown>>(
      'SELECT status, reason FROM audit_log WHERE action_type = ? ORDER BY audit_id',
      [verb],
    ),
  );
  return rows.map((r) => [r.status, r.reason]);
}

test('agent: a client that answers form elicitation itself is never asked for the phrase; nothing runs', async (t) => {
  // A programmatic MCP client declaring form elicitation would answer the form itself (issue 35
  // row 2): a form the client software controls is not a human channel (spec/consent.md §channels).
  const h = await createMcpRuntime(t);
  await humanOnly(h);
  const seen: string[] = [];
  const client = await connectInMemory(t, h, {
    apiKey: h.keys.owner,
    elicit: (req) => {
      seen.push(phraseShown(req));
      return { action: 'accept', content: { typed_phrase: PHRASE } };
    },
  });
  await client.listTools();
  const r = (await client.callTool({ name: 'test__charge', arguments: ARGS })) as CallToolResult;
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.deepEqual(seen, [], 'no form carried the phrase');
  assert.ok(!JSON.stringify(r).includes(PHRASE), 'the answer does not hold the phrase');
  assert.equal(errorEnvelopeOf(r)!.error!.reason, 'dispatch_pending');
  assert.equal(h.runs.charge, 0);
});

test('human: without elicitation the model never sees the phrase; relaying it over HTTP is refused', async (t) => {
  const h = await createMcpRuntime(t);
  await humanOnly(h);
  const client = await connectInMemory(t, h, { apiKey: h.keys.owner });
  await client.listTools();
  const r = (await client.callTool({ name: 'test__charge', arguments: ARGS })) as CallToolResult;
  assert.equal(r.isError, true);
  assert.ok(!JSON.stringify(r).includes(PHRASE), 'neither the text nor structuredContent holds the phrase');
  const pending = errorEnvelopeOf(r)!;
  assert.equal(pending.error!.reason, 'dispatch_pending');
  assert.equal(pending.consent!.phrase_channel, 'human');
  const approvalId = String(pending.consent!.approval_id);
  assert.ok(pending.error!.hint!.includes(`solid approvals approve ${approvalId}`), pending.error!.hint);

  // The model (same key) sends the phrase over HTTP: both the direct path and approvals.approve.
  const direct = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.owner }, 'test.charge', ARGS, {
    confirm: true,
    nonce: pending.consent!.nonce,
    typed_phrase: PHRASE,
  });
  assert.equal(direct.error?.reason, 'phrase_channel_human');
  const approve = await dispatchAs(h.rt, { surface: 'http', apiKey: h.keys.owner }, 'approvals.approve', {
    approval_id: approvalId,
    typed_phrase: PHRASE,
  });
  assert.equal(approve.error?.reason, 'human_required');
  assert.equal(h.runs.charge, 0);

  // A human approves in the dashboard (marked human by its route); the model's re-call with the nonce runs.
  const byHuman = await h.rt.dispatch({ surface: 'http', principal: h.human('owner') }, 'approvals.approve', {
    approval_id: approvalId,
    typed_phrase: PHRASE,
  });
  assert.equal(byHuman.ok, true, JSON.stringify(byHuman));
  const done = (await client.callTool({
    name: 'test__charge',
    arguments: ARGS,
    _meta: { [META.confirm]: true, [META.nonce]: pending.consent!.nonce },
  })) as CallToolResult;
  assert.equal(done.isError, undefined, JSON.stringify(done));
  assert.equal(h.runs.charge, 1);
  assert.deepEqual(
    (await statuses(h, 'test.charge')).map(([s, reason]) => `${String(s)}:${String(reason)}`),
    ['pending:dispatch_pending', 'denied:phrase_channel_human', 'completed:null'],
  );
});
