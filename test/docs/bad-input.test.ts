/**
 * spec/transports.md §bad-input and §http-status ↔ the reason table (src/spec/reasons.ts) ↔ the
 * code: every reason the pages name exists with the status they give it, and the body parser
 * answers the reasons the bad-input table promises (one answer for a malformed body, on every page).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { REASONS } from '../../src/spec/reasons.ts';
import { parseJsonBody } from '../../src/transports/http/json-body.ts';
import { parseArgsJson } from '../../src/transports/cli/output.ts';
import { isVerbError } from '../../src/runtime/errors.ts';

const TRANSPORTS = readFileSync(new URL('../../spec/transports.md', import.meta.url), 'utf8');
const REASONS_PAGE = readFileSync(new URL('../../spec/reasons.md', import.meta.url), 'utf8');

function badInputRows(): Array<{ input: string; where: string; reason: string; status: string }> {
  const start = TRANSPORTS.indexOf('<!-- bad-input-table -->');
  const end = TRANSPORTS.indexOf('<!-- /bad-input-table -->');
  assert.ok(start > 0 && end > start, 'spec/transports.md has the bad-input table');
  return TRANSPORTS.slice(start, end)
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| bad input') && !l.startsWith('|---'))
    .map((l) => {
      const [input, where, reason, status] = l
        .slice(2, -2)
        .split(' | ')
        .map((c) => c.trim());
      return { input: input!, where: where!, reason: reason!.replace(/`/g, ''), status: status! };
    });
}

test('every reason of the bad-input table exists with the status the table gives it', () => {
  const rows = badInputRows();
  assert.ok(rows.length >= 15);
  for (const r of rows) {
    if (r.reason.startsWith('JSON-RPC') || r.reason.startsWith('exit ')) continue;
    const info = (REASONS as Record<string, { status: number }>)[r.reason];
    assert.ok(info !== undefined, `${r.reason} (${r.input}) is a reason of src/spec/reasons.ts`);
    assert.equal(String(info.status), r.status, `${r.reason}: status in §bad-input`);
  }
});

test('§http-status lists each reason under the status of the reason table', () => {
  const start = TRANSPORTS.indexOf('### §http-status');
  const section = TRANSPORTS.slice(start, TRANSPORTS.indexOf('### §http-auth'));
  for (const line of section.split('\n')) {
    const m = /^\| (\d{3}) \| ([a-z_, ]+) \|$/.exec(line);
    if (!m) continue;
    for (const reason of m[2]!.split(',').map((x) => x.trim())) {
      const info = (REASONS as Record<string, { status: number }>)[reason];
      assert.ok(info !== undefined, `${reason} is a reason`);
      assert.equal(info.status, Number(m[1]), `${reason} under ${m[1]} in §http-status`);
    }
  }
});

test('the HTTP body parser answers the reasons the bad-input table promises', () => {
  const reasonOf = (input: string) => badInputRows().find((r) => r.input === input)!.reason;
  const cases: Array<[string, string | Buffer]> = [
    ['malformed JSON', '{"args": {'],
    ['invalid UTF-8 bytes', Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d])],
    ['a key repeated in one object', '{"a":1,"a":2}'],
    ['a `__proto__` / `constructor.prototype` key, any spelling', '{"\\u005f_proto__":{}}'],
    ['a body nested deeper than 64', `${'['.repeat(65)}${']'.repeat(65)}`],
  ];
  for (const [input, body] of cases) {
    let reason: string | undefined;
    try {
      parseJsonBody(body);
    } catch (err) {
      assert.ok(isVerbError(err));
      reason = err.reason;
    }
    assert.equal(reason, reasonOf(input), input);
  }
});

test('the CLI reads --args as strictly as the HTTP body, with the reason the bad-input table gives', () => {
  const row = badInputRows().find((r) => r.input.startsWith('`--args` (or a JSON flag) repeating a key'));
  assert.ok(row, 'the bad-input table has the strict --args row');
  for (const text of [
    '{"a":1,"a":2}',
    '{"\\u005f_proto__":{}}',
    '{"constructor":{"prototype":{}}}',
    `${'['.repeat(65)}${']'.repeat(65)}`,
  ]) {
    const parsed = parseArgsJson('verbs.list', text);
    assert.equal(parsed.ok, false, text);
    if (!parsed.ok) assert.equal(parsed.envelope.error!.reason, row.reason, text);
  }
  assert.deepEqual(parseArgsJson('verbs.list', '{"a":{"a":1}}'), { ok: true, args: { a: { a: 1 } } });
});

test('spec/reasons.md gives a malformed HTTP body the same reason as spec/transports.md', () => {
  const body = reasonOf('malformed JSON');
  function reasonOf(input: string) {
    return badInputRows().find((r) => r.input === input)!.reason;
  }
  const row = (reason: string) =>
    REASONS_PAGE.split('\n').find((l) => l.startsWith(`| \`${reason}\` |`)) ?? '';
  for (const [reason] of Object.entries(REASONS)) {
    if (reason === body) continue;
    const text = row(reason);
    assert.ok(
      !/HTTP body\)?[;.]/.test(text) || /is `invalid_request`/.test(text),
      `spec/reasons.md claims ${reason} for a malformed HTTP body; transports.md says ${body}`,
    );
  }
  assert.match(row(body), /HTTP body/, `spec/reasons.md names the HTTP body under ${body}`);
});
