/**
 * Shortcut commands generated from the verbs' `cli` hints: they appear in `solid --help` (from
 * the local registry, and from a remote server's manifest + verb hints), run their verb with
 * flags and positional arguments derived from the input schema, are validated by the verb's
 * schema through dispatch, and never shadow a built-in command. Spec: spec/transports.md
 * §cli-shortcuts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { remoteFixture } from './support.ts';
import { registerShortcuts, needsShortcuts, type ShortcutSpec } from '../../src/transports/cli/shortcuts.ts';
import { buildProgram } from '../../src/transports/cli/main.ts';
import type { Envelope } from '../../src/spec/types.ts';

const noIo = { out: () => {}, err: () => {}, isTTY: false };

function spec(verb: string, command: string[], extra: Partial<ShortcutSpec> = {}): ShortcutSpec {
  return {
    verb,
    command,
    positional: [],
    inputSchema: { type: 'object', properties: {} },
    read: true,
    ...extra,
  };
}

test('a shortcut never shadows a built-in command; a new subcommand of a built-in group is allowed', async () => {
  const program = await buildProgram(noIo, () => {});
  const report = registerShortcuts(program, noIo, () => {}, [
    spec('a.list', ['verbs', 'list']),
    spec('b.serve', ['serve']),
    spec('c.mcp', ['mcp', 'tools']),
    spec('d.catalog', ['verbs', 'catalog']),
    spec('e.queue', ['approvals', 'queue']),
    spec('f.diag', ['infra', 'diagnose']),
    spec('g.diag', ['infra', 'diagnose']),
    spec('h.infra', ['infra']),
    spec('i.bad', ['Infra', 'x']),
    spec('j.deep', ['infra', 'diagnose', 'more']),
  ]);
  assert.deepEqual(report.registered, ['verbs catalog', 'approvals queue', 'infra diagnose']);
  const why = Object.fromEntries(report.skipped.map((s) => [s.verb, s.why]));
  assert.match(why['a.list']!, /"verbs list" is a built-in command/);
  assert.match(why['b.serve']!, /"serve" is a built-in command/);
  assert.match(why['c.mcp']!, /"mcp" is a built-in command/);
  assert.match(why['g.diag']!, /another verb claims these words/);
  assert.match(why['h.infra']!, /another verb claims these words/);
  assert.match(why['i.bad']!, /lowercase/);
  assert.match(why['j.deep']!, /already the shortcut of another verb/);
  // The built-ins are untouched: `verbs list` is still the manifest command.
  assert.equal(
    program.commands
      .find((c) => c.name() === 'verbs')!
      .commands.find((c) => c.name() === 'list')!
      .description(),
    'List verbs (a table, or VerbRecords with --json)',
  );
});

test('shortcuts are loaded only when the invocation may use them', async () => {
  const program = await buildProgram(noIo, () => {});
  assert.equal(needsShortcuts(program, ['agent', 'dispatch', 'x']), false);
  assert.equal(needsShortcuts(program, ['--db', 'x.db', 'serve']), false);
  assert.equal(needsShortcuts(program, ['--url', 'http://h', 'mcp']), false);
  assert.equal(needsShortcuts(program, []), true);
  assert.equal(needsShortcuts(program, ['--help']), true);
  assert.equal(needsShortcuts(program, ['infra', 'diagnose']), true);
  assert.equal(needsShortcuts(program, ['verbs', 'catalog']), true);
  assert.equal(needsShortcuts(program, ['verbs', 'list']), false);
  assert.equal(new Command().commands.length, 0);
});

test(
  'shortcuts appear in --help, run their verb, and are validated by its schema (local and remote)',
  { timeout: 180_000 },
  async (t) => {
    const f = await remoteFixture(t);
    const owner = { env: { SOLID_API_KEY: f.keys.owner } };
    const fx = f.facts.fixtures!;
    for (const mode of ['local', 'remote'] as const) {
      const help = await f.cli(mode, ['--help']);
      assert.equal(help.code, 0);
      assert.match(help.stdout, /Shortcuts:\n/);
      assert.match(
        help.stdout,
        /customer-context \[options\] <customer_id>\s+Customer full context — runs customer\.full_context/,
      );
      assert.match(help.stdout, /deal\s+create → deals_create/);
      assert.match(help.stdout, /infra\s+diagnose → infrastructure_diagnose/);
      const verbsHelp = await f.cli(mode, ['verbs', '--help']);
      assert.match(
        verbsHelp.stdout,
        /catalog \[options\]\s+.*runs verbs\.catalog|catalog \[options\]\s+.* — runs /,
      );

      const ctx = await f.cli(
        mode,
        [
          'customer-context',
          String(fx.customer_id),
          '--no-include-payment-methods',
          '--relation-limit',
          '2',
          '--json',
        ],
        owner,
      );
      assert.equal(ctx.code, 0, ctx.stderr);
      const data = ctx.json<Envelope>().result!.data as { payment_methods?: unknown[] };
      assert.equal(data.payment_methods, undefined, '--no-include-payment-methods reached the verb');

      const diag = await f.cli(mode, ['infra', 'diagnose'], owner);
      assert.equal(diag.code, 0, diag.stderr);
      assert.match(diag.stdout, /^✓ infrastructure_diagnose\n/);
      assert.match(diag.stdout, /\noverall\s+healthy\n/);

      const bad = await f.cli(
        mode,
        [
          'deal',
          'create',
          '--contact-id',
          String(fx.customer_id),
          '--title',
          'Shortcut deal',
          '--amount-cents',
          'twelve',
          '--json',
        ],
        owner,
      );
      assert.equal(bad.code, 2);
      assert.equal(
        bad.json<Envelope>().error!.path,
        '/amount_cents',
        'validated by the verb schema, not by the CLI',
      );
      const missing = await f.cli(
        mode,
        ['deal', 'create', '--title', 'No contact', '--amount-cents', '100', '--json'],
        owner,
      );
      assert.equal(missing.json<Envelope>().error!.reason, 'invalid_input');

      const pending = await f.cli(
        mode,
        [
          'deal',
          'create',
          '--contact-id',
          String(fx.customer_id),
          '--title',
          'Shortcut deal',
          '--amount-cents',
          '1200',
          '--json',
        ],
        owner,
      );
      assert.equal(pending.code, 4, 'a confirmation verb still asks without --confirm');
      const made = await f.cli(
        mode,
        [
          'deal',
          'create',
          '--contact-id',
          String(fx.customer_id),
          '--title',
          'Shortcut deal',
          '--amount-cents',
          '1200',
          '--confirm',
          '--idempotency-key',
          `sc-${mode}`,
        ],
        owner,
      );
      assert.equal(made.code, 0, made.stderr);
      assert.match(made.stdout, /^✓ deals_create · created · audit_id \d+ · signed receipt/);
      assert.match(
        made.stdout,
        /undo: solid agent dispatch audit\.revert --args '\{"audit_id":\d+\}' --confirm/,
      );

      const unknownFlag = await f.cli(mode, ['infra', 'diagnose', '--droplet', '1'], owner);
      assert.equal(unknownFlag.code, 2);
      assert.match(unknownFlag.stderr, /unknown option '--droplet'/);
    }
  },
);
