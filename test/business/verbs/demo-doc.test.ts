/**
 * docs/demo.md lists exactly the demo pack's verbs, each under its category with its shape and
 * consent class, and states the totals the pack really has.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { demoPack } from '../../../src/business/pack.ts';
import { Registry } from '../../../src/runtime/registry.ts';

const DOC = readFileSync(new URL('../../../docs/demo.md', import.meta.url), 'utf8');

test('docs/demo.md lists every verb of the pack (and no other) under its category, shape and class', () => {
  const registry = new Registry();
  registry.registerAll(demoPack.verbs);
  const section = DOC.slice(DOC.indexOf('§verbs'), DOC.indexOf('## Consent, in this business'));
  const listed = new Map<string, { category: string; shape: string; cls: string }>();
  let category = '';
  for (const line of section.split('\n')) {
    const heading = /^### (\S+)/.exec(line);
    if (heading) category = heading[1]!;
    const row = /^\| `([^`]+)` \| (\w+) \| (\w+)/.exec(line);
    if (row) listed.set(row[1]!, { category, shape: row[2]!, cls: row[3]! });
  }
  const verbs = demoPack.verbs.map((d) => registry.get(d.name)!);
  assert.deepEqual([...listed.keys()].sort(), verbs.map((v) => v.name).sort());
  for (const v of verbs)
    assert.deepEqual(
      listed.get(v.name),
      { category: v.category, shape: v.shape, cls: v.consentClass },
      v.name,
    );
  assert.match(
    DOC,
    new RegExp(`${verbs.length} verbs in ${new Set(verbs.map((v) => v.category)).size} categories`),
  );
  const count = (pred: (v: (typeof verbs)[number]) => boolean) => verbs.filter(pred).length;
  for (const shape of ['aggregate', 'explain', 'preview', 'suggest', 'receipt'])
    assert.match(DOC, new RegExp(`${count((v) => v.shape === shape)} ${shape}`), shape);
  for (const cls of ['READ', 'WRITE_REVERSIBLE', 'WRITE_FINANCIAL', 'IRREVERSIBLE', 'BLOCKED'])
    assert.match(DOC, new RegExp(`${cls} ${count((v) => v.consentClass === cls)}`), cls);
});
