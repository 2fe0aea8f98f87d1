/**
 * spec/reasons.md ↔ src/spec/reasons.ts, both directions: every code in the table has exactly one
 * row in the page, every row names a code of the table, and the HTTP, exit, retry and denial
 * columns agree. A new reason without documentation (or a stale row) turns this red.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { REASONS, type ReasonInfo } from '../../src/spec/reasons.ts';

const PAGE = readFileSync(new URL('../../spec/reasons.md', import.meta.url), 'utf8');

interface Row {
  reason: string;
  status: number;
  exit: number;
  retry: string;
  denial: string;
  meaning: string;
}

function rows(): Row[] {
  const out: Row[] = [];
  for (const line of PAGE.split('\n')) {
    const m = /^\| `([a-z_]+)` \| (\d{3}) \| (\d) \| (yes|no) \| (yes|no) \| (.+) \|$/.exec(line);
    if (m)
      out.push({
        reason: m[1]!,
        status: Number(m[2]),
        exit: Number(m[3]),
        retry: m[4]!,
        denial: m[5]!,
        meaning: m[6]!,
      });
    else if (/^\| `/.test(line)) assert.fail(`malformed reason row in spec/reasons.md: ${line}`);
  }
  return out;
}

test('every reason of src/spec/reasons.ts is documented in spec/reasons.md, once', () => {
  const documented = rows().map((r) => r.reason);
  assert.equal(new Set(documented).size, documented.length, 'a reason is documented twice');
  const missing = Object.keys(REASONS).filter((r) => !documented.includes(r));
  assert.deepEqual(missing, [], 'reasons without a row in spec/reasons.md');
});

test('every reason documented in spec/reasons.md exists in src/spec/reasons.ts', () => {
  const stale = rows()
    .map((r) => r.reason)
    .filter((r) => !(r in REASONS));
  assert.deepEqual(stale, [], 'rows for reasons the table does not have');
});

test('HTTP status, CLI exit code, retry and denial columns agree with the table', () => {
  for (const row of rows()) {
    const info = (REASONS as Record<string, ReasonInfo>)[row.reason]!;
    assert.equal(row.status, info.status, `${row.reason} HTTP`);
    assert.equal(row.exit, info.exit, `${row.reason} exit`);
    assert.equal(row.retry, info.retryable ? 'yes' : 'no', `${row.reason} retry`);
    assert.equal(row.denial, info.denial ? 'yes' : 'no', `${row.reason} denial`);
    assert.ok(row.meaning.length > 20, `${row.reason} needs a meaning`);
  }
});
