/**
 * spec/consent.md is the page code cites for consent: every `consent.md §id` citation in src/,
 * spec/ and ARCHITECTURE.md names a section that exists, and the facts the page states as numbers
 * (TTL, default caps, default blocklist, role floors) are the runtime's.
 */
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NONCE_TTL_SECONDS } from '../../src/runtime/consent/nonce.ts';
import { DEFAULT_DAILY_CAPS } from '../../src/runtime/consent/daily-caps.ts';
import { DEFAULT_BLOCKLIST } from '../../src/runtime/consent/blocklist.ts';
import { ROLE_FLOOR_OF_CLASS } from '../../src/runtime/verb.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGE = readFileSync(join(ROOT, 'spec/consent.md'), 'utf8');
const SECTIONS = new Set([...PAGE.matchAll(/^##+ §([a-z-]+)/gm)].map((m) => m[1]!));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : /\.(ts|md)$/.test(f) ? [p] : [];
  });
}

test('every consent.md §section cited in the code and docs exists', () => {
  const cited = new Map<string, string>();
  const sources = [
    ...files(join(ROOT, 'src')),
    ...files(join(ROOT, 'spec')),
    ...(existsSync(join(ROOT, 'ARCHITECTURE.md')) ? [join(ROOT, 'ARCHITECTURE.md')] : []),
  ];
  for (const f of sources) {
    for (const m of readFileSync(f, 'utf8').matchAll(/consent\.md ?§([a-z-]+)/g)) cited.set(m[1]!, f);
  }
  assert.ok(cited.size >= 5);
  const missing = [...cited]
    .filter(([id]) => !SECTIONS.has(id))
    .map(([id, f]) => `§${id} (cited in ${f.slice(ROOT.length)})`);
  assert.deepEqual(missing, []);
});

test('the numbers spec/consent.md states are the runtime’s', () => {
  assert.match(PAGE, new RegExp(`\\*\\*TTL\\*\\* ${NONCE_TTL_SECONDS} seconds`));
  for (const [cls, cap] of Object.entries(DEFAULT_DAILY_CAPS)) {
    assert.match(
      PAGE,
      new RegExp(
        `\\| \`${cls}\` \\| [a-z ]+ \\| ${ROLE_FLOOR_OF_CLASS[cls as keyof typeof ROLE_FLOOR_OF_CLASS]} \\| ${cap} / tenant / UTC day \\|`,
      ),
      cls,
    );
  }
  for (const name of DEFAULT_BLOCKLIST) assert.ok(PAGE.includes(`\`${name}\``), name);
});
