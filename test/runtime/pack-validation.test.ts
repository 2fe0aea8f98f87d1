/**
 * Pack validation at the depth of the class (issue 37, row 6; spec/manifest.md §packs):
 * - a verb's schema is checked strictly at registration: an unknown keyword (`maxLenght`) or a
 *   keyword with a value of the wrong kind is refused with the pack, the verb and the JSON Pointer,
 *   in plain words, and every problem of a pack is reported at once;
 * - the tables a pack creates are recorded with their owner, so a later run of another pack
 *   creating the same table (even `CREATE TABLE IF NOT EXISTS`) is refused naming the owner;
 * - a pack's pending migrations apply together or not at all, on both engines, and a failure is a
 *   PackError naming the pack and the version (not an internal error).
 * Engine: SQLite by default, PostgreSQL with SOLID_TEST_ENGINE=postgres.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { definePack, installPack, PackError, type Pack } from '../../src/runtime/pack.ts';
import { defineVerb, type VerbDefinition } from '../../src/runtime/verb.ts';
import { Registry, RegistrationError } from '../../src/runtime/registry.ts';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { dropSchema, freshSchemaName, TEST_DATABASE_URL } from '../support/postgres.ts';
import { testEngine } from '../support/runtime.ts';
import { createTestBusiness } from '../../src/testing.ts';

const read = (name: string, input: Record<string, unknown>): VerbDefinition =>
  defineVerb({
    name,
    description: 'Read something (a test verb).',
    shape: 'aggregate',
    category: 'shop',
    input,
    handler: async () => ({ entity_type: 'shop', entity_id: 1, data: {} }),
  });

const packOf = (over: Partial<Pack>): Pack => ({
  name: 'shop',
  description: 'A test shop.',
  migrations: [],
  verbs: [read('shop.list', { type: 'object', properties: {} })],
  ...over,
});

function packError(fn: () => unknown): PackError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof PackError, `expected a PackError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a PackError');
}

test('a misspelt schema keyword is refused with the pack, the verb and the JSON Pointer', () => {
  const err = packError(() =>
    definePack(
      packOf({
        verbs: [
          read('shop.note_add', {
            type: 'object',
            properties: { text: { type: 'string', maxLenght: 200 } },
            additionalProperties: false,
          }),
        ],
      }),
    ),
  );
  assert.equal(err.pack, 'shop');
  assert.match(err.message, /shop\.note_add/);
  assert.match(err.message, /\/properties\/text\/maxLenght/);
  assert.match(err.message, /unknown keyword "maxLenght"/);
  assert.match(err.message, /did you mean "maxLength"/);
});

test('the registry refuses an unknown keyword, and a verb it refuses never validates a long string', () => {
  const registry = new Registry();
  assert.throws(
    () =>
      registry.register(
        read('shop.note_add', { type: 'object', properties: { text: { type: 'string', maxLenght: 5 } } }),
      ),
    (err: unknown) =>
      err instanceof RegistrationError && /input_schema\/properties\/text\/maxLenght/.test(err.message),
  );
  assert.equal(registry.get('shop.note_add'), undefined);
  // The correct spelling is accepted and enforced.
  const ok = registry.register(
    read('shop.note_add', { type: 'object', properties: { text: { type: 'string', maxLength: 5 } } }),
  );
  assert.equal(ok.validate({ text: 'x'.repeat(5000) }), false);
});

test('vendor keywords (x-…), annotations and formats stay accepted; an unknown format is refused', () => {
  const registry = new Registry();
  registry.register(
    read('shop.ok', {
      type: 'object',
      title: 'Args',
      'x-ui': { widget: 'text' },
      $defs: { cents: { type: 'integer', minimum: 0, examples: [100] } },
      properties: {
        email: { type: 'string', format: 'email', description: 'who', default: 'a@b.c' },
        at: { type: 'string', format: 'date-time', deprecated: false },
        amount: { $ref: '#/$defs/cents' },
        tags: { type: 'array', items: { type: 'string' }, uniqueItems: true, maxItems: 4 },
      },
      required: ['email'],
    }),
  );
  assert.throws(
    () =>
      registry.register(
        read('shop.bad_format', { type: 'object', properties: { e: { type: 'string', format: 'emial' } } }),
      ),
    /\/properties\/e\/format.*unknown format "emial"/,
  );
});

test('every problem of a pack is reported at once, in plain words', () => {
  const err = packError(() =>
    definePack(
      packOf({
        verbs: [
          read('shop.a', { type: 'object', properties: { n: { type: 'string', maxLenght: 5 } } }),
          read('shop.b', { type: 'object', properties: { n: { type: 'string', maxLength: '5' } } }),
          read('shop.c', { type: 'object', properties: { n: { type: 'strin' } } }),
        ],
        reasons: { shop_out: { status: 409, kind: 'conflict' } as never },
      }),
    ),
  );
  assert.ok(err.problems.length >= 4, `all problems at once: ${err.message}`);
  for (const verb of ['shop.a', 'shop.b', 'shop.c'])
    assert.match(err.message, new RegExp(verb.replace('.', '\\.')));
  assert.match(err.message, /\/properties\/n\/maxLength.*a whole number/);
  assert.match(err.message, /\/properties\/n\/type.*"strin".*string/);
  assert.match(err.message, /reasons\.shop_out/);
  // Not Ajv's words.
  assert.doesNotMatch(err.message, /must be equal to one of the allowed values|must match a schema in anyOf/);
});

interface Db {
  open(): Promise<Runtime>;
}

/** A database that outlives one runtime (the "runs" of a CLI), on the engine under test. */
function database(t: TestContext): Db {
  const engine = testEngine();
  if (engine === 'postgres') {
    const schema = freshSchemaName();
    t.after(() => dropSchema(schema));
    return {
      open: () =>
        createRuntime({
          store: new PostgresStore({ connectionString: TEST_DATABASE_URL!, poolMax: 2, schema }),
          logger: pino({ level: 'silent' }),
          maintenanceIntervalMs: 0,
        }),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'solid-packval-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return {
    open: () =>
      createRuntime({
        store: new SqliteStore({ path: join(dir, 'shop.db') }),
        logger: pino({ level: 'silent' }),
        maintenanceIntervalMs: 0,
      }),
  };
}

const tablePack = (name: string, sql: string, verb = `${name}.list`): Pack =>
  definePack({
    name,
    description: `Pack ${name}.`,
    migrations: [{ version: 1, name: 'orders', sqlite: sql, postgres: sql }],
    verbs: [read(verb, { type: 'object', properties: {} })],
  });

async function installError(rt: Runtime, pack: Pack): Promise<PackError> {
  try {
    await installPack(rt, pack);
  } catch (err) {
    assert.ok(err instanceof PackError, `expected a PackError, got ${String((err as Error)?.stack ?? err)}`);
    return err;
  }
  assert.fail('expected a PackError');
}

test('a table another pack created in an earlier run is refused naming its owner, also with IF NOT EXISTS', async (t) => {
  const db = database(t);
  const first = await db.open();
  await installPack(first, tablePack('alpha', 'CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)'));
  await first.close();

  for (const sql of [
    'CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, total INTEGER)',
    'CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER)',
  ]) {
    const rt = await db.open();
    try {
      const err = await installError(rt, tablePack('beta', sql));
      assert.equal(err.pack, 'beta');
      assert.match(err.message, /table "orders"/);
      assert.match(err.message, /pack "alpha"/);
      assert.equal(rt.registry.get('beta.list'), undefined, 'nothing of the refused pack is served');
    } finally {
      await rt.close();
    }
  }
  // Its owner still opens, on every run.
  const again = await db.open();
  await installPack(again, tablePack('alpha', 'CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)'));
  await again.close();
});

test('a failing version 2 leaves nothing of the pack migrated and names the pack and the version', async (t) => {
  const db = database(t);
  const pack = definePack({
    name: 'gamma',
    description: 'Pack gamma.',
    migrations: [
      {
        version: 1,
        name: 'orders',
        sqlite: 'CREATE TABLE gamma_orders (id INTEGER PRIMARY KEY)',
        postgres: 'CREATE TABLE gamma_orders (id INTEGER PRIMARY KEY)',
      },
      {
        version: 2,
        name: 'broken',
        sqlite: 'ALTER TABLE gamma_nowhere ADD COLUMN x INTEGER',
        postgres: 'ALTER TABLE gamma_nowhere ADD COLUMN x INTEGER',
      },
    ],
    verbs: [read('gamma.list', { type: 'object', properties: {} })],
  });
  const rt = await db.open();
  try {
    const err = await installError(rt, pack);
    assert.equal(err.pack, 'gamma');
    assert.match(err.message, /version 2/);
    assert.match(err.message, /broken/);
    assert.match(err.message, /nothing of pack "gamma" was migrated/);
    const applied = await rt.store.read((q) =>
      q.all<{ version: number }>('SELECT version FROM schema_migrations WHERE scope = ?', ['gamma']),
    );
    assert.deepEqual(applied, [], 'version 1 is not left applied');
    await assert.rejects(rt.store.read((q) => q.all('SELECT * FROM gamma_orders')));
  } finally {
    await rt.close();
  }
});

test('createTestBusiness reports a failing pack migration as a PackError', async () => {
  await assert.rejects(
    createTestBusiness({
      packs: [
        definePack({
          name: 'delta',
          description: 'Pack delta.',
          migrations: [
            { version: 1, name: 'bad', sqlite: 'CREATE TABLE delta_x (', postgres: 'CREATE TABLE delta_x (' },
          ],
          verbs: [read('delta.list', { type: 'object', properties: {} })],
        }),
      ],
    }),
    (err: unknown) => err instanceof PackError && /version 1/.test(err.message) && err.pack === 'delta',
  );
});
