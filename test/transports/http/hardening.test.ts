/**
 * Bad input that used to escape the envelope or the audit (issue 20, rows 1–8): non-finite
 * numbers, U+0000, deep nesting with a prototype key, escaped prototype keys, duplicate keys,
 * invalid UTF-8, duplicate Idempotency-Key lines, client errors from Node's HTTP parser, and
 * client errors from an authenticated caller (audited in the caller's tenant).
 * Spec: spec/transports.md §bad-input.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createHttpHarness, envelopeOf, type HttpHarness } from './harness.ts';

const url = '/api/v1/agent/dispatch/notes.count';

async function auditRows(x: HttpHarness, companyId: number) {
  await x.h.rt.auditBuffer.flush();
  return x.h.rt.store.read((q) =>
    q.all<{ action_type: string; status: string; reason: string | null }>(
      'SELECT action_type, status, reason FROM audit_log WHERE company_id = ? ORDER BY audit_id',
      [companyId],
    ),
  );
}

function raw(x: HttpHarness, payload: string | Buffer, key?: string, headers: Record<string, string> = {}) {
  return x.inject({
    method: 'POST',
    url,
    payload,
    headers: {
      'content-type': 'application/json',
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      ...headers,
    },
  });
}

test('a number overflowing to Infinity is a 400 invalid_input with its pointer, audited (row 1)', async (t) => {
  const x = await createHttpHarness(t);
  for (const key of [x.h.keys.owner, x.h.keys.read_only]) {
    const res = await raw(x, '{"args":{"min_length":1,"pad":{"deep":[1e999]}}}', key);
    assert.equal(res.statusCode, 400, res.body);
    const env = envelopeOf(res);
    assert.equal(env.error!.reason, 'invalid_input');
    assert.equal(env.error!.path, '/pad/deep/0');
    assert.match(env.error!.message, /not a finite number/);
  }
  const rows = (await auditRows(x, x.h.companyId)).filter((r) => r.action_type === 'notes.count');
  assert.equal(rows.length, 2, 'each attempt has its audit row in the caller tenant');
  assert.ok(rows.every((r) => r.reason === 'invalid_input'));
});

test('a whole number beyond 2^53 is invalid_input with its pointer on every engine, audited', async (t) => {
  const x = await createHttpHarness(t);
  // PostgreSQL's bigint refused this id (an outage answer, then engine-specific): no double holds it exactly.
  const revert = (payload: string) =>
    x.inject({
      method: 'POST',
      url: '/api/v1/agent/dispatch/audit.revert',
      payload,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${x.h.keys.owner}` },
    });
  const res = await revert('{"args":{"audit_id":9223372036854776000}}');
  assert.equal(res.statusCode, 400, res.body);
  const env = envelopeOf(res);
  assert.equal(env.error!.reason, 'invalid_input');
  assert.equal(env.error!.path, '/audit_id');
  assert.match(env.error!.message, /2\^53/);
  assert.ok(env.audit_id !== undefined, 'audited');
  // The largest exact integer passes the walk and gets the verb's own answer.
  const max = envelopeOf(await revert('{"args":{"audit_id":9007199254740991}}'));
  assert.notEqual(max.error?.path, '/audit_id');
  assert.notEqual(max.error?.reason, 'store_unavailable');
});

test('U+0000 in a string or a key is refused the same on every engine, audited (row 3)', async (t) => {
  const x = await createHttpHarness(t);
  for (const body of ['{"args":{"note":"a\\u0000b"}}', '{"args":{"\\u0000":1}}']) {
    const res = await raw(x, body, x.h.keys.owner);
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(envelopeOf(res).error!.reason, 'invalid_input');
    assert.match(envelopeOf(res).error!.message, /U\+0000/);
  }
  const w = await x.dispatch('notes_add', { args: { text: 'x\u0000y' } }, { key: x.h.keys.owner });
  assert.equal(envelopeOf(w).error!.reason, 'invalid_input');
  const rows = await auditRows(x, x.h.companyId);
  assert.equal(rows.filter((r) => r.reason === 'invalid_input').length, 3);
});

test('a body nested 5,000 deep holding __proto__ is a 400 envelope, audited, no stack overflow (row 2)', async (t) => {
  const x = await createHttpHarness(t);
  const body = `{"args":{"a":${'['.repeat(5000)}"__proto__"${']'.repeat(5000)},"__proto__":{}}}`;
  const res = await raw(x, body, x.h.keys.owner);
  assert.equal(res.statusCode, 400, res.body);
  assert.equal(envelopeOf(res).error!.reason, 'invalid_request');
  const deep = `{"args":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`;
  const res2 = await raw(x, deep, x.h.keys.owner);
  assert.equal(res2.statusCode, 400, res2.body);
  assert.equal(envelopeOf(res2).error!.reason, 'invalid_request');
  assert.match(envelopeOf(res2).error!.message, /nested deeper/);
  assert.equal((await auditRows(x, x.h.companyId)).length, 2, 'both attempts audited in the tenant');
});

test('a prototype key is invalid_request in any spelling (row 5)', async (t) => {
  const x = await createHttpHarness(t);
  for (const body of [
    '{"args":{"\\u005f_proto__":{}}}',
    '{"args":{"__proto__":{}}}',
    '{"args":{"constructor":{"prototype":{}}}}',
    '{"args":{"constructor":{"\\u0070rototype":{}}}}',
  ]) {
    const res = await raw(x, body);
    assert.equal(res.statusCode, 400, body);
    assert.equal(envelopeOf(res).error!.reason, 'invalid_request', body);
  }
  const ok = await raw(x, '{"args":{"note":"__proto__ and constructor.prototype are words"}}');
  assert.notEqual(envelopeOf(ok).error?.reason, 'invalid_request');
});

test('duplicate keys and invalid UTF-8 are refused: no parser differential (row 6)', async (t) => {
  const x = await createHttpHarness(t);
  for (const body of [
    '{"args":{"min_length":1,"min_length":2}}',
    '{"args":{},"typed_phrase":"x","typed_phrase":"y"}',
    '{"args":{"a":1,"\\u0061":2}}',
    '{"args":{}, "args":{}}',
  ]) {
    const res = await raw(x, body, x.h.keys.owner);
    assert.equal(res.statusCode, 400, body);
    assert.equal(envelopeOf(res).error!.reason, 'invalid_request', body);
    assert.match(envelopeOf(res).error!.message, /repeats the key/);
  }
  const same = await raw(x, '{"args":{"x":[{"a":1},{"a":2}]}}', x.h.keys.owner);
  assert.notEqual(envelopeOf(same).error?.reason, 'invalid_request', 'the same key in two objects is fine');
  const bytes = Buffer.concat([
    Buffer.from('{"args":{"note":"'),
    Buffer.from([0xc3, 0x28]),
    Buffer.from('"}}'),
  ]);
  const res = await raw(x, bytes, x.h.keys.owner);
  assert.equal(res.statusCode, 400);
  assert.equal(envelopeOf(res).error!.reason, 'invalid_request');
  assert.match(envelopeOf(res).error!.message, /UTF-8/);
});

test('two Idempotency-Key header lines are 400 idempotency_key_invalid (row 7)', async (t) => {
  const x = await createHttpHarness(t);
  const app = x.app;
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  const body = '{"args":{"text":"hello"}}';
  const answer = await rawHttp(
    port,
    `POST /api/v1/agent/dispatch/notes_add HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${x.h.keys.owner}\r\n` +
      `Content-Type: application/json\r\nIdempotency-Key: a\r\nIdempotency-Key: b\r\n` +
      `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
  );
  assert.match(answer, /^HTTP\/1.1 400/);
  assert.equal(
    JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error.reason,
    'idempotency_key_invalid',
  );
});

function rawHttp(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(request));
    let out = '';
    s.setEncoding('latin1');
    s.on('data', (d) => (out += d));
    s.on('end', () => resolve(out));
    s.on('error', reject);
  });
}

test('client errors from Node’s HTTP parser answer envelopes (row 4)', async (t) => {
  const x = await createHttpHarness(t);
  const app = x.app;
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  const cases: Array<[string, number, string]> = [
    [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\nb\r\n\r\n`, 400, 'invalid_request'],
    [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\n\r\n`, 400, 'invalid_request'],
    [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
  ];
  for (const [request, status, reason] of cases) {
    const answer = await rawHttp(port, request);
    assert.match(answer, new RegExp(`^HTTP/1.1 ${status} `), answer.slice(0, 200));
    const env = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    assert.equal(env.ok, false);
    assert.equal(env.error.reason, reason);
    assert.equal(typeof env.error.message, 'string');
    assert.equal(typeof env.error.hint, 'string');
  }
  const health = await rawHttp(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.match(health, /^HTTP\/1.1 200/, 'the server still serves');
});

test('client errors from an authenticated caller are audited as denied attempts in its tenant (row 8)', async (t) => {
  const x = await createHttpHarness(t);
  const key = x.h.keys.owner;
  const answers = [
    await raw(x, '{"args": {', key),
    await raw(x, 'args=1', key, { 'content-type': 'text/plain' }),
    await raw(x, '{"args":{"__proto__":{}}}', key),
  ];
  assert.deepEqual(
    answers.map((r) => [r.statusCode, envelopeOf(r).error!.reason]),
    [
      [400, 'invalid_request'],
      [415, 'unsupported_media_type'],
      [400, 'invalid_request'],
    ],
  );
  for (const r of answers) assert.equal(typeof envelopeOf(r).audit_id, 'number', r.body);
  const rows = (await auditRows(x, x.h.companyId)).filter((r) => r.action_type === 'notes.count');
  assert.deepEqual(
    rows.map((r) => r.reason),
    ['invalid_request', 'unsupported_media_type', 'invalid_request'],
  );
  const other = await auditRows(x, x.h.otherCompanyId);
  assert.equal(other.length, 0, 'nothing in another tenant');
});

test('two Authorization lines are 400 invalid_request, whichever key comes first', async (t) => {
  const x = await createHttpHarness(t);
  const app = x.app;
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  const body = '{"args":{}}';
  for (const [first, second] of [
    [x.h.keys.read_only, x.h.keys.owner],
    [x.h.keys.owner, x.h.keys.read_only],
  ]) {
    const answer = await rawHttp(
      port,
      `POST /api/v1/agent/dispatch/tenant.settings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${first}\r\n` +
        `authorization: Bearer ${second}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    assert.match(answer, /^HTTP\/1.1 400/, answer.slice(0, 200));
    const env = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    assert.equal(env.error.reason, 'invalid_request');
    assert.match(env.error.message, /more than one Authorization header/);
  }
});

test('a path the router refuses (an over-long verb name, a bad percent-encoding) is an envelope', async (t) => {
  const x = await createHttpHarness(t);
  // Up to the router's limit a long name is an ordinary unknown_verb, audited.
  const long = await x.inject({
    method: 'POST',
    url: `/api/v1/agent/dispatch/${'a'.repeat(300)}`,
    payload: { args: {} },
    headers: { authorization: `Bearer ${x.h.keys.owner}` },
  });
  assert.equal(long.statusCode, 404, long.body);
  assert.equal(envelopeOf(long).error!.reason, 'unknown_verb');
  for (const url of [`/api/v1/agent/dispatch/${'a'.repeat(2000)}`, '/api/v1/agent/dispatch/%zz']) {
    const res = await x.inject({ method: 'POST', url, payload: { args: {} } });
    assert.equal(res.statusCode, 400, res.body);
    const env = envelopeOf(res);
    assert.equal(env.ok, false);
    assert.equal(env.error!.reason, 'invalid_request');
    assert.equal(typeof env.error!.hint, 'string');
    assert.ok(!res.body.includes('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'), 'the path is not echoed');
  }
});
