/**
 * A team's own packs on the CLI: `--pack <file>` and `solid.config.js`, served by every command
 * (verbs list, agent dispatch, serve over HTTP, mcp over stdio), and a broken pack refused at start
 * with the file, verb and field named, exit 2, nothing migrated.
 * Spec: spec/manifest.md §packs, spec/transports.md §cli.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { cliHarness, type CliHarness } from '../support/cli.ts';
import { serve, stop, BIN } from '../reliability/serve-process.ts';
import { openLocal } from '../../src/transports/cli/local.ts';
import { refreshPacks } from '../../src/transports/cli/commands/mcp.ts';
import { definePack, PackError } from '../../src/runtime/pack.ts';
import { resultOf } from '../support/mcp.ts';

const INDEX = fileURLToPath(new URL('../../src/index.ts', import.meta.url));

/** A pack module: `shop.item_add` (a write) and `shop.item_count` (a read) over its own table. */
function shopPack(over: { name?: string; table?: string; verbPrefix?: string; sql?: string } = {}): string {
  const name = over.name ?? 'shop';
  const table = over.table ?? 'shop_items';
  const prefix = over.verbPrefix ?? name;
  const sql =
    over.sql ??
    `CREATE TABLE ${table} (company_id INTEGER NOT NULL, id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL)`;
  return `import { definePack, defineVerb } from ${JSON.stringify(INDEX)};
export default definePack({
  name: ${JSON.stringify(name)},
  description: 'A small shop: items on a shelf.',
  migrations: [{ version: 1, name: 'items', sqlite: ${JSON.stringify(sql)} }],
  verbs: [
    defineVerb({
      name: '${prefix}.item_count',
      description: 'How many items the shop lists.',
      shape: 'aggregate',
      category: 'shop',
      input: { type: 'object', properties: {}, additionalProperties: false },
      async handler(ctx) {
        const row = await ctx.db.get('SELECT COUNT(*) AS n FROM ${table} WHERE company_id = ?', [ctx.principal.company_id]);
        return { entity_type: 'shop', entity_id: ctx.principal.company_id, data: { items: Number(row.n) }, fetched_at: ctx.now.toISOString() };
      },
    }),
    defineVerb({
      name: '${prefix}.item_add',
      description: 'Put one item on the shelf.',
      shape: 'receipt',
      category: 'shop',
      consent: 'WRITE_REVERSIBLE',
      input: { type: 'object', properties: { title: { type: 'string', minLength: 1 } }, required: ['title'], additionalProperties: false },
      async handler(ctx, args) {
        await ctx.db.run('INSERT INTO ${table} (company_id, title) VALUES (?, ?)', [ctx.principal.company_id, args.title]);
        return { entity_type: 'item', entity_id: args.title, data: { title: args.title } };
      },
    }),
  ],
});
`;
}

async function initialised(t: TestContext): Promise<{ cli: CliHarness; key: string }> {
  const cli = cliHarness(t);
  const init = await cli.run(['init', '--json']);
  assert.equal(init.code, 0, init.stderr);
  return { cli, key: init.json<{ owner_api_key: string }>().owner_api_key };
}

function write(cli: CliHarness, file: string, text: string): string {
  const path = join(cli.dir, file);
  writeFileSync(path, text);
  return path;
}

/** Scopes migrated and tables present in the database file. */
function dbState(path: string): { scopes: string[]; tables: string[] } {
  const db = new Database(path, { readonly: true });
  try {
    const scopes = (
      db.prepare('SELECT DISTINCT scope FROM schema_migrations ORDER BY scope').all() as Array<{
        scope: string;
      }>
    ).map((r) => r.scope);
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{
        name: string;
      }>
    ).map((r) => r.name);
    return { scopes, tables };
  } finally {
    db.close();
  }
}

describe('solid --pack and solid.config.js', () => {
  it('a pack file given with --pack is listed, dispatched and writes its own table', async (t) => {
    const { cli, key } = await initialised(t);
    const pack = write(cli, 'shop.mjs', shopPack());
    const list = await cli.run(['--pack', pack, 'verbs', 'list', '--json']);
    assert.equal(list.code, 0, list.stderr);
    const names = list.json<Array<{ name: string }>>().map((r) => r.name);
    assert.ok(names.includes('shop.item_count') && names.includes('shop.item_add'), names.join(' '));
    const add = await cli.run(
      [
        '--pack',
        pack,
        'agent',
        'dispatch',
        'shop.item_add',
        '--args',
        '{"title":"kettle"}',
        '--confirm',
        '--json',
      ],
      { env: { SOLID_API_KEY: key } },
    );
    assert.equal(add.code, 0, add.stdout + add.stderr);
    const count = await cli.run(['--pack', pack, 'agent', 'dispatch', 'shop.item_count', '--json'], {
      env: { SOLID_API_KEY: key },
    });
    assert.equal(count.code, 0, count.stderr);
    assert.equal(count.json<{ result: { data: { items: number } } }>().result.data.items, 1);
    // Without the pack the verb is not served: the pack belongs to the process, not the file.
    const without = await cli.run(['agent', 'dispatch', 'shop.item_count', '--json'], {
      env: { SOLID_API_KEY: key },
    });
    assert.equal(without.code, 5);
    assert.ok(dbState(cli.db).scopes.includes('shop'));
  });

  it('a config file lists packs by object, by path relative to itself and by built-in name', async (t) => {
    const { cli } = await initialised(t);
    write(cli, 'shop.mjs', shopPack());
    write(cli, 'desk.mjs', shopPack({ name: 'desk', table: 'desk_items' }));
    const config = write(
      cli,
      'solid.config.mjs',
      `import shop from './shop.mjs';\nexport default { packs: [shop, './desk.mjs', 'conformance'] };\n`,
    );
    const list = await cli.run(['--config', config, 'verbs', 'list', '--json']);
    assert.equal(list.code, 0, list.stderr);
    const names = new Set(list.json<Array<{ name: string }>>().map((r) => r.name));
    for (const n of ['shop.item_count', 'desk.item_count', 'conformance.counter_get'])
      assert.ok(names.has(n), `${n} missing`);
    // Discovery: solid.config.mjs in the working directory, without --config.
    const found = spawnSync(process.execPath, [BIN, '--db', cli.db, 'verbs', 'list', '--json'], {
      cwd: cli.dir,
      encoding: 'utf8',
    });
    assert.equal(found.status, 0, found.stderr);
    assert.ok((JSON.parse(found.stdout) as Array<{ name: string }>).some((r) => r.name === 'desk.item_add'));
    const none = await cli.run(['--config', 'none', 'verbs', 'list', '--json']);
    assert.ok(!none.json<Array<{ name: string }>>().some((r) => r.name.startsWith('shop.')));
    const typo = write(cli, 'typo.config.mjs', `export default { pack: [] };\n`);
    const bad = await cli.run(['--config', typo, 'verbs', 'list']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /config ".*typo\.config\.mjs": pack: is not a config setting/);
  });

  const broken: Array<{ name: string; file: () => string; stderr: RegExp }> = [
    {
      name: 'a syntax error (with its line)',
      file: () => `export default {\n  name: 'x',\n  oops oops\n};\n`,
      stderr: /pack ".*bad\.mjs": \(module\): cannot be loaded: SyntaxError: .*\(line 3\)/,
    },
    {
      name: 'company_id in an input schema',
      file: () =>
        shopPack().replace(
          "properties: { title: { type: 'string', minLength: 1 } }",
          "properties: { title: { type: 'string' }, company_id: { type: 'integer' } }",
        ),
      stderr:
        /verbs\[1\] "shop\.item_add" input_schema\.properties\.company_id: company_id and user_id are injected/,
    },
    {
      name: 'a write without a consent class',
      file: () => shopPack().replace("consent: 'WRITE_REVERSIBLE',", ''),
      stderr: /verbs\[1\] "shop\.item_add" consent: a write verb/,
    },
    {
      name: 'a verb the runtime already serves',
      file: () => shopPack({ verbPrefix: 'audit' }).replace("'audit.item_count'", "'audit.trail'"),
      stderr: /verbs\[0\]\.name: verb "audit\.trail" is already served by the runtime/,
    },
    {
      name: "a table of the runtime's",
      file: () => shopPack({ table: 'api_keys', sql: 'CREATE TABLE IF NOT EXISTS api_keys (x INTEGER)' }),
      stderr: /migrations: table "api_keys" is already created by the runtime/,
    },
    {
      name: 'SQL that fails',
      file: () => shopPack({ sql: 'CREATE TABLE shop_items (company_id INTEGER NOT NULL,' }),
      stderr: /migrations\[0\]: migration shop#1 \(items\) failed/,
    },
    {
      name: 'a misspelt schema keyword',
      file: () => shopPack().replace('minLength: 1', 'minLength: 1, maxLenght: 80'),
      stderr:
        /verbs\[1\] "shop\.item_add" input_schema\/properties\/title\/maxLenght: unknown keyword "maxLenght" \(did you mean "maxLength"\?\)/,
    },
    {
      name: 'an unknown pack member',
      file: () => shopPack().replace("description: 'A small shop", "verb: [], description: 'A small shop"),
      stderr: /verb: is not a pack member/,
    },
  ];
  for (const c of broken) {
    it(`refuses ${c.name} at start: exit 2, named, nothing migrated`, async (t) => {
      const { cli } = await initialised(t);
      const before = dbState(cli.db);
      const bad = write(cli, 'bad.mjs', c.file());
      const run = await cli.run(['--pack', bad, 'verbs', 'list']);
      assert.equal(run.code, 2, run.stdout + run.stderr);
      assert.match(run.stderr, /^✗ pack_invalid: /);
      assert.match(run.stderr, c.stderr);
      assert.deepEqual(dbState(cli.db), before);
    });
  }

  it('two packs creating the same table: neither is migrated, both are named', async (t) => {
    const { cli } = await initialised(t);
    const before = dbState(cli.db);
    const a = write(cli, 'a.mjs', shopPack({ name: 'shop_a', table: 'items' }));
    const b = write(cli, 'b.mjs', shopPack({ name: 'shop_b', table: 'items' }));
    const run = await cli.run(['--pack', a, '--pack', b, 'verbs', 'list']);
    assert.equal(run.code, 2);
    assert.match(
      run.stderr,
      /pack ".*b\.mjs": migrations: table "items" is already created by pack "shop_a"/,
    );
    assert.deepEqual(dbState(cli.db), before);
    // A good pack next to one whose SQL fails: the good one is not migrated either.
    const good = write(cli, 'good.mjs', shopPack());
    const sql = write(
      cli,
      'sql.mjs',
      shopPack({ name: 'desk', table: 'desk_items', sql: 'CREATE TABLE desk_items (' }),
    );
    const mixed = await cli.run(['--pack', good, '--pack', sql, 'verbs', 'list']);
    assert.equal(mixed.code, 2);
    assert.deepEqual(dbState(cli.db), before);
  });

  it('a table another pack created in an earlier run: refused on every run, naming its owner', async (t) => {
    const { cli } = await initialised(t);
    const first = write(cli, 'first.mjs', shopPack({ name: 'shop_a', table: 'items' }));
    const ok = await cli.run(['--pack', first, 'verbs', 'list']);
    assert.equal(ok.code, 0, ok.stderr);
    const before = dbState(cli.db);
    const other = write(
      cli,
      'other.mjs',
      shopPack({
        name: 'shop_b',
        table: 'items',
        sql: 'CREATE TABLE IF NOT EXISTS items (company_id INTEGER NOT NULL, id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL)',
      }),
    );
    for (let run = 0; run < 2; run++) {
      const clash = await cli.run(['--pack', other, 'verbs', 'list']);
      assert.equal(clash.code, 2, clash.stdout);
      assert.match(
        clash.stderr,
        /^✗ pack_invalid: pack "shop_b": migrations: table "items" belongs to pack "shop_a"/,
      );
      assert.deepEqual(dbState(cli.db), before);
    }
  });

  it('a missing file and a module without a pack export are named with a hint', async (t) => {
    const { cli } = await initialised(t);
    const missing = await cli.run(['--pack', './nowhere.mjs', 'verbs', 'list']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /nowhere\.mjs": \(file\): does not exist\n {2}hint: /);
    const empty = write(cli, 'empty.mjs', 'export const x = 1;\n');
    const none = await cli.run(['--pack', empty, 'verbs', 'list']);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /empty\.mjs": \(module\): exports no pack/);
  });

  it('a pack whose folder has no solid-verbs installed: the hint says to install it there', async (t) => {
    const { cli } = await initialised(t);
    // The temp dir has no node_modules: `import 'solid-verbs'` cannot resolve (a pack written
    // beside a clone, or in a project that never ran npm install).
    const pack = write(cli, 'lonely.mjs', shopPack().replace(JSON.stringify(INDEX), "'solid-verbs'"));
    const run = await cli.run(['--pack', pack, 'verbs', 'list']);
    assert.equal(run.code, 2, run.stdout + run.stderr);
    assert.match(
      run.stderr,
      /^✗ pack_invalid: pack ".*lonely\.mjs": \(module\): cannot be loaded: .*'solid-verbs'/,
    );
    assert.match(run.stderr, /hint: .*npm install solid-verbs/);
    assert.ok(run.stderr.includes(cli.dir), `the hint names the pack's folder: ${run.stderr}`);
    // Another missing package gets the same kind of hint, naming that package.
    const other = write(cli, 'other.mjs', "import 'left-pad-nowhere';\nexport default {};\n");
    const run2 = await cli.run(['--pack', other, 'verbs', 'list']);
    assert.equal(run2.code, 2);
    assert.match(run2.stderr, /hint: .*npm install left-pad-nowhere/);
  });

  it("solid mcp's refresh keeps the packs the process brought", async (t) => {
    const { cli } = await initialised(t);
    const pack = write(cli, 'shop.mjs', shopPack());
    const local = await openLocal({ db: cli.db, packFiles: [pack] });
    t.after(() => local.close());
    await refreshPacks(local);
    assert.ok(local.rt.registry.get('shop.item_count') !== undefined);
    assert.deepEqual([...local.ownPacks], ['shop']);
  });

  it('definePack refuses a bad pack where it is written', () => {
    assert.throws(
      () => definePack({ name: 'Shop!', description: 'x', migrations: [], verbs: [] }),
      (err: unknown) => err instanceof PackError && err.field === 'name',
    );
  });

  it('solid serve --pack serves the pack over HTTP; solid mcp --pack as MCP tools', async (t) => {
    const { cli, key } = await initialised(t);
    const pack = write(cli, 'shop.mjs', shopPack());
    const served = await serve(t, cli.db, ['--pack', pack]);
    const res = await fetch(`${served.base}/api/v1/agent/dispatch/shop.item_count`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ args: {} }),
    });
    const body = (await res.json()) as { ok: boolean; result: { data: { items: number } } };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.result.data.items, 0);
    assert.equal(await stop(served), 0);

    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', '--db', cli.db, '--pack', pack],
      env: { ...getDefaultEnvironment(), SOLID_API_KEY: key },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'packs-test', version: '1.0.0' });
    await client.connect(transport);
    t.after(() => client.close().catch(() => {}));
    const tools = (await client.listTools()).tools.map((x) => x.name);
    assert.ok(tools.includes('shop__item_count'), tools.join(' '));
    const call = await client.callTool({ name: 'shop__item_count', arguments: {} });
    assert.notEqual(call.isError, true, JSON.stringify(call));
    assert.deepEqual((resultOf(call) as { data: unknown }).data, { items: 0 });
  });
});
