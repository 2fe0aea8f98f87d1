/**
 * envelopeToToolResult (src/transports/mcp/envelope-map.ts) and the typed-phrase form
 * (consent-elicitation.ts): pure mappings. Spec: spec/transports.md §mcp-results, §mcp-consent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  envelopeToToolResult,
  errorEnvelopeOf,
  jsonResultOf,
} from '../../../src/transports/mcp/envelope-map.ts';
import {
  escapeRegExp,
  phraseRequest,
  PHRASE_FIELD,
} from '../../../src/transports/mcp/consent-elicitation.ts';
import { META } from '../../../src/transports/mcp/meta-keys.ts';
import type { Envelope } from '../../../src/spec/types.ts';

const consent = {
  class: 'WRITE_FINANCIAL' as const,
  gate: 'typed_phrase' as const,
  nonce: 'nonce-123',
  expires_at: '2026-01-01T00:05:00.000Z',
  summary: 'Charge $50.00 to invoice #4242.',
  typed_phrase: 'CHARGE $50.00 to invoice #4242',
  approval_id: 'apv_abc',
};

test('ok: one text block holds the result as compact JSON (no second copy as structuredContent), _meta carries audit facts', () => {
  const env: Envelope = {
    ok: true,
    verb: 'x.y',
    result: { status: 'done', audit_id: 7 },
    audit_id: 7,
    idempotency_key: 'k1',
    rollback_handle: 'rb',
    replayed: true,
  };
  const r = envelopeToToolResult(env, { toolName: 'x__y' });
  assert.ok(CallToolResultSchema.safeParse(r).success);
  assert.equal(r.isError, undefined);
  assert.equal(r.structuredContent, undefined, 'the text is the one copy of the result');
  assert.equal(r.content.length, 1);
  assert.equal((r.content[0] as { text: string }).text, JSON.stringify(env.result), 'compact JSON');
  assert.deepEqual(jsonResultOf(r), env.result);
  assert.deepEqual(r._meta, {
    [META.auditId]: 7,
    [META.idempotencyKey]: 'k1',
    [META.rollbackHandle]: 'rb',
    [META.replayed]: true,
  });
  assert.equal(
    envelopeToToolResult({ ok: true, verb: 'r', result: { a: 1 } }, { toolName: 'r' })._meta,
    undefined,
  );
});

test('not ok: isError with the whole envelope and one line of text; the runtime hint is kept', () => {
  const env: Envelope = {
    ok: false,
    verb: 'x',
    error: { reason: 'invalid_input', message: '/a is required.\nreally', hint: 'Fix /a.', path: '/a' },
    audit_id: 2,
  };
  const r = envelopeToToolResult(env, { toolName: 'x' });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent, undefined);
  assert.equal(jsonResultOf(r), undefined, 'an error is not a result');
  assert.deepEqual(errorEnvelopeOf(r), env);
  assert.equal((r.content[0] as { text: string }).text, 'invalid_input: /a is required. really — Fix /a.');
});

test('pending: the hint names the MCP _meta keys and the nonce; a typed phrase points out of band, never to the model', () => {
  const confirm: Envelope = {
    ok: false,
    verb: 'n.add',
    error: { reason: 'dispatch_pending', message: 'needs confirmation', hint: 'runtime hint: confirm=true' },
    consent: {
      ...consent,
      class: 'WRITE_REVERSIBLE',
      gate: 'confirmation',
      typed_phrase: undefined,
      approval_id: undefined,
      summary: 'Add a note.',
    },
  };
  const c = errorEnvelopeOf(envelopeToToolResult(confirm, { toolName: 'n__add' }))!;
  assert.match(c.error!.hint!, /Ask the human to confirm: Add a note\./);
  assert.ok(c.error!.hint!.includes(`{"${META.confirm}":true,"${META.nonce}":"nonce-123"}`));
  assert.ok(c.error!.hint!.includes('call n__add again'));
  const typed: Envelope = {
    ok: false,
    verb: 'p.charge',
    error: { reason: 'dispatch_pending', message: 'needs a phrase', hint: 'runtime hint' },
    consent,
  };
  const t = envelopeToToolResult(typed, {
    toolName: 'p__charge',
    approvalUrl: (id) => `https://dash.example/approvals/${id}`,
  });
  const hint = errorEnvelopeOf(t)!.error!.hint!;
  assert.ok(
    hint.includes('solid approvals approve apv_abc') &&
      hint.includes('https://dash.example/approvals/apv_abc'),
    hint,
  );
  assert.match(hint, /a phrase typed by the model, or by this client in a form, is not consent/);
  assert.ok((t.content[0] as { text: string }).text.startsWith('dispatch_pending: needs a phrase — '));
});

test('size: a result up to maxResultBytes (UTF-8 bytes) is sent whole as its text; above it the answer is result_too_large', () => {
  const result = { data: 'é'.repeat(600) };
  const r = envelopeToToolResult(
    { ok: true, verb: 'b', result },
    { toolName: 'b', limits: { maxResultBytes: 1211 } },
  );
  assert.deepEqual(jsonResultOf(r), result, 'never cut: the text is the only copy');
  const big = envelopeToToolResult(
    { ok: true, verb: 'b', result, audit_id: 9 },
    { toolName: 'b', limits: { maxResultBytes: 1000 } },
  );
  const env = errorEnvelopeOf(big)!;
  assert.equal(big.isError, true);
  assert.equal(env.error!.reason, 'result_too_large');
  assert.deepEqual(env.error!.details, { bytes: 1211, limit_bytes: 1000 });
  assert.equal(env.audit_id, 9, 'a write that ran keeps its audit id');
  assert.match(env.error!.message, /ran \(audit_id 9\)/);
});

test('the typed-phrase form: one string field whose pattern matches the exact phrase only', () => {
  const req = phraseRequest('Charge an invoice', {
    ...consent,
    typed_phrase: 'DELETE (all) $5.00 [x]? {y} a|b ^c\\d / e*+',
  });
  assert.equal(req.mode, 'form');
  assert.ok(req.message.includes('DELETE (all) $5.00 [x]? {y} a|b ^c\\d / e*+'));
  assert.ok(req.message.includes('Charge $50.00 to invoice #4242.'), 'the summary is shown');
  assert.deepEqual(req.requestedSchema.required, [PHRASE_FIELD]);
  const field = req.requestedSchema.properties[PHRASE_FIELD] as { type: string; pattern: string };
  assert.equal(field.type, 'string');
  const re = new RegExp(field.pattern, 'u');
  assert.ok(re.test('DELETE (all) $5.00 [x]? {y} a|b ^c\\d / e*+'));
  for (const near of [
    'delete (all) $5.00 [x]? {y} a|b ^c\\d / e*+',
    'DELETE (all) $5.00 [x]? {y} a|b ^c\\d / e*+ ',
    'DELETE (all) $5X00 [x]? {y} a|b ^c\\d / e*+',
    'DELETE all $5.00 x {y} a|b ^c\\d / e*+',
  ]) {
    assert.ok(!re.test(near), near);
  }
  assert.equal(escapeRegExp('a.b'), 'a\\.b');
});
