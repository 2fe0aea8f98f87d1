/**
 * The consent loop of issue 33 item 2 as a scripted "model" drives it through any MCP client:
 * a read, a WRITE_REVERSIBLE write (the user agrees in the conversation, the model calls again
 * with the same arguments), a WRITE_FINANCIAL write (a signed-in human approves, the model calls
 * again) and a revert; a retry with other arguments, or after the approval was used, runs nothing.
 * Shared by frameworks.test.ts and peers.test.ts. spec/consent.md §plain-retry.
 */
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { createHttpServer } from '../../../src/transports/http/server.ts';
import { createMcpHttpPlugin } from '../../../src/transports/mcp/http-plugin.ts';
import type { Envelope } from '../../../src/spec/types.ts';
import { testVerbs, type McpHarness, type Runs } from './harness.ts';
import { createTestRuntime } from '../../support/runtime.ts';

/** What the scripted model reads back from one tool call: the result, or the error envelope. */
export type Seen = { ok: true; result: Record<string, unknown> } | { ok: false; envelope: Envelope };

/** A framework's tool invocation, as its agent loop would run it for the model. */
export type CallTool = (name: string, args: Record<string, unknown>) => Promise<Seen>;

export interface Served {
  h: McpHarness;
  url: string;
}

export async function serve(t: TestContext): Promise<Served> {
  // The public URL `solid serve` would know: pending answers then carry consent.approval_url.
  const base = await createTestRuntime(t, { publicUrl: 'http://localhost:4400' });
  const runs: Runs = { note: 0, charge: 0, purge: 0 };
  base.rt.register(...testVerbs(runs));
  const h: McpHarness = { ...base, runs };
  const app = createHttpServer(h.rt, { logger: false, plugins: [createMcpHttpPlugin()] });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  const port = (app.server.address() as AddressInfo).port;
  return { h, url: `http://127.0.0.1:${port}/mcp` };
}

/** The text blocks of a tool output, whatever container the framework hands the model. */
export function textsOf(out: unknown): string[] {
  if (typeof out === 'string') return [out];
  if (Array.isArray(out)) return out.flatMap(textsOf);
  if (out !== null && typeof out === 'object') {
    const o = out as { type?: unknown; text?: unknown; content?: unknown };
    if (typeof o.text === 'string') return [o.text];
    if (o.content !== undefined) return textsOf(o.content);
  }
  return [];
}

/** Read a tool output as the model would: our isError answer is a line, then the envelope. */
export function seen(texts: string[]): Seen {
  for (const text of texts) {
    const at = text.indexOf('{"ok":false');
    if (at >= 0) return { ok: false, envelope: JSON.parse(text.slice(at)) as Envelope };
  }
  assert.ok(texts.length > 0, 'the tool answered some text');
  return { ok: true, result: JSON.parse(texts[0]!) as Record<string, unknown> };
}

/** The human step: a signed-in owner approves on the approval page (the page calls approvals.approve so). */
export async function humanApproves(h: McpHarness, approvalId: string): Promise<void> {
  const listed = await h.rt.dispatch({ surface: 'http', principal: h.human('owner') }, 'approvals.list', {
    approval_id: approvalId,
  });
  assert.equal(listed.ok, true, JSON.stringify(listed));
  const item = (listed.result!.approvals as Array<{ typed_phrase: string | null }>)[0]!;
  const approved = await h.rt.dispatch(
    { surface: 'http', principal: h.human('owner') },
    'approvals.approve',
    {
      approval_id: approvalId,
      ...(item.typed_phrase !== null ? { typed_phrase: item.typed_phrase } : {}),
    },
  );
  assert.equal(approved.ok, true, JSON.stringify(approved));
}

export function pending(s: Seen): NonNullable<Envelope['consent']> & { message: string } {
  assert.equal(s.ok, false, JSON.stringify(s));
  const env = (s as { envelope: Envelope }).envelope;
  assert.equal(env.error?.reason, 'dispatch_pending', JSON.stringify(env.error));
  return { ...env.consent!, message: `${env.error!.message} ${env.error!.hint}` };
}

export function receipt(s: Seen): Record<string, unknown> {
  assert.equal(s.ok, true, JSON.stringify(s));
  return (s as { result: Record<string, unknown> }).result;
}

/** The loop of issue 33 with one framework, as a scripted model drives it. */
export async function loop(
  t: TestContext,
  connect: (t: TestContext, s: Served, key: string) => Promise<CallTool>,
) {
  const s = await serve(t);
  const { h } = s;
  const call = await connect(t, s, h.keys.owner);

  // A read.
  const read = receipt(await call('test__echo', { text: 'hello', note: 'n' }));
  assert.deepEqual((read.data as Record<string, unknown>).text, 'hello');

  // WRITE_REVERSIBLE: the pending answer says to ask the user, then call again; the retry is the confirmation.
  const note = { text: 'call back Monday' };
  const ask = pending(await call('test__note_add', note));
  assert.deepEqual(ask.retry, { after: 'user_confirms', same_arguments: true });
  assert.match(ask.message, /Ask the user.*call test__note_add again with the same arguments/s);
  assert.equal(h.runs.note, 0);
  const added = receipt(await call('test__note_add', note));
  assert.equal(added.status, 'added');
  assert.equal(typeof added.audit_id, 'number');
  assert.equal(h.runs.note, 1);

  // WRITE_FINANCIAL: only a human's approval completes it.
  const charge = { invoice_id: 4242, amount_cents: 5000 };
  const asked = pending(await call('test__charge', charge));
  assert.deepEqual(asked.retry, { after: 'human_approves', same_arguments: true });
  assert.ok(asked.approval_url?.endsWith(`/approvals/${String(asked.approval_id)}`), asked.approval_url);
  assert.ok(asked.message.includes(asked.approval_url!), asked.message);
  assert.match(asked.message, /call test__charge again with the same arguments/);
  // The model retrying before anyone approved: still waiting, nothing charged.
  assert.equal(pending(await call('test__charge', charge)).approval_id, asked.approval_id);
  await humanApproves(h, String(asked.approval_id));
  // Other arguments are not what the human approved.
  const changed = pending(await call('test__charge', { ...charge, amount_cents: 9999 }));
  assert.notEqual(changed.approval_id, asked.approval_id);
  assert.equal(h.runs.charge, 0);
  const charged = receipt(await call('test__charge', charge));
  assert.equal(charged.status, 'charged');
  assert.equal(h.runs.charge, 1);
  // Used: calling again is a new request, not a second charge.
  assert.notEqual(pending(await call('test__charge', charge)).approval_id, asked.approval_id);
  assert.equal(h.runs.charge, 1);

  // A revert of the note: its own confirmation, the same way.
  const revert = { audit_id: added.audit_id };
  pending(await call('audit__revert', revert));
  const reverted = receipt(await call('audit__revert', revert));
  assert.equal(reverted.reverted, true, JSON.stringify(reverted));
  assert.equal(reverted.original_action, 'test.note_add');
}
