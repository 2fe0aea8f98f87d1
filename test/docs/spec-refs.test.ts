/**
 * Every "spec/<file>.md §<section>" a source comment cites names a section that exists: a heading
 * of that file carrying `§<section>`. A renamed or missing section fails here, not in a reader's
 * hands.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, relative } from 'node:path';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

function sections(file: string): Set<string> | undefined {
  let text: string;
  try {
    text = readFileSync(join(ROOT, 'spec', file), 'utf8');
  } catch {
    return undefined;
  }
  return new Set([...text.matchAll(/^#+ .*?§([\w-]+)/gm)].map((m) => m[1]!));
}

it('every spec/<file>.md §<section> cited in src/ and web/ names an existing section', () => {
  const cache = new Map<string, Set<string> | undefined>();
  const broken: string[] = [];
  for (const file of [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'web'))]) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/spec\/([\w-]+\.md)((?:[ ,]*§[\w-]+)+)/g)) {
      const doc = m[1]!;
      if (!cache.has(doc)) cache.set(doc, sections(doc));
      const known = cache.get(doc);
      for (const [, section] of m[2]!.matchAll(/§([\w-]+)/g)) {
        if (known === undefined) broken.push(`${relative(ROOT, file)}: spec/${doc} does not exist`);
        else if (!known.has(section!)) broken.push(`${relative(ROOT, file)}: spec/${doc} has no §${section}`);
      }
    }
  }
  assert.deepEqual(broken, []);
});
