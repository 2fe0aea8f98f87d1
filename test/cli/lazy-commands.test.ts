/**
 * The CLI imports only the command module an invocation names (issue 36): the table in main.ts
 * names every top-level command its module registers, a command loaded alone answers --help as it
 * does in the whole program, and `solid mcp` / `solid verbs list` never import the HTTP server,
 * OAuth or UCP code.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { buildProgram, COMMANDS, programFor } from '../../src/transports/cli/main.ts';

const noIo = { out: () => {}, err: () => {}, isTTY: false };
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

test('each command module registers exactly the names the table gives it, in help order', async () => {
  const whole = await buildProgram(noIo, () => {});
  assert.deepEqual(
    whole.commands.map((c) => c.name()),
    COMMANDS.flatMap((c) => c.names),
  );
  for (const entry of COMMANDS) {
    const alone = new Command('solid');
    (await entry.load())(alone, noIo, () => {});
    assert.deepEqual(
      alone.commands.flatMap((c) => [c.name(), ...c.aliases()]),
      [...entry.names],
    );
    // A global option registered by a module would be unknown to every other command loaded
    // alone (`solid serve --database-url …` once failed so): globals live in main.ts only.
    assert.deepEqual(
      alone.options.map((o) => o.long),
      [],
      `${entry.names[0]} registers no global option`,
    );
  }
});

test('every command loaded alone takes the global options', async () => {
  const whole = await buildProgram(noIo, () => {});
  const globals = whole.options.map((o) => o.long).filter((o) => o !== '--version');
  assert.ok(globals.includes('--database-url') && globals.includes('--db'), globals.join(' '));
  for (const name of COMMANDS.flatMap((c) => c.names)) {
    const program = await programFor([name], noIo, () => {});
    assert.deepEqual(
      program.options.map((o) => o.long).filter((o) => o !== '--version'),
      globals,
      `solid ${name} alone`,
    );
  }
});

test('a command loaded alone shows the same help as in the whole program', async () => {
  const whole = await buildProgram(noIo, () => {});
  const helpOf = (c: Command | undefined): string[] =>
    c === undefined ? [] : [c.helpInformation(), ...c.commands.flatMap(helpOf)];
  for (const name of COMMANDS.flatMap((c) => c.names)) {
    if (name === 'completion') continue;
    // A leaf command, or a group with one of its subcommands named, is loaded alone.
    const full = whole.commands.find((c) => c.name() === name)!;
    const argv = full.commands.length > 0 ? [name, full.commands[0]!.name()] : [name];
    const program = await programFor(argv, noIo, () => {});
    assert.deepEqual(
      program.commands.map((c) => c.name()),
      COMMANDS.find((c) => c.names.includes(name))!.names,
      `solid ${argv.join(' ')} loads its own module only`,
    );
    assert.deepEqual(helpOf(program.commands.find((c) => c.name() === name)), helpOf(full), name);
  }
  // No command, help, an unknown word and completion see the whole tree.
  for (const argv of [[], ['--help'], ['help', 'serve'], ['frobnicate'], ['completion', 'bash'], ['verbs']])
    assert.equal(
      (await programFor(argv, noIo, () => {})).commands.length,
      whole.commands.length,
      argv.join(' '),
    );
});

test('solid mcp and solid verbs list import no HTTP server, OAuth, UCP or dashboard code', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'solid-lazy-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const hooks = join(dir, 'hooks.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';
let out;
export function initialize(d) { out = d.out; }
export async function load(url, context, next) { appendFileSync(out, url + '\\n'); return next(url, context); }
`,
  );
  const db = join(dir, 'solid.db');
  const run = (args: string[], input?: string) => {
    const out = join(dir, `${args[0]}.txt`);
    writeFileSync(out, '');
    const preload = join(dir, `preload-${args[0]}.mjs`);
    writeFileSync(
      preload,
      `import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(hooks).href)}, { data: { out: ${JSON.stringify(out)} } });
`,
    );
    const r = spawnSync(
      process.execPath,
      ['--import', pathToFileURL(preload).href, join(ROOT, 'bin', 'solid.js'), ...args, '--db', db],
      { encoding: 'utf8', input, env: { ...process.env, SOLID_RUN: 'src', SOLID_LOG_LEVEL: 'silent' } },
    );
    assert.equal(r.status, 0, r.stderr);
    return { stdout: r.stdout, loaded: readFileSync(out, 'utf8').split('\n') };
  };
  run(['init']);
  const initialize = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  });
  const mcp = run(['mcp'], initialize + '\n');
  assert.match(mcp.stdout, /"serverInfo"/);
  const list = run(['verbs', 'list', '--json']);
  assert.match(list.stdout, /"verbs"/);
  assert.ok(mcp.loaded.some((u) => u.endsWith('/src/transports/cli/commands/mcp.ts')));
  assert.ok(list.loaded.some((u) => u.endsWith('/src/transports/cli/commands/verbs.ts')));
  const forbidden = [
    /\/node_modules\/fastify\//,
    /\/node_modules\/oidc-provider\//,
    /\/node_modules\/@opentelemetry\/sdk-/,
    /\/src\/transports\/(http|server|ucp)\//,
    /\/src\/oauth\/(?!migrations)/,
    /\/src\/transports\/cli\/commands\/(serve|ucp|audit|keys)\.ts/,
  ];
  for (const [name, r] of [
    ['mcp', mcp],
    ['verbs list', list],
  ] as const)
    for (const f of forbidden)
      assert.deepEqual(
        r.loaded.filter((u) => f.test(u)),
        [],
        `solid ${name} imports ${f}`,
      );
  // A command that validates and logs nothing loads neither Ajv nor pino, nor the PostgreSQL driver.
  for (const f of [/\/node_modules\/@modelcontextprotocol\//, /\/node_modules\/(ajv|pino|pg)\//])
    assert.deepEqual(
      list.loaded.filter((u) => f.test(u)),
      [],
      `solid verbs list imports ${f}`,
    );
});
