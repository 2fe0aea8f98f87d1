/**
 * spec/transports.md §http-status enumerates every reason by HTTP status; this keeps the page and
 * the reason table (src/spec/reasons.ts) in step in both directions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { REASONS } from '../../../src/spec/reasons.ts';

const page = readFileSync(fileURLToPath(new URL('../../../spec/transports.md', import.meta.url)), 'utf8');

test('§http-status lists every reason under its status, and no reason that does not exist', () => {
  const section = page.split('### §http-status')[1]!.split('###')[0]!;
  const documented = new Map<string, number>();
  for (const m of section.matchAll(/^\| (\d{3}) \| ([a-z_, ]+) \|$/gm)) {
    for (const reason of m[2]!.split(',').map((s) => s.trim())) {
      assert.ok(!documented.has(reason), `${reason} listed twice`);
      documented.set(reason, Number(m[1]));
    }
  }
  for (const [reason, info] of Object.entries(REASONS))
    assert.equal(documented.get(reason), info.status, `${reason} documented with status ${info.status}`);
  for (const reason of documented.keys()) assert.ok(reason in REASONS, `${reason} is a real reason`);
});

test('the page has the section ids the code cites', () => {
  for (const id of [
    '§http',
    '§http-routes',
    '§http-status',
    '§http-auth',
    '§http-idempotency',
    '§http-body',
    '§http-errors',
    '§http-health',
    '§http-openapi',
    '§http-mounts',
    '§cli',
    '§cli-serve',
    '§mcp',
    '§webmcp',
    '§ucp',
    '§auth',
  ]) {
    assert.match(page, new RegExp(`^#{2,3} ${id}$`, 'm'), id);
  }
});
