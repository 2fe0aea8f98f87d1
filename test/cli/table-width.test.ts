/**
 * CLI tables fit the terminal (issue 37 row 8): at 80 columns every line of `solid verbs list`
 * stays within 80 characters, the first column (the verb) whole and long cells cut with …; the
 * width is the terminal's columns on a TTY, else COLUMNS, else no limit (a pipe or a file reads
 * every cell whole). Spec: spec/transports.md §cli.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cliHarness } from '../support/cli.ts';
import { DEFAULT_TABLE_WIDTH, table, terminalWidth } from '../../src/transports/cli/output.ts';
import { objectTable } from '../../src/transports/cli/human-output.ts';

const len = (s: string) => [...s].length;

test('the width: a terminal says its columns, else COLUMNS, else no limit', () => {
  assert.equal(terminalWidth({ isTTY: true, columns: 132 }, { COLUMNS: '60' }), 132);
  assert.equal(terminalWidth({ isTTY: false }, { COLUMNS: '60' }), 60);
  assert.equal(terminalWidth({ isTTY: false }, { COLUMNS: 'wide' }), DEFAULT_TABLE_WIDTH);
  assert.equal(terminalWidth({ isTTY: false }, {}), Number.POSITIVE_INFINITY);
});

test('a wide table is cut to the width, first column whole; a narrow one is left alone', () => {
  const rows = [
    ['audit.revert_something_long', 'receipt', 'WRITE_REVERSIBLE', 'x'.repeat(90)],
    ['a.b', 'aggregate', 'READ', 'short'],
  ];
  const out = table(['VERB', 'SHAPE', 'CLASS', 'NOTE'], rows, 80).split('\n');
  for (const line of out) assert.ok(len(line) <= 80, `${len(line)}: ${line}`);
  assert.ok(out[2]!.startsWith('audit.revert_something_long '));
  assert.match(out[2]!, /…$/);
  const narrow = table(['A', 'B'], [['1', '2']], 80);
  assert.equal(narrow, 'A  B\n-  -\n1  2');
  const objects = objectTable([{ id: 1, text: 'y'.repeat(200), more: 'z'.repeat(50) }], '  ', 80).split('\n');
  for (const line of objects) assert.ok(len(line) <= 80, `${len(line)}: ${line}`);
});

test('solid verbs list fits 80 columns, and shows whole cells when the terminal is wide', async (t) => {
  const cli = cliHarness(t);
  assert.equal((await cli.run(['init'])).code, 0);
  const at80 = await cli.run(['verbs', 'list'], { env: { COLUMNS: '80' } });
  assert.equal(at80.code, 0, at80.stderr);
  const lines = at80.stdout.split('\n');
  for (const line of lines) assert.ok(len(line) <= 80, `${len(line)}: ${line}`);
  assert.ok(
    lines.some((l) => l.startsWith('audit.revert ')),
    'verb names are whole',
  );
  const wide = await cli.run(['verbs', 'list'], { env: { COLUMNS: '400' } });
  assert.doesNotMatch(wide.stdout, /…/);
  const piped = await cli.run(['verbs', 'list'], { env: { COLUMNS: undefined } });
  assert.doesNotMatch(piped.stdout, /…/);
});
