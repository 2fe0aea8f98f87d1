/**
 * A secret piped into the CLI (`printf %s "$KEY" | solid vault set NAME`, the form the vault's own
 * hint gives) is read even without a final newline; an empty pipe is still "no answer" (exit 2),
 * and nothing is stored for it. Runs bin/solid.js as a real process: the prompt reads the real
 * stdin (src/transports/cli/main.ts promptLine).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/solid.js', import.meta.url));

function solid(args: string[], input: string) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', input, timeout: 60_000 });
}

test('a piped secret without its final newline is stored; an empty pipe stores nothing', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'solid-piped-secret-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'v.db');
  assert.equal(solid(['init', '--db', db], '').status, 0);

  const bare = solid(['vault', 'set', 'pay', '--db', db], 'sk_test_abcd1234');
  assert.equal(bare.status, 0, bare.stderr);
  const lined = solid(['vault', 'set', 'pay2', '--db', db], 'sk_test_wxyz9876\n');
  assert.equal(lined.status, 0, lined.stderr);
  const empty = solid(['vault', 'set', 'pay3', '--db', db], '');
  assert.equal(empty.status, 2);
  assert.match(empty.stderr, /end of input/);

  // A bad name is refused before the secret (or a one-time code) is asked for.
  const badName = solid(['vault', 'set', 'BAD NAME', '--db', db], 'sk_test_abcd1234');
  assert.equal(badName.status, 2);
  assert.match(badName.stderr, /invalid_args/);
  assert.doesNotMatch(badName.stderr, /Secret for/);

  const list = solid(['vault', 'list', '--json', '--db', db], '');
  assert.equal(list.status, 0, list.stderr);
  const entries = JSON.parse(list.stdout) as { name: string; hint: string }[];
  assert.deepEqual(entries.map((e) => [e.name, e.hint]).sort(), [
    ['pay', '1234'],
    ['pay2', '9876'],
  ]);
  // The secret itself never shows in what the CLI prints.
  for (const r of [bare, lined, list]) assert.doesNotMatch(r.stdout + r.stderr, /sk_test_/);
});
