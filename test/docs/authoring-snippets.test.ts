/**
 * The runnable snippets of docs/authoring.md stay true: every ```js block preceded by
 * `<!-- docs-test: run -->` is run as a module (its imports of `solid-verbs`, `solid-verbs/testing`
 * and `solid-verbs/mcp` pointed at this checkout's entry points) and must exit 0. The snippets
 * assert what the guide says (the handler signature, ctx.now, a preview, a typed phrase, a receipt,
 * a revert, outbox handlers, SOLID_TEST_LOG, MCP confirmation).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const GUIDE = join(ROOT, 'docs', 'authoring.md');
const ENTRY: Record<string, string> = {
  'solid-verbs': 'src/index.ts',
  'solid-verbs/testing': 'src/testing.ts',
  'solid-verbs/mcp': 'src/transports/mcp/index.ts',
  'solid-verbs/http': 'src/transports/server/index.ts',
};

/** The marked snippets: [line of the fence, code]. */
function snippets(markdown: string): Array<{ line: number; code: string }> {
  const lines = markdown.split('\n');
  const out: Array<{ line: number; code: string }> = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== '<!-- docs-test: run -->') continue;
    const open = lines[i + 1]?.trim();
    assert.ok(
      open === '```js' || open === '```ts',
      `docs/authoring.md:${i + 2}: a marked snippet opens with \`\`\`js`,
    );
    const end = lines.indexOf('```', i + 2);
    assert.ok(end > i, `docs/authoring.md:${i + 2}: the snippet is not closed`);
    out.push({ line: i + 2, code: lines.slice(i + 2, end).join('\n') });
  }
  return out;
}

const found = snippets(readFileSync(GUIDE, 'utf8'));

test('docs/authoring.md marks its runnable snippets', () => {
  assert.ok(found.length >= 3, `found ${found.length} marked snippets`);
});

const dir = join(ROOT, 'test-artifacts', `docs-snippets-${process.pid}`);
for (const { line, code } of found) {
  test(`docs/authoring.md:${line} runs`, { timeout: 120_000 }, (t) => {
    mkdirSync(dir, { recursive: true });
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const source = code.replace(/from '(solid-verbs(?:\/[a-z]+)?)'/g, (m, spec: string) => {
      const path = ENTRY[spec];
      assert.ok(path !== undefined, `docs/authoring.md:${line}: no entry point for ${spec}`);
      return `from ${JSON.stringify(join(ROOT, path))}`;
    });
    const file = join(dir, `snippet-${line}.mjs`);
    writeFileSync(file, source);
    const run = spawnSync(process.execPath, ['--import', 'tsx', file], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 110_000,
      env: { ...process.env, SOLID_TEST_LOG: 'silent' },
    });
    assert.equal(run.status, 0, `docs/authoring.md:${line} failed:\n${run.stderr}\n${run.stdout}`);
  });
}
