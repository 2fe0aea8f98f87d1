/**
 * spec/transports.md §ucp against the code, both directions: the error table lists every code
 * with its status, the sub-agent table every mapped category, and the subsections the code cites
 * exist.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { UCP_ERROR_STATUS } from '../../../src/transports/ucp/ucp-error.ts';
import { CATEGORY_SUB_AGENT, SUB_AGENTS } from '../../../src/transports/ucp/capability-names.ts';

const page = readFileSync(fileURLToPath(new URL('../../../spec/transports.md', import.meta.url)), 'utf8');
const section = page.split(/^## §ucp$/m)[1]!.split(/^## /m)[0]!;

function sub(id: string): string {
  return section.split(new RegExp(`^### ${id}$`, 'm'))[1]!.split(/^### /m)[0]!;
}

test('§ucp has the subsections the UCP transport cites', () => {
  for (const id of [
    '§ucp-profile',
    '§ucp-names',
    '§ucp-config',
    '§ucp-verify',
    '§ucp-dispatch',
    '§ucp-errors',
    '§ucp-keys',
    '§ucp-client',
    '§ucp-cli',
  ]) {
    assert.match(section, new RegExp(`^### ${id}$`, 'm'), id);
  }
});

test('§ucp-errors lists every transport code under its status, and nothing else', () => {
  const rows = new Map<string, number>();
  for (const m of sub('§ucp-errors').matchAll(/^\| (\d{3}) \| ([^|]+) \|$/gm)) {
    for (const code of m[2]!.split(',').map((c) => c.trim().replace(/ \(.*\)$/, '')))
      rows.set(code, Number(m[1]));
  }
  for (const [code, status] of Object.entries(UCP_ERROR_STATUS)) assert.equal(rows.get(code), status, code);
  for (const code of rows.keys()) assert.ok(code in UCP_ERROR_STATUS, `${code} is a real code`);
});

test('§ucp-names maps every category of the code to its sub-agent', () => {
  const table = new Map<string, string>();
  for (const m of sub('§ucp-names').matchAll(/^\| `([a-z]+)`[^|]* \| ([^|]+) \|$/gm)) table.set(m[1]!, m[2]!);
  assert.deepEqual([...table.keys()].sort(), [...SUB_AGENTS].sort());
  for (const [category, subAgent] of Object.entries(CATEGORY_SUB_AGENT)) {
    const cell = table.get(subAgent)!;
    const words = cell.split(',').map((w) => w.trim().replace(/\(s\)$/, ''));
    assert.ok(
      words.includes(category) || words.includes(category.replace(/s$/, '')) || category === subAgent,
      `${category} → ${subAgent}`,
    );
  }
});
