/**
 * The conformance docs stay true: docs/conformance.md lists every check of the kit (and no other)
 * with its spec section, every spec section a check or a kit docstring cites exists as a heading,
 * spec/README.md lists spec/conformance.md, and our declaration is valid against its schema.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { CHECKS, packDeclaration } from '../../src/conformance/index.ts';
import { validateOurs } from '../../src/conformance/schemas.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

/** Does `spec/<page>.md` have a heading `§<id>`? */
function sectionExists(page: string, id: string): boolean {
  const file = join(ROOT, page);
  if (!existsSync(file)) return false;
  return new RegExp(`^#{2,4} §${id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\s|$)`, 'm').test(
    readFileSync(file, 'utf8'),
  );
}

it('docs/conformance.md lists every check with its spec section, and no other', () => {
  const doc = read('docs/conformance.md');
  const rows = new Map(
    [...doc.matchAll(/^\| `([a-z_]+\.[a-z_]+)` \| .* \| (spec\/[^|]+?) \| [^|]+ \|$/gm)].map((m) => [
      m[1]!,
      m[2]!,
    ]),
  );
  for (const c of CHECKS) assert.equal(rows.get(c.id), c.spec, `${c.id} is listed with ${c.spec}`);
  const known = new Set([...CHECKS.map((c) => c.id), 'run.budget']);
  assert.deepEqual(
    [...rows.keys()].filter((id) => !known.has(id)),
    [],
  );
});

it('every spec section the kit cites exists', () => {
  const cited = new Set(CHECKS.map((c) => c.spec));
  const dir = join(ROOT, 'src/conformance');
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  for (const f of [
    ...files.map((x) => join('src/conformance', x)),
    'src/transports/cli/commands/conformance.ts',
  ])
    for (const m of read(f).matchAll(/spec\/[a-z-]+\.md §[a-z0-9_-]+/g)) cited.add(m[0]);
  const missing = [...cited].filter((c) => {
    const [page, id] = c.split(' §') as [string, string];
    return !sectionExists(page, id);
  });
  assert.deepEqual(missing, []);
});

it('spec/README.md lists spec/conformance.md', () => {
  assert.match(read('spec/README.md'), /\[conformance\.md\]\(conformance\.md\)/);
});

it('our declaration is valid against schema/conformance-declaration.json', () => {
  const decl = packDeclaration(() => true);
  assert.ok(decl);
  assert.deepEqual(validateOurs('conformance-declaration.json', decl), []);
  assert.deepEqual(
    decl.test_verbs.map((v) => [v.verb, v.gate]),
    [
      ['conformance.counter_add', 'confirmation'],
      ['conformance.counter_set', 'typed_phrase'],
    ],
  );
  // The example in spec/conformance.md is the document we serve.
  const spec = read('spec/conformance.md');
  const example = /## §declaration[\s\S]*?```json\n([\s\S]*?)```/.exec(spec)![1]!;
  const shown = JSON.parse(example) as { test_verbs: unknown };
  assert.deepEqual(shown.test_verbs, decl.test_verbs);
});
