/**
 * spec/transports.md §mcp enumerates the `_meta` keys and the subsections the code cites; this
 * keeps the page and src/transports/mcp/meta-keys.ts in step in both directions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { META, META_PREFIX } from '../../../src/transports/mcp/meta-keys.ts';

const page = readFileSync(fileURLToPath(new URL('../../../spec/transports.md', import.meta.url)), 'utf8');
const section = page.split(/^## §mcp$/m)[1]!.split(/^## /m)[0]!;

test('§mcp documents every _meta key of the projection, and no key that does not exist', () => {
  const documented = new Set([...section.matchAll(/`(dev\.solid-verbs\/[a-z_]+)`/g)].map((m) => m[1]!));
  for (const key of Object.values(META)) assert.ok(documented.has(key), `${key} is documented in §mcp`);
  const known = new Set<string>(Object.values(META));
  for (const key of documented) assert.ok(known.has(key), `${key} is a real key`);
  assert.ok(!section.includes(`${META_PREFIX}typed_phrase`), 'there is no typed-phrase key');
});

test('§mcp has the subsections the MCP transport cites', () => {
  for (const id of [
    '§mcp-tools',
    '§mcp-schemas',
    '§mcp-results',
    '§mcp-consent',
    '§mcp-stdio',
    '§mcp-http',
    '§mcp-2026',
  ]) {
    assert.match(section, new RegExp(`^### ${id}$`, 'm'), id);
  }
});
