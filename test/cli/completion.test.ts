/**
 * `solid completion bash|zsh|fish` (issue 37 row 8): the scripts come from commander's command
 * tree, so a command registered on the program is completed without a list kept by hand; bash
 * completes commands, subcommands and options at each depth; an unknown shell is refused (exit 2).
 * Spec: spec/transports.md §cli.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliHarness } from '../support/cli.ts';
import { buildProgram } from '../../src/transports/cli/main.ts';
import { bashScript, completionTree, fishScript } from '../../src/transports/cli/commands/completion.ts';

const io = { out: () => {}, err: () => {} } as never;

/** What bash completes for the words typed (the last one being completed). */
function complete(script: string, dir: string, words: string[]): string[] {
  const file = join(dir, 'completion.bash');
  writeFileSync(file, script);
  const quoted = words.map((w) => `'${w}'`).join(' ');
  const run = spawnSync(
    'bash',
    [
      '-c',
      `source ${file}; COMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _solid_completion; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(run.status, 0, run.stderr);
  return run.stdout.split('\n').filter((l) => l !== '');
}

test('bash completes commands, subcommands and options from the command tree', async (t) => {
  const cli = cliHarness(t);
  const r = await cli.run(['completion', 'bash']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(complete(r.stdout, cli.dir, ['solid', 'aud']), ['audit']);
  const audit = complete(r.stdout, cli.dir, ['solid', 'audit', '']);
  for (const sub of ['verify', 'export', 'export-keys']) assert.ok(audit.includes(sub), audit.join(' '));
  assert.deepEqual(complete(r.stdout, cli.dir, ['solid', '--db', 'x.db', 'init', '--st']), ['--starter']);
  assert.deepEqual(complete(r.stdout, cli.dir, ['solid', 'api-keys', 'cre']), ['create']);
  assert.ok(complete(r.stdout, cli.dir, ['solid', '--']).includes('--pack'));
});

test('a command added to the program is completed with no list kept by hand', async (t) => {
  const cli = cliHarness(t);
  const program = await buildProgram(io, () => {});
  program
    .command('frobnicate')
    .description('A command only this test registers')
    .option('--loudly', 'say so');
  const tree = completionTree(program);
  assert.deepEqual(complete(bashScript(tree), cli.dir, ['solid', 'frob']), ['frobnicate']);
  assert.deepEqual(complete(bashScript(tree), cli.dir, ['solid', 'frobnicate', '--lo']), ['--loudly']);
  assert.match(fishScript(tree), /complete -c solid -f -n '__solid_at '\\'''\\''' -a 'frobnicate'/);
  assert.match(fishScript(tree), /-n '__solid_at '\\''frobnicate'\\''' -l 'loudly'/);
});

test('zsh and fish scripts are printed; an unknown shell is refused with a hint', async (t) => {
  const cli = cliHarness(t);
  const zsh = await cli.run(['completion', 'zsh']);
  assert.equal(zsh.code, 0);
  assert.match(zsh.stdout, /^#compdef solid/);
  assert.match(zsh.stdout, /bashcompinit/);
  const fish = await cli.run(['completion', 'fish']);
  assert.equal(fish.code, 0);
  assert.match(fish.stdout, /complete -c solid -f -n '__solid_at '\\'''\\''' -a 'serve'/);
  const bad = await cli.run(['completion', 'tcsh']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /invalid_input: no completion for the shell "tcsh"/);
  assert.match(bad.stderr, /bash\|zsh\|fish/);
});
